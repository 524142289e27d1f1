//! Deterministic fuzz of [`vmm::sbi::handle`]: hostile EIDs, FIDs and arguments against a fake
//! platform that checks every console transfer against guest memory.
//!
//! A fixed-seed xorshift generator drives tens of thousands of calls. For every call:
//! - nothing panics (the test profile keeps overflow checks on);
//! - a returned error is one of the SBI v2.0 standard codes (0 to -9,
//!   `SBI_ERR_NO_SHMEM`; -10 and below only appear in later versions of the spec);
//! - calls to functions the implementation does not provide return `SBI_ERR_NOT_SUPPORTED`;
//! - DBCN moves bytes only within one guest memory region, only from / to the buffer the
//!   guest named, consumes console input only when it lands in guest memory, and reports
//!   the number of bytes it actually moved;
//! - IPIs go only to existing harts and only when the call succeeds.
//!
//! A second fuzz, [`random_pmu_hsm_ipi_and_fence_calls_get_the_spec_answers`], drives the
//! PMU extension (a real `pmu_virt::GuestPmu` on a real hosted-mode hart, with three
//! policies: every counter and the snapshot shared memory, two hpm counters (holes), no
//! snapshot memory, and no PMU at all), HSM, IPI and RFENCE with several harts against a
//! fake platform that models the harts' HSM states, and checks each answer against the SBI
//! v2.0 text rather than the implementation: exactly which harts an IPI or a fence reaches
//! (and none when one selected hart does not exist), HSM state transitions and the
//! suspend-type ranges, every PMU counter-set, flag, event and shared-memory rule, the
//! counter chosen by `counter_config_matching` lying in the set, and guest memory changed
//! only inside the PMU snapshot page the guest set (a page of guest RAM).

use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use pmu_virt::sbi as psbi;
use test_support::XorShift;
use vmm::sbi::srst::{ResetRequest, ResetType};
use vmm::sbi::*;

const SEED: u64 = 0x5b1_f022_d00d_c0de;
const CALLS: usize = 60_000;

/// Guest memory: two adjacent regions (a buffer may lie in either but must not straddle
/// them, since they are separate host mappings) and one just below the top of the address
/// space (for overflow at the end of the address space).
const RAM: u64 = 0x8000_0000;
const RAM_SIZE: u64 = 0x2000;
const RAM2: u64 = RAM + RAM_SIZE;
const RAM2_SIZE: u64 = 0x1000;
const TOP: u64 = u64::MAX - 0x1fff;
const TOP_SIZE: u64 = 0x1000;
const REGIONS: [(u64, u64); 3] = [(RAM, RAM_SIZE), (RAM2, RAM2_SIZE), (TOP, TOP_SIZE)];

/// Every error code of SBI v2.0 (chapter 3, table "Standard SBI Errors").
const SBI_V2_ERRORS: std::ops::RangeInclusive<i64> = -9..=0;

/// The region holding all of `[addr, addr + len)` (`len` > 0), if one does.
fn region_of(addr: u64, len: u64) -> Option<(u64, u64)> {
    let last = addr.checked_add(len.checked_sub(1)?)?;
    REGIONS
        .iter()
        .copied()
        .find(|&(base, size)| addr >= base && last <= base + (size - 1))
}

struct FuzzEnv {
    harts: u64,
    current: u64,
    mem: GuestMemoryMmap,
    /// What guest memory should hold (region by region).
    shadow: Vec<Vec<u8>>,
    /// The call being handled (the fake checks console transfers against its buffer).
    call: SbiCall,
    /// Console output of the current call.
    written: Vec<u8>,
    /// Console input handed out during the current call.
    read: Vec<u8>,
    /// Next console input byte (a counter, so lost or duplicated bytes show).
    next_input: u8,
    /// How much input is pending, and how the console behaves for the next call.
    pending_input: usize,
    write_fails: bool,
    write_limit: usize,
    timer: Option<u64>,
    ipis: Vec<u64>,
    /// HSM states of the harts (hart ids up to 4095), as the platform keeps them.
    hsm: Vec<u64>,
    /// `hart_start` calls the platform saw in the current call.
    starts: Vec<(u64, u64, u64)>,
    /// Harts the current call fenced.
    fenced: Vec<Vec<u64>>,
    /// The PMU of hart 0 (every call is made on it) and its hart, when the VM has one.
    pmu: Option<(vcpu::Hart, pmu_virt::GuestPmu)>,
    /// The VM's firmware-event tallies (one vCPU: events of other harts are not counted).
    fw: pmu_virt::FwTallies,
}

