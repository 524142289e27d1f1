//! Helpers the `vmm` integration tests share: running the binary, and a minimal ELF writer
//! for hand-assembled guest programs.
// Each test file uses part of it.
#![allow(dead_code)]

use std::process::Command;

/// Guest RAM base (QEMU `virt` layout), where the programs below are loaded.
pub const RAM_BASE: u64 = 0x8000_0000;

/// Runs the `vmm` binary with `args`; returns its exit status (-1 when killed), stdout and
/// stderr.
pub fn vmm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vmm"))
        .args(args)
        .output()
        .expect("run vmm");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A minimal ELF64 RISC-V executable with one RWX segment of `code` at `RAM_BASE`, one
/// page in memory.
pub fn elf(code: &[u32]) -> Vec<u8> {
    elf_with_memsz(code, 0x1000)
}

/// [`elf`] with a segment of `memsz` bytes in memory (code, then zeros).
pub fn elf_with_memsz(code: &[u32], memsz: u64) -> Vec<u8> {
    let bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut f = Vec::new();
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f.extend_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&RAM_BASE.to_le_bytes()); // e_entry
    f.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    f.extend_from_slice(&5u32.to_le_bytes()); // RVC, double-float ABI
    for half in [64u16, 56, 1, 64, 0, 0] {
        f.extend_from_slice(&half.to_le_bytes());
    }
    let data_off = 64u64 + 56;
    f.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    f.extend_from_slice(&7u32.to_le_bytes()); // RWX
    for word in [data_off, RAM_BASE, RAM_BASE, bytes.len() as u64, memsz, 8] {
        f.extend_from_slice(&word.to_le_bytes());
    }
    assert_eq!(f.len() as u64, data_off);
    f.extend_from_slice(&bytes);
    f
}

/// A committed corpus (`committed`) must be exactly what its generator writes now: the
/// generator writes into a fresh temporary directory and every file's name and bytes are
/// compared. With `REGENERATE_CORPUS=1` the generator rewrites the committed corpus instead
/// (review the diff before committing).
pub fn check_generated(committed: &std::path::Path, generate: fn(&std::path::Path)) {
    use std::collections::BTreeMap;
    if std::env::var_os("REGENERATE_CORPUS").is_some() {
        generate(committed);
        return;
    }
    let name = committed
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = std::env::temp_dir().join(format!("vmm-{name}-{}", std::process::id()));
    generate(&out);
    let files = |d: &std::path::Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect()
    };
    let (want, got) = (files(committed), files(&out));
    let _ = std::fs::remove_dir_all(&out);
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        names(&want),
        names(&got),
        "{name}: the committed corpus and its generator name different files \
         (REGENERATE_CORPUS=1 rewrites it)"
    );
    for (file, bytes) in &want {
        assert!(
            got[file] == *bytes,
            "{name}/{file}: the committed file differs from what the generator writes \
             (REGENERATE_CORPUS=1 rewrites it)"
        );
    }
}
