//! Hostile guests: random instruction streams booted as a `vmm run` kernel. The code is
//! mostly random words (fixed seeds), sprinkled with `ECALL`s and with `lui`/`addi` words
//! that load extension IDs, function IDs and arguments into `a7`, `a6` and `a0`-`a5`, so
//! the SBI is reached through the real trap path with hostile registers. Devices, random
//! addresses, H instructions, `WFI`, `SRET` and CSR accesses come up too.
//!
//! Whatever the guest does, `run_kernel` must return (no panic, no hang) within the
//! instruction budget, with a [`RunExit`] or an error that says what happened.
//!
//! The multiprocessor variant ([`random_smp_guests_with_pmu_hsm_ipi_and_fences`]) boots
//! the same kind of code on 2 to 4 vCPUs (a hart instance each, or all on one), with the
//! PMU (its snapshot shared memory offered to half the seeds) and calls of its own: PMU
//! functions with counter sets, flags and events, `hart_start` of random hart ids at a
//! secondary entry (which prints `[N]` for hart N and jumps into the random code) or at
//! random addresses, `hart_stop`/`hart_get_status`/`hart_suspend`, `send_ipi` and remote
//! fences with random masks and bases. Every run must end within the budget of each vCPU
//! (exactly the budget when it runs out) and the watchdog, with a clean end or an error of
//! the kinds a guest can cause (waiting forever, every hart stopped, an unexpected trap),
//! never a vCPU thread that panicked.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use test_support::rv64::{
    add, addi, auipc, csrr, csrw, i_type, jal, li32, lui, s_type, sb, slli, OP_LOAD, OP_STORE,
    OP_SYSTEM,
};
use test_support::{SharedBuf, XorShift};
use vmm::run::{run_kernel_with_policy, ConsoleInput, GuestPolicy, RunConfig, RunExit};
use vmm::Error;

mod common;

const UART_BASE: u32 = 0x1000_0000;
const BUDGET: u64 = 200_000;
const SEEDS: u64 = 48;
const CODE_WORDS: usize = 4096;
const SECONDS_PER_RUN: u64 = 60;

const A0: u32 = 10;
const A6: u32 = 16;
const A7: u32 = 17;
/// `s0`: a RAM pointer; `s1`: the UART.
const S0: u32 = 8;
const S1: u32 = 9;
const ECALL: u32 = 0x0000_0073;

/// Extension IDs worth calling: the implemented ones, their neighbours, legacy, unknown.
const EIDS: &[i32] = &[
    0x10,
    0x5449_4D45,
    0x73_5049,
    0x5246_4E43,
    0x48_534D,
    0x5352_5354,
    0x4442_434E,
    0x4442_434F,
    0x48_534C,
    0x11,
    0x0,
    0x1,
    0x2,
    0x8,
    0xf,
    0x4e41_4350,
    0x5043_4d50,
    -1,
];