impl FuzzEnv {
    fn new() -> FuzzEnv {
        let ranges: Vec<(GuestAddress, usize)> = REGIONS
            .iter()
            .map(|&(base, size)| (GuestAddress(base), size as usize))
            .collect();
        let mem = GuestMemoryMmap::from_ranges(&ranges).unwrap();
        let mut shadow = Vec::new();
        for (i, &(base, size)) in REGIONS.iter().enumerate() {
            let fill: Vec<u8> = (0..size).map(|j| (j as u8) ^ (i as u8 * 0x55)).collect();
            mem.write_slice(&fill, GuestAddress(base)).unwrap();
            shadow.push(fill);
        }
        FuzzEnv {
            harts: 1,
            current: 0,
            mem,
            shadow,
            call: SbiCall {
                eid: 0,
                fid: 0,
                args: [0; 6],
            },
            written: Vec::new(),
            read: Vec::new(),
            next_input: 0,
            pending_input: 0,
            write_fails: false,
            write_limit: usize::MAX,
            timer: None,
            ipis: Vec::new(),
            hsm: Vec::new(),
            starts: Vec::new(),
            fenced: Vec::new(),
            pmu: None,
            fw: pmu_virt::FwTallies::new(1),
        }
        .with_hsm()
    }

    /// Hart 0 started, every other hart id stopped.
    fn with_hsm(mut self) -> FuzzEnv {
        self.hsm = (0..4096)
            .map(|h| {
                if h == 0 {
                    hsm::STATE_STARTED
                } else {
                    hsm::STATE_STOPPED
                }
            })
            .collect();
        self
    }

    /// A PMU with `policy` on a fresh hosted-mode hart (as `vmm run` prepares it).
    fn set_pmu(&mut self, policy: Option<pmu_virt::PmuPolicy>) {
        self.fw = pmu_virt::FwTallies::new(1);
        self.pmu = policy.map(|policy| {
            // The hart wants one RAM region; the PMU's shared memory is `self.mem`.
            let ram = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM), 0x1000)]).unwrap();
            let mut hart = vcpu::Hart::new_guest(vcpu::HartConfig::default(), ram).unwrap();
            let pmu = pmu_virt::GuestPmu::new(policy, 0, self.fw.clone());
            pmu.prepare(&mut hart);
            (hart, pmu)
        });
    }

    /// The DBCN buffer of the current call; panics unless it lies in one region, which is
    /// the fake's "access outside guest RAM" detector.
    fn checked_buffer(&self, n: usize) -> (u64, u64) {
        let [len, lo, hi, ..] = self.call.args;
        assert!(
            self.call.eid == eid::DBCN && matches!(self.call.fid, 0 | 1),
            "console buffer transfer from a non-DBCN-buffer call {:x?}",
            self.call
        );
        assert_eq!(
            hi, 0,
            "DBCN used a buffer with base_addr_hi set: {:x?}",
            self.call
        );
        assert!(
            n as u64 <= len,
            "DBCN moved {n} bytes for a {len}-byte buffer: {:x?}",
            self.call
        );
        if n > 0 {
            assert!(
                region_of(lo, len).is_some(),
                "DBCN touched a buffer outside guest RAM or across regions: {:x?}",
                self.call
            );
        }
        (lo, n as u64)
    }

    /// Panics when guest memory differs from the shadow.
    fn check_memory(&self) {
        for (i, &(base, size)) in REGIONS.iter().enumerate() {
            let mut now = vec![0u8; size as usize];
            self.mem.read_slice(&mut now, GuestAddress(base)).unwrap();
            if now != self.shadow[i] {
                let at = now.iter().zip(&self.shadow[i]).position(|(a, b)| a != b);
                panic!(
                    "guest memory changed unexpectedly at {:#x} after {:x?}",
                    base + at.unwrap_or(0) as u64,
                    self.call
                );
            }
        }
    }
}

impl SbiEnv for FuzzEnv {
    fn hart_count(&self) -> u64 {
        self.harts
    }
    fn current_hart(&self) -> u64 {
        self.current
    }
    fn set_timer(&mut self, deadline: u64) {
        self.timer = Some(deadline);
    }
    fn hart_start(&mut self, hart: u64, start_addr: u64, opaque: u64) -> SbiRet {
        assert!(
            hart < self.harts,
            "hart_start of hart {hart} of {}",
            self.harts
        );
        self.starts.push((hart, start_addr, opaque));
        let state = &mut self.hsm[hart as usize];
        if *state == hsm::STATE_STOPPED {
            *state = hsm::STATE_START_PENDING;
            SbiRet::ok(0)
        } else {
            SbiRet::err(SBI_ERR_ALREADY_AVAILABLE)
        }
    }
    fn hart_status(&self, hart: u64) -> u64 {
        assert!(
            hart < self.harts,
            "hart_status of hart {hart} of {}",
            self.harts
        );
        self.hsm[hart as usize]
    }
    fn remote_fence(&mut self, harts: &[u64]) {
        for &h in harts {
            assert!(h < self.harts, "fence for hart {h} of {}", self.harts);
        }
        self.fenced.push(harts.to_vec());
    }
    fn has_pmu(&self) -> bool {
        self.pmu.is_some()
    }
    fn pmu_call(&mut self, fid: u64, args: [u64; 6]) -> SbiRet {
        let (hart, pmu) = self.pmu.as_mut().expect("pmu_call without a PMU");
        match pmu.sbi_call(hart, &self.mem, fid, args) {
            Ok(value) => SbiRet::ok(value),
            Err(e) => SbiRet::err(e.sbi_error()),
        }
    }
    fn firmware_event(&mut self, hart: u64, event: FwEvent) {
        assert!(
            hart < self.harts,
            "firmware event {event:?} on hart {hart} of {}",
            self.harts
        );
        if hart == 0 {
            self.fw.record(0, event);
        }
    }
    fn send_ipi(&mut self, hart: u64) {
        assert!(hart < self.harts, "IPI to hart {hart} of {}", self.harts);
        self.ipis.push(hart);
    }
    fn memory(&self) -> &GuestMemoryMmap {
        &self.mem
    }
    fn console_write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.call.eid == eid::DBCN && self.call.fid == 0 {
            let (lo, n) = self.checked_buffer(bytes.len());
            let mut expect = vec![0u8; n as usize];
            self.mem.read_slice(&mut expect, GuestAddress(lo)).unwrap();
            assert_eq!(
                bytes,
                &expect[..],
                "console_write bytes are not the guest buffer"
            );
        } else {
            assert!(
                self.call.eid == eid::DBCN && self.call.fid == 2 && bytes.len() == 1,
                "console write of {} bytes from {:x?}",
                bytes.len(),
                self.call
            );
        }
        if self.write_fails {
            return Err(std::io::Error::other("fake console failure"));
        }
        let n = bytes.len().min(self.write_limit);
        self.written.extend_from_slice(&bytes[..n]);
        Ok(n)
    }
    fn console_read(&mut self, buf: &mut [u8]) -> usize {
        let _ = self.checked_buffer(0);
        let n = buf.len().min(self.pending_input);
        for b in &mut buf[..n] {
            *b = self.next_input;
            self.read.push(self.next_input);
            self.next_input = self.next_input.wrapping_add(1);
        }
        self.pending_input -= n;
        n
    }
}

