// Binary literals are grouped by instruction field.
#![allow(clippy::unusual_byte_groupings)]
//! Hosted mode through the backend-neutral `Vcpu` interface: the guest runs in VS-mode, traps
//! meant for HS-mode come back as `GuestTrap` exits with what HS-mode would have been told,
//! and the VMM resumes, redirects traps into the guest, and drives its timer.

mod common;

use common::*;
use vcpu::{GuestTrap, Hart, HartConfig, MmioRange, Vcpu, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const GUEST: u64 = RAM_BASE + 0x2000;
const VSTVEC: u64 = RAM_BASE + 0x3000;

fn guest(code: &[u32], handler: &[u32]) -> Hart {
    guest_jit(code, handler, true)
}

/// [`guest`] with block translation on or off (`HartConfig::jit`).
fn guest_jit(code: &[u32], handler: &[u32], jit: bool) -> Hart {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM_BASE), RAM_SIZE)]).unwrap();
    for (i, w) in code.iter().enumerate() {
        mem.write_obj(*w, GuestAddress(GUEST + 4 * i as u64))
            .unwrap();
    }
    for (i, w) in handler.iter().enumerate() {
        mem.write_obj(*w, GuestAddress(VSTVEC + 4 * i as u64))
            .unwrap();
    }
    let config = HartConfig {
        mmio: vec![MmioRange {
            base: 0x1000_0000,
            size: 0x100,
        }],
        jit,
        ..HartConfig::default()
    };
    let mut h = Hart::new_guest(config, mem).unwrap();
    h.set_pc(GUEST);
    h
}

fn expect_trap(h: &mut Hart) -> GuestTrap {
    match h.run(1000) {
        VcpuExit::GuestTrap(t) => t,
        other => panic!("expected a guest trap, got {other:?} at pc {:#x}", h.pc()),
    }
}

#[test]
fn sbi_ecall_exits_with_cause_10_and_resumes_after_emulation() {
    let mut h = guest(&[addi(17, 0, 0x10), ecall(), addi(5, 10, 1), wfi()], &[]);
    let t = expect_trap(&mut h);
    assert_eq!(t.cause, 10, "ECALL from VS-mode");
    assert_eq!(t.pc, GUEST + 4);
    assert_eq!(t.insn, ecall());
    assert!(!t.from_vu);
    assert_eq!(h.xreg(17), 0x10);
    // The VMM emulates the call: a0 = 0 (success), a1 = 2, resume after the ecall.
    h.set_xreg(10, 41);
    h.set_pc(t.pc + 4);
    assert_eq!(h.run(1000), VcpuExit::Wfi);
    assert_eq!(h.xreg(5), 42);
}

#[test]
fn hypervisor_csr_access_is_a_virtual_instruction_exit_with_the_bits() {
    let csrr_hstatus = csrr(5, 0x600);
    let mut h = guest(&[csrr_hstatus, wfi()], &[]);
    let t = expect_trap(&mut h);
    assert_eq!(t.cause, 22);
    assert_eq!(t.tval, csrr_hstatus as u64);
    assert_eq!(t.insn, csrr_hstatus);
    assert_eq!(h.pc(), GUEST, "pc stays at the trapping instruction");
}

#[test]
fn injected_exception_enters_the_guest_handler() {
    let bad = csrr(5, 0x600);
    // Guest: set vstvec (stvec with V=1), then trap; the handler reads scause/stval/sepc.
    let code = [csrw(STVEC, 6), bad, wfi()];
    let handler = [csrr(10, SCAUSE), csrr(11, STVAL), csrr(12, SEPC), wfi()];
    let mut h = guest(&code, &handler);
    h.set_xreg(6, VSTVEC);
    let t = expect_trap(&mut h);
    assert_eq!(t.cause, 22);
    // Not emulated: the VMM turns it into an illegal instruction for the guest.
    h.inject_exception(2, t.insn as u64);
    assert_eq!(h.pc(), VSTVEC);
    assert_eq!(h.run(1000), VcpuExit::Wfi);
    assert_eq!(h.xreg(10), 2);
    assert_eq!(h.xreg(11), bad as u64);
    assert_eq!(h.xreg(12), GUEST + 4);
}

