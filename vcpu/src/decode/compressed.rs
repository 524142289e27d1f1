//! The C extension: 16-bit encodings for RV64 with D (unprivileged spec, "C" chapter, RVC
//! instruction listings). HINT encodings execute as the base instruction they expand to
//! (which has no architectural effect); reserved encodings are illegal.

use super::insn::{finish, Insn, Op, FMT_D};

#[inline]
fn bit(h: u32, n: u32) -> u32 {
    (h >> n) & 1
}
#[inline]
fn bits(h: u32, hi: u32, lo: u32) -> u32 {
    (h >> lo) & ((1 << (hi - lo + 1)) - 1)
}
/// Register fields of the compressed "prime" forms (x8-x15).
#[inline]
fn rp(h: u32, lo: u32) -> u8 {
    (bits(h, lo + 2, lo) + 8) as u8
}
fn sext(v: u32, width: u32) -> i32 {
    ((v << (32 - width)) as i32) >> (32 - width)
}

fn ins(op: Op, rd: u8, rs1: u8, rs2: u8, imm: i32, h: u32) -> Insn {
    finish(Insn {
        op,
        rd,
        rs1,
        rs2,
        imm,
        len: 2,
        raw: h,
        ..Insn::default()
    })
}

/// Decode a 16-bit instruction (`h & 3 != 3`).
pub fn decode_compressed(h16: u16) -> Insn {
    let h = h16 as u32;
    let ill = Insn::illegal(h, 2);
    let f3 = bits(h, 15, 13);
    let rd_full = bits(h, 11, 7) as u8;
    let rs2_full = bits(h, 6, 2) as u8;
    // CI-format 6-bit signed immediate.
    let ci_imm = sext((bit(h, 12) << 5) | bits(h, 6, 2), 6);
    let mut insn = match (h & 3, f3) {
        (0, 0) => {
            let imm = (bits(h, 12, 11) << 4)
                | (bits(h, 10, 7) << 6)
                | (bit(h, 6) << 2)
                | (bit(h, 5) << 3);
            if imm == 0 {
                return ill; // includes the all-zero halfword
            }
            ins(Op::Addi, rp(h, 2), 2, 0, imm as i32, h)
        }
        (0, 1) | (0, 3) | (0, 5) | (0, 7) => {
            let imm = ((bits(h, 12, 10) << 3) | (bits(h, 6, 5) << 6)) as i32;
            let op = match f3 {
                1 => Op::Fld,
                3 => Op::Ld,
                5 => Op::Fsd,
                _ => Op::Sd,
            };
            if matches!(op, Op::Fld | Op::Ld) {
                ins(op, rp(h, 2), rp(h, 7), 0, imm, h)
            } else {
                ins(op, 0, rp(h, 7), rp(h, 2), imm, h)
            }
        }
        (0, 2) | (0, 6) => {
            let imm = ((bits(h, 12, 10) << 3) | (bit(h, 6) << 2) | (bit(h, 5) << 6)) as i32;
            if f3 == 2 {
                ins(Op::Lw, rp(h, 2), rp(h, 7), 0, imm, h)
            } else {
                ins(Op::Sw, 0, rp(h, 7), rp(h, 2), imm, h)
            }
        }
        (0, _) => return ill,
        (1, 0) => ins(Op::Addi, rd_full, rd_full, 0, ci_imm, h),
        (1, 1) => {
            if rd_full == 0 {
                return ill;
            }
            ins(Op::Addiw, rd_full, rd_full, 0, ci_imm, h)
        }
        (1, 2) => ins(Op::Addi, rd_full, 0, 0, ci_imm, h),
        (1, 3) if rd_full == 2 => {
            let imm = (bit(h, 12) << 9)
                | (bit(h, 6) << 4)
                | (bit(h, 5) << 6)
                | (bits(h, 4, 3) << 7)
                | (bit(h, 2) << 5);
            if imm == 0 {
                return ill;
            }
            ins(Op::Addi, 2, 2, 0, sext(imm, 10), h)
        }
        (1, 3) => {
            if ci_imm == 0 {
                return ill;
            }
            ins(Op::Lui, rd_full, 0, 0, ci_imm << 12, h)
        }
        (1, 4) => {
            let r = rp(h, 7);
            let shamt = ((bit(h, 12) << 5) | bits(h, 6, 2)) as i32;
            match bits(h, 11, 10) {
                0 => ins(Op::Srli, r, r, 0, shamt, h),
                1 => ins(Op::Srai, r, r, 0, shamt, h),
                2 => ins(Op::Andi, r, r, 0, ci_imm, h),
                _ => {
                    let op = match (bit(h, 12), bits(h, 6, 5)) {
                        (0, 0) => Op::Sub,
                        (0, 1) => Op::Xor,
                        (0, 2) => Op::Or,
                        (0, 3) => Op::And,
                        (1, 0) => Op::Subw,
                        (1, 1) => Op::Addw,
                        _ => return ill,
                    };
                    ins(op, r, r, rp(h, 2), 0, h)
                }
            }
        }
        (1, 5) => {
            let off = (bit(h, 12) << 11)
                | (bit(h, 11) << 4)
                | (bits(h, 10, 9) << 8)
                | (bit(h, 8) << 10)
                | (bit(h, 7) << 6)
                | (bit(h, 6) << 7)
                | (bits(h, 5, 3) << 1)
                | (bit(h, 2) << 5);
            ins(Op::Jal, 0, 0, 0, sext(off, 12), h)
        }
        (1, _) => {
            let off = (bit(h, 12) << 8)
                | (bits(h, 11, 10) << 3)
                | (bits(h, 6, 5) << 6)
                | (bits(h, 4, 3) << 1)
                | (bit(h, 2) << 5);
            let op = if f3 == 6 { Op::Beq } else { Op::Bne };
            ins(op, 0, rp(h, 7), 0, sext(off, 9), h)
        }
        (2, 0) => ins(
            Op::Slli,
            rd_full,
            rd_full,
            0,
            ((bit(h, 12) << 5) | bits(h, 6, 2)) as i32,
            h,
        ),
        (2, 1) | (2, 3) => {
            let imm = ((bit(h, 12) << 5) | (bits(h, 6, 5) << 3) | (bits(h, 4, 2) << 6)) as i32;
            if f3 == 3 && rd_full == 0 {
                return ill;
            }
            let op = if f3 == 1 { Op::Fld } else { Op::Ld };
            ins(op, rd_full, 2, 0, imm, h)
        }
        (2, 2) => {
            if rd_full == 0 {
                return ill;
            }
            let imm = ((bit(h, 12) << 5) | (bits(h, 6, 4) << 2) | (bits(h, 3, 2) << 6)) as i32;
            ins(Op::Lw, rd_full, 2, 0, imm, h)
        }
        (2, 4) => match (bit(h, 12), rd_full, rs2_full) {
            (0, 0, 0) => return ill,
            (0, rs1, 0) => ins(Op::Jalr, 0, rs1, 0, 0, h),
            (0, rd, rs2) => ins(Op::Add, rd, 0, rs2, 0, h),
            (_, 0, 0) => Insn {
                op: Op::Ebreak,
                len: 2,
                raw: h,
                ..Insn::default()
            },
            (_, rs1, 0) => ins(Op::Jalr, 1, rs1, 0, 0, h),
            (_, rd, rs2) => ins(Op::Add, rd, rd, rs2, 0, h),
        },
        (2, 5) | (2, 7) => {
            let imm = ((bits(h, 12, 10) << 3) | (bits(h, 9, 7) << 6)) as i32;
            let op = if f3 == 5 { Op::Fsd } else { Op::Sd };
            ins(op, 0, 2, rs2_full, imm, h)
        }
        (2, 6) => {
            let imm = ((bits(h, 12, 9) << 2) | (bits(h, 8, 7) << 6)) as i32;
            ins(Op::Sw, 0, 2, rs2_full, imm, h)
        }
        _ => return ill,
    };
    if matches!(insn.op, Op::Fld | Op::Fsd) {
        insn.fmt = FMT_D;
    }
    insn
}
