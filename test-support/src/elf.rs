//! A writer of small ELF64 little-endian RISC-V executables, for loader tests and guest
//! programs assembled with [`crate::rv64`].

/// Builds small ELF64 little-endian RISC-V executables in memory.
#[derive(Debug, Clone)]
pub struct ElfBuilder {
    entry: u64,
    machine: u16,
    e_type: u16,
    /// (vaddr, paddr, bytes, memsz)
    segments: Vec<(u64, u64, Vec<u8>, u64)>,
    /// Each segment's `p_flags` (RWX unless [`ElfBuilder::flags`] says otherwise).
    flags: Vec<u32>,
    /// (name, value, `st_info`)
    symbols: Vec<(String, u64, u8)>,
}

const EHDR: usize = 64;
const PHDR: usize = 56;
const SHDR: usize = 64;
const SYM: usize = 24;
const MAX_SEGMENTS: usize = 8;

fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn align8(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(8) {
        v.push(0);
    }
}

impl ElfBuilder {
    /// File offset of the first segment's data.
    pub const DATA_START: usize = EHDR + MAX_SEGMENTS * PHDR;

    /// An executable (`ET_EXEC`, `EM_RISCV`) entered at `entry`, with no segment yet.
    pub fn new(entry: u64) -> Self {
        ElfBuilder {
            entry,
            machine: 243,
            e_type: 2,
            segments: Vec::new(),
            flags: Vec::new(),
            symbols: Vec::new(),
        }
    }

    /// Another `e_machine` (loader tests of foreign files).
    pub fn machine(mut self, machine: u16) -> Self {
        self.machine = machine;
        self
    }

    /// Another `e_type` (loader tests of shared objects and other kinds).
    pub fn e_type(mut self, e_type: u16) -> Self {
        self.e_type = e_type;
        self
    }

    /// A PT_LOAD segment with `p_vaddr == p_paddr == addr`.
    pub fn segment(self, addr: u64, bytes: &[u8], memsz: u64) -> Self {
        self.segment_at(addr, addr, bytes, memsz)
    }

    /// A PT_LOAD segment at virtual address `vaddr` and physical address `paddr`, with
    /// `bytes` in the file and `memsz` bytes in memory (RWX until [`ElfBuilder::flags`]).
    pub fn segment_at(mut self, vaddr: u64, paddr: u64, bytes: &[u8], memsz: u64) -> Self {
        assert!(self.segments.len() < MAX_SEGMENTS);
        self.segments.push((vaddr, paddr, bytes.to_vec(), memsz));
        self.flags.push(7);
        self
    }

    /// The last segment's `p_flags` (PF_X 1, PF_W 2, PF_R 4).
    pub fn flags(mut self, flags: u32) -> Self {
        if let Some(f) = self.flags.last_mut() {
            *f = flags;
        }
        self
    }

    /// A defined global data symbol (STT_OBJECT, SHN_ABS).
    pub fn symbol(mut self, name: &str, value: u64) -> Self {
        self.symbols.push((name.to_string(), value, 0x11));
        self
    }

    /// A defined global function symbol (STT_FUNC, SHN_ABS).
    pub fn func_symbol(mut self, name: &str, value: u64) -> Self {
        self.symbols.push((name.to_string(), value, 0x12));
        self
    }

