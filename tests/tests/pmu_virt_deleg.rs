//! Counter delegation (Ssccfg) emulation on a hosted-mode hart: what `prepare` sets, which
//! guest accesses the hart traps, and what `GuestPmu::on_virtual_insn` makes of them on the
//! virtual counters (mapping, MINH, the filter translation, OF, scountinhibit, scountovf).

use pmu_virt::deleg::{DelegAccess, DelegOutcome};
use pmu_virt::{FwTallies, GuestPmu, PmuPolicy};
use test_support::rv64::wfi;
use vcpu::pmu::{MINH, OF, SINH, UINH, VSINH, VUINH};
use vcpu::{Hart, HartConfig, Vcpu, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const RAM: u64 = 0x8000_0000;
const NOP: u32 = 0x13;
const VSISELECT: u16 = 0x250;
/// csrr a0, sireg
const RD_SIREG: u32 = 0x1510_2573;
/// csrrw a0, sireg, a1
const SWAP_SIREG: u32 = 0x1515_9573;
/// csrr a0, sireg2
const RD_SIREG2: u32 = 0x1520_2573;
/// csrw sireg2, a1 (csrrw x0, sireg2, a1)
const WR_SIREG2: u32 = 0x1525_9073;
/// csrr a0, sireg3 / sireg4 / sireg6
const RD_SIREG3: u32 = 0x1530_2573;
const RD_SIREG4: u32 = 0x1550_2573;
const RD_SIREG6: u32 = 0x1570_2573;
/// csrc scountinhibit, a1 / csrr a0, scountinhibit / csrrwi x0, scountinhibit, 0
const CLR_INH: u32 = 0x1205_b073;
const RD_INH: u32 = 0x1200_2573;
/// csrr a0, scountovf; csrw scountovf, a1
const RD_OVF: u32 = 0xda00_2573;
const WR_OVF: u32 = 0xda05_9073;
/// csrr a0, hpmcounter3
const RD_HPM3: u32 = 0xc030_2573;

fn setup(policy: PmuPolicy) -> (Hart, GuestPmu) {
    setup_at(policy, NOP)
}

/// A guest hart at `first`, followed by NOPs.
fn setup_at(policy: PmuPolicy, first: u32) -> (Hart, GuestPmu) {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM), 1 << 16)]).unwrap();
    for i in 0..(1 << 14) {
        mem.write_obj(NOP, GuestAddress(RAM + 4 * i)).unwrap();
    }
    mem.write_obj(first, GuestAddress(RAM)).unwrap();
    let mut hart = Hart::new_guest(HartConfig::default(), mem).unwrap();
    Vcpu::set_pc(&mut hart, RAM);
    let pmu = GuestPmu::new(policy, 0, FwTallies::new(1));
    pmu.prepare(&mut hart);
    (hart, pmu)
}

fn deleg() -> PmuPolicy {
    PmuPolicy::on().with_deleg(true)
}

/// A PMU without delegation and without Sspesa (which also sets `menvcfg.CDE`).
fn no_cde() -> PmuPolicy {
    let mut p = PmuPolicy::on();
    p.sampling.sspesa = false;
    p
}

/// Emulates `insn` with `a1` = `arg` and `vsiselect` = `sel`; returns the outcome and `a0`.
fn emulate(
    hart: &mut Hart,
    pmu: &mut GuestPmu,
    sel: u64,
    insn: u32,
    arg: u64,
) -> (DelegOutcome, u64) {
    hart.set_host_csr(VSISELECT, sel).unwrap();
    Vcpu::set_xreg(hart, 11, arg);
    Vcpu::set_xreg(hart, 10, 0xdead);
    let r = pmu.on_virtual_insn(hart, insn, false);
    (r, Vcpu::xreg(hart, 10))
}

fn emulated(r: DelegOutcome) -> DelegAccess {
    match r {
        DelegOutcome::Emulated { access, .. } => access,
        other => panic!("not emulated: {other:?}"),
    }
}

#[test]
fn prepare_enables_cde_csrind_and_traps_moved_counters() {
    let (hart, pmu) = setup(deleg());
    assert_ne!(hart.host_csr(0x30a).unwrap() & vcpu::pmu::MENVCFG_CDE, 0);
    assert_ne!(
        hart.host_csr(0x60c).unwrap() & 1 << 60,
        0,
        "hstateen0.CSRIND"
    );
    assert_eq!(hart.host_csr(0x306).unwrap() & 0xffff_ffff, 0xffff_ffff);
    // hcounteren: cycle, time, instret and the identity-mapped counter 17.
    assert_eq!(hart.host_csr(0x606), Ok(0b111 | 1 << 17));
    assert_eq!(pmu.hart_counter(3), Some(31));
    assert_eq!(pmu.hart_counter(17), Some(17));
    // Without delegation (and Sspesa): nothing of that, the identity.
    let (hart, pmu) = setup(no_cde());
    assert_eq!(hart.host_csr(0x30a).unwrap() & vcpu::pmu::MENVCFG_CDE, 0);
    assert_eq!(hart.host_csr(0x606), Ok(0b111));
    assert_eq!(pmu.hart_counter(3), Some(3));
    assert!(!PmuPolicy::off().with_deleg(true).deleg);
}

