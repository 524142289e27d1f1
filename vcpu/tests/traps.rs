// Binary literals are grouped by instruction field (funct3, registers, opcode), not by nibble.
#![allow(clippy::unusual_byte_groupings)]
//! Trap tests: causes, xepc and xtval for exceptions, delegation through medeleg, trap
//! return, and interrupts through a vectored mtvec (privileged spec, machine-level ISA
//! chapter).

mod common;

use common::*;
use vcpu::trap::cause;
use vcpu::PrivilegeMode;

const INTERRUPT: u64 = 1 << 63;
const MTI: u64 = 7;
const MSI: u64 = 3;

#[test]
fn illegal_32bit_tval_is_the_instruction() {
    let mut vm = Vm::new();
    let t = vm.exec_trap(&[nop(), 0x0000_7003]); // LOAD funct3 = 111
    assert_eq!(
        t,
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: CODE + 4,
            tval: 0x7003
        }
    );

    let bad = r_type(0x02, 3, 2, 0, 1, OP_OP);
    let mut vm = Vm::new();
    let t = vm.exec_trap(&[bad]);
    assert_eq!(
        t,
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: CODE,
            tval: bad as u64
        }
    );
}

/// Run halfwords at CODE (followed by filler that must not be reached) and return the trap.
fn run16(halves: &[u16]) -> Trap {
    let mut vm = Vm::new();
    vm.put16(CODE, halves);
    vm.run_to_wfi();
    assert_eq!(vm.hart.pc(), TRAP + 4, "expected a trap");
    vm.mtrap()
}

#[test]
fn illegal_16bit_tval_is_only_16_bits() {
    // The halfword after the faulting compressed instruction must not leak into mtval.
    let t = run16(&[c_nop(), c_lwsp(0, 0), 0xffff, 0xffff]);
    assert_eq!(
        t,
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: CODE + 2,
            tval: c_lwsp(0, 0) as u64
        }
    );
    let t = run16(&[0x0000, 0xffff]);
    assert_eq!(
        t,
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: CODE,
            tval: 0
        }
    );
    let t = run16(&[c_li(1, 1), c_arith(1, 2, 8, 9), 0x1234]);
    assert_eq!(
        t,
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: CODE + 2,
            tval: c_arith(1, 2, 8, 9) as u64
        }
    );
}

#[test]
fn ecall_cause_per_mode() {
    let mut vm = Vm::new();
    let t = vm.exec_trap(&[nop(), ecall()]);
    assert_eq!(
        t,
        Trap {
            cause: cause::ECALL_M,
            epc: CODE + 4,
            tval: 0
        }
    );
    assert_eq!(vm.csr(MSTATUS) & MS_MPP, MS_MPP);

    for (mode, want, mpp) in [
        (PrivilegeMode::Supervisor, cause::ECALL_S, 1u64),
        (PrivilegeMode::User, cause::ECALL_U, 0),
    ] {
        let mut vm = Vm::new();
        let low = CODE + 0x100;
        let enter = vm.enter_mode(mode, low);
        vm.code(&enter);
        vm.code_at(low, &[nop(), ecall()]);
        vm.run_to_wfi();
        assert_eq!(vm.hart.pc(), TRAP + 4);
        assert_eq!(vm.hart.privilege(), PrivilegeMode::Machine);
        assert_eq!(
            vm.mtrap(),
            Trap {
                cause: want,
                epc: low + 4,
                tval: 0
            },
            "{mode:?}"
        );
        assert_eq!(
            (vm.csr(MSTATUS) & MS_MPP) >> 11,
            mpp,
            "MPP records {mode:?}"
        );
    }
}

#[test]
fn ebreak_tval_is_pc() {
    let mut vm = Vm::new();
    let t = vm.exec_trap(&[nop(), ebreak()]);
    assert_eq!(
        t,
        Trap {
            cause: cause::BREAKPOINT,
            epc: CODE + 4,
            tval: CODE + 4
        }
    );

    let t = run16(&[c_nop(), c_ebreak(), 0xffff]);
    assert_eq!(
        t,
        Trap {
            cause: cause::BREAKPOINT,
            epc: CODE + 2,
            tval: CODE + 2
        }
    );
}

