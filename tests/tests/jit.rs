//! Block translation (`--jit`, `vcpu`'s `jit` module) is invisible to guests: every guest
//! prints the same console output, ends the same way and executes the same number of
//! instructions with translation on and off. (The translator's own differential tests, on
//! random programs and budgets, are in `vcpu/tests/jit.rs`.)

use vmm::machine::{Aia, MachineConfig};
use vmm::run::{run_kernel, ConsoleInput, RunConfig};
use vmm_tests::{guests::GUESTS, run_vmm_config, SharedBuf, BENCH_BUDGET, BUDGET};

/// Guests left out, with the reason.
const LEFT_OUT: &[(&str, &str)] = &[
    (
        "spin",
        "never ends (tests/guests.rs runs it into its budget)",
    ),
    ("wfi_forever", "an error by design (tests/guests.rs)"),
];

fn budget(name: &str) -> u64 {
    if name.starts_with("bench") {
        BENCH_BUDGET
    } else {
        BUDGET
    }
}

/// Bare-metal guests (`vmm machine`).
#[test]
fn machine_guests_are_the_same_with_and_without_translation() {
    let (mut checked, mut translated) = (0, 0);
    for &(name, path) in GUESTS {
        if name.starts_with("sbi_") || LEFT_OUT.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let path = std::path::Path::new(path);
        // The `imsic` guest needs the board with an IMSIC.
        let run = |jit: bool| {
            let config = MachineConfig {
                max_insns: Some(budget(name)),
                jit,
                aia: if name == "imsic" {
                    Aia::Imsic
                } else {
                    Aia::None
                },
                ..MachineConfig::default()
            };
            run_vmm_config(path, config).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        let (on, off) = (run(true), run(false));
        assert_eq!(on.text(), off.text(), "{name}: console output differs");
        assert_eq!(on.exit, off.exit, "{name}: the run ends differently");
        assert_eq!(
            on.stats.instret, off.stats.instret,
            "{name}: instructions retired differ"
        );
        assert_eq!(
            off.stats.translated_blocks, 0,
            "{name}: translated with --jit off"
        );
        translated += on.stats.translated_blocks;
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} guests checked");
    assert!(translated > 1000, "only {translated} blocks translated");
}

/// Guest kernels on one vCPU (`vmm run`, VS-mode) with the default options.
#[test]
fn kernel_guests_are_the_same_with_and_without_translation() {
    let (mut checked, mut translated) = (0, 0);
    for &(name, path) in GUESTS {
        if !name.starts_with("sbi_") || name.contains("smp") {
            continue;
        }
        let run = |jit: bool| {
            let mut c = RunConfig::new(path);
            c.memory_mib = 64;
            c.max_insns = Some(BUDGET);
            c.jit = jit;
            let out = SharedBuf::default();
            let r = run_kernel(&c, Box::new(out.clone()), ConsoleInput::Bytes(Vec::new()));
            let (exit, stats) = r.unwrap_or_else(|e| panic!("{name}: {e}"));
            (
                exit,
                stats.instructions,
                stats.exits.table(),
                out.text(),
                stats.translated_blocks,
            )
        };
        let (on, off) = (run(true), run(false));
        assert_eq!(on.3, off.3, "{name}: console output differs");
        assert_eq!(on.0, off.0, "{name}: the run ends differently");
        assert_eq!(on.1, off.1, "{name}: instructions executed differ");
        assert_eq!(on.2, off.2, "{name}: exits differ");
        assert_eq!(off.4, 0, "{name}: translated with --jit off");
        translated += on.4;
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} kernel guests checked");
    // About 1 000 blocks (1 030 since blocks go on past forward branches: side exits).
    assert!(translated > 600, "only {translated} blocks translated");
}
