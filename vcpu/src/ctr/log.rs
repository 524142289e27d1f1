//! The record log of translated code: where blocks write the common record (a jump or
//! branch of a type the current mode records, RASEMU off, CCV = 1: `Hart::ctr_fast_mask`)
//! as four stores and a pointer bump, leaving the buffer's bookkeeping (Smctr 2.5
//! "sctrstatus": WRPTR; 6.3 "Cycle Counting": the cycle count, its encoding, CCV) to
//! [`crate::Hart::ctr_drain`], which moves the log into the buffer before anything else
//! looks at CTR state: when translated code returns to the interpreter, and first thing
//! in the helpers that may read or write CTR state (a record the block cannot write
//! inline, a CSR instruction).
//!
//! A run of translated code writes at most one record per instruction it retires, and runs
//! at most [`LOG_RECORDS`] - 1 instructions (`Hart::jit_step`), so the log never fills.
//! Only the last DEPTH records of a drain reach the buffer: the earlier ones would be
//! overwritten there by the same drain, and only move WRPTR and the cycle counter.

/// One record as translated code writes it.
#[repr(C)]
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

/// Records the log holds: more than a run of translated code retires instructions.
pub(crate) const LOG_RECORDS: usize = (1 << 16) + 256;

/// The log (allocated when the first block that writes to it is translated).
#[derive(Debug, Default)]
pub(crate) struct CtrLog {
    /// The host address of the next record; translated code writes there and moves it on
    /// (0 before [`CtrLog::ensure`]).
    pub(crate) at: u64,
    records: Option<Box<[LogRecord]>>,
}

impl CtrLog {
    /// Allocate the log (zeroed, so the host maps only the part that is written).
    pub(crate) fn ensure(&mut self) {
        if self.records.is_none() {
            let records = vec![LogRecord::default(); LOG_RECORDS].into_boxed_slice();
            self.at = records.as_ptr() as u64;
            self.records = Some(records);
        }
    }

    /// The host address of the first record (0 before [`CtrLog::ensure`]).
    fn base(&self) -> u64 {
        self.records.as_ref().map_or(0, |r| r.as_ptr() as u64)
    }

    /// Whether translated code has written records since the last [`CtrLog::take`].
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.at == self.base()
    }

    /// The records written since the last call, oldest first; the log starts again empty.
    pub(crate) fn take(&mut self) -> &[LogRecord] {
        let base = self.base();
        let n = (self.at - base) as usize / std::mem::size_of::<LogRecord>();
        self.at = base;
        match &self.records {
            Some(r) => &r[..n.min(r.len())],
            None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_written_at_the_pointer_are_taken_once() {
        let mut log = CtrLog::default();
        assert!(log.is_empty());
        assert!(log.take().is_empty(), "nothing before the log exists");
        log.ensure();
        assert!(log.is_empty());
        // What translated code does: write at `at`, move `at` on.
        for i in 0..3u64 {
            // SAFETY: `at` points into the log, which holds more than 3 records.
            unsafe {
                *(log.at as *mut LogRecord) = LogRecord {
                    source: i,
                    ..LogRecord::default()
                };
            }
            log.at += std::mem::size_of::<LogRecord>() as u64;
        }
        assert!(!log.is_empty());
        let sources: Vec<u64> = log.take().iter().map(|r| r.source).collect();
        assert_eq!(sources, [0, 1, 2]);
        assert!(log.is_empty());
        assert!(log.take().is_empty());
    }
}
