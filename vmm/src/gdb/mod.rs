//! The gdb remote stub's hart-side half: the register set gdb sees, the target description
//! that names it, register access through the hart's CSR rules, and the monitor commands
//! that do not depend on the run loop (`docs/gdb.md`).
//!
//! The protocol is the `gdbstub` crate's; this module gives it an [`Arch`] of its own,
//! [`Rv64Vmm`], because the crate's riscv64 architecture covers the integer registers only.
//! The `g` packet carries x0-x31 and `pc` (gdb fetches the rest one by one with `p`), and
//! every register has the number gdb's RISC-V port uses internally, written into the target
//! description as `regnum`: x0-x31 0-31, `pc` 32, f0-f31 33-64, CSR *n* at 65 + *n*
//! (`fflags`, `frm` and `fcsr` in the FPU feature, as gdb wants them), `priv` 4161 (the
//! privilege mode, 0 U, 1 S, 3 M, in `org.gnu.gdb.riscv.virtual` as gdb expects) and `virt`
//! 4162 (the V bit, a register of its own beside `priv` so that gdb's `priv` display stays
//! right). The CSR list is generated from `vcpu_api::csr::ALL`, the project's one CSR table,
//! with the spec's names.
//!
//! CSRs are read with [`Vcpu::host_csr`] and written with [`Vcpu::set_host_csr`]: M-mode's
//! view, without access checks, the CSR's WARL rules applied on writes. A CSR the hart does
//! not implement reads as unavailable (gdb prints `<unavailable>`); writing it, a read-only
//! CSR, `priv` or `virt` gets an error. Reads change nothing the guest can see: counters,
//! timers and CTR are virtual (they move with the guest's instructions, not with host time),
//! so a stopped guest finds them as it left them.
//!
//! Every callback takes any register number, address and length a client sends: unknown
//! numbers are refused, buffers are checked, and memory transfers are capped at
//! [`MAX_MEMORY_XFER`] bytes for reads and a packet for writes.

use std::num::NonZeroUsize;

use gdbstub::arch::{Arch, RegId, Registers};
use vcpu_api::{PrivilegeMode, Vcpu};

use crate::backend::Hart;

pub mod listen;
pub mod points;

/// Why a debugger session could not be set up or ended with an error.
#[derive(Debug, thiserror::Error)]
pub enum GdbError {
    /// The `--gdb` socket could not be set up.
    #[error("--gdb: {0}")]
    Listen(#[from] crate::run::error::MigrateError),
    /// Accepting the debugger's connection failed.
    #[error("--gdb: cannot accept a connection on {addr}: {source}")]
    Accept {
        /// Where the stub listens.
        addr: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The debugger killed the guest (`kill`, the `k` packet).
    #[error("the debugger killed the guest")]
    Killed,
    /// The VM could not do what the debugger asked (it has ended, a vCPU did not park).
    #[error("--gdb: {0}")]
    Vm(String),
}

/// gdb's RISC-V register numbers (gdb's `riscv-tdep.h` layout, given to gdb in the target
/// description).
pub mod regnum {
    /// `pc`.
    pub const PC: usize = 32;
    /// f0.
    pub const F0: usize = 33;
    /// CSR 0.
    pub const CSR0: usize = 65;
    /// `priv`.
    pub const PRIV: usize = CSR0 + 4096;
    /// `virt` (this project's: the V bit).
    pub const VIRT: usize = PRIV + 1;
}

/// One register gdb may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    /// x0-x31.
    X(u8),
    /// The program counter.
    Pc,
    /// f0-f31 (raw 64-bit pattern).
    F(u8),
    /// A CSR by number (0-4095).
    Csr(u16),
    /// The privilege mode (0 U, 1 S, 3 M).
    Priv,
    /// The virtualization mode V (0 or 1).
    Virt,
}

const EIGHT: NonZeroUsize = match NonZeroUsize::new(8) {
    Some(n) => n,
    None => unreachable!(),
};

impl RegId for Reg {
    fn from_raw_id(id: usize) -> Option<(Self, Option<NonZeroUsize>)> {
        let reg = match id {
            0..=31 => Reg::X(id as u8),
            regnum::PC => Reg::Pc,
            33..=64 => Reg::F((id - regnum::F0) as u8),
            n if (regnum::CSR0..regnum::PRIV).contains(&n) => Reg::Csr((n - regnum::CSR0) as u16),
            regnum::PRIV => Reg::Priv,
            regnum::VIRT => Reg::Virt,
            _ => return None,
        };
        Some((reg, Some(EIGHT)))
    }
}

/// What the `g` packet carries: x0-x31 and `pc`, little-endian.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreRegs {
    /// x0-x31.
    pub x: [u64; 32],
    /// The program counter.
    pub pc: u64,
}

