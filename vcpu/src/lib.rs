//! `vcpu`: a software RISC-V hart that behaves like real hardware.
//!
//! The hart implements RV64IMAFDC with Zicsr, Zifencei and Zicntr, privilege modes M, S and
//! U, Sv39/Sv48/Sv57 translation and a zero-entry PMP, plus Smstateen/Ssstateen,
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
//! - [`decode`]: 16- and 32-bit encodings into the compact [`decode::Insn`] form.
//! - `execute`: instruction semantics, one file per extension.
//! - [`csr`]: the CSR table (number, privilege, read and write behaviour).
//! - `mmu`: Sv39/Sv48/Sv57 page walks and the software TLB.
//! - `jit`: block translation to x86-64 for the stretches where nothing is observed per
//!   instruction (`HartConfig::jit`); guest-visible behaviour is the interpreter's.
//! - [`trap`]: exception and interrupt causes and trap entry/return.
//! - [`ctr`]: Control Transfer Records (Smctr/Ssctr): the buffer and the recording rules.
//! - [`pmu`]: counters and sampling (Zihpm, Sscofpmf, Smcntrpmf, Smcdeleg, Sspesa,
//!   Ssplcofi, Smpdis): the event catalog, the cost/cache/TLB/predictor models, PDIS.
//! - [`fpu`]: IEEE-754 arithmetic for F and D (pure integer Rust, RISC-V choices: canonical NaNs, tininess after rounding).
//! - `memory`: guest RAM and the physical memory map seen by the hart.

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
pub mod pmu;
pub mod state;
pub mod trap;
mod vcpu;

pub use config::{HartConfig, MmioRange};
pub use hart::{Hart, HartError};
pub use vcpu::GUEST_HEDELEG;
pub use vcpu_api::{
    zicsr, CsrError, GuestTrap, GuestTraps, HartMailbox, MmioAccess, PrivilegeMode, SharedClock,
    StateError, StopHandle, Vcpu, VcpuExit, VcpuState, INSNS_PER_TICK, TIMEBASE_HZ,
};
