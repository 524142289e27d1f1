//! Sampling for guests: Sspesa (`shpmspc`/`shpmsdata`) and Smpdis/Sspdis (PDIS), from the
//! draft `sspesa-ssplcofi-smpdis-draft.adoc`, on the hart's provisional CSR numbers
//! ([`vcpu_api::pmu::DraftNumbers`]).
//!
//! # Sspesa
//! There is no VS-level `shpmspc`: the draft makes VS-mode accesses to `shpmspc`/`shpmsdata`
//! raise virtual-instruction while `menvcfg.CDE` = 1 and illegal-instruction while CDE = 0
//! ("Hardware Performance Monitor Sample PC Register (`shpmspc`)"). So a guest can only see
//! a sample through its hypervisor: [`GuestSampling::prepare`] sets `menvcfg.CDE`, and the
//! exits are emulated from the hart's own `shpmspc`/`shpmsdata`, which hold the sample of
//! the guest's counter: the counters the guest configured through the SBI PMU extension
//! have their `mcounteren` bit set (so they are "delegated" and capture, the draft's rule
//! with CDE = 1), the hart runs only this vCPU (with `--pcpus` the registers are switched
//! with the rest of the hart's state), and CNTRID needs no translation because the guest's
//! logical counter `i` is hart counter `i`.
//! With `hideleg.LCOFI` = 1 the hart's `mip.LCOFIP` is the guest's `vsip.LCOFIP`, so the
//! draft's "first overflow while LCOFIP is 0" rule holds for the guest as it is.
//!
//! CDE = 1 also makes `scountovf` trap from VS/VU (Smcdeleg 5 "Virtualizing `scountovf`"):
//! its reads from VS are emulated here with the value the guest read directly before (OF of
//! the counters the guest was given, `hcounteren`, and bit 1, `mpdisctl.OF`, once the guest
//! has PDIS).
//! `scountinhibit` and `sireg*` at `vsiselect` 0x40-0x5F trap as well and are not this
//! module's (the VMM injects illegal-instruction, what a guest without Ssccfg sees).
//!
//! # PDIS
//! `mstateen0.PDIS` = 1 and `hstateen0.PDIS` = 0 until the guest's first access to PDIS
//! state (`spdisctl`, which is `vspdisctl` with V = 1, `spdiscounter`, `spdisevmask`,
//! `spdisevmatch`, `spdisfilter`, and `sireg*` at `vsiselect` 0x60/0x61): that access raises
//! virtual-instruction ("State Enable Access Control"), the VMM loads the vCPU's PDIS
//! context and sets `hstateen0.PDIS`, and the instruction runs again, as `ctr-virt` does
//! with `hstateen0.CTR`. From then on the guest accesses PDIS directly; its state is the
//! hart's (switched per vCPU with `--pcpus`, carried in snapshots). `hstateen0.CSRIND` is set
//! so that the sample record registers can be reached. VU-mode accesses are illegal for the
//! guest (injected).

use serde::{Deserialize, Serialize};
use vcpu_api::csr::{MHPMEVENT_OF as OF, PDISCTL_OF};
use vcpu_api::pmu::DraftNumbers;
use vcpu_api::Vcpu;

/// CSR numbers and bits (privileged spec, Smstateen, Smcdeleg, Sscsrind), from
/// `vcpu_api::csr`.
mod csr {
    pub use vcpu_api::csr::{
        HCOUNTEREN, HSTATEEN0, MCOUNTEREN, MCOUNTINHIBIT, MENVCFG, MENVCFG_CDE as CDE, MSTATEEN0,
        SCOUNTOVF, SIREG, SIREG6, STATEEN0_CSRIND, VSISELECT,
    };
    /// `mhpmevent3` - 3: add the counter index (3-31).
    pub const MHPMEVENT: u16 = vcpu_api::csr::MHPMEVENT3 - 3;
    /// `vsireg`..`vsireg6` (0x254 does not exist).
    pub const VSIREGS: [u16; 6] = {
        use vcpu_api::csr::*;
        [VSIREG, VSIREG2, VSIREG3, VSIREG4, VSIREG5, VSIREG6]
    };
    /// `mcountinhibit` bit 1: the PDIS counter.
    pub const INHIBIT_PDIS: u64 = 1 << 1;
    /// The PDIS sample record's select values.
    pub const PDIS_SELECT: std::ops::RangeInclusive<u64> = 0x60..=0x61;
}

