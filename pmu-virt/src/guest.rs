//! A vCPU's virtual PMU and the SBI PMU functions on it.

use serde::{Deserialize, Serialize};
use vcpu_api::csr::{
    MHPMEVENT_MINH as MINH, MHPMEVENT_OF as OF, MHPMEVENT_SINH as SINH, MHPMEVENT_UINH as UINH,
    MHPMEVENT_VSINH as VSINH, MHPMEVENT_VUINH as VUINH,
};
use vcpu_api::Vcpu;
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap};

use crate::event::{self, EventTarget};
use crate::fw::FwTallies;
use crate::sample::{GuestSampling, GuestSamplingState};
use crate::sbi::*;
use crate::{PmuError, PmuPolicy, CY, FW_COUNTERS, HW_COUNTERS, IR, NUM_COUNTERS};

/// CSR numbers the VMM programs (from `vcpu_api::csr`).
pub(crate) mod csr {
    pub use vcpu_api::csr::{
        HCOUNTEREN, HSTATEEN0, MCOUNTEREN, MCOUNTINHIBIT, MCYCLECFG, MENVCFG, MINSTRETCFG,
    };
    /// `mhpmevent3` - 3: add the counter index (3-31).
    pub const MHPMEVENT: u16 = vcpu_api::csr::MHPMEVENT3 - 3;
    /// `mcycle`: add the counter index (`mcycle` 0, `minstret` 2, `mhpmcounter3-31`).
    pub const MHPMCOUNTER: u16 = vcpu_api::csr::MCYCLE;
    /// `cycle`, as a selector value.
    pub const CYCLE: u64 = vcpu_api::csr::CYCLE as u64;
}

/// The inhibit bits that keep everything but the guest (VS and VU) from being counted.
pub const HOST_INH: u64 = MINH | SINH | UINH;
/// One logical counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterState {
    /// What it counts (`None`: not configured).
    pub event: Option<EventTarget>,
    /// Whether it is started.
    pub started: bool,
    /// The guest's mode filter: `VSINH`/`VUINH` bits (hardware counters).
    pub inhibit: u64,
    /// Firmware counters: the value at the last stop (or set).
    pub value: u64,
    /// Firmware counters: the event's tally when it started.
    pub base: u64,
}

/// What a VM snapshot keeps of a [`GuestPmu`] (the hardware counters' values are in the
/// hart's state).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestPmuState {
    /// The VM's policy.
    pub policy: PmuPolicy,
    /// Every logical counter.
    pub counters: Vec<CounterState>,
    /// The snapshot shared memory (guest-physical).
    pub shmem: Option<u64>,
    /// This vCPU's firmware-event tallies, in [`FwEvent`] order.
    pub tallies: Vec<u64>,
    /// Virtual counter `i` (< 32) is hart counter `map[i]` (the identity without counter
    /// delegation; see [`crate::deleg::deleg_map`]).
    pub map: Vec<u8>,
    /// Its sampling (Sspesa, PDIS lazy loading).
    pub sampling: GuestSamplingState,
}

/// A vCPU's virtual PMU (see the crate documentation).
///
/// ```no_run
/// # fn f<V: vcpu_api::Vcpu>(hart: &mut V, mem: &vm_memory::GuestMemoryMmap) {
/// use pmu_virt::{FwTallies, GuestPmu, PmuPolicy};
/// let mut pmu = GuestPmu::new(PmuPolicy::on(), 0, FwTallies::new(1));
/// pmu.prepare(hart);
/// // sbi_pmu_num_counters()
/// assert_eq!(pmu.sbi_call(hart, mem, 0, [0; 6]), Ok(48));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct GuestPmu {
    pub(crate) policy: PmuPolicy,
    vcpu_id: usize,
    pub(crate) counters: Vec<CounterState>,
    shmem: Option<u64>,
    tallies: FwTallies,
    /// Virtual counter `i` is hart counter `map[i]`.
    pub(crate) map: [u8; HW_COUNTERS],
    pub(crate) sampling: GuestSampling,
}

