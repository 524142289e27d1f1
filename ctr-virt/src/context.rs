//! A vCPU's guest CTR state and how it moves between the VMM and a hart.

use vcpu_api::Vcpu;

use crate::csr::*;

/// One CTR entry (Smctr chapter 3 "Entry Registers").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CtrEntryState {
    /// `ctrsource`.
    pub source: u64,
    /// `ctrtarget`.
    pub target: u64,
    /// `ctrdata`.
    pub data: u64,
}

/// A guest's CTR state: everything a guest can observe of CTR, so that saving it from one
/// hart and loading it onto another (or the same one later) is invisible to the guest.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CtrContext {
    /// `vsctrctl`.
    pub vsctrctl: u64,
    /// `sctrstatus` (WRPTR, FROZEN).
    pub sctrstatus: u64,
    /// The guest's `sctrdepth.DEPTH` encoding.
    pub depth: u8,
    /// The entries, logical entry 0 (the youngest) first; as many as the depth.
    pub entries: Vec<CtrEntryState>,
}

impl CtrContext {
    /// A context as after reset, at depth encoding `depth`: everything zero.
    pub fn reset(depth: u8) -> CtrContext {
        CtrContext {
            vsctrctl: 0,
            sctrstatus: 0,
            depth,
            entries: vec![CtrEntryState::default(); 16 << depth],
        }
    }

    /// The valid records decoded, youngest first (up to the first invalid entry, as
    /// recording fills the buffer).
    pub fn records(&self) -> impl DoubleEndedIterator<Item = vcpu_api::ctr::CtrRecord> + '_ {
        let valid = self
            .entries
            .iter()
            .take_while(|e| e.source & 1 != 0)
            .count();
        self.entries[..valid].iter().filter_map(|e| {
            vcpu_api::ctr::CtrEntry {
                source: e.source,
                target: e.target,
                data: e.data,
            }
            .record()
        })
    }

    /// Save the guest's CTR state from `hart`.
    pub fn save<V: Vcpu>(hart: &V) -> CtrContext {
        let rd = |n| hart.host_csr(n).unwrap_or(0);
        let depth = (rd(SCTRDEPTH) & 7) as u8;
        let entries = (0..16u64 << depth)
            .map(|x| {
                let e = hart.ctr_entry(x);
                CtrEntryState {
                    source: e.source,
                    target: e.target,
                    data: e.data,
                }
            })
            .collect();
        CtrContext {
            vsctrctl: rd(VSCTRCTL),
            sctrstatus: rd(SCTRSTATUS),
            depth,
            entries,
        }
    }

    /// Load this context onto `hart` in the order the spec advises (Smctr 2.5
    /// "Supervisor Control Transfer Records Status Register (sctrstatus)"): clear every
    /// entry (SCTRCLR: no other context's history may show through a later depth increase),
    /// then the depth, `sctrstatus`, the entries and `vsctrctl`. The guest's `vsiselect` is
    /// preserved.
    pub fn load<V: Vcpu>(&self, hart: &mut V) {
        let vsiselect = hart.host_csr(VSISELECT).unwrap_or(0);
        hart.ctr_clear();
        hart.set_known_csr(SCTRDEPTH, self.depth as u64);
        hart.set_known_csr(SCTRSTATUS, self.sctrstatus);
        for (x, e) in self.entries.iter().enumerate() {
            hart.set_known_csr(VSISELECT, 0x200 + x as u64);
            hart.set_known_csr(VSIREG, e.source);
            hart.set_known_csr(VSIREG2, e.target);
            hart.set_known_csr(VSIREG3, e.data);
        }
        hart.set_known_csr(VSCTRCTL, self.vsctrctl);
        hart.set_known_csr(VSISELECT, vsiselect);
    }
}
