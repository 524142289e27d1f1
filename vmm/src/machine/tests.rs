//! Board tests with tiny hand-assembled programs.

use super::*;
use crate::devices::htif::HtifError;
use crate::loader::LoadError;
use crate::testutil::asm;
use crate::testutil::asm::*;
use crate::testutil::{ElfBuilder, SharedBuf};

const T0: u32 = 5;
const T1: u32 = 6;
const T2: u32 = 7;
const A0: u32 = 10;
const CSR_MIE: u32 = 0x304;

/// Offsets of the HTIF words in the test image (within `addi` reach of an `auipc` at entry).
const TOHOST_OFF: u64 = 0x400;
const FROMHOST_OFF: u64 = 0x440;

/// Stores the 32-bit `value` to the finisher, then spins.
fn finish(value: u32) -> Vec<u32> {
    let mut v = vec![lui(T0, FINISHER_BASE as u32 >> 12)];
    v.extend(li32(T1, value as i32));
    v.extend([sw(T1, T0, 0), jal(0, 0)]);
    v
}

fn elf(code: &[u32]) -> Vec<u8> {
    ElfBuilder::new(RAM_BASE)
        .segment(RAM_BASE, &asm::code(code), 0x1000)
        .build()
}

/// An image with `tohost`/`fromhost` at RAM_BASE + 0x400 / 0x440; `t0` is set to RAM_BASE
/// before `code` runs.
fn htif_elf(code: &[u32]) -> Vec<u8> {
    let mut insns = vec![auipc(T0, 0)];
    insns.extend_from_slice(code);
    let mut bytes = asm::code(&insns);
    assert!(bytes.len() as u64 <= TOHOST_OFF);
    bytes.resize(0x480, 0);
    ElfBuilder::new(RAM_BASE)
        .segment(RAM_BASE, &bytes, 0x1000)
        .symbol("tohost", RAM_BASE + TOHOST_OFF)
        .symbol("fromhost", RAM_BASE + FROMHOST_OFF)
        .build()
}

fn machine_with(elf: &[u8], config: &MachineConfig) -> (Machine, SharedBuf) {
    let out = SharedBuf::default();
    let m = Machine::new(elf, config, Box::new(out.clone())).unwrap();
    (m, out)
}

/// A machine for `elf` with a budget of a million instructions.
fn machine(elf: &[u8]) -> (Machine, SharedBuf) {
    let config = MachineConfig {
        max_insns: Some(1_000_000),
        ..MachineConfig::default()
    };
    machine_with(elf, &config)
}

fn run(elf: &[u8]) -> (Result<MachineExit, Error>, SharedBuf) {
    let (mut m, out) = machine(elf);
    (m.run(), out)
}

#[test]
fn encoders_match_the_assembler() {
    // Reference encodings from `llvm-mc -triple=riscv64 -show-encoding`.
    let ours = [
        lui(T0, 0x100),
        addi(T1, T1, 0x555),
        addi(T1, T1, -1),
        sw(T1, T0, 0),
        sd(T1, T0, -8),
        sb(T1, T0, 5),
        ld(T2, T0, 8),
        lbu(T2, T0, 5),
        jal(0, 0),
        jal(1, -16),
        jal(0, 2048),
        beq(A0, 0, 12),
        beq(A0, T1, -8),
        wfi(),
        csrrs(0, CSR_MIE, T2),
        csrrw(A0, 0x305, T0),
        csrrs(A0, 0xf14, 0),
        auipc(T0, 0),
        slli(T0, T0, 31),
        add(T0, T1, T2),
    ];
    let reference = [
        0x001002b7, 0x55530313, 0xfff30313, 0x0062a023, 0xfe62bc23, 0x006282a3, 0x0082b383,
        0x0052c383, 0x0000006f, 0xff1ff0ef, 0x0010006f, 0x00050663, 0xfe650ce3, 0x10500073,
        0x3043a073, 0x30529573, 0xf1402573, 0x00000297, 0x01f29293, 0x007302b3,
    ];
    assert_eq!(ours, reference);
    assert_eq!(li32(T1, 0x5555), [lui(T1, 5), addi(T1, T1, 0x555)]);
    assert_eq!(li32(T1, 0x33fff), [lui(T1, 0x34), addi(T1, T1, -1)]);
}

