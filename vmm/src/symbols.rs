//! Guest symbols for people (`--symbols FILE`): addresses in CTR dumps (`vmm ctl ctr-dump`,
//! gdb's `monitor ctr`) and the exit trace (`--trace-exits`) printed as `function+0xoff`.
//!
//! A symbol file is either an ELF executable (RV64, little-endian: its `.symtab`, else its
//! `.dynsym`) or a `System.map` as the Linux build writes it (`nm` output: `ADDR TYPE NAME`
//! lines, e.g. Debian's `/boot/System.map-*`).
//!
//! * From an ELF: the defined function symbols (`STT_FUNC`) and the untyped ones
//!   (`STT_NOTYPE`, labels of hand-written assembly such as `_start`) that lie in an
//!   executable section, at a nonzero address, with a name (not a `$x`/`.L` local label).
//!   A function's size, when the table gives one, bounds it; an untyped symbol (or a
//!   function of size 0) reaches to the end of its section.
//! * From a `System.map`: the text symbols (types `t`, `T`, `w`, `W`) at a nonzero address.
//!   The other lines (data, absolute, read-only data symbols) only bound the text symbol
//!   before them: a text symbol reaches up to the next symbol of any type, the last one
//!   has no end. A line that is no `ADDR TYPE NAME` (hex address, one-letter type) is
//!   skipped; a file with no text symbol at all is refused.
//!
//! Files larger than [`MAX_FILE_BYTES`] are refused before they are read; a symbol file
//! is hostile input, every fault in it is an error naming the file and the fault.

use std::fmt;
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::LittleEndian;

/// The largest symbol file read (a Linux `vmlinux` with its debug information fits).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The longest name kept (longer ones are cut, with `...`).
const MAX_NAME: usize = 256;

/// Why a symbol file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SymbolsError {
    /// The file cannot be opened or read.
    #[error("symbol file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a regular file (a directory, a FIFO, a device, ...).
    #[error("symbol file {path}: is {kind}, not a regular file")]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("symbol file {path}: {size} bytes, more than the {max} a symbol file may have")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// An ELF file whose headers or symbol table cannot be read.
    #[error("symbol file {path}: a bad ELF file: {reason}")]
    BadElf {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// No symbol the file could name an address with.
    #[error("symbol file {path}: {reason}")]
    NoSymbols {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
}

/// One symbol: `[addr, end)` (`end` `None`: no known end) and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Symbol {
    addr: u64,
    end: Option<u64>,
    name: String,
}

/// A guest's symbols, sorted by address, one per address.
#[derive(Clone, PartialEq, Eq)]
pub struct Symbols {
    /// The file they came from.
    path: PathBuf,
    symbols: Vec<Symbol>,
}

impl fmt::Debug for Symbols {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Symbols")
            .field("path", &self.path)
            .field("symbols", &self.symbols.len())
            .finish()
    }
}

impl Symbols {
    /// Reads the symbol file at `path`: an ELF (by its magic number) or a `System.map`.
    pub fn load(path: &Path) -> Result<Symbols, SymbolsError> {
        let data = read_file(path, MAX_FILE_BYTES)?;
        Symbols::parse(&data, path)
    }

    /// The symbols of a file's bytes (`path` names it in errors).
    pub fn parse(data: &[u8], path: &Path) -> Result<Symbols, SymbolsError> {
        if data.starts_with(&elf::ELFMAG) {
            Symbols::from_elf(data, path)
        } else {
            Symbols::from_system_map(data, path)
        }
    }

