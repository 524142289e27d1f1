//! The debugger's bank of triggers (`Vcpu::add_debug_point`): a point stops the hart before
//! the instruction with no effect at all, watchpoints match any byte of an access (misaligned
//! and page-crossing ones too), the guest's trigger CSRs cannot see the bank, a skip runs
//! exactly one instruction, translated blocks never skip a check, and a hosted (VS-mode)
//! guest stops the same way.

mod common;

use common::*;
use vcpu::{Hart, HartConfig, Vcpu, VcpuExit};
use vcpu_api::{csr as c, DebugHit, DebugPoint, DebugPointError, HitAccess, WatchKind};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

fn hit_of(exit: VcpuExit) -> DebugHit {
    match exit {
        VcpuExit::DebugPoint(h) => h,
        e => panic!("expected a debugger stop, got {e:?}"),
    }
}

/// Everything an instruction could change that the tests compare.
fn snapshot(h: &Hart) -> (u64, Vec<u64>, u64, u64, u64) {
    (
        h.pc(),
        (0..32).map(|i| h.xreg(i)).collect(),
        h.host_csr(c::MINSTRET).unwrap(),
        h.host_csr(c::MCYCLE).unwrap(),
        h.host_csr(c::MCAUSE).unwrap(),
    )
}

#[test]
fn an_execute_point_stops_before_the_instruction_with_no_effect() {
    let mut vm = Vm::new();
    let body = [
        addi(5, 5, 1),
        addi(5, 5, 1),
        addi(5, 5, 1),
        addi(6, 0, 7), // CODE + 12
        addi(5, 5, 1),
    ];
    let end = vm.code(&body);
    // First without points, with block translation: the blocks exist when the point is set.
    vm.run_clean(end);
    let plain = vm.hart.host_csr(c::MINSTRET).unwrap();
    let mut vm = Vm::new();
    vm.code(&body);
    vm.run_clean(end);
    vm.set_x(5, 0);
    vm.set_x(6, 0);
    vm.hart.set_pc(CODE);
    let at = CODE + 12;
    vm.hart.add_debug_point(DebugPoint::Execute(at)).unwrap();
    let hit = hit_of(vm.hart.run(1_000_000));
    assert_eq!(
        hit,
        DebugHit {
            point: DebugPoint::Execute(at),
            access: HitAccess::Execute,
            addr: at
        }
    );
    let before = snapshot(&vm.hart);
    assert_eq!(before.0, at);
    assert_eq!((vm.x(5), vm.x(6)), (3, 0));
    assert_eq!(before.2, plain + 3);
    // Running again without a skip stops again, still with nothing changed.
    hit_of(vm.hart.run(1_000_000));
    assert_eq!(snapshot(&vm.hart), before);
    // A skip executes exactly that instruction.
    vm.hart.skip_debug_points_once();
    assert_eq!(vm.hart.run(1), VcpuExit::BudgetExhausted);
    assert_eq!((vm.hart.pc(), vm.x(6)), (at + 4, 7));
    assert_eq!(vm.hart.host_csr(c::MINSTRET).unwrap(), before.2 + 1);
    vm.run_clean(end);
    assert_eq!(vm.hart.host_csr(c::MINSTRET).unwrap(), 2 * plain - 2);
}

#[test]
fn a_skip_steps_exactly_one_instruction() {
    let mut vm = Vm::new();
    // `j .` at CODE: the point matches every instruction.
    vm.put32(CODE, &[jal(0, 0)]);
    vm.hart.add_debug_point(DebugPoint::Execute(CODE)).unwrap();
    hit_of(vm.hart.run(1000));
    let n = vm.hart.host_csr(c::MINSTRET).unwrap();
    for i in 1..=3 {
        vm.hart.skip_debug_points_once();
        let hit = hit_of(vm.hart.run(1000));
        assert_eq!(hit.addr, CODE);
        assert_eq!(vm.hart.host_csr(c::MINSTRET).unwrap(), n + i);
    }
    assert!(vm.hart.remove_debug_point(DebugPoint::Execute(CODE)));
    assert!(!vm.hart.remove_debug_point(DebugPoint::Execute(CODE)));
    assert_eq!(vm.hart.run(1000), VcpuExit::BudgetExhausted);
}

