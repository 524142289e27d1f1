//! Which memory a (not yet executed) instruction accesses, for debugger watchpoints: a pure
//! decoder of the RV64 memory-access encodings (unprivileged spec, "RV32/64G Instruction
//! Set Listings" and the RVC quadrant tables; privileged spec, hypervisor load/store).
//!
//! Covered: RV64I loads and stores (LB..LD, LBU..LWU, SB..SD); F/D loads and stores
//! (FLW, FLD, FSW, FSD); A's LR.W/D (a load), SC.W/D (a store) and AMO*.W/D (read and
//! write); the H extension's HLV, HLVX and HSV (offset 0); and the compressed C.LW, C.LD,
//! C.FLD, C.SW, C.SD, C.FSD, C.LWSP, C.LDSP, C.FLDSP, C.SWSP, C.SDSP, C.FSDSP.
//!
//! Not covered (`None`): Zfh's FLH/FSH and Q's FLQ/FSQ (the software hart implements
//! neither), cache-block operations (Zicbom/Zicboz `cbo.*`), Zacas/Zabha, Zcb, vector loads
//! and stores, and every instruction that accesses no memory.

/// How an instruction accesses memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemAccessKind {
    /// A read (loads, LR, HLV, HLVX).
    Load,
    /// A write (stores, SC, HSV).
    Store,
    /// A read and a write of the same bytes (AMOs).
    Amo,
}

/// What memory a (not yet executed) instruction accesses: `size` bytes at `x[base] +
/// offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemAccess {
    /// The base address register (x0-x31; x2 for the stack-pointer-relative compressed
    /// forms).
    pub base: u8,
    /// The offset added to the base register (sign-extended, or the compressed forms'
    /// scaled unsigned offset).
    pub offset: i64,
    /// Bytes accessed: 1, 2, 4 or 8.
    pub size: u8,
    /// Read, write or both.
    pub kind: MemAccessKind,
}

impl MemAccess {
    /// The first address accessed, given the base register's value.
    pub fn address(&self, base_value: u64) -> u64 {
        base_value.wrapping_add(self.offset as u64)
    }
}

// Major opcodes (inst[6:0]).
const OP_LOAD: u32 = 0b000_0011;
const OP_LOAD_FP: u32 = 0b000_0111;
const OP_STORE: u32 = 0b010_0011;
const OP_STORE_FP: u32 = 0b010_0111;
const OP_AMO: u32 = 0b010_1111;
const OP_SYSTEM: u32 = 0b111_0011;

/// What memory `insn` accesses, or `None` when it accesses none (or is not a covered
/// encoding; see the module documentation). A compressed instruction is recognized by its
/// low two bits (`insn & 3 != 3`): only its low 16 bits are used.
pub fn memory_access(insn: u32) -> Option<MemAccess> {
    if insn & 3 != 3 {
        compressed(insn as u16)
    } else {
        standard(insn)
    }
}

fn access(base: u32, offset: i64, size: u8, kind: MemAccessKind) -> Option<MemAccess> {
    Some(MemAccess {
        base: (base & 31) as u8,
        offset,
        size,
        kind,
    })
}

