//! pmu-virt on a hosted-mode hart: what the SBI PMU functions program into the hart's
//! counters, and what the guest then counts.

use pmu_virt::sbi::*;
use pmu_virt::{FwEvent, FwTallies, GuestPmu, PmuError, PmuPolicy};
use vcpu::{Hart, HartConfig, Vcpu};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const RAM: u64 = 0x8000_0000;
const NOP: u32 = 0x13;

/// A guest hart at the start of 64 KiB of NOPs.
fn setup(policy: PmuPolicy) -> (Hart, GuestMemoryMmap, GuestPmu, FwTallies) {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM), 1 << 16)]).unwrap();
    for i in 0..(1 << 14) {
        mem.write_obj(NOP, GuestAddress(RAM + 4 * i)).unwrap();
    }
    let mut hart = Hart::new_guest(HartConfig::default(), mem.clone()).unwrap();
    Vcpu::set_pc(&mut hart, RAM);
    let tallies = FwTallies::new(1);
    let pmu = GuestPmu::new(policy, 0, tallies.clone());
    pmu.prepare(&mut hart);
    (hart, mem, pmu, tallies)
}

fn call(
    pmu: &mut GuestPmu,
    hart: &mut Hart,
    mem: &GuestMemoryMmap,
    fid: u64,
    args: &[u64],
) -> Result<u64, PmuError> {
    let mut a = [0; 6];
    a[..args.len()].copy_from_slice(args);
    pmu.sbi_call(hart, mem, fid, a)
}

const HW: u64 = 0xffff_fffd;

#[test]
fn prepare_stops_hpm_counters_and_delegates_lcofi() {
    let (hart, _, _, _) = setup(PmuPolicy::on());
    assert_eq!(hart.host_csr(0x320), Ok(0xffff_fff8));
    assert_eq!(
        hart.host_csr(0x321),
        Ok(vcpu::pmu::MINH | vcpu::pmu::SINH | vcpu::pmu::UINH)
    );
    assert_ne!(hart.host_csr(0x603).unwrap() & 1 << 13, 0);
    let (hart, _, _, _) = setup(PmuPolicy::off());
    assert_eq!(hart.host_csr(0x320), Ok(0));
    assert_eq!(hart.host_csr(0x603).unwrap() & 1 << 13, 0);
}

#[test]
fn a_matched_counter_counts_the_guest_and_is_readable_by_it() {
    let (mut hart, mem, mut pmu, _) = setup(PmuPolicy::on());
    let flags = CFG_CLEAR_VALUE | CFG_AUTO_START;
    // cycle and instret run: the first free counter is 3.
    let idx = call(
        &mut pmu,
        &mut hart,
        &mem,
        COUNTER_CONFIG_MATCHING,
        &[0, HW, flags, 2],
    );
    assert_eq!(idx, Ok(3));
    assert_ne!(hart.host_csr(0x306).unwrap() & 8, 0, "mcounteren.HPM3");
    assert_ne!(hart.host_csr(0x606).unwrap() & 8, 0, "hcounteren.HPM3");
    Vcpu::run(&mut hart, 100);
    assert_eq!(hart.host_csr(0xb03), Ok(100));
    assert_eq!(
        call(&mut pmu, &mut hart, &mem, COUNTER_STOP, &[3, 1, STOP_RESET]),
        Ok(0)
    );
    Vcpu::run(&mut hart, 100);
    assert_eq!(hart.host_csr(0xb03), Ok(100));
    assert_eq!(
        hart.host_csr(0x606).unwrap() & 8,
        0,
        "reset revokes direct access"
    );
    // Configured counters are not matched again until reset.
    for want in [3, 4] {
        let idx = call(
            &mut pmu,
            &mut hart,
            &mem,
            COUNTER_CONFIG_MATCHING,
            &[3, 3, 0, 5],
        );
        assert_eq!(idx, Ok(want));
    }
    assert_eq!(
        call(
            &mut pmu,
            &mut hart,
            &mem,
            COUNTER_CONFIG_MATCHING,
            &[3, 3, 0, 5]
        ),
        Err(PmuError::NoMatchingCounter(5))
    );
}