#[test]
fn watchpoints_match_any_byte_of_misaligned_and_page_crossing_accesses() {
    let mut vm = Vm::new();
    vm.set_x(7, DATA);
    vm.set_x(9, 0x1122_3344_5566_7788);
    vm.set_x(18, DATA + 0xffc);
    vm.set_x(19, DATA + 0x40);
    let end = vm.code(&[
        ld(8, 7, 0x0f),             // bytes 0x0f-0x16: the load watch at 0x16
        sd(9, 7, 0x11),             // bytes 0x11-0x18: the store watch at 0x13-0x14
        ld(10, 18, 0),              // bytes 0xffc-0x1003: the access watch at 0x1002
        amo(AMO_ADD, 3, 11, 19, 9), // bytes 0x40-0x47: the store watch at 0x44
    ]);
    let store = DebugPoint::Watch {
        addr: DATA + 0x13,
        len: 2,
        kind: WatchKind::Store,
    };
    let load = DebugPoint::Watch {
        addr: DATA + 0x16,
        len: 1,
        kind: WatchKind::Load,
    };
    let access = DebugPoint::Watch {
        addr: DATA + 0x1002,
        len: 1,
        kind: WatchKind::Access,
    };
    let amo_store = DebugPoint::Watch {
        addr: DATA + 0x44,
        len: 4,
        kind: WatchKind::Store,
    };
    for p in [store, load, access, amo_store] {
        vm.hart.add_debug_point(p).unwrap();
    }
    vm.w64(DATA + 0x10, 0xaaaa_aaaa_aaaa_aaaa);
    let expect = [
        (load, HitAccess::Load, DATA + 0x16, CODE),
        (store, HitAccess::Store, DATA + 0x13, CODE + 4),
        (access, HitAccess::Load, DATA + 0x1002, CODE + 8),
        (amo_store, HitAccess::LoadStore, DATA + 0x44, CODE + 12),
    ];
    for (i, (point, kind, addr, pc)) in expect.into_iter().enumerate() {
        let minstret = vm.hart.host_csr(c::MINSTRET).unwrap();
        let hit = hit_of(vm.hart.run(1_000_000));
        assert_eq!(
            (hit.point, hit.access, hit.addr),
            (point, kind, addr),
            "{i}"
        );
        assert_eq!(vm.hart.pc(), pc, "{i}");
        if i == 1 {
            // Stopped before the store: memory as it was.
            assert_eq!(vm.r64(DATA + 0x10), 0xaaaa_aaaa_aaaa_aaaa);
            assert_eq!(vm.x(8), 0xaaaa_aaaa_aaaa_aa00);
        }
        if i == 0 {
            assert_eq!(vm.x(8), 0, "the load happened");
        }
        if i > 0 {
            // Only the instruction skipped over retired.
            assert_eq!(vm.hart.host_csr(c::MINSTRET).unwrap(), minstret + 1, "{i}");
        }
        vm.hart.skip_debug_points_once();
    }
    vm.run_clean(end);
    assert_eq!(vm.r8(DATA + 0x11), 0x88);
    assert_eq!(vm.r64(DATA + 0x40), 0x1122_3344_5566_7788);
}

