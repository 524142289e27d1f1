//! Builds every guest program in `guests/` (one ELF per top-level `.c` or `.S` file, linked
//! with the shared runtime in `guests/rt/`, or for `sbi_*` guests, S-mode kernels for
//! `vmm run`, with `guests/rt_sbi/`) with the RISC-V cross-compiler, and writes
//! `guests.rs` into `OUT_DIR` with the paths of the ELF files.
//!
//! The compiler is `riscv64-unknown-elf-gcc` (Debian package `gcc-riscv64-unknown-elf`), or
//! whatever `RISCV_CC` names. Without it the build fails: the tests need the guests.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Flags for every guest: freestanding RV64GC code linked at 0x8000_0000.
const CFLAGS: &[&str] = &[
    "-march=rv64imafdc_zicsr_zifencei",
    "-mabi=lp64d",
    "-mcmodel=medany",
    "-mno-relax",
    "-static",
    "-nostdlib",
    "-nostartfiles",
    "-ffreestanding",
    "-fno-builtin",
    "-fno-tree-loop-distribute-patterns",
    "-fno-asynchronous-unwind-tables",
    "-fno-pic",
    "-O2",
    "-g",
    "-Wall",
    "-Wextra",
    "-Wl,--no-warn-rwx-segments",
    "-Wl,--build-id=none",
];

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let guests_dir = manifest_dir.join("guests");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let elf_dir = out_dir.join("guests");
    fs::create_dir_all(&elf_dir).expect("create OUT_DIR/guests");

    println!("cargo:rerun-if-changed=guests");
    println!("cargo:rerun-if-changed=../guest/sdk/include");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RISCV_CC");

    let cc = env::var("RISCV_CC").unwrap_or_else(|_| "riscv64-unknown-elf-gcc".to_string());
    check_compiler(&cc);

    let guests = guest_sources(&guests_dir);
    assert!(
        !guests.is_empty(),
        "no guest programs found in {}",
        guests_dir.display()
    );
    let rt_dir = guests_dir.join("rt");
    let runtime = [rt_dir.join("crt0.S"), rt_dir.join("rt.c")];
    let linker_script = rt_dir.join("link.ld");
    // `sbi_*` guests are S-mode kernels for `vmm run`: they start in VS-mode and use the
    // SBI, so they link with `rt_sbi/` instead of the M-mode runtime.
    let rt_sbi_dir = guests_dir.join("rt_sbi");
    let sbi_runtime = [rt_sbi_dir.join("crt0.S"), rt_sbi_dir.join("sbi.c")];
    let sbi_linker_script = rt_sbi_dir.join("link.ld");

    // Two or three compiler processes at a time is plenty for a dozen small programs.
    let results: Vec<Result<PathBuf, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = guests
            .iter()
            .map(|(name, src)| {
                let (runtime, linker_script) = if name.starts_with("sbi_") {
                    (&sbi_runtime, &sbi_linker_script)
                } else {
                    (&runtime, &linker_script)
                };
                let (cc, guests_dir, elf_dir) = (&cc, &guests_dir, &elf_dir);
                scope.spawn(move || {
                    build_guest(cc, guests_dir, elf_dir, runtime, linker_script, name, src)
                })
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

fn build_guest(
    cc: &str,
    guests_dir: &Path,
    elf_dir: &Path,
    runtime: &[PathBuf],
    linker_script: &Path,
    name: &str,
    src: &Path,
) -> Result<PathBuf, String> {
    let elf = elf_dir.join(format!("{name}.elf"));
    let mut cmd = Command::new(cc);
    // The CSR header generated from vcpu-api (guest/sdk/include/csr.h).
    let sdk_include = guests_dir.join("../../guest/sdk/include");
    cmd.args(CFLAGS)
        .arg("-I")
        .arg(guests_dir)
        .arg("-I")
        .arg(sdk_include)
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