impl GuestPmu {
    /// The PMU of vCPU `vcpu_id`, counting firmware events in `tallies` (the VM's).
    pub fn new(policy: PmuPolicy, vcpu_id: usize, tallies: FwTallies) -> GuestPmu {
        let mut counters = vec![CounterState::default(); NUM_COUNTERS];
        if policy.hw_mask() >> CY & 1 != 0 {
            counters[CY].event = Some(EventTarget::CYCLES);
            counters[CY].started = true;
        }
        if policy.hw_mask() >> IR & 1 != 0 {
            counters[IR].event = Some(EventTarget::INSTRUCTIONS);
            counters[IR].started = true;
        }
        let map = if policy.deleg_on() {
            crate::deleg::map::deleg_map(policy.hw_mask())
        } else {
            crate::deleg::map::identity_map()
        };
        GuestPmu {
            policy,
            vcpu_id,
            counters,
            shmem: None,
            tallies,
            map,
            sampling: GuestSampling::new(policy.effective_sampling()),
        }
    }

    /// The hart counter behind virtual counter `i` (< 32).
    pub fn hart_counter(&self, i: usize) -> Option<usize> {
        self.map.get(i).map(|&p| usize::from(p))
    }

    /// The hart counter behind virtual hardware counter `i` (< 32).
    pub(crate) fn phys(&self, i: usize) -> usize {
        usize::from(self.map[i & (HW_COUNTERS - 1)])
    }

    /// This vCPU's sampling (Sspesa, PDIS).
    pub fn sampling(&mut self) -> &mut GuestSampling {
        &mut self.sampling
    }

    /// A virtual-instruction exit that may be a sampling access ([`GuestSampling`]), with
    /// this vCPU's counter mapping.
    pub fn sampling_virtual_insn(
        &mut self,
        vcpu: &mut dyn Vcpu,
        insn: u32,
        from_vu: bool,
    ) -> crate::SampleOutcome {
        self.sampling
            .on_virtual_insn(vcpu, insn, from_vu, &self.map)
    }

    /// The VM's policy.
    pub fn policy(&self) -> PmuPolicy {
        self.policy
    }

    /// Programs a fresh hart for this PMU: counters 3-31 stopped with no event, the fixed
    /// counters running, every counter filtered to the guest's modes (for counters 0 and 2
    /// through Smcntrpmf 2.1
    /// "Machine Counter Configuration Registers (mcyclecfg, minstretcfg)"), and LCOFI
    /// delivered to the guest with Sscofpmf. Does nothing without a PMU.
    pub fn prepare(&self, vcpu: &mut dyn Vcpu) {
        if !self.policy.enabled {
            return;
        }
        let mask = u64::from(self.policy.hw_mask());
        let inhibit = vcpu.host_csr(csr::MCOUNTINHIBIT).unwrap_or(0);
        let stopped = mask & !(1 << CY | 1 << IR);
        vcpu.set_known_csr(csr::MCOUNTINHIBIT, (inhibit & !mask) | stopped);
        vcpu.set_known_csr(csr::MCYCLECFG, HOST_INH);
        vcpu.set_known_csr(csr::MINSTRETCFG, HOST_INH);
        for i in 3..HW_COUNTERS {
            if mask >> i & 1 != 0 {
                vcpu.set_known_csr(csr::MHPMEVENT + i as u16, HOST_INH);
            }
        }
        if self.policy.sscofpmf {
            crate::lcofi::prepare(vcpu, self.policy.lcofi);
        }
        self.sampling.prepare(vcpu);
        if self.policy.deleg_on() {
            self.prepare_deleg(vcpu);
        }
    }

