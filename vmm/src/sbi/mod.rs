//! The RISC-V Supervisor Binary Interface (SBI v2.0) as `vmm run` provides it to a guest
//! kernel running in VS-mode.
//!
//! The guest calls the SBI with `ECALL` from VS-mode, which exits to the VMM as a guest
//! trap with cause 10. Calling convention (SBI v2.0, chapter 3): `a7` = extension ID (EID),
//! `a6` = function ID (FID), arguments in `a0`-`a5`; the VMM returns `a0` = error code and
//! `a1` = value, and resumes the guest after the `ECALL`.
//!
//! Extensions, one module each:
//!
//! | EID | name | module |
//! | --- | --- | --- |
//! | `0x10` | Base | [`base`] |
//! | `0x54494D45` | Timer (`TIME`) | [`time`] |
//! | `0x735049` | IPI (`sPI`) | [`ipi`] |
//! | `0x52464E43` | RFENCE (`RFNC`) | [`rfence`] |
//! | `0x48534D` | Hart state management (`HSM`) | [`hsm`] |
//! | `0x53525354` | System reset (`SRST`) | [`srst`] |
//! | `0x4442434E` | Debug console (`DBCN`) | [`dbcn`] |
//! | `0x504D55` | Performance monitoring (`PMU`), when the VM has a PMU | [`pmu`] |
//!
//! Choices where the specification leaves room:
//! - The legacy extensions (EID 0x00-0x0F) are not provided: every legacy call returns
//!   `SBI_ERR_NOT_SUPPORTED` in `a0`. Kernels that know SBI v0.2 or later probe for the
//!   extensions above (Linux uses DBCN for its early console).
//! - Unknown EIDs, and unknown FIDs of known extensions, return `SBI_ERR_NOT_SUPPORTED`.
//! - The implementation ID is [`base::IMPL_ID`] (`0x564D4D`, ASCII "VMM"), which is not in
//!   the spec's list of registered implementation IDs.
//!
//! The platform side (the hart's timer and interrupt lines, guest memory, the console and
//! the virtual PMU) is reached through [`SbiEnv`], so the dispatch can be tested without a
//! hart. Every call is reported to the platform as firmware events for the PMU's firmware
//! counters ([`SbiEnv::firmware_event`]): the call itself, and the timers, IPIs and remote
//! fences it makes.

pub mod base;
pub mod dbcn;
pub mod hsm;
pub mod ipi;
pub mod pmu;
pub mod rfence;
pub mod srst;
pub mod time;

pub use pmu_virt::FwEvent;
use vm_memory::GuestMemoryMmap;

/// `SBI_SUCCESS`.
pub const SBI_SUCCESS: i64 = 0;
/// `SBI_ERR_FAILED`.
pub const SBI_ERR_FAILED: i64 = -1;
/// `SBI_ERR_NOT_SUPPORTED`.
pub const SBI_ERR_NOT_SUPPORTED: i64 = -2;
/// `SBI_ERR_INVALID_PARAM`.
pub const SBI_ERR_INVALID_PARAM: i64 = -3;
/// `SBI_ERR_DENIED`.
pub const SBI_ERR_DENIED: i64 = -4;
/// `SBI_ERR_INVALID_ADDRESS`.
pub const SBI_ERR_INVALID_ADDRESS: i64 = -5;
/// `SBI_ERR_ALREADY_AVAILABLE`.
pub const SBI_ERR_ALREADY_AVAILABLE: i64 = -6;
/// `SBI_ERR_ALREADY_STARTED`.
pub const SBI_ERR_ALREADY_STARTED: i64 = pmu_virt::sbi::ERR_ALREADY_STARTED;
/// `SBI_ERR_ALREADY_STOPPED`.
pub const SBI_ERR_ALREADY_STOPPED: i64 = pmu_virt::sbi::ERR_ALREADY_STOPPED;
/// `SBI_ERR_NO_SHMEM`.
pub const SBI_ERR_NO_SHMEM: i64 = pmu_virt::sbi::ERR_NO_SHMEM;

