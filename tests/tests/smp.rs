//! `vmm run --pcpus`: vCPUs multiplexed on fewer hart instances see exactly the CTR history
//! they see on a hart each, and IPIs, remote fences, HSM and WFI idling work while a vCPU
//! is off its hart; multi-vCPU VMs are snapshotted and restored on any number of harts.

use vmm::run::snapshot::{restore_and_run, RestoreConfig};
use vmm::run::{run_kernel, ConsoleInput, RunConfig, RunExit, RunStats};
use vmm_tests::{guest, without_cycles, SharedBuf, BUDGET};

fn config(vcpus: u64, pcpus: Option<u64>, slice: u64) -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_ctr_smp"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c.vcpus = vcpus;
    c.pcpus = pcpus;
    c.slice_insns = slice;
    c
}

/// Runs the guest to its end; it must pass.
fn run(vcpus: u64, pcpus: Option<u64>, slice: u64) -> (String, RunStats) {
    let out = SharedBuf::default();
    let c = config(vcpus, pcpus, slice);
    let (exit, stats) = run_kernel(&c, Box::new(out.clone()), ConsoleInput::None)
        .unwrap_or_else(|e| panic!("vcpus {vcpus} pcpus {pcpus:?} slice {slice}: {e}"));
    let text = out.text();
    assert_eq!(
        exit.exit_code(),
        0,
        "vcpus {vcpus} pcpus {pcpus:?} slice {slice}: {exit:?}\n{text}"
    );
    assert!(text.contains("sbi_ctr_smp: PASS"), "{text}");
    (text, stats)
}

#[test]
fn ctr_histories_on_a_shared_hart_are_those_of_a_hart_each() {
    let (alone, stats) = run(2, None, vcpu_slice());
    assert_eq!(stats.switches, vec![0, 0], "a hart each: no switch");
    assert!(alone.contains("hart 0: depth 16 wrptr"), "{alone}");
    assert!(alone.contains("hart 1: depth 32 wrptr"), "{alone}");
    let mut shared_ref: Option<String> = None;
    // Slices from a few hundred instructions (a switch every few dozen records) to more
    // than the whole run (switches only at WFI and hart_stop).
    for slice in [300, 1000, 7919, 100_000, 10_000_000] {
        let (out, stats) = run(2, Some(1), slice);
        assert_eq!(stats.switches.len(), 1);
        assert!(
            stats.switches[0] >= 2,
            "slice {slice}: {:?}",
            stats.switches
        );
        if slice <= 1000 {
            // Both recording loops (about 15 000 and 24 000 instructions) span many slices.
            assert!(
                stats.switches[0] > 20,
                "slice {slice}: {:?}",
                stats.switches
            );
        }
        assert_eq!(
            without_cycles(&out),
            without_cycles(&alone),
            "slice {slice}: the history differs from a hart each"
        );
        // On one host thread the run is reproducible, cycle counts included: switches are
        // invisible to them.
        match &shared_ref {
            None => shared_ref = Some(out),
            Some(r) => assert_eq!(&out, r, "slice {slice}: cycle counts differ"),
        }
    }
}

#[test]
fn more_vcpus_than_harts_in_other_shapes() {
    let (alone, _) = run(2, None, vcpu_slice());
    // vCPUs 0 and 2 share hart 0 (vCPU 2 is never started), vCPU 1 has hart 1 to itself.
    let (out, stats) = run(3, Some(2), 500);
    assert_eq!(stats.switches.len(), 2);
    assert_eq!(stats.switches[1], 0, "{:?}", stats.switches);
    assert_eq!(without_cycles(&out), without_cycles(&alone));
    // Four vCPUs on one hart.
    let (out4, stats) = run(4, Some(1), 500);
    assert!(stats.switches[0] > 20, "{:?}", stats.switches);
    assert_eq!(without_cycles(&out4), without_cycles(&alone));
}

#[test]
fn pcpus_and_slices_out_of_range_are_refused() {
    for (vcpus, pcpus, slice, want) in [
        (
            2,
            Some(0),
            1000,
            "invalid number of harts (--pcpus) 0: must be 1..=2",
        ),
        (
            2,
            Some(3),
            1000,
            "invalid number of harts (--pcpus) 3: must be 1..=2",
        ),
        (2, Some(1), 0, "invalid time slice (--slice-insns) 0"),
    ] {
        let c = config(vcpus, pcpus, slice);
        let err = run_kernel(&c, Box::new(SharedBuf::default()), ConsoleInput::None)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{err}");
    }
}

fn vcpu_slice() -> u64 {
    vmm::run::DEFAULT_SLICE_INSNS
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("vmm-smp-test-{}-{name}", std::process::id()))
}

/// Multi-vCPU snapshots: stopped mid-recording (both vCPUs started, their CTR contexts
/// loaded), written, and restored on one hart instance or two: the output goes on exactly
/// as in a run straight through.
#[test]
fn two_vcpu_snapshot_mid_recording_restores_on_any_number_of_harts() {
    let (straight, _) = run(2, Some(1), 1000);
    let path = temp("mid");
    let out = SharedBuf::default();
    let mut c = config(2, Some(1), 1000);
    // vCPU 0 stops the VM after 12 000 instructions: both loops are running.
    c.max_insns = Some(12_000);
    c.snapshot_on_stop = Some(path.clone());
    let (exit, _) = run_kernel(&c, Box::new(out.clone()), ConsoleInput::None).unwrap();
    assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
    let before = out.text();
    assert!(!before.contains("hart 0:"), "snapshot too late:\n{before}");
    let snap = vmm::snapshot::read(&path).unwrap();
    assert_eq!(snap.state.vcpus.len(), 2);
    for (i, v) in snap.state.vcpus.iter().enumerate() {
        assert_eq!(v.hsm, 0, "vCPU {i} is started");
        assert!(v.ctr.loaded, "vCPU {i} has its CTR context loaded");
    }
    for (pcpus, slice) in [(Some(1), 1000), (Some(1), 777), (None, 100_000)] {
        let out = SharedBuf::default();
        let options = RestoreConfig {
            max_insns: Some(BUDGET),
            pcpus,
            slice_insns: slice,
            ..RestoreConfig::default()
        };
        let (exit, _) = restore_and_run(&path, &options, Box::new(out.clone()), ConsoleInput::None)
            .unwrap_or_else(|e| panic!("pcpus {pcpus:?}: {e}"));
        assert_eq!(exit.exit_code(), 0, "pcpus {pcpus:?}:\n{}", out.text());
        let whole = format!("{before}{}", out.text());
        if pcpus == Some(1) {
            assert_eq!(whole, straight, "pcpus {pcpus:?} slice {slice}");
        } else {
            assert_eq!(without_cycles(&whole), without_cycles(&straight));
        }
    }
    // Out of range for the snapshot's two vCPUs.
    let options = RestoreConfig {
        pcpus: Some(3),
        ..RestoreConfig::default()
    };
    let err = restore_and_run(
        &path,
        &options,
        Box::new(SharedBuf::default()),
        ConsoleInput::None,
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("invalid number of harts (--pcpus) 3: must be 1..=2"),
        "{err}"
    );
    let _ = std::fs::remove_file(&path);
}
