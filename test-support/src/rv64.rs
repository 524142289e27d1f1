//! RV64 instruction encoders (RV64IMAFDC, Zicsr, Zifencei and the privileged instructions
//! the tests need), named after the mnemonics of the RISC-V unprivileged and privileged
//! specifications' instruction listings (`.` becomes `_`: `fence_i`, `sfence_vma`,
//! `lr_w`, `c_addi4spn`). Registers are numbers; immediates are checked against their
//! field (a mistake in a test's program panics instead of encoding something else).
//!
//! Each encoder's documentation is its mnemonic in the specifications' instruction
//! listings (the module's naming rule above), so its items carry no doc comment of their own.
#![allow(missing_docs)]

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

/// `li rd, value` for a 32-bit value, as `lui` + `addi` (the result is sign-extended).
pub fn li32(rd: u32, value: i32) -> [u32; 2] {
    let hi = ((value as u32).wrapping_add(0x800) >> 12) & 0xfffff;
    let lo = value.wrapping_sub((hi << 12) as i32);
    [lui(rd, hi), addi(rd, rd, lo)]
}

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
/// `csrs csr, rs1`
pub fn csrs(csr: u32, rs1: u32) -> u32 {
    csrrs(0, csr, rs1)
}
/// `csrc csr, rs1`
pub fn csrc(csr: u32, rs1: u32) -> u32 {
    csrrc(0, csr, rs1)
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

/// Little-endian bytes of a sequence of 32-bit instructions.
pub fn code(insns: &[u32]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.to_le_bytes()).collect()
}
