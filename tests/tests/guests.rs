//! Each guest program on `vmm`: the guest checks its own expectations, prints one line per
//! check and exits with the number of failed checks; these tests assert exit code 0, the
//! `<guest>: PASS` line and a few key lines.

use vmm::machine::MachineExit;
use vmm_tests::{check_guest, guest, run_guest, run_vmm_jit, BENCH_BUDGET, BUDGET};

/// Asserts that `output` has a line equal to `line`.
fn assert_line(output: &str, line: &str) {
    assert!(
        output.lines().any(|l| l == line),
        "missing line {line:?} in:\n{output}"
    );
}

#[test]
fn hello() {
    let run = run_guest("hello", BUDGET);
    assert_eq!(run.exit, MachineExit::Finished { code: 0 });
    assert_eq!(run.text(), "hello from the guest\n");
    assert!(
        run.stats.instret > 0 && run.stats.instret < 10_000,
        "{:?}",
        run.stats
    );
}

#[test]
fn traps() {
    let run = check_guest("traps", BUDGET);
    let out = run.text();
    for line in [
        "-- illegal all-zero halfword",
        "ok     mtval = 0x00000000fe000033",
        "-- ecall from U",
        "ok     mcause = 0x0000000000000008",
        "-- delegated ecall from U",
        "ok     scause = 0x0000000000000008",
        "-- wfi in S with TW=1",
        "ok     mtval = 0x0000000010500073",
        "-- csrw mvendorid in M",
        "ok     mtval = 0x00000000f1101073",
        "-- load past RAM",
        "ok     mtval = 0x0000000088000000",
    ] {
        assert_line(&out, line);
    }
}

#[test]
fn strict() {
    let run = check_guest("strict", BUDGET);
    let out = run.text();
    assert_line(&out, "-- misaligned amoadd.w");
    assert_line(&out, "ok     mcause = 0x0000000000000006");
    assert_line(&out, "ok     3rd = 0x0000000000000009");
}

#[test]
fn vm() {
    let run = check_guest("vm", BUDGET);
    let out = run.text();
    for line in [
        "== Sv39",
        "== Sv48",
        "== Sv57",
        "-- Sv48 load via terapage",
        "-- Sv57 load via bit-48 region",
        "-- S load misaligned megapage",
        "ok     mcause = 0x000000000000000d",
        "-- S changes a PTE, sfence.vma, reads again",
        "ok     before:after = 0x6666666677777777",
    ] {
        assert_line(&out, line);
    }
}

#[test]
fn pmp() {
    let run = check_guest("pmp", BUDGET);
    let out = run.text();
    for line in [
        "U fetch TOR R:",
        "S walk via denied L1 load:",
        "ok     mcause = 0x0000000000000005",
        "MPRV MPP=U lw NA4:",
        "ok   pmpaddr7 under locked TOR = ",
    ] {
        if line.ends_with("= ") {
            assert!(
                out.lines().any(|l| l.starts_with(line)),
                "{line:?} in:\n{out}"
            );
        } else {
            assert_line(&out, line);
        }
    }
}

#[test]
fn pmp_h() {
    let run = check_guest("pmp_h", BUDGET);
    let out = run.text();
    for line in [
        "VS ld, G-stage table denied:",
        "VS ld, VS-stage table denied:",
        "ok     mcause = 0x0000000000000005",
        "ok     mstatus.GVA = 0x0000000000000001",
    ] {
        assert_line(&out, line);
    }
}

#[test]
fn trigger() {
    let run = check_guest("trigger", BUDGET);
    let out = run.text();
    for line in [
        "VU trigger, VU fetch:",
        "VS fetch from a hole:",
        "ok     mcause = 0x0000000000000003",
        "VU sb, two triggers:",
        "ok     scause = 0x0000000000000003",
        "trigger: PASS",
    ] {
        assert_line(&out, line);
    }
}

