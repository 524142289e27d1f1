//! Counter delegation (Ssccfg) for `vmm run` guests (`--pmu-deleg`): the `sbi_pmu_deleg`
//! guest kernel uses its delegated counters through `siselect`/`sireg*`, `scountinhibit` and
//! `scountovf`, every access trapped and emulated by `pmu-virt` on virtual counters backed by
//! other hart counters; without delegation the same accesses are illegal-instruction and
//! the device tree does not list `ssccfg`. A snapshot taken while counters, events and an
//! OF bit are live restores them exactly.

use vmm::run::snapshot::{restore_and_run, RestoreConfig};
use vmm::run::{
    run_kernel, ConsoleInput, GuestVm, RunConfig, RunExit, RunStats, VirtualInsnAction,
};
use vmm_tests::{guest, vmm_command, SharedBuf, BUDGET};

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
    passes(&out);
    assert!(out.contains("mode: deleg on\n"), "{out}");
    assert!(
        out.contains("ok   device tree: sscsrind with ssccfg = 0x1\n"),
        "{out}"
    );
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
    let table = stats.exits.table();
    // The guest's counters 3 and 31 are the hart's 31 and 3 (it cannot tell: the counts it
    // checks stay apart); 0, 2 and 17 are themselves.
    for (v, h) in [
        (3, 31),
        (31, 3),
        (4, 30),
        (5, 29),
        (10, 24),
        (0, 0),
        (2, 2),
        (17, 17),
    ] {
        assert!(
            stats
                .exits
                .get(&format!("pmu-deleg counter {v} on hart counter {h}"))
                > 0,
            "counter {v} on {h}:\n{table}"
        );
    }
    for access in [
        "sireg",
        "sireg write",
        "sireg2",
        "sireg2 write",
        "scountinhibit",
        "scountinhibit write",
        "scountovf",
        "hpmcounter read",
    ] {
        assert!(
            stats.exits.get(&format!("pmu-deleg {access}")) > 0,
            "{access}:\n{table}"
        );
    }
    // Injected by pmu-virt: siselect 0x41 (4 accesses), sireg3-6 at four select values
    // (24), and six VU-mode accesses. Writes of the read-only scountovf and hpmcounter3 are
    // the hart's own illegal-instruction (no exit).
    assert_eq!(stats.exits.get("pmu-deleg injected illegal"), 34, "{table}");
    let exits = stats.exits.virtual_insn_exits();
    assert!(
        exits
            .iter()
            .any(|e| e.action == VirtualInsnAction::EmulatedPmuDeleg && !e.from_vu),
        "{exits:?}"
    );
    assert!(exits
        .iter()
        .filter(|e| e.from_vu)
        .all(|e| e.action == VirtualInsnAction::InjectedIllegal || (e.insn >> 20) == 0xc03));
}

#[test]
fn without_delegation_the_accesses_are_illegal_and_ssccfg_is_not_listed() {
    let (r, out) = run(&config(false));
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    passes(&out);
    assert!(out.contains("mode: deleg off\n"), "{out}");
    assert!(
        out.contains("ok   no Ssccfg: sireg: illegal = 0x2\n"),
        "{out}"
    );
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
    // The hart raised them itself (menvcfg.CDE = 0): nothing reached pmu-virt.
    let table = stats.exits.table();
    assert!(!table.contains("pmu-deleg"), "{table}");
    assert!(
        stats
            .exits
            .virtual_insn_exits()
            .iter()
            .all(|e| e.action != VirtualInsnAction::EmulatedPmuDeleg),
        "{table}"
    );
}

#[test]
fn delegation_without_a_pmu_is_refused() {
    let mut c = config(true);
    c.pmu = false;
    let (r, out) = run(&c);
    let e = r.unwrap_err();
    assert!(matches!(e, vmm::Error::PmuDelegWithoutPmu), "{e}");
    assert!(e.to_string().contains("--pmu-deleg on"), "{e}");
    assert!(out.is_empty(), "{out}");
}