    /// An HS-level LCOFI reached the VMM (selective delivery, [`crate::lcofi`]): passes it
    /// to the guest through `hvip` if one of its counters overflowed (Smcdeleg 6
    /// "Virtualizing Local Counter Overflow Interrupts").
    pub fn take_lcofi(&mut self, vcpu: &mut dyn Vcpu) -> crate::LcofiOutcome {
        let was_pending = crate::lcofi::virtual_pending(vcpu);
        let pdis = self.sampling.pdis_overflowed(vcpu);
        let outcome = crate::lcofi::take(vcpu, self.policy.hw_mask(), pdis);
        if outcome == crate::LcofiOutcome::Injected && !was_pending {
            self.sampling.latch(vcpu);
        }
        outcome
    }

    /// What a snapshot keeps.
    pub fn snapshot(&self) -> GuestPmuState {
        GuestPmuState {
            policy: self.policy,
            counters: self.counters.clone(),
            shmem: self.shmem,
            tallies: self.tallies.row(self.vcpu_id),
            map: self.map.to_vec(),
            sampling: self.sampling.snapshot(),
        }
    }

    /// The PMU of vCPU `vcpu_id` from a snapshot (its tallies are written to `tallies`).
    /// `None` when the state is malformed.
    pub fn restore(state: &GuestPmuState, vcpu_id: usize, tallies: FwTallies) -> Option<Self> {
        if state.counters.len() != NUM_COUNTERS {
            return None;
        }
        let map: [u8; HW_COUNTERS] = state.map.as_slice().try_into().ok()?;
        if !crate::deleg::map::valid_map(&map, state.policy.hw_mask()) {
            return None;
        }
        tallies.set_row(vcpu_id, &state.tallies);
        Some(GuestPmu {
            policy: state.policy,
            vcpu_id,
            counters: state.counters.clone(),
            shmem: state.shmem,
            tallies,
            map,
            sampling: GuestSampling::restore(&state.sampling)?,
        })
    }

    /// Logical counter `idx` (for tests and statistics).
    pub fn counter(&self, idx: usize) -> Option<&CounterState> {
        self.counters.get(idx)
    }

    /// Whether logical counter `idx` exists.
    fn valid(&self, idx: u64) -> bool {
        match usize::try_from(idx) {
            Ok(i) if i < HW_COUNTERS => self.policy.hw_mask() >> i & 1 != 0,
            Ok(i) => self.policy.enabled && i < HW_COUNTERS + FW_COUNTERS,
            Err(_) => false,
        }
    }

    pub(crate) fn is_fw(idx: usize) -> bool {
        idx >= HW_COUNTERS
    }

    /// The counters of a `(counter_idx_base, counter_idx_mask)` set (SBI v2.0 sections
    /// 11.7-11.9), in increasing order. The set is `SBI_ERR_INVALID_PARAM` ("at least one
    /// invalid counter") when it names an index that is no logical counter index: `base +
    /// bit` at or past `num_counters`, or not representable (the sum wraps). An empty mask
    /// is invalid too. Indexes below `num_counters` with no counter behind them (1, `time`;
    /// hpm counters the VM is not given) are holes, left out of the set: a guest may pass
    /// "every counter" as `base` 0 and `mask` `(1 << num_counters) - 1`, as KVM and OpenSBI
    /// accept (both check only `base + highest bit < num_counters`).
    fn counter_set(&self, base: u64, mask: u64) -> Result<Vec<usize>, PmuError> {
        let bad = PmuError::InvalidCounterSet { base, mask };
        if mask == 0 {
            return Err(bad);
        }
        let highest = u64::from(63 - mask.leading_zeros());
        match base.checked_add(highest) {
            Some(top) if top < NUM_COUNTERS as u64 => {}
            _ => return Err(bad),
        }
        Ok((0..64)
            .filter(|bit| mask >> bit & 1 != 0)
            .map(|bit| base + bit)
            .filter(|&idx| self.valid(idx))
            .map(|idx| idx as usize)
            .collect())
    }

