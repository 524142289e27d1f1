//! Differential tests against QEMU (`qemu-system-riscv64 -M virt -bios none`; QEMU 10.0,
//! Debian package `qemu-system-misc` from bookworm-backports, which `.ci/run` installs):
//! the same guest ELF must print exactly the same console output on `vmm` and under QEMU,
//! and must pass under QEMU too (which validates the guests against an independent
//! implementation).
//!
//! Every guest is compared except:
//! - `strict`: checks where QEMU departs from the specifications (QEMU 10.0: misaligned
//!   SC/AMO exception causes, mepc[0]/sepc[0], medeleg[11], interrupt priority, the mtval
//!   of MRET executed in S-mode, which QEMU 10.0 fills with the bits of another
//!   instruction) or where the spec allows two behaviours and vmm's choice is checked
//!   (EBREAK's mtval, non-executable device regions); it fails under QEMU by design. Some
//!   of its checks (MPRV cleared by MRET/SRET, the AMO access-fault cause, CSRRS with a
//!   zero register) were QEMU 7.2 departures that QEMU 10.0 no longer has. See the comment
//!   at the top of `guests/strict.c`.
//! - `vm_strict`: `vm` plus the translation checks where QEMU departs from the spec
//!   (QEMU 10.0: access faults during the page walk; its other checks were QEMU 7.2
//!   departures); see `guests/vm_strict.c`.
//! - `h_strict`: H-extension checks where QEMU departs from the spec or vmm makes a choice
//!   (QEMU 10.0: among others, `hip.VSTIP` follows `vstimecmp` while `henvcfg.STCE` = 0,
//!   a pending MTIP shows in `hvip` bit 7, `hideleg` bits 14 and 15 are writable); see
//!   `guests/h_strict.c`.
//! - `counters`: prints minstret (QEMU's counters follow the host clock).
//! - `spin`: never ends (used for the instruction-budget test).
//! - `wfi_forever`: waits for an interrupt that can never come (vmm reports an error; QEMU
//!   would wait forever).
//! - `exit42`: compared separately below (it exits with a failure code on purpose).
//! - `csrx`: Smstateen, Smcsrind, Sstc and Smaia at M/S level. QEMU 7.2 had no Smstateen
//!   or Smcsrind; QEMU 10.0 has them (and Smaia) only as CPU properties that its default
//!   `rv64` leaves off (the first `mstateen0` access is illegal), and with them on its
//!   implementation choices differ from vmm's (writable `mstateen0`/`sstateen0` bits,
//!   `mvien`, the `iprio` array, `stopi`/`mtopi` priorities), so the guest is not compared.
//! - `hx`: the H-level halves of the same extensions (`hstateen`, `vsiselect`, `vstimecmp`,
//!   `hvictl`, `vstopi`); excluded for the same reasons (with the properties on, QEMU
//!   10.0 also differs in `hvictl`'s writable bits and `vstopi`).
//!
//! The `imsic` guest (the IMSIC's interrupt files, MSIs written to their pages, `*topei`,
//! `hgeip`, VGEIN) runs on `vmm machine --aia imsic` and on QEMU's `virt` board with
//! `aia=aplic-imsic,aia-guests=7` and a CPU with Smaia, Ssaia and Smstateen on
//! (`qemu::IMSIC_MACHINE`, `qemu::IMSIC_CPU`); it prints only results the AIA fixes.
//!
//! QEMU CPUs (see `qemu_cpu`): `decode` runs with `-cpu rv64` minus every extension QEMU
//! 10.0 enables by default that vmm's hart lacks (H, Zba/Zbb/Zbc/Zbs, Zfa, Zicbom/Zicbop/
//! Zicboz, Zawrs, Zihintntl, Zihintpause; also Sstc and Sscofpmf; see `qemu::RV64GC_CPU`),
//! since it executes every encoding of several opcode spaces. The `h_*` guests run with
//! `-cpu rv64,sstc=false,sscofpmf=false` (`qemu::H_CPU`): with Sstc, QEMU 10.0 keeps
//! `hip.VSTIP` pending from `vstimecmp` (0 at reset) although `menvcfg.STCE` and
//! `henvcfg.STCE` are 0, where the privileged spec says `hip.VSTIP` then "reverts to its
//! defined behavior as if this extension is not implemented" (`menvcfg` and `henvcfg`,
//! STCE); `h_traps` then hangs on a VS timer interrupt taken in HS that clearing
//! `hvip.VSTIP` cannot end. The other guests run on QEMU's default CPU.
//!
//! Guests print only results that the specifications fix: no timer values, counters or
//! implementation IDs. Lines starting with `info ` report choices the specifications leave
//! to the implementation and are left out of the comparison. Where QEMU 10.0 departs from
//! the specifications in a check of a compared guest, the check lives in a strict guest:
//! `traps` leaves MRET-in-S's mtval to `strict`; `h_csr` leaves `hideleg` bits 15:0 beyond
//! the spec's (vmm's choice) to `h_strict`, and the H guests set `mtimecmp` to its maximum
//! in `h_init` (QEMU resets it to 0, and a pending MTIP shows in QEMU's `hvip` bit 7).

