//! `cargo bench -p vmm --bench snapshot`: wall time of a snapshot of a 256 MiB guest
//! (the built-in CTR self-test guest, stopped mid-run) written to a file, and of reading,
//! checking and restoring it onto a new VM; prints the figures (best of 5).

use std::time::{Duration, Instant};

use vmm::run::snapshot::RestoreConfig;
use vmm::run::{GuestVm, RunConfig};

fn main() {
    let mut config = RunConfig::ctr_demo();
    config.memory_mib = 256;
    config.max_insns = Some(5_000);
    let mut vm = GuestVm::new(&config, Box::new(std::io::sink())).expect("VM");
    vm.run().expect("run");
    let path = std::env::temp_dir().join(format!("vmm-bench-snapshot-{}", std::process::id()));
    let (mut best_save, mut best_restore) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        let t = Instant::now();
        vm.write_snapshot(&path).expect("snapshot");
        best_save = best_save.min(t.elapsed());
        let t = Instant::now();
        let snap = vmm::snapshot::read(&path).expect("read");
        let restored =
            GuestVm::from_snapshot(&snap, &RestoreConfig::default(), Box::new(std::io::sink()))
                .expect("restore");
        best_restore = best_restore.min(t.elapsed());
        drop(restored);
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&path);
    println!(
        "snapshot of a 256 MiB guest: {:.3} s to write ({} bytes), {:.3} s to read, check and restore; total {:.3} s",
        best_save.as_secs_f64(),
        bytes,
        best_restore.as_secs_f64(),
        (best_save + best_restore).as_secs_f64()
    );
}
