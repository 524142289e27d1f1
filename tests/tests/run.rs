//! `vmm run`: guest kernels in VS-mode with the VMM's SBI, run in-process
//! (`vmm::run::run_kernel`) with console input given as bytes and the output captured.

use std::path::PathBuf;

use vmm::run::{run_kernel, ConsoleInput, RunConfig, RunExit, RunStats};
use vmm_tests::{guest, SharedBuf, BUDGET};

fn run(config: &RunConfig, input: &[u8]) -> (Result<(RunExit, RunStats), vmm::Error>, String) {
    let out = SharedBuf::default();
    let r = run_kernel(
        config,
        Box::new(out.clone()),
        ConsoleInput::Bytes(input.to_vec()),
    );
    (r, out.text())
}

fn config(kernel: impl Into<PathBuf>) -> RunConfig {
    let mut c = RunConfig::new(kernel);
    c.memory_mib = 64;
    c.max_insns = Some(BUDGET);
    c
}

fn temp_file(name: &str, data: &[u8]) -> PathBuf {
    let path = test_support::temp_path("vmm-run-test", name);
    std::fs::write(&path, data).unwrap();
    path
}

#[test]
fn sbi_console_passes() {
    let (r, out) = run(&config(guest("sbi_console")), b"hello\n");
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(
        !out.contains("FAIL"),
        "failures:\n{out}\n{}",
        stats.exits.table()
    );
    assert!(out.contains("sbi_console: hello from DBCN\n"), "{out}");
    assert!(out.contains("sbi_console: hello from the UART\n"), "{out}");
    assert!(out.contains("sbi_console: read: hello\n"), "{out}");
    assert!(out.ends_with("sbi_console: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
    assert!(matches!(exit, RunExit::Reset(_)));
    // Exit accounting.
    assert!(stats.exits.get("sbi DBCN") > 10, "{}", stats.exits.table());
    assert!(stats.exits.get("sbi BASE") >= 9, "{}", stats.exits.table());
    assert_eq!(stats.exits.get("sbi SRST"), 2, "{}", stats.exits.table());
    assert!(stats.exits.get("mmio uart write") >= 30);
    assert!(stats.exits.get("wfi") >= 1);
}

#[test]
fn sbi_console_reads_input_given_in_pieces_and_via_initrd_and_cmdline() {
    // Input without a trailing newline: the guest polls until its budget of tries is out
    // and still shuts down, reporting the wrong length as a failure (status 1).
    let mut c = config(guest("sbi_console"));
    let initrd = temp_file("initrd", &[0x5a; 10000]);
    c.initrd = Some(initrd.clone());
    c.cmdline = "console=ttyS0".into();
    let (r, out) = run(&c, b"hi");
    let (exit, _) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(out.contains("sbi_console: read: hi\n"), "{out}");
    assert!(out.contains("FAIL line length = 0x2, want 0x5"), "{out}");
    assert_eq!(exit.exit_code(), 1, "{exit:?}");
    let _ = std::fs::remove_file(initrd);
}

#[test]
fn budget_exhausted() {
    let mut c = config(guest("sbi_console"));
    c.max_insns = Some(1000);
    let (r, _) = run(&c, b"hello\n");
    let (exit, stats) = r.unwrap();
    assert_eq!(
        exit,
        RunExit::BudgetExhausted {
            insns: 1000,
            pc: match exit {
                RunExit::BudgetExhausted { pc, .. } => pc,
                _ => 0,
            }
        }
    );
    assert_eq!(exit.exit_code(), 124);
    assert_eq!(stats.instructions, 1000);
}

#[test]
fn rejects_files_that_are_not_kernels() {
    let text = temp_file("text", b"#!/bin/sh\necho this is not a kernel\n");
    let (r, _) = run(&config(&text), b"");
    let e = r.unwrap_err().to_string();
    assert!(e.contains("not a kernel"), "{e}");
    assert!(e.contains("ELF") && e.contains("Image"), "{e}");
    let _ = std::fs::remove_file(text);

    let (r, _) = run(&config("/nonexistent/kernel"), b"");
    let e = r.unwrap_err().to_string();
    assert!(e.contains("cannot read /nonexistent/kernel"), "{e}");
}

#[test]
fn rejects_a_kernel_too_big_for_ram() {
    // A riscv64 Image header claiming 64 MiB of memory.
    let mut image = vec![0u8; 4096];
    image[8..16].copy_from_slice(&0x20_0000u64.to_le_bytes());
    image[16..24].copy_from_slice(&(64u64 << 20).to_le_bytes());
    image[56..60].copy_from_slice(b"RSC\x05");
    let path = temp_file("big-image", &image);
    let mut c = config(&path);
    c.memory_mib = 32;
    let (r, _) = run(&c, b"");
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("does not fit") || e.contains("larger --memory"),
        "{e}"
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn rejects_bad_initrds() {
    let mut c = config(guest("sbi_console"));
    c.initrd = Some("/nonexistent/initrd.img".into());
    let (r, _) = run(&c, b"");
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains("cannot read initrd /nonexistent/initrd.img"),
        "{e}"
    );

    let big = temp_file("big-initrd", &vec![0u8; 5 << 20]);
    let mut c = config(guest("sbi_console"));
    c.memory_mib = 8;
    c.initrd = Some(big.clone());
    let (r, _) = run(&c, b"");
    let e = r.unwrap_err().to_string();
    assert!(e.contains("does not fit in guest RAM"), "{e}");
    let _ = std::fs::remove_file(big);
}

// sbi_vinst: every virtual-instruction case a guest can reach, seen from inside the guest
// (its `ok`/`FAIL` lines) and from the VMM's exit log.

use vmm::run::{run_kernel_with_policy, GuestPolicy, VirtualInsnAction, VirtualInsnExit};

/// `csrr a0, csr`.
const fn csrr_a0(csr: u32) -> u32 {
    (csr << 20) | (2 << 12) | (10 << 7) | 0x73
}
/// `csrw csr, a0`.
const fn csrw_a0(csr: u32) -> u32 {
    (csr << 20) | (10 << 15) | (1 << 12) | 0x73
}
/// `.insn r 0x73, funct3, funct7, rd, rs1, rs2`.
const fn system_r(funct3: u32, funct7: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    (funct7 << 25) | (rs2 << 20) | (rs1 << 15) | (funct3 << 12) | (rd << 7) | 0x73
}

const HLV_B: u32 = system_r(4, 0x30, 10, 10, 0);
const HLV_D: u32 = system_r(4, 0x36, 10, 10, 0);
const HLVX_WU: u32 = system_r(4, 0x34, 10, 10, 3);
const HSV_W: u32 = system_r(4, 0x35, 0, 10, 10);
const HFENCE_VVMA: u32 = system_r(0, 0x11, 0, 0, 0);
const HFENCE_GVMA: u32 = system_r(0, 0x31, 0, 0, 0);
const SRET: u32 = 0x1020_0073;
const MRET: u32 = 0x3020_0073;
const WFI: u32 = 0x1050_0073;
const SFENCE_VMA: u32 = 0x1200_0073;
const RDTIME_A0: u32 = csrr_a0(0xc01);

/// Virtual-instruction exits the VMM must see from sbi_vinst whatever its policy: (insn,
/// from VU), each injected into the guest as an illegal instruction.
const VINST_INJECTED: &[(u32, bool)] = &[
    (csrr_a0(0x600), false), // hstatus
    (csrw_a0(0x600), false),
    (csrr_a0(0x680), false), // hgatp
    (csrr_a0(0x643), false), // htval
    (csrr_a0(0xe12), false), // hgeip (read)
    (csrr_a0(0x200), false), // vsstatus
    (csrw_a0(0x280), false), // vsatp
    (HLV_B, false),
    (HLV_D, false),
    (HLVX_WU, false),
    (HSV_W, false),
    (HFENCE_VVMA, false),
    (HFENCE_GVMA, false),
    (csrr_a0(0x100), true), // sstatus
    (csrr_a0(0x180), true), // satp
    (SRET, true),
    (SFENCE_VMA, true),
    (WFI, true),
    (HLV_B, true),
    (csrr_a0(0x600), true),
    (csrr_a0(0x200), true),
    (RDTIME_A0, true), // scounteren.TM = 0
];

/// Illegal (not virtual) neighbours: the hart delegates them to the guest, no VMM exit.
const VINST_NOT_EXITS: &[u32] = &[
    csrr_a0(0x300), // mstatus (VS and VU)
    csrr_a0(0x34b), // mtval2
    csrw_a0(0xe12), // hgeip is read-only
    MRET,
];

fn run_sbi_vinst(policy: GuestPolicy) -> (RunStats, String) {
    let out = SharedBuf::default();
    let r = run_kernel_with_policy(
        &config(guest("sbi_vinst")),
        policy,
        Box::new(out.clone()),
        ConsoleInput::None,
    );
    let out = out.text();
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(
        !out.contains("FAIL"),
        "failures:\n{out}\n{}",
        stats.exits.table()
    );
    assert!(out.ends_with("sbi_vinst: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{out}");
    assert!(matches!(exit, RunExit::Reset(_)), "{exit:?}");
    // Every instruction the guest reported must match the encoding the test expects.
    for &(insn, _) in VINST_INJECTED {
        assert!(
            out.contains(&format!(": insn {insn:#x}\n")),
            "the guest did not probe {insn:#010x}:\n{out}"
        );
    }
    (stats, out)
}

/// Checks the fields every virtual-instruction exit record must have, and returns the
/// records as (insn, from VU, action).
fn vinst_records(log: &[VirtualInsnExit]) -> Vec<(u32, bool, VirtualInsnAction)> {
    log.iter()
        .map(|r| {
            assert_eq!(r.cause, 22, "{r:?}");
            assert_eq!(
                r.tval,
                u64::from(r.insn),
                "tval = the instruction bits: {r:?}"
            );
            assert_eq!(r.htval, 0, "{r:?}");
            assert_eq!(r.htinst, 0, "{r:?}");
            assert!(
                (0x8020_0000..0x8020_0000 + (8 << 20)).contains(&r.pc),
                "pc in the kernel: {r:?}"
            );
            (r.insn, r.from_vu, r.action)
        })
        .collect()
}

fn check_injected_and_absent(records: &[(u32, bool, VirtualInsnAction)]) {
    for &(insn, vu) in VINST_INJECTED {
        let n = records
            .iter()
            .filter(|r| **r == (insn, vu, VirtualInsnAction::InjectedIllegal))
            .count();
        assert_eq!(n, 1, "{insn:#010x} from VU={vu}: {records:#x?}");
    }
    for &insn in VINST_NOT_EXITS {
        assert!(
            !records.iter().any(|r| r.0 == insn),
            "illegal {insn:#010x} must not exit to the VMM: {records:#x?}"
        );
    }
}

#[test]
fn sbi_vinst_with_wfi_and_time_trapped() {
    let policy = GuestPolicy {
        trap_wfi: true,
        trap_time: true,
        ..GuestPolicy::default()
    };
    let (stats, out) = run_sbi_vinst(policy);
    assert_eq!(stats.exits.virtual_insn_dropped(), 0);
    let records = vinst_records(stats.exits.virtual_insn_exits());
    check_injected_and_absent(&records);
    // The VS-mode WFI (hstatus.VTW) was emulated once; the hart never exited with a
    // plain WFI.
    let wfi: Vec<_> = records.iter().filter(|r| r.0 == WFI && !r.1).collect();
    assert_eq!(
        wfi,
        [&(WFI, false, VirtualInsnAction::EmulatedWfi)],
        "{out}"
    );
    assert_eq!(stats.exits.get("wfi"), 0, "{}", stats.exits.table());
    // Every VS read of time (the rdtime probes and the guest's own, in any register) was
    // emulated, and the VU read with scounteren.TM = 1 too; the VU read with
    // scounteren.TM = 0 was injected (checked above).
    let is_time = |insn: u32| insn >> 20 == 0xc01 && insn & 0x707f == 0x2073;
    let time = |vu| {
        records
            .iter()
            .filter(|r| is_time(r.0) && r.1 == vu && r.2 == VirtualInsnAction::EmulatedTime)
            .count()
    };
    assert!(time(false) >= 2, "{records:#x?}");
    assert_eq!(time(true), 1, "{records:#x?}");
    assert!(records
        .iter()
        .filter(|r| r.2 == VirtualInsnAction::EmulatedTime)
        .all(|r| is_time(r.0)));
    // Nothing else was recorded.
    let expected = VINST_INJECTED.len() + 1 + time(false) + time(true);
    assert_eq!(records.len(), expected, "{records:#x?}");
    assert_eq!(
        stats.exits.get("virtual-insn csr time (0xc01)"),
        (time(false) + time(true) + 1) as u64,
        "{}",
        stats.exits.table()
    );
}

#[test]
fn sbi_vinst_with_the_default_policy() {
    let (stats, _) = run_sbi_vinst(GuestPolicy::default());
    let records = vinst_records(stats.exits.virtual_insn_exits());
    check_injected_and_absent(&records);
    // hstatus.VTW = 0 and hcounteren.TM = 1: WFI and VS time reads do not exit as virtual
    // instructions; the WFI is a plain WFI exit. Only the injected cases are recorded.
    assert_eq!(records.len(), VINST_INJECTED.len(), "{records:#x?}");
    assert!(stats.exits.get("wfi") >= 1, "{}", stats.exits.table());
}

#[test]
fn sbi_vinst_with_every_trap_on() {
    let policy = GuestPolicy {
        trap_wfi: true,
        trap_time: true,
        trap_sret: true,
        trap_vm: true,
        ..GuestPolicy::default()
    };
    // The guest passes: its trap handlers' SRETs, emulated by the VMM, went back to VS and
    // VU where the guest's own would have (run_sbi_vinst checks its PASS line).
    let (stats, out) = run_sbi_vinst(policy);
    let records = vinst_records(stats.exits.virtual_insn_exits());
    check_injected_and_absent(&records);
    let of = |action| -> Vec<_> { records.iter().filter(|r| r.2 == action).collect() };
    let srets = of(VirtualInsnAction::EmulatedSret);
    assert!(srets.len() >= 10, "{records:#x?}\n{out}");
    assert!(srets.iter().all(|r| r.0 == SRET && !r.1), "{srets:#x?}");
    // Its VS-mode satp accesses ran on vsatp.
    let satp = of(VirtualInsnAction::EmulatedSatp);
    assert!(!satp.is_empty(), "{records:#x?}");
    assert!(
        satp.iter().all(|r| r.0 >> 20 == 0x180 && !r.1),
        "{satp:#x?}"
    );
    assert_eq!(of(VirtualInsnAction::EmulatedWfi).len(), 1, "{records:#x?}");
}

/// `line` without its `, N cycles` (the CC of a record).
fn without_cc(text: &str) -> String {
    text.lines()
        .map(|l| match l.rfind(", ") {
            Some(i) if l.ends_with(" cycles") => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn emulated_srets_leave_the_records_the_guests_own_leave() {
    let run_demo = |trap_sret| {
        let out = SharedBuf::default();
        let policy = GuestPolicy {
            trap_sret,
            ..GuestPolicy::default()
        };
        let mut config = RunConfig::ctr_demo();
        config.max_insns = Some(BUDGET);
        let (exit, stats) =
            run_kernel_with_policy(&config, policy, Box::new(out.clone()), ConsoleInput::None)
                .unwrap_or_else(|e| panic!("vmm: {e}\n{}", out.text()));
        assert_eq!(exit.exit_code(), 0, "{exit:?}\n{}", out.text());
        let srets = stats
            .exits
            .virtual_insn_exits()
            .iter()
            .filter(|r| r.action == VirtualInsnAction::EmulatedSret)
            .count();
        (out.text(), srets)
    };
    let (native, none) = run_demo(false);
    let (emulated, srets) = run_demo(true);
    assert_eq!(none, 0);
    assert!(srets >= 2, "{emulated}");
    // The same records (Smctr 6.1, table 7: the trap returns VS -> VU and back to VS),
    // but for the cycle counts: the VMM does not know the CC of an SRET it emulates
    // (CCV = 0, Smctr 6.3), so the next record counts those cycles too.
    assert_eq!(without_cc(&native), without_cc(&emulated));
    let returns = |t: &str| t.lines().filter(|l| l.ends_with("trap return")).count();
    assert_eq!(returns(&native), 0, "{native}");
    assert!(returns(&emulated) >= 2, "{emulated}");
}

#[test]
fn exit_trace_names_every_exit_and_what_the_vmm_did() {
    let traced = |args: &[&str]| {
        let out = vmm_tests::vmm_command()
            .args(["run", "--timeout", "60", "--max-insns", "50000000"])
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let all = traced(&["--trap", "sret", "--trace-exits"]);
    for expected in [
        // VS-mode CTR accesses: ctr-virt loads the context, emulates sctrdepth.
        "VS virtual-insn sctrclr -> ctr-loaded",
        "VS virtual-insn csrrs a1, sctrdepth, zero -> emulated-ctr-depth",
        "VS virtual-insn csrrw zero, sctrdepth, a5 -> emulated-ctr-depth",
        // VU-mode reads of sctrctl are illegal (Smctr 2.1), injected.
        "VU virtual-insn csrrs a0, sctrctl, zero -> injected-illegal",
        // hstatus.VTSR: the guest's SRET back to VU.
        "VS virtual-insn sret -> emulated-sret",
        "VS sbi DBCN debug_console_write(",
        "-> SBI_SUCCESS",
        "VS sbi SRST system_reset(0x0, 0x0, 0x0) -> shutdown (no reason)",
    ] {
        assert!(all.contains(expected), "no {expected:?} in:\n{all}");
    }
    for line in all.lines().filter(|l| l.starts_with("exit ")) {
        assert!(line.starts_with("exit vcpu 0 pc 0x8020"), "{line}");
        assert!(line.contains(" -> "), "{line}");
    }
    // A filter keeps its classes only; no filter, no trace.
    let vinsn = traced(&["--trace-exits=vinsn"]);
    assert!(vinsn.contains("virtual-insn sctrclr"), "{vinsn}");
    assert!(!vinsn.contains(" sbi "), "{vinsn}");
    assert!(!traced(&[]).contains("exit vcpu"));
    let bad = vmm_tests::vmm_command()
        .args(["run", "--trace-exits=sbi,tlb"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && said.contains("unknown exit class `tlb`"),
        "{said}"
    );
}

// sbi_ctr: CTR virtualized by ctr-virt, seen from inside the guest.

fn run_sbi_ctr(setup: impl FnOnce(&mut RunConfig)) -> (RunStats, String) {
    let mut c = config(guest("sbi_ctr"));
    setup(&mut c);
    let (r, out) = run(&c, b"");
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{out}");
    assert!(out.ends_with("sbi_ctr: PASS\n"), "{out}");
    (stats, out)
}

fn assert_lines(out: &str, lines: &[&str]) {
    for l in lines {
        assert!(out.lines().any(|x| x == *l), "missing {l:?} in:\n{out}");
    }
}

#[test]
fn sbi_ctr_with_ctr_on() {
    let (stats, out) = run_sbi_ctr(|_| {});
    assert_lines(
        &out,
        &[
            // The default, migration-safe depths: 16, 32, 64; 16 at boot.
            "ctr sctrdepth at boot: 0x0",
            "ctr write sctrdepth 1 -> 1",
            "ctr write sctrdepth 2 -> 2",
            "ctr write sctrdepth 3 -> 2",
            "ctr write sctrdepth 4 -> 2",
            "ctr write sctrdepth 7 -> 2",
            "ctr write sctrdepth 0 -> 0",
            // vsctrctl's fields: S, U, RASEMU, STE, BPFRZ, LCOFIFRZ, the filter bits.
            "ctr sctrctl after writing ~0: 0xff3e00001983",
            "ctr sctrclr: 0x0",
            // call, call, return, taken branch, return (youngest first).
            "ctr types: 13 5 13 9 9",
            "ctr VU sctrctl: trap 2",
            "ctr VU sctrclr: trap 2",
            "ctr VU sctrdepth: trap 2",
        ],
    );
    // One lazy load (hstateen0.CTR stays set afterwards); every sctrdepth access emulated.
    assert_eq!(
        stats.exits.get("ctr lazy load"),
        1,
        "{}",
        stats.exits.table()
    );
    // The boot read, then 9 write probes of a write and a read each.
    assert_eq!(stats.exits.get("ctr sctrdepth emulated"), 19);
}

#[test]
fn sbi_ctr_with_ctr_off_gets_illegal_instruction_everywhere() {
    let (stats, out) = run_sbi_ctr(|c| c.ctr = false);
    for l in out.lines().filter(|l| l.starts_with("ctr ")) {
        assert!(l.ends_with("trap 2"), "{l}\n{out}");
    }
    assert!(!out.contains("ctr types"), "{out}");
    assert_eq!(stats.exits.get("ctr lazy load"), 0);
}

#[test]
fn sbi_ctr_depths_are_the_vms_within_the_hosts() {
    let (_, out) = run_sbi_ctr(|c| {
        c.ctr_depths = Some(ctr_virt::DepthSet::parse("32,128,256").unwrap());
        c.host_ctr_depths = ctr_virt::DepthSet::parse("16,32,64,128").unwrap();
    });
    assert_lines(
        &out,
        &[
            "ctr sctrdepth at boot: 0x1",
            "ctr write sctrdepth 0 -> 1",
            "ctr write sctrdepth 3 -> 3",
            "ctr write sctrdepth 4 -> 3",
            "ctr write sctrdepth 1 -> 1",
        ],
    );
    // Nothing in common: refused before the guest starts, naming both sets.
    let mut c = config(guest("sbi_ctr"));
    c.ctr_depths = Some(ctr_virt::DepthSet::parse("256").unwrap());
    c.host_ctr_depths = ctr_virt::DepthSet::parse("16,32").unwrap();
    let (r, out) = run(&c, b"");
    let e = r.unwrap_err().to_string();
    assert!(e.contains("(256)") && e.contains("(16,32)"), "{e}");
    assert!(out.is_empty(), "the guest ran: {out}");
}

#[test]
fn sbi_ctr_injected_traps_are_recorded_like_delegated_ones() {
    let (stats, out) = run_sbi_ctr(|_| {});
    assert_lines(
        &out,
        &[
            "ctr injected trap: types 3 1",
            "ctr delegated trap: types 3 1",
        ],
    );
    assert_eq!(
        stats.exits.get("ctr record synthesized"),
        1,
        "{}",
        stats.exits.table()
    );
}

/// The VS-mode observation benchmark's three guests (`scripts/bench-vs.sh`): each computes
/// the same result whatever it observes; the CTR one recorded (a full buffer of depth 16,
/// not frozen) and the PMU one counted plausible values (every instruction of the
/// workload, a branch per 4-20 of them, fewer misses than branches, more cycles than
/// instructions).
#[test]
fn vs_benchmark_guests_compute_the_same_while_observed() {
    let sum = |out: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix("sum "))
            .unwrap_or_else(|| panic!("no sum line:\n{out}"))
            .to_string()
    };
    let value = |out: &str, name: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} line:\n{out}"))
    };
    let mut sums = Vec::new();
    for name in ["sbi_bench_off", "sbi_bench_ctr", "sbi_bench_pmu"] {
        let mut c = config(guest(name));
        c.max_insns = Some(400_000_000);
        let (r, out) = run(&c, b"");
        let (exit, stats) = r.unwrap_or_else(|e| panic!("{name}: {e}\n{out}"));
        assert_eq!(exit.exit_code(), 0, "{name}: {exit:?}\n{out}");
        assert!(out.contains("sbi_bench: PASS"), "{name}:\n{out}");
        assert!(
            stats.instructions > 150_000_000,
            "{name}: {}",
            stats.instructions
        );
        if name == "sbi_bench_ctr" {
            // sctrstatus: WRPTR wrapped around a depth-16 buffer, FROZEN clear.
            let status = out.lines().find_map(|l| l.strip_prefix("sctrstatus 0x"));
            let status = u64::from_str_radix(status.expect("no sctrstatus line"), 16).unwrap();
            assert_eq!(status & !0xf, 0, "sctrstatus {status:#x}");
        }
        if name == "sbi_bench_pmu" {
            let (cycles, insns) = (value(&out, "cycles"), value(&out, "instructions"));
            let (branches, misses) = (value(&out, "branches"), value(&out, "branch-misses"));
            assert!(insns > 150_000_000 && insns <= stats.instructions, "{out}");
            assert!(cycles > insns, "{out}");
            assert!(branches > insns / 20 && branches < insns / 4, "{out}");
            assert!(misses > 0 && misses < branches, "{out}");
        }
        sums.push(sum(&out));
    }
    assert!(sums.iter().all(|s| *s == sums[0]), "{sums:?}");
}

/// Runs `sbi_sstc` (with `sstc` as `--sstc` and the trap policy `policy`); checks it passed.
fn run_sbi_sstc(sstc: bool, policy: GuestPolicy) -> (RunStats, String) {
    let mut c = config(guest("sbi_sstc"));
    c.sstc = sstc;
    let out = SharedBuf::default();
    let r = run_kernel_with_policy(&c, policy, Box::new(out.clone()), ConsoleInput::None);
    let out = out.text();
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    assert!(
        !out.contains("FAIL"),
        "failures:\n{out}\n{}",
        stats.exits.table()
    );
    assert!(out.ends_with("sbi_sstc: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{out}");
    (stats, out)
}

#[test]
fn sstc_timer_without_exits() {
    // --sstc on (the default): the guest's stimecmp is vstimecmp; its timer, polled and
    // taken as an interrupt out of WFI, needs no SBI TIME call.
    let (stats, out) = run_sbi_sstc(true, GuestPolicy::default());
    assert!(
        out.contains("sbi_sstc: stimecmp is 0xffffffffffffffff\n"),
        "{out}"
    );
    assert!(out.contains("sbi_sstc: timer through stimecmp\n"), "{out}");
    assert_eq!(stats.exits.get("sbi TIME"), 0, "{}", stats.exits.table());
    assert!(stats.exits.virtual_insn_exits().is_empty());
}

#[test]
fn sstc_off_or_time_trapped_is_illegal_instruction() {
    // --sstc off, and --sstc on with --trap time (hcounteren.TM = 0, where the guest's
    // stimecmp accesses would be virtual-instruction): the guest runs as on a hart without
    // Sstc (menvcfg.STCE = 0), its stimecmp access is illegal-instruction (cause 2, stval
    // the instruction, never a VMM exit), and its timer is the SBI TIME extension.
    let time = GuestPolicy {
        trap_time: true,
        ..GuestPolicy::default()
    };
    for (sstc, policy) in [(false, GuestPolicy::default()), (true, time)] {
        let (stats, out) = run_sbi_sstc(sstc, policy);
        assert!(
            out.contains("sbi_sstc: stimecmp read raised cause 2 stval 0x14d"),
            "{out}"
        );
        assert!(out.contains("sbi_sstc: timer through SBI TIME\n"), "{out}");
        assert!(stats.exits.get("sbi TIME") >= 2, "{}", stats.exits.table());
        assert!(
            stats
                .exits
                .virtual_insn_exits()
                .iter()
                .all(|r| r.insn >> 20 != 0x14d),
            "{:?}",
            stats.exits.virtual_insn_exits()
        );
    }
}

/// `--aia aplic-imsic`: the `sbi_aia` guest takes the UART's interrupt through the APLIC,
/// a `genmsi`, MSIs to itself and between its two vCPUs (one waiting in WFI), each claimed
/// through `stopei` in the hart: no virtual-instruction exit; the MSIs are MMIO exits.
#[test]
fn sbi_aia_takes_uart_genmsi_and_cross_hart_msis() {
    let mut c = config(guest("sbi_aia"));
    c.vcpus = 2;
    c.aia = vmm::run::aia::AiaMode::AplicImsic;
    let (r, out) = run(&c, b"");
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"));
    let table = stats.exits.table();
    assert!(out.ends_with("sbi_aia: PASS\n"), "{out}\n{table}");
    for line in [
        "sbi_aia: UART interrupt through the APLIC\n",
        "sbi_aia: genmsi\n",
        "sbi_aia: MSI to itself\n",
        "sbi_aia: MSI from hart 1\n",
        "sbi_aia: hart 1 took identity 9\n",
    ] {
        assert!(out.contains(line), "{line:?} missing:\n{out}");
    }
    assert!(matches!(exit, RunExit::Reset(_)), "{exit:?}");
    assert!(!table.contains("virtual-insn"), "{table}");
    assert!(table.contains("mmio imsic msi"), "{table}");
    assert!(table.contains("mmio aplic"), "{table}");
}

/// Without `--aia` (the default) the APLIC and IMSIC pages are not there: the guest's
/// first APLIC access is an access fault (injected), and `sbi_aia` fails.
#[test]
fn sbi_aia_without_aia_fails() {
    let mut c = config(guest("sbi_aia"));
    c.vcpus = 2;
    let (r, out) = run(&c, b"");
    assert!(!out.contains("sbi_aia: PASS"), "{out}");
    let _ = r;
}

/// `sbi_aia_input` with `vcpus` vCPUs on `pcpus` hart instances and `clock` time.
fn aia_input_config(vcpus: u64, pcpus: Option<u64>, clock: vcpu::ClockMode) -> RunConfig {
    let mut c = config(guest("sbi_aia_input"));
    c.vcpus = vcpus;
    c.pcpus = pcpus;
    c.clock = clock;
    c.aia = vmm::run::aia::AiaMode::AplicImsic;
    c.timeout = Some(std::time::Duration::from_secs(60));
    c
}

/// With AIA, console input ends a wait in WFI that nothing else can end (`sbi_aia_input`:
/// no timer, vCPU 1 never started): while input may still come (the queue is open, as
/// stdin is until its end), the VMM waits for it instead of ending the run, and the byte's
/// interrupt wakes the guest; with one vCPU, with a thread per vCPU, and with both vCPUs
/// on one hart instance (`--pcpus 1`, where no vCPU runs to move the input into the UART),
/// on virtual and host time. With no input to come the run ends as waiting forever.
#[test]
fn aia_console_input_wakes_a_guest_waiting_for_nothing_else() {
    use vcpu::ClockMode::{Host, Virtual};
    use vmm::run::GuestVm;
    for (vcpus, pcpus, clock) in [
        (1, None, Virtual),
        (1, None, Host),
        (2, None, Virtual),
        (2, Some(1), Virtual),
        (2, Some(1), Host),
    ] {
        let tag = format!("{vcpus} vCPUs on {pcpus:?} hart instances, {clock:?} time");
        let c = aia_input_config(vcpus, pcpus, clock);
        let (r, out) = run(&c, b"");
        assert!(
            matches!(r, Err(vmm::Error::WaitForever { hart: 0, .. })),
            "{tag}: {r:?}\n{out}"
        );
        assert!(
            out.ends_with("sbi_aia_input: waiting for input\n"),
            "{tag}: {out}"
        );

        let out = SharedBuf::default();
        let vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
        let input = vm.input().clone();
        input.set_open(true);
        let runner = std::thread::spawn(move || {
            let mut vm = vm;
            vm.run()
        });
        for _ in 0..3000 {
            if out.text().contains("waiting for input") || runner.is_finished() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Time to reach its WFI and idle there (the input wakes it either way).
        std::thread::sleep(std::time::Duration::from_millis(100));
        input.push(b"hi\n");
        input.set_open(false);
        let exit = runner.join().unwrap();
        let text = out.text();
        assert!(
            matches!(exit, Ok(RunExit::Reset(_))),
            "{tag}: {exit:?}\n{text}"
        );
        assert!(text.contains("sbi_aia_input: got \"hi\""), "{tag}: {text}");
        assert!(text.ends_with("sbi_aia_input: PASS\n"), "{tag}: {text}");
    }
}

/// Runs `config` to `at` instructions; when the budget stopped it there, snapshots it,
/// restores the snapshot (checked by `check`) and runs it to its end. Returns what the
/// first part printed, and what the restored run printed (`None` when the run ended
/// before `at`).
fn cut_snapshot_restore(
    mut config: RunConfig,
    at: u64,
    tag: &str,
    check: impl FnOnce(&vmm::snapshot::Snapshot),
) -> (String, Option<String>) {
    use vmm::run::snapshot::{restore_and_run, RestoreConfig};
    let path = test_support::temp_path("vmm-run-snap", &format!("{tag}-{at}"));
    let out = SharedBuf::default();
    config.max_insns = Some(at);
    let mut vm = vmm::run::GuestVm::new(&config, Box::new(out.clone())).unwrap();
    let exit = vm.run().unwrap();
    let before = out.text();
    if !matches!(exit, RunExit::BudgetExhausted { .. }) {
        return (before, None);
    }
    vm.write_snapshot(&path).unwrap();
    check(&vmm::snapshot::read(&path).unwrap());
    let rest = SharedBuf::default();
    let options = RestoreConfig {
        max_insns: Some(BUDGET),
        ..RestoreConfig::default()
    };
    let r = restore_and_run(&path, &options, Box::new(rest.clone()), ConsoleInput::None);
    let _ = std::fs::remove_file(&path);
    let (exit, _) = r.unwrap_or_else(|e| panic!("{tag}: restore at {at}: {e}\n{before}"));
    assert_eq!(exit.exit_code(), 0, "{tag}: {before}{}", rest.text());
    (before, Some(rest.text()))
}

/// Snapshots keep the TLB's translations (snapshot format 13): `sbi_tlb_stale` changes a
/// PTE without SFENCE.VMA and goes on using the translation its hart cached (the old page,
/// and no A or D bit set), as the privileged spec allows; a snapshot taken between the
/// change and the next access, restored, must do the same (a hart that walked again would
/// read the new page and set A and D). Both `--jit` settings.
#[test]
fn snapshot_keeps_a_translation_cached_before_a_pte_change() {
    for jit in [true, false] {
        let tlb_config = || {
            let mut c = config(guest("sbi_tlb_stale"));
            c.jit = jit;
            c
        };
        let (r, want) = run(&tlb_config(), b"");
        let (_, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{want}"));
        assert!(want.ends_with("sbi_tlb_stale: PASS\n"), "{want}");
        assert!(
            want.contains("first access read 0x1d, PTE A|D 0xc0\n")
                && want.contains("second access read 0x1d, PTE A|D 0x0\n")
                && want.contains("after SFENCE.VMA read 0x2e3, PTE A|D 0x40\n"),
            "the hart no longer uses a stale translation: this test then proves nothing\n{want}"
        );
        let total = stats.instructions;
        let mut in_window = 0;
        for k in 1..8u64 {
            let at = total * k / 8;
            let (before, rest) =
                cut_snapshot_restore(tlb_config(), at, &format!("tlb-{jit}"), |_| {});
            let rest = rest.unwrap_or_else(|| panic!("the run ended before {at}"));
            assert_eq!(
                format!("{before}{rest}"),
                want,
                "jit {jit}, restored at {at}"
            );
            if before.contains("without a fence") && !before.contains("second access") {
                in_window += 1;
            }
        }
        assert!(
            in_window >= 4,
            "only {in_window} snapshots between the change and the access"
        );
    }
}

/// Snapshots keep the AIA devices (snapshot format 12): `sbi_aia` stopped at points
/// along its run (its APLIC programmed, MSIs between the vCPUs in flight), snapshotted and
/// restored, prints exactly what an uninterrupted run prints.
#[test]
fn sbi_aia_snapshot_at_any_point_restores_the_same_run() {
    let aia_config = || {
        let mut c = config(guest("sbi_aia"));
        c.vcpus = 2;
        c.aia = vmm::run::aia::AiaMode::AplicImsic;
        c
    };
    let (r, want) = run(&aia_config(), b"");
    let (_, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{want}"));
    assert!(want.ends_with("sbi_aia: PASS\n"), "{want}");
    // The guest's own work: the least count of three runs. A vCPU that waits for the other
    // vCPU's host thread to be scheduled may spin meanwhile (some 1 in 15 runs add 0.25 M
    // to 0.45 M instructions to the 15 000 on a loaded 2-core host), and cut points from
    // such a count would all lie past the end of an ordinary run.
    let total = (0..2)
        .map(|_| {
            let (r, out) = run(&aia_config(), b"");
            r.unwrap_or_else(|e| panic!("vmm: {e}\n{out}"))
                .1
                .instructions
        })
        .fold(stats.instructions, u64::min);
    let mut restored = 0;
    for k in 1..12u64 {
        let at = total * k / 64;
        let (before, rest) = cut_snapshot_restore(aia_config(), at, "aia", |snap| {
            assert!(snap.state.aia.is_some(), "the AIA devices are saved");
        });
        let Some(rest) = rest else {
            // This vCPU's share of the run was below `at`: the run ended first.
            assert_eq!(before, want);
            continue;
        };
        assert_eq!(format!("{before}{rest}"), want, "restored at {at}");
        restored += 1;
    }
    assert!(restored >= 4, "only {restored} snapshots taken mid-run");
}