fn temp(name: &str) -> std::path::PathBuf {
    test_support::temp_path("vmm-pmu-deleg", name)
}

#[test]
fn counters_events_and_of_survive_a_snapshot_exactly() {
    let (r, want) = run(&config(true));
    r.unwrap_or_else(|e| panic!("vmm: {e}\n{want}"));
    passes(&want);
    // Inside the guest's "snapshot window": counters 7-9 count, counter 9 has overflowed
    // (OF), cyclecfg has SINH, counter 8 counts with UINH.
    for (i, insns) in [230_000u64, 260_000].into_iter().enumerate() {
        let path = temp(&format!("w{i}"));
        let out = SharedBuf::default();
        let mut c = config(true);
        c.max_insns = Some(insns);
        let mut vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
        let exit = vm.run().unwrap();
        assert!(matches!(exit, RunExit::BudgetExhausted { .. }), "{exit:?}");
        vm.write_snapshot(&path).unwrap();
        let before = out.text();
        assert!(
            before.contains("snapshot window: begin") && !before.contains("snapshot window: end"),
            "snapshot outside the window at {insns}:\n{before}"
        );
        // The snapshot holds the policy and the mapping.
        let snap = vmm::snapshot::read(&path).unwrap();
        let pmu = &snap.state.vcpus[0].pmu;
        assert!(pmu.policy.deleg);
        assert_eq!((pmu.map[3], pmu.map[31], pmu.map[17]), (31, 3, 17));
        let rest = SharedBuf::default();
        let options = RestoreConfig {
            max_insns: Some(BUDGET),
            ..RestoreConfig::default()
        };
        let (exit, _) =
            restore_and_run(&path, &options, Box::new(rest.clone()), ConsoleInput::None)
                .unwrap_or_else(|e| panic!("restore at {insns}: {e}"));
        assert_eq!(exit.exit_code(), 0, "{}", rest.text());
        assert_eq!(
            format!("{before}{}", rest.text()),
            want,
            "restored at {insns}"
        );
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn the_command_line_flag_and_its_statistics() {
    let run = |args: &[&str]| {
        let out = vmm_command()
            .arg("run")
            .arg("--kernel")
            .arg(guest("sbi_pmu_deleg"))
            .args([
                "--memory",
                "32",
                "--max-insns",
                &BUDGET.to_string(),
                "--stats",
                // The guest expects siselect 0x70 to be illegal (outside the counters); with
                // the default `--aia aplic-imsic` it is its IMSIC file's `eidelivery`.
                "--aia",
                "none",
            ])
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let (code, text) = run(&["--pmu-deleg", "on"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("mode: deleg on"), "{text}");
    assert!(
        text.contains("pmu-deleg counter 3 on hart counter 31"),
        "{text}"
    );
    // The default is off.
    let (code, text) = run(&[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("mode: deleg off"), "{text}");
    assert!(!text.contains("pmu-deleg"), "{text}");
    let (code, text) = run(&["--pmu", "off", "--pmu-deleg", "on"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("needs a PMU (--pmu on)"), "{text}");
}

/// Delegated counters with selective LCOFI delivery: the guest's overflow interrupt (of a
/// counter it reaches through `sireg`, backed by another hart counter) exits to the VMM,
/// which finds the OF bit on the backing counter and passes it on through `hvip`; the guest
/// sees the same as with direct delivery.
#[test]
fn delegated_counter_overflow_with_selective_delivery() {
    let mut c = config(true);
    c.lcofi_delivery = pmu_virt::LcofiDelivery::Selective;
    let (r, out) = run(&c);
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    passes(&out);
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
    assert!(
        stats.exits.get("interrupt LCOFI to guest (hvip)") >= 1,
        "{}",
        stats.exits.table()
    );
    assert_eq!(stats.exits.get("interrupt LCOFI spurious"), 0);
}
