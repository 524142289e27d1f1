//! The SiFive test finisher (`sifive,test0`), which lets a guest end the run.
//!
//! A 32-bit store at offset 0 is decoded as `status | code << 16`:
//! - status `0x5555` (PASS): the run ends with exit status 0;
//! - status `0x3333` (FAIL): the run ends with exit status `code`;
//! - status `0x7777` (RESET): a reset request, which machine mode does not support.
//!
//! Other values, other offsets and other sizes are ignored (with a warning); loads read 0.

/// What a store to the finisher asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinisherCommand {
    /// Status 0x5555.
    Pass,
    /// Status 0x3333 with the given exit code.
    Fail {
        /// Bits 31:16 of the value.
        code: u32,
    },
    /// Status 0x7777.
    Reset,
    /// Anything else.
    Unknown(u32),
}

const STATUS_FAIL: u32 = 0x3333;
const STATUS_PASS: u32 = 0x5555;
const STATUS_RESET: u32 = 0x7777;

/// Decodes a 32-bit value written to the finisher.
pub fn decode(value: u32) -> FinisherCommand {
    match value & 0xffff {
        STATUS_PASS => FinisherCommand::Pass,
        STATUS_FAIL => FinisherCommand::Fail { code: value >> 16 },
        STATUS_RESET => FinisherCommand::Reset,
        _ => FinisherCommand::Unknown(value),
    }
}

/// The finisher device. It has no state.
#[derive(Debug, Default)]
pub struct Finisher;

impl Finisher {
    /// A load at `offset`: the device has nothing to read.
    pub fn read(&self, _offset: u64, _size: u8) -> u64 {
        0
    }

    /// A store at `offset`; returns the command if the store is one.
    pub fn write(&self, offset: u64, size: u8, value: u64) -> Option<FinisherCommand> {
        if offset != 0 || size != 4 {
            log::warn!("finisher: {size}-byte write of {value:#x} at offset {offset:#x} ignored (expected a 32-bit write at offset 0)");
            return None;
        }
        match decode(value as u32) {
            FinisherCommand::Unknown(v) => {
                log::warn!("finisher: unknown command {v:#x} ignored");
                None
            }
            cmd => Some(cmd),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_commands() {
        assert_eq!(decode(0x5555), FinisherCommand::Pass);
        assert_eq!(decode(0x0001_5555), FinisherCommand::Pass);
        assert_eq!(decode(0x3333), FinisherCommand::Fail { code: 0 });
        assert_eq!(decode(0x0007_3333), FinisherCommand::Fail { code: 7 });
        assert_eq!(decode(0xffff_3333), FinisherCommand::Fail { code: 0xffff });
        assert_eq!(decode(0x7777), FinisherCommand::Reset);
        assert_eq!(decode(0x1234), FinisherCommand::Unknown(0x1234));
        assert_eq!(decode(0), FinisherCommand::Unknown(0));
    }

    #[test]
    fn only_32_bit_writes_at_offset_0_count() {
        let f = Finisher;
        assert_eq!(f.write(0, 4, 0x5555), Some(FinisherCommand::Pass));
        assert_eq!(
            f.write(0, 4, 0x2a_3333),
            Some(FinisherCommand::Fail { code: 42 })
        );
        // The upper half of a 64-bit register value is not part of the 32-bit store.
        assert_eq!(
            f.write(0, 4, 0xffff_ffff_0000_5555),
            Some(FinisherCommand::Pass)
        );
        assert_eq!(f.write(0, 8, 0x5555), None);
        assert_eq!(f.write(0, 2, 0x5555), None);
        assert_eq!(f.write(4, 4, 0x5555), None);
        assert_eq!(f.write(0, 4, 0x1111), None);
        assert_eq!(f.read(0, 4), 0);
    }
}