/// One item of guest code: a few words.
fn item(rng: &mut XorShift, out: &mut Vec<u32>) {
    match rng.below(20) {
        // ECALL, often right after setting up the call.
        0..=3 => out.push(ECALL),
        4..=5 => {
            let eid = rng.pick(EIDS);
            out.extend(li32(A7, eid));
            if rng.below(2) == 0 {
                out.push(addi(A6, 0, rng.below(8) as i32));
                out.push(ECALL);
            }
        }
        6 => out.push(addi(A6, 0, rng.pick(&[0, 1, 2, 3, 4, 7, -1, 2047]))),
        // Arguments: small values, -1, RAM addresses (zero-extended 0x8000_0000 + off),
        // sizes, UART addresses, sign-extended 32-bit values.
        7..=8 => {
            let rd = A0 + rng.below(6) as u32;
            match rng.below(6) {
                0 => out.push(addi(
                    rd,
                    0,
                    rng.pick(&[0, 1, 2, 3, -1, 16, 64, 2047, -2048]),
                )),
                1 => {
                    out.push(addi(rd, 0, 1));
                    out.push(slli(rd, rd, 31));
                    out.push(addi(rd, rd, rng.below(2048) as i32));
                }
                2 => {
                    out.push(lui(rd, rng.below(0x400) as u32));
                    out.push(add(rd, rd, S0));
                }
                3 => out.extend(li32(rd, rng.next() as i32)),
                4 => {
                    out.push(addi(rd, 0, -1));
                    out.push(slli(rd, rd, rng.below(64) as u32));
                }
                _ => out.push(lui(rd, rng.next() as u32 & 0xfffff)),
            }
        }
        // Device and memory accesses: UART registers, RAM, random addresses.
        9..=10 => {
            let any = rng.reg();
            let base = rng.pick(&[S0, S1, S1, any]);
            let off = match base {
                S1 => rng.below(16) as i32 - 4,
                _ => (rng.next() as i32) >> 20,
            };
            let width = rng.below(4) as u32;
            if rng.below(2) == 0 {
                let funct3 = width | (rng.below(2) as u32) << 2;
                let rd = rng.reg();
                out.push(i_type(off, base, funct3, rd, OP_LOAD));
            } else {
                let rs2 = rng.reg();
                out.push(s_type(off, rs2, base, width, OP_STORE));
            }
        }
        // H-extension instructions (virtual-instruction exits in VS-mode).
        11 => {
            // (funct7, funct3): hfence.vvma, hfence.gvma, hlv.*, hlvx.*, hsv.*.
            let (funct7, funct3) = rng.pick(&[
                (0x11u32, 0u32),
                (0x31, 0),
                (0x30, 4),
                (0x31, 4),
                (0x32, 4),
                (0x33, 4),
                (0x34, 4),
                (0x35, 4),
                (0x36, 4),
                (0x37, 4),
            ]);
            let stores = funct3 == 0 || funct7 & 1 == 1;
            let rd = if stores { 0 } else { rng.reg() };
            let word = (funct7 << 25) | (rng.reg() << 20) | (rng.reg() << 15) | (funct3 << 12);
            out.push(word | (rd << 7) | 0x73);
        }
        // Privileged instructions and CSRs (S, VS, H and M level).
        12 => {
            let w = rng.pick(&[
                0x1050_0073u32, // wfi
                0x1020_0073,    // sret
                0x3020_0073,    // mret
                0x1200_0073,    // sfence.vma
                0x0000_100f,    // fence.i
                0x0010_0073,    // ebreak
            ]);
            out.push(w);
        }
        13..=14 => {
            let number = rng.pick(&[
                0x100u32, 0x104, 0x105, 0x106, 0x140, 0x141, 0x142, 0x143, 0x144, 0x180, 0x14d,
                0x10a, 0x10c, 0xc00, 0xc01, 0xc02, 0x600, 0x602, 0x603, 0x604, 0x680, 0x200, 0x205,
                0x300, 0x305, 0x7c0, 0xda0, 0x15c,
            ]);
            let funct3 = rng.pick(&[1u32, 2, 3, 5, 6, 7]);
            let (rd, rs1) = (rng.reg(), rng.reg());
            // csrrw, csrrs, csrrc and their immediate forms: the CSR is the I-immediate.
            out.push(i_type(number as i32, rs1, funct3, rd, OP_SYSTEM));
        }
        // Short jumps keep the hart in the random code.
        15 => {
            let rd = rng.pick(&[0, 1]);
            out.push(jal(rd, (rng.below(64) as i32 - 32) * 4));
        }
        // Anything at all (often compressed or illegal).
        16 => out.push(rng.next() as u32),
        _ => {
            let opcode = rng.pick(&[0x13u32, 0x1b, 0x33, 0x3b, 0x63, 0x2f]);
            out.push(rng.next() as u32 >> 7 << 7 | opcode);
        }
    }
}

/// The SBI PMU extension's EID.
const PMU: i32 = 0x50_4D55;
/// Where a secondary hart started at [`SECONDARY_ENTRY`] jumps (a word index of the code).
const SECONDARY_JUMP: usize = 64;
/// The secondary entry: word 1 (word 0 jumps over it to hart 0's prologue).
const SECONDARY_ENTRY: u32 = 4;

/// `rd` = RAM base + `offset` (zero-extended, unlike `li32`).
fn ram_addr(rd: u32, offset: i32) -> [u32; 3] {
    [addi(rd, 0, 1), slli(rd, rd, 31), addi(rd, rd, offset)]
}

