// Binary literals are grouped by instruction field (funct3, registers, opcode), not by nibble.
#![allow(clippy::unusual_byte_groupings)]
//! Shared helpers for the `vcpu` integration tests: a tiny hand-written assembler (encodings
//! taken from the RISC-V unprivileged and privileged specifications' instruction listings)
//! and a harness that runs code on a hart over 1 MiB of RAM at 0x8000_0000.
#![allow(dead_code)]

use vcpu::{Hart, HartConfig, PrivilegeMode, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

// ---------------------------------------------------------------------------------------------
// Memory map used by the tests
// ---------------------------------------------------------------------------------------------

pub const RAM_BASE: u64 = 0x8000_0000;

// Sv39 page-table entry bits and the tables the translation tests build (at fixed places
// in RAM, clear of the code and data areas).
pub const V: u64 = 1 << 0;
pub const R: u64 = 1 << 1;
pub const W: u64 = 1 << 2;
pub const X: u64 = 1 << 3;
pub const U: u64 = 1 << 4;
pub const A: u64 = 1 << 6;
pub const D: u64 = 1 << 7;
pub const PT_ROOT: u64 = RAM_BASE + 0x2_0000;
pub const PT_L1: u64 = RAM_BASE + 0x2_1000;
pub const PT_L0: u64 = RAM_BASE + 0x2_2000;
pub const RAM_SIZE: usize = 1 << 20;
/// Boot stub: `csrw mtvec, x31; j CODE`.
pub const BOOT: u64 = RAM_BASE;
/// Default M-mode trap handler: a single `wfi` (mie = 0, so the hart exits with `Wfi`).
pub const TRAP: u64 = RAM_BASE + 0x800;
/// Where test code goes.
pub const CODE: u64 = RAM_BASE + 0x1000;
/// Scratch data.
pub const DATA: u64 = RAM_BASE + 0x1_0000;

// CSR numbers (privileged spec, CSR listing).
pub const FFLAGS: u32 = 0x001;
pub const FRM: u32 = 0x002;
pub const FCSR: u32 = 0x003;
pub const SSTATUS: u32 = 0x100;
pub const SIE: u32 = 0x104;
pub const STVEC: u32 = 0x105;
pub const SCOUNTEREN: u32 = 0x106;
pub const SSCRATCH: u32 = 0x140;
pub const SEPC: u32 = 0x141;
pub const SCAUSE: u32 = 0x142;
pub const STVAL: u32 = 0x143;
pub const SIP: u32 = 0x144;
pub const SATP: u32 = 0x180;
pub const MSTATUS: u32 = 0x300;
pub const MISA: u32 = 0x301;
pub const MEDELEG: u32 = 0x302;
pub const MIDELEG: u32 = 0x303;
pub const MIE: u32 = 0x304;
pub const MTVEC: u32 = 0x305;
pub const MCOUNTEREN: u32 = 0x306;
pub const MSCRATCH: u32 = 0x340;
pub const MEPC: u32 = 0x341;
pub const MCAUSE: u32 = 0x342;
pub const MTVAL: u32 = 0x343;
pub const MIP: u32 = 0x344;
pub const MCYCLE: u32 = 0xB00;
pub const MINSTRET: u32 = 0xB02;
pub const CYCLE: u32 = 0xC00;
pub const TIME: u32 = 0xC01;
pub const INSTRET: u32 = 0xC02;
pub const MVENDORID: u32 = 0xF11;
pub const MHARTID: u32 = 0xF14;

// mstatus bits.
pub const MS_SIE: u64 = 1 << 1;
pub const MS_MIE: u64 = 1 << 3;
pub const MS_SPIE: u64 = 1 << 5;
pub const MS_MPIE: u64 = 1 << 7;
pub const MS_SPP: u64 = 1 << 8;
pub const MS_MPP: u64 = 3 << 11;
pub const MS_FS: u64 = 3 << 13;
pub const MS_MPRV: u64 = 1 << 17;
pub const MS_SUM: u64 = 1 << 18;
pub const MS_MXR: u64 = 1 << 19;
pub const MS_SD: u64 = 1 << 63;

// ---------------------------------------------------------------------------------------------
// 32-bit encodings
// ---------------------------------------------------------------------------------------------

pub const OP_LOAD: u32 = 0x03;
pub const OP_LOAD_FP: u32 = 0x07;
pub const OP_MISC_MEM: u32 = 0x0f;
pub const OP_IMM: u32 = 0x13;
pub const OP_AUIPC: u32 = 0x17;
pub const OP_IMM_32: u32 = 0x1b;
pub const OP_STORE: u32 = 0x23;
pub const OP_STORE_FP: u32 = 0x27;
pub const OP_AMO: u32 = 0x2f;
pub const OP_OP: u32 = 0x33;
pub const OP_LUI: u32 = 0x37;
pub const OP_OP_32: u32 = 0x3b;
pub const OP_MADD: u32 = 0x43;
pub const OP_MSUB: u32 = 0x47;
pub const OP_NMSUB: u32 = 0x4b;
pub const OP_NMADD: u32 = 0x4f;
pub const OP_FP: u32 = 0x53;
pub const OP_BRANCH: u32 = 0x63;
pub const OP_JALR: u32 = 0x67;
pub const OP_JAL: u32 = 0x6f;
pub const OP_SYSTEM: u32 = 0x73;

pub fn r_type(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, opc: u32) -> u32 {
    assert!(f7 < 128 && rs2 < 32 && rs1 < 32 && f3 < 8 && rd < 32 && opc < 128);
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc
}

pub fn i_type(imm: i32, rs1: u32, f3: u32, rd: u32, opc: u32) -> u32 {
    assert!(
        (-2048..=4095).contains(&imm),
        "I immediate {imm} out of range"
    );
    ((imm as u32 & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | opc
}

pub fn s_type(imm: i32, rs2: u32, rs1: u32, f3: u32, opc: u32) -> u32 {
    assert!(
        (-2048..=2047).contains(&imm),
        "S immediate {imm} out of range"
    );
    let i = imm as u32;
    (((i >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((i & 0x1f) << 7) | opc
}

pub fn b_type(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    assert!(
        (-4096..=4094).contains(&imm) && imm % 2 == 0,
        "B immediate {imm} out of range"
    );
    let i = imm as u32;
    (((i >> 12) & 1) << 31)
        | (((i >> 5) & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | (((i >> 1) & 0xf) << 8)
        | (((i >> 11) & 1) << 7)
        | OP_BRANCH
}

pub fn u_type(imm20: u32, rd: u32, opc: u32) -> u32 {
    assert!(imm20 < (1 << 20));
    (imm20 << 12) | (rd << 7) | opc
}

pub fn j_type(imm: i32, rd: u32) -> u32 {
    assert!(
        (-(1 << 20)..(1 << 20)).contains(&imm) && imm % 2 == 0,
        "J immediate {imm} out of range"
    );
    let i = imm as u32;
    (((i >> 20) & 1) << 31)
        | (((i >> 1) & 0x3ff) << 21)
        | (((i >> 11) & 1) << 20)
        | (((i >> 12) & 0xff) << 12)
        | (rd << 7)
        | OP_JAL
}

// RV64I
pub fn lui(rd: u32, imm20: u32) -> u32 {
    u_type(imm20, rd, OP_LUI)
}
pub fn auipc(rd: u32, imm20: u32) -> u32 {
    u_type(imm20, rd, OP_AUIPC)
}
pub fn jal(rd: u32, off: i32) -> u32 {
    j_type(off, rd)
}
pub fn jalr(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm, rs1, 0, rd, OP_JALR)
}
pub fn beq(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(off, rs2, rs1, 0)
}
pub fn bne(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(off, rs2, rs1, 1)
}
pub fn blt(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(off, rs2, rs1, 4)
}
pub fn bge(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(off, rs2, rs1, 5)
}
pub fn bltu(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(off, rs2, rs1, 6)
}
pub fn bgeu(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(off, rs2, rs1, 7)
}

macro_rules! loads {
    ($($name:ident = $f3:expr),*) => {$(
        pub fn $name(rd: u32, rs1: u32, imm: i32) -> u32 { i_type(imm, rs1, $f3, rd, OP_LOAD) }
    )*};
}
loads!(lb = 0, lh = 1, lw = 2, ld = 3, lbu = 4, lhu = 5, lwu = 6);

macro_rules! stores {
    ($($name:ident = $f3:expr),*) => {$(
        /// `name rs2, imm(rs1)`
        pub fn $name(rs2: u32, rs1: u32, imm: i32) -> u32 { s_type(imm, rs2, rs1, $f3, OP_STORE) }
    )*};
}
stores!(sb = 0, sh = 1, sw = 2, sd = 3);

macro_rules! op_imms {
    ($($name:ident = $f3:expr),*) => {$(
        pub fn $name(rd: u32, rs1: u32, imm: i32) -> u32 { i_type(imm, rs1, $f3, rd, OP_IMM) }
    )*};
}
op_imms!(addi = 0, slti = 2, sltiu = 3, xori = 4, ori = 6, andi = 7);

pub fn slli(rd: u32, rs1: u32, sh: u32) -> u32 {
    assert!(sh < 64);
    i_type(sh as i32, rs1, 1, rd, OP_IMM)
}
pub fn srli(rd: u32, rs1: u32, sh: u32) -> u32 {
    assert!(sh < 64);
    i_type(sh as i32, rs1, 5, rd, OP_IMM)
}
pub fn srai(rd: u32, rs1: u32, sh: u32) -> u32 {
    assert!(sh < 64);
    i_type((0x400 | sh) as i32, rs1, 5, rd, OP_IMM)
}
pub fn addiw(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm, rs1, 0, rd, OP_IMM_32)
}
pub fn slliw(rd: u32, rs1: u32, sh: u32) -> u32 {
    assert!(sh < 32);
    i_type(sh as i32, rs1, 1, rd, OP_IMM_32)
}
pub fn srliw(rd: u32, rs1: u32, sh: u32) -> u32 {
    assert!(sh < 32);
    i_type(sh as i32, rs1, 5, rd, OP_IMM_32)
}
pub fn sraiw(rd: u32, rs1: u32, sh: u32) -> u32 {
    assert!(sh < 32);
    i_type((0x400 | sh) as i32, rs1, 5, rd, OP_IMM_32)
}

macro_rules! r_ops {
    ($opc:expr; $($name:ident = ($f7:expr, $f3:expr)),*) => {$(
        pub fn $name(rd: u32, rs1: u32, rs2: u32) -> u32 { r_type($f7, rs2, rs1, $f3, rd, $opc) }
    )*};
}
r_ops!(OP_OP; add = (0, 0), sub = (0x20, 0), sll = (0, 1), slt = (0, 2), sltu = (0, 3), xor = (0, 4),
    srl = (0, 5), sra = (0x20, 5), or = (0, 6), and = (0, 7),
    mul = (1, 0), mulh = (1, 1), mulhsu = (1, 2), mulhu = (1, 3), div = (1, 4), divu = (1, 5),
    rem = (1, 6), remu = (1, 7));
r_ops!(OP_OP_32; addw = (0, 0), subw = (0x20, 0), sllw = (0, 1), srlw = (0, 5), sraw = (0x20, 5),
    mulw = (1, 0), divw = (1, 4), divuw = (1, 5), remw = (1, 6), remuw = (1, 7));

pub fn nop() -> u32 {
    addi(0, 0, 0)
}
pub fn fence() -> u32 {
    0x0ff0_000f
}
pub fn fence_i() -> u32 {
    0x0000_100f
}

// SYSTEM
pub fn ecall() -> u32 {
    0x0000_0073
}
pub fn ebreak() -> u32 {
    0x0010_0073
}
pub fn mret() -> u32 {
    r_type(0x18, 2, 0, 0, 0, OP_SYSTEM)
}
pub fn sret() -> u32 {
    r_type(0x08, 2, 0, 0, 0, OP_SYSTEM)
}
pub fn wfi() -> u32 {
    r_type(0x08, 5, 0, 0, 0, OP_SYSTEM)
}
pub fn sfence_vma(rs1: u32, rs2: u32) -> u32 {
    r_type(0x09, rs2, rs1, 0, 0, OP_SYSTEM)
}
fn csr_insn(f3: u32, rd: u32, csr: u32, rs1: u32) -> u32 {
    assert!(csr < 4096 && rs1 < 32 && rd < 32);
    (csr << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | OP_SYSTEM
}
pub fn csrrw(rd: u32, csr: u32, rs1: u32) -> u32 {
    csr_insn(1, rd, csr, rs1)
}
pub fn csrrs(rd: u32, csr: u32, rs1: u32) -> u32 {
    csr_insn(2, rd, csr, rs1)
}
pub fn csrrc(rd: u32, csr: u32, rs1: u32) -> u32 {
    csr_insn(3, rd, csr, rs1)
}
pub fn csrrwi(rd: u32, csr: u32, uimm: u32) -> u32 {
    csr_insn(5, rd, csr, uimm)
}
pub fn csrrsi(rd: u32, csr: u32, uimm: u32) -> u32 {
    csr_insn(6, rd, csr, uimm)
}
pub fn csrrci(rd: u32, csr: u32, uimm: u32) -> u32 {
    csr_insn(7, rd, csr, uimm)
}
/// `csrr rd, csr`
pub fn csrr(rd: u32, csr: u32) -> u32 {
    csrrs(rd, csr, 0)
}
/// `csrw csr, rs1`
pub fn csrw(csr: u32, rs1: u32) -> u32 {
    csrrw(0, csr, rs1)
}

// A extension: funct5 values from the "A" instruction listing.
pub const AMO_ADD: u32 = 0x00;
pub const AMO_SWAP: u32 = 0x01;
pub const AMO_LR: u32 = 0x02;
pub const AMO_SC: u32 = 0x03;
pub const AMO_XOR: u32 = 0x04;
pub const AMO_OR: u32 = 0x08;
pub const AMO_AND: u32 = 0x0c;
pub const AMO_MIN: u32 = 0x10;
pub const AMO_MAX: u32 = 0x14;
pub const AMO_MINU: u32 = 0x18;
pub const AMO_MAXU: u32 = 0x1c;
/// AMO with aq = rl = 0; `width` is the funct3 (2 = W, 3 = D).
pub fn amo(f5: u32, width: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(f5 << 2, rs2, rs1, width, rd, OP_AMO)
}
pub fn lr_w(rd: u32, rs1: u32) -> u32 {
    amo(AMO_LR, 2, rd, rs1, 0)
}
pub fn lr_d(rd: u32, rs1: u32) -> u32 {
    amo(AMO_LR, 3, rd, rs1, 0)
}
pub fn sc_w(rd: u32, rs1: u32, rs2: u32) -> u32 {
    amo(AMO_SC, 2, rd, rs1, rs2)
}
pub fn sc_d(rd: u32, rs1: u32, rs2: u32) -> u32 {
    amo(AMO_SC, 3, rd, rs1, rs2)
}

// F and D.
pub const FMT_S: u32 = 0;
pub const FMT_D: u32 = 1;
pub const RNE: u32 = 0;
pub const RTZ: u32 = 1;
pub const RDN: u32 = 2;
pub const RUP: u32 = 3;
pub const RMM: u32 = 4;
pub const DYN: u32 = 7;
/// fflags bits.
pub const NV: u64 = 0x10;
pub const DZ: u64 = 0x08;
pub const OF: u64 = 0x04;
pub const UF: u64 = 0x02;
pub const NX: u64 = 0x01;

pub fn flw(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm, rs1, 2, rd, OP_LOAD_FP)
}
pub fn fld(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(imm, rs1, 3, rd, OP_LOAD_FP)
}
pub fn fsw(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s_type(imm, rs2, rs1, 2, OP_STORE_FP)
}
pub fn fsd(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s_type(imm, rs2, rs1, 3, OP_STORE_FP)
}
/// OP-FP: funct7 = funct5 << 2 | fmt.
pub fn fp_op(f5: u32, fmt: u32, rd: u32, rs1: u32, rs2: u32, rm: u32) -> u32 {
    r_type((f5 << 2) | fmt, rs2, rs1, rm, rd, OP_FP)
}
pub fn fadd(fmt: u32, rd: u32, rs1: u32, rs2: u32, rm: u32) -> u32 {
    fp_op(0x00, fmt, rd, rs1, rs2, rm)
}
pub fn fsub(fmt: u32, rd: u32, rs1: u32, rs2: u32, rm: u32) -> u32 {
    fp_op(0x01, fmt, rd, rs1, rs2, rm)
}
pub fn fmul(fmt: u32, rd: u32, rs1: u32, rs2: u32, rm: u32) -> u32 {
    fp_op(0x02, fmt, rd, rs1, rs2, rm)
}
pub fn fdiv(fmt: u32, rd: u32, rs1: u32, rs2: u32, rm: u32) -> u32 {
    fp_op(0x03, fmt, rd, rs1, rs2, rm)
}
pub fn fsqrt(fmt: u32, rd: u32, rs1: u32, rm: u32) -> u32 {
    fp_op(0x0b, fmt, rd, rs1, 0, rm)
}
pub fn fsgnj(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x04, fmt, rd, rs1, rs2, 0)
}
pub fn fsgnjn(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x04, fmt, rd, rs1, rs2, 1)
}
pub fn fsgnjx(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x04, fmt, rd, rs1, rs2, 2)
}
pub fn fmin(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x05, fmt, rd, rs1, rs2, 0)
}
pub fn fmax(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x05, fmt, rd, rs1, rs2, 1)
}
pub fn feq(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x14, fmt, rd, rs1, rs2, 2)
}
pub fn flt(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x14, fmt, rd, rs1, rs2, 1)
}
pub fn fle(fmt: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    fp_op(0x14, fmt, rd, rs1, rs2, 0)
}
pub fn fclass(fmt: u32, rd: u32, rs1: u32) -> u32 {
    fp_op(0x1c, fmt, rd, rs1, 0, 1)
}
/// Integer formats of FCVT (the rs2 field).
pub const I_W: u32 = 0;
pub const I_WU: u32 = 1;
pub const I_L: u32 = 2;
pub const I_LU: u32 = 3;
/// FCVT.{W,WU,L,LU}.fmt rd, rs1
pub fn fcvt_to_int(fmt: u32, ifmt: u32, rd: u32, rs1: u32, rm: u32) -> u32 {
    fp_op(0x18, fmt, rd, rs1, ifmt, rm)
}
/// FCVT.fmt.{W,WU,L,LU} rd, rs1
pub fn fcvt_from_int(fmt: u32, ifmt: u32, rd: u32, rs1: u32, rm: u32) -> u32 {
    fp_op(0x1a, fmt, rd, rs1, ifmt, rm)
}
pub fn fcvt_s_d(rd: u32, rs1: u32, rm: u32) -> u32 {
    fp_op(0x08, FMT_S, rd, rs1, 1, rm)
}
pub fn fcvt_d_s(rd: u32, rs1: u32, rm: u32) -> u32 {
    fp_op(0x08, FMT_D, rd, rs1, 0, rm)
}
/// FMV.X.W / FMV.X.D
pub fn fmv_x_f(fmt: u32, rd: u32, rs1: u32) -> u32 {
    fp_op(0x1c, fmt, rd, rs1, 0, 0)
}
/// FMV.W.X / FMV.D.X
pub fn fmv_f_x(fmt: u32, rd: u32, rs1: u32) -> u32 {
    fp_op(0x1e, fmt, rd, rs1, 0, 0)
}
pub fn fmadd(fmt: u32, rd: u32, rs1: u32, rs2: u32, rs3: u32, rm: u32) -> u32 {
    (rs3 << 27) | r_type(fmt, rs2, rs1, rm, rd, OP_MADD)
}
pub fn fmsub(fmt: u32, rd: u32, rs1: u32, rs2: u32, rs3: u32, rm: u32) -> u32 {
    (rs3 << 27) | r_type(fmt, rs2, rs1, rm, rd, OP_MSUB)
}
pub fn fnmsub(fmt: u32, rd: u32, rs1: u32, rs2: u32, rs3: u32, rm: u32) -> u32 {
    (rs3 << 27) | r_type(fmt, rs2, rs1, rm, rd, OP_NMSUB)
}
pub fn fnmadd(fmt: u32, rd: u32, rs1: u32, rs2: u32, rs3: u32, rm: u32) -> u32 {
    (rs3 << 27) | r_type(fmt, rs2, rs1, rm, rd, OP_NMADD)
}