impl Registers for CoreRegs {
    type ProgramCounter = u64;

    fn pc(&self) -> u64 {
        self.pc
    }

    fn gdb_serialize(&self, mut write_byte: impl FnMut(Option<u8>)) {
        for v in self.x.iter().chain(std::iter::once(&self.pc)) {
            for b in v.to_le_bytes() {
                write_byte(Some(b));
            }
        }
    }

    fn gdb_deserialize(&mut self, bytes: &[u8]) -> Result<(), ()> {
        // A `G` packet must hold exactly what `g` sends.
        if bytes.len() != 33 * 8 {
            return Err(());
        }
        let mut words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()));
        for x in self.x.iter_mut() {
            *x = words.next().ok_or(())?;
        }
        self.pc = words.next().ok_or(())?;
        Ok(())
    }
}

/// The architecture gdb is told about: RV64 with this project's register set.
#[derive(Debug)]
pub enum Rv64Vmm {}

impl Arch for Rv64Vmm {
    type Usize = u64;
    type Registers = CoreRegs;
    type BreakpointKind = usize;
    type RegId = Reg;
}

/// Why a register access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegError {
    /// The value sent is not 8 bytes.
    #[error("a register value is 8 bytes")]
    BadLength,
    /// The register cannot be written (read-only CSR, `priv`, `virt`) or does not exist.
    #[error("the register cannot be written")]
    NotWritable,
}

/// The `g` registers of `hart`.
pub fn core_regs(hart: &Hart) -> CoreRegs {
    let mut regs = CoreRegs {
        pc: hart.pc(),
        ..CoreRegs::default()
    };
    for (i, x) in regs.x.iter_mut().enumerate() {
        *x = Hart::xreg(hart, i);
    }
    regs
}

/// Loads the `G` registers into `hart` (x0 stays 0).
pub fn set_core_regs(hart: &mut Hart, regs: &CoreRegs) {
    for (i, &v) in regs.x.iter().enumerate().skip(1) {
        Hart::set_xreg(hart, i, v);
    }
    Hart::set_pc(hart, regs.pc);
}

/// Register `reg` of `hart`, or `None` when the hart has no such register now (gdb shows it
/// as unavailable).
pub fn read_reg(hart: &Hart, reg: Reg) -> Option<u64> {
    Some(match reg {
        Reg::X(i) => Hart::xreg(hart, usize::from(i)),
        Reg::Pc => hart.pc(),
        Reg::F(i) => hart.freg(usize::from(i)),
        Reg::Csr(n) => hart.host_csr(n).ok()?,
        Reg::Priv => match hart.privilege() {
            PrivilegeMode::User => 0,
            PrivilegeMode::Supervisor => 1,
            PrivilegeMode::Machine => 3,
        },
        Reg::Virt => u64::from(hart.virt()),
    })
}

/// Writes `bytes` (8, little-endian) to register `reg` of `hart`; CSRs through the hart's
/// write rules.
pub fn write_reg(hart: &mut Hart, reg: Reg, bytes: &[u8]) -> Result<(), RegError> {
    let v = u64::from_le_bytes(bytes.try_into().map_err(|_| RegError::BadLength)?);
    match reg {
        Reg::X(i) => Hart::set_xreg(hart, usize::from(i), v),
        Reg::Pc => Hart::set_pc(hart, v),
        Reg::F(i) => hart.set_freg(usize::from(i), v),
        Reg::Csr(n) => hart.set_host_csr(n, v).map_err(|_| RegError::NotWritable)?,
        Reg::Priv | Reg::Virt => return Err(RegError::NotWritable),
    }
    Ok(())
}

/// The ABI names of x0-x31 (the psABI's, as gdb names them).
const X_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "fp", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

/// The ABI names of f0-f31.
const F_NAMES: [&str; 32] = [
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
    "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
    "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
];

