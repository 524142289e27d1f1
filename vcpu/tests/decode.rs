// Binary literals are grouped by instruction field (funct3, registers, opcode), not by nibble.
#![allow(clippy::unusual_byte_groupings)]
//! Decoder tests: every RV64C form, reserved 16- and 32-bit encodings, and immediate
//! extremes. Expected values are derived from the RISC-V unprivileged specification's
//! instruction listings ("RVC Instruction Set Listings", "RV32/64G Instruction Set Listings").

mod common;

use common::*;
use vcpu::decode::{decode, decode_32, decode_compressed, Insn, Op, X0_SINK};

/// Decode a halfword, checking the generic properties of every compressed decode.
fn c(h: u16) -> Insn {
    let i = decode_compressed(h);
    assert_eq!(i.len, 2, "{h:#06x}: length");
    assert_eq!(i.raw, h as u32, "{h:#06x}: raw bits");
    // `decode` must ignore whatever follows a 16-bit instruction.
    assert_eq!(
        decode(0xffff_0000 | h as u32),
        i,
        "{h:#06x}: decode() with a following halfword"
    );
    assert_eq!(decode(h as u32), i);
    i
}

fn d32(b: u32) -> Insn {
    let i = decode_32(b);
    assert_eq!(i.len, 4, "{b:#010x}: length");
    assert_eq!(i.raw, b, "{b:#010x}: raw bits");
    assert_eq!(decode(b), i);
    i
}

