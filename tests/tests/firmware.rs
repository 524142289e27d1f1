//! Firmware on `vmm machine`: OpenSBI's generic `fw_jump` (Debian's `opensbi` package, as
//! QEMU's `virt` board runs it) finds the machine's devices in the device tree `vmm machine`
//! passes in `a1` (CLINT, PLIC, UART, the test finisher as its power-off, with `--aia imsic`
//! the IMSIC), prints its banner, and runs an S-mode payload (`tests/firmware/payload.S`)
//! whose SBI calls it answers, ending with a shutdown it carries out through the finisher.

use std::path::{Path, PathBuf};
use std::process::Command;

use vmm_tests::vmm_command;

/// Where Debian's `opensbi` package puts the generic platform's `fw_jump` (or
/// `OPENSBI_FW_JUMP`).
const FW_JUMP: &str = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin";

fn tool(name: &str, args: &[&std::ffi::OsStr]) {
    let out = Command::new(name).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run {name} ({e}): install the Debian package gcc-riscv64-unknown-elf")
    });
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Links `fw_jump.bin` at the start of RAM and the payload at 0x80200000 into one ELF.
fn image() -> PathBuf {
    let fw =
        std::env::var_os("OPENSBI_FW_JUMP").map_or_else(|| PathBuf::from(FW_JUMP), PathBuf::from);
    assert!(
        fw.exists(),
        "{} is missing: install the Debian package opensbi (or set OPENSBI_FW_JUMP)",
        fw.display()
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("firmware");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("firmware");
    std::fs::create_dir_all(&dir).unwrap();
    let (payload, fw_obj, elf) = (dir.join("payload.o"), dir.join("fw.o"), dir.join("fw.elf"));
    tool(
        "riscv64-unknown-elf-gcc",
        &[
            "-march=rv64gc".as_ref(),
            "-mabi=lp64d".as_ref(),
            "-c".as_ref(),
            src.join("payload.S").as_os_str(),
            "-o".as_ref(),
            payload.as_os_str(),
        ],
    );
    tool(
        "riscv64-unknown-elf-objcopy",
        &[
            "-I".as_ref(),
            "binary".as_ref(),
            "-O".as_ref(),
            "elf64-littleriscv".as_ref(),
            "-B".as_ref(),
            "riscv".as_ref(),
            fw.as_os_str(),
            fw_obj.as_os_str(),
        ],
    );
    tool(
        "riscv64-unknown-elf-ld",
        &[
            "-m".as_ref(),
            "elf64lriscv".as_ref(),
            "-T".as_ref(),
            src.join("link.ld").as_os_str(),
            "-z".as_ref(),
            "max-page-size=4096".as_ref(),
            fw_obj.as_os_str(),
            payload.as_os_str(),
            "-o".as_ref(),
            elf.as_os_str(),
        ],
    );
    elf
}

/// Runs the image on `vmm machine` with `args`; returns its console output.
fn boot(elf: &Path, args: &[&str]) -> String {
    let out = vmm_command()
        .arg("machine")
        .args(["--max-insns", "200000000"])
        .args(args)
        .arg(elf)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The value of the banner line `key : value`.
fn banner<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim_end() == key).then(|| v.trim())
        })
        .unwrap_or_else(|| panic!("no {key:?} in the banner:\n{out}"))
}

#[test]
fn opensbi_finds_the_machine_in_its_device_tree_and_runs_a_payload() {
    let elf = image();
    for (args, ipi) in [
        (&[][..], "aclint-mswi"),
        (&["--aia", "imsic"][..], "aia-imsic"),
    ] {
        let out = boot(&elf, args);
        assert!(out.contains("OpenSBI v"), "{out}");
        assert_eq!(banner(&out, "Platform Name"), "riscv-ctr-vmm,machine");
        assert_eq!(banner(&out, "Platform Console Device"), "uart8250");
        assert_eq!(banner(&out, "Platform IPI Device"), ipi, "{args:?}");
        assert!(
            banner(&out, "Platform Timer Device").starts_with("aclint-mtimer @ 10000000Hz"),
            "{out}"
        );
        assert_eq!(banner(&out, "Boot HART Base ISA"), "rv64imafdch");
        assert_eq!(banner(&out, "Boot HART PMP Count"), "16");
        let hello = out
            .find("payload: S-mode under the firmware\n")
            .unwrap_or_else(|| panic!("the payload did not run:\n{out}"));
        assert!(
            out[hello..].contains("payload: a1 is a device tree\n"),
            "{out}"
        );
    }
}