    /// The symbols of an ELF file's bytes.
    pub fn from_elf(data: &[u8], path: &Path) -> Result<Symbols, SymbolsError> {
        let bad = |reason: String| SymbolsError::BadElf {
            path: path.to_path_buf(),
            reason,
        };
        if data.len() < 16 {
            return Err(bad("truncated before the end of its identification".into()));
        }
        if data[4] != elf::ELFCLASS64 || data[5] != elf::ELFDATA2LSB {
            return Err(bad(format!(
                "class {} data {}: only 64-bit little-endian ELF files (RV64) are read",
                data[4], data[5]
            )));
        }
        let endian = LittleEndian;
        let header = elf::FileHeader64::<LittleEndian>::parse(data)
            .map_err(|e| bad(format!("file header: {e}")))?;
        let sections = header
            .sections(endian, data)
            .map_err(|e| bad(format!("section headers: {e}")))?;
        let mut table = sections
            .symbols(endian, data, elf::SHT_SYMTAB)
            .map_err(|e| bad(format!("symbol table: {e}")))?;
        if table.is_empty() {
            table = sections
                .symbols(endian, data, elf::SHT_DYNSYM)
                .map_err(|e| bad(format!("dynamic symbol table: {e}")))?;
        }
        if table.is_empty() {
            return Err(SymbolsError::NoSymbols {
                path: path.to_path_buf(),
                reason: "an ELF file without a symbol table (stripped?)".into(),
            });
        }
        let mut symbols = Vec::new();
        for sym in table.iter() {
            let kind = sym.st_type();
            if kind != elf::STT_FUNC && kind != elf::STT_NOTYPE {
                continue;
            }
            let addr = sym.st_value(endian);
            let shndx = sym.st_shndx(endian);
            if addr == 0 || shndx == elf::SHN_UNDEF {
                continue;
            }
            // The executable section it lies in, if any (SHN_ABS and the like: none).
            let section = (shndx < elf::SHN_LORESERVE)
                .then(|| {
                    sections
                        .section(object::SectionIndex(usize::from(shndx)))
                        .ok()
                })
                .flatten()
                .filter(|sh| sh.sh_flags(endian) & u64::from(elf::SHF_EXECINSTR) != 0);
            if kind == elf::STT_NOTYPE && section.is_none() {
                continue;
            }
            let Ok(name) = sym.name(endian, table.strings()) else {
                continue;
            };
            if name.is_empty() || name.starts_with(b"$") || name.starts_with(b".L") {
                continue;
            }
            let section_end = section.and_then(|sh| {
                sh.sh_addr(endian)
                    .checked_add(sh.sh_size(endian))
                    .filter(|&end| end > addr)
            });
            let size = sym.st_size(endian);
            let end = if kind == elf::STT_FUNC && size > 0 {
                Some(addr.saturating_add(size))
            } else {
                section_end
            };
            symbols.push((
                kind == elf::STT_FUNC && size > 0,
                clean_name(name),
                addr,
                end,
            ));
        }
        // At one address, a function with a size first, then by name.
        symbols.sort_by(|a, b| a.2.cmp(&b.2).then(b.0.cmp(&a.0)).then(a.1.cmp(&b.1)));
        let symbols: Vec<Symbol> = symbols
            .into_iter()
            .map(|(_, name, addr, end)| Symbol { addr, end, name })
            .collect();
        Symbols::finish(path, symbols, || {
            "no function symbol at a nonzero address in its symbol table".into()
        })
    }

