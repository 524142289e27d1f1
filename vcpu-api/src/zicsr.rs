//! Decoding Zicsr instructions for a hypervisor that emulates CSR accesses which trapped
//! (virtual-instruction exits): which CSR, which operand, and the read/write rules of the
//! Zicsr chapter (CSRRS/CSRRC with `rs1` = x0 and CSRRSI/CSRRCI with `uimm` = 0 read
//! without writing). Used by `ctr-virt` (`sctrdepth`) and `pmu-virt` (delegated counters,
//! Sspesa).

use crate::Vcpu;

/// How a CSR instruction changes the CSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrOp {
    /// CSRRW, CSRRWI: always writes.
    Write,
    /// CSRRS, CSRRSI: sets bits; writes only with a nonzero `rs1` field.
    Set,
    /// CSRRC, CSRRCI: clears bits; writes only with a nonzero `rs1` field.
    Clear,
}

/// A decoded Zicsr instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsrInsn {
    /// The CSR number.
    pub csr: u16,
    /// Destination register.
    pub rd: usize,
    /// The `rs1` field: a register, or the immediate for the `I` forms.
    pub rs1: usize,
    /// Whether `rs1` is a 5-bit immediate (`uimm`).
    pub imm: bool,
    /// The operation.
    pub op: CsrOp,
}

impl CsrInsn {
    /// Decodes `insn` if it is a CSR instruction (SYSTEM, funct3 1-3 or 5-7).
    pub fn decode(insn: u32) -> Option<CsrInsn> {
        if insn & 0x7f != 0x73 {
            return None;
        }
        let funct3 = (insn >> 12) & 7;
        let op = match funct3 & 3 {
            1 => CsrOp::Write,
            2 => CsrOp::Set,
            3 => CsrOp::Clear,
            _ => return None,
        };
        Some(CsrInsn {
            csr: (insn >> 20) as u16,
            rd: ((insn >> 7) & 0x1f) as usize,
            rs1: ((insn >> 15) & 0x1f) as usize,
            imm: funct3 & 4 != 0,
            op,
        })
    }

    /// Whether the instruction writes the CSR (Zicsr: CSRRS/CSRRC with `rs1` = x0 and
    /// CSRRSI/CSRRCI with `uimm` = 0 do not).
    pub fn writes(&self) -> bool {
        self.op == CsrOp::Write || self.rs1 != 0
    }

    /// The source operand: `x[rs1]` or the zero-extended `uimm`.
    pub fn operand(&self, vcpu: &dyn Vcpu) -> u64 {
        if self.imm {
            self.rs1 as u64
        } else {
            vcpu.xreg(self.rs1)
        }
    }

    /// The CSR's new value from its old one and the operand.
    pub fn apply(&self, old: u64, operand: u64) -> u64 {
        match self.op {
            CsrOp::Write => operand,
            CsrOp::Set => old | operand,
            CsrOp::Clear => old & !operand,
        }
    }

    /// Emulates the instruction on a CSR whose value is `old`: `rd` gets `old` and the CSR's
    /// new value is returned if the instruction writes it (`None` for a read).
    pub fn emulate(&self, vcpu: &mut dyn Vcpu, old: u64) -> Option<u64> {
        let new = self.writes().then(|| self.apply(old, self.operand(vcpu)));
        if self.rd != 0 {
            vcpu.set_xreg(self.rd, old);
        }
        new
    }
}