/// Implemented extensions with their neighbours, the legacy range and hostile values.
fn random_eid(rng: &mut XorShift) -> u64 {
    let base = rng.pick(EXTENSIONS);
    match rng.below(10) {
        0..=4 => base,
        5 => base.wrapping_add(rng.pick(&[1u64, u64::MAX, 0x1_0000_0000, 0xffff_ffff_0000_0000])),
        6 => rng.below(0x10),
        7 => rng.pick(&[
            0x11,
            0x0800_0000,
            0x0900_0000,
            0x0a00_0000,
            0x4e41_4350,
            0x5043_4d50,
        ]),
        8 => rng.pick(&[u64::MAX, u64::MAX - 1, 1 << 63, 0xffff_ffff, 0x8000_0000]),
        _ => rng.next(),
    }
}

fn random_fid(rng: &mut XorShift) -> u64 {
    match rng.below(8) {
        0..=4 => rng.below(8),
        5 => rng.pick(&[u64::MAX, 1 << 32, 0xffff_ffff, 1 << 63, 0x8000_0000]),
        6 => rng.below(0x100),
        _ => rng.next(),
    }
}

/// Zero, all ones, RAM edges, sizes around the chunk limit, hart masks and bases, reset
/// types and reasons, and random words.
fn random_arg(rng: &mut XorShift) -> u64 {
    let edges = [
        RAM,
        RAM - 1,
        RAM + 1,
        RAM + RAM_SIZE - 1,
        RAM + RAM_SIZE,
        RAM2 + RAM2_SIZE - 1,
        RAM2 + RAM2_SIZE,
        TOP,
        TOP + TOP_SIZE - 1,
        TOP + TOP_SIZE,
        u64::MAX - 4,
        0,
        0x1000,
    ];
    let sizes = [
        0,
        1,
        2,
        7,
        0x100,
        RAM_SIZE,
        RAM_SIZE + 1,
        dbcn::MAX_CHUNK - 1,
        dbcn::MAX_CHUNK,
        dbcn::MAX_CHUNK + 1,
        1 << 32,
        1 << 63,
        u64::MAX,
        u64::MAX - 1,
    ];
    match rng.below(12) {
        0 => 0,
        1 => u64::MAX,
        2 => rng.pick(&edges),
        3 => rng
            .pick(&edges)
            .wrapping_add(rng.below(0x40))
            .wrapping_sub(0x20),
        4 => RAM + rng.below(RAM_SIZE + RAM2_SIZE + 0x40),
        5 => rng.pick(&sizes),
        6 => rng.below(0x200),
        // hart_mask_base / hart ids
        7 => rng.pick(&[
            u64::MAX,
            u64::MAX - 1,
            u64::MAX - 63,
            1 << 63,
            63,
            64,
            65,
            4095,
        ]),
        // hart masks
        8 => rng.pick(&[1, 2, 3, 1 << 63, u64::MAX, 0x8000_0000_0000_0001]),
        // suspend / reset types and reasons
        9 => rng.pick(&[
            0x8000_0000,
            0x0fff_ffff,
            0x1000_0000,
            0x7fff_ffff,
            0x8fff_ffff,
            0x9000_0000,
            0xdfff_ffff,
            0xe000_0000,
            0xf000_0000,
            0xffff_ffff,
            0xffff_ffff_8000_0000,
            0x1_0000_0000,
            3,
        ]),
        10 => rng.next() as u32 as u64,
        _ => rng.next(),
    }
}

