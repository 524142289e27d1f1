//! Builds every guest program in `guests/` (one ELF per top-level `.c` or `.S` file, linked
//! with the shared runtime in `guests/rt/`, or for `sbi_*` guests, S-mode kernels for
//! `vmm run`, with the guest SDK's VS-mode runtime `../guest/sdk/vs/`) with the RISC-V
//! cross-compiler and the SDK's flags (`../guest/sdk/cflags`), and writes `guests.rs` into
//! `OUT_DIR` with the paths of the ELF files.
//!
//! The compiler is `riscv64-unknown-elf-gcc` (Debian package `gcc-riscv64-unknown-elf`), or
//! whatever `RISCV_CC` names. Without it the build fails: the tests need the guests.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest compiler flags: one per line in `guest/sdk/cflags` (the one copy, which
/// `guest/sdk/Makefile` reads too), `#` comment lines and blank lines skipped.
fn cflags(sdk_dir: &Path) -> Vec<String> {
    let path = sdk_dir.join("cflags");
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the guest flags {}: {e}", path.display()));
    let flags: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert!(!flags.is_empty(), "{}: no flags", path.display());
    flags
}

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let guests_dir = manifest_dir.join("guests");
    // The guest SDK: the generated csr.h (include/), the VS-mode runtime (vs/), the flags.
    let sdk_dir = manifest_dir.join("../guest/sdk");
    let flags = cflags(&sdk_dir);
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let elf_dir = out_dir.join("guests");
    fs::create_dir_all(&elf_dir).expect("create OUT_DIR/guests");

    println!("cargo:rerun-if-changed=guests");
    println!("cargo:rerun-if-changed=../guest/sdk/include");
    println!("cargo:rerun-if-changed=../guest/sdk/vs");
    println!("cargo:rerun-if-changed=../guest/sdk/cflags");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RISCV_CC");

    let cc = env::var("RISCV_CC").unwrap_or_else(|_| "riscv64-unknown-elf-gcc".to_string());
    check_compiler(&cc);

    let mut guests = guest_sources(&guests_dir);
    assert!(
        !guests.is_empty(),
        "no guest programs found in {}",
        guests_dir.display()
    );
    // The SDK's examples are VS-mode kernels too: `sdk_<name>` (tests/tests/sdk.rs).
    let examples = sdk_dir.join("examples");
    println!("cargo:rerun-if-changed=../guest/sdk/examples");
    guests.extend(
        guest_sources(&examples)
            .into_iter()
            .map(|(name, src)| (format!("sdk_{name}"), src)),
    );
    let rt_dir = guests_dir.join("rt");
    let runtime = [rt_dir.join("crt0.S"), rt_dir.join("rt.c")];
    let linker_script = rt_dir.join("link.ld");
    // `sbi_*` guests are S-mode kernels for `vmm run`: they start in VS-mode and use the
    // SBI, so they link with the SDK's VS-mode runtime instead of the M-mode runtime.
    let vs_dir = sdk_dir.join("vs");
    let sbi_runtime = [vs_dir.join("crt0.S"), vs_dir.join("sbi.c")];
    let sbi_linker_script = vs_dir.join("link.ld");

    // Two or three compiler processes at a time is plenty for a dozen small programs.
    let results: Vec<Result<PathBuf, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = guests
            .iter()
            .map(|(name, src)| {
                let (runtime, linker_script) =
                    if name.starts_with("sbi_") || name.starts_with("sdk_") {
                        (&sbi_runtime, &sbi_linker_script)
                    } else {
                        (&runtime, &linker_script)
                    };
                let dirs = (guests_dir.as_path(), sdk_dir.as_path(), elf_dir.as_path());
                let (cc, flags) = (&cc, &flags);
                scope.spawn(move || build_guest(cc, flags, dirs, runtime, linker_script, name, src))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("guest build thread panicked"))
            .collect()
    });

    let mut errors = String::new();
    let mut table = String::new();
    for ((name, _), result) in guests.iter().zip(results) {
        match result {
            Ok(elf) => {
                writeln!(
                    table,
                    "    ({name:?}, {:?}),",
                    elf.to_str().expect("UTF-8 OUT_DIR")
                )
                .unwrap();
            }
            Err(e) => errors.push_str(&e),
        }
    }
    if !errors.is_empty() {
        panic!("building the guest programs failed:\n{errors}");
    }

    let generated = format!(
        "/// Directory holding the guest ELF files built by `build.rs`.\n\
         pub const GUEST_DIR: &str = {:?};\n\n\
         /// Every guest program: (name, path of its ELF file), sorted by name.\n\
         pub const GUESTS: &[(&str, &str)] = &[\n{table}];\n",
        elf_dir.to_str().expect("UTF-8 OUT_DIR")
    );
    fs::write(out_dir.join("guests.rs"), generated).expect("write guests.rs");
}

