//! The vCPU backend: the one module of the VMM that names the interpreter crate (`vcpu`).
//!
//! The rest of `vmm` reaches a vCPU through `vcpu_api` (the [`vcpu_api::Vcpu`] and
//! [`vcpu_api::VcpuState`] traits, exits, CSR numbers, trap causes, CTR and PMU types) and
//! the names below. The backend today is the software hart with the H extension; a KVM
//! backend on riscv64 hosts would be a second module like this one, chosen at build time.
//! `vmm machine` (a bare-metal board, not a VM) also uses the hart's M-mode side: the CLINT
//! drives its `mtime`, `mtimecmp` and `msip` (`devices/clint.rs`).

/// The PMP registers of a hart's state; [`PmpState::allow_all`] is what the hart in hosted
/// mode starts with (the VMM is the guest's M-mode firmware).
pub use vcpu::pmp::PmpState;
/// The hart's complete architectural state ([`vcpu_api::VcpuState::State`] of [`Hart`]).
pub use vcpu::state::HartState;
/// The hart state of VMs saved before the IMSIC (snapshot formats 9 and 10, migration
/// protocol 4).
pub use vcpu::state::HartStateNoImsic;
/// The hart state of VMs saved before the PMP (snapshot formats 7 and 8, migration
/// protocol 2).
pub use vcpu::state::HartStateNoPmp;
/// The hart state of VMs saved before the TLB's translations (snapshot format 12, migration
/// protocol 6).
pub use vcpu::state::HartStateNoTlb;
/// The hart state of VMs saved before the debug triggers (snapshot format 11, migration
/// protocol 5).
pub use vcpu::state::HartStateNoTriggers;
/// A hart's TLB translations in its state ([`HartState::tlb`]).
pub use vcpu::state::{TlbEntry, TlbState};
/// The number of PMP entries the VMM's harts implement (`HartConfig::pmp_entries`).
pub const PMP_ENTRIES: usize = vcpu::pmp::ENTRIES;
/// The dispatch to a block at which the VMM's harts translate it
/// (`HartConfig::jit_threshold`): the first two run interpreted, so that code that runs
/// once or twice, most of a Linux boot's blocks, costs no translation (`docs/architecture.md`,
/// "Hot blocks").
pub const JIT_THRESHOLD: u16 = 3;
/// An IMSIC's configuration (identities, GEILEN) and one of its interrupt files, for
/// `vmm machine --aia imsic` (`devices/imsic.rs`).
pub use vcpu::csr::imsic::{ImsicConfig, InterruptFileId};
/// The vCPU: a hart model in hosted mode (`vmm run`) or a bare-metal hart (`vmm machine`).
pub use vcpu::Hart;
/// How a hart is built: its extensions, CTR and counters, block translation.
pub use vcpu::HartConfig;
/// Why a hart could not be built or run.
pub use vcpu::HartError;
/// A window of guest-physical addresses the hart hands to the VMM as MMIO.
pub use vcpu::MmioRange;
