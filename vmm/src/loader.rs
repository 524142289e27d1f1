//! ELF loading for bare-machine programs.
//!
//! Accepted files are ELF64, little-endian, `EM_RISCV` executables (`ET_EXEC`). Every
//! `PT_LOAD` segment is copied to its *physical* address (`p_paddr`, as QEMU's `-kernel`
//! loader does for `-bios none`), which must lie inside guest RAM; the part of the segment
//! past `p_filesz` (the bss) is zeroed. The entry point must lie inside a loaded segment.
//! The symbols `tohost` and `fromhost` are looked up in the symbol table for HTIF.
//!
//! [`ElfImage::parse`] only validates and describes the file, so it can be tested without
//! guest memory; [`ElfImage::load`] copies it into guest RAM.

use std::ops::Range;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};
use object::LittleEndian;
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

type Header = elf::FileHeader64<LittleEndian>;

const ELF_IDENT_LEN: usize = 16;
const ELF_HEADER_LEN: usize = 64;
const PROGRAM_HEADER_LEN: u64 = 56;

/// Why a file cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The file does not start with the ELF magic number.
    #[error("not an ELF file (bad magic number)")]
    NotElf,

    /// The file ends before a structure it declares.
    #[error("truncated ELF file: {what} extends past the end of the file ({len} bytes)")]
    Truncated {
        /// What was cut off.
        what: String,
        /// The file's length.
        len: usize,
    },

    /// `EI_CLASS` is not `ELFCLASS64`.
    #[error("ELF class {class} ({}) is not supported: only 64-bit ELF (ELFCLASS64) can run on RV64", class_name(*.class))]
    Not64Bit {
        /// `EI_CLASS`.
        class: u8,
    },

    /// `EI_DATA` is not `ELFDATA2LSB`.
    #[error("ELF data encoding {data} is not supported: RISC-V executables are little-endian (ELFDATA2LSB)")]
    NotLittleEndian {
        /// `EI_DATA`.
        data: u8,
    },

    /// `e_machine` is not `EM_RISCV`.
    #[error("ELF machine {machine} is not RISC-V (EM_RISCV = 243)")]
    WrongMachine {
        /// `e_machine`.
        machine: u16,
    },

    /// `e_type` is not `ET_EXEC`.
    #[error("ELF type {e_type} ({}) is not loadable: only executables (ET_EXEC) are supported", type_name(*.e_type))]
    NotExecutable {
        /// `e_type`.
        e_type: u16,
    },

    /// A header field is inconsistent.
    #[error("malformed ELF file: {0}")]
    Malformed(String),

    /// The file has nothing to load.
    #[error("ELF file has no PT_LOAD segment")]
    NoLoadableSegments,

    /// `p_filesz > p_memsz`.
    #[error("segment {index}: file size {filesz:#x} is larger than memory size {memsz:#x}")]
    FileSizeExceedsMemSize {
        /// Program header index.
        index: usize,
        /// `p_filesz`.
        filesz: u64,
        /// `p_memsz`.
        memsz: u64,
    },

    /// A segment's physical range is not inside guest RAM.
    #[error(
        "segment {index} at {paddr:#x} (size {memsz:#x}) does not fit in guest RAM \
         [{:#x}, {:#x})", ram.start, ram.end
    )]
    SegmentOutsideRam {
        /// Program header index.
        index: usize,
        /// `p_paddr`.
        paddr: u64,
        /// `p_memsz`.
        memsz: u64,
        /// Guest RAM.
        ram: Range<u64>,
    },

    /// Two `PT_LOAD` segments claim the same guest-physical bytes (one would silently
    /// overwrite the other).
    #[error(
        "segments {first} [{:#x}, {:#x}) and {second} [{:#x}, {:#x}) overlap in guest \
         physical memory", first_range.start, first_range.end, second_range.start,
        second_range.end
    )]
    SegmentsOverlap {
        /// The first segment's program header index.
        first: usize,
        /// Its physical range.
        first_range: Range<u64>,
        /// The second segment's program header index.
        second: usize,
        /// Its physical range.
        second_range: Range<u64>,
    },

    /// The HTIF `tohost`/`fromhost` symbol is not a word of RAM the program writes.
    #[error("HTIF symbol `{name}` at {addr:#x} {reason}")]
    BadHtifSymbol {
        /// `tohost` or `fromhost`.
        name: &'static str,
        /// Its value.
        addr: u64,
        /// Why it cannot be the HTIF word.
        reason: String,
    },

    /// `e_entry` is not inside any loaded segment.
    #[error("entry point {entry:#x} is not inside any loaded segment")]
    EntryOutsideSegments {
        /// `e_entry`.
        entry: u64,
    },

    /// The entry point (physical, after translating `e_entry` through its segment) is odd:
    /// no RISC-V instruction can start there (IALIGN is 16 or 32,
    /// unprivileged spec 1.5), so the first fetch would fault.
    #[error(
        "entry point {entry:#x} is not 2-byte aligned: RISC-V instructions start on even \
         addresses"
    )]
    EntryMisaligned {
        /// The physical entry point.
        entry: u64,
    },

    /// Copying into guest memory failed (should not happen after validation).
    #[error("cannot write segment {index} to guest memory: {detail}")]
    GuestMemory {
        /// Program header index.
        index: usize,
        /// The vm-memory error.
        detail: String,
    },
}

