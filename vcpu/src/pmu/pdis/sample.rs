//! PDIS counting and sampling, as `impl Hart`: which decoded instructions count and are
//! selected (the draft's "Instruction Selection", ACC included), the sampled instruction's
//! record ("Sample Record": header, latencies, addresses), "Sample Filtering"
//! ("Event Filtering", "Latency Filtering"), and "Sampling Modes" (records one at a time,
//! OF and the LCOFI; there is no batch mode since `mpdisctl.MEM` is 0).

use super::*;
use crate::decode::{Insn, Op};
use crate::hart::{Hart, PrivilegeMode};
use crate::pmu::events::{class, Event};
use crate::pmu::model::Cost;

/// Whether an instruction of class `c` matches `SEL` (Smpdis "Instruction Selection").
fn sel_matches(sel: u64, c: u8) -> bool {
    match sel {
        0 => true,
        1 => c & class::LOAD != 0,
        2 => c & class::STORE != 0,
        3 => c & (class::LOAD | class::STORE) != 0,
        4 => c & (class::BRANCH | class::JUMP | class::XRET) != 0,
        _ => false,
    }
}

/// `pdishdrev.TYPE` of class `c` (Smpdis "PDIS Header and Events (pdishdrev)").
fn record_type(c: u8) -> u64 {
    match c & (class::LOAD | class::STORE) {
        x if x == class::LOAD | class::STORE => ty::LOAD_STORE,
        class::LOAD => ty::LOAD,
        class::STORE => ty::STORE,
        _ if c & (class::BRANCH | class::JUMP | class::XRET) != 0 => ty::CONTROL,
        _ => ty::OTHER,
    }
}

/// Events that can be recorded in `pdishdrev.HPM` (they belong to one instruction; Smpdis
/// "PDIS Header and Events (pdishdrev)").
fn per_instruction(ev: Event) -> bool {
    !matches!(
        ev,
        Event::Cycles
            | Event::Exceptions
            | Event::Interrupts
            | Event::PdisSamples
            | Event::PdisCollisions
            | Event::PdisFiltered
            | Event::PdisDropped
    )
}

impl Hart {
    /// Whether some mode counts PDIS instructions (Smpdis
    /// "Machine PDIS Control Register (`mpdisctl`)" M/S/U, `vspdisctl` S/U, and
    /// "Machine Count Inhibit Register (`mcountinhibit`)").
    pub(crate) fn pdis_enabled_anywhere(&self) -> bool {
        let p = &self.pmu.state.pdis;
        (p.mpdisctl & (M | S | U) != 0 || p.vs_own & (S | U) != 0)
            && self.pmu.state.mcountinhibit & crate::pmu::INHIBIT_PDIS == 0
    }

    /// Whether the PDIS counter counts in the current mode: `mpdisctl` M/S/U, or with V = 1
    /// `vspdisctl` S/U; and `mcountinhibit[1]` = 0 (Smpdis
    /// "Machine PDIS Control Register (`mpdisctl`)",
    /// "Virtual Supervisor PDIS Control Register (`vspdisctl`)",
    /// "Machine Count Inhibit Register (`mcountinhibit`)").
    pub(crate) fn pdis_counts_here(&self) -> bool {
        let p = &self.pmu.state.pdis;
        if self.pmu.state.mcountinhibit & crate::pmu::INHIBIT_PDIS != 0 {
            return false;
        }
        let bit = match (self.prv, self.virt) {
            (PrivilegeMode::Machine, _) => p.mpdisctl & M,
            (PrivilegeMode::Supervisor, false) => p.mpdisctl & S,
            (PrivilegeMode::User, false) => p.mpdisctl & U,
            (PrivilegeMode::Supervisor, true) => p.vs_own & S,
            (PrivilegeMode::User, true) => p.vs_own & U,
        };
        bit != 0
    }