/// One multiprocessor item: a PMU call, an HSM call, an IPI or a remote fence.
fn smp_item(rng: &mut XorShift, out: &mut Vec<u32>, vcpus: u64) {
    match rng.below(8) {
        // PMU: counter sets with holes and past the end, flags, events of every type.
        0..=2 => {
            let fid = rng.pick(&[0, 1, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8]);
            let base = rng.pick(&[0, 0, 1, 2, 3, 31, 32, 47, 48, -1]);
            out.push(addi(A0, 0, base));
            match rng.below(4) {
                0 => out.push(addi(A0 + 1, 0, -1)),
                1 => out.extend(li32(A0 + 1, rng.next() as i32)),
                _ => out.push(addi(A0 + 1, 0, rng.below(2048) as i32)),
            }
            out.push(addi(A0 + 2, 0, rng.below(0x200) as i32 - 8));
            let event = rng.pick(&[
                1, 2, 3, 6, 10, 0x1_0000, 0x1_0021, 0x2_0000, 0xf_0000, 0xf_0003, 0, -1,
            ]);
            out.extend(li32(A0 + 3, event));
            out.push(addi(A0 + 4, 0, rng.pick(&[0, 1, 0x7ff])));
            if fid == 7 {
                // snapshot_set_shmem: a page of RAM, misaligned, outside RAM, -1.
                match rng.below(4) {
                    0 => out.extend(ram_addr(A0, 0)),
                    1 => {
                        out.push(lui(A0, 0x100 + rng.below(0x100) as u32));
                        out.push(add(A0, A0, S0));
                    }
                    2 => out.extend(ram_addr(A0, 8)),
                    _ => out.push(addi(A0, 0, -1)),
                }
                out.push(addi(A0 + 1, 0, rng.pick(&[0, 0, 0, -1])));
            }
            out.extend(li32(A7, PMU));
            out.push(addi(A6, 0, fid));
            out.push(ECALL);
        }
        // hart_start: a random hart id at the secondary entry (or anywhere).
        3..=4 => {
            let hart = rng.below(vcpus + 2) as i32 - i32::from(rng.below(8) == 0);
            out.push(addi(A0, 0, hart));
            if rng.below(6) == 0 {
                out.extend(li32(A0 + 1, rng.next() as i32));
            } else {
                out.extend(ram_addr(A0 + 1, SECONDARY_ENTRY as i32));
            }
            out.push(addi(A0 + 2, 0, rng.below(2048) as i32));
            out.extend(li32(A7, 0x48_534D));
            out.push(addi(A6, 0, 0));
            out.push(ECALL);
        }
        // hart_get_status, hart_stop (rarely), hart_suspend.
        5 => {
            let fid = rng.pick(&[2, 2, 2, 1, 3]);
            out.push(addi(A0, 0, rng.below(vcpus + 2) as i32));
            out.extend(li32(A7, 0x48_534D));
            out.push(addi(A6, 0, fid));
            out.push(ECALL);
        }
        // send_ipi and remote fences: masks and bases, -1 included.
        _ => {
            out.push(addi(A0, 0, rng.pick(&[1, 2, 3, 5, 15, -1, 0])));
            out.push(addi(A0 + 1, 0, rng.pick(&[0, 0, 1, 2, 3, -1, 62, 63])));
            out.extend(ram_addr(A0 + 2, 0));
            // (0 twice: the size 4096 this list once had does not fit `addi` and was
            // encoded as 0; kept so that the seeds' guests stay the same.)
            out.push(addi(A0 + 3, 0, rng.pick(&[0, 0, -1])));
            if rng.below(2) == 0 {
                out.extend(li32(A7, 0x73_5049));
                out.push(addi(A6, 0, 0));
            } else {
                out.extend(li32(A7, 0x5246_4E43));
                out.push(addi(A6, 0, rng.below(7) as i32));
            }
            out.push(ECALL);
        }
    }
}

