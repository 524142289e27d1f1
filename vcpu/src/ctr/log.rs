//! The record log of translated code: where blocks write the common record (a jump or
//! branch of a type the current mode records, RASEMU off, CCV = 1: `Hart::ctr_fast_mask`)
//! as two stores (three for an indirect jump: [`RawRecord`]) and a pointer bump, leaving
//! the buffer's
//! bookkeeping (Smctr 2.5 "sctrstatus": WRPTR; 6.3 "Cycle Counting": the cycle count, its
//! encoding, CCV) to [`crate::Hart::ctr_drain`], which moves the log into the buffer before
//! anything else looks at CTR state: when translated code returns to the interpreter, and
//! first thing in the helpers that may read or write CTR state (a record the block cannot
//! write inline, a CSR instruction).
//!
//! Only the last DEPTH records of a drain reach the buffer: the earlier ones would be
//! overwritten there by the same drain, and only move WRPTR and the cycle counter on (to
//! the clock of the last of them). So the log is a ring of [`LOG_RECORDS`], more than the
//! deepest buffer: translated code writes around it, and a drain reads at most the last
//! DEPTH + 1 records. A ring of 64 KiB stays in the host's second-level cache, where a log
//! of every record of a run would stream through memory; its size lets one 16-bit add move
//! the pointer on and wrap it.
//!
//! Translated code keeps the pointer in a host register while it runs (r13:
//! `jit::vcpu_jit_enter` loads it from [`CtrLog::at`] and stores it back, and blocks store
//! it there before calling a helper that may drain the log) and counts nothing: a drain
//! counts the records from the pointer's move since the last drain, which gives their
//! number modulo the ring, and from a mark the last drain left in the newest record (its
//! `site` [`UNWRITTEN`]), which translated code overwrites only after a whole ring of
//! records. Since the ring is a multiple of every depth (Smctr 2.6 "sctrdepth": 16 to 256
//! entries), a number of records known modulo the ring and known to be more than DEPTH + 1
//! is all the drain needs: WRPTR moves on by it modulo DEPTH.

/// One record as translated code writes it (aligned to its size: the ring is a whole
/// number of records from the start of its allocation): the site of the transfer, a
/// constant of the block ([`CtrLog::site`]: its source and what [`LogRecord::info`]
/// says), and the budget; an indirect transfer (JALR) adds its target. Three stores (one
/// of a 32-bit immediate) and the pointer's move: a record in 3 host instructions.
#[repr(C, align(32))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawRecord {
    /// The site's number ([`CtrLog::site`]); [`UNWRITTEN`] in the record a drain left.
    pub(crate) site: u64,
    /// The run's budget left at the transfer (`Hart::jit_budget`): its clock is
    /// `Hart::jit_clock` less this.
    pub(crate) budget: u64,
    /// The target (`ctrtarget`) of an indirect transfer (not written for a direct one).
    pub(crate) indirect: u64,
    _pad: u64,
}

/// A record as a drain reads it ([`Taken::get`]): the raw record with its site's source
/// and `info`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LogRecord {
    /// The source pc (`ctrsource` without V).
    pub(crate) source: u64,
    /// The transfer type (Smctr table 10) in bits 32-39, and where the target is: as a
    /// signed offset from the source in bits 0-31, or with [`INDIRECT`] set in
    /// [`LogRecord::indirect`].
    pub(crate) info: u64,
    /// The run's budget left at the transfer (`Hart::jit_budget`): its clock is
    /// `Hart::jit_clock` less this.
    pub(crate) budget: u64,
    /// The target (`ctrtarget`) of an indirect transfer (not written for a direct one).
    pub(crate) indirect: u64,
}

/// [`LogRecord::info`]'s flag for a target in [`LogRecord::indirect`].
pub(crate) const INDIRECT: u64 = 1 << 40;