/// Whether this SBI implementation provides `fid` of extension `eid`.
fn implemented(eid: u64, fid: u64) -> bool {
    match eid {
        eid::BASE => fid <= 6,
        eid::TIME | eid::IPI | eid::SRST => fid == 0,
        eid::RFENCE => fid <= 2,
        eid::HSM => fid <= 3,
        eid::DBCN => fid <= 2,
        _ => false,
    }
}

fn one_call(rng: &mut XorShift, env: &mut FuzzEnv, i: usize) -> (SbiCall, SbiOutcome) {
    let mut args = [0u64; 6];
    for a in &mut args {
        *a = random_arg(rng);
    }
    let eid = random_eid(rng);
    if eid == eid::DBCN && rng.below(2) == 0 {
        // A plausible buffer (small, in or near guest memory), so that transfers happen.
        args[0] = rng.pick(&[0, 1, 2, 16, 0x100, 0x1000, RAM_SIZE, RAM_SIZE + 1]);
        args[1] = match rng.below(3) {
            0 => RAM + rng.below(RAM_SIZE + RAM2_SIZE + 0x40),
            1 => TOP + rng.below(TOP_SIZE + 0x40),
            _ => random_arg(rng),
        };
        args[2] = if rng.below(8) == 0 {
            random_arg(rng)
        } else {
            0
        };
    }
    let call = SbiCall {
        eid,
        fid: random_fid(rng),
        args,
    };
    env.harts = rng.pick(&[1, 1, 1, 2, 3, 64, 65, 4096]);
    env.current = rng.below(env.harts);
    env.call = call;
    env.written.clear();
    env.read.clear();
    env.ipis.clear();
    env.timer = None;
    env.pending_input = rng.pick(&[0, 0, 1, 3, 100, 70_000]);
    env.write_fails = rng.below(16) == 0;
    env.write_limit = rng.pick(&[usize::MAX, usize::MAX, 0, 1, 5]);
    let input_before = env.next_input;

    let outcome = handle(&call, env);
    let ctx = format!("call #{i}: {call:x?} (harts {}) -> {outcome:x?}", env.harts);

    match outcome {
        SbiOutcome::Return(r) => {
            assert!(
                SBI_V2_ERRORS.contains(&r.error),
                "non-SBI-v2.0 error code: {ctx}"
            );
            if !implemented(call.eid, call.fid) {
                assert_eq!(r.error, SBI_ERR_NOT_SUPPORTED, "unimplemented: {ctx}");
            }
            if r.error != SBI_SUCCESS {
                assert!(env.ipis.is_empty(), "IPIs sent by a failing call: {ctx}");
            }
        }
        SbiOutcome::HartStopped => {
            assert_eq!((call.eid, call.fid), (eid::HSM, 1), "{ctx}");
        }
        SbiOutcome::Reset(ResetRequest { kind, reason }) => {
            assert_eq!((call.eid, call.fid), (eid::SRST, 0), "{ctx}");
            let expect = match call.args[0] as u32 {
                0 => ResetType::Shutdown,
                1 => ResetType::ColdReboot,
                2 => ResetType::WarmReboot,
                _ => panic!("reset for a reserved type: {ctx}"),
            };
            assert_eq!(kind, expect, "{ctx}");
            assert_eq!(u64::from(reason), call.args[1] & 0xffff_ffff, "{ctx}");
        }
    }

    // Only DBCN moves console data, and it reports exactly what it moved.
    let ret = match outcome {
        SbiOutcome::Return(r) => Some(r),
        _ => None,
    };
    if call.eid == eid::DBCN && call.fid == 0 {
        let r = ret.unwrap();
        if r.error == SBI_SUCCESS {
            assert_eq!(r.value, env.written.len() as u64, "write count: {ctx}");
            assert!(r.value <= dbcn::MAX_CHUNK, "{ctx}");
        } else {
            assert!(env.written.is_empty(), "failed write wrote: {ctx}");
        }
    } else if call.eid == eid::DBCN && call.fid == 2 {
        assert!(env.written.len() <= 1, "{ctx}");
    } else {
        assert!(env.written.is_empty(), "console output from {ctx}");
    }
    if call.eid == eid::DBCN && call.fid == 1 && ret.is_some_and(|r| r.error == SBI_SUCCESS) {
        let r = ret.unwrap();
        assert_eq!(r.value, env.read.len() as u64, "read count: {ctx}");
        // The bytes taken from the console are now in the guest's buffer.
        let (lo, n) = (call.args[1], env.read.len() as u64);
        if n > 0 {
            let (base, _) = region_of(lo, n).expect("checked by the fake");
            let region = REGIONS.iter().position(|&(b, _)| b == base).unwrap();
            let off = (lo - base) as usize;
            env.shadow[region][off..off + n as usize].copy_from_slice(&env.read);
        }
    } else {
        assert!(
            env.read.is_empty(),
            "console input consumed and lost by {ctx}"
        );
        assert_eq!(env.next_input, input_before);
    }
    env.check_memory();

    if env.timer.is_some() {
        assert_eq!((call.eid, call.fid), (eid::TIME, 0), "{ctx}");
        assert_eq!(env.timer, Some(call.args[0]), "{ctx}");
    }
    if !env.ipis.is_empty() {
        assert_eq!((call.eid, call.fid), (eid::IPI, 0), "{ctx}");
    }
    (call, outcome)
}