/// The entry of a hart started at [`SECONDARY_ENTRY`] (`a0` = its hart id): `s1` at the
/// UART, prints `[N]`, points `stvec` into the random code, `s0` at RAM, and jumps to word
/// [`SECONDARY_JUMP`].
fn secondary_entry() -> Vec<u32> {
    let t0 = 5;
    let mut code = vec![
        lui(S1, UART_BASE >> 12),
        addi(t0, 0, i32::from(b'[')),
        sb(t0, S1, 0),
        addi(t0, A0, i32::from(b'0')),
        sb(t0, S1, 0),
        addi(t0, 0, i32::from(b']')),
        sb(t0, S1, 0),
        auipc(t0, 0),
        addi(t0, t0, 0x180),
        csrw(0x105, t0), // stvec
        addi(S0, 0, 1),
        slli(S0, S0, 31),
    ];
    let here = 1 + code.len();
    code.push(jal(0, (SECONDARY_JUMP as i32 - here as i32) * 4));
    code
}

/// The guest: a prologue that points `stvec` into the random code (so traps land in more
/// random code instead of looping at address 0), `s0` at RAM and `s1` at the UART; then
/// the random code.
fn guest_code(seed: u64) -> Vec<u32> {
    guest_code_for(seed, None)
}

/// [`guest_code`], with `Some(vcpus)` for a multiprocessor guest: word 0 jumps over the
/// secondary entry (words 1...) to hart 0's prologue, and the random code mixes in
/// [`smp_item`]s.
fn guest_code_for(seed: u64, vcpus: Option<u64>) -> Vec<u32> {
    let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut code = Vec::new();
    if vcpus.is_some() {
        let entry = secondary_entry();
        code.push(jal(0, 4 * (1 + entry.len() as i32)));
        code.extend(entry);
    }
    code.extend([
        auipc(5, 0),
        addi(5, 5, 0x100 + 4 * rng.below(0x100) as i32),
        csrw(0x105, 5), // stvec
        addi(S0, 0, 1),
        slli(S0, S0, 31),
        lui(S1, UART_BASE >> 12),
    ]);
    if rng.below(2) == 0 {
        // A timer a little in the future, so WFI has something to wait for.
        code.extend(li32(A7, 0x5449_4D45));
        code.push(addi(A6, 0, 0));
        code.push(csrr(A0, 0xc01)); // rdtime a0
        code.push(addi(A0, A0, 1000));
        code.push(ECALL);
    }
    // Most secondary harts are started right away (the random code starts more, or again).
    for hart in 1..vcpus.unwrap_or(1) {
        if rng.below(4) != 0 {
            code.push(addi(A0, 0, hart as i32));
            code.extend(ram_addr(A0 + 1, SECONDARY_ENTRY as i32));
            code.push(addi(A0 + 2, 0, 0));
            code.extend(li32(A7, 0x48_534D));
            code.push(addi(A6, 0, 0));
            code.push(ECALL);
        }
    }
    while code.len() < CODE_WORDS {
        match vcpus {
            Some(n) if rng.below(4) == 0 => smp_item(&mut rng, &mut code, n),
            _ => item(&mut rng, &mut code),
        }
    }
    code.truncate(CODE_WORDS);
    code
}

/// The guest as an ELF: its code plus scratch memory in one RWX segment.
fn elf(code: &[u32]) -> Vec<u8> {
    common::elf_with_memsz(code, 0x10000)
}

/// What one run came to, for the summary.
#[derive(Debug)]
struct Outcome {
    end: String,
    instructions: u64,
    sbi_calls: u64,
}