    /// Whether counter `i` is in use, so that `counter_start` and `counter_stop` act on it:
    /// configured for an event (0 and 2 always are) or running (a delegated counter the
    /// guest started through `scountinhibit` without an event).
    fn in_use(&self, i: usize) -> bool {
        let c = &self.counters[i];
        c.event.is_some() || c.started
    }

    /// Handles SBI PMU function `fid` with arguments `args` (`a0`-`a5`) for the guest running
    /// on `vcpu`; the shared memory is in `mem`. `Ok` is `sbiret.value`.
    pub fn sbi_call(
        &mut self,
        vcpu: &mut dyn Vcpu,
        mem: &GuestMemoryMmap,
        fid: u64,
        args: [u64; 6],
    ) -> Result<u64, PmuError> {
        match fid {
            NUM_COUNTERS_FID => Ok(NUM_COUNTERS as u64),
            COUNTER_GET_INFO => self.get_info(args[0]),
            COUNTER_CONFIG_MATCHING => {
                self.config_matching(vcpu, args[0], args[1], args[2], args[3], args[4])
            }
            COUNTER_START => self.start(vcpu, mem, args[0], args[1], args[2], args[3]),
            COUNTER_STOP => self.stop(vcpu, mem, args[0], args[1], args[2]),
            COUNTER_FW_READ => self.fw_read(args[0]),
            COUNTER_FW_READ_HI => self.fw_read(args[0]).map(|_| 0),
            SNAPSHOT_SET_SHMEM => self.set_shmem(mem, args[0], args[1], args[2]),
            other => Err(PmuError::UnknownFunction(other)),
        }
    }

    /// `sbi_pmu_counter_get_info`.
    fn get_info(&self, idx: u64) -> Result<u64, PmuError> {
        if !self.valid(idx) {
            return Err(PmuError::InvalidCounter(idx));
        }
        if Self::is_fw(idx as usize) {
            Ok(INFO_FIRMWARE)
        } else {
            // CSR number, width - 1 = 63.
            Ok((csr::CYCLE + idx) | 63 << 12)
        }
    }

    /// Whether counter `idx` can count `target`.
    fn can_count(idx: usize, target: EventTarget) -> bool {
        match (idx, target) {
            (CY, t) => t == EventTarget::CYCLES,
            (IR, t) => t == EventTarget::INSTRUCTIONS,
            (i, EventTarget::Hardware(_)) => !Self::is_fw(i),
            (i, EventTarget::Firmware(_)) => Self::is_fw(i),
        }
    }

    /// `sbi_pmu_counter_config_matching`.
    fn config_matching(
        &mut self,
        vcpu: &mut dyn Vcpu,
        base: u64,
        mask: u64,
        flags: u64,
        event_idx: u64,
        event_data: u64,
    ) -> Result<u64, PmuError> {
        if flags >> 8 != 0 {
            return Err(PmuError::InvalidFlags(flags));
        }
        let set = self.counter_set(base, mask)?;
        let target = event::decode(event_idx, event_data)?;
        let chosen = if flags & CFG_SKIP_MATCH != 0 {
            // "The first counter from the set": the lowest index of the mask, which may be
            // a hole (then nothing here can count the event).
            let first = base + u64::from(mask.trailing_zeros());
            set.first()
                .copied()
                .filter(|&i| i as u64 == first && Self::can_count(i, target))
        } else {
            self.match_free(&set, target)
        }
        .ok_or(PmuError::NoMatchingCounter(event_idx))?;

        let mut inhibit = 0;
        if flags & CFG_SET_SINH != 0 {
            inhibit |= VSINH;
        }
        if flags & CFG_SET_UINH != 0 {
            inhibit |= VUINH;
        }
        let c = &mut self.counters[chosen];
        c.event = Some(target);
        c.inhibit = inhibit;
        if !Self::is_fw(chosen) {
            self.program_hw(vcpu, chosen);
        }
        // With counter delegation every counter is the guest's all along (`prepare`).
        if !Self::is_fw(chosen) && !self.policy.deleg_on() {
            let bit = 1u64 << chosen;
            for num in [csr::MCOUNTEREN, csr::HCOUNTEREN] {
                let v = vcpu.host_csr(num).unwrap_or(0);
                vcpu.set_known_csr(num, v | bit);
            }
        }
        if flags & CFG_CLEAR_VALUE != 0 {
            self.set_value(vcpu, chosen, 0);
        }
        if flags & CFG_AUTO_START != 0 && !self.counters[chosen].started {
            self.start_one(vcpu, chosen);
        }
        Ok(chosen as u64)
    }

