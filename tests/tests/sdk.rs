//! The guest SDK (`guest/sdk/`, docs/guest-sdk.md): its example kernel records its own
//! transfers in CTR under `vmm run`, says clearly when the VM has no CTR, and the SDK's
//! Makefile builds the same kernel as `tests/build.rs` (one list of flags, no header outside
//! the SDK).

use object::{Object, ObjectSegment};
use std::path::Path;
use std::process::Command;
use vmm::run::{run_kernel, ConsoleInput, RunConfig};
use vmm_tests::{guest, SharedBuf, BUDGET};

fn run(config: &RunConfig) -> (u8, String) {
    let out = SharedBuf::default();
    let (exit, _) = run_kernel(config, Box::new(out.clone()), ConsoleInput::None)
        .unwrap_or_else(|e| panic!("vmm: {e}\n{}", out.text()));
    (exit.exit_code(), out.text())
}

fn ctr_hello() -> RunConfig {
    let mut c = RunConfig::new(guest("sdk_ctr_hello"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c
}

#[test]
fn ctr_hello_records_its_calls_returns_and_branches() {
    let (code, out) = run(&ctr_hello());
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("ctr_hello: PASS\n"), "{out}");
    assert!(out.contains("sctrdepth.DEPTH = 0: 16 entries"), "{out}");
    // Youngest first: the return, the call before it, the branch before that.
    assert!(
        out.contains(
            "  #0 hello_calls+0x20 -> hello_calls+0xc  return, 1 cycles\n  \
             #1 hello_calls+0x8 -> hello_calls+0x20  direct call, 1 cycles\n  \
             #2 hello_calls+0x10 -> hello_calls+0x8  taken branch, 2 cycles\n"
        ),
        "{out}"
    );
    // sctrctl.RETINH: no return recorded.
    let filtered = out
        .split("returns filtered out: sctrstatus")
        .nth(1)
        .unwrap_or("");
    assert!(!filtered.contains("  return"), "{out}");
    assert!(out.contains("returns filtered out: 5 records"), "{out}");
}

#[test]
fn ctr_hello_without_ctr_says_so() {
    let mut c = ctr_hello();
    c.ctr = false;
    let (code, out) = run(&c);
    assert_eq!(code, 1, "{out}");
    // sctrdepth is illegal (cause 2) in a VM without CTR.
    assert!(
        out.contains("ctr_hello: no CTR (trap 2 on sctrdepth"),
        "{out}"
    );
}

/// Entry point and loadable segments (address, size in memory, file bytes).
fn loadable(elf: &[u8]) -> (u64, Vec<(u64, u64, Vec<u8>)>) {
    let f = object::File::parse(elf).expect("an ELF file");
    let segs = f
        .segments()
        .map(|s| (s.address(), s.size(), s.data().unwrap().to_vec()))
        .collect();
    (f.entry(), segs)
}

#[test]
fn the_makefile_builds_what_build_rs_builds() {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest/sdk");
    let build = test_support::temp_path("vmm-sdk", "build");
    let _ = std::fs::remove_dir_all(&build);
    let out = Command::new("make")
        .arg("-f")
        .arg(sdk.join("Makefile"))
        .arg(format!(
            "GUEST={}",
            sdk.join("examples/ctr_hello.c").display()
        ))
        .arg(format!("BUILD={}", build.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run make ({e}): install the Debian package make"));
    assert!(
        out.status.success(),
        "make failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let made = std::fs::read(build.join("ctr_hello.elf")).expect("the Makefile's ELF");
    let built = std::fs::read(guest("sdk_ctr_hello")).expect("build.rs's ELF");
    let _ = std::fs::remove_dir_all(&build);
    assert!(
        loadable(&made) == loadable(&built),
        "guest/sdk/Makefile and tests/build.rs build different kernels from the same source \
         (entry or loadable segments differ): their flags or runtime files have diverged"
    );
}
