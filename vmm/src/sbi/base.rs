//! Base extension (EID 0x10, SBI v2.0 chapter 4).

use super::{eid, SbiCall, SbiEnv, SbiOutcome, SbiRet, EXTENSIONS, SBI_ERR_NOT_SUPPORTED};

/// `sbi_get_spec_version` result: major 2 (bits 30:24), minor 0 (bits 23:0).
pub const SPEC_VERSION: u64 = 2 << 24;

/// `sbi_get_impl_id` result: ASCII "VMM". Not one of the implementation IDs registered in
/// the SBI specification (0-11 at the time of v2.0), so kernels cannot mistake this VMM for
/// another implementation.
pub const IMPL_ID: u64 = 0x56_4D4D;

/// `sbi_get_impl_version` result: this crate's version as `major << 16 | minor << 8 | patch`.
pub fn impl_version() -> u64 {
    let part = |s: &str| s.parse::<u64>().unwrap_or(0) & 0xff;
    part(env!("CARGO_PKG_VERSION_MAJOR")) << 16
        | part(env!("CARGO_PKG_VERSION_MINOR")) << 8
        | part(env!("CARGO_PKG_VERSION_PATCH"))
}

/// Handles a Base call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    let value = match call.fid {
        0 => SPEC_VERSION,
        1 => IMPL_ID,
        2 => impl_version(),
        // sbi_probe_extension: 1 when available, 0 when not.
        3 => u64::from(
            EXTENSIONS.contains(&call.args[0]) || (call.args[0] == eid::PMU && env.has_pmu()),
        ),
        // mvendorid, marchid, mimpid: the hart reports 0 for all three.
        4..=6 => 0,
        _ => return SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
    };
    SbiRet::ok(value).into()
}