/// Extension IDs.
pub mod eid {
    /// Base extension.
    pub const BASE: u64 = 0x10;
    /// Timer extension ("TIME").
    pub const TIME: u64 = 0x5449_4D45;
    /// IPI extension ("sPI").
    pub const IPI: u64 = 0x73_5049;
    /// RFENCE extension ("RFNC").
    pub const RFENCE: u64 = 0x5246_4E43;
    /// Hart state management ("HSM").
    pub const HSM: u64 = 0x48_534D;
    /// System reset ("SRST").
    pub const SRST: u64 = 0x5352_5354;
    /// Debug console ("DBCN").
    pub const DBCN: u64 = 0x4442_434E;
    /// Performance monitoring unit ("PMU").
    pub const PMU: u64 = pmu_virt::sbi::EID;
    /// Last legacy extension ID (0x00-0x0F).
    pub const LEGACY_LAST: u64 = 0x0F;
}

/// Every extension this SBI implementation always provides (PMU too when the VM has a PMU:
/// [`SbiEnv::has_pmu`]).
pub const EXTENSIONS: &[u64] = &[
    eid::BASE,
    eid::TIME,
    eid::IPI,
    eid::RFENCE,
    eid::HSM,
    eid::SRST,
    eid::DBCN,
];

/// A short name for an extension ID (for statistics and logs).
pub fn extension_name(eid: u64) -> &'static str {
    EXTENSION_NAMES[extension_index(eid)]
}

/// The names [`extension_name`] gives, indexed by [`extension_index`].
pub const EXTENSION_NAMES: [&str; 10] = [
    "BASE", "TIME", "IPI", "RFENCE", "HSM", "SRST", "DBCN", "PMU", "legacy", "unknown",
];

/// The index in [`EXTENSION_NAMES`] of extension `eid`'s name.
pub fn extension_index(eid: u64) -> usize {
    match eid {
        eid::BASE => 0,
        eid::TIME => 1,
        eid::IPI => 2,
        eid::RFENCE => 3,
        eid::HSM => 4,
        eid::SRST => 5,
        eid::DBCN => 6,
        eid::PMU => 7,
        0..=eid::LEGACY_LAST => 8,
        _ => 9,
    }
}

/// The name of function `fid` of extension `eid` as the SBI specification (v2.0) gives it,
/// e.g. `set_timer`, `hart_start`, `counter_start` (for exit traces); `None` for functions
/// it does not define.
pub fn function_name(eid: u64, fid: u64) -> Option<&'static str> {
    const BASE: &[&str] = &[
        "get_spec_version",
        "get_impl_id",
        "get_impl_version",
        "probe_extension",
        "get_mvendorid",
        "get_marchid",
        "get_mimpid",
    ];
    const RFENCE: &[&str] = &[
        "remote_fence_i",
        "remote_sfence_vma",
        "remote_sfence_vma_asid",
        "remote_hfence_gvma_vmid",
        "remote_hfence_gvma",
        "remote_hfence_vvma_asid",
        "remote_hfence_vvma",
    ];
    const HSM: &[&str] = &["hart_start", "hart_stop", "hart_get_status", "hart_suspend"];
    const DBCN: &[&str] = &[
        "debug_console_write",
        "debug_console_read",
        "debug_console_write_byte",
    ];
    const PMU: &[&str] = &[
        "num_counters",
        "counter_get_info",
        "counter_config_matching",
        "counter_start",
        "counter_stop",
        "counter_fw_read",
        "counter_fw_read_hi",
        "snapshot_set_shmem",
        "event_get_info",
    ];
    const LEGACY: &[&str] = &[
        "legacy_set_timer",
        "legacy_console_putchar",
        "legacy_console_getchar",
        "legacy_clear_ipi",
        "legacy_send_ipi",
        "legacy_remote_fence_i",
        "legacy_remote_sfence_vma",
        "legacy_remote_sfence_vma_asid",
        "legacy_shutdown",
    ];
    let (names, index): (&[&str], u64) = match eid {
        eid::BASE => (BASE, fid),
        eid::TIME => (&["set_timer"], fid),
        eid::IPI => (&["send_ipi"], fid),
        eid::RFENCE => (RFENCE, fid),
        eid::HSM => (HSM, fid),
        eid::SRST => (&["system_reset"], fid),
        eid::DBCN => (DBCN, fid),
        eid::PMU => (PMU, fid),
        // Legacy extensions have one function each, named by the extension ID.
        0..=eid::LEGACY_LAST => (LEGACY, eid),
        _ => return None,
    };
    usize::try_from(index)
        .ok()
        .and_then(|i| names.get(i))
        .copied()
}

