//! `pmu_virt::sample` on a hosted-mode hart: what `prepare` programs, which instructions are
//! sampling accesses, the lazy PDIS load (one exit, then direct access), the Sspesa
//! emulation and the snapshot state.

use pmu_virt::sample::{classify, SampleAccess};
use pmu_virt::{FwTallies, GuestPmu, GuestSampling, PmuPolicy, SampleOutcome};
use test_support::rv64::{csrrci, csrrs, csrrw, ecall, wfi};
use vcpu::pmu::DraftNumbers;
use vcpu::{GuestTrap, Hart, HartConfig, Vcpu, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

/// No counter moved (no counter delegation).
const IDENTITY: [u8; 32] = {
    let mut m = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        m[i] = i as u8;
        i += 1;
    }
    m
};

const RAM: u64 = 0x8000_0000;
const NOP: u32 = 0x13;
const MENVCFG_CDE: u64 = 1 << 60;
const STATEEN_PDIS: u64 = 1 << 53;
const STATEEN_CSRIND: u64 = 1 << 60;

/// A guest hart running `prog` (then NOPs) with the PMU of `policy` prepared.
fn setup(policy: PmuPolicy, prog: &[u32]) -> (Hart, GuestPmu) {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM), 1 << 16)]).unwrap();
    for i in 0..(1 << 14) {
        let w = prog.get(i as usize).copied().unwrap_or(NOP);
        mem.write_obj(w, GuestAddress(RAM + 4 * i)).unwrap();
    }
    let mut hart = Hart::new_guest(HartConfig::default(), mem).unwrap();
    Vcpu::set_pc(&mut hart, RAM);
    let pmu = GuestPmu::new(policy, 0, FwTallies::new(1));
    pmu.prepare(&mut hart);
    (hart, pmu)
}

fn virtual_insn(exit: VcpuExit) -> GuestTrap {
    match exit {
        VcpuExit::GuestTrap(t) if t.cause == 22 => t,
        other => panic!("expected a virtual-instruction exit, got {other:?}"),
    }
}

#[test]
fn prepare_gives_cde_and_pdis_state_but_not_its_hstateen_bit() {
    let (hart, _) = setup(PmuPolicy::on(), &[]);
    assert_ne!(hart.host_csr(0x30a).unwrap() & MENVCFG_CDE, 0);
    assert_ne!(hart.host_csr(0x30c).unwrap() & STATEEN_PDIS, 0);
    let h = hart.host_csr(0x60c).unwrap();
    assert_eq!(h & STATEEN_PDIS, 0);
    assert_ne!(h & STATEEN_CSRIND, 0);
    let (hart, _) = setup(PmuPolicy::off(), &[]);
    assert_eq!(hart.host_csr(0x30a).unwrap() & MENVCFG_CDE, 0);
    assert_eq!(hart.host_csr(0x30c).unwrap() & STATEEN_PDIS, 0);
    // Sampling needs overflow interrupts.
    let mut p = PmuPolicy::on();
    p.sscofpmf = false;
    assert!(!p.effective_sampling().sspesa && !p.effective_sampling().pdis);
}

#[test]
fn classify_sampling_accesses() {
    let n = DraftNumbers::PROVISIONAL;
    let c = |insn, sel| classify(insn, sel, &n);
    assert_eq!(c(csrrs(10, 0x5c0, 0), 0), Some(SampleAccess::Shpmspc));
    assert_eq!(c(csrrw(0, 0x5c1, 11), 0), Some(SampleAccess::Shpmsdata));
    assert_eq!(c(csrrs(10, 0xda0, 0), 0), Some(SampleAccess::Scountovf));
    for csr in 0x5c2..=0x5c6 {
        assert_eq!(c(csrrs(10, csr, 0), 0), Some(SampleAccess::Pdis));
    }
    for csr in [0x151, 0x152, 0x153, 0x155, 0x156, 0x157] {
        assert_eq!(c(csrrs(10, csr, 0), 0x60), Some(SampleAccess::Pdis));
        assert_eq!(c(csrrs(10, csr, 0), 0x61), Some(SampleAccess::Pdis));
        assert_eq!(c(csrrs(10, csr, 0), 0x200), None, "CTR's");
        assert_eq!(c(csrrs(10, csr, 0), 0x43), None, "Ssccfg's");
    }
    assert_eq!(
        c(csrrs(10, 0x6c0, 0), 0),
        None,
        "vspdisctl is not the guest's"
    );
    assert_eq!(c(ecall(), 0), None, "ecall");
    assert_eq!(c(wfi(), 0), None, "wfi");
}