#[test]
fn overflow_sets_of_and_start_clears_it() {
    let (mut hart, mem, mut pmu, _) = setup(PmuPolicy::on());
    call(
        &mut pmu,
        &mut hart,
        &mem,
        COUNTER_CONFIG_MATCHING,
        &[8, 1, 0, 2],
    )
    .unwrap();
    let start = [8, 1, START_SET_INIT_VALUE, u64::MAX - 9];
    call(&mut pmu, &mut hart, &mem, COUNTER_START, &start).unwrap();
    Vcpu::run(&mut hart, 20);
    call(&mut pmu, &mut hart, &mem, COUNTER_STOP, &[8, 1, 0]).unwrap();
    assert_ne!(hart.host_csr(0x328).unwrap() & vcpu::pmu::OF, 0);
    assert_ne!(hart.host_csr(0x344).unwrap() & 1 << 13, 0, "LCOFIP");
    let start = [8, 1, START_SET_INIT_VALUE, 1000];
    call(&mut pmu, &mut hart, &mem, COUNTER_START, &start).unwrap();
    assert_eq!(hart.host_csr(0x328).unwrap() & vcpu::pmu::OF, 0);
    Vcpu::run(&mut hart, 5);
    assert_eq!(hart.host_csr(0x328).unwrap() & vcpu::pmu::OF, 0);
    assert_eq!(hart.host_csr(0xb08), Ok(1005));
}

/// Regression (Linux `perf record -e cycles` got no samples): with Sscofpmf, cycles and
/// instructions matched over a set with free hpm counters go to one (only `mhpmevent` has
/// OF), so the counter overflows and raises LCOFI; without Sscofpmf, and when the set
/// names only the fixed counter, they stay on `mcycle`/`minstret`.
#[test]
fn cycles_and_instructions_prefer_an_overflowing_counter() {
    let (mut hart, mem, mut pmu, _) = setup(PmuPolicy::on());
    call(&mut pmu, &mut hart, &mem, COUNTER_STOP, &[0, 0b101, 0]).unwrap();
    let m = |pmu: &mut GuestPmu, hart: &mut Hart, set: u64, ev: u64| {
        call(pmu, hart, &mem, COUNTER_CONFIG_MATCHING, &[0, set, 0, ev])
    };
    assert_eq!(m(&mut pmu, &mut hart, HW, 1), Ok(3), "cycles");
    assert_eq!(m(&mut pmu, &mut hart, HW, 2), Ok(4), "instructions");
    assert_eq!(m(&mut pmu, &mut hart, 0b1, 1), Ok(0), "cycles on mcycle");
    assert_eq!(
        m(&mut pmu, &mut hart, 0b101, 2),
        Ok(2),
        "instructions on minstret"
    );
    // Counter 3 counts cycles and overflows.
    let start = [3, 1, START_SET_INIT_VALUE, u64::MAX - 9];
    call(&mut pmu, &mut hart, &mem, COUNTER_START, &start).unwrap();
    Vcpu::run(&mut hart, 20);
    call(&mut pmu, &mut hart, &mem, COUNTER_STOP, &[3, 1, 0]).unwrap();
    assert_eq!(
        hart.host_csr(0x323).unwrap() & 0xff,
        1,
        "mhpmevent3: cycles"
    );
    assert_ne!(hart.host_csr(0x323).unwrap() & vcpu::pmu::OF, 0);
    assert_ne!(hart.host_csr(0x344).unwrap() & 1 << 13, 0, "LCOFIP");

    let no_ovf = PmuPolicy {
        sscofpmf: false,
        ..PmuPolicy::on()
    };
    let (mut hart, mem2, mut pmu, _) = setup(no_ovf);
    call(&mut pmu, &mut hart, &mem2, COUNTER_STOP, &[0, 0b101, 0]).unwrap();
    let m = |pmu: &mut GuestPmu, hart: &mut Hart, ev: u64| {
        call(pmu, hart, &mem2, COUNTER_CONFIG_MATCHING, &[0, HW, 0, ev])
    };
    assert_eq!(m(&mut pmu, &mut hart, 1), Ok(0), "cycles without Sscofpmf");
    assert_eq!(
        m(&mut pmu, &mut hart, 2),
        Ok(2),
        "instructions without Sscofpmf"
    );
}