/// The name of an SBI error code (`SBI_SUCCESS`, `SBI_ERR_NOT_SUPPORTED`, ...), for exit
/// traces; `None` for codes the specification does not define.
pub fn error_name(error: i64) -> Option<&'static str> {
    const NAMES: [&str; 14] = [
        "SBI_SUCCESS",
        "SBI_ERR_FAILED",
        "SBI_ERR_NOT_SUPPORTED",
        "SBI_ERR_INVALID_PARAM",
        "SBI_ERR_DENIED",
        "SBI_ERR_INVALID_ADDRESS",
        "SBI_ERR_ALREADY_AVAILABLE",
        "SBI_ERR_ALREADY_STARTED",
        "SBI_ERR_ALREADY_STOPPED",
        "SBI_ERR_NO_SHMEM",
        "SBI_ERR_INVALID_STATE",
        "SBI_ERR_BAD_RANGE",
        "SBI_ERR_TIMEOUT",
        "SBI_ERR_IO",
    ];
    usize::try_from(error.checked_neg()?)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
}

/// One SBI call as the guest made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SbiCall {
    /// Extension ID (`a7`).
    pub eid: u64,
    /// Function ID (`a6`).
    pub fid: u64,
    /// Arguments (`a0`-`a5`).
    pub args: [u64; 6],
}

impl SbiCall {
    /// The call in the registers given by `xreg` (x10-x17 are a0-a7).
    pub fn from_regs(xreg: impl Fn(usize) -> u64) -> SbiCall {
        SbiCall {
            eid: xreg(17),
            fid: xreg(16),
            args: [xreg(10), xreg(11), xreg(12), xreg(13), xreg(14), xreg(15)],
        }
    }
}

/// The `sbiret` pair: `a0` = error, `a1` = value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SbiRet {
    /// `SBI_SUCCESS` or a negative error code.
    pub error: i64,
    /// The function's result.
    pub value: u64,
}

impl SbiRet {
    /// Success with `value`.
    pub fn ok(value: u64) -> SbiRet {
        SbiRet {
            error: SBI_SUCCESS,
            value,
        }
    }
    /// Failure with `error`.
    pub fn err(error: i64) -> SbiRet {
        SbiRet { error, value: 0 }
    }
}

/// What the VMM does after an SBI call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SbiOutcome {
    /// Write `a0`/`a1` and resume after the `ECALL`.
    Return(SbiRet),
    /// SRST `system_reset`: end the run (the call does not return).
    Reset(srst::ResetRequest),
    /// HSM `hart_stop` on the calling hart: it never returns from the call.
    HartStopped,
}

impl From<SbiRet> for SbiOutcome {
    fn from(r: SbiRet) -> Self {
        SbiOutcome::Return(r)
    }
}

