//! The guest-physical memory map of `vmm machine` and `vmm run` (the same addresses as
//! QEMU's `virt` board). It depends on nothing else in the crate, so that every module
//! (the snapshot format included) can use it; [`crate::machine`] re-exports it.

/// Id of the only hart (`mhartid`, and `a0` at entry).
pub const HART_ID: u64 = 0;

/// Start of RAM.
pub const RAM_BASE: u64 = 0x8000_0000;
/// Largest accepted RAM size, in MiB (64 GiB).
pub const MAX_MEMORY_MIB: u64 = 64 * 1024;

/// SiFive test finisher.
pub const FINISHER_BASE: u64 = 0x10_0000;
/// Size of the finisher window.
pub const FINISHER_SIZE: u64 = 0x1000;

/// CLINT.
pub const CLINT_BASE: u64 = 0x200_0000;
/// Size of the CLINT window.
pub const CLINT_SIZE: u64 = 0x1_0000;

/// PLIC (platform-level interrupt controller).
pub const PLIC_BASE: u64 = 0x0c00_0000;
/// Size of the PLIC window.
pub const PLIC_SIZE: u64 = 0x60_0000;

/// ns16550a UART.
pub const UART_BASE: u64 = 0x1000_0000;
/// Size of the UART window.
pub const UART_SIZE: u64 = 0x100;

/// Largest device tree `vmm run` accepts (placed at the end of RAM, in bytes).
pub const FDT_MAX: u64 = 64 << 10;