#[track_caller]
fn chk_i(i: Insn, op: Op, rd: u8, rs1: u8, imm: i32) {
    assert_eq!((i.op, i.rd, i.rs1, i.imm), (op, rd, rs1, imm), "{i:?}");
}
#[track_caller]
fn chk_s(i: Insn, op: Op, rs1: u8, rs2: u8, imm: i32) {
    assert_eq!((i.op, i.rs1, i.rs2, i.imm), (op, rs1, rs2, imm), "{i:?}");
}
#[track_caller]
fn chk_r(i: Insn, op: Op, rd: u8, rs1: u8, rs2: u8) {
    assert_eq!((i.op, i.rd, i.rs1, i.rs2), (op, rd, rs1, rs2), "{i:?}");
}
#[track_caller]
fn chk_ill16(h: u16) {
    let i = c(h);
    assert_eq!(
        i.op,
        Op::Illegal,
        "{h:#06x} must be reserved/illegal, got {i:?}"
    );
}
#[track_caller]
fn chk_ill32(b: u32) {
    let i = d32(b);
    assert_eq!(
        i.op,
        Op::Illegal,
        "{b:#010x} must be reserved/illegal, got {i:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The encoder itself, against a few encodings worked out by hand from the listings.
// ---------------------------------------------------------------------------------------------

#[test]
fn encoder_spot_checks() {
    // c.li a0, 1 = 010 0 01010 00001 01
    assert_eq!(c_li(10, 1), 0b010_0_01010_00001_01);
    // c.mv a0, a1 = 100 0 01010 01011 10
    assert_eq!(c_mv(10, 11), 0b100_0_01010_01011_10);
    // c.jr ra = 100 0 00001 00000 10
    assert_eq!(c_jr(1), 0b100_0_00001_00000_10);
    assert_eq!(c_ebreak(), 0b100_1_00000_00000_10);
    assert_eq!(c_nop(), 0x0001);
    // c.addi4spn x8, sp, 4: nzuimm[2] is bit 6.
    assert_eq!(c_addi4spn(8, 4), 0b000_00000010_000_00);
    // addi x1, x2, -1
    assert_eq!(addi(1, 2, -1), 0xfff1_0093);
    assert_eq!(ecall(), 0x0000_0073);
    assert_eq!(mret(), 0x3020_0073);
    assert_eq!(sret(), 0x1020_0073);
    assert_eq!(wfi(), 0x1050_0073);
    // jal x0, -4: imm[20]=1, imm[10:1]=0x3fe, imm[11]=1, imm[19:12]=0xff
    assert_eq!(jal(0, -4), 0xffdf_f06f);
}

// ---------------------------------------------------------------------------------------------
// Quadrant 0
// ---------------------------------------------------------------------------------------------

#[test]
fn c_addi4spn_forms() {
    chk_i(c(c_addi4spn(8, 4)), Op::Addi, 8, 2, 4);
    chk_i(c(c_addi4spn(15, 1020)), Op::Addi, 15, 2, 1020);
    chk_i(c(c_addi4spn(9, 8)), Op::Addi, 9, 2, 8);
    chk_i(c(c_addi4spn(10, 16)), Op::Addi, 10, 2, 16);
    chk_i(c(c_addi4spn(11, 64)), Op::Addi, 11, 2, 64);
    chk_i(c(c_addi4spn(12, 512)), Op::Addi, 12, 2, 512);
    // Hand-assembled: c.addi4spn x8, 1020 = 000 11111111 000 00
    chk_i(c(0b000_11111111_000_00), Op::Addi, 8, 2, 1020);
}

#[test]
fn c_fld_lw_ld_forms() {
    let i = c(c_fld(8, 15, 248));
    chk_i(i, Op::Fld, 8, 15, 248);
    assert_eq!(i.fmt, vcpu::decode::FMT_D);
    chk_i(c(c_fld(15, 8, 0)), Op::Fld, 15, 8, 0);

    chk_i(c(c_lw(8, 15, 124)), Op::Lw, 8, 15, 124);
    chk_i(c(c_lw(9, 10, 4)), Op::Lw, 9, 10, 4);
    chk_i(c(c_lw(9, 10, 64)), Op::Lw, 9, 10, 64);
    chk_i(c(c_lw(9, 10, 32)), Op::Lw, 9, 10, 32);
    chk_i(c(c_lw(11, 12, 0)), Op::Lw, 11, 12, 0);

    chk_i(c(c_ld(15, 8, 248)), Op::Ld, 15, 8, 248);
    chk_i(c(c_ld(10, 11, 8)), Op::Ld, 10, 11, 8);
    chk_i(c(c_ld(10, 11, 128)), Op::Ld, 10, 11, 128);
    chk_i(c(c_ld(10, 11, 64)), Op::Ld, 10, 11, 64);
    // Hand-assembled: c.ld x8, 248(x9) = 011 111 001 11 000 00
    chk_i(c(0b011_111_001_11_000_00), Op::Ld, 8, 9, 248);
}

#[test]
fn c_fsd_sw_sd_forms() {
    let i = c(c_fsd(9, 14, 248));
    chk_s(i, Op::Fsd, 14, 9, 248);
    assert_eq!(i.fmt, vcpu::decode::FMT_D);
    chk_s(c(c_sw(15, 8, 124)), Op::Sw, 8, 15, 124);
    chk_s(c(c_sw(8, 15, 64)), Op::Sw, 15, 8, 64);
    chk_s(c(c_sw(8, 15, 4)), Op::Sw, 15, 8, 4);
    chk_s(c(c_sd(12, 13, 248)), Op::Sd, 13, 12, 248);
    chk_s(c(c_sd(12, 13, 0)), Op::Sd, 13, 12, 0);
    chk_s(c(c_sd(12, 13, 192)), Op::Sd, 13, 12, 192);
}

#[test]
fn quadrant0_reserved() {
    chk_ill16(0x0000); // all-zero halfword is defined illegal
    chk_ill16(c_addi4spn(9, 4) & !(0xff << 5)); // C.ADDI4SPN nzuimm = 0, rd' = x9
    chk_ill16(0b000_00000000_111_00);
    // funct3 = 100 is reserved in quadrant 0.
    chk_ill16(0x8000);
    chk_ill16(0x9ffc);
    chk_ill16(0b100_0_00000_00001_00);
}

// ---------------------------------------------------------------------------------------------
// Quadrant 1
// ---------------------------------------------------------------------------------------------

#[test]
fn c_nop_addi_addiw_li() {
    chk_i(c(c_nop()), Op::Addi, X0_SINK, 0, 0);
    chk_i(c(c_addi(1, 31)), Op::Addi, 1, 1, 31);
    chk_i(c(c_addi(1, -32)), Op::Addi, 1, 1, -32);
    chk_i(c(c_addi(31, -1)), Op::Addi, 31, 31, -1);
    chk_i(c(c_addi(2, 1)), Op::Addi, 2, 2, 1);
    // C.ADDI with rd = x0 and nonzero imm is a HINT: legal, no effect.
    chk_i(c(c_addi(0, 5)), Op::Addi, X0_SINK, 0, 5);

    chk_i(c(c_addiw(5, -32)), Op::Addiw, 5, 5, -32);
    chk_i(c(c_addiw(5, 31)), Op::Addiw, 5, 5, 31);
    chk_i(c(c_addiw(31, 0)), Op::Addiw, 31, 31, 0); // sext.w

    chk_i(c(c_li(10, -32)), Op::Addi, 10, 0, -32);
    chk_i(c(c_li(10, 31)), Op::Addi, 10, 0, 31);
    chk_i(c(0x4505), Op::Addi, 10, 0, 1); // c.li a0, 1
    chk_i(c(c_li(0, 3)), Op::Addi, X0_SINK, 0, 3); // HINT
}

#[test]
fn c_addi16sp_lui() {
    chk_i(c(c_addi16sp(-512)), Op::Addi, 2, 2, -512);
    chk_i(c(c_addi16sp(496)), Op::Addi, 2, 2, 496);
    chk_i(c(c_addi16sp(16)), Op::Addi, 2, 2, 16);
    chk_i(c(c_addi16sp(-16)), Op::Addi, 2, 2, -16);
    chk_i(c(c_addi16sp(32)), Op::Addi, 2, 2, 32);
    chk_i(c(c_addi16sp(64)), Op::Addi, 2, 2, 64);
    chk_i(c(c_addi16sp(128)), Op::Addi, 2, 2, 128);
    chk_i(c(c_addi16sp(256)), Op::Addi, 2, 2, 256);
    // Hand-assembled: c.addi16sp -512 = 011 1 00010 00000 01
    chk_i(c(0b011_1_00010_00000_01), Op::Addi, 2, 2, -512);

    chk_i(c(c_lui(1, 31 << 12)), Op::Lui, 1, 0, 0x1f000);
    chk_i(c(c_lui(1, -32 << 12)), Op::Lui, 1, 0, -131072);
    chk_i(c(c_lui(31, -4096)), Op::Lui, 31, 0, -4096);
    chk_i(c(c_lui(3, 4096)), Op::Lui, 3, 0, 4096);
    // Hand-assembled: c.lui x5, 0xfffe0 (nzimm[17] only) = 011 1 00101 00000 01
    chk_i(
        c(0b011_1_00101_00000_01),
        Op::Lui,
        5,
        0,
        0xfffe_0000u32 as i32,
    );
}

#[test]
fn c_shifts_andi() {
    chk_i(c(c_srli(8, 63)), Op::Srli, 8, 8, 63);
    chk_i(c(c_srli(9, 1)), Op::Srli, 9, 9, 1);
    chk_i(c(c_srli(9, 32)), Op::Srli, 9, 9, 32);
    chk_i(c(c_srai(15, 32)), Op::Srai, 15, 15, 32);
    chk_i(c(c_srai(15, 63)), Op::Srai, 15, 15, 63);
    chk_i(c(c_andi(9, -32)), Op::Andi, 9, 9, -32);
    chk_i(c(c_andi(9, 31)), Op::Andi, 9, 9, 31);
    chk_i(c(c_andi(10, -1)), Op::Andi, 10, 10, -1);
    chk_i(c(c_andi(10, 0)), Op::Andi, 10, 10, 0);
}

#[test]
fn c_register_arith() {
    chk_r(c(c_sub(8, 15)), Op::Sub, 8, 8, 15);
    chk_r(c(c_xor(9, 14)), Op::Xor, 9, 9, 14);
    chk_r(c(c_or(10, 13)), Op::Or, 10, 10, 13);
    chk_r(c(c_and(11, 12)), Op::And, 11, 11, 12);
    chk_r(c(c_subw(12, 11)), Op::Subw, 12, 12, 11);
    chk_r(c(c_addw(15, 8)), Op::Addw, 15, 15, 8);
}

#[test]
fn c_subw_space_reserved() {
    // bit 12 = 1, bits 11:10 = 11, funct2 = 10 or 11 are reserved.
    chk_ill16(c_arith(1, 2, 8, 8));
    chk_ill16(c_arith(1, 3, 8, 8));
    chk_ill16(c_arith(1, 2, 15, 15));
    chk_ill16(c_arith(1, 3, 11, 9));
}

#[test]
fn c_j_and_branches() {
    let j = |off| {
        let i = c(c_j(off));
        chk_i(i, Op::Jal, X0_SINK, i.rs1, off);
    };
    for off in [
        2046, -2048, -2, 2, 16, 32, 64, 128, 256, 512, 1024, 0x2aa, -0x556,
    ] {
        j(off);
    }
    // Hand-assembled: c.j -2048 = 101 1 0 00 0 0 0 000 0 01
    let i = c(0b101_1_0_00_0_0_0_000_0_01);
    assert_eq!((i.op, i.rd, i.imm), (Op::Jal, X0_SINK, -2048));

    for off in [254, -256, -2, 2, 8, 16, 32, 64, 128, 0xaa, -0x56] {
        chk_s(c(c_beqz(8, off)), Op::Beq, 8, 0, off);
        chk_s(c(c_bnez(15, off)), Op::Bne, 15, 0, off);
    }
    // Hand-assembled: c.beqz x9, -256 = 110 1 00 001 00 00 0 01
    chk_s(c(0b110_1_00_001_00_00_0_01), Op::Beq, 9, 0, -256);
}

#[test]
fn quadrant1_reserved() {
    chk_ill16(c_addiw(0, 5)); // C.ADDIW with rd = x0
    chk_ill16(c_addiw(0, 0));
    chk_ill16(0b011_0_00010_00000_01); // C.ADDI16SP with nzimm = 0
    chk_ill16(0b011_0_00101_00000_01); // C.LUI with nzimm = 0
    chk_ill16(0b011_0_00000_00000_01); // C.LUI x0 with nzimm = 0
}

// ---------------------------------------------------------------------------------------------
// Quadrant 2
// ---------------------------------------------------------------------------------------------

#[test]
fn c_slli_forms() {
    chk_i(c(c_slli(31, 63)), Op::Slli, 31, 31, 63);
    chk_i(c(c_slli(1, 1)), Op::Slli, 1, 1, 1);
    chk_i(c(c_slli(5, 32)), Op::Slli, 5, 5, 32);
    chk_i(c(c_slli(0, 3)), Op::Slli, X0_SINK, 0, 3); // HINT
}

#[test]
fn c_stack_loads() {
    let i = c(c_fldsp(0, 504));
    chk_i(i, Op::Fld, 0, 2, 504); // f0 is a valid destination
    assert_eq!(i.fmt, vcpu::decode::FMT_D);
    chk_i(c(c_fldsp(31, 8)), Op::Fld, 31, 2, 8);
    chk_i(c(c_fldsp(31, 64)), Op::Fld, 31, 2, 64);

    chk_i(c(c_lwsp(1, 252)), Op::Lw, 1, 2, 252);
    chk_i(c(c_lwsp(31, 4)), Op::Lw, 31, 2, 4);
    chk_i(c(c_lwsp(31, 32)), Op::Lw, 31, 2, 32);
    chk_i(c(c_lwsp(31, 64)), Op::Lw, 31, 2, 64);
    chk_i(c(c_lwsp(31, 0)), Op::Lw, 31, 2, 0);

    chk_i(c(c_ldsp(31, 504)), Op::Ld, 31, 2, 504);
    chk_i(c(c_ldsp(1, 8)), Op::Ld, 1, 2, 8);
    chk_i(c(c_ldsp(1, 32)), Op::Ld, 1, 2, 32);
    chk_i(c(c_ldsp(1, 64)), Op::Ld, 1, 2, 64);
    // Hand-assembled: c.ldsp x1, 504(sp) = 011 1 00001 11 111 10
    chk_i(c(0b011_1_00001_11_111_10), Op::Ld, 1, 2, 504);
}

#[test]
fn c_jr_mv_ebreak_jalr_add() {
    chk_i(c(c_jr(1)), Op::Jalr, X0_SINK, 1, 0);
    chk_i(c(0x8082), Op::Jalr, X0_SINK, 1, 0); // ret
    chk_i(c(c_jr(31)), Op::Jalr, X0_SINK, 31, 0);
    chk_r(c(c_mv(10, 11)), Op::Add, 10, 0, 11);
    chk_r(c(0x852e), Op::Add, 10, 0, 11);
    chk_r(c(c_mv(0, 11)), Op::Add, X0_SINK, 0, 11); // HINT
    assert_eq!(c(c_ebreak()).op, Op::Ebreak);
    assert_eq!(c(0x9002).op, Op::Ebreak);
    chk_i(c(c_jalr(5)), Op::Jalr, 1, 5, 0);
    chk_i(c(c_jalr(1)), Op::Jalr, 1, 1, 0);
    chk_r(c(c_add(10, 11)), Op::Add, 10, 10, 11);
    chk_r(c(c_add(31, 1)), Op::Add, 31, 31, 1);
}

#[test]
fn c_stack_stores() {
    chk_s(c(c_fsdsp(31, 504)), Op::Fsd, 2, 31, 504);
    chk_s(c(c_fsdsp(0, 8)), Op::Fsd, 2, 0, 8);
    assert_eq!(c(c_fsdsp(0, 8)).fmt, vcpu::decode::FMT_D);
    chk_s(c(c_swsp(31, 252)), Op::Sw, 2, 31, 252);
    chk_s(c(c_swsp(1, 4)), Op::Sw, 2, 1, 4);
    chk_s(c(c_swsp(1, 64)), Op::Sw, 2, 1, 64);
    chk_s(c(c_sdsp(1, 504)), Op::Sd, 2, 1, 504);
    chk_s(c(c_sdsp(1, 8)), Op::Sd, 2, 1, 8);
    chk_s(c(c_sdsp(1, 64)), Op::Sd, 2, 1, 64);
    // Hand-assembled: c.sdsp ra, 504(sp) = 111 111 111 00001 10
    chk_s(c(0b111_111_111_00001_10), Op::Sd, 2, 1, 504);
}

#[test]
fn quadrant2_reserved() {
    chk_ill16(c_lwsp(0, 0)); // C.LWSP rd = x0
    chk_ill16(c_lwsp(0, 252));
    chk_ill16(c_ldsp(0, 8)); // C.LDSP rd = x0
    chk_ill16(c_jr(0)); // C.JR rs1 = x0
}

// ---------------------------------------------------------------------------------------------
// 32-bit encodings
// ---------------------------------------------------------------------------------------------

#[test]
fn i_type_immediates() {
    chk_i(d32(addi(1, 2, 2047)), Op::Addi, 1, 2, 2047);
    chk_i(d32(addi(1, 2, -2048)), Op::Addi, 1, 2, -2048);
    chk_i(d32(addi(0, 0, 0)), Op::Addi, X0_SINK, 0, 0);
    chk_i(d32(ld(31, 30, -1)), Op::Ld, 31, 30, -1);
    chk_i(d32(jalr(0, 1, -2048)), Op::Jalr, X0_SINK, 1, -2048);
    chk_i(d32(slli(3, 4, 63)), Op::Slli, 3, 4, 63);
    chk_i(d32(srli(3, 4, 32)), Op::Srli, 3, 4, 32);
    chk_i(d32(srai(3, 4, 63)), Op::Srai, 3, 4, 63);
    chk_i(d32(srai(3, 4, 0)), Op::Srai, 3, 4, 0);
    chk_i(d32(sraiw(3, 4, 31)), Op::Sraiw, 3, 4, 31);
    chk_i(d32(slliw(3, 4, 31)), Op::Slliw, 3, 4, 31);
    chk_i(d32(addiw(3, 4, -2048)), Op::Addiw, 3, 4, -2048);
}

#[test]
fn s_type_immediates() {
    chk_s(d32(sd(31, 1, 2047)), Op::Sd, 1, 31, 2047);
    chk_s(d32(sd(31, 1, -2048)), Op::Sd, 1, 31, -2048);
    chk_s(d32(sb(5, 6, -1)), Op::Sb, 6, 5, -1);
    chk_s(d32(sw(5, 6, 32)), Op::Sw, 6, 5, 32);
    chk_s(d32(sh(5, 6, 31)), Op::Sh, 6, 5, 31);
    chk_s(d32(fsd(5, 6, -2048)), Op::Fsd, 6, 5, -2048);
    // Hand-assembled: sd x2, -2048(x1) = 1000000 00010 00001 011 00000 0100011
    chk_s(
        d32(0b1000000_00010_00001_011_00000_0100011),
        Op::Sd,
        1,
        2,
        -2048,
    );
}

#[test]
fn b_type_immediates() {
    for off in [4094, -4096, -2, 2, 2048, 1024, 32, 30, 0x554, -0xaac] {
        chk_s(d32(beq(1, 2, off)), Op::Beq, 1, 2, off);
    }
    chk_s(d32(bgeu(31, 30, -4096)), Op::Bgeu, 31, 30, -4096);
    // Hand-assembled: beq x0, x0, -4096: imm[12] = 1 only -> bit 31
    chk_s(d32(0x8000_0063), Op::Beq, 0, 0, -4096);
    // bne x0, x0, 4094: imm[11:1] all ones, imm[12] = 0
    chk_s(d32(0x7e00_1fe3), Op::Bne, 0, 0, 4094);
}

#[test]
fn j_and_u_type_immediates() {
    for off in [
        1_048_574,
        -1_048_576,
        -2,
        2,
        2048,
        4096,
        1 << 19,
        0x5_5554,
        -0x2_aaac,
    ] {
        chk_i(d32(jal(1, off)), Op::Jal, 1, 0, off);
    }
    // Hand-assembled: jal x0, -1048576 = imm[20] only -> 0x8000006f
    let i = d32(0x8000_006f);
    assert_eq!((i.op, i.rd, i.imm), (Op::Jal, X0_SINK, -1_048_576));
    // jal x0, 1048574 = 0x7ffff06f
    assert_eq!(d32(0x7fff_f06f).imm, 1_048_574);

    let i = d32(lui(5, 0x80000));
    assert_eq!((i.op, i.rd, i.imm), (Op::Lui, 5, i32::MIN));
    assert_eq!(d32(lui(5, 0x7ffff)).imm, 0x7fff_f000);
    assert_eq!(d32(lui(5, 0xfffff)).imm, -4096);
    let i = d32(auipc(6, 0x80000));
    assert_eq!((i.op, i.rd, i.imm), (Op::Auipc, 6, i32::MIN));
}

#[test]
fn system_and_csr_decode() {
    assert_eq!(d32(ecall()).op, Op::Ecall);
    assert_eq!(d32(ebreak()).op, Op::Ebreak);
    assert_eq!(d32(mret()).op, Op::Mret);
    assert_eq!(d32(sret()).op, Op::Sret);
    assert_eq!(d32(wfi()).op, Op::Wfi);
    let i = d32(sfence_vma(5, 6));
    assert_eq!((i.op, i.rs1, i.rs2), (Op::SfenceVma, 5, 6));
    let i = d32(csrrw(1, 0xfff, 2));
    assert_eq!((i.op, i.rd, i.rs1, i.imm & 0xfff), (Op::Csrrw, 1, 2, 0xfff));
    let i = d32(csrrs(0, 0xc00, 0));
    assert_eq!(
        (i.op, i.rd, i.rs1, i.imm & 0xfff),
        (Op::Csrrs, X0_SINK, 0, 0xc00)
    );
    let i = d32(csrrci(7, 0x300, 31));
    assert_eq!(
        (i.op, i.rd, i.rs1, i.imm & 0xfff),
        (Op::Csrrci, 7, 31, 0x300)
    );
    let i = d32(amo(AMO_MINU, 2, 3, 4, 5));
    assert_eq!((i.op, i.rd, i.rs1, i.rs2, i.fmt), (Op::AmoMinu, 3, 4, 5, 2));
    let i = d32(lr_d(3, 4));
    assert_eq!((i.op, i.rd, i.rs1, i.fmt), (Op::Lr, 3, 4, 3));
}

#[test]
fn fp_decode() {
    let i = d32(fadd(FMT_D, 1, 2, 3, DYN));
    assert_eq!(
        (i.op, i.rd, i.rs1, i.rs2, i.rm, i.fmt),
        (Op::Fadd, 1, 2, 3, 7, 1)
    );
    let i = d32(fmadd(FMT_S, 1, 2, 3, 31, RMM));
    assert_eq!(
        (i.op, i.rd, i.rs1, i.rs2, i.rs3, i.rm, i.fmt),
        (Op::Fmadd, 1, 2, 3, 31, 4, 0)
    );
    let i = d32(fcvt_to_int(FMT_D, I_LU, 0, 4, RTZ));
    assert_eq!(
        (i.op, i.rd, i.rs1, i.rs2, i.rm),
        (Op::FcvtIF, X0_SINK, 4, 3, 1)
    );
    let i = d32(fcvt_s_d(1, 2, RNE));
    assert_eq!((i.op, i.fmt), (Op::FcvtFF, 0));
    let i = d32(fcvt_d_s(1, 2, RNE));
    assert_eq!((i.op, i.fmt), (Op::FcvtFF, 1));
    assert_eq!(d32(fmv_x_f(FMT_S, 1, 2)).op, Op::FmvXF);
    assert_eq!(d32(fclass(FMT_D, 1, 2)).op, Op::Fclass);
    assert_eq!(d32(fmv_f_x(FMT_D, 1, 2)).op, Op::FmvFX);
}

#[test]
fn reserved_32bit_encodings() {
    // OP-IMM shifts: funct6 must be 000000 (SLLI/SRLI) or 010000 (SRAI).
    chk_ill32(i_type(0x400 | 3, 1, 1, 2, OP_IMM)); // "SLLI" with funct6 = 010000
    chk_ill32(i_type(0x040 | 3, 1, 1, 2, OP_IMM)); // SLLI with funct6 = 000001
    chk_ill32(i_type(0x040 | 3, 1, 5, 2, OP_IMM)); // SRLI with funct6 = 000001
    chk_ill32(i_type(0x440 | 3, 1, 5, 2, OP_IMM)); // SRAI with funct6 = 010001
    chk_ill32(i_type(0x800u32 as i32 | 3, 1, 5, 2, OP_IMM)); // funct6 = 100000
                                                             // OP-IMM-32 shifts: shamt[5] set is reserved on RV64.
    chk_ill32(i_type(0x020 | 3, 1, 1, 2, OP_IMM_32));
    chk_ill32(i_type(0x020 | 3, 1, 5, 2, OP_IMM_32));
    chk_ill32(i_type(0x420 | 3, 1, 5, 2, OP_IMM_32));
    chk_ill32(i_type(0, 1, 2, 2, OP_IMM_32)); // OP-IMM-32 funct3 = 010
                                              // OP with undefined funct7/funct3 combinations.
    chk_ill32(r_type(0x20, 3, 2, 1, 1, OP_OP)); // "SUB"-style SLL
    chk_ill32(r_type(0x20, 3, 2, 7, 1, OP_OP));
    chk_ill32(r_type(0x02, 3, 2, 0, 1, OP_OP));
    chk_ill32(r_type(0x40, 3, 2, 0, 1, OP_OP));
    chk_ill32(r_type(0x01, 3, 2, 1, 1, OP_OP_32)); // no "MULHW"
    chk_ill32(r_type(0x01, 3, 2, 2, 1, OP_OP_32));
    chk_ill32(r_type(0x20, 3, 2, 1, 1, OP_OP_32));
    // Loads/stores/branches/JALR with undefined funct3.
    chk_ill32(i_type(0, 1, 7, 2, OP_LOAD));
    chk_ill32(s_type(0, 1, 2, 4, OP_STORE));
    chk_ill32(b_type(8, 1, 2, 2));
    chk_ill32(b_type(8, 1, 2, 3));
    chk_ill32(i_type(0, 1, 1, 2, OP_JALR));
    chk_ill32(i_type(0, 1, 1, 2, OP_LOAD_FP)); // FLH (Zfh) is not implemented
    chk_ill32(i_type(0, 1, 4, 2, OP_LOAD_FP)); // FLQ
                                               // AMO: byte/halfword widths and undefined funct5.
    chk_ill32(amo(AMO_ADD, 0, 1, 2, 3));
    chk_ill32(amo(AMO_ADD, 1, 1, 2, 3));
    chk_ill32(amo(0x05, 3, 1, 2, 3));
    // LR with rs2 != 0.
    chk_ill32(amo(AMO_LR, 2, 1, 2, 1));
    chk_ill32(amo(AMO_LR, 3, 1, 2, 31));
}

#[test]
fn reserved_fp_encodings() {
    // fmt = 2 (H) and 3 (Q) are not implemented.
    chk_ill32(fp_op(0x00, 2, 1, 2, 3, RNE));
    chk_ill32(fp_op(0x00, 3, 1, 2, 3, RNE));
    chk_ill32(fmadd(2, 1, 2, 3, 4, RNE));
    chk_ill32(fmadd(3, 1, 2, 3, 4, RNE));
    // Static rounding modes 5 and 6 are reserved.
    chk_ill32(fadd(FMT_S, 1, 2, 3, 5));
    chk_ill32(fadd(FMT_D, 1, 2, 3, 6));
    chk_ill32(fmadd(FMT_D, 1, 2, 3, 4, 5));
    chk_ill32(fsqrt(FMT_D, 1, 2, 6));
    chk_ill32(fcvt_to_int(FMT_D, I_W, 1, 2, 5));
    assert_eq!(d32(fadd(FMT_S, 1, 2, 3, DYN)).op, Op::Fadd);
    // FSQRT with rs2 != 0.
    chk_ill32(fp_op(0x0b, FMT_S, 1, 2, 1, RNE));
    chk_ill32(fp_op(0x0b, FMT_D, 1, 2, 31, RNE));
    // FSGNJ/FMIN/compare with undefined funct3.
    chk_ill32(fp_op(0x04, FMT_D, 1, 2, 3, 3));
    chk_ill32(fp_op(0x05, FMT_D, 1, 2, 3, 2));
    chk_ill32(fp_op(0x14, FMT_D, 1, 2, 3, 3));
    // FCVT int <-> fp with an integer format >= 4.
    chk_ill32(fcvt_to_int(FMT_D, 4, 1, 2, RNE));
    chk_ill32(fcvt_from_int(FMT_S, 5, 1, 2, RNE));
    // FCVT.S.S / FCVT.D.D do not exist.
    chk_ill32(fp_op(0x08, FMT_S, 1, 2, 0, RNE));
    chk_ill32(fp_op(0x08, FMT_D, 1, 2, 1, RNE));
    // FMV.X.W with rm = 2, FMV.W.X with rm = 1 or rs2 != 0.
    chk_ill32(fp_op(0x1c, FMT_S, 1, 2, 0, 2));
    chk_ill32(fp_op(0x1e, FMT_S, 1, 2, 0, 1));
    chk_ill32(fp_op(0x1e, FMT_D, 1, 2, 1, 0));
}

#[test]
fn reserved_system_encodings() {
    chk_ill32(ecall() | (1 << 7)); // ECALL with rd = x1
    chk_ill32(ecall() | (5 << 15)); // ECALL with rs1 = x5
    chk_ill32(ebreak() | (1 << 7));
    chk_ill32(mret() | (1 << 7));
    chk_ill32(wfi() | (3 << 15));
    chk_ill32(0x0000_4073); // SYSTEM funct3 = 100
    chk_ill32(0x3050_4073);
    chk_ill32(r_type(0x09, 0, 0, 0, 1, OP_SYSTEM)); // SFENCE.VMA with rd != 0
    chk_ill32(0xffff_ffff);
}
