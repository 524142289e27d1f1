//! `vmm run` on tiny hand-assembled kernels.

use std::path::PathBuf;

use super::*;
use vcpu_api::Vcpu;

use crate::machine::RAM_BASE;
use crate::sbi::srst::ResetType;
use crate::testutil::asm::*;
use crate::testutil::{ElfBuilder, SharedBuf};

const A0: u32 = 10;
const A1: u32 = 11;
const A6: u32 = 16;
const A7: u32 = 17;
const ECALL: u32 = 0x0000_0073;

fn temp_file(name: &str, data: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("vmm-run-{}-{name}", std::process::id()));
    std::fs::write(&path, data).unwrap();
    path
}

fn sbi(insns: &mut Vec<u32>, eid: i32, fid: i32, a0: i32, a1: i32) {
    insns.extend(li32(A7, eid));
    insns.extend(li32(A6, fid));
    insns.extend(li32(A0, a0));
    insns.extend(li32(A1, a1));
    insns.push(ECALL);
}

fn kernel(insns: &[u32]) -> Vec<u8> {
    ElfBuilder::new(RAM_BASE)
        .segment(RAM_BASE, &code(insns), 0x1000)
        .build()
}

fn run(name: &str, insns: &[u32]) -> (Result<(RunExit, RunStats), Error>, String) {
    run_with_policy(name, insns, GuestPolicy::default())
}

fn run_with_policy(
    name: &str,
    insns: &[u32],
    policy: GuestPolicy,
) -> (Result<(RunExit, RunStats), Error>, String) {
    let path = temp_file(name, &kernel(insns));
    let out = SharedBuf::default();
    let mut config = RunConfig::new(&path);
    config.memory_mib = 16;
    config.max_insns = Some(100_000);
    let r = run_kernel_with_policy(&config, policy, Box::new(out.clone()), ConsoleInput::None);
    let _ = std::fs::remove_file(&path);
    (r, String::from_utf8_lossy(&out.contents()).into_owned())
}

#[test]
fn dbcn_output_and_shutdown() {
    let mut p = Vec::new();
    sbi(&mut p, 0x4442_434E, 2, i32::from(b'H'), 0);
    sbi(&mut p, 0x4442_434E, 2, i32::from(b'\n'), 0);
    sbi(&mut p, 0x5352_5354, 0, 0, 0);
    let (r, out) = run("dbcn", &p);
    let (exit, stats) = r.unwrap();
    assert_eq!(out, "H\n");
    assert_eq!(
        exit,
        RunExit::Reset(ResetRequest {
            kind: ResetType::Shutdown,
            reason: 0
        })
    );
    assert_eq!(exit.exit_code(), 0);
    assert_eq!(stats.exits.get("sbi DBCN"), 2);
    assert_eq!(stats.exits.get("sbi SRST"), 1);
}

#[test]
fn reboot_ends_the_run_as_a_failure() {
    // Linux with panic=-1 after a panic: SRST cold reboot, reason "no reason".
    for (reset_type, reason, kind) in [
        (1, 0, ResetType::ColdReboot),
        (2, 0, ResetType::WarmReboot),
        (1, 1, ResetType::ColdReboot),
    ] {
        let mut p = Vec::new();
        sbi(&mut p, 0x5352_5354, 0, reset_type, reason);
        let (r, _) = run("reboot", &p);
        let (exit, _) = r.unwrap();
        let request = ResetRequest {
            kind,
            reason: reason as u32,
        };
        assert_eq!(exit, RunExit::Reset(request));
        assert_eq!(exit.exit_code(), 3, "{exit:?}");
        assert_eq!(u32::from(exit.exit_code()), EXIT_REBOOT);
        assert!(!exit.is_clean_shutdown());
        let message = exit.failure_message().unwrap();
        assert!(
            message.starts_with(&format!("guest requested a reboot (reason {reason}): ")),
            "{message}"
        );
        assert!(message.contains("treated as failure"), "{message}");
    }
    // A shutdown with reason 0 stays a success; with "system failure" it is status 1.
    let mut p = Vec::new();
    sbi(&mut p, 0x5352_5354, 0, 0, 0);
    let (exit, _) = run("shutdown0", &p).0.unwrap();
    assert_eq!(exit.exit_code(), 0);
    assert!(exit.is_clean_shutdown());
    assert_eq!(exit.failure_message(), None);
    let mut p = Vec::new();
    sbi(&mut p, 0x5352_5354, 0, 0, 1);
    let (exit, _) = run("shutdown1", &p).0.unwrap();
    assert_eq!(exit.exit_code(), 1);
    assert!(!exit.is_clean_shutdown());
}