#[test]
fn access_faults() {
    let ram_end = RAM_BASE + RAM_SIZE as u64;
    let cases: &[(u64, u32, u64)] = &[
        (0, ld(5, 1, 0), cause::LOAD_ACCESS),
        (0x1000, lw(5, 1, 0), cause::LOAD_ACCESS),
        (ram_end, lb(5, 1, 0), cause::LOAD_ACCESS),
        (RAM_BASE - 8, ld(5, 1, 0), cause::LOAD_ACCESS),
        (0x10, sd(5, 1, 0), cause::STORE_ACCESS),
        (ram_end, sb(5, 1, 0), cause::STORE_ACCESS),
        (0, amo(AMO_ADD, 3, 5, 1, 0), cause::STORE_ACCESS), // AMOs report store/AMO faults
        (0, lr_d(5, 1), cause::LOAD_ACCESS),
    ];
    for &(addr, insn, want) in cases {
        let mut vm = Vm::new();
        vm.set_x(1, addr);
        vm.set_x(5, 0x77);
        let t = vm.exec_trap(&[insn]);
        assert_eq!(
            t,
            Trap {
                cause: want,
                epc: CODE,
                tval: addr
            },
            "{insn:#010x} at {addr:#x}"
        );
        if insn & 0x7f == OP_LOAD {
            assert_eq!(vm.x(5), 0x77, "a faulting load must not write rd");
        }
    }
}

#[test]
fn fetch_access_fault() {
    for target in [0u64, RAM_BASE + RAM_SIZE as u64] {
        let mut vm = Vm::new();
        vm.set_x(1, target);
        let t = vm.exec_trap(&[jalr(2, 1, 0)]);
        assert_eq!(
            t,
            Trap {
                cause: cause::INSN_ACCESS,
                epc: target,
                tval: target
            }
        );
        assert_eq!(vm.x(2), CODE + 4, "the jump itself retired");
    }
}

#[test]
fn medeleg_routes_u_ecall_to_s() {
    let mut vm = Vm::new();
    let u = CODE + 0x100;
    let strap = CODE + 0x200;
    vm.set_x(20, 1 << cause::ECALL_U);
    vm.set_x(21, strap);
    vm.set_x(22, MS_SIE);
    let mut code = vec![csrw(MEDELEG, 20), csrw(STVEC, 21), csrrs(0, MSTATUS, 22)];
    code.extend(vm.enter_mode(PrivilegeMode::User, u));
    vm.code(&code);
    vm.code_at(u, &[nop(), ecall()]);
    vm.put32(strap, &[wfi()]); // WFI is legal in S-mode (TW = 0)
    vm.run_to_wfi();
    assert_eq!(vm.hart.privilege(), PrivilegeMode::Supervisor);
    assert_eq!(vm.hart.pc(), strap + 4);
    assert_eq!(
        vm.strap(),
        Trap {
            cause: cause::ECALL_U,
            epc: u + 4,
            tval: 0
        }
    );
    let s = vm.csr(MSTATUS);
    assert_eq!(s & MS_SPP, 0, "SPP = U");
    assert_eq!(
        s & (MS_SPIE | MS_SIE),
        MS_SPIE,
        "SPIE = old SIE, SIE cleared"
    );
    assert_eq!(vm.csr(MCAUSE), 0, "M-mode trap CSRs untouched");
    assert_eq!(vm.csr(MEPC), u);
}

#[test]
fn medeleg_s_ecall_and_illegal_stay_in_s() {
    for (bad, want, tval) in [
        (ecall(), cause::ECALL_S, 0u64),
        (0x0000_7003, cause::ILLEGAL_INSN, 0x7003),
    ] {
        let mut vm = Vm::new();
        let s = CODE + 0x100;
        let strap = CODE + 0x200;
        vm.set_x(20, (1 << cause::ECALL_S) | (1 << cause::ILLEGAL_INSN));
        vm.set_x(21, strap);
        let mut code = vec![csrw(MEDELEG, 20), csrw(STVEC, 21)];
        code.extend(vm.enter_mode(PrivilegeMode::Supervisor, s));
        vm.code(&code);
        vm.code_at(s, &[bad]);
        vm.put32(strap, &[wfi()]);
        vm.run_to_wfi();
        assert_eq!(vm.hart.privilege(), PrivilegeMode::Supervisor);
        assert_eq!(
            vm.strap(),
            Trap {
                cause: want,
                epc: s,
                tval
            }
        );
        assert_eq!(vm.csr(MSTATUS) & MS_SPP, MS_SPP, "SPP = S");
    }
}