impl LogRecord {
    /// [`LogRecord::info`] of a direct transfer of type `t` from `source` to `target`, which
    /// must be within a signed 32-bit offset (a JAL's and a branch's always are).
    pub(crate) fn direct(source: u64, target: u64, t: u8) -> u64 {
        (target.wrapping_sub(source) & 0xffff_ffff) | (t as u64) << 32
    }

    /// [`LogRecord::info`] of an indirect transfer of type `t`.
    pub(crate) fn indirect(t: u8) -> u64 {
        INDIRECT | (t as u64) << 32
    }

    /// The transfer type.
    pub(crate) fn t(&self) -> u8 {
        (self.info >> 32) as u8
    }

    /// The target (`ctrtarget`).
    pub(crate) fn target(&self) -> u64 {
        if self.info & INDIRECT != 0 {
            self.indirect
        } else {
            self.source.wrapping_add(self.info as i32 as i64 as u64)
        }
    }
}

/// The [`RawRecord::site`] a drain leaves in the newest record it took: no site (their
/// numbers are below 2^31, the immediates translated code stores), so that the next drain
/// sees whether translated code came round to it (every record writes `site`).
const UNWRITTEN: u64 = u64::MAX;

/// Records the ring holds: more than the deepest buffer (256) and one before it, the only
/// ones a drain reads, and a multiple of every depth; 64 KiB, so that translated code moves
/// the pointer on and wraps it with one 16-bit add ([`LOG_STEP`]: the ring's start is
/// aligned to its size).
pub(crate) const LOG_RECORDS: usize = 2048;
/// The ring's size in bytes.
const LOG_BYTES: usize = LOG_RECORDS * std::mem::size_of::<RawRecord>();
const _: () = assert!(LOG_RECORDS > 256 + 1 && LOG_RECORDS.is_multiple_of(256));
const _: () = assert!(LOG_BYTES == 1 << 16);
/// What translated code adds to the low 16 bits of the pointer (`add r13w`), which wraps it
/// within the ring.
pub(crate) const LOG_STEP: i16 = std::mem::size_of::<RawRecord>() as i16;

/// The log (allocated when the first block that writes to it is translated).
#[derive(Debug, Default)]
pub(crate) struct CtrLog {
    /// The host address of the next record; translated code writes there and moves it on,
    /// wrapping within the ring (0 before [`CtrLog::ensure`]).
    pub(crate) at: u64,
    /// [`CtrLog::at`] at the last [`CtrLog::take`].
    since: u64,
    records: Option<Box<[RawRecord]>>,
    /// The sites records name: each a source and an `info` ([`LogRecord`]), numbered as
    /// translation met them, for as long as the hart lives (a transfer's site is the same
    /// for every translation of its instruction), and their numbers.
    sites: Vec<(u64, u64)>,
    site_numbers: rustc_hash::FxHashMap<(u64, u64), u32>,
}

/// The records of one [`CtrLog::take`]: `len` of them (the number written, or more than a
/// ring and as many modulo the ring), of which the last [`LOG_RECORDS`] can be read. When
/// dropped, it marks the newest record (see the module's text).
pub(crate) struct Taken<'a> {
    ring: &'a mut [RawRecord],
    sites: &'a [(u64, u64)],
    /// Ring index of the oldest record taken (modulo the ring).
    first: usize,
    len: usize,
}

impl Taken<'_> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Record `i` (0 the oldest); `i` must be at least `len` - [`LOG_RECORDS`].
    pub(crate) fn get(&self, i: usize) -> LogRecord {
        let r = &self.ring[(self.first + i) % LOG_RECORDS];
        let (source, info) = self.sites.get(r.site as usize).copied().unwrap_or_default();
        LogRecord {
            source,
            info,
            budget: r.budget,
            indirect: r.indirect,
        }
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if !self.ring.is_empty() {
            let newest = (self.first + self.len + LOG_RECORDS - 1) % LOG_RECORDS;
            self.ring[newest].site = UNWRITTEN;
        }
    }
}

