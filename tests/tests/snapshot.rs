//! VM snapshots: a guest's CTR history survives a snapshot and a restore on another host
//! model bit for bit; restores that cannot hold the guest are refused before it runs.

use vmm::run::snapshot::{restore_and_run, RestoreConfig};
use vmm::run::{run_kernel, ConsoleInput, GuestVm, RunConfig, RunExit};
use vmm_tests::{guest, SharedBuf, BUDGET};

fn config() -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_ctr_snap"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c
}

fn temp(name: &str) -> std::path::PathBuf {
    test_support::temp_path("vmm-snap-test", name)
}

/// The output of a run straight through.
fn straight() -> String {
    let out = SharedBuf::default();
    let (exit, _) = run_kernel(&config(), Box::new(out.clone()), ConsoleInput::None).unwrap();
    assert_eq!(exit.exit_code(), 0, "{}", out.text());
    out.text()
}

/// Run `insns` instructions, snapshot to `path`, and return the output so far.
fn run_then_snapshot(insns: u64, path: &std::path::Path) -> String {
    let out = SharedBuf::default();
    let mut c = config();
    c.max_insns = Some(insns);
    let mut vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
    let exit = vm.run().unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    vm.write_snapshot(path).unwrap();
    out.text()
}

#[test]
fn ctr_history_is_bit_identical_after_restore_on_another_host() {
    let want = straight();
    assert!(want.contains("ctr depth 64 wrptr"), "{want}");
    let path = temp("mid");
    // Mid-recording: the loop runs for about 15 000 instructions after a short boot.
    let before = run_then_snapshot(8_000, &path);
    assert!(
        !before.contains("ctr depth"),
        "snapshot too late:\n{before}"
    );
    for host in ["16,32,64,128,256", "64,128"] {
        let out = SharedBuf::default();
        let options = RestoreConfig {
            host_ctr_depths: ctr_virt::DepthSet::parse(host).unwrap(),
            max_insns: Some(BUDGET),
            ..RestoreConfig::default()
        };
        let (exit, _) = restore_and_run(&path, &options, Box::new(out.clone()), ConsoleInput::None)
            .unwrap_or_else(|e| panic!("host {host}: {e}"));
        assert_eq!(exit.exit_code(), 0);
        assert_eq!(format!("{before}{}", out.text()), want, "host {host}");
    }
    // A host without the guest's depth (64) is refused before the guest runs.
    let out = SharedBuf::default();
    let options = RestoreConfig {
        host_ctr_depths: ctr_virt::DepthSet::parse("16,32,128").unwrap(),
        ..RestoreConfig::default()
    };
    let e = restore_and_run(&path, &options, Box::new(out.clone()), ConsoleInput::None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("CTR depth 64") && e.contains("16,32,128"), "{e}");
    assert!(out.text().is_empty());
    // The snapshot file was not altered by being restored.
    let again = vmm::snapshot::read(&path).unwrap();
    assert_eq!(again.state.memory_mib, 32);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn corrupted_old_and_inconsistent_snapshots_are_refused() {
    let path = temp("corrupt");
    run_then_snapshot(5_000, &path);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let e = restore_and_run(
        &path,
        &RestoreConfig::default(),
        Box::new(SharedBuf::default()),
        ConsoleInput::None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
    std::fs::write(&path, &bytes[..n / 3]).unwrap();
    let e = vmm::snapshot::read(&path).unwrap_err().to_string();
    assert!(e.contains("truncated"), "{e}");
    let _ = std::fs::remove_file(&path);

    // A file of format version 1 (single-vCPU snapshots, before multi-vCPU ones).
    let path = temp("v1");
    run_then_snapshot(5_000, &path);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let e = vmm::snapshot::read(&path).unwrap_err().to_string();
    let expected = format!(
        "snapshot format version 1 is not supported (this vmm reads versions {} to {})",
        vmm::snapshot::OLDEST_VERSION,
        vmm::snapshot::VERSION
    );
    assert!(e.contains(&expected), "{e}");

    // Well-formed files whose vCPUs are inconsistent (as a hostile file may be).
    let mut c = config();
    c.vcpus = 2;
    let vm = GuestVm::new(&c, Box::new(SharedBuf::default())).unwrap();
    let state = vm.snapshot_state();
    assert_eq!(state.vcpus.len(), 2);
    let refused = |edit: &dyn Fn(&mut vmm::snapshot::VmState), want: &str| {
        let mut s = state.clone();
        edit(&mut s);
        vmm::snapshot::write(&path, &s, vm.memory()).unwrap();
        let e = restore_and_run(
            &path,
            &RestoreConfig::default(),
            Box::new(SharedBuf::default()),
            ConsoleInput::None,
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(e.contains(want), "{e}");
    };
    refused(&|s| s.vcpus[1].hsm = 7, "vCPU 1: HSM state 7");
    refused(
        &|s| s.vcpus[1].idle = Some(5),
        "vCPU 1: HSM state 1 with WFI wait",
    );
    refused(&|s| s.vcpus[1].hart.hart_id = 0, "vCPU 1 has hart id 0");
    refused(&|s| s.vcpus.truncate(0), "no vCPU");
    let _ = std::fs::remove_file(&path);
}

/// Guest RAM's bytes (`mib` MiB at the RAM base).
fn ram_of(mem: &vm_memory::GuestMemoryMmap, mib: usize) -> Vec<u8> {
    use vm_memory::{Bytes, GuestAddress};
    let mut v = vec![0u8; mib << 20];
    mem.read_slice(&mut v, GuestAddress(vmm::machine::RAM_BASE))
        .unwrap();
    v
}

/// The file holds the state and the guest's non-zero pages only (of 32 MiB, the guest
/// touched a few hundred KiB); read back, the state (the CTR buffer and its cycle counter
/// among it) and guest RAM are the VM's bit for bit, and so are the restored VM's.
#[test]
fn a_snapshot_holds_the_nonzero_pages_and_restores_bit_for_bit() {
    let path = temp("sparse");
    let mut c = config();
    c.max_insns = Some(8_000);
    let mut vm = GuestVm::new(&c, Box::new(SharedBuf::default())).unwrap();
    vm.run().unwrap();
    let bytes = vm.write_snapshot(&path).unwrap();
    let state = vm.snapshot_state();
    assert!(state.vcpus[0].ctr.loaded, "the CTR context is on the hart");
    let ram = ram_of(vm.memory(), 32);
    let nonzero = ram
        .chunks(4096)
        .filter(|p| !vmm::snapshot::is_zero(p))
        .count() as u64;
    let state_len = vmm::snapshot::encode_state(&state).unwrap().len() as u64;
    assert_eq!(bytes, std::fs::metadata(&path).unwrap().len());
    assert_eq!(bytes, 20 + state_len + 8 + nonzero * 4104 + 12);
    assert!(nonzero > 0 && nonzero < 1024, "{nonzero} non-zero pages");
    let snap = vmm::snapshot::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(snap.state, state);
    assert!(ram_of(&snap.memory, 32) == ram, "guest RAM differs");
    let restored = GuestVm::from_snapshot(
        snap,
        &RestoreConfig::default(),
        Box::new(SharedBuf::default()),
    )
    .unwrap();
    assert_eq!(restored.snapshot_state(), state);
    assert!(ram_of(restored.memory(), 32) == ram, "restored RAM differs");
}

/// What `vmm restore` says of the file at `path`, within 10 s (a FIFO must not block it).
fn restore_refusal(path: std::path::PathBuf) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let out = SharedBuf::default();
        let options = RestoreConfig {
            max_insns: Some(BUDGET),
            ..RestoreConfig::default()
        };
        let r = restore_and_run(&path, &options, Box::new(out.clone()), ConsoleInput::None);
        let _ = tx.send((r.map(|_| ()).map_err(|e| e.to_string()), out.text()));
    });
    let (r, out) = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the restore returns within 10 s");
    assert!(out.is_empty(), "the guest ran: {out}");
    r.expect_err("the file was restored")
}