#[test]
fn m_mode_traps_are_never_delegated() {
    let mut vm = Vm::new();
    vm.set_x(20, u64::MAX);
    vm.set_x(21, CODE + 0x200);
    vm.put32(CODE + 0x200, &[wfi()]);
    let t = vm.exec_trap(&[
        csrw(MEDELEG, 20),
        csrw(STVEC, 21),
        csrr(5, MEDELEG),
        ecall(),
    ]);
    assert_eq!(
        vm.x(5) & (1 << 11),
        0,
        "medeleg bit 11 (ECALL from M) is read-only zero"
    );
    assert_eq!(
        t,
        Trap {
            cause: cause::ECALL_M,
            epc: CODE + 12,
            tval: 0
        }
    );
    assert_eq!(vm.csr(SCAUSE), 0);

    let mut vm = Vm::new();
    vm.set_x(20, u64::MAX);
    let t = vm.exec_trap(&[csrw(MEDELEG, 20), 0x0000_7003]);
    assert_eq!(
        t,
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: CODE + 4,
            tval: 0x7003
        }
    );
}

/// Vectored handler table at `vec`: slot i is `jal x30, common`, so x30 - 4 identifies the
/// slot; `common` disables all interrupts in mie and stops in WFI.
fn vectored_table(vm: &Vm, vec: u64) -> u64 {
    vectored_table_ie(vm, vec, MIE)
}

/// Like [`vectored_table`], clearing interrupt-enable CSR `ie` (mie or sie).
fn vectored_table_ie(vm: &Vm, vec: u64, ie: u32) -> u64 {
    let common = vec + 0x100;
    for i in 0..16u64 {
        vm.put32(vec + 4 * i, &[jal(30, (common - (vec + 4 * i)) as i32)]);
    }
    vm.put32(common, &[csrw(ie, 0), wfi()]);
    common
}

#[test]
fn vectored_mtvec_machine_timer_interrupt() {
    let mut vm = Vm::new();
    let vec = RAM_BASE + 0x400;
    let common = vectored_table(&vm, vec);
    vm.set_x(31, vec | 1);
    vm.set_x(5, 1 << MTI);
    vm.set_x(6, MS_MIE);
    vm.code(&[csrrs(0, MIE, 5), csrrs(0, MSTATUS, 6), jal(0, 0)]);
    vm.hart.set_mtimecmp(50);
    vm.run_to_wfi();
    assert_eq!(vm.hart.pc(), common + 8);
    assert_eq!(
        vm.x(30),
        vec + 4 * MTI + 4,
        "handler entered at BASE + 4 * 7"
    );
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: INTERRUPT | MTI,
            epc: CODE + 8,
            tval: 0
        }
    );
    let s = vm.csr(MSTATUS);
    assert_eq!(s & (MS_MIE | MS_MPIE), MS_MPIE);
    assert_eq!(vm.csr(MIP) & (1 << MTI), 1 << MTI);
    assert!(vm.hart.mtime() >= 50);
}

#[test]
fn vectored_mtvec_exceptions_use_base() {
    let mut vm = Vm::new();
    let vec = RAM_BASE + 0x400;
    vectored_table(&vm, vec);
    vm.set_x(31, vec | 1);
    vm.code(&[ecall()]);
    vm.run_to_wfi();
    assert_eq!(vm.x(30), vec + 4, "exceptions go to BASE");
    assert_eq!(vm.csr(MCAUSE), cause::ECALL_M);
    assert_eq!(vm.csr(MTVEC), vec | 1);
}

#[test]
fn interrupt_priority_msi_over_mti() {
    let mut vm = Vm::new();
    vm.set_x(5, (1 << MTI) | (1 << MSI));
    vm.set_x(6, MS_MIE);
    vm.hart.set_mtimecmp(0);
    vm.hart.set_msip(true);
    vm.code(&[
        csrrs(0, MIE, 5),
        nop(),
        nop(),
        csrrs(0, MSTATUS, 6),
        jal(0, 0),
    ]);
    vm.put32(TRAP, &[csrw(MIE, 0), wfi()]);
    vm.run_to_wfi();
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: INTERRUPT | MSI,
            epc: CODE + 16,
            tval: 0
        }
    );
}