/// The bank is not the guest's: with 64 points set, a program that walks `tselect`,
/// reads `tinfo`, and arms and disarms its own trigger sees exactly what it sees without.
#[test]
fn the_guest_cannot_see_or_change_the_points() {
    let t1 = c::TDATA1_TYPE_MCONTROL6 | c::MCONTROL6_U | c::MCONTROL6_LOAD;
    let body = |vm: &mut Vm| {
        vm.set_x(20, t1);
        vm.code(&[
            addi(5, 0, 7),
            csrw(c::TSELECT as u32, 5), // beyond the guest's 4: ignored
            csrr(10, c::TSELECT as u32),
            csrr(11, c::TINFO as u32),
            addi(5, 0, 3),
            csrw(c::TSELECT as u32, 5),
            csrr(12, c::TSELECT as u32),
            csrr(13, c::TDATA1 as u32),
            csrw(c::TDATA1 as u32, 20),
            csrr(14, c::TDATA1 as u32),
            csrw(c::TDATA1 as u32, 0),
            csrr(15, c::TDATA1 as u32),
            addi(5, 0, 4),
            csrw(c::TSELECT as u32, 5),
            csrr(16, c::TSELECT as u32),
        ])
    };
    let mut plain = Vm::new();
    let end = body(&mut plain);
    plain.run_clean(end);
    let mut vm = Vm::new();
    body(&mut vm);
    for i in 0..64 {
        vm.hart
            .add_debug_point(if i % 2 == 0 {
                DebugPoint::Execute(0x10_0000 + i)
            } else {
                DebugPoint::Watch {
                    addr: 0x20_0000 + 8 * i,
                    len: 8,
                    kind: WatchKind::Access,
                }
            })
            .unwrap();
    }
    assert_eq!(
        vm.hart.add_debug_point(DebugPoint::Execute(0)),
        Err(DebugPointError::Full { max: 64 })
    );
    assert!(matches!(
        vm.hart.add_debug_point(DebugPoint::Watch {
            addr: u64::MAX,
            len: 2,
            kind: WatchKind::Load
        }),
        Err(DebugPointError::BadRange { .. })
    ));
    vm.run_clean(end);
    assert_eq!(snapshot(&vm.hart), snapshot(&plain.hart));
    assert_eq!(vm.x(10), 0);
    assert_eq!(vm.x(12), 3);
    assert_eq!(vm.x(14), t1);
    // Saving the state carries no point; restoring it into the same hart keeps them.
    let state = vm.hart.save_state();
    let mut fresh = Vm::new();
    body(&mut fresh);
    fresh.hart.restore_state(&state).unwrap();
    fresh.hart.set_pc(CODE);
    fresh.run_clean(end);
    vm.hart.restore_state(&state).unwrap();
    vm.hart.set_pc(0x10_0000);
    assert_eq!(
        hit_of(vm.hart.run(10)).point,
        DebugPoint::Execute(0x10_0000)
    );
    vm.hart.clear_debug_points();
    vm.hart.set_pc(CODE);
    vm.run_clean(end);
}

/// A hosted guest (VS-mode, as under `vmm run`) stops at an execute point and at a watch,
/// and a guest trap at the same instruction comes only after the skip.
#[test]
fn a_hosted_guest_stops_in_vs_mode() {
    const GUEST: u64 = RAM_BASE + 0x2000;
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM_BASE), RAM_SIZE)]).unwrap();
    let code = [addi(5, 0, 1), sd(5, 7, 0), addi(6, 0, 2), ecall()];
    for (i, w) in code.iter().enumerate() {
        mem.write_obj(*w, GuestAddress(GUEST + 4 * i as u64))
            .unwrap();
    }
    let mut h = Hart::new_guest(HartConfig::default(), mem.clone()).unwrap();
    h.set_pc(GUEST);
    h.set_xreg(7, DATA);
    h.add_debug_point(DebugPoint::Execute(GUEST + 12)).unwrap();
    h.add_debug_point(DebugPoint::Watch {
        addr: DATA,
        len: 8,
        kind: WatchKind::Store,
    })
    .unwrap();
    let hit = hit_of(h.run(1000));
    assert_eq!(
        (hit.access, hit.addr, h.pc()),
        (HitAccess::Store, DATA, GUEST + 4)
    );
    assert_eq!(mem.read_obj::<u64>(GuestAddress(DATA)).unwrap(), 0);
    h.skip_debug_points_once();
    let hit = hit_of(h.run(1000));
    assert_eq!((hit.addr, h.pc(), h.xreg(6)), (GUEST + 12, GUEST + 12, 2));
    assert_eq!(mem.read_obj::<u64>(GuestAddress(DATA)).unwrap(), 1);
    h.skip_debug_points_once();
    match h.run(1000) {
        VcpuExit::GuestTrap(t) => assert_eq!(t.pc, GUEST + 12),
        e => panic!("expected the ecall's exit, got {e:?}"),
    }
}
