//! Guest kernel formats for `vmm run`: an RV64 ELF executable, or a Linux riscv64 `Image`.
//!
//! - ELF: the `PT_LOAD` segments are copied to their physical addresses (`p_paddr`), which
//!   must lie in guest RAM; the entry point is `e_entry` (validation by
//!   [`crate::loader::ElfImage`], the same rules as `vmm machine`).
//! - `Image`: the 64-byte header of the Linux riscv64 boot image
//!   (Documentation/arch/riscv/boot-image-header.rst in the kernel tree) is recognized by its
//!   magic number `"RSC\x05"` at offset 56 (or the deprecated `"RISCV\0\0\0"` at offset 48).
//!   The whole file is copied to RAM base + `text_offset` (0x20_0000 for RV64 kernels) and
//!   the guest enters at its first byte; `image_size` (the memory the kernel occupies,
//!   including its bss) must fit in RAM too.
//!
//! rust-vmm's `linux-loader` has a loader for this format, but it is compiled only when the
//! *host* is riscv64 or aarch64, so `vmm` (which runs riscv64 guests on any host) reads the
//! header itself.

use std::ops::Range;

use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use crate::loader::{ElfImage, LoadError};

/// Size of the riscv64 `Image` header.
pub const IMAGE_HEADER_LEN: usize = 64;
/// `magic2` at offset 56: "RSC\x05".
pub const IMAGE_MAGIC2: u32 = 0x0543_5352;
/// The deprecated `magic` at offset 48: "RISCV\0\0\0".
pub const IMAGE_MAGIC: u64 = 0x56_4353_4952;
/// RV64 kernels must start on a 2 MiB boundary (a PMD-sized page).
pub const IMAGE_ALIGN: u64 = 2 << 20;

/// Why a kernel file cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// Neither ELF magic nor `Image` magic.
    #[error(
        "not a kernel: neither an ELF executable (no \\x7fELF magic) nor a RISC-V Linux Image \
         (no \"RSC\\x05\" magic at offset 56)"
    )]
    Unrecognized,

    /// An ELF file that cannot be loaded.
    #[error("{0}")]
    Elf(#[from] LoadError),

    /// An `Image` whose load address is not usable.
    #[error(
        "Image text_offset {text_offset:#x} puts the kernel at {addr:#x}, which is not \
         2 MiB-aligned as RV64 Linux requires"
    )]
    ImageMisaligned {
        /// `text_offset` from the header.
        text_offset: u64,
        /// RAM base + `text_offset`.
        addr: u64,
    },

    /// An `Image` whose `text_offset` does not land in guest RAM (RAM base + offset wraps
    /// past 2^64, i.e. below RAM, or lies at or past its end).
    #[error(
        "Image text_offset {text_offset:#x} puts the kernel {where_}, outside guest RAM \
         [{:#x}, {:#x}): text_offset is an offset from the start of RAM (0x200000 for RV64)",
        ram.start, ram.end
    )]
    ImageOffsetOutsideRam {
        /// `text_offset` from the header.
        text_offset: u64,
        /// Where: "below RAM (RAM base + text_offset wraps past 2^64)" or "at …".
        where_: String,
        /// Guest RAM.
        ram: Range<u64>,
    },

    /// An `Image` that does not fit in RAM.
    #[error(
        "Image needs {size:#x} bytes at {addr:#x} but guest RAM is [{:#x}, {:#x}) \
         (use a larger --memory)", ram.start, ram.end
    )]
    ImageTooBig {
        /// Load address.
        addr: u64,
        /// Bytes needed (the larger of the file size and `image_size`).
        size: u64,
        /// Guest RAM.
        ram: Range<u64>,
    },

    /// Copying into guest memory failed (should not happen after validation).
    #[error("cannot write the kernel ({len} bytes) to guest memory at {addr:#x}")]
    GuestMemory {
        /// Load address.
        addr: u64,
        /// Bytes to write.
        len: u64,
    },
}

/// The format of a kernel file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelFormat {
    /// An ELF executable.
    Elf,
    /// A Linux riscv64 `Image`.
    Image,
}

/// A kernel loaded into guest RAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedKernel {
    /// The file's format.
    pub format: KernelFormat,
    /// Where the guest starts.
    pub entry: u64,
    /// Guest-physical memory the kernel occupies (nothing else may be placed there).
    pub span: Range<u64>,
}

/// The fields of a riscv64 `Image` header that matter for loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageHeader {
    /// Load offset from the start of RAM.
    pub text_offset: u64,
    /// Effective image size (including bss); 0 when unknown.
    pub image_size: u64,
}

impl ImageHeader {
    /// The header of `data`, if it is a riscv64 `Image`.
    pub fn parse(data: &[u8]) -> Option<ImageHeader> {
        if data.len() < IMAGE_HEADER_LEN {
            return None;
        }
        let u64_at = |off: usize| u64::from_le_bytes(data[off..off + 8].try_into().unwrap());
        let u32_at = |off: usize| u32::from_le_bytes(data[off..off + 4].try_into().unwrap());
        if u32_at(56) != IMAGE_MAGIC2 && u64_at(48) != IMAGE_MAGIC {
            return None;
        }
        Some(ImageHeader {
            text_offset: u64_at(8),
            image_size: u64_at(16),
        })
    }
}