/// The target description (`target.xml`): the register set above, every CSR of
/// `vcpu_api::csr::ALL` by its spec name.
pub fn target_xml() -> String {
    use std::fmt::Write;
    use vcpu_api::csr;
    let mut x = String::from(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n\
         <target version=\"1.0\">\n<architecture>riscv:rv64</architecture>\n\
         <feature name=\"org.gnu.gdb.riscv.cpu\">\n",
    );
    let reg = |x: &mut String, name: &str, num: usize, ty: &str, group: &str| {
        let _ = writeln!(
            x,
            "  <reg name=\"{name}\" bitsize=\"64\" regnum=\"{num}\" type=\"{ty}\" group=\"{group}\"/>"
        );
    };
    for (i, name) in X_NAMES.iter().enumerate() {
        let ty = match i {
            2 | 8 => "data_ptr",
            _ => "int",
        };
        reg(&mut x, name, i, ty, "general");
    }
    reg(&mut x, "pc", regnum::PC, "code_ptr", "general");
    x.push_str("</feature>\n<feature name=\"org.gnu.gdb.riscv.fpu\">\n");
    for (i, name) in F_NAMES.iter().enumerate() {
        reg(&mut x, name, regnum::F0 + i, "ieee_double", "float");
    }
    let fp_csrs = [csr::FFLAGS, csr::FRM, csr::FCSR];
    for (num, name) in csr::ALL.iter().filter(|(n, _)| fp_csrs.contains(n)) {
        reg(
            &mut x,
            name,
            regnum::CSR0 + usize::from(*num),
            "int",
            "float",
        );
    }
    x.push_str("</feature>\n<feature name=\"org.gnu.gdb.riscv.csr\">\n");
    for (num, name) in csr::ALL.iter().filter(|(n, _)| !fp_csrs.contains(n)) {
        reg(
            &mut x,
            name,
            regnum::CSR0 + usize::from(*num),
            "int",
            "system",
        );
    }
    x.push_str("</feature>\n<feature name=\"org.gnu.gdb.riscv.virtual\">\n");
    reg(&mut x, "priv", regnum::PRIV, "int", "system");
    reg(&mut x, "virt", regnum::VIRT, "int", "system");
    x.push_str("</feature>\n</target>\n");
    x
}

/// The part of `xml` a `qXfer:features:read` asks for, copied into `buf`.
pub fn xfer(xml: &str, offset: u64, length: usize, buf: &mut [u8]) -> usize {
    let bytes = xml.as_bytes();
    let Ok(start) = usize::try_from(offset) else {
        return 0;
    };
    if start >= bytes.len() {
        return 0;
    }
    let n = length.min(buf.len()).min(bytes.len() - start);
    buf[..n].copy_from_slice(&bytes[start..start + n]);
    n
}

/// The largest packet the stub takes (gdb is told; a longer one ends the session).
pub const PACKET_SIZE: usize = 0x4000;

/// The most bytes one memory read or write moves: what fits a reply packet in hex. gdb
/// never asks for more; `gdbstub` would answer a longer `m` in pieces of the packet buffer
/// with no bound (gigabytes of hex for `m0,ffffffff`), so a longer one is refused whole.
pub const MAX_MEMORY_XFER: usize = PACKET_SIZE / 2;

/// Whether the hart's data accesses are untranslated now: M-mode, HS/S/U-mode with `satp`
/// Bare, or VS/VU-mode with `vsatp` and `hgatp` Bare. Memory access by a debugger is
/// physical only then (or with `monitor phys on`); the stub walks no page tables (VS-stage
/// or G-stage or Sv39-57).
pub fn translation_off(hart: &Hart) -> bool {
    use vcpu_api::csr;
    if hart.privilege() == PrivilegeMode::Machine {
        return true;
    }
    let bare = |num| hart.host_csr(num).map_or(true, |s| s >> 60 == 0);
    if hart.virt() {
        bare(csr::VSATP) && bare(csr::HGATP)
    } else {
        bare(csr::SATP)
    }
}

/// Where `hart` is, for `monitor stepi`: `pc=0x... MODE` (M, HS, U, VS or VU).
pub fn position(hart: &Hart) -> String {
    let mode = match (hart.privilege(), hart.virt()) {
        (PrivilegeMode::Machine, _) => "M",
        (PrivilegeMode::Supervisor, false) => "HS",
        (PrivilegeMode::Supervisor, true) => "VS",
        (PrivilegeMode::User, false) => "U",
        (PrivilegeMode::User, true) => "VU",
    };
    format!("pc={:#x} {mode}", hart.pc())
}

/// The most instructions one `monitor stepi N` steps.
pub const MAX_MONITOR_STEPS: u64 = 1_000_000;

/// The count of `monitor stepi [N]`: 1 by default, at most [`MAX_MONITOR_STEPS`].
pub fn monitor_steps(arg: Option<&str>) -> Result<u64, String> {
    match arg.map(str::parse::<u64>) {
        None => Ok(1),
        Some(Ok(n)) if (1..=MAX_MONITOR_STEPS).contains(&n) => Ok(n),
        Some(_) => Err(format!(
            "monitor stepi N: N is 1 to {MAX_MONITOR_STEPS}, got {}",
            arg.unwrap_or_default()
        )),
    }
}

/// What `monitor stepi` says after stepping: where the hart is, and how to make gdb see it.
pub const MONITOR_STEPI_NOTE: &str =
    "(gdb caches registers: `maintenance flush register-cache` shows the new state)";