#[test]
fn the_first_pdis_access_loads_and_retries_then_no_exit() {
    // csrr a0, spdisctl; csrw spdiscounter, a1; csrr a2, spdiscounter.
    let prog = [
        csrrs(10, 0x5c2, 0),
        csrrw(0, 0x5c3, 11),
        csrrs(12, 0x5c3, 0),
    ];
    let (mut hart, mut pmu) = setup(PmuPolicy::on(), &prog);
    Vcpu::set_xreg(&mut hart, 11, 0x1234_5678);
    let t = virtual_insn(hart.run(100));
    assert_eq!((t.pc, t.insn, t.from_vu), (RAM, prog[0], false));
    let s = pmu.sampling();
    assert!(!s.is_loaded());
    assert_eq!(
        s.on_virtual_insn(&mut hart, t.insn, t.from_vu, &IDENTITY),
        SampleOutcome::PdisLoaded
    );
    assert!(pmu.sampling().is_loaded());
    assert_ne!(hart.host_csr(0x60c).unwrap() & STATEEN_PDIS, 0);
    assert_eq!(Vcpu::pc(&hart), RAM, "the instruction runs again");
    // Three instructions and the NOPs after them: no exit.
    assert!(matches!(hart.run(10), VcpuExit::BudgetExhausted));
    assert_eq!(Vcpu::xreg(&hart, 12), 0x1234_5678);
    assert_eq!(pmu.sampling().stats.pdis_loads, 1);
    // A state in which the access still traps is not retried forever.
    let mut s = GuestSampling::restore(&pmu.sampling().snapshot()).unwrap();
    assert_eq!(
        s.on_virtual_insn(&mut hart, prog[0], false, &IDENTITY),
        SampleOutcome::InjectIllegal
    );
}

#[test]
fn shpmspc_accesses_are_emulated_with_zicsr_semantics() {
    // csrrw a1, shpmspc, a2; csrr a3, shpmspc; csrrci a4, shpmsdata, 0x10.
    let prog = [
        csrrw(11, 0x5c0, 12),
        csrrs(13, 0x5c0, 0),
        csrrci(14, 0x5c1, 0x10),
    ];
    let (mut hart, mut pmu) = setup(PmuPolicy::on(), &prog);
    hart.set_host_csr(0x5c0, 0x8000_1000).unwrap();
    hart.set_host_csr(0x5c1, 0x1f).unwrap();
    Vcpu::set_xreg(&mut hart, 12, 0x8000_2000);
    for i in 0..3 {
        let t = virtual_insn(hart.run(100));
        assert_eq!(t.pc, RAM + 4 * i);
        let out = pmu.sampling_virtual_insn(&mut hart, t.insn, false);
        assert_eq!(out, SampleOutcome::EmulatedSspesa);
        assert_eq!(Vcpu::pc(&hart), RAM + 4 * (i + 1));
    }
    assert_eq!(Vcpu::xreg(&hart, 11), 0x8000_1000, "old value");
    assert_eq!(Vcpu::xreg(&hart, 13), 0x8000_2000, "written");
    assert_eq!(Vcpu::xreg(&hart, 14), 0x1f);
    assert_eq!(hart.host_csr(0x5c1), Ok(0xf));
    // From VU: illegal for the guest.
    assert_eq!(
        pmu.sampling_virtual_insn(&mut hart, prog[1], true),
        SampleOutcome::InjectIllegal
    );
    assert_eq!(pmu.sampling().stats.sspesa_emulated, 3);
}

#[test]
fn sampling_off_injects_illegal_and_snapshots_keep_the_state() {
    let mut p = PmuPolicy::on();
    p.sampling.sspesa = false;
    p.sampling.pdis = false;
    let (mut hart, mut pmu) = setup(p, &[]);
    let read = csrrs(10, 0x5c0, 0);
    assert_eq!(
        pmu.sampling_virtual_insn(&mut hart, read, false),
        SampleOutcome::InjectIllegal
    );
    let pdis = csrrs(10, 0x5c2, 0);
    assert_eq!(
        pmu.sampling_virtual_insn(&mut hart, pdis, false),
        SampleOutcome::InjectIllegal
    );
    // scountovf traps only because of Sspesa's CDE: not this module's without it.
    let ovf = csrrs(10, 0xda0, 0);
    assert_eq!(
        pmu.sampling_virtual_insn(&mut hart, ovf, false),
        SampleOutcome::NotSampling
    );

    let (mut hart, mut pmu) = setup(PmuPolicy::on(), &[]);
    pmu.sampling_virtual_insn(&mut hart, pdis, false);
    let state = pmu.snapshot();
    assert!(state.sampling.loaded);
    let back = GuestPmu::restore(&state, 0, FwTallies::new(1)).unwrap();
    assert_eq!(back.snapshot(), state);
    // A snapshot whose draft numbers collide with another CSR is refused.
    let mut bad = state.clone();
    bad.sampling.policy.numbers.shpmspc = 0x150;
    assert!(GuestPmu::restore(&bad, 0, FwTallies::new(1)).is_none());
}
