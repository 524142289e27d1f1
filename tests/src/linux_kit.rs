//! The Linux guest kit for the tests: Debian's kernel and the initramfs images that
//! `scripts/linux-guest.sh -q` fetches, builds and caches (its `SUITE=`, `KERNEL=`,
//! `INITRD=`, `INITRD_PERF=` and `INITRD_CTR=` lines). The suite is whichever the script serves: a cached
//! kit of its list of suites (trixie, forky, sid), else the first it can fetch; the
//! environment (`LINUX_GUEST_SUITE`, `LINUX_GUEST_SUITES`, `LINUX_GUEST_DIR`, ...) passes
//! through to it. The script runs once per test process, so the tests of a file never
//! download concurrently; if it fails, every test that needs the kit fails with its message
//! (never a skip).
//!
//! Also what the Linux guest tests share to run the guest and read its console
//! ([`boot`], [`assert_workload_passed`], [`section`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use vmm::run::{run_kernel_with_policy, ConsoleInput, GuestPolicy, RunConfig, RunExit, RunStats};

use crate::SharedBuf;

/// Paths of the kernel `Image` and the two initramfs images.
#[derive(Debug)]
pub struct LinuxGuest {
    /// The Debian suite the kit comes from (`trixie`, `sid`, ...).
    pub suite: String,
    /// The kernel's release (`uname -r`), from the path of the kernel file in its package
    /// (`/boot/vmlinux-RELEASE` or `/usr/lib/modules/RELEASE/vmlinuz`, recorded in the
    /// kit's `versions` file).
    pub kernel_release: String,
    /// Debian's riscv64 kernel `Image`.
    pub kernel: PathBuf,
    /// busybox and `/init` (gzip-compressed cpio).
    pub initrd: PathBuf,
    /// The same plus Debian's `perf` and its shared libraries (uncompressed cpio).
    pub initrd_perf: PathBuf,
    /// busybox, `/init`, the `ctr_rec` kernel module (loaded by `/init`), `ctrrec` and
    /// `ctrtest` (guest/linux/ctr; gzip-compressed cpio).
    pub initrd_ctr: PathBuf,
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
    let kernel = value("KERNEL=")?;
    let suite = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SUITE="))
        .ok_or_else(|| format!("{} -q printed no SUITE= line:\n{stdout}", script.display()))?
        .to_string();
    let versions_path = kernel.with_file_name("versions");
    let versions = std::fs::read_to_string(&versions_path)
        .map_err(|e| format!("cannot read {}: {e}", versions_path.display()))?;
    if versions.lines().next() != Some(&format!("suite {suite}")) {
        return Err(format!(
            "{} does not start with 'suite {suite}':\n{versions}",
            versions_path.display()
        ));
    }
    let kernel_release = versions
        .lines()
        .find_map(|l| l.strip_prefix("kernel-file "))
        .and_then(kernel_release)
        .ok_or_else(|| {
            format!(
                "no kernel-file line naming the kernel's release in {}:\n{versions}",
                versions_path.display()
            )
        })?;
    let guest = LinuxGuest {
        suite,
        kernel_release,
        kernel,
        initrd: value("INITRD=")?,
        initrd_perf: value("INITRD_PERF=")?,
        initrd_ctr: value("INITRD_CTR=")?,
    };
    // Messages the script gives even with -q: the suites it gave up and why.
    if !stderr.trim().is_empty() {
        eprintln!("linux-guest.sh said:\n{stderr}");
    }
    eprintln!(
        "linux-guest.sh: Debian {} (Linux {}): {}, {}, {} and {} ({:.1} s)",
        guest.suite,
        guest.kernel_release,
        guest.kernel.display(),
        guest.initrd.display(),
        guest.initrd_perf.display(),
        guest.initrd_ctr.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(guest)
}

/// The kernel release in the path of a Debian kernel file: `/boot/vmlinux-RELEASE`,
/// `/boot/vmlinuz-RELEASE` or `/usr/lib/modules/RELEASE/vmlinu[xz]`.
fn kernel_release(path: &str) -> Option<String> {
    let release = if let Some(rest) = path.strip_prefix("/usr/lib/modules/") {
        rest.split_once('/')?.0
    } else {
        let name = path.strip_prefix("/boot/")?;
        name.strip_prefix("vmlinux-")
            .or_else(|| name.strip_prefix("vmlinuz-"))?
    };
    (!release.is_empty()).then(|| release.to_string())
}

/// Runs the Linux guest `config` describes with its console collected in memory; returns
/// how the run ended, its statistics and the console output with `\r\n` as `\n`. Panics with
/// the console output if `run_kernel` fails.
pub fn boot(config: &RunConfig) -> (RunExit, RunStats, String) {
    boot_with_policy(config, GuestPolicy::default())
}

/// [`boot`] with the VMM trapping what `policy` names (`vmm run --trap`).
pub fn boot_with_policy(config: &RunConfig, policy: GuestPolicy) -> (RunExit, RunStats, String) {
    let out = SharedBuf::default();
    let r = run_kernel_with_policy(config, policy, Box::new(out.clone()), ConsoleInput::None);
    let text = out.text().replace("\r\n", "\n");
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\nconsole:\n{text}"));
    (exit, stats, text)
}

/// Asserts that the guest's `/init` reported status 0 for its workload
/// (`VMM-GUEST-EXIT 0`; `what` failed otherwise) and that the VM then powered off cleanly.
pub fn assert_workload_passed(exit: &RunExit, text: &str, what: &str) {
    assert!(
        text.contains("\nVMM-GUEST-EXIT 0\n"),
        "{what} failed:\n{text}"
    );
    assert!(exit.is_clean_shutdown(), "{exit:?}\n{text}");
}

/// The text between the lines `=== name` and the next `=== ` line of the console output.
pub fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let head = format!("\n=== {name}\n");
    let start = out
        .find(&head)
        .unwrap_or_else(|| panic!("no section {name:?}:\n{out}"))
        + head.len();
    let len = out[start..].find("\n=== ").unwrap_or(out.len() - start);
    &out[start..start + len]
}