#[test]
fn boot_registers_point_at_the_device_tree() {
    // Shut down with reason = 0 if a1 holds the FDT magic's address, else failure.
    let mut p = vec![
        lbu(12, A1, 0), // 0xd0 (big-endian magic's first byte)
        addi(12, 12, -0xd0),
    ];
    p.extend(li32(A7, 0x5352_5354));
    p.extend(li32(A6, 0));
    p.extend(li32(A0, 0));
    p.push(addi(A1, 12, 0));
    p.push(ECALL);
    let (r, _) = run("fdt", &p);
    assert_eq!(r.unwrap().0.exit_code(), 0);
}

#[test]
fn virtual_instruction_becomes_illegal_instruction_in_the_guest() {
    // stvec = handler; csrr a0, hgatp (virtual instruction from VS); the handler shuts down
    // with reason = scause - 2 (0 when it is an illegal-instruction exception).
    let mut p = Vec::new();
    p.push(auipc(5, 0));
    let handler_at = 7 * 4; // byte offset of the handler from the auipc
    p.push(addi(5, 5, handler_at));
    p.push(csrrw(0, 0x105, 5)); // stvec
    p.push(csrrs(A0, 0x680, 0)); // csrr a0, hgatp
    p.extend(li32(A0, 0)); // never reached (2 insns)
    p.push(jal(0, 0));
    assert_eq!(p.len() * 4, handler_at as usize);
    p.push(csrrs(A1, 0x142, 0)); // scause
    p.push(addi(A1, A1, -2));
    p.extend(li32(A7, 0x5352_5354));
    p.extend(li32(A6, 0));
    p.extend(li32(A0, 0));
    p.push(ECALL);
    let (r, _) = run("vinsn", &p);
    let (exit, stats) = r.unwrap();
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
    assert_eq!(
        stats.exits.get("virtual-insn csr hgatp (0x680)"),
        1,
        "{:?}",
        stats.exits
    );
}

#[test]
fn trapped_wfi_with_nothing_to_wake_the_guest_waits_forever() {
    let policy = GuestPolicy {
        trap_wfi: true,
        trap_time: false,
        ..GuestPolicy::default()
    };
    let (r, _) = run_with_policy("vtw-forever", &[addi(0, 0, 0), wfi()], policy);
    let err = r.unwrap_err();
    assert!(
        matches!(err, Error::WaitForever { pc, .. } if pc == RAM_BASE + 4),
        "{err}"
    );
    // Without the policy the hart's own WFI exit ends the same way.
    let (r, _) = run("wfi-forever", &[addi(0, 0, 0), wfi()]);
    assert!(
        matches!(r, Err(Error::WaitForever { pc, .. }) if pc == RAM_BASE + 4),
        "{r:?}"
    );
}