fn class_name(class: u8) -> &'static str {
    match class {
        elf::ELFCLASS32 => "32-bit",
        elf::ELFCLASS64 => "64-bit",
        _ => "invalid",
    }
}

fn type_name(e_type: u16) -> &'static str {
    match e_type {
        elf::ET_NONE => "ET_NONE",
        elf::ET_REL => "ET_REL, a relocatable object",
        elf::ET_EXEC => "ET_EXEC",
        elf::ET_DYN => "ET_DYN, a shared object or position-independent executable",
        elf::ET_CORE => "ET_CORE, a core dump",
        _ => "unknown",
    }
}

/// One `PT_LOAD` segment to copy into RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Index of the program header.
    pub index: usize,
    /// Guest-physical load address (`p_paddr`).
    pub paddr: u64,
    /// Offset of the file data (`p_offset`).
    pub offset: u64,
    /// Bytes taken from the file (`p_filesz`).
    pub filesz: u64,
    /// Bytes occupied in memory (`p_memsz`); the rest after `filesz` is zeroed.
    pub memsz: u64,
    /// `p_flags` (PF_X, PF_W, PF_R).
    pub flags: u32,
}

/// A validated ELF executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfImage {
    /// Physical address of the first instruction.
    pub entry: u64,
    /// The non-empty `PT_LOAD` segments, in program header order.
    pub segments: Vec<Segment>,
    /// Address of the `tohost` symbol, if defined.
    pub tohost: Option<u64>,
    /// Address of the `fromhost` symbol, if defined.
    pub fromhost: Option<u64>,
}

impl ElfImage {
    /// Validates `data` as an executable for a machine whose RAM is `ram`.
    pub fn parse(data: &[u8], ram: Range<u64>) -> Result<ElfImage, LoadError> {
        let header = parse_header(data)?;
        let segments = load_segments(header, data, &ram)?;
        if segments.is_empty() {
            return Err(LoadError::NoLoadableSegments);
        }

        check_overlaps(&segments)?;
        let entry = entry_point(header, data, &segments)?;
        let (tohost, fromhost) = htif_symbols(header, data, &segments, &ram)?;
        Ok(ElfImage {
            entry,
            segments,
            tohost,
            fromhost,
        })
    }

    /// Copies the segments of `data` (the same bytes given to [`ElfImage::parse`]) into
    /// `mem` and zeroes their bss parts.
    pub fn load(&self, data: &[u8], mem: &GuestMemoryMmap) -> Result<(), LoadError> {
        const ZEROES: [u8; 4096] = [0; 4096];
        for seg in &self.segments {
            let mem_err = |e: vm_memory::GuestMemoryError| LoadError::GuestMemory {
                index: seg.index,
                detail: e.to_string(),
            };
            // `parse` checked that the file range exists.
            let start = seg.offset as usize;
            let bytes = &data[start..start + seg.filesz as usize];
            mem.write_slice(bytes, GuestAddress(seg.paddr))
                .map_err(mem_err)?;
            let mut addr = seg.paddr + seg.filesz;
            let end = seg.paddr + seg.memsz;
            while addr < end {
                let n = (end - addr).min(ZEROES.len() as u64) as usize;
                mem.write_slice(&ZEROES[..n], GuestAddress(addr))
                    .map_err(mem_err)?;
                addr += n as u64;
            }
            log::debug!(
                "loaded segment {} at {:#x}: {:#x} bytes from file, {:#x} in memory",
                seg.index,
                seg.paddr,
                seg.filesz,
                seg.memsz
            );
        }
        Ok(())
    }
}

