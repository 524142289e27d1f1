//! RV64I integer computation and the M extension (unprivileged spec chapters "RV32I", "RV64I",
//! "M").

use crate::decode::Op;

/// Register-immediate operations (shift amounts are already extracted into `imm`).
#[inline(always)]
pub(super) fn op_imm(op: Op, a: u64, imm: i32) -> u64 {
    let b = imm as i64 as u64;
    match op {
        Op::Addi => a.wrapping_add(b),
        Op::Slti => ((a as i64) < (b as i64)) as u64,
        Op::Sltiu => (a < b) as u64,
        Op::Xori => a ^ b,
        Op::Ori => a | b,
        Op::Andi => a & b,
        Op::Slli => a << (imm & 63),
        Op::Srli => a >> (imm & 63),
        Op::Srai => ((a as i64) >> (imm & 63)) as u64,
        Op::Addiw => (a as i32).wrapping_add(imm) as i64 as u64,
        Op::Slliw => ((a as u32) << (imm & 31)) as i32 as i64 as u64,
        Op::Srliw => ((a as u32) >> (imm & 31)) as i32 as i64 as u64,
        _ => ((a as i32) >> (imm & 31)) as i64 as u64, // Sraiw
    }
}

/// Register-register operations.
#[inline(always)]
pub(super) fn op_reg(op: Op, a: u64, b: u64) -> u64 {
    match op {
        Op::Add => a.wrapping_add(b),
        Op::Sub => a.wrapping_sub(b),
        Op::Sll => a << (b & 63),
        Op::Slt => ((a as i64) < (b as i64)) as u64,
        Op::Sltu => (a < b) as u64,
        Op::Xor => a ^ b,
        Op::Srl => a >> (b & 63),
        Op::Sra => ((a as i64) >> (b & 63)) as u64,
        Op::Or => a | b,
        Op::And => a & b,
        Op::Addw => (a as i32).wrapping_add(b as i32) as i64 as u64,
        Op::Subw => (a as i32).wrapping_sub(b as i32) as i64 as u64,
        Op::Sllw => ((a as u32) << (b & 31)) as i32 as i64 as u64,
        Op::Srlw => ((a as u32) >> (b & 31)) as i32 as i64 as u64,
        _ => ((a as i32) >> (b & 31)) as i64 as u64, // Sraw
    }
}

/// M extension. Division by zero and signed overflow follow the spec's table ("Semantics
/// for division by zero and division overflow"): no trap, quotient all ones or the dividend.
#[inline]
pub(super) fn op_muldiv(op: Op, a: u64, b: u64) -> u64 {
    match op {
        Op::Mul => a.wrapping_mul(b),
        Op::Mulh => ((a as i64 as i128 * b as i64 as i128) >> 64) as u64,
        Op::Mulhsu => ((a as i64 as i128).wrapping_mul(b as u128 as i128) >> 64) as u64,
        Op::Mulhu => ((a as u128 * b as u128) >> 64) as u64,
        Op::Div => {
            if b == 0 {
                u64::MAX
            } else {
                (a as i64).wrapping_div(b as i64) as u64
            }
        }
        Op::Divu => a.checked_div(b).unwrap_or(u64::MAX),
        Op::Rem => {
            if b == 0 {
                a
            } else {
                (a as i64).wrapping_rem(b as i64) as u64
            }
        }
        Op::Remu => a.checked_rem(b).unwrap_or(a),
        Op::Mulw => (a as i32).wrapping_mul(b as i32) as i64 as u64,
        Op::Divw => {
            let (x, y) = (a as i32, b as i32);
            if y == 0 {
                u64::MAX
            } else {
                x.wrapping_div(y) as i64 as u64
            }
        }
        Op::Divuw => (a as u32)
            .checked_div(b as u32)
            .map_or(u64::MAX, |q| q as i32 as i64 as u64),
        Op::Remw => {
            let (x, y) = (a as i32, b as i32);
            if y == 0 {
                x as i64 as u64
            } else {
                x.wrapping_rem(y) as i64 as u64
            }
        }
        _ => {
            // Remuw
            let (x, y) = (a as u32, b as u32);
            x.checked_rem(y).unwrap_or(x) as i32 as i64 as u64
        }
    }
}