// ---------------------------------------------------------------------------------------------
// 16-bit (C extension) encodings, from the RVC instruction listing for RV64
// ---------------------------------------------------------------------------------------------

fn rp(r: u32) -> u32 {
    assert!((8..16).contains(&r), "x{r} is not a compressed register");
    r - 8
}
fn bitf(v: u32, hi: u32, lo: u32) -> u32 {
    (v >> lo) & ((1 << (hi - lo + 1)) - 1)
}

/// C.ADDI4SPN rd', nzuimm: nzuimm[5:4|9:6|2|3] in bits 12:5.
pub fn c_addi4spn(rd: u32, uimm: u32) -> u16 {
    ((bitf(uimm, 5, 4) << 11)
        | (bitf(uimm, 9, 6) << 7)
        | (bitf(uimm, 2, 2) << 6)
        | (bitf(uimm, 3, 3) << 5)
        | (rp(rd) << 2)) as u16
}
/// CL/CS word format: uimm[5:3] in 12:10, uimm[2] in 6, uimm[6] in 5.
fn cls_w(f3: u32, rs1: u32, r2: u32, uimm: u32) -> u16 {
    ((f3 << 13)
        | (bitf(uimm, 5, 3) << 10)
        | (rp(rs1) << 7)
        | (bitf(uimm, 2, 2) << 6)
        | (bitf(uimm, 6, 6) << 5)
        | (rp(r2) << 2)) as u16
}
/// CL/CS doubleword format: uimm[5:3] in 12:10, uimm[7:6] in 6:5.
fn cls_d(f3: u32, rs1: u32, r2: u32, uimm: u32) -> u16 {
    ((f3 << 13)
        | (bitf(uimm, 5, 3) << 10)
        | (rp(rs1) << 7)
        | (bitf(uimm, 7, 6) << 5)
        | (rp(r2) << 2)) as u16
}
pub fn c_fld(rd: u32, rs1: u32, uimm: u32) -> u16 {
    cls_d(1, rs1, rd, uimm)
}
pub fn c_lw(rd: u32, rs1: u32, uimm: u32) -> u16 {
    cls_w(2, rs1, rd, uimm)
}
pub fn c_ld(rd: u32, rs1: u32, uimm: u32) -> u16 {
    cls_d(3, rs1, rd, uimm)
}
pub fn c_fsd(rs2: u32, rs1: u32, uimm: u32) -> u16 {
    cls_d(5, rs1, rs2, uimm)
}
pub fn c_sw(rs2: u32, rs1: u32, uimm: u32) -> u16 {
    cls_w(6, rs1, rs2, uimm)
}
pub fn c_sd(rs2: u32, rs1: u32, uimm: u32) -> u16 {
    cls_d(7, rs1, rs2, uimm)
}
/// CI format: imm[5] in 12, rd in 11:7, imm[4:0] in 6:2.
fn ci(f3: u32, quadrant: u32, rd: u32, imm6: i32) -> u16 {
    assert!((-32..32).contains(&imm6) || (0..64).contains(&imm6));
    let i = imm6 as u32;
    ((f3 << 13) | (bitf(i, 5, 5) << 12) | (rd << 7) | (bitf(i, 4, 0) << 2) | quadrant) as u16
}
pub fn c_nop() -> u16 {
    ci(0, 1, 0, 0)
}
pub fn c_addi(rd: u32, imm: i32) -> u16 {
    ci(0, 1, rd, imm)
}
pub fn c_addiw(rd: u32, imm: i32) -> u16 {
    ci(1, 1, rd, imm)
}
pub fn c_li(rd: u32, imm: i32) -> u16 {
    ci(2, 1, rd, imm)
}
/// C.LUI rd, nzimm where `imm` is the full value (a multiple of 4096 in -131072..=126976).
pub fn c_lui(rd: u32, imm: i32) -> u16 {
    assert!(imm % 4096 == 0);
    ci(3, 1, rd, imm >> 12)
}
/// C.ADDI16SP: nzimm[9] in 12, nzimm[4|6|8:7|5] in 6:2.
pub fn c_addi16sp(imm: i32) -> u16 {
    assert!(imm % 16 == 0 && (-512..=496).contains(&imm));
    let i = imm as u32;
    ((3 << 13)
        | (bitf(i, 9, 9) << 12)
        | (2 << 7)
        | (bitf(i, 4, 4) << 6)
        | (bitf(i, 6, 6) << 5)
        | (bitf(i, 8, 7) << 3)
        | (bitf(i, 5, 5) << 2)
        | 1) as u16
}
fn cb_alu(f2: u32, rd: u32, imm6: u32) -> u16 {
    ((4 << 13)
        | (bitf(imm6, 5, 5) << 12)
        | (f2 << 10)
        | (rp(rd) << 7)
        | (bitf(imm6, 4, 0) << 2)
        | 1) as u16
}
pub fn c_srli(rd: u32, sh: u32) -> u16 {
    cb_alu(0, rd, sh)
}
pub fn c_srai(rd: u32, sh: u32) -> u16 {
    cb_alu(1, rd, sh)
}
pub fn c_andi(rd: u32, imm: i32) -> u16 {
    assert!((-32..32).contains(&imm));
    cb_alu(2, rd, imm as u32)
}
/// CA format: 100 bit12 11 rd' funct2 rs2' 01.
pub fn c_arith(bit12: u32, f2: u32, rd: u32, rs2: u32) -> u16 {
    ((4 << 13) | (bit12 << 12) | (3 << 10) | (rp(rd) << 7) | (f2 << 5) | (rp(rs2) << 2) | 1) as u16
}
pub fn c_sub(rd: u32, rs2: u32) -> u16 {
    c_arith(0, 0, rd, rs2)
}
pub fn c_xor(rd: u32, rs2: u32) -> u16 {
    c_arith(0, 1, rd, rs2)
}
pub fn c_or(rd: u32, rs2: u32) -> u16 {
    c_arith(0, 2, rd, rs2)
}
pub fn c_and(rd: u32, rs2: u32) -> u16 {
    c_arith(0, 3, rd, rs2)
}
pub fn c_subw(rd: u32, rs2: u32) -> u16 {
    c_arith(1, 0, rd, rs2)
}
pub fn c_addw(rd: u32, rs2: u32) -> u16 {
    c_arith(1, 1, rd, rs2)
}
/// C.J: offset[11|4|9:8|10|6|7|3:1|5] in bits 12:2.
pub fn c_j(off: i32) -> u16 {
    assert!((-2048..=2046).contains(&off) && off % 2 == 0);
    let o = off as u32;
    ((5 << 13)
        | (bitf(o, 11, 11) << 12)
        | (bitf(o, 4, 4) << 11)
        | (bitf(o, 9, 8) << 9)
        | (bitf(o, 10, 10) << 8)
        | (bitf(o, 6, 6) << 7)
        | (bitf(o, 7, 7) << 6)
        | (bitf(o, 3, 1) << 3)
        | (bitf(o, 5, 5) << 2)
        | 1) as u16
}
/// C.BEQZ/C.BNEZ: offset[8|4:3] in 12:10, offset[7:6|2:1|5] in 6:2.
fn cb_branch(f3: u32, rs1: u32, off: i32) -> u16 {
    assert!((-256..=254).contains(&off) && off % 2 == 0);
    let o = off as u32;
    ((f3 << 13)
        | (bitf(o, 8, 8) << 12)
        | (bitf(o, 4, 3) << 10)
        | (rp(rs1) << 7)
        | (bitf(o, 7, 6) << 5)
        | (bitf(o, 2, 1) << 3)
        | (bitf(o, 5, 5) << 2)
        | 1) as u16
}
pub fn c_beqz(rs1: u32, off: i32) -> u16 {
    cb_branch(6, rs1, off)
}
pub fn c_bnez(rs1: u32, off: i32) -> u16 {
    cb_branch(7, rs1, off)
}
pub fn c_slli(rd: u32, sh: u32) -> u16 {
    ((bitf(sh, 5, 5) << 12) | (rd << 7) | (bitf(sh, 4, 0) << 2) | 2) as u16
}
/// C.FLDSP/C.LDSP: uimm[5] in 12, uimm[4:3|8:6] in 6:2.
fn ci_sp_d(f3: u32, rd: u32, uimm: u32) -> u16 {
    ((f3 << 13)
        | (bitf(uimm, 5, 5) << 12)
        | (rd << 7)
        | (bitf(uimm, 4, 3) << 5)
        | (bitf(uimm, 8, 6) << 2)
        | 2) as u16
}
pub fn c_fldsp(rd: u32, uimm: u32) -> u16 {
    ci_sp_d(1, rd, uimm)
}
pub fn c_ldsp(rd: u32, uimm: u32) -> u16 {
    ci_sp_d(3, rd, uimm)
}
/// C.LWSP: uimm[5] in 12, uimm[4:2|7:6] in 6:2.
pub fn c_lwsp(rd: u32, uimm: u32) -> u16 {
    ((2 << 13)
        | (bitf(uimm, 5, 5) << 12)
        | (rd << 7)
        | (bitf(uimm, 4, 2) << 4)
        | (bitf(uimm, 7, 6) << 2)
        | 2) as u16
}
pub fn c_jr(rs1: u32) -> u16 {
    ((4 << 13) | (rs1 << 7) | 2) as u16
}
pub fn c_mv(rd: u32, rs2: u32) -> u16 {
    ((4 << 13) | (rd << 7) | (rs2 << 2) | 2) as u16
}
pub fn c_ebreak() -> u16 {
    ((4 << 13) | (1 << 12) | 2) as u16
}
pub fn c_jalr(rs1: u32) -> u16 {
    ((4 << 13) | (1 << 12) | (rs1 << 7) | 2) as u16
}
pub fn c_add(rd: u32, rs2: u32) -> u16 {
    ((4 << 13) | (1 << 12) | (rd << 7) | (rs2 << 2) | 2) as u16
}
/// C.FSDSP/C.SDSP: uimm[5:3|8:6] in 12:7.
fn css_d(f3: u32, rs2: u32, uimm: u32) -> u16 {
    ((f3 << 13) | (bitf(uimm, 5, 3) << 10) | (bitf(uimm, 8, 6) << 7) | (rs2 << 2) | 2) as u16
}
pub fn c_fsdsp(rs2: u32, uimm: u32) -> u16 {
    css_d(5, rs2, uimm)
}
pub fn c_sdsp(rs2: u32, uimm: u32) -> u16 {
    css_d(7, rs2, uimm)
}
/// C.SWSP: uimm[5:2|7:6] in 12:7.
pub fn c_swsp(rs2: u32, uimm: u32) -> u16 {
    ((6 << 13) | (bitf(uimm, 5, 2) << 9) | (bitf(uimm, 7, 6) << 7) | (rs2 << 2) | 2) as u16
}

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// State of the machine-mode trap CSRs after a trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trap {
    pub cause: u64,
    pub epc: u64,
    pub tval: u64,
}

