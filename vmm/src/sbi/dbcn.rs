//! Debug console extension (EID 0x4442434E "DBCN", SBI v2.0 chapter 12).
//!
//! - `console_write(num_bytes, base_addr_lo, base_addr_hi)` (FID 0) writes bytes from guest
//!   memory to the console and returns how many were written (at most [`MAX_CHUNK`] per
//!   call, which the spec allows: the caller retries with the rest).
//! - `console_read(num_bytes, base_addr_lo, base_addr_hi)` (FID 1) copies up to `num_bytes`
//!   of pending console input into guest memory without waiting and returns how many (0
//!   when there is none).
//! - `console_write_byte(byte)` (FID 2) writes one byte.
//!
//! The buffer is guest-physical: on RV64, `base_addr_hi` holds bits 127:64 of the address
//! and must be 0. A buffer that does not lie entirely in guest RAM is
//! `SBI_ERR_INVALID_PARAM`. Console output errors are `SBI_ERR_FAILED`.

use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryRegion};

use super::{SbiCall, SbiEnv, SbiOutcome, SbiRet};
use super::{SBI_ERR_FAILED, SBI_ERR_INVALID_PARAM, SBI_ERR_NOT_SUPPORTED};

/// Largest number of bytes one call transfers.
pub const MAX_CHUNK: u64 = 64 * 1024;

/// The buffer's guest-physical address if `[addr, addr + len)` is in guest RAM.
fn buffer(call: &SbiCall, env: &dyn SbiEnv) -> Option<(GuestAddress, u64)> {
    let [len, lo, hi, ..] = call.args;
    if hi != 0 {
        return None;
    }
    let mem = env.memory();
    if len == 0 {
        return mem
            .address_in_range(GuestAddress(lo))
            .then_some((GuestAddress(lo), 0));
    }
    let last = lo.checked_add(len - 1)?;
    let start = GuestAddress(lo);
    // RAM is one region, so both ends in RAM means the whole range is.
    let same_region = mem.find_region(start).map(|r| r.start_addr())
        == mem.find_region(GuestAddress(last)).map(|r| r.start_addr());
    (mem.address_in_range(start) && mem.address_in_range(GuestAddress(last)) && same_region)
        .then_some((start, len))
}

/// Handles a DBCN call.
pub fn handle(call: &SbiCall, env: &mut dyn SbiEnv) -> SbiOutcome {
    match call.fid {
        0 => {
            let Some((addr, len)) = buffer(call, env) else {
                return SbiRet::err(SBI_ERR_INVALID_PARAM).into();
            };
            let mut bytes = vec![0u8; len.min(MAX_CHUNK) as usize];
            if env.memory().read_slice(&mut bytes, addr).is_err() {
                return SbiRet::err(SBI_ERR_INVALID_PARAM).into();
            }
            match env.console_write(&bytes) {
                Ok(n) => SbiRet::ok(n as u64).into(),
                Err(e) => {
                    log::warn!("sbi: console write failed: {e}");
                    SbiRet::err(SBI_ERR_FAILED).into()
                }
            }
        }
        1 => {
            let Some((addr, len)) = buffer(call, env) else {
                return SbiRet::err(SBI_ERR_INVALID_PARAM).into();
            };
            let mut bytes = vec![0u8; len.min(MAX_CHUNK) as usize];
            let n = env.console_read(&mut bytes);
            if env.memory().write_slice(&bytes[..n], addr).is_err() {
                return SbiRet::err(SBI_ERR_INVALID_PARAM).into();
            }
            SbiRet::ok(n as u64).into()
        }
        2 => match env.console_write(&[call.args[0] as u8]) {
            Ok(_) => SbiRet::ok(0).into(),
            Err(e) => {
                log::warn!("sbi: console write failed: {e}");
                SbiRet::err(SBI_ERR_FAILED).into()
            }
        },
        _ => SbiRet::err(SBI_ERR_NOT_SUPPORTED).into(),
    }
}
