//! Helpers the `vmm` integration tests share: running the binary, ELF executables of
//! hand-assembled guest programs (test-support's writer) and the corpus check.
// Each test file uses part of it.
#![allow(dead_code)]

use std::process::Command;

use test_support::{elf, rv64};

/// Guest RAM base (QEMU `virt` layout), where the programs below are loaded.
pub const RAM_BASE: u64 = 0x8000_0000;

/// Runs the `vmm` binary with `args`, with virtual time as the default clock
/// (`VMM_CLOCK=virtual`: the tests stay deterministic whatever the command line's own
/// default); returns its exit status (-1 when killed), stdout and stderr.
pub fn vmm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vmm"))
        .env("VMM_CLOCK", "virtual")
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
    elf::single_segment(RAM_BASE, &rv64::code(code), memsz)
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