/// What a VM gets of sampling (with a PMU that has overflow interrupts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingPolicy {
    /// Sspesa/Ssplcofi: `shpmspc`/`shpmsdata` emulated (sets `menvcfg.CDE`).
    pub sspesa: bool,
    /// Sspdis: PDIS state for the guest, loaded on its first access.
    pub pdis: bool,
    /// The hart's numbers for the draft CSRs and the `mstateen0.PDIS` bit.
    pub numbers: DraftNumbers,
}

impl SamplingPolicy {
    /// Both, on the provisional numbers.
    pub fn on() -> SamplingPolicy {
        SamplingPolicy {
            sspesa: true,
            pdis: true,
            numbers: DraftNumbers::PROVISIONAL,
        }
    }

    /// Neither: the guest's accesses raise illegal-instruction, as on a hart without them.
    pub fn off() -> SamplingPolicy {
        SamplingPolicy {
            sspesa: false,
            pdis: false,
            numbers: DraftNumbers::PROVISIONAL,
        }
    }

    fn stateen_pdis(&self) -> u64 {
        1 << self.numbers.stateen_pdis_bit
    }
}

/// A vCPU's PDIS state as a hypervisor puts it on a hart: every register the guest can
/// reach. Until the guest's first access it is the reset state (all zero); after it the
/// state lives on the hart (this VMM never takes it back: it does not use PDIS itself).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PdisContext {
    /// `vspdisctl` (the guest's `spdisctl`).
    pub vspdisctl: u64,
    /// `spdiscounter`.
    pub spdiscounter: u64,
    /// `spdisevmask`.
    pub spdisevmask: u64,
    /// `spdisevmatch`.
    pub spdisevmatch: u64,
    /// `spdisfilter`.
    pub spdisfilter: u64,
    /// The sample record (`vsiselect` 0x60: `vsireg`..`vsireg6`).
    pub record: [u64; 6],
}

impl PdisContext {
    /// Load this context onto `hart` (numbers `n`): the filters and the counter, the record,
    /// then `vspdisctl` (which starts counting). The guest's `vsiselect` is preserved.
    /// (The lazy load of Smpdis "State Enable Access Control".)
    pub fn load(&self, hart: &mut dyn Vcpu, n: &DraftNumbers) {
        hart.set_known_csr(n.spdisevmask, self.spdisevmask);
        hart.set_known_csr(n.spdisevmatch, self.spdisevmatch);
        hart.set_known_csr(n.spdisfilter, self.spdisfilter);
        hart.set_known_csr(n.spdiscounter, self.spdiscounter);
        let vsiselect = hart.host_csr(csr::VSISELECT).unwrap_or(0);
        hart.set_known_csr(csr::VSISELECT, *csr::PDIS_SELECT.start());
        for (num, v) in csr::VSIREGS.iter().zip(self.record) {
            hart.set_known_csr(*num, v);
        }
        hart.set_known_csr(csr::VSISELECT, vsiselect);
        hart.set_known_csr(n.vspdisctl, self.vspdisctl);
    }
}

/// What a trapped instruction is, as far as sampling is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleAccess {
    /// A CSR instruction on `shpmspc`.
    Shpmspc,
    /// A CSR instruction on `shpmsdata`.
    Shpmsdata,
    /// A read of `scountovf`.
    Scountovf,
    /// PDIS state: `spdis*` or `sireg*` at `vsiselect` 0x60/0x61.
    Pdis,
}