    /// The counter of `set` that `counter_config_matching` (without `SKIP_MATCH`) gives
    /// `target`: the lowest free one that can count it, except that with Sscofpmf a free hpm
    /// counter (3-31) is preferred to `mcycle`/`minstret` for cycles and instructions. Only
    /// `mhpmevent` has the OF bit (Sscofpmf; `mcyclecfg`/`minstretcfg` have none), so only
    /// an hpm counter can raise the overflow interrupt a sampling guest (Linux `perf record`)
    /// waits for, and the call does not say whether the guest samples. The fixed counters
    /// are still matched when the set names no free hpm counter.
    fn match_free(&self, set: &[usize], target: EventTarget) -> Option<usize> {
        let usable = |&i: &usize| self.free(i) && Self::can_count(i, target);
        let fixed = target == EventTarget::CYCLES || target == EventTarget::INSTRUCTIONS;
        if fixed && self.policy.sscofpmf {
            let hpm = set
                .iter()
                .copied()
                .filter(|&i| i >= 3 && !Self::is_fw(i))
                .find(usable);
            if hpm.is_some() {
                return hpm;
            }
        }
        set.iter().copied().find(usable)
    }

    /// Whether counter `i` may be matched: stopped, and not configured for an event since
    /// its last reset (the fixed counters always have theirs).
    fn free(&self, i: usize) -> bool {
        let c = &self.counters[i];
        !c.started && (c.event.is_none() || i == CY || i == IR)
    }

    /// Writes hardware counter `i`'s event and filter to the hart (OF cleared; the filter of
    /// counters 0 and 2 is `mcyclecfg`/`minstretcfg`, Smcntrpmf 2.1
    /// "Machine Counter Configuration Registers (mcyclecfg, minstretcfg)").
    pub(crate) fn program_hw(&self, vcpu: &mut dyn Vcpu, i: usize) {
        let c = &self.counters[i];
        let filter = HOST_INH | c.inhibit;
        match i {
            CY => vcpu.set_known_csr(csr::MCYCLECFG, filter),
            IR => vcpu.set_known_csr(csr::MINSTRETCFG, filter),
            _ => {
                let selector = match c.event {
                    Some(EventTarget::Hardware(s)) => s,
                    _ => 0,
                };
                vcpu.set_known_csr(csr::MHPMEVENT + self.phys(i) as u16, filter | selector)
            }
        };
    }

    /// The value of counter `i` now.
    pub(crate) fn value(&self, vcpu: &dyn Vcpu, i: usize) -> u64 {
        if Self::is_fw(i) {
            self.fw_value(i)
        } else {
            vcpu.host_csr(csr::MHPMCOUNTER + self.phys(i) as u16)
                .unwrap_or(0)
        }
    }

    /// Sets the value of counter `i`.
    pub(crate) fn set_value(&mut self, vcpu: &mut dyn Vcpu, i: usize, value: u64) {
        if Self::is_fw(i) {
            let now = self.fw_tally(i);
            let c = &mut self.counters[i];
            c.value = value;
            c.base = now;
        } else {
            vcpu.set_known_csr(csr::MHPMCOUNTER + self.phys(i) as u16, value);
        }
    }

    /// The tally of firmware counter `i`'s event now (0 without an event).
    fn fw_tally(&self, i: usize) -> u64 {
        match self.counters[i].event {
            Some(EventTarget::Firmware(ev)) => self.tallies.get(self.vcpu_id, ev),
            _ => 0,
        }
    }

