//! Test helpers of the unit tests: the workspace's `test-support` crate under the names
//! these tests use (an ELF64 writer, the RV64 encoders as `asm`, an inspectable console and
//! the xorshift generator).

pub use test_support::elf::ElfBuilder;
pub use test_support::rv64 as asm;
pub use test_support::{SharedBuf, XorShift as Xorshift};