/// `PmuPolicy::snapshot` off: `snapshot_set_shmem` is SBI_ERR_NOT_SUPPORTED (an optional
/// function), so the snapshot flags of start and stop find no shared memory.
#[test]
fn without_the_snapshot_function_set_shmem_is_not_supported() {
    let policy = PmuPolicy {
        snapshot: false,
        ..PmuPolicy::on()
    };
    let (mut hart, mem, mut pmu, _) = setup(policy);
    let r = call(&mut pmu, &mut hart, &mem, SNAPSHOT_SET_SHMEM, &[RAM, 0, 0]);
    assert_eq!(r, Err(PmuError::SnapshotUnsupported));
    assert_eq!(r.unwrap_err().sbi_error(), ERR_NOT_SUPPORTED);
    let r = call(
        &mut pmu,
        &mut hart,
        &mem,
        COUNTER_STOP,
        &[0, 1, STOP_TAKE_SNAPSHOT],
    );
    assert_eq!(r, Err(PmuError::NoShmem));
}

#[test]
fn firmware_counters_follow_the_tallies() {
    let (mut hart, mem, mut pmu, tallies) = setup(PmuPolicy::on());
    tallies.record(0, FwEvent::SetTimer);
    let flags = CFG_CLEAR_VALUE | CFG_AUTO_START;
    let idx = call(
        &mut pmu,
        &mut hart,
        &mem,
        COUNTER_CONFIG_MATCHING,
        &[32, 0xffff, flags, 0xf0005],
    );
    assert_eq!(idx, Ok(32));
    tallies.record(0, FwEvent::SetTimer);
    tallies.record(0, FwEvent::SetTimer);
    assert_eq!(
        call(&mut pmu, &mut hart, &mem, COUNTER_FW_READ, &[32]),
        Ok(2)
    );
    call(&mut pmu, &mut hart, &mem, COUNTER_STOP, &[32, 1, 0]).unwrap();
    tallies.record(0, FwEvent::SetTimer);
    assert_eq!(
        call(&mut pmu, &mut hart, &mem, COUNTER_FW_READ, &[32]),
        Ok(2)
    );
    // A snapshot keeps counters and tallies.
    let state = pmu.snapshot();
    let other = FwTallies::new(1);
    let mut restored = GuestPmu::restore(&state, 0, other.clone()).unwrap();
    assert_eq!(restored.snapshot(), state);
    assert_eq!(other.get(0, FwEvent::SetTimer), 4);
    assert_eq!(
        call(&mut restored, &mut hart, &mem, COUNTER_FW_READ, &[32]),
        Ok(2)
    );
    let mut bad = state.clone();
    bad.counters.pop();
    assert!(GuestPmu::restore(&bad, 0, other).is_none());
}

#[test]
fn shared_memory_must_be_a_page_of_guest_ram() {
    let (mut hart, mem, mut pmu, _) = setup(PmuPolicy::on());
    let set = |pmu: &mut GuestPmu, hart: &mut Hart, lo: u64, hi: u64| {
        call(pmu, hart, &mem, SNAPSHOT_SET_SHMEM, &[lo, hi, 0]).map_err(|e| e.sbi_error())
    };
    assert_eq!(set(&mut pmu, &mut hart, RAM + 8, 0), Err(ERR_INVALID_PARAM));
    assert_eq!(set(&mut pmu, &mut hart, RAM, 1), Err(ERR_INVALID_ADDRESS));
    assert_eq!(
        set(&mut pmu, &mut hart, 0x1000, 0),
        Err(ERR_INVALID_ADDRESS)
    );
    // The last page of RAM fits; the page after it does not; nor does the top of memory.
    assert_eq!(set(&mut pmu, &mut hart, RAM + 0xf000, 0), Ok(0));
    assert_eq!(
        set(&mut pmu, &mut hart, RAM + 0x10000, 0),
        Err(ERR_INVALID_ADDRESS)
    );
    assert_eq!(
        set(&mut pmu, &mut hart, !0xfff, 0),
        Err(ERR_INVALID_ADDRESS)
    );
    assert_eq!(set(&mut pmu, &mut hart, u64::MAX, u64::MAX), Ok(0));
    assert_eq!(
        call(
            &mut pmu,
            &mut hart,
            &mem,
            COUNTER_STOP,
            &[0, 1, STOP_TAKE_SNAPSHOT]
        ),
        Err(PmuError::NoShmem)
    );
}

#[test]
fn without_a_pmu_no_counter_exists() {
    let (mut hart, mem, mut pmu, _) = setup(PmuPolicy::off());
    assert_eq!(
        call(&mut pmu, &mut hart, &mem, COUNTER_GET_INFO, &[0]),
        Err(PmuError::InvalidCounter(0))
    );
    assert_eq!(
        call(&mut pmu, &mut hart, &mem, COUNTER_GET_INFO, &[32]),
        Err(PmuError::InvalidCounter(32))
    );
}

