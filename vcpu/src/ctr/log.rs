//! The record log of translated code: where blocks write the common record (a jump or
//! branch of a type the current mode records, RASEMU off, CCV = 1: `Hart::ctr_fast_mask`)
//! as four stores, a pointer bump and a count, leaving the buffer's bookkeeping (Smctr 2.5
//! "sctrstatus": WRPTR; 6.3 "Cycle Counting": the cycle count, its encoding, CCV) to
//! [`crate::Hart::ctr_drain`], which moves the log into the buffer before anything else
//! looks at CTR state: when translated code returns to the interpreter, and first thing
//! in the helpers that may read or write CTR state (a record the block cannot write
//! inline, a CSR instruction).
//!
//! Only the last DEPTH records of a drain reach the buffer: the earlier ones would be
//! overwritten there by the same drain, and only move WRPTR and the cycle counter on (to
//! the clock of the last of them). So the log is a ring of [`LOG_RECORDS`], more than the
//! deepest buffer: translated code writes around it, and a drain reads at most the last
//! DEPTH + 1 records. A small ring stays in the host's first-level cache, where a log of
//! every record of a run would stream through it.

/// One record as translated code writes it (aligned to its size: the ring is a whole
/// number of records from the start of its allocation).
#[repr(C, align(32))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LogRecord {
    /// `ctrsource` (V set).
    pub(crate) source: u64,
    /// `ctrtarget`.
    pub(crate) target: u64,
    /// The run's budget left at the transfer (`Hart::jit_budget`): its clock is
    /// `Hart::jit_clock` less this.
    pub(crate) budget: u64,
    /// The transfer type (Smctr table 10).
    pub(crate) t: u64,
}

/// Records the ring holds: more than the deepest buffer (256) and one before it, the only
/// ones a drain reads.
pub(crate) const LOG_RECORDS: usize = 512;
/// The ring's size in bytes: its start is aligned to twice this, so that a pointer moves on
/// and wraps with an add and an and ([`LOG_WRAP`]).
const LOG_BYTES: usize = LOG_RECORDS * std::mem::size_of::<LogRecord>();
/// What translated code ands the moved pointer with: it clears the bit a step past the
/// ring's end sets.
pub(crate) const LOG_WRAP: i32 = !(LOG_BYTES as i32);

/// The log (allocated when the first block that writes to it is translated).
#[derive(Debug, Default)]
pub(crate) struct CtrLog {
    /// The host address of the next record; translated code writes there and moves it on,
    /// wrapping within the ring (0 before [`CtrLog::ensure`]).
    pub(crate) at: u64,
    /// Records written since the last [`CtrLog::take`] (translated code counts them).
    pub(crate) written: u64,
    records: Option<Box<[LogRecord]>>,
}

/// The records of one [`CtrLog::take`]: `len` of them, of which the last [`LOG_RECORDS`]
/// can be read.
pub(crate) struct Taken<'a> {
    ring: &'a [LogRecord],
    /// Ring index of the oldest record taken (modulo the ring).
    first: usize,
    len: usize,
}

impl Taken<'_> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Record `i` (0 the oldest); `i` must be at least `len` - [`LOG_RECORDS`].
    pub(crate) fn get(&self, i: usize) -> &LogRecord {
        &self.ring[(self.first + i) % LOG_RECORDS]
    }
}

impl CtrLog {
    /// Allocate the ring (inside an allocation large enough to align it).
    pub(crate) fn ensure(&mut self) {
        if self.records.is_none() {
            let records = vec![LogRecord::default(); 3 * LOG_RECORDS].into_boxed_slice();
            let align = 2 * LOG_BYTES as u64;
            self.at = (records.as_ptr() as u64).div_ceil(align) * align;
            self.written = 0;
            self.records = Some(records);
        }
    }

    /// The ring (empty before [`CtrLog::ensure`]).
    fn ring(&self) -> &[LogRecord] {
        let Some(r) = &self.records else {
            return &[];
        };
        let skip = (self.at as usize & !(2 * LOG_BYTES - 1)) - r.as_ptr() as usize;
        &r[skip / std::mem::size_of::<LogRecord>()..][..LOG_RECORDS]
    }

    /// Whether translated code has written records since the last [`CtrLog::take`].
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// The records written since the last call; the log starts again empty.
    pub(crate) fn take(&mut self) -> Taken<'_> {
        let len = std::mem::take(&mut self.written) as usize;
        let next = (self.at as usize & (LOG_BYTES - 1)) / std::mem::size_of::<LogRecord>();
        Taken {
            ring: self.ring(),
            first: (next + LOG_RECORDS - len % LOG_RECORDS) % LOG_RECORDS,
            len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What translated code does: write at `at`, move `at` on and wrap it, count.
    fn write(log: &mut CtrLog, source: u64) {
        // SAFETY: `at` points into the ring.
        unsafe {
            *(log.at as *mut LogRecord) = LogRecord {
                source,
                ..LogRecord::default()
            };
        }
        log.at = (log.at + std::mem::size_of::<LogRecord>() as u64) & LOG_WRAP as i64 as u64;
        log.written += 1;
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
        let sources: Vec<u64> = (0..t.len()).map(|i| t.get(i).source).collect();
        assert_eq!(sources, [0, 1, 2]);
        assert!(log.is_empty());
        // Past the ring's end, more than a ring: the last ring's worth, oldest first.
        let n = 3 * LOG_RECORDS as u64 + 5;
        for i in 0..n {
            write(&mut log, 100 + i);
        }
        let t = log.take();
        assert_eq!(t.len(), n as usize);
        let from = t.len() - LOG_RECORDS;
        let sources: Vec<u64> = (from..t.len()).map(|i| t.get(i).source).collect();
        let want: Vec<u64> = (100 + n - LOG_RECORDS as u64..100 + n).collect();
        assert_eq!(sources, want);
    }
}