/// Checks the identification and the file header.
fn parse_header(data: &[u8]) -> Result<&Header, LoadError> {
    let truncated = |what: &str| LoadError::Truncated {
        what: what.to_string(),
        len: data.len(),
    };

    if data.len() < elf::ELFMAG.len() || data[..4] != elf::ELFMAG {
        return Err(LoadError::NotElf);
    }
    if data.len() < ELF_IDENT_LEN {
        return Err(truncated("the ELF identification"));
    }
    let class = data[4];
    if class != elf::ELFCLASS64 {
        return Err(LoadError::Not64Bit { class });
    }
    let encoding = data[5];
    if encoding != elf::ELFDATA2LSB {
        return Err(LoadError::NotLittleEndian { data: encoding });
    }
    let version = data[6];
    if version != elf::EV_CURRENT {
        return Err(LoadError::Malformed(format!(
            "unsupported ELF version {version}"
        )));
    }
    if data.len() < ELF_HEADER_LEN {
        return Err(truncated("the ELF header"));
    }
    let header = Header::parse(data).map_err(|e| LoadError::Malformed(e.to_string()))?;
    let endian = LittleEndian;

    let machine = header.e_machine(endian);
    if machine != elf::EM_RISCV {
        return Err(LoadError::WrongMachine { machine });
    }
    let e_type = header.e_type(endian);
    if e_type != elf::ET_EXEC {
        return Err(LoadError::NotExecutable { e_type });
    }
    Ok(header)
}

/// Validates the program headers and returns the segments to load.
fn load_segments(
    header: &Header,
    data: &[u8],
    ram: &Range<u64>,
) -> Result<Vec<Segment>, LoadError> {
    let endian = LittleEndian;
    let phoff = header.e_phoff(endian);
    let phnum = u64::from(header.e_phnum(endian));
    if phoff != 0 && phnum != 0 {
        // Give truncation its own message; `object` reports it as a generic error.
        let table_end = phnum
            .checked_mul(PROGRAM_HEADER_LEN)
            .and_then(|n| n.checked_add(phoff));
        if table_end.is_none_or(|end| end > data.len() as u64) {
            return Err(LoadError::Truncated {
                what: format!("the program header table (offset {phoff:#x}, count {phnum})"),
                len: data.len(),
            });
        }
    }
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| LoadError::Malformed(format!("program headers: {e}")))?;

    let mut segments = Vec::new();
    for (index, ph) in phdrs.iter().enumerate() {
        if ph.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let paddr = ph.p_paddr(endian);
        let offset = ph.p_offset(endian);
        let filesz = ph.p_filesz(endian);
        let memsz = ph.p_memsz(endian);
        if filesz > memsz {
            return Err(LoadError::FileSizeExceedsMemSize {
                index,
                filesz,
                memsz,
            });
        }
        if memsz == 0 {
            continue;
        }
        if offset
            .checked_add(filesz)
            .is_none_or(|end| end > data.len() as u64)
        {
            return Err(LoadError::Truncated {
                what: format!(
                    "the data of segment {index} ({filesz:#x} bytes at offset {offset:#x})"
                ),
                len: data.len(),
            });
        }
        let fits = paddr >= ram.start && paddr.checked_add(memsz).is_some_and(|end| end <= ram.end);
        if !fits {
            return Err(LoadError::SegmentOutsideRam {
                index,
                paddr,
                memsz,
                ram: ram.clone(),
            });
        }
        segments.push(Segment {
            index,
            paddr,
            offset,
            filesz,
            memsz,
            flags: ph.p_flags(endian),
        });
    }
    Ok(segments)
}