    /// The symbols of a `System.map`'s bytes.
    pub fn from_system_map(data: &[u8], path: &Path) -> Result<Symbols, SymbolsError> {
        // Every well-formed line's (address, text symbol name or None).
        let mut entries: Vec<(u64, Option<String>)> = Vec::new();
        let (mut lines, mut malformed) = (0u64, 0u64);
        for line in data.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            lines += 1;
            match map_line(line) {
                Some(entry) => entries.push(entry),
                None => malformed += 1,
            }
        }
        // Text symbols first at one address, then by name.
        entries.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(b.1.is_some().cmp(&a.1.is_some()))
                .then(a.1.cmp(&b.1))
        });
        // Backwards, so that each symbol's end (the next greater address) is at hand.
        let mut symbols = Vec::new();
        let mut next: Option<u64> = None;
        for (i, (addr, name)) in entries.iter().enumerate().rev() {
            if let Some((later, _)) = entries.get(i + 1) {
                if later > addr {
                    next = Some(*later);
                }
            }
            match name {
                Some(name) if *addr != 0 => symbols.push(Symbol {
                    addr: *addr,
                    end: next,
                    name: name.clone(),
                }),
                _ => {}
            }
        }
        symbols.reverse();
        Symbols::finish(path, symbols, || {
            format!(
                "neither an ELF file nor a System.map: no text symbol line (ADDR t|T|w|W \
                 NAME, ADDR in hex) at a nonzero address among its {lines} lines ({malformed} \
                 malformed)"
            )
        })
    }

    /// Keeps the first symbol of each address (`symbols` sorted by address).
    fn finish(
        path: &Path,
        mut symbols: Vec<Symbol>,
        none: impl FnOnce() -> String,
    ) -> Result<Symbols, SymbolsError> {
        symbols.dedup_by(|later, first| later.addr == first.addr);
        if symbols.is_empty() {
            return Err(SymbolsError::NoSymbols {
                path: path.to_path_buf(),
                reason: none(),
            });
        }
        Ok(Symbols {
            path: path.to_path_buf(),
            symbols,
        })
    }

    /// The file the symbols came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many symbols there are.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether there are none (never, for a loaded file).
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbol that covers `addr` and `addr`'s offset in it: the nearest symbol at or
    /// below `addr`, if `addr` is below its end.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let at = self.symbols.partition_point(|s| s.addr <= addr);
        let s = &self.symbols[..at].last()?;
        if s.end.is_some_and(|end| addr >= end) {
            return None;
        }
        Some((&s.name, addr - s.addr))
    }

    /// `addr` for people: `name+0xoff`, `name` at the symbol's start, `0x...` when no
    /// symbol covers it.
    pub fn format(&self, addr: u64) -> String {
        match self.lookup(addr) {
            Some((name, 0)) => name.to_string(),
            Some((name, off)) => format!("{name}+{off:#x}"),
            None => format!("{addr:#x}"),
        }
    }

    /// `<name+0xoff>` when a symbol covers `addr`.
    pub fn annotate(&self, addr: u64) -> Option<String> {
        self.lookup(addr)
            .map(|_| format!("<{}>", self.format(addr)))
    }
}

/// `addr` with `symbols`, or in hex without.
pub fn format_addr(symbols: Option<&Symbols>, addr: u64) -> String {
    match symbols {
        Some(s) => s.format(addr),
        None => format!("{addr:#x}"),
    }
}

