//! `vmm run`: guest kernels in VS-mode with the VMM's SBI, run in-process
//! (`vmm::run::run_kernel`) with console input given as bytes and the output captured.

use std::path::PathBuf;

use vmm::run::{run_kernel, ConsoleInput, RunConfig, RunExit, RunStats};
use vmm_tests::{guest, SharedBuf, BUDGET};

fn run(config: &RunConfig, input: &[u8]) -> (Result<(RunExit, RunStats), vmm::Error>, String) {
    let out = SharedBuf::default();
    let r = run_kernel(
        config,
        Box::new(out.clone()),
        ConsoleInput::Bytes(input.to_vec()),
    );
    (r, out.text())
}

fn config(kernel: impl Into<PathBuf>) -> RunConfig {
    let mut c = RunConfig::new(kernel);
    c.memory_mib = 64;
    c.max_insns = Some(BUDGET);
    c
}

fn temp_file(name: &str, data: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("vmm-run-test-{}-{name}", std::process::id()));
    std::fs::write(&path, data).unwrap();
    path
}

#[test]
fn sbi_console_passes() {
    let (r, out) = run(&config(guest("sbi_console")), b"hello\n");
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(
        !out.contains("FAIL"),
        "failures:\n{out}\n{}",
        stats.exits.table()
    );
    assert!(out.contains("sbi_console: hello from DBCN\n"), "{out}");
    assert!(out.contains("sbi_console: hello from the UART\n"), "{out}");
    assert!(out.contains("sbi_console: read: hello\n"), "{out}");
    assert!(out.ends_with("sbi_console: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
    assert!(matches!(exit, RunExit::Reset(_)));
    // Exit accounting.
    assert!(stats.exits.get("sbi DBCN") > 10, "{}", stats.exits.table());
    assert!(stats.exits.get("sbi BASE") >= 9, "{}", stats.exits.table());
    assert_eq!(stats.exits.get("sbi SRST"), 2, "{}", stats.exits.table());
    assert!(stats.exits.get("mmio uart write") >= 30);
    assert!(stats.exits.get("wfi") >= 1);
}

#[test]
fn sbi_console_reads_input_given_in_pieces_and_via_initrd_and_cmdline() {
    // Input without a trailing newline: the guest polls until its budget of tries is out
    // and still shuts down, reporting the wrong length as a failure (status 1).
    let mut c = config(guest("sbi_console"));
    let initrd = temp_file("initrd", &[0x5a; 10000]);
    c.initrd = Some(initrd.clone());
    c.cmdline = "console=ttyS0".into();
    let (r, out) = run(&c, b"hi");
    let (exit, _) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(out.contains("sbi_console: read: hi\n"), "{out}");
    assert!(out.contains("FAIL line length = 0x2, want 0x5"), "{out}");
    assert_eq!(exit.exit_code(), 1, "{exit:?}");
    let _ = std::fs::remove_file(initrd);
}

#[test]
fn budget_exhausted() {
    let mut c = config(guest("sbi_console"));
    c.max_insns = Some(1000);
    let (r, _) = run(&c, b"hello\n");
    let (exit, stats) = r.unwrap();
    assert_eq!(
        exit,
        RunExit::BudgetExhausted {
            insns: 1000,
            pc: match exit {
                RunExit::BudgetExhausted { pc, .. } => pc,
                _ => 0,
            }
        }
    );
    assert_eq!(exit.exit_code(), 124);
    assert_eq!(stats.instructions, 1000);
}

#[test]
fn rejects_files_that_are_not_kernels() {
    let text = temp_file("text", b"#!/bin/sh\necho this is not a kernel\n");
    let (r, _) = run(&config(&text), b"");
    let e = r.unwrap_err().to_string();
    assert!(e.contains("not a kernel"), "{e}");
    assert!(e.contains("ELF") && e.contains("Image"), "{e}");
    let _ = std::fs::remove_file(text);

    let (r, _) = run(&config("/nonexistent/kernel"), b"");
    let e = r.unwrap_err().to_string();
    assert!(e.contains("cannot read /nonexistent/kernel"), "{e}");
}

#[test]
fn rejects_a_kernel_too_big_for_ram() {
    // A riscv64 Image header claiming 64 MiB of memory.
    let mut image = vec![0u8; 4096];
    image[8..16].copy_from_slice(&0x20_0000u64.to_le_bytes());
    image[16..24].copy_from_slice(&(64u64 << 20).to_le_bytes());
    image[56..60].copy_from_slice(b"RSC\x05");
    let path = temp_file("big-image", &image);
    let mut c = config(&path);
    c.memory_mib = 32;
    let (r, _) = run(&c, b"");
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("does not fit") || e.contains("larger --memory"),
        "{e}"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn rejects_bad_initrds() {
    let mut c = config(guest("sbi_console"));
    c.initrd = Some("/nonexistent/initrd.img".into());
    let (r, _) = run(&c, b"");
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("cannot read initrd /nonexistent/initrd.img"),
        "{e}"
    );

    let big = temp_file("big-initrd", &vec![0u8; 5 << 20]);
    let mut c = config(guest("sbi_console"));
    c.memory_mib = 8;
    c.initrd = Some(big.clone());
    let (r, _) = run(&c, b"");
    let e = r.unwrap_err().to_string();
    assert!(e.contains("does not fit in guest RAM"), "{e}");
    let _ = std::fs::remove_file(big);
}