fn check_compiler(cc: &str) {
    match Command::new(cc).arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`{cc} --version` failed ({}): {}\nThe guest programs need a RISC-V cross-compiler: \
             install the Debian package gcc-riscv64-unknown-elf \
             (`apt-get install gcc-riscv64-unknown-elf`) or set RISCV_CC.",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "cannot run the RISC-V cross-compiler `{cc}`: {e}\nThe guest programs need it: \
             install the Debian package gcc-riscv64-unknown-elf \
             (`apt-get install gcc-riscv64-unknown-elf`) or set RISCV_CC to another \
             riscv64 bare-metal gcc."
        ),
    }
}

/// (name, source) of every guest: each top-level `*.c` / `*.S` file in `dir`.
fn guest_sources(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut guests: Vec<(String, PathBuf)> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("read guests dir").path())
        .filter(|path| path.is_file())
        .filter_map(|path| {
            let ext = path.extension()?.to_str()?;
            if ext != "c" && ext != "S" {
                return None;
            }
            let name = path.file_stem()?.to_str()?.to_string();
            Some((name, path))
        })
        .collect();
    guests.sort();
    guests
}

/// Compiles one guest: `cc FLAGS -I guests -I sdk -I sdk/include -T LINK.LD -o ELF RUNTIME
/// SRC -lgcc`, as `guest/sdk/Makefile` does for a guest of your own.
fn build_guest(
    cc: &str,
    flags: &[String],
    (guests_dir, sdk_dir, elf_dir): (&Path, &Path, &Path),
    runtime: &[PathBuf],
    linker_script: &Path,
    name: &str,
    src: &Path,
) -> Result<PathBuf, String> {
    let elf = elf_dir.join(format!("{name}.elf"));
    let mut cmd = Command::new(cc);
    // `vs/*.h` from the SDK, and the CSR header generated from vcpu-api
    // (guest/sdk/include/csr.h).
    cmd.args(flags)
        .arg("-I")
        .arg(guests_dir)
        .arg("-I")
        .arg(sdk_dir)
        .arg("-I")
        .arg(sdk_dir.join("include"))
        .arg("-T")
        .arg(linker_script)
        .arg("-o")
        .arg(&elf)
        .args(runtime)
        .arg(src)
        .arg("-lgcc");
    let out = cmd
        .output()
        .map_err(|e| format!("{name}: cannot run {cc}: {e}\n"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "{name}: {cmd:?} failed ({}):\n{stderr}\n",
            out.status
        ));
    }
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        println!("cargo:warning={name}: {line}");
    }
    // A disassembly next to the ELF helps when a guest fails; objdump is optional.
    let objdump = cc.strip_suffix("gcc").map(|p| format!("{p}objdump"));
    if let Some(objdump) = objdump {
        if let Ok(dis) = Command::new(objdump).arg("-d").arg(&elf).output() {
            if dis.status.success() {
                let _ = fs::write(elf_dir.join(format!("{name}.dis")), dis.stdout);
            }
        }
    }
    Ok(elf)
}