    /// The file's bytes: header, program headers, segment data, and a symbol table when
    /// symbols were added.
    pub fn build(&self) -> Vec<u8> {
        // Segment data first, so the header can point at it.
        let mut body = vec![0u8; Self::DATA_START];
        let mut offsets = Vec::new();
        for (_, _, bytes, _) in &self.segments {
            offsets.push(body.len() as u64);
            body.extend_from_slice(bytes);
            align8(&mut body);
        }

        // Optional symbol table: sections 0 (null), 1 .symtab, 2 .strtab, 3 .shstrtab.
        let mut shoff = 0u64;
        let mut shnum = 0u16;
        let mut shstrndx = 0u16;
        if !self.symbols.is_empty() {
            let mut strtab = vec![0u8];
            let mut symtab = vec![0u8; SYM];
            for (name, value, info) in &self.symbols {
                put32(&mut symtab, strtab.len() as u32);
                symtab.push(*info); // STB_GLOBAL, STT_OBJECT or STT_FUNC
                symtab.push(0);
                put16(&mut symtab, 0xfff1); // SHN_ABS
                put64(&mut symtab, *value);
                put64(&mut symtab, 8);
                strtab.extend_from_slice(name.as_bytes());
                strtab.push(0);
            }
            let shstrtab = b"\0.symtab\0.strtab\0.shstrtab\0".to_vec();
            let symtab_off = body.len() as u64;
            body.extend_from_slice(&symtab);
            align8(&mut body);
            let strtab_off = body.len() as u64;
            body.extend_from_slice(&strtab);
            align8(&mut body);
            let shstrtab_off = body.len() as u64;
            body.extend_from_slice(&shstrtab);
            align8(&mut body);

            shoff = body.len() as u64;
            shnum = 4;
            shstrndx = 3;
            let mut sh =
                |name: u32, ty: u32, off: u64, size: u64, link: u32, info: u32, entsize: u64| {
                    put32(&mut body, name);
                    put32(&mut body, ty);
                    put64(&mut body, 0);
                    put64(&mut body, 0);
                    put64(&mut body, off);
                    put64(&mut body, size);
                    put32(&mut body, link);
                    put32(&mut body, info);
                    put64(&mut body, 1);
                    put64(&mut body, entsize);
                };
            sh(0, 0, 0, 0, 0, 0, 0);
            sh(1, 2, symtab_off, symtab.len() as u64, 2, 1, SYM as u64);
            sh(9, 3, strtab_off, strtab.len() as u64, 0, 0, 0);
            sh(17, 3, shstrtab_off, shstrtab.len() as u64, 0, 0, 0);
            debug_assert_eq!(body.len() as u64, shoff + 4 * SHDR as u64);
        }

        let mut hdr = Vec::with_capacity(Self::DATA_START);
        hdr.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
        hdr.extend_from_slice(&[0; 8]);
        put16(&mut hdr, self.e_type);
        put16(&mut hdr, self.machine);
        put32(&mut hdr, 1);
        put64(&mut hdr, self.entry);
        put64(
            &mut hdr,
            if self.segments.is_empty() {
                0
            } else {
                EHDR as u64
            },
        );
        put64(&mut hdr, shoff);
        put32(&mut hdr, 0x5); // EF_RISCV_RVC | EF_RISCV_FLOAT_ABI_DOUBLE
        put16(&mut hdr, EHDR as u16);
        put16(&mut hdr, PHDR as u16);
        put16(&mut hdr, self.segments.len() as u16);
        put16(&mut hdr, SHDR as u16);
        put16(&mut hdr, shnum);
        put16(&mut hdr, shstrndx);
        for (((vaddr, paddr, bytes, memsz), off), flags) in
            self.segments.iter().zip(&offsets).zip(&self.flags)
        {
            put32(&mut hdr, 1); // PT_LOAD
            put32(&mut hdr, *flags);
            put64(&mut hdr, *off);
            put64(&mut hdr, *vaddr);
            put64(&mut hdr, *paddr);
            put64(&mut hdr, bytes.len() as u64);
            put64(&mut hdr, *memsz);
            put64(&mut hdr, 8);
        }
        body[..hdr.len()].copy_from_slice(&hdr);
        body
    }
}

/// The smallest executable of one segment: the ELF header, one RWX `PT_LOAD` program header
/// (`bytes` at `addr`, `memsz` bytes in memory) and `bytes` right after it, at file offset
/// 120; the entry is `addr`. (Unlike [`ElfBuilder`], which leaves room for eight program
/// headers; committed corpora hold files of exactly this layout.)
pub fn single_segment(addr: u64, bytes: &[u8], memsz: u64) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    put16(&mut f, 2); // ET_EXEC
    put16(&mut f, 243); // EM_RISCV
    put32(&mut f, 1);
    put64(&mut f, addr); // e_entry
    put64(&mut f, EHDR as u64); // e_phoff
    put64(&mut f, 0); // e_shoff
    put32(&mut f, 5); // EF_RISCV_RVC | EF_RISCV_FLOAT_ABI_DOUBLE
    for half in [EHDR as u16, PHDR as u16, 1, SHDR as u16, 0, 0] {
        put16(&mut f, half);
    }
    let data_off = (EHDR + PHDR) as u64;
    put32(&mut f, 1); // PT_LOAD
    put32(&mut f, 7); // RWX
    for word in [data_off, addr, addr, bytes.len() as u64, memsz, 8] {
        put64(&mut f, word);
    }
    assert_eq!(f.len() as u64, data_off);
    f.extend_from_slice(bytes);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_segment_puts_the_bytes_after_one_program_header() {
        let f = single_segment(0x8000_0000, &[1, 2, 3, 4], 0x1000);
        assert_eq!(f.len(), 124);
        assert_eq!(&f[120..], &[1, 2, 3, 4]);
        assert_eq!(f[56..58], [1, 0], "e_phnum");
        let word = |at: usize| u64::from_le_bytes(f[at..at + 8].try_into().unwrap());
        assert_eq!(word(24), 0x8000_0000, "e_entry");
        assert_eq!(word(64 + 8), 120, "p_offset");
        assert_eq!(word(64 + 32), 4, "p_filesz");
        assert_eq!(word(64 + 40), 0x1000, "p_memsz");
    }
}