#[test]
fn the_hart_traps_the_guest_accesses_as_virtual_instruction() {
    for insn in [
        RD_SIREG, RD_SIREG2, RD_SIREG3, RD_SIREG6, RD_INH, RD_OVF, RD_HPM3,
    ] {
        let (mut hart, _) = setup_at(deleg(), insn);
        hart.set_host_csr(VSISELECT, 0x43).unwrap();
        match Vcpu::run(&mut hart, 10) {
            VcpuExit::GuestTrap(t) => {
                assert_eq!(t.cause, 22, "{insn:#x}");
                assert_eq!(t.tval, u64::from(insn));
            }
            other => panic!("{insn:#x}: {other:?}"),
        }
    }
    // Without delegation (CDE = 0) the hart raises illegal-instruction itself: the guest
    // takes it (hedeleg), no exit.
    for insn in [RD_SIREG, RD_INH] {
        let (mut hart, _) = setup_at(no_cde(), insn);
        hart.set_host_csr(0x60c, 1 << 60).unwrap();
        hart.set_host_csr(VSISELECT, 0x43).unwrap();
        hart.set_host_csr(0x205, RAM + 0x100).unwrap(); // vstvec
        assert!(matches!(Vcpu::run(&mut hart, 1), VcpuExit::BudgetExhausted));
        assert_eq!(hart.host_csr(0x242), Ok(2), "vscause {insn:#x}");
    }
}

#[test]
fn sireg_reaches_the_backing_counter() {
    let (mut hart, mut pmu) = setup(deleg());
    // Guest counter 3 is hart counter 31.
    let (r, old) = emulate(&mut hart, &mut pmu, 0x43, SWAP_SIREG, 1234);
    assert_eq!(emulated(r), DelegAccess::Counter);
    assert_eq!(old, 0);
    assert_eq!(hart.host_csr(0xb1f), Ok(1234));
    assert_eq!(hart.host_csr(0xb03), Ok(0));
    assert_eq!(Vcpu::pc(&hart), RAM + 4);
    let (_, v) = emulate(&mut hart, &mut pmu, 0x43, RD_SIREG, 0);
    assert_eq!(v, 1234);
    let (r, v) = emulate(&mut hart, &mut pmu, 0, RD_HPM3, 0);
    assert_eq!(emulated(r), DelegAccess::CounterRead);
    assert_eq!(v, 1234);
    if let DelegOutcome::Emulated { counter, write, .. } = r {
        assert_eq!((counter, write), (Some((3, 31)), false));
    }
}

#[test]
fn sireg2_translates_the_filter_and_hides_minh() {
    let (mut hart, mut pmu) = setup(deleg());
    let host = MINH | SINH | UINH;
    let (r, _) = emulate(
        &mut hart,
        &mut pmu,
        0x43,
        WR_SIREG2,
        MINH | SINH | VSINH | 0x101,
    );
    assert_eq!(emulated(r), DelegAccess::Event);
    assert_eq!(hart.host_csr(0x33f), Ok(host | VSINH | 0x101));
    let (_, v) = emulate(&mut hart, &mut pmu, 0x43, RD_SIREG2, 0);
    assert_eq!(v, SINH | 0x101);
    // The SBI view of the same virtual counter.
    let c = pmu.counter(3).unwrap();
    assert_eq!(c.event, Some(pmu_virt::EventTarget::Hardware(0x101)));
    assert_eq!(c.inhibit, VSINH);
    // cyclecfg: UINH is the guest's VU.
    emulate(&mut hart, &mut pmu, 0x40, WR_SIREG2, UINH | VUINH | OF);
    assert_eq!(hart.host_csr(0x321), Ok(host | VUINH));
    let (_, v) = emulate(&mut hart, &mut pmu, 0x40, RD_SIREG2, 0);
    assert_eq!(v, UINH);
    // OF is the backing counter's; scountovf shows it at the guest's position.
    emulate(&mut hart, &mut pmu, 0x44, WR_SIREG2, OF | 0x100);
    assert_ne!(hart.host_csr(0x33e).unwrap() & OF, 0);
    let (r, v) = emulate(&mut hart, &mut pmu, 0, RD_OVF, 0);
    assert_eq!(emulated(r), DelegAccess::Overflow);
    assert_eq!(v, 1 << 4);
    assert_eq!(
        emulate(&mut hart, &mut pmu, 0, WR_OVF, 0).0,
        DelegOutcome::InjectIllegal
    );
}