#[test]
fn trigger_strict() {
    let run = check_guest("trigger_strict", BUDGET);
    let out = run.text();
    for line in [
        "ok   tdata1 = 0 = 0xf000000000000000",
        "ok   NAPOT tdata2 all ones = 0xbfffffffffffffff",
        "M ld with MIE = 0:",
        "ok     traps to VS = 0x0000000000000001",
        "trigger_strict: PASS",
    ] {
        assert_line(&out, line);
    }
}

#[test]
fn pmp_strict() {
    let run = check_guest("pmp_strict", BUDGET);
    let out = run.text();
    assert_line(&out, "ok   pmp9cfg R=0 W=1 = 0x0000000000000014");
    assert_line(&out, "ok   pmpaddr63 = 0x0000000000000000");
    assert_line(
        &out,
        "ok   HS hlv.d denied: mstatus.GVA = 0x0000000000000001",
    );
}

#[test]
fn vm_strict() {
    let run = check_guest("vm_strict", BUDGET);
    let out = run.text();
    assert_line(
        &out,
        "-- S fetch of a 32-bit insn whose 2nd half is unmapped",
    );
    assert_line(&out, "ok     mepc = 0x000000004000fffe");
    assert_line(&out, "-- S load, level-1 table past the end of RAM");
    assert_line(&out, "ok     mcause = 0x0000000000000005");
}

#[test]
fn isa() {
    check_guest("isa", BUDGET);
}

#[test]
fn devices() {
    let run = check_guest("devices", BUDGET);
    assert!(run
        .text()
        .starts_with("devices: start (after the UART set-up)\n"));
}

/// Every encoding of several opcode spaces; the hashes are compared with QEMU's.
#[test]
fn decode() {
    let run = check_guest("decode", BUDGET);
    let out = run.text();
    assert!(
        out.lines()
            .any(|l| l.starts_with("OP-FP: 4096 encodings, ")),
        "{out}"
    );
}

/// minstret counts retired instructions; its last value, printed by the guest, agrees with
/// the machine's own count (which also covers the printing after it).
#[test]
fn counters() {
    let run = check_guest("counters", BUDGET);
    let out = run.text();
    let printed: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("minstret="))
        .unwrap_or_else(|| panic!("no minstret line in:\n{out}"))
        .parse()
        .expect("minstret value");
    let total = run.stats.instret;
    assert!(
        printed < total && total - printed < 3_000,
        "guest's minstret {printed} vs the machine's count {total}"
    );
}

#[test]
fn interrupts() {
    let run = check_guest("interrupts", BUDGET);
    let out = run.text();
    assert_line(&out, "-- machine timer interrupt, vectored mtvec");
    assert_line(&out, "ok     vector slot = 0x0000000000000007");
    assert_line(&out, "ok     scause = 0x8000000000000005");
    assert_line(&out, "-- wfi wakes on a pending timer with MIE=0");
}

#[test]
fn fp() {
    let run = check_guest("fp", BUDGET);
    let out = run.text();
    assert_line(&out, "fadd.s unboxed+unboxed");
    assert_line(&out, "ok     result = 0xffffffff7fc00000");
    assert_line(&out, "fmsub.d 0.1*10-1 (fused)");
    assert_line(&out, "ok     result = 0x3c90000000000000");
}

/// Hashes of every FP instruction's results and flags on random operands; the values are
/// compared with QEMU's in `qemu.rs`, so here the guest only has to run to the end.
#[test]
fn fprand() {
    let run = check_guest("fprand", BUDGET);
    let out = run.text();
    assert!(
        out.lines().any(|l| l.starts_with("fmadd.d rmm: 0x")),
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.contains(": 0x")).count(),
        188,
        "{out}"
    );
}

#[test]
fn rvc() {
    let run = check_guest("rvc", BUDGET);
    assert_line(
        &run.text(),
        "ok   32-bit insn across a page = 0x000000000000006b",
    );
}

#[test]
fn mext() {
    let run = check_guest("mext", BUDGET);
    assert_line(&run.text(), "ok   div MIN/-1 = 0x8000000000000000");
}