#[test]
fn timer_interrupt_in_u_mode_ignores_mie() {
    // Interrupts for M are always enabled while running in a lower mode.
    let mut vm = Vm::new();
    let u = CODE + 0x100;
    vm.set_x(5, 1 << MTI);
    let mut code = vec![csrrs(0, MIE, 5)];
    code.extend(vm.enter_mode(PrivilegeMode::User, u));
    vm.code(&code);
    vm.put32(u, &[nop(), jal(0, 0)]);
    vm.put32(TRAP, &[csrw(MIE, 0), wfi()]);
    vm.hart.set_mtimecmp(50);
    vm.run_to_wfi();
    assert_eq!(vm.hart.privilege(), PrivilegeMode::Machine);
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: INTERRUPT | MTI,
            epc: u + 4,
            tval: 0
        }
    );
    assert_eq!(vm.csr(MSTATUS) & MS_MPP, 0);
}

#[test]
fn wfi_resumes_on_pending_but_disabled_interrupt() {
    let mut vm = Vm::new();
    vm.set_x(5, 1 << MTI);
    vm.set_x(8, 2000);
    vm.hart.set_mtimecmp(50);
    let end = vm.code(&[
        csrrs(0, MIE, 5),
        addi(7, 7, 1),
        blt(7, 8, -4), // spin ~4000 instructions: mtime passes mtimecmp
        wfi(),         // MTIP pending and enabled in mie, MIE = 0: resumes, no trap
        csrr(9, MIP),
        csrw(MIE, 0),
    ]);
    vm.run_clean(end);
    assert_eq!(vm.x(9) & (1 << MTI), 1 << MTI);
    assert_eq!(vm.csr(MCAUSE), 0);
}

#[test]
fn mret_updates_mstatus() {
    for mpie in [0, MS_MPIE] {
        let mut vm = Vm::new();
        let u = CODE + 0x100;
        vm.set_x(20, MS_MPIE | MS_MIE);
        vm.set_x(21, mpie | MS_MPRV);
        let mut code = vec![csrrc(0, MSTATUS, 20), csrrs(0, MSTATUS, 21)];
        code.extend(vm.enter_mode(PrivilegeMode::User, u));
        vm.code(&code);
        vm.code_at(u, &[ecall()]);
        vm.run_to_wfi();
        assert_eq!(vm.mtrap().cause, cause::ECALL_U);
        let s = vm.csr(MSTATUS);
        // MRET: MIE <- MPIE; the ECALL then: MPIE <- MIE, MIE <- 0.
        assert_eq!(
            s & MS_MPIE,
            mpie,
            "MPIE after mret+ecall with MPIE={mpie:#x}"
        );
        assert_eq!(s & MS_MIE, 0);
        assert_eq!(s & MS_MPRV, 0, "MRET to a mode below M clears MPRV");
    }

    // MRET to M: MPP becomes U (the least-privileged mode), MPIE becomes 1.
    let mut vm = Vm::new();
    vm.set_x(20, MS_MPP);
    vm.set_x(21, CODE + 16);
    vm.exec(&[
        csrrs(0, MSTATUS, 20),
        csrw(MEPC, 21),
        mret(),
        nop(),
        csrr(10, MSTATUS),
    ]);
    assert_eq!(vm.hart.privilege(), PrivilegeMode::Machine);
    assert_eq!(vm.x(10) & (MS_MPP | MS_MPIE), MS_MPIE);
}

#[test]
fn privileged_instructions_in_lower_modes() {
    let cases: &[(PrivilegeMode, u32)] = &[
        (PrivilegeMode::User, mret()),
        (PrivilegeMode::User, sret()),
        (PrivilegeMode::User, wfi()),
        (PrivilegeMode::User, sfence_vma(0, 0)),
        (PrivilegeMode::Supervisor, mret()),
    ];
    for &(mode, bad) in cases {
        let mut vm = Vm::new();
        let low = CODE + 0x100;
        let enter = vm.enter_mode(mode, low);
        vm.code(&enter);
        vm.code_at(low, &[bad]);
        vm.run_to_wfi();
        assert_eq!(vm.hart.pc(), TRAP + 4);
        assert_eq!(
            vm.mtrap(),
            Trap {
                cause: cause::ILLEGAL_INSN,
                epc: low,
                tval: bad as u64
            },
            "{mode:?} {bad:#010x}"
        );
    }
}

