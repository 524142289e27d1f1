//! Transformed instructions for `mtinst`/`htinst` (H extension, "Transformed Instruction or
//! Pseudoinstruction for mtinst or htinst").

use crate::decode::{Insn, Op, X0_SINK};

/// Pseudoinstruction: 64-bit read for VS-stage address translation.
pub const PSEUDO_VS_READ: u64 = 0x0000_3000;
/// Pseudoinstruction: 64-bit write (A/D update) for VS-stage address translation.
pub const PSEUDO_VS_WRITE: u64 = 0x0000_3020;

/// The transformation of `insn` for a fault whose address is `offset` bytes past the
/// instruction's original address, or 0 for instructions without a defined transformation.
///
/// Loads and stores lose their immediate; every transformed form carries `offset` in bits
/// 19:15 (where rs1 was). Compressed instructions are expanded first and then have bit 1
/// cleared.
pub fn transform(insn: &Insn, offset: u64) -> u64 {
    let off = (offset & 31) << 15;
    let rd = if insn.rd == X0_SINK {
        0
    } else {
        insn.rd as u64 & 31
    };
    let load = |opcode: u64, f3: u64| off | (f3 << 12) | (rd << 7) | opcode;
    let store = |opcode: u64, f3: u64| ((insn.rs2 as u64 & 31) << 20) | off | (f3 << 12) | opcode;
    let v = match insn.op {
        Op::Lb => load(0x03, 0),
        Op::Lh => load(0x03, 1),
        Op::Lw => load(0x03, 2),
        Op::Ld => load(0x03, 3),
        Op::Lbu => load(0x03, 4),
        Op::Lhu => load(0x03, 5),
        Op::Lwu => load(0x03, 6),
        Op::Flw => load(0x07, 2),
        Op::Fld => load(0x07, 3),
        Op::Sb => store(0x23, 0),
        Op::Sh => store(0x23, 1),
        Op::Sw => store(0x23, 2),
        Op::Sd => store(0x23, 3),
        Op::Fsw => store(0x27, 2),
        Op::Fsd => store(0x27, 3),
        Op::Lr
        | Op::Sc
        | Op::AmoSwap
        | Op::AmoAdd
        | Op::AmoXor
        | Op::AmoAnd
        | Op::AmoOr
        | Op::AmoMin
        | Op::AmoMax
        | Op::AmoMinu
        | Op::AmoMaxu
        | Op::HlvB
        | Op::HlvBu
        | Op::HlvH
        | Op::HlvHu
        | Op::HlvxHu
        | Op::HlvW
        | Op::HlvWu
        | Op::HlvxWu
        | Op::HlvD
        | Op::HsvB
        | Op::HsvH
        | Op::HsvW
        | Op::HsvD => (insn.bits() as u64 & !(31 << 15)) | off,
        _ => return 0,
    };
    if insn.len == 2 {
        v & !2
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode;

    #[test]
    fn loads_and_stores_lose_their_immediate() {
        // ld a0, 16(a1) -> ld a0, 0(x0) with offset 0
        assert_eq!(transform(&decode(0x0105_b503), 0), 0x0000_3503);
        // sw a2, -4(sp) with offset 2 (misaligned second part)
        let sw = 0xfec1_2e23; // sw a2, -4(sp)
        assert_eq!(
            transform(&decode(sw), 2),
            (12 << 20) | (2 << 15) | (2 << 12) | 0x23
        );
    }

    #[test]
    fn compressed_forms_are_expanded_with_bit_1_clear() {
        // c.lw a0, 0(a1) = 0x4188 -> lw a0 with bits 1:0 = 01
        assert_eq!(transform(&decode(0x4188), 0), (10 << 7) | (2 << 12) | 0x01);
        // c.sdsp ra, 8(sp) = 0xe406 -> sd ra: rs2 = 1
        assert_eq!(transform(&decode(0xe406), 0), (1 << 20) | (3 << 12) | 0x21);
    }

    #[test]
    fn atomics_keep_everything_but_rs1() {
        let amoadd_d = 0x00b5_352f; // amoadd.d a0, a1, (a0)
        assert_eq!(
            transform(&decode(amoadd_d), 0),
            (amoadd_d & !(31 << 15)) as u64
        );
    }

    #[test]
    fn other_instructions_transform_to_zero() {
        assert_eq!(transform(&decode(0x0000_0013), 0), 0); // addi x0, x0, 0
        assert_eq!(transform(&decode(0x0000_0073), 0), 0); // ecall
    }
}
