// Binary literals are grouped by instruction field (funct3, registers, opcode), not by nibble.
#![allow(clippy::unusual_byte_groupings)]
//! Execution tests through the hart: RV64I, M, A and Zicsr results and the CSR access rules.
//! Every expected value is derived from the RISC-V unprivileged and privileged specifications.

mod common;

use common::*;
use vcpu::trap::cause;
use vcpu::{HartConfig, MmioAccess, MmioRange, PrivilegeMode, VcpuExit};

const M: u64 = u64::MAX;

/// Run `body` with the given initial registers and check it completes without a trap.
fn run(regs: &[(usize, u64)], body: &[u32]) -> Vm {
    let mut vm = Vm::new();
    for &(r, v) in regs {
        vm.set_x(r, v);
    }
    vm.exec(body);
    vm
}

#[track_caller]
fn expect(vm: &Vm, want: &[(usize, u64)]) {
    for &(r, v) in want {
        assert_eq!(vm.x(r), v, "x{r}: got {:#x}, want {v:#x}", vm.x(r));
    }
}

// ---------------------------------------------------------------------------------------------
// M extension
// ---------------------------------------------------------------------------------------------

#[test]
fn div_rem_by_zero_and_overflow() {
    let x = 0x1234_5678_9abc_def0u64;
    let vm = run(
        &[
            (1, x),
            (2, 0),
            (3, i64::MIN as u64),
            (4, M),
            (13, -5i64 as u64),
        ],
        &[
            div(5, 1, 2),
            divu(6, 1, 2),
            rem(7, 1, 2),
            remu(8, 1, 2),
            div(9, 3, 4),
            rem(10, 3, 4),
            divu(11, 3, 4),
            remu(12, 3, 4),
            rem(14, 13, 2),
            div(15, 13, 2),
            remu(16, 13, 2),
        ],
    );
    expect(
        &vm,
        &[
            (5, M),               // DIV x/0 = -1
            (6, M),               // DIVU x/0 = 2^64-1
            (7, x),               // REM x/0 = x
            (8, x),               // REMU x/0 = x
            (9, i64::MIN as u64), // DIV overflow = dividend
            (10, 0),              // REM overflow = 0
            (11, 0),              // 2^63 / (2^64-1)
            (12, 1 << 63),        // 2^63 % (2^64-1)
            (14, -5i64 as u64),   // REM -5/0 = -5
            (15, M),              // DIV -5/0 = -1
            (16, -5i64 as u64),   // REMU of -5 by 0
        ],
    );
}

#[test]
fn div_rem_rounding() {
    let vm = run(
        &[(1, -7i64 as u64), (2, 2), (3, 7), (4, -2i64 as u64)],
        &[
            div(5, 1, 2),
            rem(6, 1, 2),
            div(7, 3, 4),
            rem(8, 3, 4),
            divu(9, 3, 2),
            remu(10, 3, 2),
            divu(11, 1, 2),
            divw(12, 1, 2),
            remw(13, 1, 2),
        ],
    );
    expect(
        &vm,
        &[
            (5, -3i64 as u64), // rounds toward zero
            (6, -1i64 as u64), // remainder has the dividend's sign
            (7, -3i64 as u64),
            (8, 1),
            (9, 3),
            (10, 1),
            (11, (u64::MAX - 6) / 2),
            (12, -3i64 as u64),
            (13, -1i64 as u64),
        ],
    );
}

#[test]
fn div_rem_word_forms() {
    let a = 0xdead_beef_8000_0000u64; // low word = i32::MIN
    let vm = run(
        &[
            (1, a),
            (2, 0xffff_ffff_0000_0000),
            (3, 0x0000_0001_ffff_ffff),
            (4, 0x5_0000_0007),
            (15, 0xabcd_0000_0000_0001),
        ],
        &[
            divw(5, 1, 2),
            divuw(6, 1, 2),
            remw(7, 1, 2),
            remuw(8, 1, 2),
            divw(9, 1, 3),
            remw(10, 1, 3),
            divuw(11, 1, 3),
            remuw(12, 1, 3),
            remuw(13, 4, 2),
            divuw(14, 1, 15),
            mulw(16, 4, 3),
        ],
    );
    expect(
        &vm,
        &[
            (5, M),                     // DIVW by 0 = -1
            (6, M),                     // DIVUW by 0 = 2^32-1, sign-extended
            (7, 0xffff_ffff_8000_0000), // REMW by 0 = sext(x[31:0])
            (8, 0xffff_ffff_8000_0000), // REMUW by 0 = sext(x[31:0])
            (9, 0xffff_ffff_8000_0000), // DIVW overflow = -2^31
            (10, 0),                    // REMW overflow = 0
            (11, 0),
            (12, 0xffff_ffff_8000_0000),
            (13, 7),
            (14, 0xffff_ffff_8000_0000), // DIVUW result sign-extended
            (16, -7i64 as u64),          // MULW 7 * -1
        ],
    );
}