use std::time::Duration;

use vmm::machine::MachineExit;
use vmm_tests::{
    comparable, first_difference, guest, qemu, run_vmm, run_vmm_imsic, BENCH_BUDGET, BUDGET,
};

/// Guests whose console output must be identical on vmm and QEMU.
const COMPARED: &[&str] = &[
    "machine_clock",
    "hello",
    "pmp",
    "pmp_h",
    "trigger",
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
    "plic",
    "bench",
    "bench_fp",
    "h_csr",
    "h_vinst",
    "h_gstage",
    "h_hlv",
    "h_traps",
    "imsic",
];

/// The QEMU CPU for a guest: `decode` executes every encoding of several opcode spaces, so
/// it needs a QEMU hart without the extensions vmm's hart does not have; the H guests run
/// without Sstc and Sscofpmf (see `qemu::H_CPU`); the others on QEMU's default CPU.
fn qemu_cpu(name: &str) -> Option<&'static str> {
    if name == "imsic" {
        Some(qemu::IMSIC_CPU)
    } else if name == "decode" {
        Some(qemu::RV64GC_CPU)
    } else if name.starts_with("h_") {
        Some(qemu::H_CPU)
    } else {
        None
    }
}

/// Guests not compared, with the reason (kept in sync with the list above by a test).
const NOT_COMPARED: &[(&str, &str)] = &[
    (
        "trigger_strict",
        "Sdtrig choices of vmm and rules QEMU 10.0 departs from: tinfo.version 1 (QEMU: 0), tdata1 = 0 disables the trigger as type 15 (QEMU 10.0 leaves the trigger armed, against the spec), match modes other than equal (QEMU keeps match 0 only, a legal WARL choice), NAPOT maskmax6 = 63, 4 triggers (QEMU: 2), no action-0 matches in M with mstatus.MIE = 0, in HS or VS with breakpoints delegated and SIE = 0 (debug spec 5.4; QEMU fires), hit0, a failing SC matching a store trigger; vmm only",
    ),
    (
        "pmp_strict",
        "PMP choices and rules QEMU 10.0 departs from: pmpaddr bits 63:54, R=0/W=1, pmpaddr16-63 and pmpcfg4-14 read-only zero (QEMU: illegal instruction), mstatus.GVA on PMP access faults of HLV and of MPRV with MPV = 1 (QEMU: 0); vmm only",
    ),
    (
        "ctr_m",
        "CTR: compared with QEMU through golden files (tests/ctr.rs)",
    ),
    (
        "ctr_modes",
        "CTR: compared with QEMU through golden files (tests/ctr.rs)",
    ),
    (
        "ctr_h",
        "CTR: compared with QEMU through golden files (tests/ctr.rs)",
    ),
    (
        "pmu_m",
        "PMU: compared with QEMU (-icount shift=0) through golden files (tests/pmu.rs)",
    ),
    (
        "pmu_deleg",
        "PMU: compared with QEMU (-icount shift=0) through golden files (tests/pmu.rs)",
    ),
    (
        "pmu_h",
        "PMU: compared with QEMU (-icount shift=0) through golden files (tests/pmu.rs)",
    ),
    (
        "pmu_strict",
        "PMU rules QEMU 10.0 cannot arbitrate (exact event counts, precise LCOFI); vmm only",
    ),
    (
        "pmu_sample",
        "Sspesa/Ssplcofi (draft, no QEMU implementation): shpmspc, CNTRID, precise LCOFI; vmm only (tests/pmu.rs)",
    ),
    (
        "pmu_ctr",
        "Smctr 6.5 LCOFI freeze with a precise counter overflow and Sspesa's shpmspc (draft); vmm only (tests/pmu.rs)",
    ),
    (
        "pmu_pdis",
        "Smpdis/Sspdis (draft, no QEMU implementation): counting, sample records, filters, CSRs; vmm only (tests/pmu.rs)",
    ),
    (
        "bench_ctr_off",
        "CTR benchmark workload (scripts/bench-ctr.sh); checked in guests.rs",
    ),
    (
        "bench_ctr_on",
        "CTR benchmark workload with recording on; checked in guests.rs",
    ),
    (
        "bench_pmu",
        "bench with every hpm counter counting: prints the hart's model counts; checked in \
         guests.rs",
    ),
    (
        "bench_sample",
        "bench under a cycle-sampling profiler: prints the sample count, which follows the \
         cost model's cycles (QEMU's follow the host clock); checked in guests.rs",
    ),
    (
        "ctr_strict",
        "CTR cycle counting, which QEMU 10.0 does not implement",
    ),
    (
        "strict",
        "checks where QEMU departs from the specs; fails under QEMU 10.0 by design",
    ),
    (
        "vm_strict",
        "vm plus page-table checks where QEMU 10.0 departs from the spec",
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
        "H-extension checks where QEMU 10.0 departs from the spec; fails under QEMU by design",
    ),
    (
        "csrx",
        "Smstateen/Smcsrind/Sstc/Smaia; off in QEMU 10.0's default CPU, other choices when on",
    ),
    (
        "hx",
        "H-level Smstateen/Sscsrind/Sstc/Ssaia; off in QEMU 10.0's default CPU, other choices when on",
    ),
    (
        "sbi_ctr_migrate",
        "a VS-mode kernel for `vmm run` migration (tests/migrate.rs)",
    ),
    (
        "sbi_dirty",
        "a VS-mode kernel for `vmm run` live migration (tests/migrate.rs, scripts/bench-migrate.sh)",
    ),
    (
        "sdk_ctr_hello",
        "the guest SDK's example, a VS-mode kernel for `vmm run` (tests/sdk.rs)",
    ),
    (
        "sbi_bench_off",
        "the VS-mode observation benchmark (`vmm run`, scripts/bench-vs.sh; tests/run.rs)",
    ),
    (
        "sbi_bench_ctr",
        "the VS-mode observation benchmark (`vmm run`, scripts/bench-vs.sh; tests/run.rs)",
    ),
    (
        "sbi_bench_pmu",
        "the VS-mode observation benchmark (`vmm run`, scripts/bench-vs.sh; tests/run.rs)",
    ),
    (
        "sbi_console",
        "a `vmm run` guest kernel (VS-mode, SBI calls); QEMU would need an SBI firmware",
    ),
    (
        "sbi_ctr",
        "a `vmm run` guest kernel (CTR virtualized by the VMM's ctr-virt)",
    ),
    (
        "sbi_ctr_demo",
        "the built-in `vmm run` CTR self-test guest (tests/demo.rs)",
    ),
    (
        "sbi_ctr_snap",
        "a `vmm run` guest kernel snapshotted mid-recording (tests/snapshot.rs)",
    ),
    (
        "sbi_ctr_pause",
        "a two-vCPU `vmm run` guest kernel that waits for console input, for the control socket (tests/api.rs)",
    ),
    (
        "sbi_ctr_smp",
        "a two-vCPU `vmm run` guest kernel for --pcpus and multi-vCPU snapshots (tests/smp.rs)",
    ),
    (
        "sbi_ctr_spin",
        "a `vmm run` guest kernel that never ends (control-socket tests, tests/api.rs)",
    ),
    (
        "sbi_inject",
        "a `vmm run` guest kernel taking injected interrupts and exceptions (tests/api.rs)",
    ),
    (
        "sbi_clock",
        "a `vmm run` guest kernel waiting on its timer, for the clock modes (`--clock`, tests/clock.rs)",
    ),
    (
        "sbi_sstc",
        "a `vmm run` guest kernel using the VMM's Sstc offer, on and off (`--sstc`, tests/run.rs)",
    ),
    (
        "sbi_aia",
        "a two-vCPU `vmm run` guest kernel using its APLIC and IMSIC (`--aia aplic-imsic`, tests/run.rs)",
    ),
    (
        "sbi_tlb_stale",
        "a `vmm run` guest kernel using a translation cached before a PTE change made without SFENCE.VMA (what the hart may do is implementation-defined; tests/run.rs)",
    ),
    (
        "sbi_aia_input",
        "a `vmm run` guest kernel waiting in WFI for console input through its APLIC and IMSIC only (tests/run.rs)",
    ),
    (
        "sbi_pmu",
        "a `vmm run` guest kernel (the SBI PMU extension of the VMM's pmu-virt, tests/sbi_pmu.rs)",
    ),
    (
        "sbi_pmu_deleg",
        "a `vmm run` guest kernel (counter delegation emulated by the VMM's pmu-virt, tests/pmu_deleg.rs)",
    ),
    (
        "sbi_pmu_mux",
        "a `vmm run` guest kernel (multiplexing over the counters of --pmu-counters 2, tests/sbi_pmu.rs)",
    ),
    (
        "sbi_pmu_smp",
        "a two-vCPU `vmm run` guest kernel (firmware counters per vCPU, tests/sbi_pmu.rs)",
    ),
    (
        "sbi_pmu_sample",
        "a `vmm run` guest kernel (sampling of the VMM's pmu-virt: Sspesa, Sspdis; \
         tests/sbi_sample.rs)",
    ),
    (
        "sbi_pmu_sample_smp",
        "a two-vCPU `vmm run` guest kernel (pmu-virt sampling per vCPU, tests/sbi_sample.rs)",
    ),
    (
        "sbi_vinst",
        "a `vmm run` guest kernel (VS-mode, SBI calls, VMM exit log)",
    ),
];

const QEMU_TIMEOUT: Duration = Duration::from_secs(30);

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
        let budget = if name.starts_with("bench") {
            BENCH_BUDGET
        } else {
            BUDGET
        };
        // The `imsic` guest runs on the board with IMSICs on both sides.
        let imsic = *name == "imsic";
        let board: &[&str] = if imsic { &qemu::IMSIC_MACHINE } else { &[] };
        let q = qemu::run_with_args(&elf, QEMU_TIMEOUT, qemu_cpu(name), board)
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
        let v = match if imsic {
            run_vmm_imsic(&elf, budget)
        } else {
            run_vmm(&elf, budget)
        } {
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
