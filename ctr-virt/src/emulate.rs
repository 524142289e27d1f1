//! Virtual-instruction exits that concern CTR, and what the hypervisor does with them.
//!
//! With `mstateen0.CTR` = 1 and `hstateen0.CTR` = 0, every VS-mode access to CTR state
//! (`sctrctl`, `sctrstatus`, `sireg*` with `vsiselect` in 0x200-0x2FF, SCTRCLR) raises
//! virtual-instruction (Smctr chapter 5 "State Enable Access Control"); `sctrdepth` raises
//! it from VS-mode whatever `hstateen0.CTR` (section 2.4
//! "Supervisor Control Transfer Records Depth Register (sctrdepth)"). VU-mode gets
//! virtual-instruction for every supervisor CSR and for SCTRCLR.
//! [`GuestCtr::on_virtual_insn`] turns these into:
//! - VS-mode CTR state, CTR on: load the vCPU's context, set `hstateen0.CTR`, and run the
//!   instruction again ([`Outcome::Retry`]; counted as a lazy load).
//! - VS-mode `sctrdepth`, CTR on: emulate the CSR instruction ([`Outcome::Emulated`]).
//! - Anything CTR from VU-mode, or with CTR off: illegal-instruction for the guest, as a
//!   machine without (or, from U-mode, without access to) CTR would give
//!   ([`Outcome::InjectIllegal`]).
//! - Anything else: [`Outcome::NotCtr`], for the VMM's other handlers.

use vcpu_api::Vcpu;

use crate::csr::*;
use crate::{CtrContext, CtrPolicy};

/// What a trapped instruction is, as far as CTR is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtrAccess {
    /// A CSR instruction on `sctrdepth`.
    Depth,
    /// An access to other CTR state (`sctrctl`, `sctrstatus`, `sireg*` at a CTR select
    /// value) or SCTRCLR.
    State,
}

/// Classify instruction `insn`, trapped with the guest's `vsiselect`: the CTR state that
/// Smctr 5 "State Enable Access Control" puts behind `hstateen0.CTR`, or `sctrdepth`.
pub fn classify(insn: u32, vsiselect: u64) -> Option<CtrAccess> {
    if insn == SCTRCLR {
        return Some(CtrAccess::State);
    }
    let funct3 = (insn >> 12) & 7;
    if insn & 0x7f != 0x73 || funct3 == 0 || funct3 == 4 {
        return None;
    }
    match (insn >> 20) as u16 {
        SCTRDEPTH => Some(CtrAccess::Depth),
        SCTRCTL | SCTRSTATUS => Some(CtrAccess::State),
        SIREG..=SIREG6 if CTR_SELECT.contains(&vsiselect) => Some(CtrAccess::State),
        _ => None,
    }
}

/// What the VMM must do after [`GuestCtr::on_virtual_insn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not a CTR instruction.
    NotCtr,
    /// Emulated; the pc is past the instruction.
    Emulated,
    /// The context is loaded; resume at the same instruction.
    Retry,
    /// Inject illegal-instruction (`xtval` = the instruction bits).
    InjectIllegal,
}

/// Counts for `--stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtrStats {
    /// Contexts loaded on a first access (hstateen0.CTR off -> on).
    pub lazy_loads: u64,
    /// `sctrdepth` accesses emulated.
    pub depth_emulated: u64,
    /// CTR accesses answered with illegal-instruction.
    pub injected_illegal: u64,
    /// Records synthesized for traps the VMM injected.
    pub synthesized: u64,
}

/// What a snapshot keeps of a [`GuestCtr`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GuestCtrState {
    /// The VM's CTR policy.
    pub policy: CtrPolicy,
    /// Whether the context is on the hart (then the hart's state holds it).
    pub loaded: bool,
    /// The context while not loaded.
    pub context: CtrContext,
    /// Whether the guest has ever accessed CTR (a lazy load or an `sctrdepth` access). A
    /// guest that never did can move to a host without its reset depth: see
    /// [`GuestCtrState::fit_untouched`].
    pub touched: bool,
}