#[test]
fn trapped_wfi_and_time_are_emulated_and_logged() {
    // sie.STIE = 1 (sstatus.SIE stays 0), wfi (the guest timer is due: resumes at once),
    // rdtime t0, rdtime t1, shut down.
    let mut p = vec![
        addi(7, 0, 0x20),
        csrrs(0, 0x104, 7),
        wfi(),
        csrrs(5, 0xc01, 0),
        csrrs(6, 0xc01, 0),
    ];
    sbi(&mut p, 0x5352_5354, 0, 0, 0);
    let policy = GuestPolicy {
        trap_wfi: true,
        trap_time: true,
        ..GuestPolicy::default()
    };
    let path = temp_file("vinsn-log", &kernel(&p));
    let mut config = RunConfig::new(&path);
    config.memory_mib = 16;
    config.max_insns = Some(100_000);
    let mut vm = GuestVm::with_policy(&config, policy, Box::new(SharedBuf::default())).unwrap();
    let _ = std::fs::remove_file(&path);
    // Give the guest a timer that is already due, so the WFI has something to wake it.
    Vcpu::set_guest_timer(&mut vm.hart, 0);
    let exit = vm.run().unwrap();
    assert_eq!(exit.exit_code(), 0, "{exit:?}");
    let log = vm.stats().virtual_insn_exits();
    let summary: Vec<_> = log.iter().map(|r| (r.insn, r.pc, r.action)).collect();
    assert_eq!(
        summary,
        [
            (wfi(), RAM_BASE + 8, VirtualInsnAction::EmulatedWfi),
            (
                csrrs(5, 0xc01, 0),
                RAM_BASE + 12,
                VirtualInsnAction::EmulatedTime
            ),
            (
                csrrs(6, 0xc01, 0),
                RAM_BASE + 16,
                VirtualInsnAction::EmulatedTime
            ),
        ]
    );
    for r in log {
        assert_eq!(
            (r.cause, r.tval, r.htval, r.htinst),
            (22, u64::from(r.insn), 0, 0)
        );
        assert!(!r.from_vu);
    }
    let (t0, t1) = (Vcpu::xreg(&vm.hart, 5), Vcpu::xreg(&vm.hart, 6));
    assert!(t0 <= t1 && t1 <= Vcpu::guest_time(&vm.hart), "{t0} {t1}");
}

#[test]
fn budget_and_unknown_calls() {
    let mut p = Vec::new();
    sbi(&mut p, 0x0123_4567, 0, 0, 0);
    // Loop forever if a0 == -2 (NOT_SUPPORTED), else shut down with failure.
    p.extend(li32(12, -2));
    p.push(beq(A0, 12, 40));
    sbi(&mut p, 0x5352_5354, 0, 0, 1);
    p.push(jal(0, 0));
    let (r, _) = run("budget", &p);
    let (exit, stats) = r.unwrap();
    assert!(
        matches!(exit, RunExit::BudgetExhausted { insns: 100_000, .. }),
        "{exit:?}"
    );
    assert_eq!(exit.exit_code(), 124);
    assert_eq!(stats.exits.get("sbi unknown"), 1);
}

#[test]
fn rejects_bad_kernels_before_running() {
    let text = temp_file("text", b"this is not a kernel at all, just some text\n");
    let out = SharedBuf::default();
    let err = run_kernel(&RunConfig::new(&text), Box::new(out), ConsoleInput::None).unwrap_err();
    assert!(err.to_string().contains("not a kernel"), "{err}");
    let _ = std::fs::remove_file(&text);

    let big = temp_file(
        "big",
        &ElfBuilder::new(RAM_BASE)
            .segment(RAM_BASE, &code(&[ECALL]), 32 << 20)
            .build(),
    );
    let mut config = RunConfig::new(&big);
    config.memory_mib = 16;
    let err = run_kernel(&config, Box::new(SharedBuf::default()), ConsoleInput::None).unwrap_err();
    assert!(
        err.to_string().contains("does not fit in guest RAM"),
        "{err}"
    );
    let _ = std::fs::remove_file(&big);
}