#[test]
fn random_sbi_calls_are_answered_within_the_spec() {
    let mut rng = XorShift(SEED);
    let mut env = FuzzEnv::new();
    // The fuzz is only as good as its coverage: every implemented (EID, FID) pair,
    // successful DBCN transfers both ways and both non-returning outcomes must come up.
    let mut seen = std::collections::HashSet::new();
    let mut dbcn_moved = [0usize; 2];
    let mut ends = [0usize; 2];
    for i in 0..CALLS {
        let (call, outcome) = one_call(&mut rng, &mut env, i);
        if implemented(call.eid, call.fid) {
            seen.insert((call.eid, call.fid));
        }
        match outcome {
            SbiOutcome::Return(r) if call.eid == eid::DBCN && call.fid <= 1 => {
                if r.error == SBI_SUCCESS && r.value > 0 {
                    dbcn_moved[call.fid as usize] += 1;
                }
            }
            SbiOutcome::Return(_) => {}
            SbiOutcome::HartStopped => ends[0] += 1,
            SbiOutcome::Reset(_) => ends[1] += 1,
        }
    }
    let all: usize = EXTENSIONS
        .iter()
        .map(|&e| (0..8).filter(|&f| implemented(e, f)).count())
        .sum();
    assert_eq!(seen.len(), all, "covered only {seen:x?}");
    assert!(
        dbcn_moved.iter().all(|&n| n >= 20),
        "successful DBCN writes/reads: {dbcn_moved:?}"
    );
    assert!(ends.iter().all(|&n| n > 0), "hart stops / resets: {ends:?}");
}

/// The harts `(hart_mask, hart_mask_base)` selects among `harts` (SBI v2.0 section 3.2),
/// written from the spec's text: `None` when a selected hart id does not exist.
fn spec_selection(mask: u64, base: u64, harts: u64) -> Option<Vec<u64>> {
    if base == u64::MAX {
        return Some((0..harts).collect());
    }
    let mut out = Vec::new();
    for bit in 0..64u64 {
        if mask >> bit & 1 == 1 {
            let id = u128::from(base) + u128::from(bit);
            if id >= u128::from(harts) {
                return None;
            }
            out.push(id as u64);
        }
    }
    Some(out)
}

/// Arguments for PMU calls: counter bases and masks (holes, past the end, wrapping),
/// flags, event indexes of every type and shared-memory addresses (pages of each region,
/// misaligned, past the end, `-1`).
fn pmu_args(rng: &mut XorShift, fid: u64) -> [u64; 6] {
    let base = rng.pick(&[
        0u64,
        0,
        1,
        2,
        3,
        5,
        31,
        32,
        40,
        47,
        48,
        63,
        64,
        u64::MAX,
        u64::MAX - 3,
    ]);
    let mask = match rng.below(6) {
        0 => rng.pick(&[1u64, 2, 3, 0b101, 0x8000_0000, 1 << 15]),
        1 => (1 << 48) - 1,
        2 => rng.pick(&[0, u64::MAX, 1 << 63, (1 << 49) - 1]),
        3 => 1 << rng.below(64),
        _ => rng.next() & rng.next(),
    };
    let flags = match rng.below(4) {
        0 => 0,
        1 => rng.below(0x200),
        2 => 1 << rng.below(10),
        _ => rng.next(),
    };
    let event = match rng.below(8) {
        0 => rng.below(12),                      // general, 1-10 defined
        1 => 0x1_0000 | rng.below(0x40),         // cache
        2 => 0x2_0000,                           // raw
        3 => 0xf_0000 | rng.below(24),           // firmware
        4 => 0xf_ffff,                           // firmware, platform specific
        5 => rng.below(16) << 16 | rng.below(4), // any type
        6 => rng.pick(&[0, u64::MAX, 1 << 32, 0x3_0000]),
        _ => rng.next(),
    };
    let any = rng.next();
    let data = rng.pick(&[0u64, 1, 2, 0x1f, u64::MAX, 1 << 48, any]);
    let shmem = match rng.below(7) {
        0 => RAM + 0x1000 * rng.below(2),
        1 => RAM2,
        2 => TOP,
        3 => RAM + rng.below(RAM_SIZE),
        4 => u64::MAX,
        5 => rng.pick(&[RAM2 + RAM2_SIZE, TOP + TOP_SIZE, 0, RAM - 0x1000]),
        _ => rng.next(),
    };
    match fid {
        psbi::COUNTER_GET_INFO | psbi::COUNTER_FW_READ | psbi::COUNTER_FW_READ_HI => {
            let idx = rng.pick(&[0u64, 1, 2, 3, 4, 30, 31, 32, 33, 47, 48, 64, u64::MAX]);
            [idx, rng.next(), 0, 0, 0, 0]
        }
        psbi::COUNTER_CONFIG_MATCHING => [base, mask, flags, event, data, rng.next()],
        psbi::COUNTER_START => [base, mask, flags & 7, rng.next(), 0, 0],
        psbi::COUNTER_STOP => [base, mask, flags & 7, 0, 0, 0],
        psbi::SNAPSHOT_SET_SHMEM => {
            let hi = if shmem == u64::MAX || rng.below(6) == 0 {
                rng.pick(&[0, u64::MAX, 1])
            } else {
                0
            };
            [
                shmem,
                hi,
                if rng.below(8) == 0 { flags } else { 0 },
                0,
                0,
                0,
            ]
        }
        _ => [base, mask, flags, event, data, rng.next()],
    }
}