#[test]
fn amo() {
    let run = check_guest("amo", BUDGET);
    assert_line(&run.text(), "ok   lr/sc loop = 0x000000000000012c");
}

#[test]
fn bench() {
    let run = check_guest("bench", BENCH_BUDGET);
    let out = run.text();
    assert_line(&out, "ok   primes below 2e6 = 0x00000000000245c5");
    assert_line(&out, "crc32=0x0000000001bf2f33");
    assert!(
        run.stats.instret > 100_000_000,
        "bench ran only {} instructions",
        run.stats.instret
    );
}

#[test]
fn bench_fp() {
    let run = check_guest("bench_fp", BENCH_BUDGET);
    let out = run.text();
    assert_line(&out, "ok   exact square roots = 0x0000000000061a80");
    assert_line(&out, "harmonic=0x402af3ef843a56ac");
    assert_line(&out, "gcd sum=0x000000000016ce78");
    assert!(
        run.stats.instret > 100_000_000,
        "bench_fp ran only {} instructions",
        run.stats.instret
    );
}

/// The guest's failure code reaches the host through the finisher.
#[test]
fn exit_code() {
    let run = run_guest("exit42", BUDGET);
    assert_eq!(run.exit, MachineExit::Finished { code: 42 });
    assert_eq!(run.text(), "exit42: exiting with code 42\n");
}

/// WFI with no interrupt enabled: the machine reports it instead of hanging.
#[test]
fn wfi_with_nothing_enabled_is_an_error() {
    let path = vmm_tests::guest("wfi_forever");
    match vmm_tests::run_vmm(&path, BUDGET) {
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains("WFI") || msg.contains("interrupt"),
                "unexpected error: {msg}"
            );
        }
        Ok(run) => panic!("wfi_forever ended with {:?}: {}", run.exit, run.text()),
    }
}

/// A guest that never ends stops at the instruction budget instead of hanging.
#[test]
fn budget_stops_a_runaway_guest() {
    let run = run_guest("spin", 1_000_000);
    match run.exit {
        MachineExit::BudgetExhausted { insns, pc } => {
            assert_eq!(insns, 1_000_000, "stopped after {insns} instructions");
            assert!(
                (0x8000_0000..0x8800_0000).contains(&pc),
                "pc {pc:#x} outside the guest"
            );
        }
        other => panic!("spin ended with {other:?}"),
    }
    assert_eq!(
        run.stats.instret,
        match run.exit {
            MachineExit::BudgetExhausted { insns, .. } => insns,
            _ => unreachable!(),
        }
    );
    assert_eq!(run.text(), "spin: looping forever\n");
}

/// A budget of exactly the instructions the guest needs is enough; one fewer is not.
#[test]
fn budget_just_sufficient() {
    let first = run_guest("hello", BUDGET);
    let exact = first.stats.instret;
    let again = run_guest("hello", exact);
    assert_eq!(
        again.exit,
        MachineExit::Finished { code: 0 },
        "budget = {exact}"
    );
    let short = run_guest("hello", exact - 1);
    assert!(
        matches!(short.exit, MachineExit::BudgetExhausted { insns, .. } if insns == exact - 1),
        "budget {} (one short): {:?}",
        exact - 1,
        short.exit
    );
}

#[test]
fn csrx() {
    let run = check_guest("csrx", BUDGET);
    let out = run.text();
    assert_line(&out, "-- everything gated off below M");
    assert_line(&out, "ok     mireg2 at iprio0 = 0x0000000000000002");
    assert_line(&out, "ok     scause = 0x8000000000000005");
    assert_line(&out, "ok     scause = 0x8000000000000001");
}

/// H extension: hypervisor and VS CSRs, VS CSR substitution, htimedelta, MPV/GVA.
#[test]
fn h_csr() {
    let run = check_guest("h_csr", BUDGET);
    assert_line(&run.text(), "h_csr: PASS");
}

/// H extension: every virtual-instruction case of the "Trap Cause Codes" section.
#[test]
fn h_vinst() {
    let run = check_guest("h_vinst", BUDGET);
    assert_line(&run.text(), "h_vinst: PASS");
}