impl GuestCtrState {
    /// For a guest that never touched CTR and whose context is still the reset one: if its
    /// depth is not among `host_depths` (as the policy allows them), give it the smallest
    /// depth that is, as a fresh VM on that host would get, and say so. The guest cannot
    /// tell: it has never read `sctrdepth`. A guest that touched CTR keeps its depth (and is
    /// refused by [`GuestCtr::restore`] where the host lacks it).
    pub fn fit_untouched(&mut self, host_depths: crate::DepthSet) -> bool {
        let allowed = self.policy.guest_depths.intersect(host_depths);
        if self.touched
            || self.loaded
            || !self.policy.enabled
            || self.context != CtrContext::reset(self.context.depth)
            || allowed.contains_encoding(self.context.depth as u64)
        {
            return false;
        }
        match allowed.smallest() {
            Some(depth) => {
                self.context = CtrContext::reset(depth);
                true
            }
            None => false,
        }
    }
}

/// One vCPU's CTR as its hypervisor manages it.
#[derive(Clone, Debug)]
pub struct GuestCtr {
    policy: CtrPolicy,
    /// The guest's state while it is not on the hart (the depth is always current).
    context: CtrContext,
    /// Whether the context is on the hart (`hstateen0.CTR` = 1).
    loaded: bool,
    /// Whether the guest has ever accessed CTR.
    touched: bool,
    /// Counters for `--stats`.
    pub stats: CtrStats,
}

impl GuestCtr {
    /// A vCPU's CTR after reset: depth the smallest the policy allows, everything zero, not
    /// loaded.
    pub fn new(policy: CtrPolicy) -> GuestCtr {
        let depth = policy.guest_depths.smallest().unwrap_or(0);
        GuestCtr {
            policy,
            context: CtrContext::reset(depth),
            loaded: false,
            touched: false,
            stats: CtrStats::default(),
        }
    }

    /// Prepare a vCPU's hart before it first runs (Smctr 5 "State Enable Access Control":
    /// `hstateen0.CTR` = 0 makes the guest's first access exit): with CTR on, the guest
    /// gets Sscsrind (`hstateen0.CSRIND`, for `siselect`/`sireg*`) and `hstateen0.CTR`
    /// stays 0 until the first CTR access; with CTR off, both stay 0, so every access is
    /// the VMM's to refuse.
    pub fn prepare<V: Vcpu>(&self, hart: &mut V) {
        let h = hart.host_csr(HSTATEEN0).unwrap_or(0) & !(STATEEN0_CTR | STATEEN0_CSRIND);
        let csrind = if self.policy.enabled {
            STATEEN0_CSRIND
        } else {
            0
        };
        hart.set_known_csr(HSTATEEN0, h | csrind);
    }

    /// The policy.
    pub fn policy(&self) -> CtrPolicy {
        self.policy
    }

    /// Whether the context is on the hart.
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// The guest's `sctrdepth.DEPTH` encoding.
    pub fn guest_depth(&self) -> u8 {
        self.context.depth
    }

    /// Put the context onto `hart` and give the guest direct access (`hstateen0.CTR` = 1).
    pub fn load<V: Vcpu>(&mut self, hart: &mut V) {
        self.context.load(hart);
        let h = hart.host_csr(HSTATEEN0).unwrap_or(0);
        hart.set_known_csr(HSTATEEN0, h | STATEEN0_CTR);
        self.loaded = true;
    }

    /// Take the context back from `hart` (after which the hart's CTR may hold another
    /// context): save it, clear the hart's entries and take the guest's access away.
    pub fn unload<V: Vcpu>(&mut self, hart: &mut V) {
        if self.loaded {
            self.context = CtrContext::save(hart);
            hart.ctr_clear();
            hart.set_known_csr(VSCTRCTL, 0);
            let h = hart.host_csr(HSTATEEN0).unwrap_or(0);
            hart.set_known_csr(HSTATEEN0, h & !STATEEN0_CTR);
            self.loaded = false;
        }
    }

    /// What a snapshot keeps of this vCPU's CTR management (the hart's own state, CTR
    /// included, is saved with the hart).
    pub fn snapshot(&self) -> GuestCtrState {
        GuestCtrState {
            policy: self.policy,
            loaded: self.loaded,
            context: self.context.clone(),
            touched: self.touched,
        }
    }