/// The counters `(base, mask)` names, when the set is valid: not empty and every index
/// below 48 (SBI v2.0 sections 11.7-11.9).
fn pmu_set(base: u64, mask: u64) -> Option<Vec<u64>> {
    if mask == 0 {
        return None;
    }
    (0..64u64)
        .filter(|b| mask >> b & 1 == 1)
        .map(|b| base.checked_add(b).filter(|&i| i < 48))
        .collect()
}

/// PMU, HSM, IPI and RFENCE calls with several harts, each answer checked against the spec.
#[test]
fn random_pmu_hsm_ipi_and_fence_calls_get_the_spec_answers() {
    const PMU_CALLS: usize = 40_000;
    let mut rng = XorShift(SEED ^ 0x0050_4d55);
    let mut env = FuzzEnv::new();
    let policies = [
        Some(pmu_virt::PmuPolicy::on()),
        pmu_virt::PmuPolicy::with_hpm_counters(2).map(|p| pmu_virt::PmuPolicy {
            snapshot: false,
            ..p
        }),
        None,
    ];
    let mut shmem: Option<u64> = None;
    // Coverage: successes per (eid, fid), configured counters, shared-memory writes.
    let mut ok = std::collections::BTreeMap::<(u64, u64), usize>::new();
    let mut codes = std::collections::BTreeSet::new();
    let mut shmem_writes = 0;
    for i in 0..PMU_CALLS {
        if i % 10_000 == 0 {
            let policy = policies[(i / 10_000) % policies.len()];
            env.set_pmu(policy);
            shmem = None;
        }
        env.harts = rng.pick(&[2, 3, 4, 8, 64, 65]);
        env.current = rng.below(env.harts);
        // The platform takes pending starts in between calls.
        for s in &mut env.hsm {
            if *s == hsm::STATE_START_PENDING && rng.below(2) == 0 {
                *s = hsm::STATE_STARTED;
            }
        }
        let eid = rng.pick(&[
            eid::PMU,
            eid::PMU,
            eid::PMU,
            eid::HSM,
            eid::IPI,
            eid::RFENCE,
        ]);
        let fid = match eid {
            eid::PMU => {
                let any = rng.next();
                rng.pick(&[0u64, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6, 7, 7, 8, any])
            }
            _ => rng.below(8),
        };
        let args = match eid {
            eid::PMU => pmu_args(&mut rng, fid),
            _ => {
                let mut a = [0u64; 6];
                for x in &mut a {
                    *x = random_arg(&mut rng);
                }
                if rng.below(2) == 0 {
                    a[0] = rng.below(env.harts + 2);
                    a[1] = rng.pick(&[0, 1, 2, u64::MAX, 60, 63]);
                }
                if eid == eid::HSM && fid == 3 && rng.below(2) == 0 {
                    a[0] = rng.pick(&[0, 1, 0x0fff_ffff, 0x1000_0000, 0x7fff_ffff]);
                }
                a
            }
        };
        let call = SbiCall { eid, fid, args };
        env.call = call;
        env.ipis.clear();
        env.starts.clear();
        env.fenced.clear();
        let hsm_before = env.hsm.clone();
        let mem_before: Vec<Vec<u8>> = env.shadow.clone();
        let counters_before: Vec<pmu_virt::CounterState> = env
            .pmu
            .as_ref()
            .map(|(_, p)| (0..48).map(|c| *p.counter(c).unwrap()).collect())
            .unwrap_or_default();

        let outcome = handle(&call, &mut env);
        let ctx = format!("call #{i}: {call:x?} (harts {}) -> {outcome:x?}", env.harts);
        let r = match outcome {
            SbiOutcome::Return(r) => r,
            SbiOutcome::HartStopped => {
                assert_eq!((eid, fid), (eid::HSM, 1), "{ctx}");
                continue;
            }
            SbiOutcome::Reset(_) => panic!("reset from {ctx}"),
        };
        assert!(
            SBI_V2_ERRORS.contains(&r.error),
            "non-SBI-v2.0 error code: {ctx}"
        );
        codes.insert((eid, r.error));
        if r.error == SBI_SUCCESS {
            *ok.entry((eid, fid)).or_default() += 1;
        }
        let invalid = SbiRet::err(SBI_ERR_INVALID_PARAM);
        match (eid, fid) {
            (eid::IPI, 0) | (eid::RFENCE, 0..=2) => {
                let want = spec_selection(args[0], args[1], env.harts);
                let got = if eid == eid::IPI {
                    (!env.ipis.is_empty() || r.error == SBI_SUCCESS).then(|| env.ipis.clone())
                } else {
                    env.fenced.first().cloned()
                };
                match want {
                    Some(harts) => {
                        assert_eq!(r, SbiRet::ok(0), "{ctx}");
                        assert_eq!(got, Some(harts), "{ctx}");
                    }
                    None => {
                        assert_eq!(r, invalid, "{ctx}");
                        assert!(env.ipis.is_empty() && env.fenced.is_empty(), "{ctx}");
                    }
                }
            }
            (eid::HSM, 0) => {
                let h = args[0];
                if h >= env.harts {
                    assert_eq!(r, invalid, "{ctx}");
                    assert!(env.starts.is_empty(), "{ctx}");
                } else {
                    assert_eq!(env.starts, vec![(h, args[1], args[2])], "{ctx}");
                    if hsm_before[h as usize] == hsm::STATE_STOPPED {
                        assert_eq!(r, SbiRet::ok(0), "{ctx}");
                        assert_eq!(env.hsm[h as usize], hsm::STATE_START_PENDING, "{ctx}");
                    } else {
                        assert_eq!(r, SbiRet::err(SBI_ERR_ALREADY_AVAILABLE), "{ctx}");
                        assert_eq!(env.hsm, hsm_before, "{ctx}");
                    }
                }
            }
            (eid::HSM, 2) => match hsm_before.get(args[0] as usize) {
                Some(&state) if args[0] < env.harts => {
                    assert_eq!(r, SbiRet::ok(state), "{ctx}")
                }
                _ => assert_eq!(r, invalid, "{ctx}"),
            },
            (eid::HSM, 3) => {
                // SBI v2.0 table 41: 0 default retentive; 0x10000000-0x7fffffff and
                // 0x90000000-0xffffffff platform specific; 0x80000000 default
                // non-retentive; everything else reserved.
                let t = args[0];
                let want = match t {
                    0 => SbiRet::ok(0),
                    0x1000_0000..=0x7fff_ffff | 0x8000_0000 | 0x9000_0000..=0xffff_ffff => {
                        SbiRet::err(SBI_ERR_NOT_SUPPORTED)
                    }
                    _ => invalid,
                };
                assert_eq!(r, want, "{ctx}");
            }
            (eid::PMU, _) => {
                check_pmu_answer(&env, &call, r, &counters_before, shmem, &ctx);
                if fid == psbi::SNAPSHOT_SET_SHMEM && r.error == SBI_SUCCESS {
                    shmem = (args[0] != u64::MAX).then_some(args[0]);
                }
                // Guest memory changed only inside the snapshot page the guest set.
                for (region, &(base, size)) in REGIONS.iter().enumerate() {
                    let mut now = vec![0u8; size as usize];
                    env.mem.read_slice(&mut now, GuestAddress(base)).unwrap();
                    for (off, (a, b)) in now.iter().zip(&mem_before[region]).enumerate() {
                        if a != b {
                            let at = base + off as u64;
                            assert!(
                                shmem.is_some_and(|s| at >= s && at - s < psbi::SHMEM_SIZE),
                                "guest memory at {at:#x} changed outside the PMU snapshot \
                                 page {shmem:x?}: {ctx}"
                            );
                            shmem_writes += 1;
                        }
                    }
                    env.shadow[region] = now;
                }
            }
            _ => {
                if !implemented(eid, fid) {
                    assert_eq!(r.error, SBI_ERR_NOT_SUPPORTED, "{ctx}");
                }
            }
        }
        if eid != eid::HSM || fid != 0 {
            assert_eq!(env.hsm, hsm_before, "HSM states changed by {ctx}");
        }
        if eid != eid::PMU {
            env.check_memory();
        }
    }
    // Every PMU function succeeded at least once, and failed with each of its kinds.
    for fid in 0..=7 {
        assert!(
            ok.get(&(eid::PMU, fid)).is_some_and(|&n| n > 0),
            "PMU fid {fid}: {ok:?}"
        );
    }
    for code in [
        SBI_ERR_NOT_SUPPORTED,
        SBI_ERR_INVALID_PARAM,
        SBI_ERR_INVALID_ADDRESS,
        SBI_ERR_ALREADY_STARTED,
        SBI_ERR_ALREADY_STOPPED,
        SBI_ERR_NO_SHMEM,
    ] {
        assert!(
            codes.contains(&(eid::PMU, code)),
            "PMU never answered {code}: {codes:?}"
        );
    }
    for (e, f) in [
        (eid::HSM, 0),
        (eid::HSM, 2),
        (eid::IPI, 0),
        (eid::RFENCE, 1),
    ] {
        assert!(
            ok.get(&(e, f)).is_some_and(|&n| n > 10),
            "({e:#x}, {f}): {ok:?}"
        );
    }
    assert!(
        shmem_writes > 0,
        "no counter_stop ever wrote the snapshot page"
    );
}