/// H extension: two-stage translation, guest-page faults with htval/htinst, G-stage A/D.
#[test]
fn h_gstage() {
    let run = check_guest("h_gstage", BUDGET);
    assert_line(&run.text(), "h_gstage: PASS");
}

/// H extension: HLV/HLVX/HSV from HS and from U with hstatus.HU.
#[test]
fn h_hlv() {
    let run = check_guest("h_hlv", BUDGET);
    assert_line(&run.text(), "h_hlv: PASS");
}

/// H extension: trap delegation through HS to VS, VS-level interrupts, SRET/MRET with V.
#[test]
fn h_traps() {
    let run = check_guest("h_traps", BUDGET);
    assert_line(&run.text(), "h_traps: PASS");
}

/// H-level halves of Smstateen, Sscsrind, Sstc and Ssaia: hstateen, vsiselect/vsireg,
/// vstimecmp, hvien/hvictl/vstopi, and the interrupts VS-mode takes through them.
#[test]
fn hx() {
    let run = check_guest("hx", BUDGET);
    let out = run.text();
    assert_line(&out, "hx: PASS");
    assert_line(
        &out,
        "ok   hvictl IID 30 taken in VS with code 30 = 0x000000000000001e",
    );
}

/// H extension: the spec rules QEMU breaks (7.2, and 10.0 for some), so vmm-only.
#[test]
fn h_strict() {
    let run = check_guest("h_strict", BUDGET);
    assert_line(&run.text(), "h_strict: PASS");
}

#[test]
fn ctr_strict() {
    let run = check_guest("ctr_strict", BUDGET);
    assert_line(
        &run.text(),
        "ok   4096 cycles: CCE 1, CCM 0 = 0x0000000000001000",
    );
}

#[test]
fn ctr_guests_pass() {
    for name in ["ctr_m", "ctr_modes", "ctr_h"] {
        check_guest(name, BUDGET);
    }
}

#[test]
fn ctr_benchmark_workload_is_the_same_with_recording_on() {
    let off = run_guest("bench_ctr_off", BENCH_BUDGET);
    let on = run_guest("bench_ctr_on", BENCH_BUDGET);
    assert_eq!(
        off.exit,
        MachineExit::Finished { code: 0 },
        "{}",
        off.text()
    );
    assert_eq!(on.exit, MachineExit::Finished { code: 0 }, "{}", on.text());
    assert_eq!(off.text(), on.text());
    assert_line(&on.text(), "fib=0x0000000000213d05");
}

