//! `vmm`: a minimal virtual machine monitor for the [`vcpu`] software hart.
//!
//! Today it provides the bare-machine platform ([`machine`]): one hart in M-mode, RAM and
//! a few devices laid out like QEMU's `virt` board, running a bare-metal ELF executable.
//!
//! - [`machine`]: board assembly and the run loop ([`machine::run_elf`]).
//! - [`layout`]: the guest-physical memory map both platforms share.
//! - [`loader`]: ELF validation and loading.
//! - [`devices`]: UART, SiFive test finisher, CLINT and HTIF.
//! - [`run`]: `vmm run`, a guest kernel in VS-mode on a hosted-mode hart ([`run::run_kernel`]).
//! - [`sbi`]: the SBI v2.0 implementation `vmm run` gives its guests.
//! - [`ram`]: guest RAM (huge pages where the host has them).
//! - [`persist`]: the [`persist::Persist`] trait of the parts a snapshot saves.
//! - [`error`]: the [`Error`] type.

pub mod backend;
pub mod ctl;
pub mod devices;
pub mod error;
pub mod gdb;
pub mod layout;
pub mod loader;
pub mod machine;
pub mod persist;
pub mod ram;
pub mod run;
pub mod sbi;
pub mod snapshot;
pub mod symbols;

#[cfg(test)]
mod testutil;

pub use error::Error;