    /// Inhibits or lets count the hart counter behind virtual counter `i`.
    pub(crate) fn set_inhibit(&self, vcpu: &mut dyn Vcpu, i: usize, inhibit: bool) {
        let p = self.phys(i);
        let v = vcpu.host_csr(csr::MCOUNTINHIBIT).unwrap_or(0);
        let v = if inhibit { v | 1 << p } else { v & !(1 << p) };
        vcpu.set_known_csr(csr::MCOUNTINHIBIT, v);
    }

    fn start_one(&mut self, vcpu: &mut dyn Vcpu, i: usize) {
        if Self::is_fw(i) {
            self.counters[i].base = self.fw_tally(i);
        } else {
            if i >= 3 {
                let num = csr::MHPMEVENT + self.phys(i) as u16;
                let ev = vcpu.host_csr(num).unwrap_or(0);
                vcpu.set_known_csr(num, ev & !OF);
            }
            self.set_inhibit(vcpu, i, false);
        }
        self.counters[i].started = true;
    }

    fn stop_one(&mut self, vcpu: &mut dyn Vcpu, i: usize) {
        if Self::is_fw(i) {
            self.counters[i].value = self.value(vcpu, i);
        } else {
            self.set_inhibit(vcpu, i, true);
        }
        self.counters[i].started = false;
    }

    /// Forgets counter `i`'s event (SBI_PMU_STOP_FLAG_RESET). The fixed counters keep theirs
    /// and lose the guest's filter; hpm counters lose their event and the guest's direct
    /// access.
    fn reset_one(&mut self, vcpu: &mut dyn Vcpu, i: usize) {
        let c = &mut self.counters[i];
        c.inhibit = 0;
        match i {
            CY | IR => {}
            _ => c.event = None,
        }
        if !Self::is_fw(i) {
            self.program_hw(vcpu, i);
            if i >= 3 && !self.policy.deleg_on() {
                for num in [csr::MCOUNTEREN, csr::HCOUNTEREN] {
                    let v = vcpu.host_csr(num).unwrap_or(0);
                    vcpu.set_known_csr(num, v & !(1 << i));
                }
            }
        }
    }

    /// The address of relative counter `rel`'s value in the shared memory.
    fn shmem_value(shmem: u64, rel: u64) -> GuestAddress {
        GuestAddress(shmem + 8 + 8 * rel)
    }

    /// `sbi_pmu_counter_start`.
    fn start(
        &mut self,
        vcpu: &mut dyn Vcpu,
        mem: &GuestMemoryMmap,
        base: u64,
        mask: u64,
        flags: u64,
        initial_value: u64,
    ) -> Result<u64, PmuError> {
        if flags >> 2 != 0 || flags == START_SET_INIT_VALUE | START_INIT_SNAPSHOT {
            return Err(PmuError::InvalidFlags(flags));
        }
        let set = self.counter_set(base, mask)?;
        let shmem = if flags & START_INIT_SNAPSHOT != 0 {
            Some(self.shmem.ok_or(PmuError::NoShmem)?)
        } else {
            None
        };
        let mut already = false;
        for i in set {
            if !self.in_use(i) {
                continue;
            }
            if self.counters[i].started {
                already = true;
                continue;
            }
            if flags & START_SET_INIT_VALUE != 0 {
                self.set_value(vcpu, i, initial_value);
            }
            if let Some(shmem) = shmem {
                let at = Self::shmem_value(shmem, i as u64 - base);
                let v: u64 = mem.read_obj(at).map_err(|_| PmuError::Memory(at.0))?;
                self.set_value(vcpu, i, u64::from_le(v));
            }
            self.start_one(vcpu, i);
        }
        if already {
            Err(PmuError::AlreadyStarted)
        } else {
            Ok(0)
        }
    }