/// `monitor ctr`: the hart's CTR records, oldest first, a line each (`SRC -> DST TYPE
/// cycles`, the addresses as `function+0xoff` with `symbols`), under a line with the
/// depth, WRPTR and whether recording is frozen.
pub fn ctr_listing(hart: &Hart, symbols: Option<&crate::symbols::Symbols>) -> String {
    if hart.ctr_config().is_none() {
        return "this hart has no CTR (Smctr/Ssctr)\n".into();
    }
    let ctx = ctr_virt::CtrContext::save(hart);
    let head = format!(
        "mctrctl {:#x}",
        hart.host_csr(vcpu_api::csr::MCTRCTL).unwrap_or(0)
    );
    ctr_records(&ctx, &head, symbols)
}

/// `monitor ctr` of a `vmm run` vCPU: its CTR as the hypervisor keeps it (`ctx`, whether
/// it is loaded on the hart or saved by `ctr-virt`).
pub fn ctr_context_listing(
    ctx: &ctr_virt::CtrContext,
    loaded: bool,
    symbols: Option<&crate::symbols::Symbols>,
) -> String {
    let head = format!(
        "vsctrctl {:#x}, {}",
        ctx.vsctrctl,
        if loaded { "loaded" } else { "not loaded" }
    );
    ctr_records(ctx, &head, symbols)
}

/// The CTR state line (depth, WRPTR, frozen, then `head`) and the records of `ctx`, oldest
/// first.
fn ctr_records(
    ctx: &ctr_virt::CtrContext,
    head: &str,
    symbols: Option<&crate::symbols::Symbols>,
) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "CTR: depth {}, WRPTR {}, {}, {head}\n",
        16u64 << ctx.depth,
        ctx.sctrstatus & 0xff,
        if ctx.sctrstatus >> 31 & 1 == 1 {
            "frozen"
        } else {
            "not frozen"
        },
    );
    let mut n = 0;
    for r in ctx.records().rev() {
        n += 1;
        let cycles = match r.cycles {
            Some(c) => format!("{c} cycles"),
            None => "cycles unknown".into(),
        };
        let _ = writeln!(
            out,
            "{} -> {} {} {cycles}",
            crate::symbols::format_addr(symbols, r.source),
            crate::symbols::format_addr(symbols, r.target),
            r.kind
        );
    }
    if n == 0 {
        out.push_str("no records\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_numbers_round_trip() {
        assert_eq!(Reg::from_raw_id(0).unwrap().0, Reg::X(0));
        assert_eq!(Reg::from_raw_id(32).unwrap().0, Reg::Pc);
        assert_eq!(Reg::from_raw_id(64).unwrap().0, Reg::F(31));
        assert_eq!(
            Reg::from_raw_id(regnum::CSR0 + 0x34e).unwrap().0,
            Reg::Csr(0x34e)
        );
        assert_eq!(Reg::from_raw_id(4161).unwrap().0, Reg::Priv);
        assert_eq!(Reg::from_raw_id(4162).unwrap().0, Reg::Virt);
        assert!(Reg::from_raw_id(4163).is_none());
        assert!(Reg::from_raw_id(usize::MAX).is_none());
    }

    #[test]
    fn xml_names_every_csr_once() {
        let xml = target_xml();
        for (num, name) in vcpu_api::csr::ALL {
            let tag = format!("name=\"{name}\" bitsize=\"64\" regnum=\"{}\"", 65 + num);
            assert_eq!(xml.matches(&tag).count(), 1, "{name}");
        }
        for name in [
            "sctrctl",
            "vsctrctl",
            "mctrctl",
            "sctrdepth",
            "sctrstatus",
            "hstatus",
        ] {
            assert!(xml.contains(&format!("\"{name}\"")), "{name}");
        }
    }

    #[test]
    fn xfer_clamps() {
        let mut buf = [0u8; 4];
        assert_eq!(xfer("abcdef", 4, 10, &mut buf), 2);
        assert_eq!(&buf[..2], b"ef");
        assert_eq!(xfer("abcdef", 6, 10, &mut buf), 0);
        assert_eq!(xfer("abcdef", u64::MAX, 10, &mut buf), 0);
    }

    #[test]
    fn g_packet_needs_every_register() {
        let mut regs = CoreRegs::default();
        assert!(regs.gdb_deserialize(&[0; 10]).is_err());
        let mut bytes = vec![0u8; 33 * 8];
        bytes[32 * 8] = 0x10;
        assert!(regs.gdb_deserialize(&bytes).is_ok());
        assert_eq!(regs.pc, 0x10);
    }
}
