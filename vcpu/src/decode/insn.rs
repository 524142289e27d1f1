//! The compact decoded form ([`Insn`], [`Op`]) and what every decoder applies to it
//! ([`finish`]: the CTR transfer type of jumps, the `x0` sink). A leaf: the decoders import
//! it, it imports none of them.

/// The sink register that stands in for `x0` as a destination.
pub const X0_SINK: u8 = 32;

/// Floating-point formats (the `fmt` field of OP-FP).
pub const FMT_S: u8 = 0;
/// Double precision.
pub const FMT_D: u8 = 1;

macro_rules! ops {
    ($($(#[$m:meta])* $name:ident),* $(,)?) => {
        /// Internal operation codes, one per instruction (compressed forms map to the base op).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
        #[repr(u8)]
        #[allow(missing_docs)]
        pub enum Op { #[default] $($(#[$m])* $name),* }
    };
}

ops! {
    Illegal,
    // The operations the performance monitor observes (loads, stores, control transfers,
    // multiply and divide) come first, up to `Op::Lui`: its loop variant tells them apart with
    // one comparison (see `pmu::events::FIRST_QUIET`).
    Jal, Jalr, Beq, Bne, Blt, Bge, Bltu, Bgeu,
    Lb, Lh, Lw, Ld, Lbu, Lhu, Lwu, Sb, Sh, Sw, Sd,
    Mret, Sret,
    // H: virtual-machine loads and stores
    HlvB, HlvBu, HlvH, HlvHu, HlvxHu, HlvW, HlvWu, HlvxWu, HlvD, HsvB, HsvH, HsvW, HsvD,
    // M
    Mul, Mulh, Mulhsu, Mulhu, Div, Divu, Rem, Remu, Mulw, Divw, Divuw, Remw, Remuw,
    // A (width in `fmt`: 2 = word, 3 = doubleword)
    Lr, Sc, AmoSwap, AmoAdd, AmoXor, AmoAnd, AmoOr, AmoMin, AmoMax, AmoMinu, AmoMaxu,
    // F and D loads and stores
    Flw, Fld, Fsw, Fsd,
    // RV64I
    Lui, Auipc,
    Addi, Slti, Sltiu, Xori, Ori, Andi, Slli, Srli, Srai,
    Add, Sub, Sll, Slt, Sltu, Xor, Srl, Sra, Or, And,
    Addiw, Slliw, Srliw, Sraiw, Addw, Subw, Sllw, Srlw, Sraw,
    Fence, Ecall, Ebreak,
    // Zifencei
    FenceI,
    // Privileged
    Wfi, SfenceVma,
    // H: hypervisor fences
    HfenceVvma, HfenceGvma,
    // Zicsr
    Csrrw, Csrrs, Csrrc, Csrrwi, Csrrsi, Csrrci,
    // F and D (precision in `fmt`)
    Fmadd, Fmsub, Fnmsub, Fnmadd,
    Fadd, Fsub, Fmul, Fdiv, Fsqrt, Fsgnj, Fsgnjn, Fsgnjx, Fmin, Fmax,
    /// FCVT between S and D: `fmt` is the destination, the source is the other one.
    FcvtFF,
    Feq, Flt, Fle, Fclass,
    /// FCVT.{W,WU,L,LU}.fmt: the integer format is in `rs2` (0 W, 1 WU, 2 L, 3 LU).
    FcvtIF,
    /// FCVT.fmt.{W,WU,L,LU}: the integer format is in `rs2`.
    FcvtFI,
    /// FMV.X.W / FMV.X.D
    FmvXF,
    /// FMV.W.X / FMV.D.X
    FmvFX,
    /// Smctr/Ssctr (last: a rare op kept out of the way of the hot dispatch).
    Sctrclr,
}

/// A decoded instruction: 16 bytes, `Copy`, no pointers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Insn {
    /// Operation.
    pub op: Op,
    /// Destination register (32 = the `x0` sink for integer destinations).
    pub rd: u8,
    /// First source register (or the 5-bit immediate of CSRR*I).
    pub rs1: u8,
    /// Second source register (or the integer format of FCVT).
    pub rs2: u8,
    /// Third source register (FMA).
    pub rs3: u8,
    /// Rounding-mode field of FP instructions.
    pub rm: u8,
    /// Length in bytes: 2 or 4.
    pub len: u8,
    /// FP precision ([`FMT_S`]/[`FMT_D`]), AMO width (2 or 3, log2 bytes), or for JAL and
    /// JALR the CTR transfer type (Smctr table 10, see [`vcpu_api::ctr::jump_type`]).
    pub fmt: u8,
    /// Sign-extended immediate, shift amount, or CSR number.
    pub imm: i32,
    /// The raw bits fetched. For a compressed instruction the upper 16 bits may hold the
    /// following halfword (the decode cache compares all 32 fetched bits, which avoids
    /// masking on the hot path); [`Insn::bits`] gives the instruction's own bits.
    pub raw: u32,
}

impl Insn {
    /// The instruction's own bits: 16 significant bits for compressed instructions.
    #[inline]
    pub fn bits(&self) -> u32 {
        if self.len == 2 {
            self.raw & 0xffff
        } else {
            self.raw
        }
    }

    pub(crate) fn illegal(raw: u32, len: u8) -> Insn {
        Insn {
            op: Op::Illegal,
            raw,
            len,
            ..Insn::default()
        }
    }
}

/// Whether an op writes integer register `rd` (so `x0` must be redirected to the sink).
pub(crate) fn writes_xrd(op: Op) -> bool {
    use Op::*;
    // F/D computations write an f register, but comparisons, FCLASS, FCVT to an integer and
    // FMV.X write rd.
    let float_to_f = float_compute(op) && !matches!(op, Feq | Flt | Fle | Fclass | FcvtIF | FmvXF);
    let no_rd = matches!(
        op,
        Illegal
            | Beq
            | Bne
            | Blt
            | Bge
            | Bltu
            | Bgeu
            | Sb
            | Sh
            | Sw
            | Sd
            | Fence
            | FenceI
            | Ecall
            | Ebreak
            | Mret
            | Sret
            | Wfi
            | SfenceVma
            | Sctrclr
            | HsvB
            | HsvH
            | HsvW
            | HsvD
            | HfenceVvma
            | HfenceGvma
            | Flw
            | Fld
            | Fsw
            | Fsd
    );
    !(no_rd || float_to_f)
}

/// Whether `op` is an F or D instruction other than a load or store (the computational,
/// conversion, comparison, classification and move instructions of unpriv. spec chapters
/// 20 "F" and 21 "D").
pub(crate) fn float_compute(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Fmadd
            | Fmsub
            | Fnmsub
            | Fnmadd
            | Fadd
            | Fsub
            | Fmul
            | Fdiv
            | Fsqrt
            | Fsgnj
            | Fsgnjn
            | Fsgnjx
            | Fmin
            | Fmax
            | FcvtFF
            | Feq
            | Flt
            | Fle
            | Fclass
            | FcvtIF
            | FcvtFI
            | FmvXF
            | FmvFX
    )
}

pub(crate) fn finish(mut i: Insn) -> Insn {
    if matches!(i.op, Op::Jal | Op::Jalr) {
        i.fmt = vcpu_api::ctr::jump_type(i.op == Op::Jalr, i.rd, i.rs1);
    }
    if i.rd == 0 && writes_xrd(i.op) {
        i.rd = X0_SINK;
    }
    i
}