/// A 32-bit instruction.
fn standard(insn: u32) -> Option<MemAccess> {
    let funct3 = (insn >> 12) & 7;
    let rs1 = (insn >> 15) & 31;
    let rs2 = (insn >> 20) & 31;
    let rd = (insn >> 7) & 31;
    // I-type immediate: inst[31:20]; S-type: inst[31:25] | inst[11:7].
    let imm_i = i64::from((insn as i32) >> 20);
    let imm_s = i64::from(((insn as i32) >> 25) << 5) | i64::from(rd);
    match insn & 0x7f {
        OP_LOAD => {
            let size = match funct3 {
                0 | 4 => 1, // LB, LBU
                1 | 5 => 2, // LH, LHU
                2 | 6 => 4, // LW, LWU
                3 => 8,     // LD
                _ => return None,
            };
            access(rs1, imm_i, size, MemAccessKind::Load)
        }
        OP_STORE => {
            let size = match funct3 {
                0 => 1, // SB
                1 => 2, // SH
                2 => 4, // SW
                3 => 8, // SD
                _ => return None,
            };
            access(rs1, imm_s, size, MemAccessKind::Store)
        }
        OP_LOAD_FP => match funct3 {
            2 => access(rs1, imm_i, 4, MemAccessKind::Load), // FLW
            3 => access(rs1, imm_i, 8, MemAccessKind::Load), // FLD
            _ => None,
        },
        OP_STORE_FP => match funct3 {
            2 => access(rs1, imm_s, 4, MemAccessKind::Store), // FSW
            3 => access(rs1, imm_s, 8, MemAccessKind::Store), // FSD
            _ => None,
        },
        OP_AMO => {
            let size = match funct3 {
                2 => 4,
                3 => 8,
                _ => return None,
            };
            let kind = match insn >> 27 {
                0b00010 if rs2 == 0 => MemAccessKind::Load, // LR
                0b00011 => MemAccessKind::Store,            // SC
                // AMOADD, AMOSWAP, AMOXOR, AMOOR, AMOAND, AMOMIN, AMOMAX, AMOMINU, AMOMAXU
                0b00000 | 0b00001 | 0b00100 | 0b01000 | 0b01100 | 0b10000 | 0b10100 | 0b11000
                | 0b11100 => MemAccessKind::Amo,
                _ => return None,
            };
            access(rs1, 0, size, kind)
        }
        OP_SYSTEM if funct3 == 0b100 => hypervisor(insn, rs1, rs2, rd),
        _ => None,
    }
}

/// HLV, HLVX and HSV (funct3 = 100 of SYSTEM; funct7 = 011 0ss w, `ss` the size, `w` set
/// for HSV).
fn hypervisor(insn: u32, rs1: u32, rs2: u32, rd: u32) -> Option<MemAccess> {
    let funct7 = insn >> 25;
    if funct7 >> 3 != 0b0110 {
        return None;
    }
    let size = 1u8 << ((funct7 >> 1) & 3);
    if funct7 & 1 != 0 {
        // HSV.B/H/W/D: rd = 0.
        return (rd == 0).then_some(MemAccess {
            base: rs1 as u8,
            offset: 0,
            size,
            kind: MemAccessKind::Store,
        });
    }
    let ok = match rs2 {
        0 => true,                  // HLV.B/H/W/D
        1 => size < 8,              // HLV.BU/HU/WU
        3 => matches!(size, 2 | 4), // HLVX.HU/WU
        _ => false,
    };
    ok.then_some(MemAccess {
        base: rs1 as u8,
        offset: 0,
        size,
        kind: MemAccessKind::Load,
    })
}

/// Bits `hi..=lo` of `v`, placed at bit `at`.
fn field(v: u32, hi: u32, lo: u32, at: u32) -> i64 {
    i64::from(((v >> lo) & ((1 << (hi - lo + 1)) - 1)) << at)
}