#[test]
fn rejects_bad_memory_sizes() {
    let image = elf(&finish(0x5555));
    for mib in [0, MAX_MEMORY_MIB + 1, u64::MAX] {
        let config = MachineConfig {
            memory_mib: mib,
            ..MachineConfig::default()
        };
        let err = Machine::new(&image, &config, Box::new(std::io::sink()))
            .err()
            .unwrap();
        assert!(matches!(err, Error::InvalidMemorySize { .. }), "{err}");
        assert!(err.to_string().contains("invalid memory size"), "{err}");
    }
}

#[test]
fn load_errors_name_the_file() {
    let dir = std::env::temp_dir();
    let path = dir.join(format!("vmm-unit-{}-bad.elf", std::process::id()));
    std::fs::write(&path, b"not an elf at all").unwrap();
    let err = run_elf(&path, &MachineConfig::default(), Box::new(std::io::sink())).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert!(
        matches!(
            err,
            Error::Load {
                source: LoadError::NotElf,
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with(&path.display().to_string()) && msg.contains("not an ELF"),
        "{msg}"
    );

    let missing = dir.join("vmm-unit-definitely-missing.elf");
    let err = run_elf(
        &missing,
        &MachineConfig::default(),
        Box::new(std::io::sink()),
    )
    .unwrap_err();
    assert!(matches!(err, Error::ReadProgram { .. }), "{err}");
    assert!(err.to_string().contains("cannot read"), "{err}");
}

#[test]
fn segment_outside_small_ram_is_rejected() {
    // 1 MiB of RAM; the segment sits at +2 MiB.
    let image = ElfBuilder::new(RAM_BASE)
        .segment(RAM_BASE, &[0; 4], 4)
        .segment(RAM_BASE + (2 << 20), &[0; 4], 4)
        .build();
    let config = MachineConfig {
        memory_mib: 1,
        ..MachineConfig::default()
    };
    let err = Machine::new(&image, &config, Box::new(std::io::sink()))
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::Load {
                source: LoadError::SegmentOutsideRam { index: 1, .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().starts_with("ELF image: segment 1"), "{err}");
}

#[test]
fn initial_state() {
    let (m, _) = machine_with(&elf(&finish(0x5555)), &MachineConfig::default());
    assert_eq!(m.hart().pc(), RAM_BASE);
    assert_eq!(m.hart().xreg(10), 0);
    // a1: the device tree, where QEMU's `virt` puts it (128 MiB: 2 MiB below the end).
    let fdt = m.hart().xreg(11);
    assert_eq!(fdt, RAM_BASE + (126 << 20));
    let magic: u32 = m.mem.read_obj(GuestAddress(fdt)).unwrap();
    assert_eq!(u32::from_be(magic), 0xd00d_feed);
    assert_eq!(m.hart().privilege(), vcpu_api::PrivilegeMode::Machine);
    assert_eq!(m.instructions(), 0);
}

#[test]
fn finisher_pass() {
    let (exit, _) = run(&elf(&finish(0x5555)));
    assert_eq!(exit.unwrap(), MachineExit::Finished { code: 0 });
}

#[test]
fn finisher_fail_code() {
    let (exit, _) = run(&elf(&finish(0x0003_3333)));
    assert_eq!(exit.unwrap(), MachineExit::Finished { code: 3 });
}

#[test]
fn finisher_reset_is_an_error() {
    let (exit, _) = run(&elf(&finish(0x7777)));
    assert!(matches!(exit, Err(Error::ResetRequested)), "{exit:?}");
}

#[test]
fn uart_output() {
    let mut code = vec![lui(T0, UART_BASE as u32 >> 12)];
    for &b in b"hi\n" {
        // Poll LSR.THRE like a real driver would.
        code.extend([
            lbu(T2, T0, 5),
            addi(T2, T2, 0),
            addi(T1, 0, i32::from(b)),
            sb(T1, T0, 0),
        ]);
    }
    code.extend(finish(0x5555));
    let (exit, out) = run(&elf(&code));
    assert_eq!(exit.unwrap(), MachineExit::Finished { code: 0 });
    assert_eq!(out.contents(), b"hi\n");
}

#[test]
fn budget_exhausted() {
    let config = MachineConfig {
        max_insns: Some(1000),
        ..MachineConfig::default()
    };
    let (mut m, _) = machine_with(&elf(&[addi(T1, T1, 1), jal(0, -4)]), &config);
    assert_eq!(
        m.run().unwrap(),
        MachineExit::BudgetExhausted {
            insns: 1000,
            pc: RAM_BASE
        }
    );
    assert_eq!(m.instructions(), 1000);
    assert_eq!(m.hart().xreg(T1 as usize), 500);
}

#[test]
fn budget_counts_across_mmio_exits() {
    // Each iteration: one UART store (an MMIO exit) and a jump back.
    let code = [
        lui(T0, UART_BASE as u32 >> 12),
        addi(T1, 0, 0x2e),
        sb(T1, T0, 0),
        jal(0, -4),
    ];
    let config = MachineConfig {
        max_insns: Some(102),
        ..MachineConfig::default()
    };
    let (mut m, out) = machine_with(&elf(&code), &config);
    assert_eq!(
        m.run().unwrap(),
        MachineExit::BudgetExhausted {
            insns: 102,
            pc: RAM_BASE + 8
        }
    );
    assert_eq!(out.contents().len(), 50);
}

#[test]
fn wfi_without_wakeup_source_is_an_error() {
    let (exit, _) = run(&elf(&[addi(T1, 0, 1), wfi(), jal(0, 0)]));
    match exit {
        Err(Error::WaitForever { hart: 0, pc }) => assert_eq!(pc, RAM_BASE + 4),
        other => panic!("{other:?}"),
    }
    let err = Error::WaitForever {
        hart: 0,
        pc: RAM_BASE + 4,
    };
    assert_eq!(
        err.to_string(),
        "hart 0 is waiting for an interrupt (WFI at pc=0x80000004) that can never arrive"
    );
}

#[test]
fn timer_wakes_wfi() {
    // mtimecmp = 1000; mie.MTIE = 1 (mstatus.MIE stays 0: WFI wakes, no trap); wfi; pass.
    let mut code = vec![
        lui(T0, (CLINT_BASE + 0x4000) as u32 >> 12),
        addi(T1, 0, 1000),
        sd(T1, T0, 0),
    ];
    code.extend([addi(T2, 0, 0x80), csrrs(0, CSR_MIE, T2), wfi()]);
    code.extend(finish(0x5555));
    let (mut m, _) = machine(&elf(&code));
    assert_eq!(m.run().unwrap(), MachineExit::Finished { code: 0 });
    assert!(m.hart().mtime() >= 1000, "mtime {}", m.hart().mtime());
    assert_eq!(m.hart().mtimecmp(), 1000);
    assert!(m.instructions() < 100);
}

#[test]
fn clint_mtime_reads_through() {
    // Reads mtime (64-bit), stores it in RAM at +0x800 for inspection, then passes.
    let mut code = vec![lui(T0, (CLINT_BASE + 0xc000) as u32 >> 12), ld(T1, T0, -8)];
    code.extend([auipc(T2, 0), sd(T1, T2, 0x7f8)]);
    code.extend(finish(0x5555));
    let (mut m, _) = machine_with(&elf(&code), &MachineConfig::default());
    assert_eq!(m.run().unwrap(), MachineExit::Finished { code: 0 });
    let seen: u64 = m
        .memory()
        .read_obj(GuestAddress(RAM_BASE + 8 + 0x7f8))
        .unwrap();
    assert!(seen <= m.hart().mtime());
}

#[test]
fn htif_pass_and_fail() {
    let (exit, _) = run(&htif_elf(&[
        addi(T1, 0, 1),
        sd(T1, T0, TOHOST_OFF as i32),
        jal(0, 0),
    ]));
    assert_eq!(exit.unwrap(), MachineExit::Finished { code: 0 });
    let (exit, _) = run(&htif_elf(&[
        addi(T1, 0, (5 << 1) | 1),
        sd(T1, T0, TOHOST_OFF as i32),
        jal(0, 0),
    ]));
    assert_eq!(exit.unwrap(), MachineExit::Finished { code: 5 });
}

#[test]
fn htif_putchar_and_syscall_write() {
    // putchar('A'), wait for fromhost, then write(1, "ok\n", 3) via magic_mem at +0x600.
    let mut code = vec![
        addi(T1, 0, 0x101),
        slli(T1, T1, 48),
        addi(T1, T1, 0x41),
        sd(T1, T0, TOHOST_OFF as i32),
        ld(T2, T0, FROMHOST_OFF as i32),
        beq(T2, 0, -4),
        sd(0, T0, FROMHOST_OFF as i32),
    ];
    // magic_mem = [64, 1, RAM_BASE + 0x700, 3]; "ok\n" at +0x700.
    code.extend([
        addi(T1, 0, 64),
        sd(T1, T0, 0x600),
        addi(T1, 0, 1),
        sd(T1, T0, 0x608),
    ]);
    code.extend([
        addi(T1, T0, 0x700),
        sd(T1, T0, 0x610),
        addi(T1, 0, 3),
        sd(T1, T0, 0x618),
    ]);
    code.extend([
        addi(T1, 0, 0x6f),
        sb(T1, T0, 0x700),
        addi(T1, 0, 0x6b),
        sb(T1, T0, 0x701),
    ]);
    code.extend([addi(T1, 0, 0x0a), sb(T1, T0, 0x702)]);
    code.extend([addi(T1, T0, 0x600), sd(T1, T0, TOHOST_OFF as i32)]);
    code.extend([ld(T2, T0, FROMHOST_OFF as i32), beq(T2, 0, -4)]);
    // Exit with magic_mem[0] (the byte count, 3) as HTIF fail code: tohost = 3 << 1 | 1.
    code.extend([
        ld(T1, T0, 0x600),
        slli(T1, T1, 1),
        addi(T1, T1, 1),
        sd(T1, T0, TOHOST_OFF as i32),
        jal(0, 0),
    ]);
    let (exit, out) = run(&htif_elf(&code));
    assert_eq!(exit.unwrap(), MachineExit::Finished { code: 3 });
    assert_eq!(out.contents(), b"Aok\n");
}

#[test]
fn htif_unsupported_syscall() {
    let code = [
        addi(T1, 0, 57),
        sd(T1, T0, 0x600),
        addi(T1, T0, 0x600),
        sd(T1, T0, TOHOST_OFF as i32),
        jal(0, 0),
    ];
    let (exit, _) = run(&htif_elf(&code));
    assert!(
        matches!(
            exit,
            Err(Error::Htif(HtifError::UnsupportedSyscall { number: 57 }))
        ),
        "{exit:?}"
    );
}

#[test]
fn run_elf_reports_stats() {
    let path = std::env::temp_dir().join(format!("vmm-unit-{}-pass.elf", std::process::id()));
    std::fs::write(&path, elf(&finish(0x5555))).unwrap();
    let result = run_elf(&path, &MachineConfig::default(), Box::new(std::io::sink()));
    std::fs::remove_file(&path).unwrap();
    let (exit, stats) = result.unwrap();
    assert_eq!(exit, MachineExit::Finished { code: 0 });
    // lui, lui, addi, sw: the store's exit ends the run.
    assert_eq!(stats.instret, 4);
    assert!(stats.mips() >= 0.0);
}

#[test]
fn timeout_stops_a_spinning_guest() {
    let config = MachineConfig {
        // The budget only bounds the test if the time limit fails.
        max_insns: Some(20_000_000_000),
        timeout: Some(std::time::Duration::from_millis(50)),
        ..MachineConfig::default()
    };
    let (mut m, _) = machine_with(&elf(&[addi(T1, T1, 1), jal(0, -4)]), &config);
    match m.run().unwrap() {
        MachineExit::TimedOut { limit, insns, pc } => {
            assert_eq!(limit, std::time::Duration::from_millis(50));
            assert_eq!(insns, m.instructions());
            assert!(pc == RAM_BASE || pc == RAM_BASE + 4, "{pc:#x}");
        }
        other => panic!("{other:?}"),
    }
}

/// Code that routes the UART's received-data interrupt to the M-mode external interrupt:
/// PLIC source 10 at priority 1, enabled in context 0; the UART's IER.ERBFI; `mie.MEIE`
/// (`mstatus.MIE` stays off, so a WFI wakes without a trap).
fn uart_input_interrupt_to_m() -> Vec<u32> {
    const CSR_MIE_MEIE: i32 = 1 << 11;
    let plic = PLIC_BASE as u32 >> 12;
    let uart = UART_BASE as u32 >> 12;
    let mut code = vec![lui(T0, plic), addi(T1, 0, 1), sw(T1, T0, 40)];
    code.extend([
        lui(T2, 0x2),
        add(T2, T0, T2),
        addi(T1, 0, 1 << 10),
        sw(T1, T2, 0),
    ]);
    code.extend([lui(T0, uart), addi(T1, 0, 1), sb(T1, T0, 1)]);
    code.extend([addi(T1, 0, CSR_MIE_MEIE), csrw(CSR_MIE, T1)]);
    code
}

/// Console input wakes a hart waiting in WFI through the UART's received-data interrupt and
/// the PLIC: the program routes source 10 to the M-mode context, enables `mie.MEIE` (with
/// `mstatus.MIE` off) and waits; the run ends waiting for an interrupt nothing can send, the
/// input arrives, and the next run claims the source and echoes the byte.
#[test]
fn console_input_wakes_wfi_through_the_plic() {
    let plic = PLIC_BASE as u32 >> 12;
    let uart = UART_BASE as u32 >> 12;
    let mut code = uart_input_interrupt_to_m();
    code.push(wfi());
    let after_wfi = RAM_BASE + 4 * code.len() as u64;
    // Claim (context 0 at 0x20_0004) into a0, echo the byte, complete, pass.
    code.extend([
        lui(T0, plic),
        lui(T2, 0x200),
        add(T2, T0, T2),
        lw(A0, T2, 4),
    ]);
    code.extend([lui(T0, uart), lbu(T1, T0, 0), sb(T1, T0, 0), sw(A0, T2, 4)]);
    code.extend(finish(0x5555));
    let (mut m, out) = machine(&elf(&code));
    match m.run() {
        Err(Error::WaitForever { pc, .. }) => assert_eq!(pc + 4, after_wfi),
        other => panic!("{other:?}"),
    }
    assert_eq!(m.enqueue_input(b"x"), 1);
    assert_eq!(m.run().unwrap(), MachineExit::Finished { code: 0 });
    assert_eq!(m.hart().xreg(A0 as usize), 10, "claimed the UART's source");
    assert_eq!(out.contents(), b"x");
    assert!(!m.plic.notification(0), "completed, nothing pending");
}

/// No access to the PLIC's window, of any width or alignment, stops the machine: what the
/// device ignores reads 0.
#[test]
fn hostile_plic_accesses_read_zero() {
    let plic = PLIC_BASE as u32 >> 12;
    let mut code = vec![lui(T0, plic), addi(A0, 0, 0)];
    // Byte, halfword, doubleword and misaligned loads and stores across the window.
    for off in [0, 1, 2, 3, 40, 41, 0x7fc, 0x7ff] {
        code.extend([
            lb(T1, T0, off),
            or(A0, A0, T1),
            lh(T1, T0, off & !1),
            or(A0, A0, T1),
            ld(T1, T0, off & !7),
            or(A0, A0, T1),
            sd(T0, T0, off & !7),
            sb(T0, T0, off),
            sh(T0, T0, off & !1),
        ]);
    }
    code.extend(finish(0x5555));
    let (mut m, _) = machine(&elf(&code));
    assert_eq!(m.run().unwrap(), MachineExit::Finished { code: 0 });
    assert_eq!(m.hart().xreg(A0 as usize), 0);
    assert_eq!(m.plic, Plic::default());
}

/// With console input configured, a hart waiting in WFI with the UART's received-data
/// interrupt enabled waits for the input (pushed here from another thread) instead of ending
/// the run; once the input is closed and empty, such a wait is forever again.
#[test]
fn wfi_waits_for_console_input_while_it_may_come() {
    let plic = PLIC_BASE as u32 >> 12;
    let uart = UART_BASE as u32 >> 12;
    let mut code = uart_input_interrupt_to_m();
    // Loop: wait, claim, echo the byte, complete.
    code.extend([
        wfi(),
        lui(T0, plic),
        lui(T2, 0x200),
        add(T2, T0, T2),
        lw(A0, T2, 4),
    ]);
    code.extend([lui(T0, uart), lbu(T1, T0, 0), sb(T1, T0, 0), sw(A0, T2, 4)]);
    code.push(jal(0, -4 * 9));
    let input = MachineInput::new();
    let config = MachineConfig {
        max_insns: Some(1_000_000),
        input: Some(input.clone()),
        ..MachineConfig::default()
    };
    let (mut m, out) = machine_with(&elf(&code), &config);
    let feeder = std::thread::spawn(move || {
        for b in [b"a", b"b"] {
            std::thread::sleep(Duration::from_millis(30));
            input.push(b);
        }
        input.close();
    });
    match m.run() {
        Err(Error::WaitForever { .. }) => {}
        other => panic!("{other:?}"),
    }
    feeder.join().unwrap();
    assert_eq!(out.contents(), b"ab");
}

/// `--aia imsic`: accesses of every width and offset to the IMSIC pages neither fault nor
/// panic; reads return 0; only aligned 32-bit writes to `seteipnum_le` deliver MSIs.
#[test]
fn imsic_pages_take_any_access() {
    use crate::devices::imsic::{IMSIC_M_BASE, IMSIC_S_BASE};
    let mut code = vec![addi(T2, 0, 0)];
    for base in [IMSIC_M_BASE, IMSIC_S_BASE, IMSIC_S_BASE + 0x7000] {
        code.extend([lui(T0, base as u32 >> 12), addi(T1, 0, 9)]);
        // Ignored writes: other widths, seteipnum_be, reserved bytes, misaligned.
        code.extend([
            sb(T1, T0, 1),
            sh(T1, T0, 2),
            sd(T1, T0, 0),
            sw(T1, T0, 4),
            sw(T1, T0, 0x10),
            sb(T1, T0, 0x7ff),
        ]);
        // Reads are 0 (ORed into a0).
        for l in [
            lb(A0, T0, 0),
            lh(A0, T0, 2),
            lw(A0, T0, 0),
            ld(A0, T0, 8),
            lwu(A0, T0, 0x7fc),
        ] {
            code.extend([l, or(T2, T2, A0)]);
        }
        // The one MSI per page: identity 5.
        code.extend([addi(T1, 0, 5), sw(T1, T0, 0)]);
    }
    code.extend(finish(0x5555));
    let config = MachineConfig {
        max_insns: Some(1_000_000),
        aia: Aia::Imsic,
        ..MachineConfig::default()
    };
    let (mut m, _) = machine_with(&elf(&code), &config);
    assert_eq!(m.run().unwrap(), MachineExit::Finished { code: 0 });
    assert_eq!(m.hart().xreg(T2 as usize), 0, "every read returns 0");
    let files = &m.hart().imsic_state().files;
    assert_eq!(
        files[0].eip[0],
        1 << 5,
        "M file: only the aligned word write"
    );
    assert_eq!(files[1].eip[0], 1 << 5, "S file");
    assert_eq!(files[8].eip[0], 1 << 5, "guest file 7");
    assert!(files[2..8].iter().all(|f| f.eip[0] == 0));
}

/// Without `--aia imsic` the IMSIC pages are not mapped: an access faults.
#[test]
fn imsic_pages_are_absent_by_default() {
    let mut code = vec![lui(T0, crate::devices::imsic::IMSIC_M_BASE as u32 >> 12)];
    code.extend([sw(0, T0, 0)]);
    code.extend(finish(0x5555));
    let (r, _) = run(&elf(&code));
    assert!(!matches!(r, Ok(MachineExit::Finished { code: 0 })), "{r:?}");
}