#[test]
fn selective_lcofi_delivery_exits_and_is_passed_on_through_hvip() {
    use pmu_virt::{LcofiDelivery, LcofiOutcome};
    use vcpu::VcpuExit;
    assert_eq!("selective".parse(), Ok(LcofiDelivery::Selective));
    assert!("hvip"
        .parse::<LcofiDelivery>()
        .unwrap_err()
        .contains("direct or selective"));
    let policy = PmuPolicy {
        lcofi: LcofiDelivery::Selective,
        ..PmuPolicy::on()
    };
    let (mut hart, mem, mut pmu, _) = setup(policy);
    let lcofi = 1u64 << 13;
    assert_eq!(hart.host_csr(0x603).unwrap() & lcofi, 0, "hideleg");
    assert_eq!(hart.host_csr(0x608).unwrap() & lcofi, lcofi, "hvien");
    assert_eq!(hart.host_csr(0x104).unwrap() & lcofi, lcofi, "sie");
    // Nothing overflowed: a stray LCOFI is dropped.
    assert_eq!(pmu.take_lcofi(&mut hart), LcofiOutcome::Spurious);
    // Counter 3 counts instructions from 2^64 - 10: the 10th NOP wraps it.
    let idx = call(
        &mut pmu,
        &mut hart,
        &mem,
        COUNTER_CONFIG_MATCHING,
        &[3, 1, CFG_CLEAR_VALUE, 0x2, 0],
    )
    .unwrap();
    assert_eq!(idx, 3);
    call(
        &mut pmu,
        &mut hart,
        &mem,
        COUNTER_START,
        &[3, 1, START_SET_INIT_VALUE, u64::MAX - 9],
    )
    .unwrap();
    let exit = hart.run(1000);
    assert_eq!(exit, VcpuExit::HostInterrupt(13));
    assert_eq!(
        Vcpu::pc(&hart),
        RAM + 40,
        "the exit comes right after the 10th NOP"
    );
    assert_eq!(pmu.take_lcofi(&mut hart), LcofiOutcome::Injected);
    assert_eq!(
        hart.host_csr(0x144).unwrap() & lcofi,
        0,
        "sip.LCOFI cleared"
    );
    assert_eq!(
        hart.host_csr(0x645).unwrap() & lcofi,
        lcofi,
        "hvip.LCOFI set"
    );
    // The VMM's timer updates of hvip's VS-level lines leave it pending.
    Vcpu::set_virtual_interrupts(&mut hart, 1 << 6);
    Vcpu::set_virtual_interrupts(&mut hart, 0);
    assert_eq!(
        hart.host_csr(0x645).unwrap() & lcofi,
        lcofi,
        "hvip.LCOFI kept"
    );
    // The guest (vsstatus.SIE = 0) does not take it; the hart runs on without exiting.
    assert_eq!(hart.run(100), VcpuExit::BudgetExhausted);
}