/// Checks one PMU answer against SBI v2.0 chapter 11 (`before`: the counters before the
/// call; `shmem`: the snapshot page set before it).
fn check_pmu_answer(
    env: &FuzzEnv,
    call: &SbiCall,
    r: SbiRet,
    before: &[pmu_virt::CounterState],
    shmem: Option<u64>,
    ctx: &str,
) {
    let Some((_, pmu)) = env.pmu.as_ref() else {
        assert_eq!(r, SbiRet::err(SBI_ERR_NOT_SUPPORTED), "no PMU: {ctx}");
        return;
    };
    let policy = pmu.policy();
    let exists = |idx: u64| match idx {
        0..=31 => policy.hw_mask() >> idx & 1 == 1,
        32..=47 => true,
        _ => false,
    };
    let invalid = SbiRet::err(SBI_ERR_INVALID_PARAM);
    let [a0, a1, a2, a3, ..] = call.args;
    match call.fid {
        psbi::NUM_COUNTERS => assert_eq!(r, SbiRet::ok(48), "{ctx}"),
        psbi::COUNTER_GET_INFO => {
            if !exists(a0) {
                assert_eq!(r, invalid, "{ctx}");
            } else if a0 >= 32 {
                assert_eq!(r, SbiRet::ok(1 << 63), "firmware counter info: {ctx}");
            } else {
                // CSR 0xC00 + i, width - 1 = 63, type hardware.
                assert_eq!(r, SbiRet::ok((0xc00 + a0) | (63 << 12)), "{ctx}");
            }
        }
        psbi::COUNTER_FW_READ | psbi::COUNTER_FW_READ_HI => {
            if (32..48).contains(&a0) {
                assert_eq!(r.error, SBI_SUCCESS, "{ctx}");
                if call.fid == psbi::COUNTER_FW_READ_HI {
                    assert_eq!(r.value, 0, "RV64: the high half is 0: {ctx}");
                }
            } else {
                assert_eq!(r, invalid, "{ctx}");
            }
        }
        psbi::COUNTER_CONFIG_MATCHING => {
            let set = pmu_set(a0, a1);
            if a2 >> 8 != 0 || set.is_none() {
                assert_eq!(r, invalid, "{ctx}");
                return;
            }
            if r.error == SBI_SUCCESS {
                let idx = r.value;
                assert!(
                    set.unwrap().contains(&idx) && exists(idx),
                    "chosen {idx}: {ctx}"
                );
                let c = pmu.counter(idx as usize).unwrap();
                assert!(c.event.is_some(), "counter {idx} not configured: {ctx}");
                if a2 & psbi::CFG_AUTO_START != 0 {
                    assert!(c.started, "AUTO_START left counter {idx} stopped: {ctx}");
                }
                if a2 & psbi::CFG_SKIP_MATCH != 0 {
                    assert_eq!(idx, a0 + u64::from(a1.trailing_zeros()), "{ctx}");
                }
            } else {
                assert!(
                    [SBI_ERR_NOT_SUPPORTED, SBI_ERR_INVALID_PARAM].contains(&r.error),
                    "{ctx}"
                );
                let after: Vec<_> = (0..48).map(|c| *pmu.counter(c).unwrap()).collect();
                assert_eq!(
                    after, before,
                    "a failed config_matching changed counters: {ctx}"
                );
            }
        }
        psbi::COUNTER_START | psbi::COUNTER_STOP => {
            let start = call.fid == psbi::COUNTER_START;
            let bad_flags = a2 >> 2 != 0 || (start && a2 == 3);
            let Some(set) = pmu_set(a0, a1).filter(|_| !bad_flags) else {
                assert_eq!(r, invalid, "{ctx}");
                return;
            };
            let snapshot_flag = 2;
            if a2 & snapshot_flag != 0 && shmem.is_none() {
                assert_eq!(r, SbiRet::err(SBI_ERR_NO_SHMEM), "{ctx}");
                return;
            }
            let in_use: Vec<u64> = set
                .into_iter()
                .filter(|&i| exists(i))
                .filter(|&i| before[i as usize].event.is_some() || before[i as usize].started)
                .collect();
            let already = in_use.iter().any(|&i| before[i as usize].started == start);
            let want = if !already {
                SbiRet::ok(0)
            } else if start {
                SbiRet::err(SBI_ERR_ALREADY_STARTED)
            } else {
                SbiRet::err(SBI_ERR_ALREADY_STOPPED)
            };
            assert_eq!(r, want, "{ctx}");
            for i in in_use {
                let c = pmu.counter(i as usize).unwrap();
                assert_eq!(c.started, start, "counter {i}: {ctx}");
            }
            let _ = a3;
        }
        psbi::SNAPSHOT_SET_SHMEM => {
            let want = if !policy.snapshot {
                SbiRet::err(SBI_ERR_NOT_SUPPORTED)
            } else if a2 != 0 {
                invalid
            } else if a0 == u64::MAX && a1 == u64::MAX {
                SbiRet::ok(0)
            } else if a0 % psbi::SHMEM_SIZE != 0 {
                invalid
            } else if a1 == 0 && region_of(a0, psbi::SHMEM_SIZE).is_some() {
                SbiRet::ok(0)
            } else {
                SbiRet::err(SBI_ERR_INVALID_ADDRESS)
            };
            assert_eq!(r, want, "{ctx}");
        }
        _ => assert_eq!(r, SbiRet::err(SBI_ERR_NOT_SUPPORTED), "{ctx}"),
    }
}