#[test]
fn access_outside_ram_and_devices_exits_as_an_access_fault() {
    let mut h = guest(&[ld(5, 6, 0), wfi()], &[]);
    h.set_xreg(6, 0x4000_0000);
    let t = expect_trap(&mut h);
    assert_eq!(t.cause, 5);
    assert_eq!(t.tval, 0x4000_0000);
    assert!(t.gva, "tval is a guest virtual address");
    assert_eq!(
        t.htinst,
        ld(5, 0, 0) as u64,
        "transformed load: no immediate, no rs1"
    );
}

#[test]
fn device_access_is_an_mmio_exit() {
    let mut h = guest(&[lbu(5, 6, 5), wfi()], &[]);
    h.set_xreg(6, 0x1000_0000);
    match h.run(1000) {
        VcpuExit::Mmio(a) => {
            assert_eq!(a.addr, 0x1000_0005);
            assert_eq!(a.write, None);
        }
        other => panic!("{other:?}"),
    }
    h.complete_mmio_read(0x60);
    assert_eq!(h.run(1000), VcpuExit::Wfi);
    assert_eq!(h.xreg(5), 0x60);
}

/// A guest that enables its supervisor timer interrupt (stvec, sie.STIE, sstatus.SIE) and
/// waits in WFI; its handler records scause in x10 and makes an ECALL.
fn timer_waiting_guest() -> Hart {
    timer_guest(&[wfi(), jal(0, -4)], true)
}

/// A guest that takes its timer interrupt: stvec from x6, sie.STIE, sstatus.SIE, then
/// `body`; the handler puts scause in x10 and ECALLs (a7 = 1), which exits.
fn timer_guest(body: &[u32], jit: bool) -> Hart {
    let code = [&[csrw(STVEC, 6), csrw(SIE, 7), csrrsi(0, SSTATUS, 2)], body].concat();
    let handler = [csrr(10, SCAUSE), addi(17, 0, 1), ecall()];
    let mut h = guest_jit(&code, &handler, jit);
    h.set_xreg(6, VSTVEC);
    h.set_xreg(7, 1 << 5);
    h
}

#[test]
fn guest_timer_interrupt_reaches_the_guest_as_a_supervisor_timer_interrupt() {
    let mut h = timer_waiting_guest();
    let deadline = h.guest_time() + 1000;
    h.set_guest_timer(deadline);
    assert_eq!(h.run(1000), VcpuExit::Wfi);
    assert!(h.skip_to_timer(), "the guest timer can wake the guest");
    let t = expect_trap(&mut h);
    assert_eq!(t.cause, 10);
    assert_eq!(
        h.xreg(10),
        (1 << 63) | 5,
        "VSTI arrives as STI (code 5) in VS-mode"
    );
    assert!(h.guest_time() >= deadline);
}

#[test]
fn a_guest_waiting_with_nothing_enabled_cannot_be_woken() {
    let mut h = guest(&[wfi()], &[]);
    assert_eq!(h.run(1000), VcpuExit::Wfi);
    assert!(!h.skip_to_timer());
}

/// FP with `vsstatus.FS` = Off is illegal-instruction, never virtual-instruction (H extension,
/// "Trap Cause Codes"), so it is delegated to the guest like any illegal instruction.
#[test]
fn fp_with_vsstatus_fs_off_is_illegal_not_virtual() {
    let fadd_d = fadd(1, 2, 3, 7, 1);
    let code = [csrw(STVEC, 6), fadd_d, wfi()];
    let handler = [csrr(10, SCAUSE), csrr(11, STVAL), wfi()];
    let mut h = guest(&code, &handler);
    h.set_xreg(6, VSTVEC);
    assert_eq!(h.run(1000), VcpuExit::Wfi, "no exit: the guest handles it");
    assert_eq!(h.xreg(10), 2);
    assert_eq!(h.xreg(11), fadd_d as u64);
}

/// MRET is not HS-qualified: illegal (not virtual) from VS-mode.
#[test]
fn mret_from_vs_is_illegal_not_virtual() {
    let code = [csrw(STVEC, 6), mret(), wfi()];
    let handler = [csrr(10, SCAUSE), wfi()];
    let mut h = guest(&code, &handler);
    h.set_xreg(6, VSTVEC);
    assert_eq!(h.run(1000), VcpuExit::Wfi);
    assert_eq!(h.xreg(10), 2);
}