#[test]
fn tsr_and_tvm_trap_s_mode() {
    const TSR: u64 = 1 << 22;
    const TVM: u64 = 1 << 20;
    for (bit, bad) in [
        (TSR, sret()),
        (TVM, sfence_vma(0, 0)),
        (TVM, csrr(5, SATP)),
        (TVM, csrw(SATP, 0)),
    ] {
        let mut vm = Vm::new();
        let s = CODE + 0x100;
        vm.set_x(20, bit);
        let mut code = vec![csrrs(0, MSTATUS, 20)];
        code.extend(vm.enter_mode(PrivilegeMode::Supervisor, s));
        vm.code(&code);
        vm.code_at(s, &[bad]);
        vm.run_to_wfi();
        assert_eq!(
            vm.mtrap(),
            Trap {
                cause: cause::ILLEGAL_INSN,
                epc: s,
                tval: bad as u64
            },
            "{bad:#010x}"
        );
    }
}

#[test]
fn sret_returns_to_spp() {
    // From M, SRET (allowed) returns to the mode in SPP and sets SIE <- SPIE, SPIE <- 1, SPP <- U.
    let mut vm = Vm::new();
    let u = CODE + 0x100;
    vm.set_x(20, MS_SPIE);
    vm.set_x(21, u);
    vm.code(&[csrrs(0, MSTATUS, 20), csrw(SEPC, 21), sret()]);
    vm.code_at(u, &[ecall()]);
    vm.run_to_wfi();
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: cause::ECALL_U,
            epc: u,
            tval: 0
        }
    );
    let s = vm.csr(MSTATUS);
    assert_eq!(s & (MS_SIE | MS_SPIE | MS_SPP), MS_SIE | MS_SPIE);
}

const STI: u64 = 5;

/// M-mode prologue: delegate STI if `deleg`, enable STIE, raise STIP, set stvec and the
/// given mstatus bits, then enter `mode` at CODE + 0x100.
fn s_timer_setup(
    vm: &mut Vm,
    deleg: bool,
    mstatus_set: u64,
    stvec: u64,
    mode: PrivilegeMode,
) -> u64 {
    let low = CODE + 0x100;
    vm.set_x(20, 1 << STI);
    vm.set_x(21, if deleg { 1 << STI } else { 0 });
    vm.set_x(22, stvec);
    vm.set_x(23, mstatus_set);
    let mut code = vec![
        csrw(MIDELEG, 21),
        csrw(MIE, 20),
        csrw(MIP, 20),
        csrw(STVEC, 22),
        csrrs(0, MSTATUS, 23),
    ];
    code.extend(vm.enter_mode(mode, low));
    vm.code(&code);
    vm.code_at(low, &[nop(), nop()]);
    low
}

#[test]
fn delegated_supervisor_timer_interrupt_vectored() {
    let mut vm = Vm::new();
    let svec = RAM_BASE + 0x600;
    let common = vectored_table_ie(&vm, svec, SIE);
    let low = s_timer_setup(&mut vm, true, MS_SIE, svec | 1, PrivilegeMode::Supervisor);
    vm.run_to_wfi();
    assert_eq!(vm.hart.privilege(), PrivilegeMode::Supervisor);
    assert_eq!(vm.hart.pc(), common + 8);
    assert_eq!(
        vm.x(30),
        svec + 4 * STI + 4,
        "S handler entered at BASE + 4 * 5"
    );
    assert_eq!(
        vm.strap(),
        Trap {
            cause: INTERRUPT | STI,
            epc: low,
            tval: 0
        }
    );
    let s = vm.csr(MSTATUS);
    assert_eq!(s & (MS_SPP | MS_SPIE | MS_SIE), MS_SPP | MS_SPIE);
    assert_eq!(vm.csr(MCAUSE), 0);
}

#[test]
fn delegated_supervisor_interrupt_in_u_mode_ignores_sie() {
    let mut vm = Vm::new();
    let strap = RAM_BASE + 0x600;
    vm.put32(strap, &[csrw(SIE, 0), wfi()]);
    let low = s_timer_setup(&mut vm, true, 0, strap, PrivilegeMode::User);
    vm.run_to_wfi();
    assert_eq!(vm.hart.privilege(), PrivilegeMode::Supervisor);
    assert_eq!(
        vm.strap(),
        Trap {
            cause: INTERRUPT | STI,
            epc: low,
            tval: 0
        }
    );
    assert_eq!(vm.csr(MSTATUS) & MS_SPP, 0);
}