/// Runs `insns` on `vcpus` vCPUs.
fn run_smp(name: &str, insns: &[u32], vcpus: u64) -> (Result<(RunExit, RunStats), Error>, String) {
    let path = temp_file(name, &kernel(insns));
    let out = SharedBuf::default();
    let mut config = RunConfig::new(&path);
    config.memory_mib = 16;
    config.max_insns = Some(10_000_000);
    config.vcpus = vcpus;
    let r = run_kernel(&config, Box::new(out.clone()), ConsoleInput::None);
    let _ = std::fs::remove_file(&path);
    (r, String::from_utf8_lossy(&out.contents()).into_owned())
}

/// `DBCN write_byte(a0 + add)`: prints a register as a character.
fn print_reg(p: &mut Vec<u32>, reg: u32, add: i32) {
    p.push(addi(A0, reg, add));
    p.extend(li32(A7, 0x4442_434E));
    p.extend(li32(A6, 2));
    p.push(ECALL);
}

fn pad_to(p: &mut Vec<u32>, byte_offset: usize) {
    assert!(
        p.len() * 4 <= byte_offset,
        "code overlaps at {byte_offset:#x}"
    );
    p.resize(byte_offset / 4, addi(0, 0, 0));
}

#[test]
fn smp_hart_start_status_ipi_and_stop() {
    const SECONDARY: i32 = 0x200;
    const HANDLER: i32 = 0x400;
    let mut p = Vec::new();
    // Hart 0: hart_get_status(1) is STOPPED (1): prints '1'.
    sbi(&mut p, 0x48_534D, 2, 1, 0);
    print_reg(&mut p, A1, i32::from(b'0'));
    // stvec = HANDLER; sie.SSIE; sstatus.SIE.
    let at = p.len() as i32 * 4;
    p.push(auipc(5, 0));
    p.push(addi(5, 5, HANDLER - at));
    p.push(csrrw(0, 0x105, 5));
    p.push(addi(5, 0, 2));
    p.push(csrrs(0, 0x104, 5));
    p.push(csrrs(0, 0x100, 5));
    // hart_start(1, SECONDARY, opaque 'U').
    p.extend(li32(A7, 0x48_534D));
    p.extend(li32(A6, 0));
    p.extend(li32(A0, 1));
    let at = p.len() as i32 * 4;
    p.push(auipc(A1, 0));
    p.push(addi(A1, A1, SECONDARY - at));
    p.extend(li32(12, i32::from(b'U')));
    p.push(ECALL);
    // Keep the result (0: success) in s0; the handler prints it, after hart 1's output.
    p.push(addi(8, A0, 0));
    // Idle until the IPI arrives.
    p.push(wfi());
    p.push(jal(0, -4));

    // Hart 1: prints its hart id ('1') and the opaque value ('U'), sends an IPI to hart 0,
    // stops.
    pad_to(&mut p, SECONDARY as usize);
    p.push(addi(6, A1, 0));
    print_reg(&mut p, A0, i32::from(b'0'));
    print_reg(&mut p, 6, 0);
    sbi(&mut p, 0x73_5049, 0, 1, 0);
    sbi(&mut p, 0x48_534D, 1, 0, 0);
    p.push(jal(0, 0)); // never reached

    // Hart 0's interrupt handler: prints the hart_start result ('S' for success), then 'I'
    // when scause is the supervisor software interrupt, then shuts down.
    pad_to(&mut p, HANDLER as usize);
    print_reg(&mut p, 8, i32::from(b'S'));
    p.push(csrrs(5, 0x142, 0));
    p.push(slli(5, 5, 1)); // drop the interrupt bit
    print_reg(&mut p, 5, i32::from(b'I') - 2);
    // Wait until hart 1 has stopped (hart_get_status(1) == STOPPED), then shut down.
    p.push(addi(7, 0, 1));
    let poll = p.len();
    sbi(&mut p, 0x48_534D, 2, 1, 0);
    p.push(beq(A1, 7, 8));
    p.push(jal(0, -4 * (p.len() - poll) as i32));
    sbi(&mut p, 0x5352_5354, 0, 0, 0);

    let (r, out) = run_smp("smp-hsm", &p, 2);
    let (exit, stats) = r.unwrap_or_else(|e| panic!("{e}; console {out:?}"));
    assert_eq!(exit.exit_code(), 0, "{exit:?}; console {out:?}");
    assert_eq!(out, "11USI");
    assert_eq!(stats.exits.get("sbi IPI"), 1);
    // get_status, start, stop, and at least one get_status seeing hart 1 stopped.
    assert!(stats.exits.get("sbi HSM") >= 4, "{}", stats.exits.table());
}