fn run_seed(seed: u64) -> Result<Outcome, String> {
    let path: PathBuf = std::env::temp_dir().join(format!(
        "vmm-hostile-guest-{}-{seed}.elf",
        std::process::id()
    ));
    std::fs::write(&path, elf(&guest_code(seed))).unwrap();
    let mut config = RunConfig::new(&path);
    config.memory_mib = 2;
    config.max_insns = Some(BUDGET);
    let policy = GuestPolicy {
        trap_wfi: seed % 2 == 1,
        trap_time: seed % 3 == 1,
        trap_sret: seed % 5 < 2,
        trap_vm: seed % 7 < 3,
        ..GuestPolicy::default()
    };
    let out = SharedBuf::default();
    let input = ConsoleInput::Bytes(b"hostile input\n".repeat(8));
    let (tx, rx) = mpsc::channel();
    let thread_config = config.clone();
    let handle = std::thread::spawn(move || {
        let r = run_kernel_with_policy(&thread_config, policy, Box::new(out), input);
        let _ = tx.send(());
        r
    });
    let waited = rx.recv_timeout(Duration::from_secs(SECONDS_PER_RUN));
    if waited.is_err() && !handle.is_finished() {
        // The thread is left behind; the test fails anyway.
        return Err(format!(
            "seed {seed}: run_kernel still running after {SECONDS_PER_RUN} s with a budget of {BUDGET} instructions"
        ));
    }
    let result = handle.join();
    let _ = std::fs::remove_file(&path);
    let result = result.map_err(|_| format!("seed {seed}: run_kernel panicked"))?;
    match result {
        Ok((exit, stats)) => {
            if stats.instructions > BUDGET {
                return Err(format!(
                    "seed {seed}: {} instructions executed, budget {BUDGET}",
                    stats.instructions
                ));
            }
            if let RunExit::BudgetExhausted { insns, .. } = &exit {
                let insns = *insns;
                if insns > BUDGET {
                    return Err(format!("seed {seed}: {exit:?} beyond the budget"));
                }
            }
            if exit == RunExit::Quit {
                return Err(format!("seed {seed}: Quit without a terminal"));
            }
            let sbi_calls = stats
                .exits
                .iter()
                .filter(|(k, _)| k.starts_with("sbi "))
                .map(|(_, n)| n)
                .sum();
            let end = match exit {
                RunExit::Reset(r) => format!("reset ({})", r.kind.name()),
                RunExit::BudgetExhausted { .. } => "budget".to_string(),
                RunExit::TimedOut { .. } => {
                    return Err(format!("seed {seed}: timed out without a --timeout"))
                }
                RunExit::Quit => "quit".to_string(),
                RunExit::Migrated { .. } | RunExit::Stopped { .. } | RunExit::Killed => {
                    return Err(format!(
                        "seed {seed}: ended through a control socket or debugger it does not have"
                    ))
                }
            };
            Ok(Outcome {
                end,
                instructions: stats.instructions,
                sbi_calls,
            })
        }
        Err(e) => {
            let msg = e.to_string();
            if msg.trim().is_empty() {
                return Err(format!("seed {seed}: error with an empty message: {e:?}"));
            }
            let kind = format!("{e:?}");
            Ok(Outcome {
                end: format!("error {}", kind.split([' ', '(', '{']).next().unwrap_or("")),
                instructions: 0,
                sbi_calls: 0,
            })
        }
    }
}

