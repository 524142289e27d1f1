//! 32-bit encodings (unprivileged spec chapter "RV32/64G Instruction Set Listings", and the
//! privileged spec for SYSTEM).

use super::insn::{finish, Insn, Op, FMT_D, FMT_S};

#[inline]
fn rd(b: u32) -> u8 {
    ((b >> 7) & 31) as u8
}
#[inline]
fn rs1(b: u32) -> u8 {
    ((b >> 15) & 31) as u8
}
#[inline]
fn rs2(b: u32) -> u8 {
    ((b >> 20) & 31) as u8
}
#[inline]
fn funct3(b: u32) -> u32 {
    (b >> 12) & 7
}
#[inline]
fn funct7(b: u32) -> u32 {
    b >> 25
}
#[inline]
fn imm_i(b: u32) -> i32 {
    (b as i32) >> 20
}
#[inline]
fn imm_s(b: u32) -> i32 {
    ((b as i32) >> 25 << 5) | ((b >> 7) & 31) as i32
}
#[inline]
fn imm_b(b: u32) -> i32 {
    ((b as i32) >> 31 << 12)
        | (((b >> 7) & 1) << 11) as i32
        | (((b >> 25) & 0x3f) << 5) as i32
        | (((b >> 8) & 0xf) << 1) as i32
}
#[inline]
fn imm_u(b: u32) -> i32 {
    (b & 0xffff_f000) as i32
}
#[inline]
fn imm_j(b: u32) -> i32 {
    ((b as i32) >> 31 << 20)
        | (b & 0x000f_f000) as i32
        | (((b >> 20) & 1) << 11) as i32
        | (((b >> 21) & 0x3ff) << 1) as i32
}

fn r(op: Op, b: u32) -> Insn {
    Insn {
        op,
        rd: rd(b),
        rs1: rs1(b),
        rs2: rs2(b),
        len: 4,
        raw: b,
        ..Insn::default()
    }
}
fn i(op: Op, b: u32) -> Insn {
    Insn {
        op,
        rd: rd(b),
        rs1: rs1(b),
        imm: imm_i(b),
        len: 4,
        raw: b,
        ..Insn::default()
    }
}
fn s(op: Op, b: u32) -> Insn {
    Insn {
        op,
        rs1: rs1(b),
        rs2: rs2(b),
        imm: imm_s(b),
        len: 4,
        raw: b,
        ..Insn::default()
    }
}