/// With a host clock `time` follows the host (read at chunk boundaries, whatever the
/// instructions executed), WFI skips nothing, and the guest timer fires once the host's time
/// reaches it; the instruction counts stay the instructions executed.
#[test]
fn host_clock_time_follows_the_host_and_idle_skips_nothing() {
    let mut h = timer_waiting_guest();
    h.set_host_clock(Some(vcpu::HostClock::starting_at(5_000)));
    let start = h.mtime_now();
    assert!(start >= 5_000);
    // 0.5 s of host time ahead (5 000 000 ticks at 10 MHz): far enough that a loaded host
    // does not get there before the WFI below.
    let deadline = start + 5_000_000;
    h.set_guest_timer(deadline);
    assert_eq!(h.run(1000), VcpuExit::Wfi);
    assert_eq!(h.wake_deadline(), Some(deadline));
    assert!(h.skip_to_timer());
    // Nothing was skipped: the deadline is still ahead unless the host got there.
    let executed = h.executed();
    assert_eq!(h.clock_slots(), executed);
    while h.mtime_now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let t = expect_trap(&mut h);
    assert_eq!(t.cause, 10);
    assert_eq!(h.xreg(10), (1 << 63) | 5);
    assert!(h.guest_time() >= deadline);
    assert!(h.executed() < 100, "{}", h.executed());
    // Back to virtual time: `time` continues from where the host clock left it.
    let now = h.mtime_now();
    h.set_host_clock(None);
    assert!(h.guest_time() >= now);
}

/// The hart reads the host clock at its chunk boundaries, 4096 instructions apart and at most
/// 64 more to finish a translated block (README, "--clock"): a guest spinning on `time` sees
/// it move within that many. (On virtual time a hart alone runs longer chunks: its `time`
/// moves with its instructions, not at boundaries.)
#[test]
fn host_time_moves_within_4096_instructions() {
    // a0 = time; spin until time differs (3 instructions an iteration); WFI.
    let code = [csrr(10, TIME), csrr(11, TIME), beq(10, 11, -4), wfi()];
    let mut h = guest(&code, &[]);
    h.set_host_clock(Some(vcpu::HostClock::starting_at(0)));
    assert_eq!(h.run(1_000_000), VcpuExit::Wfi);
    let spun = h.executed();
    assert!(
        spun <= 4096 + 64 + 3,
        "time moved after {spun} instructions"
    );
    assert!(h.xreg(11) > h.xreg(10));
}

/// `h` on host time.
fn host_timed(mut h: Hart) -> Hart {
    h.set_host_clock(Some(vcpu::HostClock::starting_at(0)));
    h
}

/// Run until the guest's handler exits with an ECALL (at most a minute of host time).
fn until_trap(h: &mut Hart) -> GuestTrap {
    let start = std::time::Instant::now();
    loop {
        match h.run(1 << 20) {
            VcpuExit::BudgetExhausted => {
                assert!(start.elapsed().as_secs() < 60, "no interrupt after 60 s");
            }
            VcpuExit::GuestTrap(t) => return t,
            other => panic!("unexpected {other:?} at pc {:#x}", h.pc()),
        }
    }
}

/// With host time a hart alone runs long chunks that end before its timer deadline at the
/// guest's pace, and a read of `time` that finds the deadline reached ends the chunk: the
/// interrupt comes right after the first read of `time` that reaches the deadline, as it
/// did with short chunks. The guest spins on `time` against its deadline (2 ms of host
/// time ahead) and counts the reads at or past it that came back before the interrupt.
#[test]
fn the_host_timer_interrupts_before_the_guest_sees_its_deadline() {
    let body = [csrr(5, TIME), bltu(5, 11, -4), addi(9, 9, 1), jal(0, -12)];
    for jit in [true, false] {
        let mut h = host_timed(timer_guest(&body, jit));
        let deadline = h.mtime_now() + 20_000;
        h.set_xreg(11, deadline);
        h.set_guest_timer(deadline);
        let t = until_trap(&mut h);
        assert_eq!(t.cause, 10, "jit {jit}");
        assert_eq!(h.xreg(10), (1 << 63) | 5, "jit {jit}: VSTI");
        assert_eq!(h.xreg(9), 0, "jit {jit}: reads saw the deadline first");
        assert!(h.guest_time() >= deadline);
    }
}