/// Validates `data` as a kernel for guest RAM `ram` and copies it into `mem`.
pub fn load_kernel(
    data: &[u8],
    mem: &GuestMemoryMmap,
    ram: Range<u64>,
) -> Result<LoadedKernel, KernelError> {
    if data.starts_with(b"\x7fELF") {
        let image = ElfImage::parse(data, ram)?;
        image.load(data, mem)?;
        let start = image.segments.iter().map(|s| s.paddr).min().unwrap_or(0);
        let end = image
            .segments
            .iter()
            .map(|s| s.paddr + s.memsz)
            .max()
            .unwrap_or(0);
        return Ok(LoadedKernel {
            format: KernelFormat::Elf,
            entry: image.entry,
            span: start..end,
        });
    }
    let header = ImageHeader::parse(data).ok_or(KernelError::Unrecognized)?;
    let span = place_image(&header, data.len() as u64, ram)?;
    mem.write_slice(data, GuestAddress(span.start))
        .map_err(|_| KernelError::GuestMemory {
            addr: span.start,
            len: data.len() as u64,
        })?;
    Ok(LoadedKernel {
        format: KernelFormat::Image,
        entry: span.start,
        span,
    })
}

/// Where a Linux `Image` with `header`, a file of `len` bytes, goes in guest RAM `ram`
/// (RAM base + `text_offset`, 2 MiB aligned), and the RAM it takes (its file or its
/// `image_size`, whichever is larger): checked to lie within `ram`.
pub fn place_image(
    header: &ImageHeader,
    len: u64,
    ram: Range<u64>,
) -> Result<Range<u64>, KernelError> {
    let addr = match ram.start.checked_add(header.text_offset) {
        Some(addr) if addr < ram.end => addr,
        sum => {
            return Err(KernelError::ImageOffsetOutsideRam {
                text_offset: header.text_offset,
                where_: match sum {
                    Some(addr) => format!("at {addr:#x}, past the end of RAM"),
                    None => "below RAM (RAM base + text_offset wraps past 2^64)".into(),
                },
                ram,
            })
        }
    };
    if addr % IMAGE_ALIGN != 0 {
        return Err(KernelError::ImageMisaligned {
            text_offset: header.text_offset,
            addr,
        });
    }
    let size = header.image_size.max(len);
    match addr.checked_add(size) {
        Some(end) if end <= ram.end => Ok(addr..end),
        _ => Err(KernelError::ImageTooBig { addr, size, ram }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAM: u64 = 0x8000_0000;

    fn image(text_offset: u64, image_size: u64, body: usize) -> Vec<u8> {
        let mut v = vec![0u8; IMAGE_HEADER_LEN + body];
        v[0..4].copy_from_slice(&0x0000_0013u32.to_le_bytes()); // nop
        v[8..16].copy_from_slice(&text_offset.to_le_bytes());
        v[16..24].copy_from_slice(&image_size.to_le_bytes());
        v[32..36].copy_from_slice(&2u32.to_le_bytes());
        v[48..56].copy_from_slice(&IMAGE_MAGIC.to_le_bytes());
        v[56..60].copy_from_slice(&IMAGE_MAGIC2.to_le_bytes());
        v[64] = 0xaa;
        v
    }

    fn mem(size: u64) -> GuestMemoryMmap {
        GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM), size as usize)]).unwrap()
    }

    #[test]
    fn loads_an_image_at_text_offset() {
        let m = mem(8 << 20);
        let data = image(0x20_0000, 0x10_0000, 100);
        let k = load_kernel(&data, &m, RAM..RAM + (8 << 20)).unwrap();
        assert_eq!(k.format, KernelFormat::Image);
        assert_eq!(k.entry, RAM + 0x20_0000);
        assert_eq!(k.span, RAM + 0x20_0000..RAM + 0x30_0000);
        assert_eq!(
            m.read_obj::<u8>(GuestAddress(RAM + 0x20_0040)).unwrap(),
            0xaa
        );
    }

    #[test]
    fn rejects_bad_images() {
        let m = mem(4 << 20);
        let ram = RAM..RAM + (4 << 20);
        assert!(matches!(
            load_kernel(&image(0x20_0000, 0x40_0000, 10), &m, ram.clone()),
            Err(KernelError::ImageTooBig { .. })
        ));
        assert!(matches!(
            load_kernel(&image(0x1000, 0, 10), &m, ram.clone()),
            Err(KernelError::ImageMisaligned { .. })
        ));
        // A negative (sign-extended) offset wraps RAM base + offset to 0: the message says
        // it lies below RAM, not that 0 is misaligned.
        let e = load_kernel(&image(0xffff_ffff_8000_0000, 0, 10), &m, ram.clone()).unwrap_err();
        assert!(
            matches!(e, KernelError::ImageOffsetOutsideRam { .. }),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("0xffffffff80000000 puts the kernel below RAM")
                && msg.contains("wraps past 2^64")
                && !msg.contains("aligned"),
            "{msg}"
        );
        let e = load_kernel(&image(0x40_0000, 0, 10), &m, ram.clone()).unwrap_err();
        assert!(
            e.to_string()
                .contains("puts the kernel at 0x80400000, past the end of RAM"),
            "{e}"
        );
        assert_eq!(
            load_kernel(b"hello, world, this is just text", &m, ram.clone()),
            Err(KernelError::Unrecognized)
        );
        assert_eq!(
            load_kernel(&[], &m, ram.clone()),
            Err(KernelError::Unrecognized)
        );
        let mut no_magic = image(0x20_0000, 0, 10);
        no_magic[48..64].fill(0);
        assert_eq!(
            load_kernel(&no_magic, &m, ram),
            Err(KernelError::Unrecognized)
        );
    }
}
