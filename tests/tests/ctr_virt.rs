//! ctr-virt on a hosted-mode hart: lazy loading through `hstateen0.CTR`, `sctrdepth`
//! emulation, context save/load bit for bit, and isolation between contexts.

use ctr_virt::{csr, CtrContext, CtrEntryState, CtrPolicy, DepthSet, GuestCtr, Outcome};
use test_support::rv64::{csrrs, csrrw, wfi};
use vcpu::ctr::CtrConfig;
use vcpu::{Hart, HartConfig, Vcpu};
use vm_memory::{GuestAddress, GuestMemoryMmap};

fn guest_hart(depths: u8) -> Hart {
    guest_hart_and_ram(depths).0
}

fn guest_hart_and_ram(depths: u8) -> (Hart, GuestMemoryMmap) {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
    let hart = Hart::new_guest(
        HartConfig {
            ctr: Some(CtrConfig {
                depths,
                ..CtrConfig::full()
            }),
            ..HartConfig::default()
        },
        mem.clone(),
    )
    .unwrap();
    (hart, mem)
}

#[test]
fn policy_intersects_with_the_host_and_refuses_an_empty_set() {
    let host = CtrConfig {
        depths: 0b11000, // 128, 256
        ..CtrConfig::full()
    };
    let e = CtrPolicy::on(None, Some(&host)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no CTR depth the VM may use (16,32,64) is supported by the host hart (128,256); \
         choose --ctr-depths among the host's, or --ctr off"
    );
    let p = CtrPolicy::on(Some(DepthSet::parse("64,128").unwrap()), Some(&host)).unwrap();
    assert_eq!(p.guest_depths.to_string(), "128");
    assert!(CtrPolicy::on(None, None).is_err());
}

#[test]
fn first_access_loads_the_context_and_opens_hstateen0_ctr() {
    let mut h = guest_hart(0x1f);
    let mut g = GuestCtr::new(CtrPolicy::on(None, h.ctr_config().as_ref()).unwrap());
    assert_eq!(h.host_csr(csr::HSTATEEN0).unwrap() & csr::STATEEN0_CTR, 0);
    let out = g.on_virtual_insn(&mut h, csrrs(10, csr::SCTRCTL.into(), 0), false);
    assert_eq!(out, Outcome::Retry);
    assert!(g.is_loaded());
    assert_ne!(h.host_csr(csr::HSTATEEN0).unwrap() & csr::STATEEN0_CTR, 0);
    assert_eq!(g.stats.lazy_loads, 1);
    // From VU-mode, or with CTR off: illegal-instruction for the guest.
    assert_eq!(
        g.on_virtual_insn(&mut h, csr::SCTRCLR, true),
        Outcome::InjectIllegal
    );
    let mut off = GuestCtr::new(CtrPolicy::off());
    assert_eq!(
        off.on_virtual_insn(&mut h, csr::SCTRCLR, false),
        Outcome::InjectIllegal
    );
    // Not CTR at all.
    assert_eq!(
        g.on_virtual_insn(&mut h, csrrs(10, 0x600, 0), false),
        Outcome::NotCtr
    );
}

#[test]
fn sctrdepth_reads_the_guest_depth_and_writes_are_legalized() {
    let mut h = guest_hart(0x1f);
    let policy = CtrPolicy::on(
        Some(DepthSet::parse("32,128").unwrap()),
        Some(&CtrConfig::full()),
    )
    .unwrap();
    let mut g = GuestCtr::new(policy);
    h.set_pc(0x8000_0000);
    // Read: the smallest allowed depth (32 = encoding 1).
    assert_eq!(
        g.on_virtual_insn(&mut h, csrrs(10, csr::SCTRDEPTH.into(), 0), false),
        Outcome::Emulated
    );
    assert_eq!(h.xreg(10), 1);
    assert_eq!(h.pc(), 0x8000_0004);
    // Write 64 (encoding 2): not allowed, kept. Write 128 (3): taken.
    for (enc, want) in [(2u64, 1u8), (3, 3), (7, 3), (0, 3)] {
        h.set_xreg(11, enc);
        g.on_virtual_insn(&mut h, csrrw(0, csr::SCTRDEPTH.into(), 11), false);
        assert_eq!(g.guest_depth(), want, "write {enc}");
    }
    // Loaded: the hart's sctrdepth follows the guest's.
    g.load(&mut h);
    assert_eq!(h.host_csr(csr::SCTRDEPTH), Ok(3));
    h.set_xreg(11, 1);
    g.on_virtual_insn(&mut h, csrrw(12, csr::SCTRDEPTH.into(), 11), false);
    assert_eq!(h.host_csr(csr::SCTRDEPTH), Ok(1));
    assert_eq!(h.xreg(12), 3);
    assert_eq!(g.stats.depth_emulated, 6);
}

fn sample_context(depth: u8, salt: u64) -> CtrContext {
    let mut c = CtrContext::reset(depth);
    c.vsctrctl = 0x0000_3f00_0000_1903;
    c.sctrstatus = (1 << 31) | 5;
    for (i, e) in c.entries.iter_mut().enumerate() {
        *e = CtrEntryState {
            source: 0x8000_1001 + 0x40 * i as u64 + salt,
            target: 0x8000_2000 + 0x20 * i as u64,
            data: 0xb000_8009 | ((i as u64 & 0xf) << 16),
        };
    }
    c
}