/// Refuses two segments that share guest-physical bytes, naming both (`load_segments`
/// checked that every `paddr + memsz` fits in RAM, so the ends do not overflow).
fn check_overlaps(segments: &[Segment]) -> Result<(), LoadError> {
    let mut sorted: Vec<&Segment> = segments.iter().collect();
    sorted.sort_by_key(|s| (s.paddr, s.index));
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if b.paddr < a.paddr + a.memsz {
            let (first, second) = if a.index < b.index { (a, b) } else { (b, a) };
            return Err(LoadError::SegmentsOverlap {
                first: first.index,
                first_range: first.paddr..first.paddr + first.memsz,
                second: second.index,
                second_range: second.paddr..second.paddr + second.memsz,
            });
        }
    }
    Ok(())
}

/// Returns the physical entry point. `e_entry` is a virtual address; bare-metal programs
/// link with `p_vaddr == p_paddr`, but if a segment is loaded elsewhere the entry is
/// translated through that segment.
fn entry_point(header: &Header, data: &[u8], segments: &[Segment]) -> Result<u64, LoadError> {
    let endian = LittleEndian;
    let entry = header.e_entry(endian);
    let even = |phys: u64| {
        if phys & 1 != 0 {
            Err(LoadError::EntryMisaligned { entry: phys })
        } else {
            Ok(phys)
        }
    };
    let inside = |start: u64, len: u64| entry >= start && entry - start < len;
    if segments.iter().any(|s| inside(s.paddr, s.memsz)) {
        return even(entry);
    }
    // `load_segments` already parsed the program headers successfully.
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| LoadError::Malformed(format!("program headers: {e}")))?;
    for seg in segments {
        let vaddr = phdrs[seg.index].p_vaddr(endian);
        if inside(vaddr, seg.memsz) {
            return even(seg.paddr + (entry - vaddr));
        }
    }
    Err(LoadError::EntryOutsideSegments { entry })
}

/// Why the HTIF word `name` at `addr` (8 bytes, which the VMM then intercepts as a device)
/// cannot be used: it must be RAM (not a device or a hole: the host polls a word of memory
/// the program writes), and not code (a symbol of type STT_FUNC, in an SHF_EXECINSTR
/// section, or in a segment that is executable and not writable): fetching instructions
/// from the intercepted word would not see memory.
fn check_htif_word(
    name: &'static str,
    addr: u64,
    code_symbol: Option<&str>,
    segments: &[Segment],
    ram: &Range<u64>,
) -> Result<(), LoadError> {
    let bad = |reason: String| Err(LoadError::BadHtifSymbol { name, addr, reason });
    let in_ram = addr >= ram.start && addr.checked_add(8).is_some_and(|end| end <= ram.end);
    if !in_ram {
        return bad(format!(
            "is not a word of guest RAM [{:#x}, {:#x}) (a device or unmapped address): \
             HTIF needs an 8-byte word of RAM",
            ram.start, ram.end
        ));
    }
    if let Some(why) = code_symbol {
        return bad(format!("is code ({why}), not a data word"));
    }
    let code_segment = segments.iter().find(|s| {
        s.flags & elf::PF_X != 0
            && s.flags & elf::PF_W == 0
            && addr < s.paddr + s.memsz
            && addr + 8 > s.paddr
    });
    if let Some(s) = code_segment {
        return bad(format!(
            "lies in segment {} [{:#x}, {:#x}), which is executable and not writable (code)",
            s.index,
            s.paddr,
            s.paddr + s.memsz
        ));
    }
    Ok(())
}