/// A 16-bit (RVC) instruction.
fn compressed(c: u16) -> Option<MemAccess> {
    let c = u32::from(c);
    let funct3 = c >> 13;
    // The 3-bit register fields (rs1', rd', rs2') name x8-x15.
    let rs1p = 8 + ((c >> 7) & 7);
    let rd = (c >> 7) & 31;
    use MemAccessKind::{Load, Store};
    match (c & 3, funct3) {
        // Quadrant 0: register-based, rs1' in [9:7], offset[5:3] in [12:10].
        (0b00, 0b001 | 0b011 | 0b101 | 0b111) => {
            // C.FLD, C.LD, C.FSD, C.SD: offset[7:6] in [6:5].
            let off = field(c, 12, 10, 3) | field(c, 6, 5, 6);
            let kind = if funct3 < 0b100 { Load } else { Store };
            access(rs1p, off, 8, kind)
        }
        (0b00, 0b010 | 0b110) => {
            // C.LW, C.SW: offset[2] in [6], offset[6] in [5].
            let off = field(c, 12, 10, 3) | field(c, 6, 6, 2) | field(c, 5, 5, 6);
            let kind = if funct3 < 0b100 { Load } else { Store };
            access(rs1p, off, 4, kind)
        }
        // Quadrant 2: stack-pointer-based.
        (0b10, 0b001 | 0b011) => {
            // C.FLDSP, C.LDSP: offset[5] in [12], [4:3] in [6:5], [8:6] in [4:2]; C.LDSP
            // with rd = x0 is reserved.
            if funct3 == 0b011 && rd == 0 {
                return None;
            }
            let off = field(c, 12, 12, 5) | field(c, 6, 5, 3) | field(c, 4, 2, 6);
            access(2, off, 8, Load)
        }
        (0b10, 0b010) => {
            // C.LWSP: offset[5] in [12], [4:2] in [6:4], [7:6] in [3:2]; rd = x0 reserved.
            if rd == 0 {
                return None;
            }
            let off = field(c, 12, 12, 5) | field(c, 6, 4, 2) | field(c, 3, 2, 6);
            access(2, off, 4, Load)
        }
        (0b10, 0b101 | 0b111) => {
            // C.FSDSP, C.SDSP: offset[5:3] in [12:10], [8:6] in [9:7].
            let off = field(c, 12, 10, 3) | field(c, 9, 7, 6);
            access(2, off, 8, Store)
        }
        (0b10, 0b110) => {
            // C.SWSP: offset[5:2] in [12:9], [7:6] in [8:7].
            let off = field(c, 12, 9, 2) | field(c, 8, 7, 6);
            access(2, off, 4, Store)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MemAccessKind::{Amo, Load, Store};

    fn acc(base: u8, offset: i64, size: u8, kind: MemAccessKind) -> Option<MemAccess> {
        Some(MemAccess {
            base,
            offset,
            size,
            kind,
        })
    }

    /// I-type: imm[11:0] rs1 funct3 rd opcode.
    fn i_type(imm: i32, rs1: u32, funct3: u32, rd: u32, op: u32) -> u32 {
        ((imm as u32 & 0xfff) << 20) | (rs1 << 15) | (funct3 << 12) | (rd << 7) | op
    }
    /// S-type: imm[11:5] rs2 rs1 funct3 imm[4:0] opcode.
    fn s_type(imm: i32, rs2: u32, rs1: u32, funct3: u32, op: u32) -> u32 {
        let imm = imm as u32 & 0xfff;
        ((imm >> 5) << 25) | (rs2 << 20) | (rs1 << 15) | (funct3 << 12) | ((imm & 31) << 7) | op
    }
    /// R-type of the A extension: funct5 aq rl rs2 rs1 funct3 rd opcode.
    fn amo(funct5: u32, rs2: u32, rs1: u32, funct3: u32, rd: u32) -> u32 {
        (funct5 << 27) | (1 << 26) | (rs2 << 20) | (rs1 << 15) | (funct3 << 12) | (rd << 7) | 0x2f
    }

    #[test]
    fn rv64i_loads() {
        let sizes = [(0, 1), (1, 2), (2, 4), (3, 8), (4, 1), (5, 2), (6, 4)];
        for (f3, size) in sizes {
            assert_eq!(
                memory_access(i_type(-8, 5, f3, 6, 0x03)),
                acc(5, -8, size, Load),
                "funct3 {f3}"
            );
            assert_eq!(
                memory_access(i_type(2047, 31, f3, 0, 0x03)),
                acc(31, 2047, size, Load)
            );
            assert_eq!(
                memory_access(i_type(-2048, 0, f3, 1, 0x03)),
                acc(0, -2048, size, Load)
            );
        }
        // funct3 = 7 is reserved.
        assert_eq!(memory_access(i_type(0, 5, 7, 6, 0x03)), None);
        // ld a0, 16(sp) = 0x01013503
        assert_eq!(memory_access(0x0101_3503), acc(2, 16, 8, Load));
    }

    #[test]
    fn rv64i_stores() {
        for (f3, size) in [(0, 1), (1, 2), (2, 4), (3, 8)] {
            assert_eq!(
                memory_access(s_type(-1, 7, 9, f3, 0x23)),
                acc(9, -1, size, Store)
            );
            assert_eq!(
                memory_access(s_type(-2048, 7, 9, f3, 0x23)),
                acc(9, -2048, size, Store)
            );
            assert_eq!(
                memory_access(s_type(0x7e5, 7, 9, f3, 0x23)),
                acc(9, 0x7e5, size, Store)
            );
        }
        assert_eq!(memory_access(s_type(0, 7, 9, 4, 0x23)), None);
        // sd ra, -24(s0) = 0xfe143423
        assert_eq!(memory_access(0xfe14_3423), acc(8, -24, 8, Store));
    }

    #[test]
    fn float_loads_and_stores() {
        assert_eq!(
            memory_access(i_type(-4, 10, 2, 1, 0x07)),
            acc(10, -4, 4, Load)
        );
        assert_eq!(
            memory_access(i_type(24, 10, 3, 1, 0x07)),
            acc(10, 24, 8, Load)
        );
        assert_eq!(
            memory_access(s_type(-36, 3, 11, 2, 0x27)),
            acc(11, -36, 4, Store)
        );
        assert_eq!(
            memory_access(s_type(100, 3, 11, 3, 0x27)),
            acc(11, 100, 8, Store)
        );
        // FLH/FSH, FLQ/FSQ and vector loads/stores: not covered.
        for f3 in [0, 1, 4, 5, 6, 7] {
            assert_eq!(memory_access(i_type(0, 10, f3, 1, 0x07)), None);
            assert_eq!(memory_access(s_type(0, 3, 11, f3, 0x27)), None);
        }
    }

    #[test]
    fn atomics() {
        for (f3, size) in [(2, 4), (3, 8)] {
            assert_eq!(
                memory_access(amo(0b00010, 0, 12, f3, 5)),
                acc(12, 0, size, Load)
            );
            // LR with rs2 != 0 is reserved.
            assert_eq!(memory_access(amo(0b00010, 1, 12, f3, 5)), None);
            assert_eq!(
                memory_access(amo(0b00011, 4, 12, f3, 5)),
                acc(12, 0, size, Store)
            );
            for f5 in [
                0b00000, 0b00001, 0b00100, 0b01000, 0b01100, 0b10000, 0b10100, 0b11000, 0b11100,
            ] {
                assert_eq!(memory_access(amo(f5, 4, 13, f3, 5)), acc(13, 0, size, Amo));
            }
            // AMOCAS (Zacas) and unassigned funct5 values.
            assert_eq!(memory_access(amo(0b00101, 4, 13, f3, 5)), None);
            assert_eq!(memory_access(amo(0b11111, 4, 13, f3, 5)), None);
        }
        // Byte and halfword AMOs (Zabha) and funct3 beyond D.
        for f3 in [0, 1, 4, 7] {
            assert_eq!(memory_access(amo(0b00001, 4, 13, f3, 5)), None);
        }
        // amoadd.w a0, a1, (a2) = 0x00b6252f
        assert_eq!(memory_access(0x00b6_252f), acc(12, 0, 4, Amo));
    }

    #[test]
    fn hypervisor_loads_and_stores() {
        let hlv = |funct7: u32, rs2: u32, rs1: u32, rd: u32| {
            (funct7 << 25) | (rs2 << 20) | (rs1 << 15) | (0b100 << 12) | (rd << 7) | 0x73
        };
        // HLV.B, HLV.BU, HLV.H, HLV.HU, HLVX.HU, HLV.W, HLV.WU, HLVX.WU, HLV.D
        let loads = [
            (0b0110000, 0, 1),
            (0b0110000, 1, 1),
            (0b0110010, 0, 2),
            (0b0110010, 1, 2),
            (0b0110010, 3, 2),
            (0b0110100, 0, 4),
            (0b0110100, 1, 4),
            (0b0110100, 3, 4),
            (0b0110110, 0, 8),
        ];
        for (f7, rs2, size) in loads {
            assert_eq!(memory_access(hlv(f7, rs2, 14, 9)), acc(14, 0, size, Load));
        }
        // HLV.DU, HLVX.BU, HLVX.DU and other rs2 values do not exist.
        assert_eq!(memory_access(hlv(0b0110110, 1, 14, 9)), None);
        assert_eq!(memory_access(hlv(0b0110000, 3, 14, 9)), None);
        assert_eq!(memory_access(hlv(0b0110110, 3, 14, 9)), None);
        assert_eq!(memory_access(hlv(0b0110000, 2, 14, 9)), None);
        // HSV.B/H/W/D
        for (f7, size) in [
            (0b0110001, 1),
            (0b0110011, 2),
            (0b0110101, 4),
            (0b0110111, 8),
        ] {
            assert_eq!(memory_access(hlv(f7, 20, 15, 0)), acc(15, 0, size, Store));
            assert_eq!(memory_access(hlv(f7, 20, 15, 1)), None);
        }
        // HFENCE.VVMA (funct3 = 0) and CSR instructions are not accesses.
        assert_eq!(memory_access(0x2200_0073), None);
        assert_eq!(memory_access(0x1000_4073 | (0b0110000 << 25)), None);
        assert_eq!(memory_access(0x3400_2573), None); // csrr a0, mscratch
    }

    #[test]
    fn compressed_register_based() {
        // c.lw a0, 0(a1): 010 uimm[5:3] rs1' uimm[2|6] rd' 00
        assert_eq!(memory_access(0x4188), acc(11, 0, 4, Load));
        // c.lw x8, 124(x15): uimm = 0b1111100: [5:3]=111, [2]=1, [6]=1
        let c_lw = (0b010 << 13) | (0b111 << 10) | (0b111 << 7) | (0b11 << 5);
        assert_eq!(memory_access(c_lw), acc(15, 124, 4, Load));
        // c.lw x8, 4(x8): only uimm[2]
        assert_eq!(memory_access((0b010 << 13) | (1 << 6)), acc(8, 4, 4, Load));
        // c.lw x8, 64(x8): only uimm[6]
        assert_eq!(memory_access((0b010 << 13) | (1 << 5)), acc(8, 64, 4, Load));
        // c.sw: same layout, funct3 110
        assert_eq!(memory_access(c_lw | (0b100 << 13)), acc(15, 124, 4, Store));
        // c.ld / c.fld / c.sd / c.fsd: uimm[5:3] in [12:10], uimm[7:6] in [6:5]; 248 max.
        let wide = (0b111 << 10) | (0b010 << 7) | (0b11 << 5);
        for (f3, kind) in [(0b001, Load), (0b011, Load), (0b101, Store), (0b111, Store)] {
            assert_eq!(memory_access((f3 << 13) | wide), acc(10, 248, 8, kind));
            assert_eq!(
                memory_access((f3 << 13) | (1 << 10) | (1 << 7)),
                acc(9, 8, 8, kind)
            );
            assert_eq!(memory_access((f3 << 13) | (1 << 6)), acc(8, 128, 8, kind));
        }
        // c.ld a5, 8(a0) = 0x651c ... check the assembler's encoding: 011 001 010 00 111 00
        assert_eq!(memory_access(0x651c), acc(10, 8, 8, Load));
        // c.addi4spn, the reserved funct3 100 (Zcb) and c.addi are not accesses.
        assert_eq!(memory_access(0x0040), None);
        assert_eq!(memory_access(0x8000), None);
        assert_eq!(memory_access(0x0505), None);
        assert_eq!(memory_access(0), None);
    }

    #[test]
    fn compressed_stack_pointer_based() {
        // c.lwsp rd, uimm(sp): 010 uimm[5] rd uimm[4:2|7:6] 10; 252 max.
        let lwsp = (0b010 << 13) | (1 << 12) | (5 << 7) | (0b111 << 4) | (0b11 << 2) | 2;
        assert_eq!(memory_access(lwsp), acc(2, 252, 4, Load));
        assert_eq!(
            memory_access((0b010 << 13) | (5 << 7) | (1 << 4) | 2),
            acc(2, 4, 4, Load)
        );
        assert_eq!(
            memory_access((0b010 << 13) | (5 << 7) | (1 << 2) | 2),
            acc(2, 64, 4, Load)
        );
        assert_eq!(memory_access(lwsp & !(31 << 7)), None); // rd = x0 reserved
                                                            // c.ldsp / c.fldsp: 0x1 uimm[5] rd uimm[4:3|8:6] 10; 504 max.
        let ldsp = (1 << 12) | (5 << 7) | (0b11 << 5) | (0b111 << 2) | 2;
        assert_eq!(memory_access((0b011 << 13) | ldsp), acc(2, 504, 8, Load));
        assert_eq!(memory_access((0b001 << 13) | ldsp), acc(2, 504, 8, Load));
        assert_eq!(
            memory_access((0b011 << 13) | (5 << 7) | (1 << 2) | 2),
            acc(2, 64, 8, Load)
        );
        assert_eq!(memory_access((0b011 << 13) | (ldsp & !(31 << 7))), None);
        // c.fldsp f0 is fine.
        assert_eq!(
            memory_access((0b001 << 13) | (ldsp & !(31 << 7))),
            acc(2, 504, 8, Load)
        );
        // c.ldsp ra, 8(sp) = 0x60a2
        assert_eq!(memory_access(0x60a2), acc(2, 8, 8, Load));
        // c.swsp: 110 uimm[5:2|7:6] rs2 10; 252 max.
        let swsp = (0b1111 << 9) | (0b11 << 7) | (7 << 2) | 2;
        assert_eq!(memory_access((0b110 << 13) | swsp), acc(2, 252, 4, Store));
        assert_eq!(
            memory_access((0b110 << 13) | (1 << 9) | 2),
            acc(2, 4, 4, Store)
        );
        // c.sdsp / c.fsdsp: x11 uimm[5:3|8:6] rs2 10; 504 max.
        let sdsp = (0b111 << 10) | (0b111 << 7) | (7 << 2) | 2;
        assert_eq!(memory_access((0b111 << 13) | sdsp), acc(2, 504, 8, Store));
        assert_eq!(memory_access((0b101 << 13) | sdsp), acc(2, 504, 8, Store));
        assert_eq!(
            memory_access((0b111 << 13) | (1 << 7) | 2),
            acc(2, 64, 8, Store)
        );
        // c.sdsp ra, 8(sp) = 0xe406
        assert_eq!(memory_access(0xe406), acc(2, 8, 8, Store));
        // Quadrant 1 and the other quadrant-2 forms (c.slli, c.jr/c.mv/c.add) are not.
        assert_eq!(memory_access(0x0506), None);
        assert_eq!(memory_access(0x8082), None); // ret
    }

    #[test]
    fn only_the_low_half_of_a_compressed_instruction_counts() {
        assert_eq!(memory_access(0xdead_0000 | 0x60a2), acc(2, 8, 8, Load));
    }

    #[test]
    fn other_instructions_are_not_accesses_and_nothing_panics() {
        assert_eq!(memory_access(0x0000_0013), None); // nop
        assert_eq!(memory_access(0x0000_006f), None); // jal x0, 0
        assert_eq!(memory_access(0xffff_ffff), None);
        let mut x: u32 = 0x1234_5678;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if let Some(a) = memory_access(x) {
                assert!(a.base < 32 && matches!(a.size, 1 | 2 | 4 | 8));
                assert!((-2048..=2047).contains(&a.offset) || (0..512).contains(&a.offset));
            }
        }
    }

    #[test]
    fn the_address_wraps() {
        let a = memory_access(i_type(-8, 5, 3, 6, 0x03)).unwrap();
        assert_eq!(a.address(0x1000), 0xff8);
        assert_eq!(a.address(4), u64::MAX - 3);
    }
}