    /// `vspdisctl` as read: `mpdisctl`'s shared fields, its own S/U/PA, M read-only 0
    /// (Smpdis "Virtual Supervisor PDIS Control Register (`vspdisctl`)").
    pub(crate) fn read_vspdisctl(&self) -> u64 {
        let p = &self.pmu.state.pdis;
        (p.mpdisctl & !(VS_OWN | M)) | p.vs_own
    }

    /// Write `mpdisctl` (or a view: `keep` are the bits the view cannot change; Smpdis
    /// "Machine PDIS Control Register (`mpdisctl`)",
    /// "Supervisor PDIS Control Register (`spdisctl`)").
    pub(crate) fn write_pdisctl(&mut self, keep: u64, v: u64) {
        let m = MPDISCTL_WRITABLE & !keep;
        self.pmu_reconfigure(|s| {
            let mut v = v;
            // SEL 5-7 are reserved: WARL keeps the old value.
            if v & SEL > 4 {
                v = (v & !SEL) | (s.pdis.mpdisctl & SEL);
            }
            s.pdis.mpdisctl = (s.pdis.mpdisctl & !m) | (v & m);
        });
    }

    /// Write `vspdisctl`: its own S/U/PA, and the shared fields of `mpdisctl` except M
    /// (Smpdis "Virtual Supervisor PDIS Control Register (`vspdisctl`)").
    pub(crate) fn write_vspdisctl(&mut self, v: u64) {
        self.pmu_reconfigure(|s| s.pdis.vs_own = v & VS_OWN_WRITABLE);
        self.write_pdisctl(VS_OWN | M, v);
    }

    /// Write `spdiscounter` (Smpdis "Supervisor PDIS Counter Register (`spdiscounter`)").
    /// Zicsr: for a CSR that instructions modify as a side effect, "the
    /// write is done instead of the increment", so the writing instruction (a decoded
    /// instruction of the `SEL` type only with SEL = 0) does not add to COUNT.
    pub(crate) fn write_spdiscounter(&mut self, v: u64) {
        self.pmu.state.pdis.counter = v;
        self.pmu.pdis_skip =
            self.pmu.pdis_here && !self.pmu.host_write && self.pmu.state.pdis.mpdisctl & SEL == 0;
    }

    /// Write `spdisfilter` (Smpdis "Supervisor PDIS Filter Register (`spdisfilter`)"):
    /// LATSEL keeps 0 (total) or 3 (execution); other values become 0.
    pub(crate) fn write_spdisfilter(&mut self, v: u64) {
        let latsel = match (v & LATSEL) >> 13 {
            3 => 3 << 13,
            _ => 0,
        };
        self.pmu.state.pdis.filter = (v & (THRESH | INV)) | latsel;
    }