/// Looks up the defined symbols `tohost` and `fromhost`, and checks each is a word of
/// RAM that is not code ([`check_htif_word`]).
fn htif_symbols(
    header: &Header,
    data: &[u8],
    segments: &[Segment],
    ram: &Range<u64>,
) -> Result<(Option<u64>, Option<u64>), LoadError> {
    let endian = LittleEndian;
    let sections = header
        .sections(endian, data)
        .map_err(|e| LoadError::Malformed(format!("section headers: {e}")))?;
    let symbols = sections
        .symbols(endian, data, elf::SHT_SYMTAB)
        .map_err(|e| LoadError::Malformed(format!("symbol table: {e}")))?;
    let (mut tohost, mut fromhost) = (None, None);
    for sym in symbols.iter() {
        if sym.is_undefined(endian) {
            continue;
        }
        // A bad name offset in one symbol does not make the program unloadable.
        let Ok(name) = sym.name(endian, symbols.strings()) else {
            continue;
        };
        let slot = match name {
            b"tohost" => &mut tohost,
            b"fromhost" => &mut fromhost,
            _ => continue,
        };
        let code = if sym.st_type() == elf::STT_FUNC {
            Some("a function symbol, STT_FUNC".to_string())
        } else {
            let shndx = sym.st_shndx(endian);
            let exec = shndx != elf::SHN_UNDEF
                && shndx < elf::SHN_LORESERVE
                && sections
                    .section(object::SectionIndex(usize::from(shndx)))
                    .is_ok_and(|sh| sh.sh_flags(endian) & u64::from(elf::SHF_EXECINSTR) != 0);
            exec.then(|| format!("in section {shndx}, which is SHF_EXECINSTR"))
        };
        *slot = Some((sym.st_value(endian), code));
    }
    let check = |name, found: Option<(u64, Option<String>)>| match found {
        Some((addr, code)) => {
            check_htif_word(name, addr, code.as_deref(), segments, ram).map(|()| Some(addr))
        }
        None => Ok(None),
    };
    Ok((check("tohost", tohost)?, check("fromhost", fromhost)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{ElfBuilder, Xorshift};

    const RAM: Range<u64> = 0x8000_0000..0x8010_0000;

    fn simple() -> ElfBuilder {
        ElfBuilder::new(0x8000_0000).segment(0x8000_0000, &[0x13, 0, 0, 0, 0x6f, 0, 0, 0], 0x100)
    }

    #[test]
    fn parses_valid_executable() {
        let data = simple()
            .symbol("tohost", 0x8000_1000)
            .symbol("fromhost", 0x8000_1040)
            .build();
        let img = ElfImage::parse(&data, RAM).unwrap();
        assert_eq!(img.entry, 0x8000_0000);
        assert_eq!(img.segments.len(), 1);
        assert_eq!(img.segments[0].paddr, 0x8000_0000);
        assert_eq!(img.segments[0].filesz, 8);
        assert_eq!(img.segments[0].memsz, 0x100);
        assert_eq!(img.tohost, Some(0x8000_1000));
        assert_eq!(img.fromhost, Some(0x8000_1040));
    }

    #[test]
    fn no_symbols_without_symtab() {
        let img = ElfImage::parse(&simple().build(), RAM).unwrap();
        assert_eq!(img.tohost, None);
        assert_eq!(img.fromhost, None);
    }

    #[test]
    fn loads_and_zeroes_bss() {
        let mem = GuestMemoryMmap::from_ranges(&[(
            GuestAddress(RAM.start),
            (RAM.end - RAM.start) as usize,
        )])
        .unwrap();
        mem.write_slice(&[0xaa; 0x200], GuestAddress(RAM.start))
            .unwrap();
        let data = simple().build();
        let img = ElfImage::parse(&data, RAM).unwrap();
        img.load(&data, &mem).unwrap();
        let mut buf = [0u8; 0x200];
        mem.read_slice(&mut buf, GuestAddress(RAM.start)).unwrap();
        assert_eq!(&buf[..8], &[0x13, 0, 0, 0, 0x6f, 0, 0, 0]);
        assert!(buf[8..0x100].iter().all(|&b| b == 0));
        assert!(buf[0x100..].iter().all(|&b| b == 0xaa));
    }

    #[test]
    fn rejects_non_elf() {
        assert_eq!(ElfImage::parse(b"", RAM), Err(LoadError::NotElf));
        assert_eq!(ElfImage::parse(b"\x7fEL", RAM), Err(LoadError::NotElf));
        assert_eq!(
            ElfImage::parse(b"#!/bin/sh\necho hi\n", RAM),
            Err(LoadError::NotElf)
        );
        let err = ElfImage::parse(b"\x7fELF\x02\x01", RAM).unwrap_err();
        assert!(matches!(err, LoadError::Truncated { .. }), "{err}");
    }

    #[test]
    fn rejects_32_bit() {
        let mut data = simple().build();
        data[4] = elf::ELFCLASS32;
        let err = ElfImage::parse(&data, RAM).unwrap_err();
        assert_eq!(err, LoadError::Not64Bit { class: 1 });
        assert!(err.to_string().contains("32-bit"), "{err}");
    }

    #[test]
    fn rejects_big_endian() {
        let mut data = simple().build();
        data[5] = elf::ELFDATA2MSB;
        assert_eq!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::NotLittleEndian { data: 2 })
        );
    }

    #[test]
    fn rejects_wrong_machine() {
        let data = simple().machine(elf::EM_X86_64).build();
        let err = ElfImage::parse(&data, RAM).unwrap_err();
        assert_eq!(err, LoadError::WrongMachine { machine: 62 });
        assert!(err.to_string().contains("not RISC-V"), "{err}");
    }

    #[test]
    fn rejects_non_executable() {
        let data = simple().e_type(elf::ET_DYN).build();
        assert_eq!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::NotExecutable { e_type: 3 })
        );
        let data = simple().e_type(elf::ET_REL).build();
        assert_eq!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::NotExecutable { e_type: 1 })
        );
    }

    #[test]
    fn rejects_segment_outside_ram() {
        let data = ElfBuilder::new(0x8000_0000)
            .segment(0x8000_0000, &[0; 4], 4)
            .segment(0x1000, &[1, 2, 3, 4], 4)
            .build();
        let err = ElfImage::parse(&data, RAM).unwrap_err();
        assert_eq!(
            err,
            LoadError::SegmentOutsideRam {
                index: 1,
                paddr: 0x1000,
                memsz: 4,
                ram: RAM
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("segment 1") && msg.contains("0x1000"), "{msg}");

        // Starts inside RAM but its bss runs past the end.
        let data = ElfBuilder::new(0x800f_f000)
            .segment(0x800f_f000, &[0; 4], 0x2000)
            .build();
        assert!(matches!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::SegmentOutsideRam {
                index: 0,
                paddr: 0x800f_f000,
                memsz: 0x2000,
                ..
            })
        ));

        // Address arithmetic overflow.
        let data = ElfBuilder::new(0x8000_0000)
            .segment(u64::MAX - 1, &[0; 4], 4)
            .build();
        assert!(matches!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::SegmentOutsideRam { .. })
        ));
    }

    #[test]
    fn rejects_filesz_larger_than_memsz() {
        let data = ElfBuilder::new(0x8000_0000)
            .segment(0x8000_0000, &[0; 16], 8)
            .build();
        assert_eq!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::FileSizeExceedsMemSize {
                index: 0,
                filesz: 16,
                memsz: 8
            })
        );
    }

    #[test]
    fn rejects_entry_outside_segments() {
        let data = ElfBuilder::new(0x8000_2000)
            .segment(0x8000_0000, &[0; 4], 0x100)
            .build();
        assert_eq!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::EntryOutsideSegments { entry: 0x8000_2000 })
        );
    }

    #[test]
    fn entry_is_translated_through_vaddr() {
        let data = ElfBuilder::new(0x1_0004)
            .segment_at(0x1_0000, 0x8000_0000, &[0; 8], 8)
            .build();
        assert_eq!(ElfImage::parse(&data, RAM).unwrap().entry, 0x8000_0004);
    }

    #[test]
    fn rejects_no_segments() {
        let data = ElfBuilder::new(0x8000_0000).build();
        assert_eq!(
            ElfImage::parse(&data, RAM),
            Err(LoadError::NoLoadableSegments)
        );
    }

    #[test]
    fn rejects_truncated_file() {
        let data = simple().symbol("tohost", 0x8000_1000).build();
        let err = ElfImage::parse(&data[..40], RAM).unwrap_err();
        assert!(matches!(err, LoadError::Truncated { .. }), "{err}");
        assert!(err.to_string().contains("ELF header"), "{err}");
        let err = ElfImage::parse(&data[..80], RAM).unwrap_err();
        assert!(err.to_string().contains("program header table"), "{err}");
        // Cut inside the segment data.
        let err = ElfImage::parse(&data[..ElfBuilder::DATA_START + 4], RAM).unwrap_err();
        assert!(err.to_string().contains("data of segment 0"), "{err}");
        // Every prefix is rejected without panicking.
        for len in 0..data.len() {
            assert!(
                ElfImage::parse(&data[..len], RAM).is_err(),
                "prefix of {len} bytes accepted"
            );
        }
    }

    #[test]
    fn corrupted_headers_never_panic() {
        let data = simple()
            .segment(0x8000_0100, &[1; 32], 64)
            .symbol("tohost", 0x8000_1000)
            .build();
        let mut rng = Xorshift(0x1234_5678_9abc_def1);
        // Every single byte set to a few interesting values.
        for i in 0..data.len() {
            for v in [0x00, 0x01, 0x7f, 0x80, 0xff, data[i] ^ 0x40] {
                let mut d = data.clone();
                d[i] = v;
                let _ = ElfImage::parse(&d, RAM);
            }
        }
        // Random multi-byte corruption.
        for _ in 0..20_000 {
            let mut d = data.clone();
            for _ in 0..1 + rng.next() % 8 {
                let i = (rng.next() % d.len() as u64) as usize;
                d[i] = rng.next() as u8;
            }
            let len = if rng.next().is_multiple_of(4) {
                (rng.next() % d.len() as u64) as usize
            } else {
                d.len()
            };
            let _ = ElfImage::parse(&d[..len], RAM);
        }
    }

    /// Overlapping segments are refused naming both (the later one used to win).
    #[test]
    fn overlapping_segments_are_refused() {
        let data = simple().segment(0x8000_0080, &[1; 16], 0x100).build();
        let err = ElfImage::parse(&data, RAM).unwrap_err();
        assert_eq!(
            err,
            LoadError::SegmentsOverlap {
                first: 0,
                first_range: 0x8000_0000..0x8000_0100,
                second: 1,
                second_range: 0x8000_0080..0x8000_0180,
            }
        );
        assert!(
            err.to_string().contains(
                "segments 0 [0x80000000, 0x80000100) and 1 [0x80000080, 0x80000180) overlap"
            ),
            "{err}"
        );
        // Listed in the other order, and a bss-only overlap.
        let data = ElfBuilder::new(0x8000_0000)
            .segment(0x8000_1000, &[1; 8], 0x10)
            .segment(0x8000_0000, &[0x13, 0, 0, 0], 0x1008)
            .build();
        let err = ElfImage::parse(&data, RAM).unwrap_err();
        assert!(
            matches!(
                err,
                LoadError::SegmentsOverlap {
                    first: 0,
                    second: 1,
                    ..
                }
            ),
            "{err}"
        );
        // Adjacent segments are fine.
        let data = simple().segment(0x8000_0100, &[1; 8], 8).build();
        assert!(ElfImage::parse(&data, RAM).is_ok());
    }

    /// `tohost` on code or outside RAM (a device) is refused with the reason.
    #[test]
    fn htif_symbols_on_code_or_devices_are_refused() {
        let msg = |data: Vec<u8>| ElfImage::parse(&data, RAM).unwrap_err().to_string();
        // In a read-execute segment.
        let e = msg(simple().flags(5).symbol("tohost", 0x8000_0010).build());
        assert!(
            e.contains("HTIF symbol `tohost` at 0x80000010 lies in segment 0")
                && e.contains("executable and not writable"),
            "{e}"
        );
        // A function symbol.
        let e = msg(simple().func_symbol("tohost", 0x8000_0040).build());
        assert!(e.contains("is code (a function symbol, STT_FUNC)"), "{e}");
        // On the UART, outside RAM, straddling its end.
        for addr in [0x1000_0000u64, 0x200_0000, RAM.end - 4, u64::MAX - 3] {
            let e = msg(simple().symbol("tohost", addr).build());
            assert!(
                e.contains(&format!("`tohost` at {addr:#x} is not a word of guest RAM")),
                "{e}"
            );
        }
        let e = msg(simple()
            .symbol("tohost", 0x8000_1000)
            .symbol("fromhost", 0x1000_0000)
            .build());
        assert!(e.contains("`fromhost` at 0x10000000"), "{e}");
        // In a writable segment, or a read-write-execute one: accepted.
        let ok = simple()
            .segment(0x8000_1000, &[0; 16], 16)
            .flags(6)
            .symbol("tohost", 0x8000_1000)
            .build();
        assert_eq!(ElfImage::parse(&ok, RAM).unwrap().tohost, Some(0x8000_1000));
        let ok = simple().symbol("tohost", 0x8000_0080).build();
        assert!(ElfImage::parse(&ok, RAM).is_ok());
    }

    #[test]
    fn odd_alignment_of_buffer_is_fine() {
        let data = simple().build();
        let mut shifted = vec![0u8; data.len() + 1];
        shifted[1..].copy_from_slice(&data);
        assert!(ElfImage::parse(&shifted[1..], RAM).is_ok());
    }
}