    /// The vCPU's CTR management from a snapshot, for a host whose hart supports
    /// `host_depths`: the VM keeps its depth set within what the host supports, and a guest
    /// whose current depth the host lacks is refused, naming it. `hart_depth` is the saved
    /// hart's `sctrdepth.DEPTH`, which is the guest's while its context is loaded (else the
    /// guest's depth is the saved context's).
    pub fn restore(
        state: &GuestCtrState,
        hart_depth: u8,
        host_depths: crate::DepthSet,
    ) -> Result<GuestCtr, crate::CtrVirtError> {
        // Reserved encodings are malformed state, not a depth the host lacks.
        for (field, encoding) in [
            ("hart sctrdepth.DEPTH", hart_depth),
            ("ctr.context.depth", state.context.depth),
        ] {
            if encoding > 4 {
                return Err(crate::CtrVirtError::ReservedDepth { field, encoding });
            }
        }
        let depth = 16u64 << state.context.depth;
        let status = state.context.sctrstatus;
        if status & !(vcpu_api::ctr::SCTRSTATUS_FROZEN | (depth - 1)) != 0 {
            return Err(crate::CtrVirtError::BadStatus {
                field: "ctr.context.sctrstatus",
                value: status,
                depth,
            });
        }
        let guest_depth = if state.loaded {
            hart_depth
        } else {
            state.context.depth
        };
        let mut policy = state.policy;
        if policy.enabled {
            policy.guest_depths = policy.guest_depths.intersect(host_depths);
            if !policy.guest_depths.contains_encoding(guest_depth as u64) {
                return Err(crate::CtrVirtError::DepthUnsupported {
                    depth: 16 << guest_depth,
                    host: host_depths,
                });
            }
        }
        if state.context.entries.len() as u64 != depth {
            return Err(crate::CtrVirtError::BadContext(format!(
                "{} entries at depth encoding {}",
                state.context.entries.len(),
                state.context.depth
            )));
        }
        Ok(GuestCtr {
            policy,
            context: state.context.clone(),
            loaded: state.loaded,
            touched: state.touched,
            stats: CtrStats::default(),
        })
    }

    /// The guest's CTR state now (from the hart when loaded).
    pub fn context<V: Vcpu>(&self, hart: &V) -> CtrContext {
        if self.loaded {
            CtrContext::save(hart)
        } else {
            self.context.clone()
        }
    }

    /// Handle a virtual-instruction exit of instruction `insn` (from VU-mode if `from_vu`):
    /// the exits of Smctr 5 "State Enable Access Control" (lazy load) and of 2.4
    /// "Supervisor Control Transfer Records Depth Register (sctrdepth)" (emulation).
    pub fn on_virtual_insn<V: Vcpu>(&mut self, hart: &mut V, insn: u32, from_vu: bool) -> Outcome {
        let vsiselect = hart.host_csr(VSISELECT).unwrap_or(0);
        let Some(access) = classify(insn, vsiselect) else {
            return Outcome::NotCtr;
        };
        if !self.policy.enabled || from_vu {
            self.stats.injected_illegal += 1;
            return Outcome::InjectIllegal;
        }
        self.touched = true;
        match access {
            CtrAccess::State if !self.loaded => {
                self.load(hart);
                self.stats.lazy_loads += 1;
                Outcome::Retry
            }
            // Loaded but trapped: nothing this VMM traps on purpose.
            CtrAccess::State => {
                self.stats.injected_illegal += 1;
                Outcome::InjectIllegal
            }
            CtrAccess::Depth => {
                self.emulate_depth(hart, insn);
                self.stats.depth_emulated += 1;
                hart.set_pc(hart.pc().wrapping_add(4));
                Outcome::Emulated
            }
        }
    }

