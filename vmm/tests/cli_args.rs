//! The `vmm` command line: numeric flags refuse negative and out-of-range values with a
//! message saying what they take (exit status 2, as for other command-line errors), and
//! `vmm machine --timeout` ends a program that never stops with status 124; `--trace` prints
//! the instructions of the range asked for, with the registers each changed.

mod common;

use common::{elf, vmm};

#[test]
fn numeric_flags_say_what_they_take() {
    let prog = std::env::temp_dir().join(format!("vmm-cli-args-{}.elf", std::process::id()));
    std::fs::write(&prog, elf(&[0x0000_006f])).unwrap(); // j .
    let prog = prog.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["machine", "--memory", "-1", prog],
            "--memory takes a size in MiB from 1 to 65536, got -1",
        ),
        (
            &["machine", "--memory", "0", prog],
            "--memory takes a size in MiB from 1 to 65536, got 0",
        ),
        (
            &["machine", "--max-insns", "-5", prog],
            "--max-insns takes a number of instructions from 0 to",
        ),
        (
            &["machine", "--timeout", "-1", prog],
            "--timeout takes a number of seconds more than 0",
        ),
        (
            &["run", "--memory", "-1"],
            "--memory takes a size in MiB from 1 to 65536, got -1",
        ),
        (
            &["run", "--timeout", "-1"],
            "--timeout takes a number of seconds more than 0 and at most 1e9 (fractions \
             allowed), got -1",
        ),
        (
            &["run", "--max-insns", "-5"],
            "--max-insns takes a number of instructions from 0 to 18446744073709551615, got -5",
        ),
        (
            &["run", "--vcpus", "-2"],
            "--vcpus takes a number of vCPUs from 1 to 64, got -2",
        ),
        (
            &["run", "--vcpus", "65"],
            "--vcpus takes a number of vCPUs from 1 to 64, got 65",
        ),
        (
            &["run", "--pcpus", "-1"],
            "--pcpus takes a number of hart instances from 1 to 64, got -1",
        ),
        (
            &["run", "--slice-insns", "-1"],
            "--slice-insns takes a number of instructions from 1 to",
        ),
        (
            &["run", "--slice-insns", "0"],
            "--slice-insns takes a number of instructions from 1 to",
        ),
        (
            &["run", "--pmu-counters", "-1"],
            "--pmu-counters takes a number of hpm counters from 0 to 29, got -1",
        ),
        (
            &["run", "--pmu-counters", "30"],
            "--pmu-counters takes a number of hpm counters from 0 to 29, got 30",
        ),
        (
            &["restore", "--snapshot", "x", "--max-insns", "-1"],
            "--max-insns takes a number of instructions from 0 to",
        ),
        (
            &["restore", "--snapshot", "x", "--timeout", "-0.5"],
            "--timeout takes a number of seconds more than 0",
        ),
        (
            &["restore", "--snapshot", "x", "--pcpus", "-3"],
            "--pcpus takes a number of hart instances from 1 to 64, got -3",
        ),
        (
            &["restore", "--snapshot", "x", "--slice-insns", "-3"],
            "--slice-insns takes a number of instructions from 1 to",
        ),
    ];
    for (args, message) in cases {
        let (code, out, err) = vmm(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_file(prog);
}

#[test]
fn machine_timeout_ends_a_spinning_program() {
    let prog = std::env::temp_dir().join(format!("vmm-cli-spin-{}.elf", std::process::id()));
    std::fs::write(&prog, elf(&[0x0000_006f])).unwrap(); // j .
    let prog = prog.to_str().unwrap();
    // The budget bounds the test if the time limit fails (it then ends with 124 too, but
    // with another message).
    let (code, _, err) = vmm(&[
        "machine",
        "--timeout",
        "0.2",
        "--max-insns",
        "50000000000",
        prog,
    ]);
    let _ = std::fs::remove_file(prog);
    assert_eq!(code, 124, "{err}");
    assert!(
        err.contains("wall-clock timeout of 0.2 s reached after"),
        "{err}"
    );
}

#[test]
fn trace_prints_the_range_asked_for_with_the_registers_changed() {
    let prog = std::env::temp_dir().join(format!("vmm-cli-trace-{}.elf", std::process::id()));
    // addi a0, zero, 5; addi a0, a0, 1 (x4, a loop body); lb a1, 0(zero) (an access fault:
    // address 0 is nothing); j . (the trap vector is 0: the fetch faults, forever).
    let code = [
        0x0050_0513, // addi a0, zero, 5
        0x0015_0513, // addi a0, a0, 1
        0x0015_0513, // addi a0, a0, 1
        0x0015_0513, // addi a0, a0, 1
        0x0015_0513, // addi a0, a0, 1
        0x0000_0583, // lb a1, 0(zero)
    ];
    std::fs::write(&prog, elf(&code)).unwrap();
    let prog = prog.to_str().unwrap();
    let traced = |range: &[&str]| {
        let mut args = vec!["machine", "--max-insns", "20"];
        args.extend_from_slice(range);
        args.push(prog);
        let (_, _, err) = vmm(&args);
        err.lines()
            .filter(|l| l.contains("] #"))
            .map(|l| l[l.find('#').unwrap()..].to_string())
            .collect::<Vec<_>>()
    };
    // Instructions 2 to 3: the numbers, the mode, the pc, the bits and the new a0 (x10).
    let lines = traced(&["--trace-insns", "2-3"]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("#2 M pc=0000000080000004 00150513 ")
            && lines[0].ends_with(" x10=0x6"),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("#3 M pc=0000000080000008 ") && lines[1].ends_with(" x10=0x7"));
    // By pc: the load, which raises a load access fault (its address is no memory).
    let lines = traced(&["--trace-pcs", "0x80000014-0x80000017"]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("#6 M pc=0000000080000014 00000583 "),
        "{lines:?}"
    );
    assert!(lines[0].ends_with(" -> exception 5 tval 0x0"), "{lines:?}");
    // An empty or malformed range is refused, naming it.
    let (code, _, err) = vmm(&["machine", "--trace-insns", "5-4", prog]);
    assert_eq!(code, 2);
    assert!(err.contains("5-4: the range is empty"), "{err}");
    let (code, _, err) = vmm(&["machine", "--trace-pcs", "0x80000000", prog]);
    assert_eq!(code, 2);
    assert!(err.contains("expected A-B"), "{err}");
    let _ = std::fs::remove_file(prog);
}