    /// One decoded instruction in a mode where PDIS counts (cold: only with PDIS on): the
    /// counter and the choice of the sampled instruction (Smpdis "Instruction Selection").
    /// `c`: its class; `pen`: its penalty cycles; `inc`: the events it incurred (bit per
    /// [`Event`]); `trapped`: it trapped instead of retiring.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn pdis_step(
        &mut self,
        insn: &Insn,
        c: u8,
        pc: u64,
        addr: u64,
        pen: u64,
        inc: u32,
        trapped: bool,
    ) {
        let p = &mut self.pmu.state.pdis;
        if c & (class::BRANCH | class::JUMP | class::XRET) != 0 && !trapped {
            // EPT records the target of the transfer before the sampled one.
            p.prior_target = p.last_target;
            p.last_target = self.pc;
        }
        if !sel_matches(p.mpdisctl & SEL, c) {
            return;
        }
        if std::mem::take(&mut self.pmu.pdis_skip) {
            // This instruction wrote spdiscounter (see `write_spdiscounter`).
            return;
        }
        let p = &mut self.pmu.state.pdis;
        let count = (p.counter as u32).wrapping_add(1);
        let wrapped = count == 0;
        let initval = p.counter >> 32;
        p.counter = (initval << 32) | if wrapped { initval } else { count as u64 };
        if !(wrapped || std::mem::take(&mut p.select_next)) {
            return;
        }
        self.pdis_sample(insn, c, pc, addr, pen, inc, trapped);
    }

    /// The sampled instruction's record (Smpdis "Sample Record":
    /// "PDIS Header and Events (pdishdrev)", "PDIS Program Counter (pdispc)",
    /// "PDIS Time (pdistime)", "PDIS Latencies (pdislat)", "PDIS Address1 (pdisadr1)",
    /// "PDIS Address2 (pdisadr2)"), its "Sample Filtering" ("Event Filtering", then
    /// "Latency Filtering"), and its delivery ("Sampling Modes": OF and the LCOFI;
    /// backpressure while OF = 1).
    #[allow(clippy::too_many_arguments)]
    fn pdis_sample(
        &mut self,
        insn: &Insn,
        c: u8,
        pc: u64,
        addr: u64,
        pen: u64,
        inc: u32,
        trapped: bool,
    ) {
        let ctl = self.pmu.state.pdis.mpdisctl;
        let mut hdr = record_type(c);
        // HPM_i: counter i delegated like PDIS (to S when mstateen0.PDIS = 1, else M), its
        // event recordable, and counting in this mode.
        let pdis_in_s = self.csr.mstateen[0] & self.pmu.stateen_bit() != 0;
        let cde = self.csr.menvcfg & crate::pmu::MENVCFG_CDE != 0;
        for i in 3..32 {
            if ctl >> i & 1 == 0 || self.pmu.counting >> i & 1 == 0 {
                continue;
            }
            let delegated = cde && self.csr.mcounteren >> i & 1 != 0;
            let Some(ev) = self.pmu.event[i] else {
                continue;
            };
            if delegated == pdis_in_s && per_instruction(ev) && incurred(ev, inc, c, trapped) {
                hdr |= 1 << i;
            }
        }
        if inc & (1 << Event::ItlbMiss as u32) != 0 {
            hdr |= HDR_ITMISS;
        }
        let mut adr1 = 0;
        let mut adr2 = 0;
        if c & (class::LOAD | class::STORE) != 0 && !trapped {
            let miss = (1 << Event::L1dReadMiss as u32) | (1 << Event::L1dWriteMiss as u32);
            let tlb = (1 << Event::DtlbReadMiss as u32) | (1 << Event::DtlbWriteMiss as u32);
            if inc & miss != 0 {
                hdr |= HDR_L1MISS;
            }
            if inc & tlb != 0 {
                hdr |= HDR_L1TLBMISS | HDR_LLTLBMISS;
            }
            adr1 = addr;
            // pdisadr2 (draft, "PDIS Address2"): for an instruction executed in VS/VU-mode
            // with vspdisctl.PA = 1 the guest physical address; otherwise, with
            // mpdisctl.PA = 1, the physical address (also with V = 1).
            let store = c & class::STORE != 0;
            if self.virt && self.pmu.state.pdis.vs_own & PA != 0 {
                adr2 = self.probe_guest_physical(addr, store);
            } else if ctl & PA != 0 {
                adr2 = self.probe_physical(addr, store);
            }
        } else if c & (class::BRANCH | class::JUMP | class::XRET) != 0 && !trapped {
            let taken = self.pc != pc.wrapping_add(insn.len as u64);
            let t = match insn.op {
                Op::Jal | Op::Jalr => insn.fmt as u64,
                Op::Mret | Op::Sret => crate::ctr::ty::TRAP_RETURN as u64,
                _ if taken => crate::ctr::ty::TAKEN_BRANCH as u64,
                _ => crate::ctr::ty::NOT_TAKEN_BRANCH as u64,
            };
            hdr |= 1 << (HDR_CTR_TYPE_SHIFT + t);
            if inc & (1 << Event::BranchMisses as u32) != 0 {
                hdr |= HDR_MISPRED;
            }
            if taken || c & class::BRANCH == 0 {
                adr1 = self.pc;
            }
            if ctl & EPT != 0 {
                adr2 = self.pmu.state.pdis.prior_target;
            }
        }
        let total = (Cost::BASE + pen).min(0xfff);
        let lat = total | (pen.min(0xfff) << 36) | LAT_EXECV;
        let time = if ctl & TS != 0 && (!pdis_in_s || self.csr.mcounteren & 2 != 0) {
            self.mtime()
        } else {
            0
        };
        // Filtering (event, then latency).
        let p = &self.pmu.state.pdis;
        let ev_ok = p.evmatch & p.evmask == hdr & p.evmask;
        let lat_ok = if p.filter == 0 {
            true
        } else {
            let sel = if (p.filter & LATSEL) >> 13 == 3 {
                pen.min(0xfff)
            } else {
                total
            };
            (sel >= p.filter & THRESH) != (p.filter & INV != 0)
        };
        let t = &mut self.pmu.state.tally;
        if !(ev_ok && lat_ok) {
            t[Event::PdisFiltered as usize] += 1;
            if ctl & ACC != 0 {
                self.pmu.state.pdis.select_next = true;
            }
            return;
        }
        if ctl & OF != 0 {
            t[Event::PdisDropped as usize] += 1;
            if ctl & ACC != 0 {
                self.pmu.state.pdis.select_next = true;
            }
            return;
        }
        t[Event::PdisSamples as usize] += 1;
        let p = &mut self.pmu.state.pdis;
        p.record = [hdr, pc, time, lat, adr1, adr2];
        p.mpdisctl |= OF;
        self.lcofi_request(None);
    }

    /// The physical address of a data access that has just completed (no side effects:
    /// its translation already set the A/D bits), for Smpdis "PDIS Address2 (pdisadr2)".
    fn probe_physical(&mut self, va: u64, store: bool) -> u64 {
        let kind = if store {
            crate::mmu::Access::Store
        } else {
            crate::mmu::Access::Load
        };
        let mode = self.data_mode();
        self.translate(va, kind, mode).unwrap_or(0)
    }

    /// The guest physical address of a data access with V = 1 that has just completed: its
    /// VS-stage translation (no side effects, as above), for Smpdis
    /// "PDIS Address2 (pdisadr2)".
    fn probe_guest_physical(&mut self, va: u64, store: bool) -> u64 {
        let kind = if store {
            crate::mmu::Access::Store
        } else {
            crate::mmu::Access::Load
        };
        let mode = self.data_mode();
        self.vs_stage(va, kind, mode).unwrap_or(0)
    }
}

/// Whether the sampled instruction incurred `ev` (its HPM bit: Smpdis
/// "PDIS Header and Events (pdishdrev)").
fn incurred(ev: Event, inc: u32, c: u8, trapped: bool) -> bool {
    match ev {
        Event::Instret => !trapped,
        Event::InstDec => true,
        Event::InstDecBrjmp => c & (class::BRANCH | class::JUMP | class::XRET) != 0,
        Event::InstDecLoad => c & class::LOAD != 0,
        Event::InstDecStore => c & class::STORE != 0,
        Event::InstDecLdst => c & (class::LOAD | class::STORE) != 0,
        Event::L1dAccess => inc & ((1 << Event::Loads as u32) | (1 << Event::Stores as u32)) != 0,
        Event::L1dReadAccess => inc & (1 << Event::Loads as u32) != 0,
        Event::L1dWriteAccess => inc & (1 << Event::Stores as u32) != 0,
        Event::L1dMiss => {
            inc & ((1 << Event::L1dReadMiss as u32) | (1 << Event::L1dWriteMiss as u32)) != 0
        }
        e => inc & (1 << e as u32) != 0,
    }
}
