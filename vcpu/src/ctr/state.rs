//! CTR's part of a hart's snapshot ([`crate::state::HartState::ctr`]): the registers, the
//! whole physical buffer and the CtrCycleCounter, with the checks that a restored state
//! fits this hart's configuration (Smctr "2.4
//! Supervisor Control Transfer Records Depth Register (sctrdepth)" depths, the implemented
//! `xctrctl` and `ctrdata` fields).

use serde::{Deserialize, Serialize};

use super::{Ctr, CtrConfig, CtrEntry};
use vcpu_api::StateError;

/// CTR state (Smctr): registers, the whole physical buffer, and the CtrCycleCounter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtrState {
    /// The source hart's CTR configuration (for the record; the destination keeps its own).
    pub config: Option<CtrConfig>,
    /// `mctrctl`.
    pub mctrctl: u64,
    /// `vsctrctl`.
    pub vsctrctl: u64,
    /// `sctrdepth.DEPTH`.
    pub depth: u8,
    /// `sctrstatus.WRPTR`.
    pub wrptr: u64,
    /// `sctrstatus.FROZEN`.
    pub frozen: bool,
    /// The 256 physical entries.
    pub entries: Vec<CtrEntry>,
    /// The CtrCycleCounter's value.
    pub cycle_count: u64,
    /// Whether the next record has CCV = 1.
    pub next_ccv: bool,
}

impl Ctr {
    /// The state to save; `vclock` is the hart's clock.
    pub(crate) fn save_state(&self, vclock: u64) -> CtrState {
        CtrState {
            config: self.config.clone(),
            mctrctl: self.mctrctl,
            vsctrctl: self.vsctrctl,
            depth: self.depth,
            wrptr: self.wrptr,
            frozen: self.frozen,
            entries: self.entries.to_vec(),
            cycle_count: self.saved_cycle_count(vclock),
            next_ccv: self.saved_next_ccv(),
        }
    }

    /// Whether `s` is well formed and this CTR can hold it (checked before anything changes).
    pub(crate) fn check_state(&self, s: &CtrState) -> Result<(), StateError> {
        let bad = |m: String| Err(StateError::Malformed(m));
        if s.depth > 4 {
            return bad(format!(
                "ctr.depth = {} is a reserved sctrdepth.DEPTH encoding (Smctr 2.4: 0-4 select \
                 16-256 entries)",
                s.depth
            ));
        }
        if s.entries.len() != 256 {
            return bad(format!("{} CTR entries (256)", s.entries.len()));
        }
        self.check_fits(s)
    }

    /// Restore `s` (checked by [`Ctr::check_state`]); `vclock` is the restored clock.
    pub(crate) fn restore_state(&mut self, s: &CtrState, vclock: u64) {
        if self.implemented() {
            self.mctrctl = s.mctrctl;
            self.vsctrctl = s.vsctrctl;
            self.set_depth(s.depth);
            self.wrptr = s.wrptr;
            self.frozen = s.frozen;
            self.entries.copy_from_slice(&s.entries);
            self.restore_cycle_counter(s.cycle_count, s.next_ccv, vclock);
        }
    }

    /// Whether this hart's CTR can hold `s` exactly: its depth, its `xctrctl` fields, its
    /// entries' fields.
    fn check_fits(&self, s: &CtrState) -> Result<(), StateError> {
        let unsupported = |m: String| Err(StateError::Unsupported(m));
        let Some(cfg) = self.config.as_ref() else {
            let used =
                s.mctrctl | s.vsctrctl != 0 || s.entries.iter().any(|e| *e != CtrEntry::default());
            return if used {
                unsupported("the saved state uses CTR (Smctr), which this hart lacks".into())
            } else {
                Ok(())
            };
        };
        if cfg.depths & (1 << s.depth) == 0 {
            return unsupported(format!(
                "CTR depth {} (sctrdepth.DEPTH {}) is not among this hart's depths",
                16u64 << s.depth,
                s.depth
            ));
        }
        let depth = 16u64 << s.depth;
        if s.wrptr >= depth {
            return Err(StateError::Malformed(format!(
                "sctrstatus.WRPTR {} at depth {depth}",
                s.wrptr
            )));
        }
        let ctl = cfg.mctrctl_mask();
        for (name, v) in [("mctrctl", s.mctrctl), ("vsctrctl", s.vsctrctl)] {
            if v & !ctl != 0 {
                return unsupported(format!(
                    "{name} = {v:#x} uses fields {:#x} this hart does not implement",
                    v & !ctl
                ));
            }
        }
        let data = cfg.ctrdata_mask();
        if let Some((i, e)) = s
            .entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.data & !data != 0 || e.target & 1 != 0)
        {
            return unsupported(format!(
                "CTR physical entry {i} uses ctrdata/ctrtarget bits this hart does not \
                 implement (ctrdata {:#x}, ctrtarget {:#x})",
                e.data, e.target
            ));
        }
        Ok(())
    }
}