#[test]
fn undelegated_supervisor_interrupt_goes_to_m() {
    let mut vm = Vm::new();
    vm.put32(TRAP, &[csrw(MIE, 0), wfi()]);
    let low = s_timer_setup(&mut vm, false, 0, CODE + 0x600, PrivilegeMode::Supervisor);
    vm.run_to_wfi();
    assert_eq!(vm.hart.privilege(), PrivilegeMode::Machine);
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: INTERRUPT | STI,
            epc: low,
            tval: 0
        }
    );
    assert_eq!(vm.csr(MSTATUS) & MS_MPP, 1 << 11);
}

#[test]
fn delegated_interrupt_is_not_taken_in_m_mode() {
    let mut vm = Vm::new();
    vm.set_x(20, 1 << STI);
    vm.set_x(23, MS_MIE | MS_SIE);
    let end = vm.code(&[
        csrw(MIDELEG, 20),
        csrw(MIE, 20),
        csrw(MIP, 20),
        csrrs(0, MSTATUS, 23),
        nop(),
        wfi(), // pending and enabled in mie: resumes
        csrw(MIE, 0),
    ]);
    vm.run_clean(end);
    assert_eq!(vm.csr(MCAUSE), 0);
    assert_eq!(vm.csr(SCAUSE), 0);
    assert_eq!(vm.csr(SIP), 1 << STI);
}

#[test]
fn mip_seip_rmw_does_not_latch_the_external_line() {
    // Privileged spec (mip, SEIP): reads of mip.SEIP return the OR of the software-writable
    // bit and the platform's signal, but only the software-writable bit takes part in the
    // read-modify-write of CSRRS/CSRRC.
    const SEI: u64 = 9;
    const SSI: u64 = 1;
    let mut vm = Vm::new();
    vm.set_x(5, 1 << SSI);
    vm.hart.set_seip(true);
    let first = vm.code(&[csrr(9, MIP), csrrs(0, MIP, 5)]);
    vm.put32(first + 4, &[csrr(10, MIP), wfi()]);
    vm.run_clean(first);
    assert_eq!(
        vm.x(9) & (1 << SEI),
        1 << SEI,
        "the platform line is visible in mip"
    );
    vm.hart.set_seip(false);
    vm.run_clean(first + 8);
    assert_eq!(
        vm.x(10) & ((1 << SEI) | (1 << SSI)),
        1 << SSI,
        "SEIP must drop with the line: {:#x}",
        vm.x(10)
    );
}

#[test]
fn an_interrupt_unmasked_by_an_sstatus_write_is_taken_right_after_it() {
    // A delegated STI is pending with sstatus.SIE clear; S-mode sets SIE (as Linux's
    // local_irq_restore does) and the interrupt comes before the next instruction, with
    // and without block translation. (A write of sstatus ends the interpreter's chunk only
    // when it leaves an interrupt pending and enabled: `Hart::csr_write_ends_chunk`.)
    for jit in [false, true] {
        let mut vm = Vm::with_config(vcpu::HartConfig {
            jit,
            ..vcpu::HartConfig::default()
        });
        let strap = RAM_BASE + 0x600;
        vm.put32(strap, &[csrw(SIE, 0), wfi()]);
        let low = s_timer_setup(&mut vm, true, 0, strap, PrivilegeMode::Supervisor);
        vm.code_at(
            low,
            &[
                csrrsi(0, SSTATUS, 2),
                addi(10, 0, 1),
                addi(11, 0, 2),
                addi(12, 0, 3),
            ],
        );
        vm.run_to_wfi();
        assert_eq!(vm.hart.privilege(), PrivilegeMode::Supervisor, "jit {jit}");
        assert_eq!(
            vm.strap(),
            Trap {
                cause: INTERRUPT | STI,
                epc: low + 4,
                tval: 0
            },
            "jit {jit}"
        );
        assert_eq!((vm.x(10), vm.x(11)), (0, 0), "jit {jit}");
    }
}