/// A hart over 1 MiB of RAM at [`RAM_BASE`], booting through a stub that points `mtvec` at
/// [`TRAP`] (from `x31`, which tests may change before running) and jumps to [`CODE`].
pub struct Vm {
    pub hart: Hart,
    pub mem: GuestMemoryMmap,
}

impl Default for Vm {
    fn default() -> Self {
        Self::new()
    }
}

impl Vm {
    pub fn new() -> Vm {
        Self::with_config(HartConfig::default())
    }

    pub fn with_config(config: HartConfig) -> Vm {
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), RAM_SIZE)]).unwrap();
        let hart = Hart::new(config, mem.clone()).unwrap();
        let mut vm = Vm { hart, mem };
        vm.put32(BOOT, &[csrw(MTVEC, 31), jal(0, (CODE - BOOT - 4) as i32)]);
        vm.put32(TRAP, &[wfi()]);
        vm.hart.set_xreg(31, TRAP);
        vm.hart.set_pc(BOOT);
        vm
    }

    pub fn put32(&self, addr: u64, words: &[u32]) {
        for (i, w) in words.iter().enumerate() {
            self.mem
                .write_obj(*w, GuestAddress(addr + 4 * i as u64))
                .unwrap();
        }
    }
    pub fn put16(&self, addr: u64, halves: &[u16]) {
        for (i, h) in halves.iter().enumerate() {
            self.mem
                .write_obj(*h, GuestAddress(addr + 2 * i as u64))
                .unwrap();
        }
    }
    pub fn w8(&self, addr: u64, v: u8) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn w16(&self, addr: u64, v: u16) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn w32(&self, addr: u64, v: u32) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn w64(&self, addr: u64, v: u64) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn r8(&self, addr: u64) -> u8 {
        self.mem.read_obj(GuestAddress(addr)).unwrap()
    }
    pub fn r32(&self, addr: u64) -> u32 {
        self.mem.read_obj(GuestAddress(addr)).unwrap()
    }
    pub fn r64(&self, addr: u64) -> u64 {
        self.mem.read_obj(GuestAddress(addr)).unwrap()
    }

    pub fn x(&self, i: usize) -> u64 {
        self.hart.xreg(i)
    }
    pub fn set_x(&mut self, i: usize, v: u64) {
        self.hart.set_xreg(i, v);
    }
    pub fn f(&self, i: usize) -> u64 {
        self.hart.freg(i)
    }
    pub fn csr(&self, num: u32) -> u64 {
        self.hart
            .csr(num as u16)
            .unwrap_or_else(|| panic!("CSR {num:#x} does not exist"))
    }
    pub fn mtrap(&self) -> Trap {
        Trap {
            cause: self.csr(MCAUSE),
            epc: self.csr(MEPC),
            tval: self.csr(MTVAL),
        }
    }
    pub fn strap(&self) -> Trap {
        Trap {
            cause: self.csr(SCAUSE),
            epc: self.csr(SEPC),
            tval: self.csr(STVAL),
        }
    }

    /// Write `words` at `addr` followed by a `wfi`; returns the address of that `wfi`.
    pub fn code_at(&self, addr: u64, words: &[u32]) -> u64 {
        self.put32(addr, words);
        let end = addr + 4 * words.len() as u64;
        self.put32(end, &[wfi()]);
        end
    }
    /// Write `words` at [`CODE`] followed by a `wfi`; returns the address of that `wfi`.
    pub fn code(&self, words: &[u32]) -> u64 {
        self.code_at(CODE, words)
    }

    /// Run until the hart stops in WFI (every test program ends in one, and so does the trap
    /// handler).
    pub fn run_to_wfi(&mut self) {
        let exit = self.hart.run(1_000_000);
        assert_eq!(
            exit,
            VcpuExit::Wfi,
            "hart did not reach wfi (pc={:#x})",
            self.hart.pc()
        );
    }

    /// Run code that must reach the `wfi` at `end` without trapping.
    pub fn run_clean(&mut self, end: u64) {
        self.run_to_wfi();
        assert_eq!(
            self.hart.pc(),
            end + 4,
            "program did not finish cleanly: mcause={:#x} mepc={:#x} mtval={:#x}",
            self.csr(MCAUSE),
            self.csr(MEPC),
            self.csr(MTVAL)
        );
    }

    /// Run `body` at [`CODE`] (followed by `wfi`) and check it finished without a trap.
    pub fn exec(&mut self, body: &[u32]) {
        let end = self.code(body);
        self.run_clean(end);
    }

    /// Run `body` at [`CODE`] and check it trapped to the M-mode handler at [`TRAP`].
    pub fn exec_trap(&mut self, body: &[u32]) -> Trap {
        let end = self.code(body);
        self.run_to_wfi();
        assert_ne!(
            self.hart.pc(),
            end + 4,
            "expected a trap, but the program finished"
        );
        assert_eq!(self.hart.pc(), TRAP + 4, "expected the M-mode trap handler");
        assert_eq!(self.hart.privilege(), PrivilegeMode::Machine);
        self.mtrap()
    }

    /// Code (for M-mode) that enters `mode` at `target` through MRET. Uses x28-x30.
    pub fn enter_mode(&mut self, mode: PrivilegeMode, target: u64) -> Vec<u32> {
        self.set_x(28, MS_MPP);
        self.set_x(29, target);
        self.set_x(30, (mode as u64) << 11);
        vec![
            csrrc(0, MSTATUS, 28),
            csrrs(0, MSTATUS, 30),
            csrw(MEPC, 29),
            mret(),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// Smstateen, Smcsrind, Sstc and Smaia CSRs, and helpers for running code in a lower mode
// ---------------------------------------------------------------------------------------------

pub const SENVCFG: u32 = 0x10A;
pub const SSTATEEN0: u32 = 0x10C;
pub const STIMECMP: u32 = 0x14D;
pub const SISELECT: u32 = 0x150;
pub const SIREG: u32 = 0x151;
pub const MVIEN: u32 = 0x308;
pub const MVIP: u32 = 0x309;
pub const MENVCFG: u32 = 0x30A;
pub const MSTATEEN0: u32 = 0x30C;
pub const MISELECT: u32 = 0x350;
pub const MIREG: u32 = 0x351;
pub const STOPI: u32 = 0xDB0;
pub const MTOPI: u32 = 0xFB0;
/// The six alias CSRs of each indirect window, `xireg` first.
pub const MIREGS: [u32; 6] = [0x351, 0x352, 0x353, 0x355, 0x356, 0x357];
pub const SIREGS: [u32; 6] = [0x151, 0x152, 0x153, 0x155, 0x156, 0x157];

/// `mstateen0` bits.
pub const SE0: u64 = 1 << 63;
pub const ST_ENVCFG: u64 = 1 << 62;
pub const ST_CSRIND: u64 = 1 << 60;
pub const ST_AIA: u64 = 1 << 59;
/// `menvcfg.STCE`
pub const STCE: u64 = 1 << 63;

/// Where [`Vm::run_in_mode`] puts the lower-privilege code.
pub const LOW_CODE: u64 = CODE + 0x800;

/// How a run of [`Vm::run_in_mode`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The lower-mode code reached its final `wfi`.
    Clean,
    /// The M-mode trap handler at [`TRAP`] was entered.
    MTrap(Trap),
}

impl Vm {
    /// Run `setup` in M-mode at [`CODE`], then enter `mode` and run `body` at [`LOW_CODE`]
    /// (followed by `wfi`). `setup` must not use x28-x31.
    pub fn run_in_mode(&mut self, setup: &[u32], mode: PrivilegeMode, body: &[u32]) -> Outcome {
        let mut m = setup.to_vec();
        m.extend(self.enter_mode(mode, LOW_CODE));
        assert!(CODE + 4 * m.len() as u64 <= LOW_CODE, "setup too long");
        self.put32(CODE, &m);
        let end = self.code_at(LOW_CODE, body);
        self.run_to_wfi();
        if self.hart.pc() == end + 4 {
            assert_eq!(self.hart.privilege(), mode);
            Outcome::Clean
        } else {
            assert_eq!(self.hart.pc(), TRAP + 4, "expected the M-mode trap handler");
            Outcome::MTrap(self.mtrap())
        }
    }

    /// As [`Vm::run_in_mode`], but `body` must raise illegal-instruction at its instruction
    /// `idx`, with the instruction bits in `mtval`.
    pub fn expect_illegal(&mut self, setup: &[u32], mode: PrivilegeMode, body: &[u32], idx: usize) {
        let out = self.run_in_mode(setup, mode, body);
        assert_eq!(
            out,
            Outcome::MTrap(Trap {
                cause: vcpu::trap::cause::ILLEGAL_INSN,
                epc: LOW_CODE + 4 * idx as u64,
                tval: body[idx] as u64,
            }),
            "{mode:?} body {body:08x?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// H-level CSRs of Smstateen, Sscsrind, Sstc and Ssaia, and helpers for running code with V = 1
// ---------------------------------------------------------------------------------------------

pub const VSSTATUS: u32 = 0x200;
pub const VSIE: u32 = 0x204;
pub const VSTVEC: u32 = 0x205;
pub const VSCAUSE: u32 = 0x242;
pub const VSIP: u32 = 0x244;
pub const VSTIMECMP: u32 = 0x24D;
pub const VSISELECT: u32 = 0x250;
pub const VSIREG: u32 = 0x251;
pub const VSIREGS: [u32; 6] = [0x251, 0x252, 0x253, 0x255, 0x256, 0x257];
pub const HSTATUS: u32 = 0x600;
pub const HIDELEG: u32 = 0x603;
pub const HIE: u32 = 0x604;
pub const HTIMEDELTA: u32 = 0x605;
pub const HCOUNTEREN: u32 = 0x606;
pub const HVIEN: u32 = 0x608;
pub const HVICTL: u32 = 0x609;
pub const HENVCFG: u32 = 0x60A;
pub const HSTATEEN0: u32 = 0x60C;
pub const HSTATEEN: [u32; 4] = [0x60C, 0x60D, 0x60E, 0x60F];
pub const HIP: u32 = 0x644;
pub const HVIP: u32 = 0x645;
pub const HVIPRIO1: u32 = 0x646;
pub const HVIPRIO2: u32 = 0x647;
pub const VSTOPI: u32 = 0xEB0;

/// `mstatus.MPV`
pub const MS_MPV: u64 = 1 << 39;
/// `mcause` of illegal-instruction and virtual-instruction.
pub const ILLEGAL: u64 = 2;
pub const VIRTUAL: u64 = 22;
/// Where VS-mode traps go in the tests that take interrupts in VS-mode: a spin loop.
pub const VS_TRAP: u64 = CODE + 0x1800;

/// M-mode code writing each `(csr, value)` pair, through x5-x26 (preset in the hart).
pub fn set_csrs(vm: &mut Vm, pairs: &[(u32, u64)]) -> Vec<u32> {
    assert!(pairs.len() <= 22, "too many CSR writes");
    pairs
        .iter()
        .enumerate()
        .map(|(i, &(csr, v))| {
            let r = 5 + i as u32;
            vm.set_x(r as usize, v);
            csrw(csr, r)
        })
        .collect()
}

impl Vm {
    /// As [`Vm::run_in_mode`], but with V = 1 (`mode` Supervisor = VS, User = VU). `setup`
    /// must not use x27-x31.
    pub fn run_in_vmode(
        &mut self,
        setup: &[u32],
        mode: vcpu::PrivilegeMode,
        body: &[u32],
    ) -> Outcome {
        self.set_x(27, MS_MPV);
        let mut s = setup.to_vec();
        s.push(csrrs(0, MSTATUS, 27));
        self.run_in_mode(&s, mode, body)
    }

    /// `body` run with V = 1 (or V = 0 when `virt` is false) must trap to M with `cause` at its
    /// instruction `idx`, with the instruction bits in `mtval`.
    pub fn expect_fault(
        &mut self,
        setup: &[u32],
        mode: vcpu::PrivilegeMode,
        virt: bool,
        body: &[u32],
        idx: usize,
        cause: u64,
    ) {
        let out = if virt {
            self.run_in_vmode(setup, mode, body)
        } else {
            self.run_in_mode(setup, mode, body)
        };
        assert_eq!(
            out,
            Outcome::MTrap(Trap {
                cause,
                epc: LOW_CODE + 4 * idx as u64,
                tval: body[idx] as u64,
            }),
            "{mode:?} V={virt} body {body:08x?}"
        );
    }
}
