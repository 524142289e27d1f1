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
    assert!(
        e.contains("snapshot format version 1 is not supported (this vmm reads version 5)"),
        "{e}"
    );

    // Well-formed files whose vCPUs are inconsistent (as a hostile file may be).
    let mut c = config();
    c.vcpus = 2;
    let vm = GuestVm::new(&c, Box::new(SharedBuf::default())).unwrap();
    let (state, memory) = vm.snapshot().unwrap();
    assert_eq!(state.vcpus.len(), 2);
    let refused = |edit: &dyn Fn(&mut vmm::snapshot::VmState), want: &str| {
        let mut s = state.clone();
        edit(&mut s);
        vmm::snapshot::write(&path, &s, &memory).unwrap();
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
