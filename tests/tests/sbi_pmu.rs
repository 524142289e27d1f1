//! The SBI PMU extension of `vmm run` (`pmu-virt`): the `sbi_pmu` guest kernel configures,
//! starts, stops and reads hardware and firmware counters, takes a counter-overflow
//! interrupt, uses the snapshot shared memory and checks every error path.

use vmm::run::{run_kernel, ConsoleInput, RunConfig, RunExit, RunStats};
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

fn config() -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_pmu"));
    c.memory_mib = 64;
    c.max_insns = Some(BUDGET);
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