/// Hostile files are refused from their metadata and sizes, before anything is read or
/// allocated: a FIFO without a writer, `/dev/zero`, a directory, a header announcing more
/// state than the file holds, a 4 GiB sparse file whose size makes room for more page
/// records than guest RAM has pages.
#[test]
fn hostile_files_are_refused_before_reading_them() {
    let fifo = temp("fifo");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = restore_refusal(fifo.clone());
    assert!(e.contains("is a FIFO, not a regular file"), "{e}");
    std::fs::remove_file(&fifo).unwrap();
    let e = restore_refusal("/dev/zero".into());
    assert!(
        e.contains("is a character device, not a regular file"),
        "{e}"
    );
    let e = restore_refusal(std::env::temp_dir());
    assert!(e.contains("is a directory, not a regular file"), "{e}");

    let path = temp("hostile");
    run_then_snapshot(5_000, &path);
    let good = std::fs::read(&path).unwrap();
    let state_len = u64::from_le_bytes(good[12..20].try_into().unwrap());
    // The largest state accepted, in a file of a few hundred KiB.
    let mut v = good.clone();
    v[12..20].copy_from_slice(&vmm::snapshot::MAX_STATE_BYTES.to_le_bytes());
    std::fs::write(&path, &v).unwrap();
    let e = restore_refusal(path.clone());
    assert!(
        e.contains("truncated") && e.contains("needs 16777236 bytes at offset 20"),
        "{e}"
    );
    // A valid header, then 4 GiB of holes sized for 1,000,000 records: 32 MiB of RAM has
    // 8192 pages. Refused from the size: reading it would take seconds.
    let f = std::fs::File::create(&path).unwrap();
    use std::io::Write;
    (&f).write_all(&good[..(20 + state_len + 8) as usize])
        .unwrap();
    f.set_len(20 + state_len + 8 + 1_000_000 * 4104 + 12)
        .unwrap();
    drop(f);
    let e = restore_refusal(path.clone());
    assert!(
        e.contains("1000000 page records for 8192 pages of guest RAM"),
        "{e}"
    );
    let _ = std::fs::remove_file(&path);
}