impl CtrLog {
    /// Allocate the ring (inside an allocation large enough to align it).
    pub(crate) fn ensure(&mut self) {
        if self.records.is_none() {
            let records = vec![RawRecord::default(); 2 * LOG_RECORDS].into_boxed_slice();
            let align = LOG_BYTES as u64;
            self.at = (records.as_ptr() as u64).div_ceil(align) * align;
            self.since = self.at;
            self.records = Some(records);
            // Nothing written: the record before the first is the newest taken.
            self.ring_mut()[LOG_RECORDS - 1].site = UNWRITTEN;
        }
    }

    /// The number of the site of a transfer from `source` with `info` ([`LogRecord`]), which
    /// translated code stores in its records as a sign-extended 32-bit immediate.
    pub(crate) fn site(&mut self, source: u64, info: u64) -> u32 {
        let n = self.sites.len() as u32;
        let number = *self.site_numbers.entry((source, info)).or_insert(n);
        if number == n {
            self.sites.push((source, info));
        }
        debug_assert!(
            number < 1 << 31,
            "site numbers are sign-extended immediates"
        );
        number
    }

    /// Ring index of the record at host address `at`.
    fn index(at: u64) -> usize {
        (at as usize & (LOG_BYTES - 1)) / std::mem::size_of::<RawRecord>()
    }

    /// Where the ring starts in the allocation, in records (0 before [`CtrLog::ensure`]).
    fn skip(&self, r: &[RawRecord]) -> usize {
        let start = self.at as usize & !(LOG_BYTES - 1);
        (start - r.as_ptr() as usize) / std::mem::size_of::<RawRecord>()
    }

    /// The ring (empty before [`CtrLog::ensure`]).
    fn ring(&self) -> &[RawRecord] {
        match &self.records {
            Some(r) => &r[self.skip(r)..][..LOG_RECORDS],
            None => &[],
        }
    }

    fn ring_mut(&mut self) -> &mut [RawRecord] {
        let skip = self.records.as_deref().map_or(0, |r| self.skip(r));
        match &mut self.records {
            Some(r) => &mut r[skip..][..LOG_RECORDS],
            None => &mut [],
        }
    }

    /// Whether translated code came round to the record the last take marked: a whole ring
    /// of records or more since then.
    fn came_round(&self) -> bool {
        let newest = (Self::index(self.since) + LOG_RECORDS - 1) % LOG_RECORDS;
        self.ring().get(newest).is_some_and(|r| r.site != UNWRITTEN)
    }