/// The count `bench_pmu` printed for the counter given `event` first.
fn pmu_count(text: &str, event: u32) -> u64 {
    let key = format!(" event {event:#010x}: ");
    let line = text
        .lines()
        .find(|l| l.contains(&key))
        .unwrap_or_else(|| panic!("no count for event {event:#x} in:\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn pmu_benchmark_counts_are_consistent() {
    let plain = run_guest("bench", BENCH_BUDGET);
    let pmu = run_guest("bench_pmu", BENCH_BUDGET);
    assert_eq!(
        pmu.exit,
        MachineExit::Finished { code: 0 },
        "{}",
        pmu.text()
    );
    let text = pmu.text();
    // The workload is the same: its output is a prefix of bench_pmu's.
    assert!(text.starts_with(&plain.text()), "{text}");
    let c = |e| pmu_count(&text, e);
    let instret = c(0x2);
    assert!((482_000_000..483_000_000).contains(&instret), "{instret}");
    // No trap: every decoded instruction retired.
    assert_eq!(c(0x110), instret);
    assert_eq!((c(0x103), c(0x104)), (0, 0));
    // Cycles: the cost model adds penalties to one cycle per instruction.
    // Cycles: the cost model adds penalties to one cycle per instruction (docs/pmu.md):
    // 20 per L1D miss, 6 per misprediction, and 2 per multiply and 19 per divide, which are
    // not events (so only a lower bound).
    assert!(c(0x1) >= instret + 20 * c(0x4) + 6 * c(0x6), "{text}");
    assert!(c(0x1) < 2 * instret, "{text}");
    let last = text
        .lines()
        .find(|l| l.starts_with("mhpmcounter31 "))
        .unwrap();
    assert!(
        last.ends_with(&format!(": {}", c(0x1))),
        "counter 31 counts cycles too: {last}"
    );
    // L1D: accesses are the loads and stores to RAM (the console's device accesses are
    // loads and stores, not cache accesses); misses are read plus write misses.
    assert_eq!(c(0x3), c(0x10000) + c(0x10002));
    let device = c(0x101) + c(0x102) - c(0x3);
    assert!(device > 0 && device < 2000, "{device} device accesses");
    assert_eq!(c(0x4), c(0x10001) + c(0x10003));
    assert!(c(0x4) < c(0x3) / 2);
    // Decoded loads and stores retire; branches: taken ones and misses are a part.
    assert_eq!((c(0x112), c(0x113)), (c(0x101), c(0x102)));
    assert_eq!(c(0x114), c(0x101) + c(0x102));
    assert_eq!(c(0x111), c(0x5) + c(0x105));
    assert!(c(0x100) < c(0x5) && c(0x6) < c(0x5));
    // M-mode: no translation, so no TLB misses; PDIS is off.
    assert_eq!((c(0x10019), c(0x1001b), c(0x10021)), (0, 0, 0));
    assert_eq!(c(0x118) + c(0x119) + c(0x11a) + c(0x11b), 0);
}

/// `bench_sample` (scripts/bench-sample.sh): a cycle counter overflowing every 100 000
/// cycles of the cost model, re-armed by an M-mode LCOFI handler. Translated, each LCOFI
/// lands on the instruction the interpreter gives (the hash of the samples' mepc values and
/// their number are the same with `--jit off`), where blocks run up to the overflow checks
/// and the checks move on when a block does not fit (`Hart::run_chunk`).
#[test]
fn sampling_benchmark_samples_as_the_interpreter_does() {
    let path = guest("bench_sample");
    let on = run_vmm_jit(&path, BENCH_BUDGET, true).unwrap();
    let off = run_vmm_jit(&path, BENCH_BUDGET, false).unwrap();
    for run in [&on, &off] {
        assert_eq!(
            run.exit,
            MachineExit::Finished { code: 0 },
            "{}",
            run.text()
        );
    }
    assert!(on.stats.translated_blocks > 0);
    assert_eq!(off.stats.translated_blocks, 0);
    let text = on.text();
    assert_eq!(text, off.text(), "--jit on and off differ");
    assert_eq!(on.stats.instret, off.stats.instret);
    // Cycles are at least one per instruction and below two (`bench_pmu`'s counts).
    let line = text
        .lines()
        .find(|l| l.starts_with("bench_sample: "))
        .unwrap_or_else(|| panic!("no sample line in:\n{text}"));
    let samples: u64 = line["bench_sample: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line:?}"));
    let periods = on.stats.instret / 100_000;
    assert!((periods..2 * periods).contains(&samples), "{line}");
}

/// The IMSIC (`vmm machine --aia imsic`): MSIs to the machine-level, supervisor-level and
/// guest files' pages, `*topei` claims, `eithreshold`, `eidelivery`, M and S interrupts.
#[test]
fn imsic() {
    let path = vmm_tests::guest("imsic");
    let run = vmm_tests::run_vmm_imsic(&path, BUDGET).expect("vmm runs the imsic guest");
    vmm_tests::assert_guest_passed("imsic", &run);
    let out = run.text();
    assert_line(&out, "ok   mcause = 0x800000000000000b");
    assert_line(&out, "ok   scause = 0x8000000000000009");
    assert_line(&out, "imsic: PASS");
    // Without an IMSIC the first mireg access at 0x70 is fatal.
    let plain = vmm_tests::run_vmm(&path, BUDGET).expect("vmm runs it");
    assert_ne!(plain.text().lines().last(), Some("imsic: PASS"));
}