/// `--snapshot-on-stop` targets that cannot be written are refused before the run (and
/// for `vmm restore`, before the snapshot is read), naming the path and what is wrong; a
/// good one gets the file and no temporary file is left beside it.
#[test]
fn snapshot_targets_are_checked_before_the_run() {
    let missing = temp("no-such-dir").join("s.snap");
    let out = SharedBuf::default();
    let mut c = config();
    c.snapshot_on_stop = Some(missing.clone());
    c.max_insns = Some(5_000);
    let e = run_kernel(&c, Box::new(out.clone()), ConsoleInput::None)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    let want = format!(
        "cannot write a snapshot to {}: its directory {} does not exist",
        missing.display(),
        missing.parent().unwrap().display()
    );
    assert_eq!(e, want);
    assert!(out.text().is_empty(), "the guest ran");

    let path = temp("target-check");
    run_then_snapshot(5_000, &path);
    for (target, why) in [
        (missing.clone(), "does not exist"),
        (std::env::temp_dir(), "it is a directory"),
    ] {
        let out = SharedBuf::default();
        let options = RestoreConfig {
            snapshot_on_stop: Some(target.clone()),
            max_insns: Some(1_000),
            ..RestoreConfig::default()
        };
        let e = restore_and_run(&path, &options, Box::new(out.clone()), ConsoleInput::None)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("cannot write a snapshot to {}", target.display()))
                && e.contains(why),
            "{e}"
        );
        assert!(out.text().is_empty(), "the guest ran");
    }
    // `vmm receive`: refused before it listens.
    let sock = temp("receive.sock");
    let at: vmm::run::migrate::Endpoint = format!("unix:{}", sock.display()).parse().unwrap();
    let options = RestoreConfig {
        snapshot_on_stop: Some(missing.clone()),
        ..RestoreConfig::default()
    };
    let e = vmm::run::migrate::receive_and_run(
        &at,
        &options,
        Box::new(SharedBuf::default()),
        ConsoleInput::None,
        |_| panic!("it listens"),
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert_eq!(e, want);
    assert!(!sock.exists(), "the socket was created");
    // A good target in a directory of its own.
    let dir = temp("target-dir");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("again.snap");
    let options = RestoreConfig {
        snapshot_on_stop: Some(target.clone()),
        max_insns: Some(1_000),
        ..RestoreConfig::default()
    };
    let (exit, _) = restore_and_run(
        &path,
        &options,
        Box::new(SharedBuf::default()),
        ConsoleInput::None,
    )
    .unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["again.snap"]);
    assert_eq!(vmm::snapshot::read(&target).unwrap().state.memory_mib, 32);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&path);
}

/// `sbi_sstc` snapshotted while it polls for its `stimecmp` deadline (Sstc: the hart's
/// `vstimecmp`) and restored: the comparator and the later timer interrupt work as in an
/// uninterrupted run (the saved state holds `vstimecmp`, `htimedelta` and the STCE enables,
/// and the restore checks them against the snapshot's `--sstc`).
#[test]
fn a_guest_waiting_on_its_stimecmp_resumes_with_it() {
    let mut c = RunConfig::new(guest("sbi_sstc"));
    c.memory_mib = 16;
    let straight_out = SharedBuf::default();
    let (exit, _) = run_kernel(&c, Box::new(straight_out.clone()), ConsoleInput::None).unwrap();
    assert_eq!(exit.exit_code(), 0, "{}", straight_out.text());
    let want = straight_out.text();
    assert!(want.ends_with("sbi_sstc: PASS\n"), "{want}");

    // The poll lasts 2000 ticks (20 000 instructions) after a short start.
    let path = temp("sstc");
    let out = SharedBuf::default();
    c.max_insns = Some(12_000);
    let mut vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
    let exit = vm.run().unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    let state = vm.snapshot_state();
    assert!(state.sstc);
    let csr = &state.vcpus[0].hart.csr;
    assert_ne!(csr.vstimecmp, u64::MAX, "snapshot not while waiting");
    vm.write_snapshot(&path).unwrap();
    let before = out.text();
    assert!(
        before.contains("ok   sip.STIP before the deadline") && !before.contains("at the deadline"),
        "snapshot outside the poll:\n{before}"
    );
    let rest = SharedBuf::default();
    let options = RestoreConfig {
        max_insns: Some(BUDGET),
        ..RestoreConfig::default()
    };
    let (exit, stats) =
        restore_and_run(&path, &options, Box::new(rest.clone()), ConsoleInput::None)
            .unwrap_or_else(|e| panic!("restore: {e}"));
    assert_eq!(exit.exit_code(), 0, "{}", rest.text());
    assert_eq!(format!("{before}{}", rest.text()), want);
    assert_eq!(stats.exits.get("sbi TIME"), 0, "{}", stats.exits.table());
    let _ = std::fs::remove_file(&path);
}
