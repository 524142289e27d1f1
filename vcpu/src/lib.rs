//! `vcpu`: a software RISC-V hart that behaves like real hardware.
//!
//! The hart implements RV64IMAFDC with Zicsr, Zifencei and Zicntr, privilege modes M, S and
//! U, Sv39/Sv48/Sv57 translation and a PMP of 16 entries or none ([`pmp`]), plus Smstateen/Ssstateen,
//! Smcsrind/Sscsrind, Sstc and Smaia/Ssaia (without an IMSIC) at M and S level, the H
//! extension, and Smctr/Ssctr (configurable per hart, see [`ctr::CtrConfig`]). Guest RAM is a rust-vmm
//! [`vm_memory::GuestMemoryMmap`] shared with the VMM.
//!
//! The caller drives the hart through a backend-neutral interface modelled on KVM's: it calls
//! [`Hart::run`] and gets back a [`VcpuExit`] whenever the hart needs the outside world
//! (an MMIO access, a WFI with nothing pending, an exhausted instruction budget, or a stop
//! request from another thread).
//!
//! Module map, following the specifications' tables of contents:
//! - `hart`: the [`Hart`] struct, construction, accessors and the public run interface;
//!   `interp`: the interpreter loop (chunks, fetch and the decode cache, loop variants).
//! - [`decode`]: 16- and 32-bit encodings into the compact [`decode::Insn`] form.
//! - `execute`: instruction semantics, one file per extension.
//! - [`csr`]: the base CSR table and the lookup over every table (number, privilege, read
//!   and write behaviour), and the CSR-only extensions (`csr/`: Smstateen, Smcsrind, Sstc,
//!   AIA).
//! - `mmu`: Sv39/Sv48/Sv57 page walks (`mmu/mod.rs`) and the software TLB (`mmu/tlb.rs`).
//! - `jit`: block translation to x86-64 for the stretches where nothing is observed per
//!   instruction (`HartConfig::jit`); guest-visible behaviour is the interpreter's.
//! - [`trap`]: exception and interrupt causes (`trap/mod.rs`) and trap entry/return
//!   (`trap/entry.rs`).
//! - [`hypervisor`]: the H extension: its CSR state, its CSR table, `htinst`/`mtinst`.
//! - [`ctr`]: Control Transfer Records (Smctr/Ssctr): the buffer, the recording rules, the
//!   CSR table and the snapshot part.
//! - [`pmu`]: counters and sampling (Zihpm, Sscofpmf, Smcntrpmf, Smcdeleg, Sspesa,
//!   Ssplcofi, Smpdis): the event catalog, the cost/cache/TLB/predictor models, PDIS, the
//!   counting and the CSR table.
//! - [`fpu`]: IEEE-754 arithmetic for F and D (pure integer Rust, RISC-V choices: canonical NaNs, tininess after rounding).
//! - `memory`: guest RAM and the physical memory map seen by the hart.
//! - [`pmp`]: Physical Memory Protection: its registers, matching rules and CSR table (the
//!   checks are made by `mmu`).
//! - [`trigger`]: Sdtrig debug triggers (`mcontrol6`): their registers, matching rules, CSR
//!   table and the checks on fetches, loads and stores.
//! - [`state`]: the architectural state for snapshots ([`state::HartState`]).
//!
//! Layout rules:
//! - An extension with behaviour beyond its CSRs has a folder that owns its state, rules,
//!   CSR table (`csr.rs`) and configuration (`ctr/`, `pmu/`, `pmp/`, `trigger/`, `hypervisor/`); an extension
//!   that is CSRs only is one file under `csr/`. `csr::TABLES` lists every table.
//! - What the hart holds (the CSR file, the CTR buffer, the PMU state, the TLB, the
//!   translator's table, the trap types, the decoded form, the configuration) is in leaf
//!   modules that import nothing of the hart; the rules that need the hart are `impl Hart`
//!   in files of their own (`ctr/record.rs`, `pmu/count.rs`, `pmu/pdis/sample.rs`,
//!   `trap/entry.rs`, `mmu/mod.rs`, `jit/mod.rs`, `interp.rs`, `execute/`), which `hart.rs`
//!   does not import. So no import cycle goes through `hart.rs`; keep it that way when
//!   moving a type (a module `hart.rs` imports must not import `hart`).

/// One entry of a CSR table ([`csr::CsrDesc`]): number, access check, read, write. Defined
/// before the modules so that every extension's table (`csr/`, `ctr/`, `pmu/`,
/// `hypervisor/`) can use it.
macro_rules! csr {
    ($num:expr, $check:expr, $read:expr, $write:expr) => {
        $crate::csr::CsrDesc {
            num: $num,
            check: $check,
            read: $read,
            write: $write,
        }
    };
}

pub mod config;
pub mod csr;
pub mod ctr;
pub mod decode;
mod execute;
pub mod fpu;
mod hart;
pub mod hypervisor;
mod interp;
mod jit;
mod memory;
mod mmu;
pub mod pmp;
pub mod pmu;
pub mod state;
pub mod trap;
pub mod trigger;
mod vcpu;

pub use config::{HartConfig, MmioRange};
pub use hart::{Hart, HartError};
pub use vcpu::GUEST_HEDELEG;
pub use vcpu_api::{
    zicsr, ClockMode, CsrError, GuestTrap, GuestTraps, HartMailbox, HostClock, MmioAccess,
    PrivilegeMode, SharedClock, StateError, StopHandle, Vcpu, VcpuExit, VcpuState, INSNS_PER_TICK,
    TIMEBASE_HZ,
};