/// Decode a 32-bit instruction (`bits & 3 == 3`).
pub fn decode_32(b: u32) -> Insn {
    let ill = Insn::illegal(b, 4);
    let f3 = funct3(b);
    let f7 = funct7(b);
    let insn = match (b >> 2) & 0x1f {
        // LOAD
        0x00 => {
            let op = match f3 {
                0 => Op::Lb,
                1 => Op::Lh,
                2 => Op::Lw,
                3 => Op::Ld,
                4 => Op::Lbu,
                5 => Op::Lhu,
                6 => Op::Lwu,
                _ => return ill,
            };
            i(op, b)
        }
        // LOAD-FP
        0x01 => match f3 {
            2 => i(Op::Flw, b),
            3 => i(Op::Fld, b),
            _ => return ill,
        },
        // MISC-MEM
        0x03 => match f3 {
            // Reserved FENCE encodings (fm, rs1, rd) behave as ordinary fences.
            0 => Insn {
                op: Op::Fence,
                len: 4,
                raw: b,
                ..Insn::default()
            },
            1 => Insn {
                op: Op::FenceI,
                len: 4,
                raw: b,
                ..Insn::default()
            },
            _ => return ill,
        },
        // OP-IMM
        0x04 => {
            let op = match f3 {
                0 => Op::Addi,
                2 => Op::Slti,
                3 => Op::Sltiu,
                4 => Op::Xori,
                6 => Op::Ori,
                7 => Op::Andi,
                1 if b >> 26 == 0 => Op::Slli,
                5 if b >> 26 == 0 => Op::Srli,
                5 if b >> 26 == 0x10 => Op::Srai,
                _ => return ill,
            };
            let mut x = i(op, b);
            if matches!(op, Op::Slli | Op::Srli | Op::Srai) {
                x.imm = ((b >> 20) & 0x3f) as i32;
            }
            x
        }
        0x05 => Insn {
            op: Op::Auipc,
            rd: rd(b),
            imm: imm_u(b),
            len: 4,
            raw: b,
            ..Insn::default()
        },
        // OP-IMM-32
        0x06 => {
            let op = match (f3, f7) {
                (0, _) => Op::Addiw,
                (1, 0) => Op::Slliw,
                (5, 0) => Op::Srliw,
                (5, 0x20) => Op::Sraiw,
                _ => return ill,
            };
            let mut x = i(op, b);
            if op != Op::Addiw {
                x.imm = ((b >> 20) & 0x1f) as i32;
            }
            x
        }
        // STORE
        0x08 => {
            let op = match f3 {
                0 => Op::Sb,
                1 => Op::Sh,
                2 => Op::Sw,
                3 => Op::Sd,
                _ => return ill,
            };
            s(op, b)
        }
        // STORE-FP
        0x09 => match f3 {
            2 => s(Op::Fsw, b),
            3 => s(Op::Fsd, b),
            _ => return ill,
        },
        // AMO
        0x0b => return decode_amo(b),
        // OP
        0x0c => {
            let op = match (f7, f3) {
                (0, 0) => Op::Add,
                (0x20, 0) => Op::Sub,
                (0, 1) => Op::Sll,
                (0, 2) => Op::Slt,
                (0, 3) => Op::Sltu,
                (0, 4) => Op::Xor,
                (0, 5) => Op::Srl,
                (0x20, 5) => Op::Sra,
                (0, 6) => Op::Or,
                (0, 7) => Op::And,
                (1, 0) => Op::Mul,
                (1, 1) => Op::Mulh,
                (1, 2) => Op::Mulhsu,
                (1, 3) => Op::Mulhu,
                (1, 4) => Op::Div,
                (1, 5) => Op::Divu,
                (1, 6) => Op::Rem,
                (1, 7) => Op::Remu,
                _ => return ill,
            };
            r(op, b)
        }
        0x0d => Insn {
            op: Op::Lui,
            rd: rd(b),
            imm: imm_u(b),
            len: 4,
            raw: b,
            ..Insn::default()
        },
        // OP-32
        0x0e => {
            let op = match (f7, f3) {
                (0, 0) => Op::Addw,
                (0x20, 0) => Op::Subw,
                (0, 1) => Op::Sllw,
                (0, 5) => Op::Srlw,
                (0x20, 5) => Op::Sraw,
                (1, 0) => Op::Mulw,
                (1, 4) => Op::Divw,
                (1, 5) => Op::Divuw,
                (1, 6) => Op::Remw,
                (1, 7) => Op::Remuw,
                _ => return ill,
            };
            r(op, b)
        }
        0x10 => return decode_fma(Op::Fmadd, b),
        0x11 => return decode_fma(Op::Fmsub, b),
        0x12 => return decode_fma(Op::Fnmsub, b),
        0x13 => return decode_fma(Op::Fnmadd, b),
        0x14 => return decode_op_fp(b),
        // BRANCH
        0x18 => {
            let op = match f3 {
                0 => Op::Beq,
                1 => Op::Bne,
                4 => Op::Blt,
                5 => Op::Bge,
                6 => Op::Bltu,
                7 => Op::Bgeu,
                _ => return ill,
            };
            Insn {
                op,
                rs1: rs1(b),
                rs2: rs2(b),
                imm: imm_b(b),
                len: 4,
                raw: b,
                ..Insn::default()
            }
        }
        0x19 if f3 == 0 => i(Op::Jalr, b),
        0x1b => Insn {
            op: Op::Jal,
            rd: rd(b),
            imm: imm_j(b),
            len: 4,
            raw: b,
            ..Insn::default()
        },
        // SYSTEM
        0x1c => return decode_system(b),
        _ => return ill,
    };
    finish(insn)
}

fn decode_system(b: u32) -> Insn {
    let ill = Insn::illegal(b, 4);
    let f3 = funct3(b);
    if f3 == 0 || f3 == 4 {
        // Privileged instructions: exact encodings only.
        let op = match b {
            0x0000_0073 => Op::Ecall,
            0x0010_0073 => Op::Ebreak,
            0x3020_0073 => Op::Mret,
            0x1020_0073 => Op::Sret,
            0x1050_0073 => Op::Wfi,
            0x1040_0073 => Op::Sctrclr,
            _ if f3 == 0 && rd(b) == 0 && matches!(f7_of(b), 0x09 | 0x11 | 0x31) => {
                let op = match f7_of(b) {
                    0x09 => Op::SfenceVma,
                    0x11 => Op::HfenceVvma,
                    _ => Op::HfenceGvma,
                };
                return Insn {
                    op,
                    rs1: rs1(b),
                    rs2: rs2(b),
                    len: 4,
                    raw: b,
                    ..Insn::default()
                };
            }
            _ if f3 == 4 => return decode_hlv_hsv(b),
            _ => return ill,
        };
        return Insn {
            op,
            len: 4,
            raw: b,
            ..Insn::default()
        };
    }
    let op = match f3 {
        1 => Op::Csrrw,
        2 => Op::Csrrs,
        3 => Op::Csrrc,
        5 => Op::Csrrwi,
        6 => Op::Csrrsi,
        _ => Op::Csrrci,
    };
    finish(Insn {
        op,
        rd: rd(b),
        rs1: rs1(b),
        imm: (b >> 20) as i32,
        len: 4,
        raw: b,
        ..Insn::default()
    })
}