#[test]
fn mul_high_signedness() {
    let vm = run(
        &[
            (1, -2i64 as u64),
            (2, 3),
            (3, M),
            (4, 1 << 63),
            (5, 0x7fff_ffff),
            (6, 2),
        ],
        &[
            mul(10, 1, 2),
            mulh(11, 1, 2),
            mulhu(12, 1, 2),
            mulhsu(13, 1, 2),
            mulh(14, 3, 3),
            mulhu(15, 3, 3),
            mulhsu(16, 3, 3),
            mulhsu(17, 4, 3),
            mulh(18, 4, 4),
            mulhu(19, 4, 4),
            mulhsu(20, 3, 4),
            mulhsu(21, 2, 3),
            mulhsu(22, 2, 1),
            mulw(23, 5, 6),
        ],
    );
    expect(
        &vm,
        &[
            (10, -6i64 as u64),
            (11, M),                     // -6 >> 64 = -1
            (12, 2),                     // (2^64-2)*3 = 2*2^64 + (2^64-6)
            (13, M),                     // -2 * 3 (signed x unsigned)
            (14, 0),                     // (-1)*(-1) = 1
            (15, 0xffff_ffff_ffff_fffe), // (2^64-1)^2 >> 64
            (16, M),                     // -1 * (2^64-1)
            (17, 1 << 63),               // -2^63 * (2^64-1) = -2^127 + 2^63
            (18, 1 << 62),               // (-2^63)^2 = 2^126
            (19, 1 << 62),               // (2^63)^2 = 2^126
            (20, M),                     // -1 * 2^63
            (21, 2),                     // 3 * (2^64-1)
            (22, 2),                     // 3 * (2^64-2) = 2*2^64 + (2^64-6)
            (23, 0xffff_ffff_ffff_fffe), // MULW 0x7fffffff*2 = 0xfffffffe, sign-extended
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// RV64I
// ---------------------------------------------------------------------------------------------

#[test]
fn word_ops_sign_extend() {
    let vm = run(
        &[
            (1, 0x7fff_ffff),
            (2, 1),
            (3, 0x8000_0000),
            (4, 0xffff_ffff_0000_0010),
            (5, 36),
            (6, 0xffff_ffff),
        ],
        &[
            addw(10, 1, 2),
            addiw(11, 6, 0),
            slliw(12, 2, 31),
            srliw(13, 3, 0),
            srliw(14, 3, 1),
            srliw(15, 6, 31),
            sraw(16, 3, 5),
            sraiw(17, 3, 1),
            subw(18, 0, 3),
            sllw(19, 2, 5),
            srlw(20, 4, 5),
            addiw(21, 1, 1),
            slliw(22, 6, 4),
            sraw(23, 1, 5),
            srlw(24, 6, 0),
            sraiw(25, 6, 31),
            srliw(26, 4, 4),
        ],
    );
    expect(
        &vm,
        &[
            (10, 0xffff_ffff_8000_0000), // ADDW overflow wraps and sign-extends
            (11, M),                     // sext.w of 0xffffffff
            (12, 0xffff_ffff_8000_0000),
            (13, 0xffff_ffff_8000_0000), // SRLIW by 0 still sign-extends bit 31
            (14, 0x4000_0000),
            (15, 1),
            (16, 0xffff_ffff_f800_0000), // SRAW uses rs2[4:0] = 4
            (17, 0xffff_ffff_c000_0000),
            (18, 0xffff_ffff_8000_0000),
            (19, 16), // SLLW by 36 = by 4
            (20, 1),  // SRLW ignores rs1[63:32]
            (21, 0xffff_ffff_8000_0000),
            (22, 0xffff_ffff_ffff_fff0),
            (23, 0x07ff_ffff),
            (24, M),
            (25, M),
            (26, 1),
        ],
    );
}

#[test]
fn shift_amounts_are_masked() {
    let vm = run(
        &[
            (1, 1),
            (2, 67),
            (3, 1 << 63),
            (4, 0x7f),
            (5, 0xffff_ffff_ffff_ffc1),
        ],
        &[
            sll(10, 1, 2),
            srl(11, 3, 5),
            sra(12, 3, 4),
            sra(13, 3, 5),
            sllw(14, 1, 2),
            sll(15, 1, 4),
            srai(16, 3, 63),
            srli(17, 3, 63),
            slli(18, 1, 63),
            srl(19, 3, 4),
            sll(20, 1, 0), // by x0
        ],
    );
    expect(
        &vm,
        &[
            (10, 8),
            (11, 1 << 62),
            (12, M),
            (13, 0xc000_0000_0000_0000),
            (14, 8),
            (15, 1 << 63),
            (16, M),
            (17, 1),
            (18, 1 << 63),
            (19, 1),
            (20, 1),
        ],
    );
}

#[test]
fn set_less_than() {
    let vm = run(
        &[(1, M), (2, 1), (3, i64::MIN as u64), (4, i64::MAX as u64)],
        &[
            slt(10, 1, 2),
            sltu(11, 1, 2),
            slt(12, 2, 1),
            sltu(13, 2, 1),
            slti(14, 1, 0),
            sltiu(15, 2, -1),
            sltiu(16, 0, 1),
            sltiu(17, 1, -1),
            slti(18, 2, -2048),
            slt(19, 1, 1),
            slt(20, 3, 4),
            sltu(21, 3, 4),
            slti(22, 3, -2048),
            sltiu(23, 2, 1),
        ],
    );
    expect(
        &vm,
        &[
            (10, 1),
            (11, 0),
            (12, 0),
            (13, 1),
            (14, 1),
            (15, 1), // the immediate is sign-extended, then compared unsigned
            (16, 1),
            (17, 0),
            (18, 0),
            (19, 0),
            (20, 1),
            (21, 0),
            (22, 1),
            (23, 0),
        ],
    );
}

#[test]
fn lui_auipc_sign_extension() {
    let vm = run(
        &[],
        &[
            lui(10, 0x80000),
            lui(11, 0x7ffff),
            lui(12, 0xfffff),
            auipc(13, 0x80000),
            auipc(14, 0),
            auipc(15, 0x7ffff),
        ],
    );
    expect(
        &vm,
        &[
            (10, 0xffff_ffff_8000_0000),
            (11, 0x7fff_f000),
            (12, 0xffff_ffff_ffff_f000),
            (13, (CODE + 12).wrapping_add(0xffff_ffff_8000_0000)),
            (14, CODE + 16),
            (15, CODE + 20 + 0x7fff_f000),
        ],
    );
    assert_eq!(vm.x(13), 0x100c);
}

#[test]
fn jal_jalr_link_and_bit0() {
    let vm = run(
        &[(6, CODE + 4 * 5 + 1), (7, CODE + 4 * 8 + 4)],
        &[
            jal(1, 8),      // 0 -> 2
            addi(10, 0, 1), // 1 skipped
            jalr(5, 6, 0),  // 2 -> 5 (bit 0 of the target cleared)
            addi(11, 0, 1), // 3 skipped
            addi(12, 0, 1), // 4 skipped
            jalr(7, 7, -4), // 5 -> 8, rd == rs1: the old value is the base
            addi(13, 0, 1), // 6 skipped
            addi(13, 0, 2), // 7 skipped
            jal(0, 8),      // 8 -> 10
            addi(14, 0, 1), // 9 skipped
        ],
    );
    expect(
        &vm,
        &[
            (1, CODE + 4),
            (5, CODE + 12),
            (7, CODE + 24),
            (10, 0),
            (11, 0),
            (12, 0),
            (13, 0),
            (14, 0),
        ],
    );
}

#[test]
fn jal_backward_and_branches() {
    let vm = run(
        &[(1, 5), (3, M), (4, 1)],
        &[
            jal(0, 8),      // 0 -> 2
            addi(2, 2, 3),  // 1: loop body
            addi(1, 1, -1), // 2
            bge(1, 0, -8),  // 3 -> 1 while x1 >= 0 (signed)
            blt(3, 4, 8),   // 4: -1 < 1 signed: taken -> 6
            addi(20, 0, 1), // 5 skipped
            bltu(3, 4, 8),  // 6: 2^64-1 < 1 unsigned: not taken
            addi(21, 0, 1), // 7 executed
            bgeu(3, 4, 8),  // 8: taken -> 10
            addi(22, 0, 1), // 9 skipped
            bne(3, 3, 8),   // 10: not taken
            beq(3, 3, 8),   // 11: taken -> 13
            addi(23, 0, 1), // 12 skipped
        ],
    );
    // x1 counts 4, 3, 2, 1, 0, -1; the body runs five times.
    expect(&vm, &[(1, M), (2, 15), (20, 0), (21, 1), (22, 0), (23, 0)]);
}

#[test]
fn loads_extend_and_stores_size() {
    let vm = Vm::new();
    vm.w64(DATA, 0x8000_0002_8001_0080);
    vm.w64(DATA + 8, 0x8000_0000_0000_0003);
    for a in (0x100..0x120).step_by(8) {
        vm.w64(DATA + a, M);
    }
    let mut vm = vm;
    vm.set_x(1, DATA);
    vm.set_x(2, DATA + 16);
    vm.set_x(20, 0x1122_3344_5566_7788);
    vm.exec(&[
        lb(10, 1, 0),
        lbu(11, 1, 0),
        lh(12, 1, 2),
        lhu(13, 1, 2),
        lw(14, 1, 4),
        lwu(15, 1, 4),
        ld(16, 1, 8),
        lb(17, 1, 1),
        lh(18, 1, 0),
        ld(19, 2, -8),
        sb(20, 1, 0x100),
        sh(20, 1, 0x108),
        sw(20, 1, 0x110),
        sd(20, 1, 0x118),
    ]);
    expect(
        &vm,
        &[
            (10, 0xffff_ffff_ffff_ff80),
            (11, 0x80),
            (12, 0xffff_ffff_ffff_8001),
            (13, 0x8001),
            (14, 0xffff_ffff_8000_0002),
            (15, 0x8000_0002),
            (16, 0x8000_0000_0000_0003),
            (17, 0),
            (18, 0x0080),
            (19, 0x8000_0000_0000_0003),
        ],
    );
    assert_eq!(vm.r64(DATA + 0x100), 0xffff_ffff_ffff_ff88);
    assert_eq!(vm.r64(DATA + 0x108), 0xffff_ffff_ffff_7788);
    assert_eq!(vm.r64(DATA + 0x110), 0xffff_ffff_5566_7788);
    assert_eq!(vm.r64(DATA + 0x118), 0x1122_3344_5566_7788);
}

#[test]
fn x0_is_hardwired() {
    let vm = run(
        &[(1, 5)],
        &[
            addi(0, 1, 7),
            lui(0, 0x12345),
            add(2, 0, 0),
            jal(0, 4),
            addi(3, 0, 0),
        ],
    );
    assert_eq!(vm.x(0), 0);
    assert_eq!(vm.x(2), 0);
}

#[test]
fn misaligned_loads_and_stores_in_ram() {
    let mut vm = Vm::new();
    vm.w64(DATA, 0x0706_0504_0302_0100);
    vm.w64(DATA + 8, 0x0f0e_0d0c_0b0a_0908);
    vm.w64(DATA + 0xff8, 0x1716_1514_1312_1110);
    vm.w64(DATA + 0x1000, 0x1f1e_1d1c_1b1a_1918);
    vm.set_x(1, DATA);
    vm.set_x(2, DATA + 0x1000);
    vm.set_x(20, 0x1122_3344_5566_7788);
    vm.exec(&[
        ld(10, 1, 3),
        lw(11, 1, 1),
        lh(12, 1, 7),
        lwu(13, 1, 6),
        lhu(14, 1, 0xf),
        ld(15, 2, -3), // crosses a page boundary
        sd(20, 1, 0x105),
        sw(20, 2, -2), // crosses a page boundary
        lw(16, 2, -2),
    ]);
    expect(
        &vm,
        &[
            (10, 0x0a09_0807_0605_0403),
            (11, 0x0403_0201),
            (12, 0x0807),
            (13, 0x0908_0706),
            (14, 0x000f),
            (15, 0x1c1b_1a19_1817_1615),
            (16, 0x5566_7788),
        ],
    );
    assert_eq!(vm.r64(DATA + 0x100), 0x6677_8800_0000_0000);
    assert_eq!(vm.r64(DATA + 0x108), 0x0000_0011_2233_4455);
    assert_eq!(vm.r64(DATA + 0xff8), 0x7788_1514_1312_1110);
    assert_eq!(vm.r64(DATA + 0x1000), 0x1f1e_1d1c_1b1a_5566);
}

// ---------------------------------------------------------------------------------------------
// A extension
// ---------------------------------------------------------------------------------------------

#[test]
fn lr_sc_success_then_failure() {
    let mut vm = Vm::new();
    vm.w64(DATA, 42);
    vm.set_x(1, DATA);
    vm.set_x(6, 100);
    vm.set_x(9, 200);
    vm.set_x(8, 0x55);
    vm.exec(&[lr_d(5, 1), sc_d(7, 1, 6), sc_d(8, 1, 9)]);
    expect(&vm, &[(5, 42), (7, 0), (8, 1)]);
    assert_eq!(vm.r64(DATA), 100);
}

#[test]
fn sc_without_reservation_fails() {
    let mut vm = Vm::new();
    vm.w64(DATA, 42);
    vm.w64(DATA + 8, 43);
    vm.set_x(1, DATA);
    vm.set_x(2, DATA + 8);
    vm.set_x(6, 100);
    vm.exec(&[sc_d(7, 1, 6), sc_w(8, 2, 6)]);
    expect(&vm, &[(7, 1), (8, 1)]);
    assert_eq!(vm.r64(DATA), 42);
    assert_eq!(vm.r64(DATA + 8), 43);
}

#[test]
fn sc_to_other_address_fails_and_clears_reservation() {
    let mut vm = Vm::new();
    vm.w64(DATA, 42);
    vm.w64(DATA + 8, 43);
    vm.set_x(1, DATA);
    vm.set_x(2, DATA + 8);
    vm.set_x(6, 100);
    vm.exec(&[lr_d(5, 1), sc_d(7, 2, 6), sc_d(8, 1, 6)]);
    // An SC to another address fails; any SC invalidates the reservation.
    expect(&vm, &[(5, 42), (7, 1), (8, 1)]);
    assert_eq!(vm.r64(DATA), 42);
    assert_eq!(vm.r64(DATA + 8), 43);
}

#[test]
fn lr_sc_word_sign_extends() {
    let mut vm = Vm::new();
    vm.w32(DATA, 0x8000_0001);
    vm.w32(DATA + 4, 0xaaaa_aaaa);
    vm.set_x(1, DATA);
    vm.set_x(6, 0x1234_5678_9abc_def0);
    vm.exec(&[lr_w(5, 1), sc_w(7, 1, 6)]);
    expect(&vm, &[(5, 0xffff_ffff_8000_0001), (7, 0)]);
    assert_eq!(vm.r32(DATA), 0x9abc_def0);
    assert_eq!(vm.r32(DATA + 4), 0xaaaa_aaaa);
}

#[test]
fn amo_results() {
    let mut vm = Vm::new();
    for off in [0x00, 0x08, 0x10, 0x18] {
        vm.w64(DATA + off, M);
    }
    for off in [0x20, 0x28, 0x30, 0x38] {
        vm.w32(DATA + off, 0x8000_0000);
        vm.w32(DATA + off + 4, 0xaaaa_aaaa);
    }
    vm.w64(DATA + 0x40, 0x1234);
    vm.w32(DATA + 0x48, 0xffff_ffff);
    vm.w32(DATA + 0x4c, 0x5555_5555);
    vm.w64(DATA + 0x50, 0xf0f0);
    vm.w64(DATA + 0x58, 0xf0f0);
    vm.w64(DATA + 0x60, 0xf0f0);
    vm.w32(DATA + 0x68, 0x9000_0000);
    vm.w32(DATA + 0x6c, 0x7777_7777);
    vm.w64(DATA + 0x70, 10);
    vm.set_x(1, DATA);
    vm.set_x(2, 1);
    vm.set_x(3, 0x7fff_ffff);
    vm.set_x(4, 0xffff_ffff_0000_0001);
    vm.set_x(6, 0x10);
    vm.set_x(7, 0xff);
    vm.set_x(8, 0x1122_3344_5566_7788);
    vm.set_x(9, 5);
    let at = |off: i32| addi(5, 1, off);
    vm.exec(&[
        at(0x00),
        amo(AMO_MIN, 3, 10, 5, 2),
        at(0x08),
        amo(AMO_MINU, 3, 11, 5, 2),
        at(0x10),
        amo(AMO_MAX, 3, 12, 5, 2),
        at(0x18),
        amo(AMO_MAXU, 3, 13, 5, 2),
        at(0x20),
        amo(AMO_MIN, 2, 14, 5, 3),
        at(0x28),
        amo(AMO_MINU, 2, 15, 5, 3),
        at(0x30),
        amo(AMO_MAX, 2, 16, 5, 4),
        at(0x38),
        amo(AMO_MAXU, 2, 17, 5, 3),
        at(0x40),
        amo(AMO_ADD, 3, 18, 5, 6),
        at(0x48),
        amo(AMO_ADD, 2, 19, 5, 2),
        at(0x50),
        amo(AMO_XOR, 3, 20, 5, 7),
        at(0x58),
        amo(AMO_AND, 3, 21, 5, 7),
        at(0x60),
        amo(AMO_OR, 3, 22, 5, 7),
        at(0x68),
        amo(AMO_SWAP, 2, 23, 5, 8),
        at(0x70),
        amo(AMO_ADD, 3, 9, 5, 9), // rd == rs2
    ]);
    expect(
        &vm,
        &[
            (10, M),
            (11, M),
            (12, M),
            (13, M),
            (14, 0xffff_ffff_8000_0000), // W forms sign-extend the old value
            (15, 0xffff_ffff_8000_0000),
            (16, 0xffff_ffff_8000_0000),
            (17, 0xffff_ffff_8000_0000),
            (18, 0x1234),
            (19, M),
            (20, 0xf0f0),
            (21, 0xf0f0),
            (22, 0xf0f0),
            (23, 0xffff_ffff_9000_0000),
            (9, 10),
        ],
    );
    assert_eq!(vm.r64(DATA), M, "AMOMIN.D(-1, 1) keeps -1");
    assert_eq!(vm.r64(DATA + 0x08), 1, "AMOMINU.D(2^64-1, 1)");
    assert_eq!(vm.r64(DATA + 0x10), 1, "AMOMAX.D(-1, 1)");
    assert_eq!(vm.r64(DATA + 0x18), M, "AMOMAXU.D(2^64-1, 1)");
    assert_eq!(
        vm.r64(DATA + 0x20),
        0xaaaa_aaaa_8000_0000,
        "AMOMIN.W signed"
    );
    assert_eq!(vm.r64(DATA + 0x28), 0xaaaa_aaaa_7fff_ffff, "AMOMINU.W");
    assert_eq!(
        vm.r64(DATA + 0x30),
        0xaaaa_aaaa_0000_0001,
        "AMOMAX.W uses rs2[31:0]"
    );
    assert_eq!(vm.r64(DATA + 0x38), 0xaaaa_aaaa_8000_0000, "AMOMAXU.W");
    assert_eq!(vm.r64(DATA + 0x40), 0x1244);
    assert_eq!(
        vm.r64(DATA + 0x48),
        0x5555_5555_0000_0000,
        "AMOADD.W wraps in 32 bits"
    );
    assert_eq!(vm.r64(DATA + 0x50), 0xf00f);
    assert_eq!(vm.r64(DATA + 0x58), 0xf0);
    assert_eq!(vm.r64(DATA + 0x60), 0xf0ff);
    assert_eq!(vm.r64(DATA + 0x68), 0x7777_7777_5566_7788);
    assert_eq!(vm.r64(DATA + 0x70), 15);
}

#[test]
fn misaligned_amo_and_lr_trap() {
    // This hart raises address-misaligned (rather than access-fault) for misaligned atomics,
    // one of the two behaviours the A chapter allows.
    let mut vm = Vm::new();
    vm.set_x(1, DATA + 4);
    let t = vm.exec_trap(&[amo(AMO_ADD, 3, 5, 1, 0)]);
    assert_eq!(
        t,
        Trap {
            cause: cause::STORE_MISALIGNED,
            epc: CODE,
            tval: DATA + 4
        }
    );

    let mut vm = Vm::new();
    vm.set_x(1, DATA + 2);
    let t = vm.exec_trap(&[lr_w(5, 1)]);
    assert_eq!(
        t,
        Trap {
            cause: cause::LOAD_MISALIGNED,
            epc: CODE,
            tval: DATA + 2
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Zicsr and CSR access rules
// ---------------------------------------------------------------------------------------------

#[track_caller]
fn expect_illegal(body_before: &[u32], bad: u32) {
    let mut vm = Vm::new();
    vm.set_x(5, 0x1234);
    let mut body = body_before.to_vec();
    body.push(bad);
    let t = vm.exec_trap(&body);
    assert_eq!(
        t,
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: CODE + 4 * body_before.len() as u64,
            tval: bad as u64
        },
        "{bad:#010x}"
    );
}

#[test]
fn write_to_read_only_csr_is_illegal() {
    expect_illegal(&[], csrrw(0, CYCLE, 5));
    expect_illegal(&[nop()], csrrw(6, CYCLE, 0)); // CSRRW always writes, even from x0
    expect_illegal(&[], csrrw(0, MVENDORID, 0));
    expect_illegal(&[], csrrs(6, CYCLE, 5));
    expect_illegal(&[], csrrs(6, MHARTID, 7)); // rs1 != x0 is a write even if x7 = 0
    expect_illegal(&[], csrrc(6, INSTRET, 5));
    expect_illegal(&[], csrrsi(6, MVENDORID, 1));
    expect_illegal(&[], csrrwi(0, TIME, 0));
}

#[test]
fn read_only_csr_reads_are_fine() {
    let vm = run(
        &[(6, 7), (7, 7), (8, 7), (9, 7), (10, 7)],
        &[
            csrrs(6, MVENDORID, 0),
            csrrsi(7, MHARTID, 0),
            csrrc(8, MVENDORID, 0),
            csrrci(9, 0xf12, 0),
            csrrs(10, CYCLE, 0),
            csrrs(11, INSTRET, 0),
        ],
    );
    expect(&vm, &[(6, 0), (7, 0), (8, 0), (9, 0)]);
    assert_ne!(vm.x(11), 0);
}

#[test]
fn unknown_csrs_are_illegal() {
    expect_illegal(&[], csrr(6, 0x7c1)); // custom M range; 0x7c0 is mpdisctl (provisional)
    expect_illegal(&[], csrr(6, 0x3a1)); // pmpcfg1 does not exist on RV64
    expect_illegal(&[], csrw(0x5ff, 5));
    expect_illegal(&[], csrr(6, 0x004));
}

#[test]
fn csr_read_modify_write() {
    let vm = run(
        &[(5, 0xff00), (6, 0x0ff0), (7, 0x00f0)],
        &[
            csrrw(10, MSCRATCH, 5), // old 0
            csrrs(11, MSCRATCH, 6), // 0xff00 | 0x0ff0
            csrrc(12, MSCRATCH, 7), // & !0xf0
            csrrwi(13, MSCRATCH, 31),
            csrrsi(14, MSCRATCH, 0x20 - 1),
            csrrci(15, MSCRATCH, 1),
            csrr(16, MSCRATCH),
            csrrw(0, MSCRATCH, 5), // rd = x0: no read, still writes
            csrr(17, MSCRATCH),
        ],
    );
    expect(
        &vm,
        &[
            (10, 0),
            (11, 0xff00),
            (12, 0xfff0),
            (13, 0xff00),
            (14, 31),
            (15, 31),
            (16, 30),
            (17, 0xff00),
        ],
    );
}

#[test]
fn u_mode_cannot_access_machine_or_supervisor_csrs() {
    for bad in [
        csrr(5, MSTATUS),
        csrr(5, SSTATUS),
        csrr(5, MSCRATCH),
        csrw(SSCRATCH, 0),
        csrr(5, MHARTID),
    ] {
        let mut vm = Vm::new();
        let u = CODE + 0x100;
        let enter = vm.enter_mode(PrivilegeMode::User, u);
        vm.code(&enter);
        vm.code_at(u, &[bad]);
        vm.set_x(5, 0x5555);
        vm.run_to_wfi();
        assert_eq!(vm.hart.pc(), TRAP + 4);
        assert_eq!(
            vm.mtrap(),
            Trap {
                cause: cause::ILLEGAL_INSN,
                epc: u,
                tval: bad as u64
            },
            "{bad:#010x}"
        );
        assert_eq!(vm.csr(MSTATUS) & MS_MPP, 0, "trap came from U");
        assert_eq!(vm.x(5), 0x5555, "rd must not be written");
    }
}

#[test]
fn s_mode_csr_access() {
    // S-mode may use sstatus/sscratch but not mstatus.
    let mut vm = Vm::new();
    let s = CODE + 0x100;
    let enter = vm.enter_mode(PrivilegeMode::Supervisor, s);
    vm.code(&enter);
    vm.set_x(6, 0x77);
    vm.code_at(
        s,
        &[
            csrw(SSCRATCH, 6),
            csrr(7, SSCRATCH),
            csrr(8, SSTATUS),
            csrr(9, MSTATUS),
        ],
    );
    vm.run_to_wfi();
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: s + 12,
            tval: csrr(9, MSTATUS) as u64
        }
    );
    assert_eq!(vm.csr(MSTATUS) & MS_MPP, 1 << 11, "trap came from S");
    assert_eq!(vm.x(7), 0x77);
}

#[test]
fn counter_enables_gate_lower_modes() {
    // mcounteren.CY = 1, scounteren.CY = 1: U may read cycle, but not instret (IR clear in
    // scounteren).
    let mut vm = Vm::new();
    let u = CODE + 0x100;
    vm.set_x(20, 0b101);
    vm.set_x(21, 0b001);
    let mut code = vec![csrw(MCOUNTEREN, 20), csrw(SCOUNTEREN, 21)];
    code.extend(vm.enter_mode(PrivilegeMode::User, u));
    vm.code(&code);
    vm.code_at(u, &[csrr(5, CYCLE), csrr(6, INSTRET)]);
    vm.run_to_wfi();
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: cause::ILLEGAL_INSN,
            epc: u + 4,
            tval: csrr(6, INSTRET) as u64
        }
    );
    assert_ne!(vm.x(5), 0);
}

#[test]
fn fp_csrs_alias() {
    let mut vm = Vm::new();
    vm.set_x(27, 1 << 13); // FS = Initial
    vm.set_x(5, 0xff);
    vm.set_x(6, 0x3);
    vm.set_x(7, 0x1ff);
    vm.exec(&[
        csrrs(0, MSTATUS, 27),
        csrw(FCSR, 5),
        csrr(10, FFLAGS),
        csrr(11, FRM),
        csrw(FRM, 6),
        csrr(12, FCSR),
        csrw(FFLAGS, 0),
        csrr(13, FCSR),
        csrrsi(14, FFLAGS, 0b10100),
        csrr(15, FCSR),
        csrw(FCSR, 7), // bits 31:8 are reserved: ignored on write, read as zero
        csrr(16, FCSR),
        csrrwi(17, FRM, 1),
        csrr(18, FCSR),
    ]);
    expect(
        &vm,
        &[
            (10, 0x1f),
            (11, 7),
            (12, 0x7f),
            (13, 0x60),
            (14, 0),
            (15, 0x74),
            (16, 0xff),
            (17, 7),
            (18, 0x3f),
        ],
    );
}

#[test]
fn fp_state_off_makes_fp_illegal() {
    // mstatus.FS resets to Off here (nothing set it): every FP instruction and FP CSR traps.
    for bad in [
        fadd(FMT_D, 1, 2, 3, RNE),
        fmv_f_x(FMT_D, 1, 5),
        fmv_x_f(FMT_D, 5, 1),
        fld(1, 5, 0),
        fsw(1, 5, 0),
        fmadd(FMT_S, 1, 2, 3, 4, RNE),
        csrr(6, FCSR),
        csrr(6, FFLAGS),
        csrrwi(0, FRM, 1),
    ] {
        let mut vm = Vm::new();
        vm.set_x(5, DATA);
        assert_eq!(vm.csr(MSTATUS) & MS_FS, 0);
        let t = vm.exec_trap(&[bad]);
        assert_eq!(
            t,
            Trap {
                cause: cause::ILLEGAL_INSN,
                epc: CODE,
                tval: bad as u64
            },
            "{bad:#010x}"
        );
    }
}

#[test]
fn misa_value() {
    // RV64 (MXL = 2) with A, C, D, F, H, I, M, S, U.
    let want = (2u64 << 62)
        | (1 << 0)
        | (1 << 2)
        | (1 << 3)
        | (1 << 5)
        | (1 << 7)
        | (1 << 8)
        | (1 << 12)
        | (1 << 18)
        | (1 << 20);
    assert_eq!(want, 0x8000_0000_0014_11ad);
    let vm = run(&[], &[csrr(5, MISA)]);
    assert_eq!(vm.x(5), want);
    assert_eq!(vm.csr(MISA), want);
}

#[test]
fn mstatus_sd_follows_fs_dirty() {
    let mut vm = Vm::new();
    vm.set_x(27, 1 << 13); // FS = Initial
    vm.set_x(5, 0x4000_0000_0000_0000);
    vm.exec(&[
        csrrs(0, MSTATUS, 27),
        csrr(10, MSTATUS),
        csrr(11, SSTATUS),
        fmv_f_x(FMT_D, 1, 5),
        csrr(12, MSTATUS),
        csrr(13, SSTATUS),
    ]);
    assert_eq!(vm.x(10) & (MS_FS | MS_SD), 1 << 13);
    assert_eq!(vm.x(11) & (MS_FS | MS_SD), 1 << 13);
    assert_eq!(
        vm.x(12) & (MS_FS | MS_SD),
        MS_FS | MS_SD,
        "an FP register write makes FS Dirty"
    );
    assert_eq!(vm.x(13) & (MS_FS | MS_SD), MS_FS | MS_SD, "sstatus.SD too");
    // UXL and SXL are 2 (64-bit).
    assert_eq!((vm.x(10) >> 32) & 0xf, 0b1010);
}

#[test]
fn mstatus_warl_fields() {
    let mut vm = Vm::new();
    vm.set_x(5, 2 << 11); // MPP = 2 is reserved
    vm.set_x(6, M);
    vm.set_x(7, 0x8000_0001);
    vm.exec(&[
        csrw(MSTATUS, 0),
        csrrs(0, MSTATUS, 5),
        csrr(10, MSTATUS),
        csrw(MSTATUS, 0),
        csrw(SSTATUS, 6), // only the sstatus subset may change
        csrr(11, MSTATUS),
        csrw(MEPC, 7), // mepc[0] is always zero
        csrr(12, MEPC),
    ]);
    assert_ne!((vm.x(10) >> 11) & 3, 2, "MPP never holds 2");
    let s = vm.x(11);
    assert_eq!(
        s & (MS_MIE | MS_MPIE | MS_MPP | MS_MPRV),
        0,
        "sstatus writes must not touch M fields: {s:#x}"
    );
    assert_eq!(
        s & (MS_SIE | MS_SPIE | MS_SPP | MS_SUM | MS_MXR),
        MS_SIE | MS_SPIE | MS_SPP | MS_SUM | MS_MXR
    );
    assert_eq!(vm.x(12), 0x8000_0000);
}

#[test]
fn minstret_counts_retired_instructions() {
    let vm = run(
        &[],
        &[
            csrr(5, MINSTRET),
            nop(),
            nop(),
            nop(),
            csrr(6, MINSTRET),
            csrr(7, INSTRET),
            jal(0, 4),
            csrr(8, MINSTRET),
        ],
    );
    // A CSR read returns the value before the reading instruction retires.
    assert_eq!(vm.x(6) - vm.x(5), 4);
    assert_eq!(vm.x(7) - vm.x(5), 5);
    assert_eq!(vm.x(8) - vm.x(5), 7);
    // Boot stub (2) + 8 instructions + the final wfi.
    assert_eq!(vm.hart.instret(), 11);
    assert_eq!(vm.x(5), 2);
}

#[test]
fn minstret_write_replaces_increment() {
    let vm = run(
        &[(5, 1000)],
        &[
            csrw(MINSTRET, 5),
            csrr(6, MINSTRET),
            nop(),
            csrr(7, MINSTRET),
            csrr(8, INSTRET),
        ],
    );
    assert_eq!(
        vm.x(6),
        1000,
        "the writing instruction does not also increment minstret"
    );
    assert_eq!(vm.x(7), 1002);
    assert_eq!(vm.x(8), 1003);
}

/// Smpdis (draft) with Zicsr's rule for CSRs that instructions modify as a side effect: a
/// write to `spdiscounter` is done instead of the writing instruction's increment (SEL = 0
/// counts every decoded instruction, the CSR write included).
#[test]
fn spdiscounter_write_replaces_increment() {
    let vm = run(
        &[(5, 1000), (6, 1 << 62)],
        &[
            csrw(0x7c0, 6), // mpdisctl: M = 1, SEL = 0 (all)
            csrw(0x5c3, 5), // spdiscounter = 1000
            csrr(7, 0x5c3),
            nop(),
            csrr(8, 0x5c3),
        ],
    );
    assert_eq!(vm.x(7), 1000, "the writing instruction does not also count");
    assert_eq!(vm.x(8), 1002);
}

/// Smpdis (draft), "PDIS Address2": a sampled load executed with V = 1 records in pdisadr2
/// the guest physical address when `vspdisctl.PA` = 1 (hardwired 0 here), "otherwise, if
/// `mpdisctl.PA` = 1, ... the data physical address" (hgatp Bare: the address itself).
#[test]
fn pdis_pa_records_the_physical_address_in_vs() {
    let mut vm = Vm::new();
    vm.set_x(9, DATA);
    let setup = set_csrs(
        &mut vm,
        &[
            (0x7c0, (1 << 35) | 1), // mpdisctl: PA, SEL = loads
            (0x6c0, (1 << 61) | 1), // vspdisctl: S (VS counts)
            (0x5c3, 0xffff_ffff),   // spdiscounter: wraps on the first load
            (0x150, 0x60),          // siselect: the sample record
        ],
    );
    let out = vm.run_in_vmode(&setup, PrivilegeMode::Supervisor, &[ld(10, 9, 8)]);
    assert_eq!(out, Outcome::Clean);
    assert_eq!(vm.hart.csr(0x156), Some(DATA + 8), "pdisadr1");
    assert_eq!(vm.hart.csr(0x157), Some(DATA + 8), "pdisadr2");
}

#[test]
fn mcountinhibit_ir_freezes_minstret() {
    let vm = run(
        &[(6, 4)],
        &[
            csrw(0x320, 6),
            csrr(10, MINSTRET),
            nop(),
            nop(),
            csrr(11, MINSTRET),
            csrr(12, INSTRET),
            csrr(13, 0x320),
        ],
    );
    assert_eq!(
        vm.x(11),
        vm.x(10),
        "minstret does not count while mcountinhibit.IR = 1"
    );
    assert_eq!(vm.x(12), vm.x(10));
    assert_eq!(vm.x(13), 4);
}

#[test]
fn mcountinhibit_cy_does_not_disturb_minstret() {
    // Inhibiting only the cycle counter must leave instruction counting alone: the
    // CSR write itself retires like any other instruction.
    let vm = run(
        &[(6, 1)],
        &[
            csrr(10, MINSTRET),
            csrw(0x320, 6),
            csrr(11, MINSTRET),
            nop(),
            csrr(12, MINSTRET),
        ],
    );
    assert_eq!(vm.x(11) - vm.x(10), 2, "csrr + csrw mcountinhibit retired");
    assert_eq!(vm.x(12) - vm.x(10), 4);
}

#[test]
fn mcountinhibit_cy_freezes_mcycle() {
    let vm = run(
        &[(6, 1)],
        &[
            csrw(0x320, 6),
            csrr(10, MCYCLE),
            nop(),
            nop(),
            nop(),
            csrr(11, MCYCLE),
            csrr(12, CYCLE),
        ],
    );
    assert_eq!(vm.x(11), vm.x(10));
    assert_eq!(vm.x(12), vm.x(10));
}

#[test]
fn trapping_instructions_do_not_retire() {
    // ECALL raises an exception and does not retire, so minstret does not count it.
    let mut vm = Vm::new();
    vm.put32(TRAP, &[csrr(11, MINSTRET), wfi()]);
    vm.code(&[csrr(10, MINSTRET), ecall()]);
    vm.run_to_wfi();
    assert_eq!(vm.csr(MCAUSE), cause::ECALL_M);
    assert_eq!(vm.x(11) - vm.x(10), 1);
}

#[test]
fn satp_unsupported_mode_write_is_ignored() {
    let sv39 = (8u64 << 60) | 0x80020;
    let vm = run(
        &[
            (5, sv39),
            (6, (1u64 << 60) | 0x1234),
            (7, (15u64 << 60) | 0x5678),
        ],
        &[
            csrw(0x180, 5),
            csrw(0x180, 6),
            csrr(10, 0x180),
            csrw(0x180, 7),
            csrr(11, 0x180),
            csrw(0x180, 0),
            csrr(12, 0x180),
        ],
    );
    assert_eq!(
        vm.x(10),
        sv39,
        "MODE 1 is reserved: the whole write has no effect"
    );
    assert_eq!(vm.x(11), sv39);
    assert_eq!(vm.x(12), 0);
}

#[test]
fn fence_i_makes_stores_to_code_visible() {
    let mut vm = Vm::new();
    let target = CODE + 0x100;
    vm.put32(target, &[nop(), jalr(0, 1, 0)]);
    vm.set_x(5, target);
    vm.set_x(6, addi(10, 0, 42) as u64);
    vm.exec(&[
        jalr(1, 5, 0), // call the target once (a nop) so it is fetched and decoded
        addi(11, 10, 0),
        sw(6, 5, 0), // patch it to `addi x10, x0, 42`
        fence_i(),
        jalr(1, 5, 0),
    ]);
    assert_eq!(vm.x(11), 0);
    assert_eq!(vm.x(10), 42);
}

#[test]
fn compressed_code_executes() {
    let mut vm = Vm::new();
    vm.set_x(2, DATA);
    vm.w32(DATA + 4, 0xdead_beef);
    let mut h: Vec<u16> = vec![
        c_addi4spn(8, 16), // x8 = DATA + 16
        c_li(9, -5),
        c_sd(9, 8, 8),  // [DATA + 24] = -5
        c_ldsp(10, 24), // x10 = -5
        c_addiw(10, 1), // x10 = -4
        c_lui(11, -4096),
        c_srli(11, 60),  // x11 = 0xf
        c_srai(9, 1),    // x9 = -3
        c_andi(9, -2),   // x9 = -4
        c_mv(12, 10),    // x12 = -4
        c_add(12, 11),   // x12 = 11
        c_sub(12, 9),    // x12 = 15
        c_addw(12, 12),  // x12 = 30
        c_slli(12, 1),   // x12 = 60
        c_addi16sp(-16), // sp = DATA - 16
        c_swsp(12, 20),  // [DATA + 4] = 60 (32 bits)
        c_lwsp(13, 20),  // x13 = 60
        c_beqz(14, 4),   // x14 = 0: taken, skip one halfword
        c_li(14, 1),
        c_bnez(13, 4), // taken
        c_li(15, 1),
        c_j(4),
        c_li(15, 2),
        c_jalr(16), // x16 = address of the next-but-one halfword (set below)
        c_li(15, 3),
    ];
    let jalr_at = CODE + 2 * (h.len() as u64 - 2);
    vm.set_x(16, jalr_at + 4);
    h.push(c_nop());
    vm.put16(CODE, &h);
    let end = CODE + 2 * h.len() as u64;
    vm.put32(end, &[wfi()]);
    vm.run_clean(end);
    expect(
        &vm,
        &[
            (2, DATA - 16),
            (8, DATA + 16),
            (9, -4i64 as u64),
            (10, -4i64 as u64),
            (11, 0xf),
            (12, 60),
            (13, 60),
            (14, 0),
            (15, 0),
            (1, jalr_at + 2),
        ],
    );
    assert_eq!(vm.r64(DATA + 24), -5i64 as u64);
    assert_eq!(vm.r32(DATA + 4), 60);
}

#[test]
fn instruction_straddling_a_page_boundary() {
    // A 32-bit instruction at page offset 0xffe (legal with IALIGN = 16).
    let mut vm = Vm::new();
    let at = CODE + 0xffe;
    vm.set_x(5, at);
    vm.code(&[jalr(0, 5, 0)]);
    vm.put16(at, &[addi(10, 0, 7) as u16, (addi(10, 0, 7) >> 16) as u16]);
    let end = at + 4;
    vm.put32(end, &[wfi()]);
    vm.run_clean(end);
    assert_eq!(vm.x(10), 7);
}

#[test]
fn mmio_exits() {
    let dev = 0x1000_0000;
    let mut vm = Vm::with_config(HartConfig {
        mmio: vec![MmioRange {
            base: dev,
            size: 0x1000,
        }],
        ..HartConfig::default()
    });
    vm.set_x(5, dev);
    vm.set_x(6, 0x1122_3344_5566_7788);
    let end = vm.code(&[lb(10, 5, 0), sw(6, 5, 4), lw(11, 5, 2)]);
    assert_eq!(
        vm.hart.run(1000),
        VcpuExit::Mmio(MmioAccess {
            addr: dev,
            size: 1,
            write: None
        })
    );
    vm.hart.complete_mmio_read(0x80);
    assert_eq!(
        vm.hart.run(1000),
        VcpuExit::Mmio(MmioAccess {
            addr: dev + 4,
            size: 4,
            write: Some(0x5566_7788)
        })
    );
    // A misaligned device access is an access fault on this hart.
    vm.run_to_wfi();
    assert_ne!(vm.hart.pc(), end + 4);
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: cause::LOAD_ACCESS,
            epc: CODE + 8,
            tval: dev + 2
        }
    );
    assert_eq!(
        vm.x(10),
        0xffff_ffff_ffff_ff80,
        "the hart sign-extends device data"
    );
}
