//! `cargo bench -p vmm --bench snapshot`: a 256 MiB guest (the built-in CTR self-test guest,
//! stopped mid-run) that has touched 32 MiB of its RAM (every eighth page, written by the
//! bench with non-zero bytes): wall time of a snapshot written to a file (fsync included),
//! of reading, checking and restoring it onto a new VM (best of 5), the file's size, and
//! the host memory (VmRSS growth) a restored VM holds against a fresh VM that touched the
//! same pages.

use std::time::{Duration, Instant};

use vm_memory::{Bytes, GuestAddress};
use vmm::run::snapshot::RestoreConfig;
use vmm::run::{GuestVm, RunConfig};

const MIB: usize = 256;
/// Every eighth page: 32 MiB of the 256.
const TOUCH_EVERY: usize = 8;
const PAGE: usize = 4096;

/// This process's resident set, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// A VM of 256 MiB, run a little, with 32 MiB of its RAM written.
fn touched_vm() -> GuestVm {
    let mut config = RunConfig::ctr_demo();
    config.memory_mib = MIB as u64;
    config.max_insns = Some(5_000);
    let mut vm = GuestVm::new(&config, Box::new(std::io::sink())).expect("VM");
    vm.run().expect("run");
    // Leave the kernel's first 4 MiB alone; the rest of every eighth page gets bytes.
    let mut page = [0u8; PAGE];
    for i in (4 << 20) / PAGE..(MIB << 20) / PAGE {
        if i % TOUCH_EVERY == 0 {
            page.fill((i % 251) as u8 | 1);
            vm.memory()
                .write_slice(&page, GuestAddress(0x8000_0000 + (i * PAGE) as u64))
                .expect("RAM");
        }
    }
    vm
}

fn main() {
    let rss0 = rss_kib();
    let vm = touched_vm();
    let fresh_kib = rss_kib().saturating_sub(rss0);
    let path = std::env::temp_dir().join(format!("vmm-bench-snapshot-{}", std::process::id()));
    let (mut best_save, mut best_restore) = (Duration::MAX, Duration::MAX);
    let mut restored_kib = 0;
    for _ in 0..5 {
        let t = Instant::now();
        vm.write_snapshot(&path).expect("snapshot");
        best_save = best_save.min(t.elapsed());
        let rss0 = rss_kib();
        let t = Instant::now();
        let snap = vmm::snapshot::read(&path).expect("read");
        let restored =
            GuestVm::from_snapshot(snap, &RestoreConfig::default(), Box::new(std::io::sink()))
                .expect("restore");
        best_restore = best_restore.min(t.elapsed());
        restored_kib = rss_kib().saturating_sub(rss0);
        drop(restored);
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&path);
    println!(
        "snapshot of a {MIB} MiB guest that touched {} MiB: {:.3} s to write ({} bytes), \
         {:.3} s to read, check and restore; total {:.3} s",
        MIB / TOUCH_EVERY,
        best_save.as_secs_f64(),
        bytes,
        best_restore.as_secs_f64(),
        (best_save + best_restore).as_secs_f64()
    );
    println!(
        "host memory (VmRSS growth): fresh VM {} MiB, restored VM {} MiB",
        fresh_kib / 1024,
        restored_kib / 1024
    );
}
