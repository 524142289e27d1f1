//! The Linux guest kit for the tests: Debian's kernel and the initramfs images that
//! `scripts/linux-guest.sh -q` fetches, builds and caches (its `KERNEL=`, `INITRD=` and
//! `INITRD_PERF=` lines). The script runs once per test process, so the tests of a file
//! never download concurrently; if it fails, every test that needs the kit fails with its
//! message (never a skip).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// Paths of the kernel `Image` and the two initramfs images.
pub struct LinuxGuest {
    /// Debian's riscv64 kernel `Image`.
    pub kernel: PathBuf,
    /// busybox and `/init` (gzip-compressed cpio).
    pub initrd: PathBuf,
    /// The same plus Debian's `perf` and its shared libraries (uncompressed cpio).
    pub initrd_perf: PathBuf,
}

/// The kit, fetched on first use; panics with the script's message if it fails.
pub fn linux_guest() -> &'static LinuxGuest {
    static GUEST: OnceLock<Result<LinuxGuest, String>> = OnceLock::new();
    match GUEST.get_or_init(fetch) {
        Ok(g) => g,
        Err(e) => panic!("{e}"),
    }
}

fn fetch() -> Result<LinuxGuest, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/linux-guest.sh");
    let start = Instant::now();
    let out = Command::new("bash")
        .arg(&script)
        .arg("-q")
        .env("LINUX_GUEST_SUITE", "trixie")
        .output()
        .map_err(|e| format!("cannot run bash {}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "{} -q failed ({}); the Linux guest tests need its kernel and initramfs images \
             (the first run needs root and Debian's package mirrors):\n{stderr}{stdout}",
            script.display(),
            out.status
        ));
    }
    let value = |key: &str| {
        let path = stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(PathBuf::from)
            .ok_or_else(|| {
                format!(
                    "{} -q printed no {key} line:\n{stdout}{stderr}",
                    script.display()
                )
            })?;
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} -q named {}, which is not a file",
                script.display(),
                path.display()
            ))
        }
    };
    let guest = LinuxGuest {
        kernel: value("KERNEL=")?,
        initrd: value("INITRD=")?,
        initrd_perf: value("INITRD_PERF=")?,
    };
    eprintln!(
        "linux-guest.sh: {}, {} and {} ({:.1} s)",
        guest.kernel.display(),
        guest.initrd.display(),
        guest.initrd_perf.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(guest)
}