/// In translated code too, a read of `time` that reaches the deadline ends the chunk: the
/// block it is in leaves right after it. The read is the second instruction of a block that
/// starts one instruction before the chunk's 4096th, which a chunk near a deadline lets run
/// whole (its slack), so that the read comes a chunk's worth of instructions after the host
/// clock was last read and reads it again; the deadline, a few ticks after the start, has
/// passed by then unless the host was slower (then the interrupt comes before the read and
/// nothing is told apart), so the test tries deadlines from 1 to 64 µs ahead.
#[test]
fn a_translated_read_of_host_time_at_the_deadline_leaves_its_block() {
    let body = [
        // 1 + 2 * 2047 = 4095 instructions, then the block: a no-op, the read, and a count
        // of reads at or past the deadline (in x11) that the guest went on from.
        addi(12, 0, 2047),
        addi(12, 12, -1),
        bne(12, 0, -4),
        addi(0, 0, 0),
        csrr(5, TIME),
        sltu(13, 5, 11),
        xori(13, 13, 1),
        add(9, 9, 13),
        jal(0, 0),
    ];
    for ahead in [10, 20, 40, 80, 160, 320, 640] {
        let mut h = host_timed(timer_guest(&body, true));
        // Once without a deadline, so that the blocks are translated beforehand.
        assert_eq!(h.run(10_000), VcpuExit::BudgetExhausted);
        h.set_pc(GUEST);
        h.set_xreg(9, 0);
        let deadline = h.mtime_now() + ahead;
        h.set_xreg(11, deadline);
        h.set_guest_timer(deadline);
        let t = until_trap(&mut h);
        assert_eq!((t.cause, h.xreg(10)), (10, (1 << 63) | 5), "{ahead} ticks");
        assert_eq!(
            h.xreg(9),
            0,
            "{ahead} ticks: the guest went on after reading the deadline"
        );
    }
}

#[test]
fn shared_clock_is_adopted_and_published_at_chunk_boundaries() {
    let clock = std::sync::Arc::new(vcpu::SharedClock::new());
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM_BASE), RAM_SIZE)]).unwrap();
    mem.write_obj(jal(0, 0), GuestAddress(GUEST)).unwrap();
    let config = HartConfig {
        shared_clock: Some(clock.clone()),
        ..HartConfig::default()
    };
    let mut h = Hart::new_guest(config, mem).unwrap();
    h.set_pc(GUEST);
    // Another hart is ahead: this one adopts its time, without counting instructions.
    clock.advance_to(1_000_000);
    assert_eq!(h.run(100), VcpuExit::BudgetExhausted);
    assert_eq!(h.executed(), 100);
    assert!(h.clock_slots() >= 1_000_100);
    assert_eq!(h.guest_time(), h.clock_slots() / vcpu::INSNS_PER_TICK);
    // This hart is ahead: it publishes its time at its next chunk boundary.
    h.run(5000);
    assert!(clock.now() >= 1_000_100 + 4096, "{}", clock.now());
    // Time never goes backward.
    assert_eq!(clock.advance_to(5), clock.now());
}

#[test]
fn mailbox_interrupts_and_flushes_are_taken_at_chunk_boundaries() {
    // vsie.SSIE, vsstatus.SIE (through the sie/sstatus aliases), then spin; the handler
    // spins at VSTVEC.
    let mut h = guest(
        &[
            addi(5, 0, 2),
            csrrs(0, 0x104, 5),
            csrrs(0, 0x100, 5),
            csrrw(0, 0x105, 6),
            jal(0, 0),
        ],
        &[jal(0, 0)],
    );
    h.set_xreg(6, VSTVEC);
    let mailbox = h.mailbox();
    assert_eq!(h.run(100), VcpuExit::BudgetExhausted);
    assert!(h.pc() < VSTVEC);
    // Not inside run: a flush request is complete at once (the hart flushes before it runs).
    let ticket = mailbox.request_flush();
    assert!(mailbox.flush_complete(ticket));
    mailbox.post_interrupts(1 << 2); // VSSIP
    assert!(mailbox.has_pending() && h.wakeup_pending());
    assert_eq!(h.run(100), VcpuExit::BudgetExhausted);
    assert_eq!(h.pc(), VSTVEC, "the software interrupt was taken");
    assert_eq!(h.virtual_interrupts() & (1 << 2), 1 << 2);
    assert!(!mailbox.has_pending());
    assert!(mailbox.flush_complete(ticket));
}
