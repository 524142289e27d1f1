//! `vmm run` on tiny hand-assembled kernels.

use std::path::PathBuf;

use super::*;
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