    /// Whether translated code has written records since the last [`CtrLog::take`] (before
    /// [`CtrLog::ensure`] both pointers are 0: two compares at every return from translated
    /// code of a hart that never logged).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.at == self.since && (self.since == 0 || !self.came_round())
    }

    /// The records written since the last call; the log starts again empty.
    pub(crate) fn take(&mut self) -> Taken<'_> {
        let size = std::mem::size_of::<RawRecord>();
        let moved = (self.at.wrapping_sub(self.since) as usize & (LOG_BYTES - 1)) / size;
        let len = moved + if self.came_round() { LOG_RECORDS } else { 0 };
        let next = Self::index(self.at);
        self.since = self.at;
        let skip = self.records.as_deref().map_or(0, |r| self.skip(r));
        let ring = match &mut self.records {
            Some(r) => &mut r[skip..][..LOG_RECORDS],
            None => &mut [],
        };
        Taken {
            ring,
            sites: &self.sites,
            first: (next + LOG_RECORDS - len % LOG_RECORDS) % LOG_RECORDS,
            len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What translated code does: write at `at` (a direct record), move `at` on and wrap
    /// it.
    fn write(log: &mut CtrLog, source: u64) {
        let site = log.site(
            source,
            LogRecord::direct(source, source + 4, (source % 16) as u8),
        );
        // SAFETY: `at` points into the ring.
        unsafe {
            *(log.at as *mut RawRecord) = RawRecord {
                site: site as u64,
                ..RawRecord::default()
            };
        }
        let low = (log.at as u16).wrapping_add(LOG_STEP as u16);
        log.at = log.at & !0xffff | low as u64;
    }

    /// The sources of the last `n` records of `t`, oldest first.
    fn last(t: &Taken, n: usize) -> Vec<u64> {
        (t.len() - n..t.len()).map(|i| t.get(i).source).collect()
    }

    #[test]
    fn records_written_at_the_pointer_are_taken_once_and_the_last_ring_of_them_kept() {
        let mut log = CtrLog::default();
        assert!(log.is_empty());
        assert_eq!(log.take().len(), 0, "nothing before the log exists");
        log.ensure();
        assert!(log.is_empty());
        for i in 0..3 {
            write(&mut log, i);
        }
        assert!(!log.is_empty());
        let t = log.take();
        assert_eq!(last(&t, 3), [0, 1, 2]);
        drop(t);
        assert!(log.is_empty());
        // Past the ring's end, more than a ring: the last ring's worth, oldest first.
        let n = 3 * LOG_RECORDS as u64 + 5;
        for i in 0..n {
            write(&mut log, 100 + i);
        }
        let t = log.take();
        assert_eq!(t.len() % LOG_RECORDS, n as usize % LOG_RECORDS);
        assert!(t.len() > LOG_RECORDS);
        let want: Vec<u64> = (100 + n - LOG_RECORDS as u64..100 + n).collect();
        assert_eq!(last(&t, LOG_RECORDS), want);
    }

    /// A direct record gives its target back from the offset, backwards, forwards and
    /// around the end of the address space; an indirect one from its own field.
    #[test]
    fn a_record_gives_back_its_target_and_type() {
        let cases = [
            (0x8000_1000, 0x8000_0ff0),
            (0x8000_1000, 0x8010_0ffe),
            (0xffff_ffff_ffff_fffe, 0x2),
            (0x2, 0xffff_ffff_fff0_0002),
        ];
        for (source, target) in cases {
            let r = LogRecord {
                source,
                info: LogRecord::direct(source, target, 13),
                indirect: !target,
                ..LogRecord::default()
            };
            assert_eq!(
                (r.target(), r.t()),
                (target, 13),
                "{source:#x} to {target:#x}"
            );
        }
        let r = LogRecord {
            source: 0x8000_0000,
            info: LogRecord::indirect(3),
            indirect: 0x1234_5678_9abc_def0,
            ..LogRecord::default()
        };
        assert_eq!((r.target(), r.t()), (0x1234_5678_9abc_def0, 3));
    }

    /// The number taken is exact below a ring, and from a ring on more than a ring and the
    /// same modulo the ring (the mark in the newest record), whatever the log's position.
    #[test]
    fn a_drain_counts_the_records_exactly_below_a_ring_and_modulo_a_ring_from_one() {
        let mut log = CtrLog::default();
        log.ensure();
        let mut source = 0;
        for n in [
            0, 1, 2047, 2048, 2049, 4095, 4096, 4097, 300, 0, 8192, 7, 2047,
        ] {
            for _ in 0..n {
                source += 1;
                write(&mut log, source);
            }
            assert_eq!(log.is_empty(), n == 0, "{n} records");
            let t = log.take();
            if n < LOG_RECORDS {
                assert_eq!(t.len(), n, "{n} records");
            } else {
                assert_eq!(t.len() % LOG_RECORDS, n % LOG_RECORDS, "{n} records");
                assert!(t.len() >= LOG_RECORDS, "{n} records: {} taken", t.len());
            }
            let keep = n.min(LOG_RECORDS);
            let want: Vec<u64> = (source + 1 - keep as u64..=source).collect();
            assert_eq!(last(&t, keep), want, "{n} records");
            drop(t);
            assert!(log.is_empty(), "after taking {n}");
        }
    }
}