/// One `System.map` line: its address and, for a text symbol, its name; `None` when it is
/// no `ADDR TYPE NAME` line.
fn map_line(line: &[u8]) -> Option<(u64, Option<String>)> {
    let line = std::str::from_utf8(line).ok()?;
    let mut fields = line.split_ascii_whitespace();
    let (addr, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
    // Kernel maps may add a module name in brackets (`/proc/kallsyms`); nothing else.
    if fields.next().is_some_and(|f| !f.starts_with('[')) {
        return None;
    }
    if addr.is_empty() || addr.len() > 16 || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let [kind] = kind.as_bytes() else {
        return None;
    };
    if !kind.is_ascii_alphabetic() && !matches!(kind, b'?' | b'-') {
        return None;
    }
    let text = matches!(kind, b't' | b'T' | b'w' | b'W');
    Some((addr, text.then(|| clean_name(name.as_bytes()))))
}

/// A name as it may be printed: control characters replaced, at most [`MAX_NAME`] bytes.
fn clean_name(name: &[u8]) -> String {
    let mut s: String = String::from_utf8_lossy(name)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.len() > MAX_NAME {
        let mut cut = MAX_NAME;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// Reads `path`, a regular file of at most `max` bytes (checked before reading; opened
/// non-blocking, so that a FIFO swapped in meanwhile does not hang).
fn read_file(path: &Path, max: u64) -> Result<Vec<u8>, SymbolsError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| SymbolsError::Read {
        path: path.to_path_buf(),
        source,
    };
    let check = |meta: &std::fs::Metadata| match crate::snapshot::file_kind(meta) {
        Some(kind) => Err(SymbolsError::NotAFile {
            path: path.to_path_buf(),
            kind,
        }),
        None if meta.len() > max => Err(SymbolsError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            max,
        }),
        None => Ok(meta.len()),
    };
    check(&std::fs::metadata(path).map_err(io)?)?;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let len = check(&f.metadata().map_err(io)?)?;
    let mut data = Vec::new();
    data.try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX))
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::OutOfMemory, e)))?;
    f.by_ref()
        .take(max + 1)
        .read_to_end(&mut data)
        .map_err(io)?;
    if data.len() as u64 > max {
        return Err(SymbolsError::TooLarge {
            path: path.to_path_buf(),
            size: data.len() as u64,
            max,
        });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{ElfBuilder, Xorshift};

    fn map(text: &str) -> Result<Symbols, SymbolsError> {
        Symbols::parse(text.as_bytes(), Path::new("System.map"))
    }

    #[test]
    fn system_map() {
        let s = map("ffffffff80000000 T _start\n\
                     ffffffff80000100 t do_work\n\
                     ffffffff80000100 T do_work_alias\n\
                     ffffffff80000180 W helper\n\
                     ffffffff80000200 D some_data\n\
                     ffffffff80000300 r rodata\n\
                     ffffffff80000400 T last\n\
                     0000000000000000 A zero\n\
                     garbage line here and more\n\
                     zzzz T bad_addr\n\
                     ffffffff80000500 TT bad_type\n\
                     \n")
        .unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s.lookup(0xffff_ffff_8000_0000), Some(("_start", 0)));
        assert_eq!(s.lookup(0xffff_ffff_8000_00ff), Some(("_start", 0xff)));
        // Two names at one address: the first by name.
        assert_eq!(s.format(0xffff_ffff_8000_011c), "do_work+0x1c");
        assert_eq!(s.format(0xffff_ffff_8000_0180), "helper");
        assert_eq!(s.format(0xffff_ffff_8000_01fc), "helper+0x7c");
        // Data bounds the text symbol before it.
        assert_eq!(s.lookup(0xffff_ffff_8000_0200), None);
        assert_eq!(s.format(0xffff_ffff_8000_0250), "0xffffffff80000250");
        assert_eq!(s.annotate(0xffff_ffff_8000_0250), None);
        // Below the first symbol.
        assert_eq!(s.lookup(0x1000), None);
        // The last one has no end.
        assert_eq!(s.format(0xffff_ffff_8000_1000), "last+0xc00");
        assert_eq!(
            s.annotate(0xffff_ffff_8000_0004).as_deref(),
            Some("<_start+0x4>")
        );
        assert_eq!(format_addr(None, 0x10), "0x10");
        assert_eq!(format_addr(Some(&s), 0xffff_ffff_8000_0004), "_start+0x4");
    }

    #[test]
    fn system_map_with_crlf_and_modules() {
        let s = map("80000000 T a\r\n80000010 t b [mod]\r\n").unwrap();
        assert_eq!(s.format(0x8000_0014), "b+0x4");
    }

    #[test]
    fn garbage_is_refused_naming_the_file() {
        for bad in [
            "",
            "\n\n",
            "hello world\n",
            "ffffffff80000000 D only_data\n",
            "0000000000000000 T at_zero\n",
            "12345678901234567 T too_long\n",
        ] {
            let e = map(bad).unwrap_err().to_string();
            assert!(e.starts_with("symbol file System.map: "), "{e}");
            assert!(e.contains("no text symbol"), "{e}");
        }
        let mut rng = Xorshift::from_seed(7);
        for _ in 0..200 {
            let len = (rng.next() % 300) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let _ = Symbols::parse(&bytes, Path::new("x"));
            let mut elf = bytes.clone();
            if elf.len() >= 4 {
                elf[..4].copy_from_slice(&elf::ELFMAG);
            }
            let _ = Symbols::parse(&elf, Path::new("x"));
        }
    }

    #[test]
    fn elf_symbols() {
        let data = ElfBuilder::new(0x8000_0000)
            .segment(0x8000_0000, &[0x13, 0, 0, 0], 0x100)
            .func_symbol("main", 0x8000_0000)
            .func_symbol("helper", 0x8000_0010)
            .symbol("tohost", 0x8000_1000)
            .build();
        let s = Symbols::parse(&data, Path::new("g.elf")).unwrap();
        // ElfBuilder's functions are 8 bytes long; the data symbol is left out.
        assert_eq!(s.len(), 2);
        assert_eq!(s.format(0x8000_0004), "main+0x4");
        assert_eq!(s.format(0x8000_0008), "0x80000008");
        assert_eq!(s.format(0x8000_0010), "helper");
        assert_eq!(s.format(0x8000_1000), "0x80001000");
    }

    #[test]
    fn bad_elf_is_refused() {
        let path = Path::new("k.elf");
        let no_syms = ElfBuilder::new(0x8000_0000)
            .segment(0x8000_0000, &[0x13, 0, 0, 0], 0x100)
            .build();
        let e = Symbols::parse(&no_syms, path).unwrap_err().to_string();
        assert!(
            e.contains("k.elf") && e.contains("without a symbol table"),
            "{e}"
        );
        let only_data = ElfBuilder::new(0x8000_0000)
            .segment(0x8000_0000, &[0x13, 0, 0, 0], 0x100)
            .symbol("tohost", 0x8000_1000)
            .build();
        let e = Symbols::parse(&only_data, path).unwrap_err().to_string();
        assert!(e.contains("no function symbol"), "{e}");
        let e = Symbols::parse(b"\x7fELF", path).unwrap_err().to_string();
        assert!(e.contains("k.elf: a bad ELF file: truncated"), "{e}");
        let mut elf32 = no_syms.clone();
        elf32[4] = 1;
        let e = Symbols::parse(&elf32, path).unwrap_err().to_string();
        assert!(e.contains("64-bit little-endian"), "{e}");
        // Every truncation of a good file is an error or a result, never a panic.
        let good = ElfBuilder::new(0x8000_0000)
            .segment(0x8000_0000, &[0x13, 0, 0, 0], 0x100)
            .func_symbol("main", 0x8000_0000)
            .build();
        for len in 0..good.len() {
            let _ = Symbols::parse(&good[..len], path);
        }
        // And every single-byte corruption.
        let mut rng = Xorshift::from_seed(3);
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= (rng.next() as u8) | 1;
            let _ = Symbols::parse(&bad, path);
        }
    }

    #[test]
    fn files_are_checked_before_reading() {
        let e = Symbols::load(Path::new("/nonexistent/System.map"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("symbol file /nonexistent/System.map: "),
            "{e}"
        );
        let e = Symbols::load(Path::new("/")).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        let e = Symbols::load(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a character device"), "{e}");
        let dir = test_support::temp_path("vmm-symbols", "big");
        let _ = std::fs::create_dir_all(&dir);
        let big = dir.join("System.map");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let e = Symbols::load(&big).unwrap_err().to_string();
        assert!(e.contains("more than the"), "{e}");
        std::fs::write(&big, "80000000 T main\n").unwrap();
        assert_eq!(Symbols::load(&big).unwrap().format(0x8000_0002), "main+0x2");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn long_and_control_names_are_cleaned() {
        let long = "x".repeat(1000);
        let s = map(&format!("80000000 T {long}\n80000100 T a\x1bb\n")).unwrap();
        assert_eq!(s.lookup(0x8000_0000).unwrap().0.len(), MAX_NAME + 3);
        assert_eq!(s.format(0x8000_0100), "a?b");
    }
}
