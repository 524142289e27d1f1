//! Deterministic fuzz of [`handle`]: hostile EIDs, FIDs and arguments against a fake
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

use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use super::srst::{ResetRequest, ResetType};
use super::*;

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

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

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
        }
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