/// What the SBI implementation needs from the platform.
pub trait SbiEnv {
    /// Number of harts; their ids are `0..hart_count()`.
    fn hart_count(&self) -> u64 {
        1
    }
    /// The calling hart's id.
    fn current_hart(&self) -> u64 {
        0
    }
    /// HSM `hart_start` of `hart` (an existing hart id): `SBI_SUCCESS` when it will start at
    /// `start_addr` with `a0` = its id and `a1` = `opaque`, `SBI_ERR_ALREADY_AVAILABLE` when it
    /// is not stopped. The default (one hart, always started) always reports the latter.
    fn hart_start(&mut self, _hart: u64, _start_addr: u64, _opaque: u64) -> SbiRet {
        SbiRet::err(SBI_ERR_ALREADY_AVAILABLE)
    }
    /// HSM `hart_get_status` of `hart` (an existing hart id). Default: started.
    fn hart_status(&self, _hart: u64) -> u64 {
        hsm::STATE_STARTED
    }
    /// RFENCE: make every hart in `harts` flush its address-translation and instruction
    /// caches before this returns (or before it executes another instruction). The default
    /// (one hart, the caller) has nothing to do: see [`rfence`].
    fn remote_fence(&mut self, _harts: &[u64]) {}
    /// Program the guest timer of the calling hart and clear its pending timer interrupt.
    fn set_timer(&mut self, deadline: u64);
    /// Make a supervisor software interrupt pending on `hart`.
    fn send_ipi(&mut self, hart: u64);
    /// Guest RAM (guest-physical addresses).
    fn memory(&self) -> &GuestMemoryMmap;
    /// Write console output; returns the number of bytes accepted.
    fn console_write(&mut self, bytes: &[u8]) -> std::io::Result<usize>;
    /// Take up to `buf.len()` bytes of console input without waiting; returns how many.
    fn console_read(&mut self, buf: &mut [u8]) -> usize;
    /// Whether the VM has a PMU (the PMU extension is available). Default: no.
    fn has_pmu(&self) -> bool {
        false
    }
    /// A PMU call of the calling hart (only made when [`SbiEnv::has_pmu`]).
    fn pmu_call(&mut self, _fid: u64, _args: [u64; 6]) -> SbiRet {
        SbiRet::err(SBI_ERR_NOT_SUPPORTED)
    }
    /// Counts a firmware event on `hart` (for the PMU's firmware counters). Default: none.
    fn firmware_event(&mut self, _hart: u64, _event: FwEvent) {}
}

/// Handles one SBI call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    let hart = env.current_hart();
    env.firmware_event(hart, FwEvent::SbiCalls);
    match call.eid {
        eid::BASE => base::handle(call, env),
        eid::TIME => time::handle(call, env),
        eid::IPI => ipi::handle(call, env),
        eid::RFENCE => rfence::handle(call, env),
        eid::HSM => hsm::handle(call, env),
        eid::SRST => srst::handle(call, env),
        eid::DBCN => dbcn::handle(call, env),
        eid::PMU => pmu::handle(call, env),
        _ => {
            log::debug!(
                "sbi: unsupported extension {:#x} (fid {:#x})",
                call.eid,
                call.fid
            );
            SbiRet::err(SBI_ERR_NOT_SUPPORTED).into()
        }
    }
}

/// The harts selected by a `(hart_mask, hart_mask_base)` pair (SBI v2.0 §3.2): every hart
/// when `hart_mask_base` is -1, else hart `hart_mask_base + i` for each set bit `i` of
/// `hart_mask`. `None` (`SBI_ERR_INVALID_PARAM`) when a selected hart does not exist.
pub fn selected_harts(hart_mask: u64, hart_mask_base: u64, hart_count: u64) -> Option<Vec<u64>> {
    if hart_mask_base == u64::MAX {
        return Some((0..hart_count).collect());
    }
    let mut harts = Vec::new();
    for bit in 0..64 {
        if hart_mask & (1 << bit) != 0 {
            let hart = hart_mask_base.checked_add(bit)?;
            if hart >= hart_count {
                return None;
            }
            harts.push(hart);
        }
    }
    Some(harts)
}

#[cfg(test)]
pub(crate) mod tests;