/// Classify instruction `insn`, trapped with the guest's `vsiselect`, for a hart with the
/// draft numbers `n`: Sspesa's
/// "Hardware Performance Monitor Sample PC Register (`shpmspc`)" and
/// "Hardware Performance Monitor Sample Metadata (`shpmsdata`)", `scountovf`, or PDIS
/// state.
pub fn classify(insn: u32, vsiselect: u64, n: &DraftNumbers) -> Option<SampleAccess> {
    let funct3 = (insn >> 12) & 7;
    if insn & 0x7f != 0x73 || funct3 == 0 || funct3 == 4 {
        return None;
    }
    let num = (insn >> 20) as u16;
    let pdis = [
        n.spdisctl,
        n.spdiscounter,
        n.spdisevmask,
        n.spdisevmatch,
        n.spdisfilter,
    ];
    match num {
        _ if num == n.shpmspc => Some(SampleAccess::Shpmspc),
        _ if num == n.shpmsdata => Some(SampleAccess::Shpmsdata),
        csr::SCOUNTOVF => Some(SampleAccess::Scountovf),
        _ if pdis.contains(&num) => Some(SampleAccess::Pdis),
        csr::SIREG..=csr::SIREG6 if num != 0x154 && csr::PDIS_SELECT.contains(&vsiselect) => {
            Some(SampleAccess::Pdis)
        }
        _ => None,
    }
}

/// What the VMM must do after [`GuestSampling::on_virtual_insn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleOutcome {
    /// Not a sampling instruction.
    NotSampling,
    /// `shpmspc`/`shpmsdata` emulated; the pc is past the instruction.
    EmulatedSspesa,
    /// A read of `scountovf` emulated; the pc is past the instruction.
    EmulatedScountovf,
    /// The PDIS context is loaded and `hstateen0.PDIS` set; resume at the same instruction.
    PdisLoaded,
    /// Inject illegal-instruction (`xtval` = the instruction bits).
    InjectIllegal,
}

/// Counts for `--stats` and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleStats {
    /// `shpmspc`/`shpmsdata` accesses emulated.
    pub sspesa_emulated: u64,
    /// `scountovf` reads emulated.
    pub scountovf_emulated: u64,
    /// PDIS contexts loaded on a first access.
    pub pdis_loads: u64,
    /// Sampling accesses answered with illegal-instruction.
    pub injected_illegal: u64,
}

/// What a snapshot keeps of a [`GuestSampling`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestSamplingState {
    /// The VM's policy.
    pub policy: SamplingPolicy,
    /// Whether the PDIS context is on the hart (`hstateen0.PDIS` = 1; the hart's state holds
    /// it).
    pub loaded: bool,
    /// The PDIS context while not loaded.
    pub context: PdisContext,
    /// With selective LCOFI delivery: the sample (`shpmspc`, `shpmsdata`) latched when the
    /// guest's virtual LCOFI became pending, which its reads see ([`GuestSampling::latch`]).
    pub latched: Option<(u64, u64)>,
}

/// One vCPU's sampling as its hypervisor manages it.
#[derive(Clone, Debug)]
pub struct GuestSampling {
    policy: SamplingPolicy,
    loaded: bool,
    context: PdisContext,
    latched: Option<(u64, u64)>,
    /// Counters for `--stats`.
    pub stats: SampleStats,
}

