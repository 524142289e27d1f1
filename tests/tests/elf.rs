//! `run_elf` refuses files that are not RISC-V RV64 executables, with a message that says
//! what is wrong, instead of running garbage.

use std::path::{Path, PathBuf};

use vmm_tests::{guest, run_vmm};

/// A scratch file under the target directory, unique to this test.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("elf-tests");
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write scratch file");
    path
}

/// hello.elf with `patch` applied to its bytes.
fn patched_hello(name: &str, patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(guest("hello")).expect("read hello.elf");
    patch(&mut bytes);
    scratch(name, &bytes)
}

/// Runs `path` and returns the error message; panics if it ran.
fn load_error(path: &Path) -> String {
    match run_vmm(path, 1_000_000) {
        Ok(run) => panic!(
            "{} ran: {:?}, output {:?}",
            path.display(),
            run.exit,
            run.text()
        ),
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty());
            msg
        }
    }
}

fn assert_mentions(msg: &str, words: &[&str]) {
    let lower = msg.to_lowercase();
    assert!(
        words.iter().any(|w| lower.contains(&w.to_lowercase())),
        "error message {msg:?} mentions none of {words:?}"
    );
}

#[test]
fn text_file_is_not_elf() {
    let path = scratch("not-elf.txt", b"this is not an ELF file\n");
    let msg = load_error(&path);
    assert_mentions(&msg, &["not an ELF", "magic"]);
    assert!(
        msg.contains("not-elf.txt"),
        "message does not name the file: {msg}"
    );
}

#[test]
fn empty_file() {
    let path = scratch("empty.elf", b"");
    let msg = load_error(&path);
    assert_mentions(&msg, &["ELF", "truncated", "empty"]);
}

#[test]
fn truncated_elf() {
    let bytes = std::fs::read(guest("hello")).expect("read hello.elf");
    let path = scratch("truncated.elf", &bytes[..40]);
    let msg = load_error(&path);
    assert_mentions(&msg, &["truncated", "malformed", "past the end"]);
}

#[test]
fn elf32_is_refused() {
    // EI_CLASS = ELFCLASS32
    let path = patched_hello("elf32.elf", |b| b[4] = 1);
    let msg = load_error(&path);
    assert_mentions(&msg, &["32", "class"]);
}

#[test]
fn big_endian_is_refused() {
    // EI_DATA = ELFDATA2MSB
    let path = patched_hello("big-endian.elf", |b| b[5] = 2);
    let msg = load_error(&path);
    assert_mentions(&msg, &["endian", "encoding"]);
}

#[test]
fn x86_64_elf_is_refused() {
    // e_machine = EM_X86_64 (62)
    let path = patched_hello("x86-64.elf", |b| {
        b[18] = 62;
        b[19] = 0;
    });
    let msg = load_error(&path);
    assert_mentions(&msg, &["machine", "RISC-V"]);
}

#[test]
fn relocatable_object_is_refused() {
    // e_type = ET_REL
    let path = patched_hello("relocatable.elf", |b| {
        b[16] = 1;
        b[17] = 0;
    });
    let msg = load_error(&path);
    assert_mentions(&msg, &["type", "executable"]);
}

#[test]
fn missing_file() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("elf-tests/does-not-exist.elf");
    let msg = load_error(&path);
    assert!(
        msg.contains("does-not-exist.elf"),
        "message does not name the file: {msg}"
    );
}