/// HLV, HLVX and HSV (H extension, "Hypervisor Virtual-Machine Load and Store
/// Instructions"): SYSTEM, funct3 = 4, funct7 selects the width, rs2 (loads) the variant.
fn decode_hlv_hsv(b: u32) -> Insn {
    let ill = Insn::illegal(b, 4);
    let store = |op| Insn {
        op,
        rs1: rs1(b),
        rs2: rs2(b),
        len: 4,
        raw: b,
        ..Insn::default()
    };
    let load = |op| {
        finish(Insn {
            op,
            rd: rd(b),
            rs1: rs1(b),
            len: 4,
            raw: b,
            ..Insn::default()
        })
    };
    match (f7_of(b), rs2(b)) {
        (0x30, 0) => load(Op::HlvB),
        (0x30, 1) => load(Op::HlvBu),
        (0x32, 0) => load(Op::HlvH),
        (0x32, 1) => load(Op::HlvHu),
        (0x32, 3) => load(Op::HlvxHu),
        (0x34, 0) => load(Op::HlvW),
        (0x34, 1) => load(Op::HlvWu),
        (0x34, 3) => load(Op::HlvxWu),
        (0x36, 0) => load(Op::HlvD),
        (0x31, _) if rd(b) == 0 => store(Op::HsvB),
        (0x33, _) if rd(b) == 0 => store(Op::HsvH),
        (0x35, _) if rd(b) == 0 => store(Op::HsvW),
        (0x37, _) if rd(b) == 0 => store(Op::HsvD),
        _ => ill,
    }
}

fn f7_of(b: u32) -> u32 {
    b >> 25
}

fn decode_amo(b: u32) -> Insn {
    let ill = Insn::illegal(b, 4);
    let width = match funct3(b) {
        2 => 2,
        3 => 3,
        _ => return ill,
    };
    let op = match b >> 27 {
        0x02 if rs2(b) == 0 => Op::Lr,
        0x03 => Op::Sc,
        0x01 => Op::AmoSwap,
        0x00 => Op::AmoAdd,
        0x04 => Op::AmoXor,
        0x0c => Op::AmoAnd,
        0x08 => Op::AmoOr,
        0x10 => Op::AmoMin,
        0x14 => Op::AmoMax,
        0x18 => Op::AmoMinu,
        0x1c => Op::AmoMaxu,
        _ => return ill,
    };
    let mut x = r(op, b);
    x.fmt = width;
    finish(x)
}

fn fp_fmt(b: u32) -> Option<u8> {
    match (b >> 25) & 3 {
        0 => Some(FMT_S),
        1 => Some(FMT_D),
        _ => None,
    }
}

/// Static rounding modes 5 and 6 are reserved; 7 (DYN) is resolved at execution time.
fn rm_ok(rm: u32) -> bool {
    rm != 5 && rm != 6
}

fn decode_fma(op: Op, b: u32) -> Insn {
    let ill = Insn::illegal(b, 4);
    let Some(fmt) = fp_fmt(b) else { return ill };
    let rm = funct3(b);
    if !rm_ok(rm) {
        return ill;
    }
    Insn {
        op,
        rd: rd(b),
        rs1: rs1(b),
        rs2: rs2(b),
        rs3: (b >> 27) as u8,
        rm: rm as u8,
        fmt,
        len: 4,
        raw: b,
        imm: 0,
    }
}

fn decode_op_fp(b: u32) -> Insn {
    let ill = Insn::illegal(b, 4);
    let Some(fmt) = fp_fmt(b) else { return ill };
    let f5 = b >> 27;
    let rm = funct3(b);
    let src2 = rs2(b);
    let uses_rm = matches!(f5, 0x00 | 0x01 | 0x02 | 0x03 | 0x0b | 0x08 | 0x18 | 0x1a);
    if uses_rm && !rm_ok(rm) {
        return ill;
    }
    let op = match f5 {
        0x00 => Op::Fadd,
        0x01 => Op::Fsub,
        0x02 => Op::Fmul,
        0x03 => Op::Fdiv,
        0x0b if src2 == 0 => Op::Fsqrt,
        0x04 => match rm {
            0 => Op::Fsgnj,
            1 => Op::Fsgnjn,
            2 => Op::Fsgnjx,
            _ => return ill,
        },
        0x05 => match rm {
            0 => Op::Fmin,
            1 => Op::Fmax,
            _ => return ill,
        },
        // FCVT.S.D (fmt S, rs2 = 1) and FCVT.D.S (fmt D, rs2 = 0).
        0x08 if (fmt == FMT_S && src2 == 1) || (fmt == FMT_D && src2 == 0) => Op::FcvtFF,
        0x14 => match rm {
            0 => Op::Fle,
            1 => Op::Flt,
            2 => Op::Feq,
            _ => return ill,
        },
        0x18 if src2 < 4 => Op::FcvtIF,
        0x1a if src2 < 4 => Op::FcvtFI,
        0x1c if src2 == 0 && rm == 0 => Op::FmvXF,
        0x1c if src2 == 0 && rm == 1 => Op::Fclass,
        0x1e if src2 == 0 && rm == 0 => Op::FmvFX,
        _ => return ill,
    };
    finish(Insn {
        op,
        rd: rd(b),
        rs1: rs1(b),
        rs2: src2,
        rm: rm as u8,
        fmt,
        len: 4,
        raw: b,
        ..Insn::default()
    })
}