impl GuestSampling {
    /// A vCPU's sampling after reset: PDIS context zero, not loaded.
    pub fn new(policy: SamplingPolicy) -> GuestSampling {
        GuestSampling {
            policy,
            loaded: false,
            context: PdisContext::default(),
            latched: None,
            stats: SampleStats::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> SamplingPolicy {
        self.policy
    }

    /// Whether the PDIS context is on the hart.
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Prepare a fresh hart (Smpdis "State Enable Access Control": the guest's first PDIS
    /// access exits): Sspesa sets `menvcfg.CDE` (see the module documentation); PDIS
    /// sets `mstateen0.PDIS` and `hstateen0.CSRIND` and clears `hstateen0.PDIS`. Without
    /// them CDE and `mstateen0.PDIS` stay 0: the guest's accesses are illegal-instruction
    /// without an exit.
    pub fn prepare(&self, hart: &mut dyn Vcpu) {
        let rd = |hart: &dyn Vcpu, n| hart.host_csr(n).unwrap_or(0);
        let envcfg = rd(hart, csr::MENVCFG) & !csr::CDE;
        let cde = if self.policy.sspesa { csr::CDE } else { 0 };
        hart.set_known_csr(csr::MENVCFG, envcfg | cde);
        let bit = self.policy.stateen_pdis();
        let m = rd(hart, csr::MSTATEEN0) & !bit;
        let h = rd(hart, csr::HSTATEEN0) & !bit;
        if self.policy.pdis {
            hart.set_known_csr(csr::MSTATEEN0, m | bit);
            hart.set_known_csr(csr::HSTATEEN0, h | csr::STATEEN0_CSRIND);
        } else {
            hart.set_known_csr(csr::MSTATEEN0, m);
            hart.set_known_csr(csr::HSTATEEN0, h);
        }
    }

    /// Put the PDIS context onto `hart` and give the guest direct access (`hstateen0.PDIS`
    /// = 1: Smpdis "State Enable Access Control"). The PDIS counter is not inhibited
    /// (`mcountinhibit[1]` = 0): the guest's `vspdisctl` S/U decide where it counts.
    pub fn load(&mut self, hart: &mut dyn Vcpu) {
        let n = self.policy.numbers;
        self.context.load(hart, &n);
        let inhibit = hart.host_csr(csr::MCOUNTINHIBIT).unwrap_or(0);
        hart.set_known_csr(csr::MCOUNTINHIBIT, inhibit & !csr::INHIBIT_PDIS);
        let h = hart.host_csr(csr::HSTATEEN0).unwrap_or(0);
        hart.set_known_csr(
            csr::HSTATEEN0,
            h | self.policy.stateen_pdis() | csr::STATEEN0_CSRIND,
        );
        self.loaded = true;
    }

    /// What a snapshot keeps (the hart's own state, PDIS and Sspesa registers included, is
    /// saved with the hart).
    pub fn snapshot(&self) -> GuestSamplingState {
        GuestSamplingState {
            policy: self.policy,
            loaded: self.loaded,
            context: self.context.clone(),
            latched: self.latched,
        }
    }

    /// From a snapshot; `None` when its draft numbers are not a valid hart configuration
    /// (they would make the VMM take other CSRs for sampling ones).
    pub fn restore(state: &GuestSamplingState) -> Option<GuestSampling> {
        let config = vcpu_api::pmu::PmuConfig {
            numbers: state.policy.numbers,
        };
        config.validate().ok()?;
        Some(GuestSampling {
            policy: state.policy,
            loaded: state.loaded,
            context: state.context.clone(),
            latched: state.latched,
            stats: SampleStats::default(),
        })
    }

    /// Whether the guest's PDIS sample counter overflowed (its context is on the hart and
    /// `mpdisctl.OF` is set): an LCOFI of the guest's.
    pub fn pdis_overflowed(&self, hart: &dyn Vcpu) -> bool {
        self.loaded && hart.host_csr(self.policy.numbers.mpdisctl).unwrap_or(0) & PDISCTL_OF != 0
    }

    /// Selective LCOFI delivery: the VMM just made the guest's virtual LCOFI pending
    /// (`hvip[13]` from 0 to 1). Sspesa
    /// ("Hardware Performance Monitor Sample PC Register (`shpmspc`)") captures on the
    /// LCOFIP that the guest sees going from 0 to 1; the hart's own `mip.LCOFIP`, which the
    /// VMM clears on every overflow it passes on, would let a later overflow overwrite the
    /// sample while the guest's LCOFI is still pending. So the VMM keeps this sample for
    /// the guest until it becomes pending again.
    pub fn latch(&mut self, hart: &dyn Vcpu) {
        let n = self.policy.numbers;
        self.latched = Some((
            hart.host_csr(n.shpmspc).unwrap_or(0),
            hart.host_csr(n.shpmsdata).unwrap_or(0),
        ));
    }

    /// Handle a virtual-instruction exit of instruction `insn` (from VU-mode if `from_vu`):
    /// Sspesa "Hardware Performance Monitor Sample PC Register (`shpmspc`)" and
    /// "Hardware Performance Monitor Sample Metadata (`shpmsdata`)" emulated, Smcdeleg 5
    /// "Virtualizing `scountovf`", and the PDIS lazy load (Smpdis
    /// "State Enable Access Control"). `map`: virtual counter `i` is hart counter `map[i]`
    /// (counter delegation moves them); `shpmsdata.CNTRID` is shown to the guest as its own
    /// counter number.
    pub fn on_virtual_insn(
        &mut self,
        hart: &mut dyn Vcpu,
        insn: u32,
        from_vu: bool,
        map: &[u8; 32],
    ) -> SampleOutcome {
        let n = self.policy.numbers;
        let vsiselect = hart.host_csr(csr::VSISELECT).unwrap_or(0);
        let Some(access) = classify(insn, vsiselect, &n) else {
            return SampleOutcome::NotSampling;
        };
        match access {
            // scountovf traps because of the CDE this module sets; from VU it is an S-level
            // CSR (illegal for the guest's U-mode).
            SampleAccess::Scountovf if !self.policy.sspesa => SampleOutcome::NotSampling,
            _ if from_vu => self.illegal(),
            SampleAccess::Shpmspc | SampleAccess::Shpmsdata if !self.policy.sspesa => {
                self.illegal()
            }
            SampleAccess::Shpmspc | SampleAccess::Shpmsdata => {
                let num = if access == SampleAccess::Shpmspc {
                    n.shpmspc
                } else {
                    n.shpmsdata
                };
                let is_data = access == SampleAccess::Shpmsdata;
                let old = match self.latched {
                    Some((pc, data)) => {
                        if is_data {
                            data
                        } else {
                            pc
                        }
                    }
                    None => hart.host_csr(num).unwrap_or(0),
                };
                // shpmsdata.CNTRID (bits 4:0) names a hart counter; the guest sees its own.
                let to_virtual = |v: u64| {
                    let id = (v & 0x1f) as u8;
                    let virt = map.iter().position(|&p| p == id).unwrap_or(usize::from(id));
                    (v & !0x1f) | virt as u64
                };
                let to_hart = |v: u64| (v & !0x1f) | u64::from(map[(v & 0x1f) as usize]);
                let shown = if is_data { to_virtual(old) } else { old };
                if let Some(new) = zicsr(hart, insn, shown) {
                    // WARL as the hart applies it (shpmsdata: CNTRID only).
                    hart.set_known_csr(num, if is_data { to_hart(new) } else { new });
                    if let Some((pc, data)) = &mut self.latched {
                        let legal = hart.host_csr(num).unwrap_or(0);
                        *(if is_data { data } else { pc }) = legal;
                    }
                }
                hart.set_pc(hart.pc().wrapping_add(4));
                self.stats.sspesa_emulated += 1;
                SampleOutcome::EmulatedSspesa
            }
            SampleAccess::Scountovf => {
                let v = self.scountovf(hart);
                // A read-only CSR: the hart makes any write illegal before it could trap.
                zicsr(hart, insn, v);
                hart.set_pc(hart.pc().wrapping_add(4));
                self.stats.scountovf_emulated += 1;
                SampleOutcome::EmulatedScountovf
            }
            SampleAccess::Pdis if !self.policy.pdis || self.loaded => {
                // Loaded but trapped: nothing this VMM traps on purpose (and no retry loop).
                self.illegal()
            }
            SampleAccess::Pdis => {
                self.load(hart);
                self.stats.pdis_loads += 1;
                SampleOutcome::PdisLoaded
            }
        }
    }

    fn illegal(&mut self) -> SampleOutcome {
        self.stats.injected_illegal += 1;
        SampleOutcome::InjectIllegal
    }

    /// `scountovf` as the guest reads it: OF of the hpm counters it was given (`mcounteren`
    /// and `hcounteren`, as Sscofpmf masks it in VS-mode), and bit 1, `mpdisctl.OF`, while
    /// the guest has its PDIS context (Smpdis
    /// "Supervisor Counter Overflow Register (`scountovf`)").
    fn scountovf(&self, hart: &dyn Vcpu) -> u64 {
        let rd = |n| hart.host_csr(n).unwrap_or(0);
        let given = rd(csr::MCOUNTEREN) & rd(csr::HCOUNTEREN);
        let mut v = 0;
        for i in 3..32u16 {
            if given >> i & 1 != 0 && rd(csr::MHPMEVENT + i) & OF != 0 {
                v |= 1 << i;
            }
        }
        if self.loaded && rd(self.policy.numbers.mpdisctl) & PDISCTL_OF != 0 {
            v |= csr::INHIBIT_PDIS;
        }
        v
    }
}

/// Zicsr semantics of CSR instruction `insn` on a CSR whose value is `old`: `rd` gets `old`;
/// returns the value to write, if the instruction writes.
fn zicsr(hart: &mut dyn Vcpu, insn: u32, old: u64) -> Option<u64> {
    vcpu_api::zicsr::CsrInsn::decode(insn).and_then(|c| c.emulate(hart, old))
}
