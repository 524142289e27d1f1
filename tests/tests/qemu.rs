//! Differential tests against QEMU (`qemu-system-riscv64 -M virt -bios none`, Debian
//! package `qemu-system-misc`): the same guest ELF must print exactly the same console
//! output on `vmm` and under QEMU, and must pass under QEMU too (which validates the guests
//! against an independent implementation).
//!
//! Every guest is compared except:
//! - `strict`: checks where QEMU 7.2 departs from the specifications (misaligned SC/AMO
//!   exception causes, MPRV not cleared by MRET/SRET, interrupt priority) or where the
//!   spec allows two behaviours and vmm's choice is checked (EBREAK's mtval); it fails
//!   under QEMU 7.2 by design. See the comment at the top of `guests/strict.c`.
//! - `vm_strict`: `vm` plus the translation checks where QEMU 7.2 departs from the spec
//!   (mepc of a fetch fault on the second half of an instruction, the cause of an AMO page
//!   fault, access faults during the page walk); see `guests/vm_strict.c`.
//! - `counters`: prints minstret (QEMU's counters follow the host clock).
//! - `spin`: never ends (used for the instruction-budget test).
//! - `wfi_forever`: waits for an interrupt that can never come (vmm reports an error; QEMU
//!   would wait forever).
//! - `exit42`: compared separately below (it exits with a failure code on purpose).
//! - `csrx`: Smstateen, Smcsrind, Sstc and Smaia at M/S level; QEMU 7.2 has no Smstateen
//!   or Smcsrind (its first `mstateen0` access is illegal) and AIA only as the experimental
//!   `x-smaia`/`x-ssaia` properties.
//! - `hx`: the H-level halves of the same extensions (`hstateen`, `vsiselect`, `vstimecmp`,
//!   `hvictl`, `vstopi`); excluded for the same reasons.
//!
//! `decode` runs on QEMU with `-cpu rv64` minus the H, Zba/Zbb/Zbc/Zbs and Sstc extensions
//! (see `qemu::RV64GC_CPU`), since it executes every encoding of several opcode spaces; the
//! others run on QEMU's default CPU.
//!
//! Guests print only results that the specifications fix: no timer values, counters or
//! implementation IDs. Lines starting with `info ` report choices the specifications leave
//! to the implementation and are left out of the comparison.

use std::time::Duration;

use vmm::machine::MachineExit;
use vmm_tests::{first_difference, guest, qemu, run_vmm, BENCH_BUDGET, BUDGET};

/// Guests whose console output must be identical on vmm and QEMU.
const COMPARED: &[&str] = &[
    "hello",
    "traps",
    "vm",
    "interrupts",
    "fp",
    "fprand",
    "rvc",
    "mext",
    "amo",
    "isa",
    "decode",
    "devices",
    "bench",
    "h_csr",
    "h_vinst",
    "h_gstage",
    "h_hlv",
    "h_traps",
];

/// The QEMU CPU for a guest: `decode` executes every encoding of several opcode spaces, so
/// it needs a QEMU hart without the extensions vmm's hart does not have.
fn qemu_cpu(name: &str) -> Option<&'static str> {
    (name == "decode").then_some(qemu::RV64GC_CPU)
}

/// Guests not compared, with the reason (kept in sync with the list above by a test).
const NOT_COMPARED: &[(&str, &str)] = &[
    (
        "strict",
        "checks where QEMU 7.2 departs from the specs; fails under QEMU by design",
    ),
    (
        "vm_strict",
        "vm plus page-table checks where QEMU 7.2 departs from the spec",
    ),
    (
        "counters",
        "prints minstret, which QEMU derives from the host clock",
    ),
    ("spin", "never ends"),
    (
        "wfi_forever",
        "waits for an interrupt that never comes (QEMU would hang)",
    ),
    (
        "exit42",
        "exits with code 42 on purpose; checked by qemu_same_exit_code",
    ),
    (
        "h_strict",
        "H-extension checks where QEMU 7.2 departs from the spec; fails under QEMU by design",
    ),
    (
        "csrx",
        "Smstateen/Smcsrind/Sstc/Smaia; QEMU 7.2 lacks Smstateen and Smcsrind",
    ),
    (
        "hx",
        "H-level Smstateen/Sscsrind/Sstc/Ssaia; QEMU 7.2 lacks Smstateen, Smcsrind and hvictl/vstopi",
    ),
    (
        "sbi_console",
        "a `vmm run` guest kernel (VS-mode, SBI calls); QEMU would need an SBI firmware",
    ),
    (
        "sbi_vinst",
        "a `vmm run` guest kernel (VS-mode, SBI calls, VMM exit log)",
    ),
];

const QEMU_TIMEOUT: Duration = Duration::from_secs(30);

/// The output without `info ` lines: guests print implementation-specific choices the
/// specifications leave open (for example which `hedeleg` bits are writable) as `info`
/// lines, which are for reading, not for comparing.
fn comparable(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("info "))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn require_qemu() {
    if let Err(e) = qemu::check_available() {
        panic!("{e}");
    }
}

#[test]
fn qemu_same_output() {
    require_qemu();
    let mut problems = Vec::new();
    for name in COMPARED {
        let elf = guest(name);
        let budget = if *name == "bench" {
            BENCH_BUDGET
        } else {
            BUDGET
        };
        let q = qemu::run_with_cpu(&elf, QEMU_TIMEOUT, qemu_cpu(name))
            .unwrap_or_else(|e| panic!("cannot start QEMU: {e}"));
        let q_text = String::from_utf8_lossy(&q.output).into_owned();
        if q.timed_out || q.status != Some(0) {
            problems.push(format!(
                "{name}: under QEMU: status {:?}{} (the guest itself fails)\nstderr: {}\n{q_text}",
                q.status,
                if q.timed_out {
                    ", killed after the timeout"
                } else {
                    ""
                },
                q.stderr
            ));
            continue;
        }
        let v = match run_vmm(&elf, budget) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("{name}: vmm could not run it: {e}"));
                continue;
            }
        };
        if v.exit != (MachineExit::Finished { code: 0 }) {
            problems.push(format!("{name}: on vmm: {:?}", v.exit));
        }
        let (q_cmp, v_cmp) = (comparable(&q_text), comparable(&v.text()));
        if let Some(diff) = first_difference(&q_cmp, &v_cmp, "qemu", "vmm") {
            problems.push(format!("{name}: {diff}"));
        }
        eprintln!(
            "{name}: {} bytes of output, same on QEMU and vmm: {}",
            q.output.len(),
            q_cmp == v_cmp
        );
    }
    assert!(
        problems.is_empty(),
        "{} guest(s) differ:\n\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn qemu_same_exit_code() {
    require_qemu();
    let elf = guest("exit42");
    let q = qemu::run(&elf, QEMU_TIMEOUT).expect("start QEMU");
    let v = run_vmm(&elf, BUDGET).expect("run on vmm");
    assert_eq!(q.status, Some(42), "QEMU: {q:?}");
    assert_eq!(v.exit, MachineExit::Finished { code: 42 });
    assert_eq!(q.output, v.output);
}

/// Every guest is either compared or listed with a reason.
#[test]
fn every_guest_is_accounted_for() {
    for (name, _) in vmm_tests::guests::GUESTS {
        let compared = COMPARED.contains(name);
        let excluded = NOT_COMPARED.iter().any(|(n, _)| n == name);
        assert!(
            compared ^ excluded,
            "guest {name}: add it to COMPARED or NOT_COMPARED in {}",
            file!()
        );
    }
}