#[test]
fn smp_all_harts_idle_without_a_timer_is_an_error() {
    // Hart 0 waits for an interrupt nobody sends; hart 1 stays stopped.
    let p = vec![wfi(), jal(0, -4)];
    let (r, _) = run_smp("smp-idle", &p, 2);
    assert!(
        matches!(r, Err(Error::WaitForever { hart: 0, .. })),
        "{r:?}"
    );
}

#[test]
fn vcpus_out_of_range_are_refused() {
    for vcpus in [0, MAX_VCPUS + 1] {
        let (r, _) = run_smp("smp-range", &[jal(0, 0)], vcpus);
        assert!(
            matches!(r, Err(Error::InvalidVcpus { vcpus: v, max: MAX_VCPUS }) if v == vcpus),
            "{r:?}"
        );
    }
}

#[test]
fn timeout_ends_a_hanging_guest_with_a_clear_message() {
    // Print a line, then spin forever.
    let mut p = Vec::new();
    sbi(&mut p, 0x4442_434E, 2, i32::from(b'!'), 0);
    p.push(jal(0, 0));
    let path = temp_file("timeout", &kernel(&p));
    let out = SharedBuf::default();
    let mut config = RunConfig::new(&path);
    config.memory_mib = 16;
    config.timeout = Some(std::time::Duration::from_millis(200));
    let start = std::time::Instant::now();
    let r = run_kernel(&config, Box::new(out.clone()), ConsoleInput::None);
    let _ = std::fs::remove_file(&path);
    let (exit, _) = r.unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
    assert!(matches!(exit, RunExit::TimedOut { .. }), "{exit:?}");
    assert_eq!(exit.exit_code(), 124);
    let msg = exit.failure_message().unwrap();
    assert!(msg.contains("wall-clock timeout of 0.2 s"), "{msg}");
    assert_eq!(String::from_utf8_lossy(&out.contents()), "!");
}

/// Ctrl-A x kills the VM: a failure with its own status, not a clean power-off.
#[test]
fn quit_is_not_a_clean_exit() {
    assert_eq!(RunExit::Quit.exit_code(), EXIT_QUIT);
    assert_eq!(EXIT_QUIT, 130);
    assert!(!RunExit::Quit.is_clean_shutdown());
    let message = RunExit::Quit.failure_message().unwrap_or_default();
    assert!(
        message.contains("killed by the user (Ctrl-A x)"),
        "{message}"
    );
}

/// The built-in CTR self-test guest on a VM without CTR (`vmm run --ctr off`): one line
/// saying so and a clean shutdown, not a self-test failing on garbage depths.
#[test]
fn ctr_demo_without_ctr_says_so() {
    let out = SharedBuf::default();
    let config = RunConfig {
        ctr: false,
        memory_mib: 16,
        max_insns: Some(10_000_000),
        ..RunConfig::ctr_demo()
    };
    let (exit, _) = run_kernel(&config, Box::new(out.clone()), ConsoleInput::None).unwrap();
    let text = String::from_utf8_lossy(&out.contents()).into_owned();
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{text}");
    assert!(
        text.ends_with("CTR is not available (vmm run --ctr off?)\n"),
        "{text}"
    );
    assert!(!text.contains("sctrdepth at boot"), "{text}");
}