/// Counter sets (SBI v2.0 sections 11.7-11.9; `pmu_virt` "Counter sets"): only an empty
/// mask or one reaching past `num_counters` (48), also through a wrapping base, is
/// `SBI_ERR_INVALID_PARAM`; indexes without a counter (1, withheld hpm counters) are holes
/// that matching passes over and start/stop skip, as are counters with no event.
#[test]
fn counter_sets_may_have_holes_but_not_reach_past_num_counters() {
    const ALL: u64 = (1 << 48) - 1;
    let (mut hart, mem, mut pmu, _) = setup(PmuPolicy::on());
    let c = |pmu: &mut GuestPmu, hart: &mut Hart, fid: u64, args: &[u64]| {
        call(pmu, hart, &mem, fid, args).map_err(|e| e.sbi_error())
    };
    let m = COUNTER_CONFIG_MATCHING;
    // Every counter from 0: a hardware event gets an hpm counter, a firmware one counter 32.
    assert_eq!(c(&mut pmu, &mut hart, m, &[0, ALL, 0, 5]), Ok(3));
    assert_eq!(c(&mut pmu, &mut hart, m, &[0, ALL, 0, 0xf0005]), Ok(32));
    // Only the hole at 1: a valid set where nothing can count the event.
    assert_eq!(
        c(&mut pmu, &mut hart, m, &[0, 0b10, 0, 5]),
        Err(ERR_NOT_SUPPORTED)
    );
    // SKIP_MATCH takes the lowest index of the mask, here the hole.
    let skip = CFG_SKIP_MATCH;
    assert_eq!(
        c(&mut pmu, &mut hart, m, &[0, 0b1010, skip, 5]),
        Err(ERR_NOT_SUPPORTED)
    );
    assert_eq!(c(&mut pmu, &mut hart, m, &[1, 0b100, skip, 5]), Ok(3));
    // Empty, past the end, wrapping: invalid.
    for (base, mask) in [
        (0, 0),
        (0, 1 << 48),
        (47, 0b11),
        (48, 1),
        (u64::MAX, 1),
        (u64::MAX, 0b10),
        (u64::MAX - 62, 1 << 63),
        (1 << 63, 1 << 63),
    ] {
        for (fid, args) in [
            (m, [base, mask, 0, 5]),
            (COUNTER_START, [base, mask, 0, 0]),
            (COUNTER_STOP, [base, mask, 0, 0]),
        ] {
            assert_eq!(
                c(&mut pmu, &mut hart, fid, &args),
                Err(ERR_INVALID_PARAM),
                "fid {fid}, base {base:#x}, mask {mask:#x}"
            );
        }
    }
    assert_eq!(c(&mut pmu, &mut hart, m, &[40, 0xff, 0, 0xf0005]), Ok(40));

    // Start and stop every counter: only the configured ones (0 and 2 run already).
    let ev4 = hart.host_csr(0x324);
    assert_eq!(
        c(&mut pmu, &mut hart, COUNTER_START, &[0, ALL, 0, 0]),
        Err(ERR_ALREADY_STARTED)
    );
    for i in [0, 2, 3, 32, 40] {
        assert!(pmu.counter(i).unwrap().started, "counter {i} started");
    }
    assert!(!pmu.counter(4).unwrap().started, "counter 4 has no event");
    assert!(!pmu.counter(33).unwrap().started, "counter 33 has no event");
    let inhibit = hart.host_csr(0x320).unwrap();
    assert_eq!(
        inhibit & 0b11101,
        0b10000,
        "mcountinhibit: 0, 2, 3 run, 4 not"
    );
    assert_eq!(hart.host_csr(0x324), ev4, "mhpmevent4 untouched");
    Vcpu::run(&mut hart, 50);
    assert_eq!(c(&mut pmu, &mut hart, COUNTER_STOP, &[0, ALL, 0]), Ok(0));
    assert_eq!(hart.host_csr(0x320).unwrap() & 0b11101, 0b11101);
    let counts = [0xb00, 0xb02, 0xb03].map(|n| hart.host_csr(n));
    assert_eq!(counts[1], Ok(50), "minstret counted the 50 NOPs");
    Vcpu::run(&mut hart, 50);
    assert_eq!([0xb00, 0xb02, 0xb03].map(|n| hart.host_csr(n)), counts);
    // The unconfigured counter 4 is still free.
    assert_eq!(c(&mut pmu, &mut hart, m, &[0, ALL, 0, 2]), Ok(4));
    assert_eq!(
        c(&mut pmu, &mut hart, COUNTER_STOP, &[0, ALL, STOP_RESET]),
        Err(ERR_ALREADY_STOPPED)
    );
    // Reset: all free again, and a second reset finds nothing in use but 0 and 2.
    assert_eq!(c(&mut pmu, &mut hart, m, &[0, ALL, 0, 2]), Ok(3));
    assert_eq!(c(&mut pmu, &mut hart, m, &[0, ALL, 0, 0xf0005]), Ok(32));

    // --pmu-counters 2: hpm counters 5-31 are holes of the full set.
    let (mut hart, mem2, mut pmu, _) = setup(PmuPolicy::with_hpm_counters(2).unwrap());
    let m2 = |pmu: &mut GuestPmu, hart: &mut Hart, ev: u64| {
        call(pmu, hart, &mem2, COUNTER_CONFIG_MATCHING, &[0, ALL, 0, ev]).map_err(|e| e.sbi_error())
    };
    assert_eq!(m2(&mut pmu, &mut hart, 5), Ok(3));
    assert_eq!(m2(&mut pmu, &mut hart, 5), Ok(4));
    assert_eq!(m2(&mut pmu, &mut hart, 5), Err(ERR_NOT_SUPPORTED));
}
