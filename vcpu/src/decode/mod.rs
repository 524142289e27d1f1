//! Instruction decoding: every 16- and 32-bit encoding into the compact [`Insn`] form.
//!
//! Decoding happens once per instruction; the hart caches the result (the decode cache, `interp.rs`).
//! Anything that is not a defined RV64GC encoding decodes to [`Op::Illegal`], so reserved
//! encodings raise illegal-instruction with the instruction bits in `xtval`.
//!
//! Writes to `x0` are redirected at decode time to the sink register 32, so execution never
//! has to special-case `x0`.

mod compressed;
mod insn;
mod rv64;

pub use compressed::decode_compressed;
pub(crate) use insn::float_compute;
pub use insn::{Insn, Op, FMT_D, FMT_S, X0_SINK};
pub use rv64::decode_32;

/// PAUSE (Zihintpause): the FENCE with predecessor set W, empty successor set, `fm`, `rs1`
/// and `rd` zero (unprivileged spec, "Zihintpause Extension for Pause Hint").
pub const PAUSE: u32 = 0x0100_000f;

/// Decode the instruction whose first halfword is the low 16 bits of `bits` (the upper 16
/// bits are only used when the instruction is 32 bits long).
pub fn decode(bits: u32) -> Insn {
    if bits & 3 == 3 {
        decode_32(bits)
    } else {
        decode_compressed(bits as u16)
    }
}

/// Length in bytes of the instruction whose first halfword is `lo`.
#[inline]
pub fn insn_len(lo: u16) -> u8 {
    if lo & 3 == 3 {
        4
    } else {
        2
    }
}
