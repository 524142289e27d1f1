//! The SBI PMU extension of `vmm run` (`pmu-virt`): the `sbi_pmu` guest kernel configures,
//! starts, stops and reads hardware and firmware counters, takes a counter-overflow
//! interrupt, uses the snapshot shared memory and checks every error path.

use pmu_virt::LcofiDelivery;
use vmm::run::snapshot::{restore_and_run, RestoreConfig};
use vmm::run::{run_kernel, ConsoleInput, GuestVm, RunConfig, RunExit, RunStats};
use vmm_tests::{guest, SharedBuf, BUDGET};

fn run(config: &RunConfig) -> (Result<(RunExit, RunStats), vmm::Error>, String) {
    let out = SharedBuf::default();
    let r = run_kernel(
        config,
        Box::new(out.clone()),
        ConsoleInput::Bytes(Vec::new()),
    );
    (r, out.text())
}

/// The `sbi_pmu` guest with the snapshot shared memory it tests (`--pmu-snapshot on`, off
/// by default).
fn config() -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_pmu"));
    c.memory_mib = 64;
    c.max_insns = Some(BUDGET);
    c.pmu_snapshot = true;
    c
}

#[test]
fn sbi_pmu_guest_passes() {
    let (r, out) = run(&config());
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(!out.contains("FAIL"), "failures:\n{out}");
    assert!(out.ends_with("sbi_pmu: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{out}");
    // Every PMU function went through the VMM.
    assert!(stats.exits.get("sbi PMU") > 100, "{}", stats.exits.table());
}

/// The guest's four LCOFIs, each delivered by the way the VM asks for (the guest checks
/// the same things either way: cause, exact period, acknowledgement, LCOFIFRZ).
fn lcofi_run(delivery: LcofiDelivery) -> RunStats {
    let mut c = config();
    c.lcofi_delivery = delivery;
    let (r, out) = run(&c);
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(!out.contains("FAIL"), "{delivery:?}: failures:\n{out}");
    assert!(
        out.contains("ok   period: counter at the handler's 2nd instruction = 0x1"),
        "{out}"
    );
    assert!(
        out.contains("ok   LCOFIFRZ: sctrstatus.FROZEN = 0x80000000"),
        "{out}"
    );
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{out}");
    stats
}

#[test]
fn direct_lcofi_delivery_never_exits() {
    let stats = lcofi_run(LcofiDelivery::Direct);
    assert_eq!(stats.exits.get(INJECTED), 0, "{}", stats.exits.table());
}

#[test]
fn selective_lcofi_delivery_goes_through_the_vmm_and_hvip() {
    let stats = lcofi_run(LcofiDelivery::Selective);
    // overflow_and_snapshot's LCOFI, overflow_period_and_freeze's three, pending_lcofi's.
    assert_eq!(stats.exits.get(INJECTED), 5, "{}", stats.exits.table());
    assert_eq!(
        stats.exits.get("interrupt LCOFI spurious"),
        0,
        "{}",
        stats.exits.table()
    );
}

const INJECTED: &str = "interrupt LCOFI to guest (hvip)";

/// A snapshot taken while an LCOFI is pending (the guest spins with interrupts off) and
/// restored: the LCOFI is still pending and is taken once the guest unmasks it, and the
/// output is that of a run straight through, in both delivery modes.
#[test]
fn a_pending_lcofi_survives_snapshot_and_restore() {
    for delivery in [LcofiDelivery::Direct, LcofiDelivery::Selective] {
        let mut c = config();
        c.lcofi_delivery = delivery;
        let (r, want) = run(&c);
        let (_, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{want}"));
        assert!(want.ends_with("sbi_pmu: PASS\n"), "{want}");
        // The spin (600 000 instructions) is all but the end of the run.
        c.max_insns = Some(stats.instructions - 300_000);
        let path = std::env::temp_dir().join(format!(
            "vmm-sbi-pmu-{}-{delivery:?}.snap",
            std::process::id()
        ));
        let out = SharedBuf::default();
        let mut vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
        let exit = vm.run().unwrap();
        assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
        vm.write_snapshot(&path).unwrap();
        let before = out.text();
        assert!(before.ends_with("pending LCOFI: spinning\n"), "{before}");
        let after = SharedBuf::default();
        let options = RestoreConfig {
            max_insns: Some(BUDGET),
            ..RestoreConfig::default()
        };
        let (exit, _) =
            restore_and_run(&path, &options, Box::new(after.clone()), ConsoleInput::None)
                .unwrap_or_else(|e| panic!("{delivery:?}: {e}"));
        let _ = std::fs::remove_file(&path);
        let text = after.text();
        assert!(
            text.contains("ok   pending: taken once unmasked = 0x1"),
            "{text}"
        );
        assert_eq!(format!("{before}{text}"), want, "{delivery:?}");
        assert_eq!(exit.exit_code(), 0);
    }
}

/// The snapshot shared memory is off by default (`--pmu-snapshot off`: Linux 6.12's driver
/// loses `perf record` samples with it): the guest's `snapshot_set_shmem` calls are
/// SBI_ERR_NOT_SUPPORTED, so its snapshot checks fail.
#[test]
fn the_snapshot_shared_memory_is_off_by_default() {
    let mut c = config();
    c.pmu_snapshot = RunConfig::new("kernel").pmu_snapshot;
    assert!(!c.pmu_snapshot);
    let (r, out) = run(&c);
    let (exit, _) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    let not_supported = "0xfffffffffffffffe";
    assert!(
        out.contains(&format!("FAIL shmem = {not_supported}, want 0x0")),
        "{out}"
    );
    assert!(
        out.contains(&format!("FAIL shmem misaligned = {not_supported}")),
        "{out}"
    );
    assert!(out.contains("ok   num_counters = 0x30"), "{out}");
    assert_eq!(exit.exit_code(), 1, "{exit:?}");
}

#[test]
fn without_a_pmu_the_extension_is_absent() {
    let mut c = config();
    c.pmu = false;
    let (r, out) = run(&c);
    let (exit, _) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(out.contains("FAIL probe PMU = 0x0, want 0x1"), "{out}");
    assert!(
        out.contains("FAIL num_counters error = 0xfffffffffffffffe, want 0x0"),
        "{out}"
    );
    assert_eq!(exit.exit_code(), 1, "{exit:?}");
}

/// `--pmu-counters 2`: the guest has hpm counters 3 and 4 only and multiplexes four events
/// over them (`sbi_pmu_mux`); with all 29 its counter 5 exists.
#[test]
fn a_guest_multiplexes_events_over_the_counters_it_is_given() {
    let mut c = RunConfig::new(guest("sbi_pmu_mux"));
    c.memory_mib = 64;
    c.max_insns = Some(BUDGET);
    c.pmu_counters = 2;
    let (r, out) = run(&c);
    let (exit, _) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(!out.contains("FAIL"), "failures:\n{out}");
    assert!(out.ends_with("sbi_pmu_mux: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0);

    c.pmu_counters = 29;
    let (r, out) = run(&c);
    let (exit, _) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(
        out.contains("FAIL get_info 5 = 0x0, want 0xfffffffffffffffd"),
        "{out}"
    );
    assert_eq!(exit.exit_code(), 1);

    c.pmu_counters = 30;
    let e = run(&c).0.unwrap_err().to_string();
    assert!(e.contains("--pmu-counters 30"), "{e}");
}

/// Firmware counters are per vCPU (`sbi_pmu_smp`, two vCPUs sending each other IPIs and
/// remote FENCE.I requests), also when both vCPUs share one hart instance (`--pcpus 1`).
#[test]
fn firmware_counters_count_per_vcpu() {
    for pcpus in [None, Some(1)] {
        let mut c = RunConfig::new(guest("sbi_pmu_smp"));
        c.memory_mib = 64;
        c.max_insns = Some(BUDGET);
        c.vcpus = 2;
        c.pcpus = pcpus;
        let (r, out) = run(&c);
        let (exit, _) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
        assert!(!out.contains("FAIL"), "pcpus {pcpus:?}: failures:\n{out}");
        assert!(out.ends_with("sbi_pmu_smp: PASS\n"), "{out}");
        assert_eq!(exit.exit_code(), 0);
    }
}