#[test]
fn scountinhibit_maps_bits_and_counting_follows() {
    let (mut hart, mut pmu) = setup(deleg());
    let (_, v) = emulate(&mut hart, &mut pmu, 0, RD_INH, 0);
    // cycle and instret run, hpm counters are stopped.
    assert_eq!(v, 0xffff_fff8);
    emulate(&mut hart, &mut pmu, 0x43, WR_SIREG2, 0x2); // instructions (hart catalog)
    emulate(&mut hart, &mut pmu, 0, CLR_INH, 1 << 3);
    assert_eq!(
        hart.host_csr(0x320).unwrap() >> 31 & 1,
        0,
        "hart counter 31 runs"
    );
    assert_eq!(
        hart.host_csr(0x320).unwrap() >> 3 & 1,
        1,
        "hart counter 3 does not"
    );
    assert!(pmu.counter(3).unwrap().started);
    let before = hart.host_csr(0xb1f).unwrap();
    Vcpu::run(&mut hart, 50);
    let (_, v) = emulate(&mut hart, &mut pmu, 0x43, RD_SIREG, 0);
    assert_eq!(v - before, 50);
}

#[test]
fn what_the_spec_makes_illegal_is_injected() {
    let (mut hart, mut pmu) = setup(deleg());
    for (sel, insn) in [
        (0x41, RD_SIREG),
        (0x41, RD_SIREG2),
        (0x43, RD_SIREG3),
        (0x43, RD_SIREG4),
        (0x40, RD_SIREG6),
    ] {
        let pc = Vcpu::pc(&hart);
        let (r, a0) = emulate(&mut hart, &mut pmu, sel, insn, 0);
        assert_eq!(r, DelegOutcome::InjectIllegal, "{sel:#x} {insn:#x}");
        assert_eq!((a0, Vcpu::pc(&hart)), (0xdead, pc), "untouched");
    }
    // VU-mode: S-level CSRs are illegal; a counter read needs the guest's scounteren.
    hart.set_host_csr(VSISELECT, 0x43).unwrap();
    for insn in [RD_SIREG, RD_INH, RD_OVF, RD_HPM3] {
        assert_eq!(
            pmu.on_virtual_insn(&mut hart, insn, true),
            DelegOutcome::InjectIllegal
        );
    }
    hart.set_host_csr(0x106, 1 << 3).unwrap();
    assert!(matches!(
        pmu.on_virtual_insn(&mut hart, RD_HPM3, true),
        DelegOutcome::Emulated { .. }
    ));
    // Not ours: other select values, other CSRs, other instructions, no delegation.
    assert_eq!(
        emulate(&mut hart, &mut pmu, 0x60, RD_SIREG, 0).0,
        DelegOutcome::NotDeleg
    );
    assert_eq!(
        emulate(&mut hart, &mut pmu, 0x200, RD_SIREG, 0).0,
        DelegOutcome::NotDeleg
    );
    assert_eq!(
        pmu.on_virtual_insn(&mut hart, wfi(), false),
        DelegOutcome::NotDeleg
    );
    assert_eq!(
        pmu.on_virtual_insn(&mut hart, 0xc010_2573, false),
        DelegOutcome::NotDeleg
    );
    let (mut hart, mut pmu) = setup(PmuPolicy::on());
    assert_eq!(
        emulate(&mut hart, &mut pmu, 0x43, RD_SIREG, 0).0,
        DelegOutcome::NotDeleg
    );
}

#[test]
fn the_mapping_survives_a_snapshot_and_bad_ones_are_refused() {
    let (_, pmu) = setup(deleg());
    let state = pmu.snapshot();
    assert_eq!(state.map[3], 31);
    let back = GuestPmu::restore(&state, 0, FwTallies::new(1)).unwrap();
    assert_eq!(back.hart_counter(3), Some(31));
    assert!(back.policy().deleg);
    let mut bad = state.clone();
    bad.map[4] = 31;
    assert!(GuestPmu::restore(&bad, 0, FwTallies::new(1)).is_none());
    let mut bad = state;
    bad.map.pop();
    assert!(GuestPmu::restore(&bad, 0, FwTallies::new(1)).is_none());
}