#[test]
fn random_guest_code_never_panics_or_hangs_the_vmm() {
    let mut failures = Vec::new();
    let mut ends = std::collections::BTreeMap::<String, u64>::new();
    let mut sbi_calls = 0;
    let mut instructions = 0;
    for seed in 1..=SEEDS {
        match run_seed(seed) {
            Ok(o) => {
                *ends.entry(o.end).or_default() += 1;
                sbi_calls += o.sbi_calls;
                instructions += o.instructions;
            }
            Err(e) => failures.push(e),
        }
    }
    eprintln!(
        "hostile guests: {SEEDS} seeds, ends {ends:?}, {sbi_calls} SBI calls and {instructions} \
         instructions in the runs that returned Ok"
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(sbi_calls > 0, "the generator never reached the SBI");
}

const SMP_SEEDS: u64 = 96;
const SMP_BUDGET: u64 = 100_000;

/// What one multiprocessor run came to.
#[derive(Debug, Default)]
struct SmpOutcome {
    end: String,
    /// Secondary harts that printed their `[N]`.
    secondaries: usize,
    /// SBI exits by extension (PMU, HSM, IPI, RFENCE).
    calls: [u64; 4],
}

fn run_smp_seed(seed: u64) -> Result<SmpOutcome, String> {
    let vcpus = 2 + seed % 3;
    let path: PathBuf =
        std::env::temp_dir().join(format!("vmm-hostile-smp-{}-{seed}.elf", std::process::id()));
    std::fs::write(&path, elf(&guest_code_for(seed, Some(vcpus)))).unwrap();
    let mut config = RunConfig::new(&path);
    config.memory_mib = 2;
    config.max_insns = Some(SMP_BUDGET);
    config.vcpus = vcpus;
    config.pcpus = (seed % 4 == 3).then_some(1);
    config.slice_insns = 3_000;
    config.pmu_snapshot = seed.is_multiple_of(2);
    let policy = GuestPolicy {
        trap_wfi: seed % 2 == 1,
        trap_time: seed % 3 == 1,
        ..GuestPolicy::default()
    };
    let out = SharedBuf::default();
    let text = out.clone();
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let r = run_kernel_with_policy(&config, policy, Box::new(out), ConsoleInput::None);
        let _ = tx.send(());
        r
    });
    let ctx = format!("seed {seed} ({vcpus} vCPUs)");
    if rx
        .recv_timeout(Duration::from_secs(SECONDS_PER_RUN))
        .is_err()
        && !handle.is_finished()
    {
        return Err(format!("{ctx}: still running after {SECONDS_PER_RUN} s"));
    }
    let result = handle.join();
    let _ = std::fs::remove_file(&path);
    let result = result.map_err(|_| format!("{ctx}: run_kernel panicked"))?;
    let printed = text.text();
    let secondaries = (1..vcpus)
        .filter(|h| printed.contains(&format!("[{h}]")))
        .count();
    if let Some(h) = (vcpus..vcpus + 2).find(|h| printed.contains(&format!("[{h}]"))) {
        return Err(format!("{ctx}: hart {h}, which does not exist, started"));
    }
    match result {
        Ok((exit, stats)) => {
            if stats.instructions > vcpus * SMP_BUDGET {
                return Err(format!(
                    "{ctx}: {} instructions, more than {vcpus} x {SMP_BUDGET}",
                    stats.instructions
                ));
            }
            let end = match exit {
                RunExit::BudgetExhausted { insns, .. } if insns == SMP_BUDGET => {
                    "budget".to_string()
                }
                RunExit::Reset(r) => format!("reset ({})", r.kind.name()),
                other => return Err(format!("{ctx}: unexpected end {other:?}")),
            };
            let calls =
                ["PMU", "HSM", "IPI", "RFENCE"].map(|e| stats.exits.get(&format!("sbi {e}")));
            Ok(SmpOutcome {
                end,
                secondaries,
                calls,
            })
        }
        Err(e) => {
            let kind = match &e {
                Error::WaitForever { .. } => "wait-forever",
                Error::AllHartsStopped { .. } => "all-harts-stopped",
                Error::UnexpectedGuestTrap { .. } => "unexpected-trap",
                Error::Stopped { .. } => "stopped",
                other => return Err(format!("{ctx}: error a guest must not cause: {other:?}")),
            };
            if e.to_string().trim().is_empty() {
                return Err(format!("{ctx}: error with an empty message: {e:?}"));
            }
            Ok(SmpOutcome {
                end: format!("error {kind}"),
                secondaries,
                ..SmpOutcome::default()
            })
        }
    }
}

#[test]
fn random_smp_guests_with_pmu_hsm_ipi_and_fences() {
    let mut failures = Vec::new();
    let mut ends = std::collections::BTreeMap::<String, u64>::new();
    let (mut secondaries, mut calls) = (0, [0u64; 4]);
    for seed in 1..=SMP_SEEDS {
        match run_smp_seed(seed) {
            Ok(o) => {
                *ends.entry(o.end).or_default() += 1;
                secondaries += o.secondaries;
                for (c, n) in calls.iter_mut().zip(o.calls) {
                    *c += n;
                }
            }
            Err(e) => failures.push(e),
        }
    }
    eprintln!(
        "hostile SMP guests: {SMP_SEEDS} seeds, ends {ends:?}, {secondaries} secondary harts \
         started, SBI calls PMU/HSM/IPI/RFENCE {calls:?}"
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        secondaries >= SMP_SEEDS as usize / 2,
        "secondary harts rarely started: {secondaries}"
    );
    assert!(
        calls.iter().all(|&n| n >= 100),
        "calls by extension: {calls:?}"
    );
}