    /// `sbi_pmu_counter_stop`.
    fn stop(
        &mut self,
        vcpu: &mut dyn Vcpu,
        mem: &GuestMemoryMmap,
        base: u64,
        mask: u64,
        flags: u64,
    ) -> Result<u64, PmuError> {
        if flags >> 2 != 0 {
            return Err(PmuError::InvalidFlags(flags));
        }
        let set = self.counter_set(base, mask)?;
        let shmem = if flags & STOP_TAKE_SNAPSHOT != 0 {
            Some(self.shmem.ok_or(PmuError::NoShmem)?)
        } else {
            None
        };
        let mut already = false;
        let mut overflow = 0u64;
        for &i in &set {
            if !self.in_use(i) {
                continue;
            }
            if self.counters[i].started {
                self.stop_one(vcpu, i);
            } else {
                already = true;
            }
            if let Some(shmem) = shmem {
                let rel = i as u64 - base;
                let at = Self::shmem_value(shmem, rel);
                let v = self.value(vcpu, i).to_le();
                mem.write_obj(v, at).map_err(|_| PmuError::Memory(at.0))?;
                let of = i >= 3
                    && !Self::is_fw(i)
                    && vcpu
                        .host_csr(csr::MHPMEVENT + self.phys(i) as u16)
                        .unwrap_or(0)
                        & OF
                        != 0;
                if of && self.policy.sscofpmf {
                    overflow |= 1 << rel;
                }
            }
            if flags & STOP_RESET != 0 {
                self.reset_one(vcpu, i);
            }
        }
        if let Some(shmem) = shmem {
            mem.write_obj(overflow.to_le(), GuestAddress(shmem))
                .map_err(|_| PmuError::Memory(shmem))?;
        }
        if already {
            Err(PmuError::AlreadyStopped)
        } else {
            Ok(0)
        }
    }

    /// `sbi_pmu_counter_fw_read`.
    fn fw_read(&self, idx: u64) -> Result<u64, PmuError> {
        if !self.valid(idx) || !Self::is_fw(idx as usize) {
            return Err(PmuError::InvalidCounter(idx));
        }
        Ok(self.fw_value(idx as usize))
    }

    /// Firmware counter `i` now: its value at the last stop plus, while started, the growth
    /// of its event's tally.
    fn fw_value(&self, i: usize) -> u64 {
        let c = &self.counters[i];
        match (c.event, c.started) {
            (Some(EventTarget::Firmware(ev)), true) => c
                .value
                .wrapping_add(self.tallies.get(self.vcpu_id, ev).wrapping_sub(c.base)),
            _ => c.value,
        }
    }

    /// `sbi_pmu_snapshot_set_shmem`.
    fn set_shmem(
        &mut self,
        mem: &GuestMemoryMmap,
        lo: u64,
        hi: u64,
        flags: u64,
    ) -> Result<u64, PmuError> {
        if !self.policy.snapshot {
            return Err(PmuError::SnapshotUnsupported);
        }
        if flags != 0 {
            return Err(PmuError::InvalidFlags(flags));
        }
        if lo == u64::MAX && hi == u64::MAX {
            self.shmem = None;
            return Ok(0);
        }
        if !lo.is_multiple_of(SHMEM_SIZE) {
            return Err(PmuError::ShmemMisaligned(lo));
        }
        let in_ram = hi == 0
            && lo.checked_add(SHMEM_SIZE).is_some()
            && GuestMemoryBackend::check_range(mem, GuestAddress(lo), SHMEM_SIZE as usize);
        if !in_ram {
            return Err(PmuError::ShmemAddress { lo, hi });
        }
        self.shmem = Some(lo);
        Ok(0)
    }
}

/// `sbi_pmu_num_counters` (a `match` pattern cannot use `crate::sbi::NUM_COUNTERS` next to
/// the crate's own `NUM_COUNTERS`).
const NUM_COUNTERS_FID: u64 = crate::sbi::NUM_COUNTERS;