    /// The VMM has just injected a trap into VS-mode (cause `cause`, an interrupt if
    /// `interrupt`) taken at `epc` from VU-mode if `from_vu`, else from VS-mode, into the
    /// handler at `handler`. Make the guest's history what a trap delegated straight to VS
    /// would have made (Smctr 6.1 "Privilege Mode Transitions", table 7, and 6.1.2
    /// "External Traps", table 8, with V = 1; 6.5 "Freeze"): a record, a partial record
    /// (source or target 0), FROZEN, or nothing. The record's CC is not known to the VMM:
    /// CCV = 0 (6.3 "Cycle Counting" allows clearing it whenever cycles were not counted).
    pub fn synthesize_trap<V: Vcpu>(
        &mut self,
        hart: &mut V,
        cause: u64,
        interrupt: bool,
        from_vu: bool,
        epc: u64,
        handler: u64,
    ) {
        use vcpu_api::ctr::{
            CTRCTL_BPFRZ as BPFRZ, CTRCTL_LCOFIFRZ as LCOFIFRZ, CTRCTL_RASEMU as RASEMU,
            CTRCTL_S as S, CTRCTL_STE as STE, CTRCTL_U as U, SCTRSTATUS_FROZEN as FROZEN,
        };
        if !self.loaded {
            // The guest never touched CTR: its vsctrctl is 0, nothing is recorded.
            return;
        }
        let vs = hart.host_csr(VSCTRCTL).unwrap_or(0);
        let status = hart.host_csr(SCTRSTATUS).unwrap_or(0);
        let freeze = if interrupt {
            cause == 13 && vs & LCOFIFRZ != 0
        } else {
            cause == 3 && vs & BPFRZ != 0
        };
        if freeze {
            hart.set_known_csr(SCTRSTATUS, status | FROZEN);
            return;
        }
        if status & FROZEN != 0 || vs & RASEMU != 0 {
            return;
        }
        let t: u64 = if interrupt { 2 } else { 1 };
        let inhibited = (vs >> (32 + t)) & 1 != 0;
        let source_enabled = vs & if from_vu { U } else { S } != 0;
        let target_enabled = vs & S != 0;
        let (source, target) = match (source_enabled, target_enabled) {
            (true, true) if !inhibited => (epc, handler),
            (false, true) if !inhibited => (0, handler),
            // External trap VU -> VS: vsctrctl.STE (table 8).
            (true, false) if vs & STE != 0 => (epc, 0),
            _ => return,
        };
        self.push_record(hart, status, source, target, t);
    }

    /// The VMM has just emulated a VS-mode SRET (trapped by `hstatus.VTSR`) at `epc`
    /// returning to `target` in VU-mode if `to_vu`, else in VS-mode. Make the guest's
    /// history what its own SRET would have made (Smctr 6.1 "Privilege Mode Transitions",
    /// table 7: a trap return between enabled modes is recorded, one to a disabled mode
    /// with target 0, one from a disabled mode not at all; 6.2 "Transfer Type Filtering",
    /// TRETINH; 6.4 "RAS (Return Address Stack) Emulation Mode": only calls and returns).
    /// CCV = 0, as for [`GuestCtr::synthesize_trap`].
    pub fn synthesize_trap_return<V: Vcpu>(
        &mut self,
        hart: &mut V,
        to_vu: bool,
        epc: u64,
        target: u64,
    ) {
        use vcpu_api::ctr::{
            CTRCTL_RASEMU as RASEMU, CTRCTL_S as S, CTRCTL_U as U, SCTRSTATUS_FROZEN as FROZEN,
        };
        /// Transfer type 3, "Trap return".
        const TRAP_RETURN: u64 = 3;
        if !self.loaded {
            return;
        }
        let vs = hart.host_csr(VSCTRCTL).unwrap_or(0);
        let status = hart.host_csr(SCTRSTATUS).unwrap_or(0);
        if status & FROZEN != 0 || vs & RASEMU != 0 || (vs >> (32 + TRAP_RETURN)) & 1 != 0 {
            return;
        }
        if vs & S == 0 {
            // From a disabled mode: not recorded.
            return;
        }
        let target_enabled = vs & if to_vu { U } else { S } != 0;
        let target = if target_enabled { target } else { 0 };
        self.push_record(hart, status, epc, target, TRAP_RETURN);
    }

    /// Writes one record (source, target, type; CCV = 0) at the guest's next WRPTR, through
    /// `vsiselect`/`vsireg*` as the guest would reach the buffer (Smctr 4 "Entry
    /// Registers"), with `sctrstatus` = `status` before it.
    fn push_record<V: Vcpu>(
        &mut self,
        hart: &mut V,
        status: u64,
        source: u64,
        target: u64,
        t: u64,
    ) {
        let depth = 16u64 << (hart.host_csr(SCTRDEPTH).unwrap_or(0) & 7);
        let wrptr = ((status & 0xff) + 1) & (depth - 1);
        hart.set_known_csr(SCTRSTATUS, (status & !0xff) | wrptr);
        let vsiselect = hart.host_csr(VSISELECT).unwrap_or(0);
        hart.set_known_csr(VSISELECT, 0x200);
        hart.set_known_csr(VSIREG, source | 1);
        hart.set_known_csr(VSIREG2, target);
        hart.set_known_csr(VSIREG3, t);
        hart.set_known_csr(VSISELECT, vsiselect);
        self.stats.synthesized += 1;
    }