#[test]
fn save_after_load_is_bit_identical() {
    for depth in [0u8, 2, 4] {
        let mut h = guest_hart(0x1f);
        let c = sample_context(depth, 0);
        h.set_host_csr(csr::VSISELECT, 0x123).unwrap();
        c.load(&mut h);
        assert_eq!(CtrContext::save(&h), c, "depth {depth}");
        assert_eq!(h.host_csr(csr::VSISELECT), Ok(0x123), "vsiselect preserved");
    }
}

#[test]
fn two_contexts_on_one_hart_never_see_each_other() {
    let mut h = guest_hart(0x1f);
    let policy = CtrPolicy::on(Some(DepthSet::ALL), Some(&CtrConfig::full())).unwrap();
    let mut a = GuestCtr::new(policy);
    let mut b = GuestCtr::new(policy);
    // A runs at depth 256 with its history; B at depth 16, then raises its depth to 256.
    a.load(&mut h);
    sample_context(4, 7).load(&mut h);
    let a_ctx = CtrContext::save(&h);
    a.unload(&mut h);
    b.load(&mut h);
    h.set_xreg(11, 4);
    b.on_virtual_insn(&mut h, csrrw(0, csr::SCTRDEPTH.into(), 11), false);
    // Every entry B can see is zero: none of A's.
    let seen = CtrContext::save(&h);
    assert_eq!(seen.depth, 4);
    assert!(seen.entries.iter().all(|e| *e == CtrEntryState::default()));
    b.unload(&mut h);
    a.load(&mut h);
    assert_eq!(CtrContext::save(&h), a_ctx);
}

/// Run `insn` (a trapping instruction delegated to VS) on one hart, and inject the same
/// trap into another through the VMM path; the guest-visible CTR state must agree (but for
/// CC, which the VMM cannot know: the synthesized record has CCV = 0).
fn delegated_vs_injected(vsctrctl: u64, insn: u32, cause: u64) -> (CtrContext, CtrContext) {
    const CODE: u64 = 0x8000_0000;
    const HANDLER: u64 = 0x8000_0100;
    let setup = || {
        let (mut h, mem) = guest_hart_and_ram(0x1f);
        let mut g = GuestCtr::new(CtrPolicy::on(None, h.ctr_config().as_ref()).unwrap());
        g.prepare(&mut h);
        g.load(&mut h);
        h.set_host_csr(csr::VSTVEC, HANDLER).unwrap();
        h.set_host_csr(csr::VSCTRCTL, vsctrctl).unwrap();
        h.set_pc(CODE);
        (h, g, mem)
    };
    // Delegated: the hart runs the instruction and takes the trap into VS itself.
    let (mut a, _, mem) = setup();
    write_code(&mem, CODE, insn);
    write_code(&mem, HANDLER, wfi());
    let exit = a.run(10);
    assert!(matches!(exit, vcpu::VcpuExit::Wfi), "{exit:?}");
    // Injected: the VMM redirects the same trap.
    let (mut b, mut g, _) = setup();
    b.inject_exception(cause, insn as u64);
    assert_eq!(b.pc(), HANDLER);
    g.synthesize_trap(&mut b, cause, false, false, CODE, HANDLER);
    let strip_cc = |mut c: CtrContext| {
        for e in &mut c.entries {
            e.data &= 0xf;
        }
        c
    };
    (
        strip_cc(CtrContext::save(&a)),
        strip_cc(CtrContext::save(&b)),
    )
}

fn write_code(mem: &GuestMemoryMmap, addr: u64, insn: u32) {
    use vm_memory::Bytes;
    mem.write_obj(insn, GuestAddress(addr)).unwrap();
}

#[test]
fn injected_traps_leave_the_history_a_delegated_trap_leaves() {
    const ILLEGAL: u32 = 0x3000_2573; // csrr a0, mstatus
    const EBREAK: u32 = 0x0010_0073;
    let s = 1 << 1;
    let excinh = 1 << 33;
    let bpfrz = 1 << 11;
    for (vsctrctl, insn, cause) in [
        (s, ILLEGAL, 2),          // VS -> VS, both enabled: recorded
        (s | excinh, ILLEGAL, 2), // inhibited
        (0, ILLEGAL, 2),          // VS disabled: nothing
        (s, EBREAK, 3),           // a breakpoint is recorded without BPFRZ
        (s | bpfrz, EBREAK, 3),   // and freezes with it
    ] {
        let (delegated, injected) = delegated_vs_injected(vsctrctl, insn, cause);
        assert_eq!(delegated, injected, "vsctrctl {vsctrctl:#x} cause {cause}");
    }
    // The recorded case really recorded something.
    let (d, _) = delegated_vs_injected(s, ILLEGAL, 2);
    assert_eq!(d.entries[0].source, 0x8000_0001);
    assert_eq!(d.entries[0].target, 0x8000_0100);
    assert_eq!(d.sctrstatus & 0xff, 1);
    let (d, _) = delegated_vs_injected(s | bpfrz, EBREAK, 3);
    assert_ne!(d.sctrstatus & (1 << 31), 0);
}