    /// A CSR instruction on `sctrdepth` (Zicsr semantics): `rd` gets the guest's depth; a
    /// write that names an allowed depth selects it, others leave it (WARL); the hart
    /// follows when the context is loaded (its WRPTR and entries stay legal, Smctr 2.4
    /// "Supervisor Control Transfer Records Depth Register (sctrdepth)").
    fn emulate_depth<V: Vcpu>(&mut self, hart: &mut V, insn: u32) {
        let old = self.context.depth as u64;
        let new = vcpu_api::zicsr::CsrInsn::decode(insn).and_then(|c| c.emulate(hart, old));
        if let Some(v) = new {
            let enc = v & 7;
            if self.policy.guest_depths.contains_encoding(enc) {
                self.context.depth = enc as u8;
                if self.loaded {
                    hart.set_known_csr(SCTRDEPTH, enc);
                } else {
                    // Not on the hart: resize the saved buffer as the hart would (kept
                    // entries stay, new ones are zero; WRPTR stays legal).
                    let n = 16usize << enc;
                    self.context.entries.resize(n, Default::default());
                    self.context.sctrstatus &= vcpu_api::ctr::SCTRSTATUS_FROZEN | (n as u64 - 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod restore_tests {
    use super::*;
    use crate::{CtrVirtError, DepthSet};

    fn saved() -> GuestCtrState {
        let policy = CtrPolicy::on(None, Some(&vcpu_api::ctr::CtrConfig::full())).unwrap();
        GuestCtr::new(policy).snapshot()
    }

    /// A reserved DEPTH encoding is refused as such (it used to be clamped to 256 entries
    /// and reported as a depth the host lacks).
    #[test]
    fn reserved_depth_encodings_are_refused_by_name() {
        let s = saved();
        assert!(GuestCtr::restore(&s, 0, DepthSet::ALL).is_ok());
        for enc in [5u8, 6, 7, 200] {
            let e = GuestCtr::restore(&s, enc, DepthSet::ALL).unwrap_err();
            assert_eq!(
                e,
                CtrVirtError::ReservedDepth {
                    field: "hart sctrdepth.DEPTH",
                    encoding: enc
                }
            );
            assert!(e.to_string().contains("reserved"), "{e}");
            let mut m = s.clone();
            m.context.depth = enc;
            let e = GuestCtr::restore(&m, 0, DepthSet::ALL).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("ctr.context.depth = {enc} is a reserved"))
                    && !e.to_string().contains("host does not support"),
                "{e}"
            );
        }
    }

    /// A guest that never touched CTR gets the smallest depth the host and its policy
    /// allow; one that did, or whose context is not the reset one, keeps its depth.
    #[test]
    fn an_untouched_guest_fits_a_host_without_its_reset_depth() {
        let s = saved();
        assert_eq!(s.context.depth, 0);
        let host = DepthSet::parse("64,256").unwrap();
        assert!(GuestCtr::restore(&s, 2, host).is_err());
        let mut m = s.clone();
        assert!(m.fit_untouched(host));
        assert_eq!(m.context, CtrContext::reset(2));
        assert!(GuestCtr::restore(&m, 2, host).is_ok());
        // Already fitting: unchanged.
        assert!(!m.fit_untouched(host));
        assert!(!s.clone().fit_untouched(DepthSet::ALL));
        let mut touched = s.clone();
        touched.touched = true;
        assert!(!touched.fit_untouched(host));
        let mut used = s.clone();
        used.context.sctrstatus = 3;
        assert!(!used.fit_untouched(host));
        // Touching CTR through a trapped access marks it.
        let mut v = vcpu_api::fake::FakeVcpu::with_csrs(
            &[HSTATEEN0, VSISELECT, SCTRDEPTH, SCTRSTATUS, VSCTRCTL].map(|c| (c, 0)),
        );
        let mut g = GuestCtr::restore(&s, 0, DepthSet::ALL).unwrap();
        g.prepare(&mut v);
        // csrr a0, sctrdepth
        let _ = g.on_virtual_insn(&mut v, 0x15f0_2573, false);
        assert!(g.snapshot().touched);
    }

    /// `sctrstatus` with WRPTR at or beyond the depth, or undefined bits, is refused.
    #[test]
    fn saved_status_beyond_the_depth_is_refused() {
        let s = saved();
        for status in [16u64, 0xff, 1 << 30, 1 << 32] {
            let mut m = s.clone();
            m.context.sctrstatus = status;
            let e = GuestCtr::restore(&m, 0, DepthSet::ALL).unwrap_err();
            assert!(e.to_string().contains("ctr.context.sctrstatus"), "{e}");
        }
        let mut m = s.clone();
        m.context.sctrstatus = 15 | vcpu_api::ctr::SCTRSTATUS_FROZEN;
        assert!(GuestCtr::restore(&m, 0, DepthSet::ALL).is_ok());
    }
}

/// The rules above on the boundary's fake vCPU (no hart model): which accesses load the
/// context, which are emulated, which are refused. `tests/tests/ctr_virt.rs` runs the same
/// flows on the real hart.
#[cfg(test)]
mod fake_vcpu_tests {
    use super::*;
    use crate::DepthSet;
    use vcpu_api::ctr::CtrConfig;
    use vcpu_api::fake::FakeVcpu;

    /// `csrrs rd, csr, x0`.
    fn csrr(rd: u32, csr: u16) -> u32 {
        (u32::from(csr) << 20) | (2 << 12) | (rd << 7) | 0x73
    }

    /// `csrrw rd, csr, rs1`.
    fn csrw(rd: u32, csr: u16, rs1: u32) -> u32 {
        (u32::from(csr) << 20) | (rs1 << 15) | (1 << 12) | (rd << 7) | 0x73
    }

    fn vcpu() -> FakeVcpu {
        let csrs = [
            HSTATEEN0, VSISELECT, SCTRDEPTH, SCTRSTATUS, VSCTRCTL, VSIREG, VSIREG2, VSIREG3,
        ];
        FakeVcpu::with_csrs(&csrs.map(|c| (c, 0)))
    }

    fn on(depths: &str) -> GuestCtr {
        let requested = DepthSet::parse(depths).unwrap();
        GuestCtr::new(CtrPolicy::on(Some(requested), Some(&CtrConfig::full())).unwrap())
    }

    #[test]
    fn the_first_state_access_loads_the_context_and_retries() {
        let (mut v, mut g) = (vcpu(), on("16,64"));
        g.prepare(&mut v);
        assert_eq!(v.csrs[&HSTATEEN0], STATEEN0_CSRIND);
        assert_eq!(
            g.on_virtual_insn(&mut v, csrr(5, SCTRCTL), false),
            Outcome::Retry
        );
        assert!(g.is_loaded());
        assert_eq!(v.csrs[&HSTATEEN0], STATEEN0_CSRIND | STATEEN0_CTR);
        assert_eq!(v.pc, 0, "retried, not skipped");
        assert_eq!(g.stats.lazy_loads, 1);
        // From VU-mode every CTR access is illegal.
        assert_eq!(
            g.on_virtual_insn(&mut v, csrr(5, SCTRSTATUS), true),
            Outcome::InjectIllegal
        );
        // Unloading takes the access away again.
        g.unload(&mut v);
        assert_eq!(v.csrs[&HSTATEEN0], STATEEN0_CSRIND);
    }

    #[test]
    fn sctrdepth_is_emulated_within_the_vms_depth_set() {
        let (mut v, mut g) = (vcpu(), on("16,64"));
        g.prepare(&mut v);
        v.x[6] = 2; // 64 entries: in the set
        assert_eq!(
            g.on_virtual_insn(&mut v, csrw(5, SCTRDEPTH, 6), false),
            Outcome::Emulated
        );
        assert_eq!((v.pc, v.x[5], g.guest_depth()), (4, 0, 2));
        v.x[6] = 1; // 32 entries: not in the set, the depth stays
        g.on_virtual_insn(&mut v, csrw(5, SCTRDEPTH, 6), false);
        assert_eq!((v.pc, v.x[5], g.guest_depth()), (8, 2, 2));
        assert!(!g.is_loaded(), "sctrdepth does not load the context");
        assert_eq!(g.stats.depth_emulated, 2);
    }

    #[test]
    fn with_ctr_off_every_ctr_access_is_refused_and_others_are_not_ctr() {
        let (mut v, mut g) = (vcpu(), GuestCtr::new(CtrPolicy::off()));
        g.prepare(&mut v);
        assert_eq!(v.csrs[&HSTATEEN0], 0);
        for insn in [csrr(5, SCTRCTL), csrr(5, SCTRDEPTH), SCTRCLR] {
            assert_eq!(
                g.on_virtual_insn(&mut v, insn, false),
                Outcome::InjectIllegal
            );
        }
        assert_eq!(
            g.on_virtual_insn(&mut v, csrr(5, 0x100), false),
            Outcome::NotCtr
        );
    }
}
