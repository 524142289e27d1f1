//! Snapshots of `vmm run` VMs and `vmm restore` (the file format is `crate::snapshot`).
//!
//! A snapshot is taken between two runs of the vCPU, so the hart is at an instruction
//! boundary with no device access pending. The source VM is only read. Restoring builds a
//! new VM on a hart model given by the destination's options (`--host-ctr-depths`): every
//! check (format, checksum, RAM size, the hart state against the destination hart, the
//! guest's CTR depth against the destination's depths) happens before the guest runs.
//!
//! A VM of several vCPUs is snapshotted while no vCPU thread runs (`--snapshot-on-stop`:
//! after the budget or the timeout stopped every thread): every vCPU's state (on its hart
//! instance or parked, see `run/sched.rs`), its SBI HSM state, whether it waits in WFI and
//! until when, an IPI waiting in its mailbox, and the shared virtual clock. It can be
//! restored on any number of hart instances (`--pcpus`). The control socket snapshots a VM
//! of any number of vCPUs from the states its paused hart instances hand over
//! (`run/pause.rs`): both take the state with [`VmCommon::state`] and write it with
//! `crate::snapshot::write`. RAM is never copied: the file streams it from guest memory, and
//! a restore takes over the guest RAM the file was read into (`crate::snapshot::read`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::backend::Hart;
use crate::backend::HartState;
use vcpu_api::csr;
use vcpu_api::SharedClock;
use vm_memory::{GuestMemoryBackend, GuestMemoryMmap, GuestMemoryRegion};

use super::builder::{check_memory, check_topology, host_ctr, HartOptions};
use super::smp::{Smp, VcpuSmpState};
use super::{
    place_vcpus, run_vm, BootLayout, ConsoleInput, GuestPolicy, GuestVm, InputQueue, RunExit,
    RunStats, VmShared, MAX_VCPUS,
};
use crate::devices::uart::Uart;
use crate::devices::Console;
use crate::error::Error;
use crate::machine::RAM_BASE;
use crate::persist::{FieldError, Persist};
use crate::sbi::hsm::{STATE_STARTED, STATE_START_PENDING, STATE_STOPPED};
use crate::snapshot::{LayoutState, Snapshot, SnapshotError, VcpuState, VmState};

/// `vmm restore` options: the destination host and the run's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreConfig {
    /// The depths the destination hart model supports (`--host-ctr-depths`).
    pub host_ctr_depths: ctr_virt::DepthSet,
    /// Stop after this many more instructions.
    pub max_insns: Option<u64>,
    /// Stop after this much wall-clock time.
    pub timeout: Option<std::time::Duration>,
    /// Log every instruction.
    pub trace: bool,
    /// `--trace-insns`/`--trace-pcs`: which instructions `trace` prints (instruction
    /// numbers count from the guest's boot, the snapshot's instructions included).
    pub trace_range: vcpu_api::TraceRange,
    /// `--trace-exits`: the classes of exits to trace (`run/trace.rs`; 0: none).
    pub trace_exits: u32,
    /// `--symbols`: the guest's symbols, for the pcs of the exit trace.
    pub symbols: Option<std::sync::Arc<crate::symbols::Symbols>>,
    /// `--api-sock`: the control socket's path.
    pub api_sock: Option<std::path::PathBuf>,
    /// `--snapshot-on-stop`, as for `vmm run`.
    pub snapshot_on_stop: Option<std::path::PathBuf>,
    /// `--paused`: start paused, before the first instruction, until `resume` arrives on the
    /// control socket (which it needs).
    pub paused: bool,
    /// `--pcpus`: hart instances for the vCPUs (`None`: one each), as for `vmm run`.
    pub pcpus: Option<u64>,
    /// `--slice-insns`, as for `vmm run`.
    pub slice_insns: u64,
    /// `--jit on|off`, as for `vmm run`.
    pub jit: bool,
    /// `--perf-map`, as for `vmm run`.
    pub perf_map: bool,
    /// `--gdb`/`--gdb-wait`: a gdb remote stub (`run/gdb.rs`).
    pub gdb: Option<crate::gdb::listen::GdbOptions>,
    /// `--clock host|virtual`: where guest time comes from from now on (whatever the
    /// snapshot's VM used: guest time continues from the snapshot's value either way).
    pub clock: vcpu_api::ClockMode,
}

impl Default for RestoreConfig {
    fn default() -> Self {
        RestoreConfig {
            host_ctr_depths: ctr_virt::DepthSet::ALL,
            max_insns: None,
            timeout: None,
            trace: false,
            trace_range: vcpu_api::TraceRange::default(),
            trace_exits: 0,
            symbols: None,
            api_sock: None,
            snapshot_on_stop: None,
            paused: false,
            pcpus: None,
            slice_insns: super::DEFAULT_SLICE_INSNS,
            jit: true,
            perf_map: false,
            gdb: None,
            clock: vcpu_api::ClockMode::Virtual,
        }
    }
}

pub use super::error::RestoreError;

pub use super::error::RestoreFailure;

impl Persist for BootLayout {
    type State = LayoutState;
    type Context = ();

    fn save(&self) -> LayoutState {
        LayoutState {
            entry: self.entry,
            kernel: (self.kernel.start, self.kernel.end),
            initrd: self.initrd.as_ref().map(|r| (r.start, r.end)),
            fdt: self.fdt,
        }
    }

    /// Any layout is accepted: it only records where the kernel was put.
    fn restore(l: &LayoutState, (): ()) -> Result<Self, FieldError> {
        Ok(BootLayout {
            entry: l.entry,
            kernel: l.kernel.0..l.kernel.1,
            initrd: l.initrd.map(|(a, b)| a..b),
            fdt: l.fdt,
        })
    }
}

impl Persist for InputQueue {
    /// The bytes not yet given to the guest.
    type State = Vec<u8>;
    type Context = ();

    fn save(&self) -> Vec<u8> {
        self.peek_all()
    }

    fn restore(bytes: &Vec<u8>, (): ()) -> Result<Self, FieldError> {
        let input = InputQueue::default();
        input.push(bytes);
        Ok(input)
    }
}

/// The hypervisor-level CSRs the VMM sets itself (`Hart::new_guest`, `vinsn::apply`,
/// `GuestCtr::prepare`/`load`, `GuestPmu::prepare`) and the guest cannot write (HS/M-level
/// state; VS-mode reaches none of it), with the bits the VMM owns: a snapshot's value must
/// be what the VMM would have set. `hstatus`: only VTW/VTSR/VTVM (SPV, SPVP, GVA, VGEIN
/// follow the guest's traps); `hcounteren`: only TM (the PMU's counter bits follow which
/// counters the guest started); the PMP (M-mode's, which the guest cannot see).
const VMM_OWNED_CSRS: [(&str, u16, u64); 30] = [
    ("medeleg", csr::MEDELEG, u64::MAX),
    ("mideleg", csr::MIDELEG, u64::MAX),
    ("menvcfg", csr::MENVCFG, u64::MAX),
    ("mstateen0", csr::MSTATEEN0, u64::MAX),
    ("hstatus.VTSR/VTW/VTVM", csr::HSTATUS, 0b111 << 20),
    ("hedeleg", csr::HEDELEG, u64::MAX),
    ("hideleg", csr::HIDELEG, u64::MAX),
    ("hcounteren.TM", csr::HCOUNTEREN, 1 << 1),
    ("hvien", csr::HVIEN, u64::MAX),
    ("henvcfg", csr::HENVCFG, u64::MAX),
    ("hstateen0", csr::HSTATEEN0, u64::MAX),
    // The guest runs on guest-physical = host-physical RAM: no G-stage translation.
    ("hgatp", csr::HGATP, u64::MAX),
    // M-mode's PMP: the allow-all entry of `Hart::new_guest`, the others off.
    ("pmpcfg0", csr::PMPCFG0, u64::MAX),
    ("pmpcfg2", csr::PMPCFG2, u64::MAX),
    ("pmpaddr0", csr::PMPADDR0, u64::MAX),
    ("pmpaddr1", csr::PMPADDR1, u64::MAX),
    ("pmpaddr2", csr::PMPADDR2, u64::MAX),
    ("pmpaddr3", csr::PMPADDR3, u64::MAX),
    ("pmpaddr4", csr::PMPADDR4, u64::MAX),
    ("pmpaddr5", csr::PMPADDR5, u64::MAX),
    ("pmpaddr6", csr::PMPADDR6, u64::MAX),
    ("pmpaddr7", csr::PMPADDR7, u64::MAX),
    ("pmpaddr8", csr::PMPADDR8, u64::MAX),
    ("pmpaddr9", csr::PMPADDR9, u64::MAX),
    ("pmpaddr10", csr::PMPADDR10, u64::MAX),
    ("pmpaddr11", csr::PMPADDR11, u64::MAX),
    ("pmpaddr12", csr::PMPADDR12, u64::MAX),
    ("pmpaddr13", csr::PMPADDR13, u64::MAX),
    ("pmpaddr14", csr::PMPADDR14, u64::MAX),
    ("pmpaddr15", csr::PMPADDR15, u64::MAX),
];

/// Guest-visible CSRs with WARL fields whose saved value must be one the hart can hold:
/// writing it to a fresh hart must read it back unchanged (`vsatp.MODE` among the modes
/// the hart implements, priv. spec 12.2.14 / 10.1.11; `hvip` only the pending bits the
/// hart implements, priv. spec 21.2.3 and AIA 6.3.2).
const WARL_CSRS: [(&str, u16); 2] = [("vsatp", csr::VSATP), ("hvip", csr::HVIP)];

/// Checks of a vCPU's saved state that need nothing but the snapshot: the virtual clock,
/// the privilege mode of a guest, `pc` alignment, the PMU snapshot shared memory.
/// `s` with the CTR of every vCPU that never touched CTR fitted to a host of `host` depths
/// ([`ctr_virt::GuestCtrState::fit_untouched`]), and each such vCPU's hart-level CTR (the
/// VMM's while the guest's context is not loaded) moved to the host's smallest depth where
/// it holds nothing; `None` when nothing needed to change.
fn fit_untouched_ctr(s: &VmState, host: ctr_virt::DepthSet) -> Option<VmState> {
    let mut out = s.clone();
    let mut changed = false;
    for v in &mut out.vcpus {
        changed |= v.ctr.fit_untouched(host);
        let c = &mut v.hart.ctr;
        let empty = c.mctrctl == 0
            && c.vsctrctl == 0
            && c.wrptr == 0
            && !c.frozen
            && c.entries.iter().all(|e| *e == Default::default());
        if !v.ctr.loaded && empty && !host.contains_encoding(c.depth as u64) {
            if let Some(depth) = host.smallest() {
                c.depth = depth;
                changed = true;
            }
        }
    }
    changed.then_some(out)
}

fn check_vcpu_fields(id: u64, v: &VcpuState, ram_size: u64) -> Result<(), RestoreError> {
    let field = |field, value, reason: &str| RestoreError::VcpuField {
        vcpu: id,
        field,
        value,
        reason: reason.into(),
    };
    let h = &v.hart;
    if h.skipped > h.vclock {
        return Err(field(
            "hart.skipped",
            h.skipped,
            &format!(
                "is more than `hart.vclock` = {:#x} (skipped idle slots are part of the clock)",
                h.vclock
            ),
        ));
    }
    // A hosted guest runs in VS or VU mode: the VMM's HS-mode is not part of its state.
    if !h.virt || !matches!(h.prv, 0 | 1) {
        return Err(field(
            "hart.prv",
            u64::from(h.prv),
            &format!(
                "with V = {}: a guest vCPU is in VS- or VU-mode (V = 1, privilege 0 or 1)",
                u8::from(h.virt)
            ),
        ));
    }
    // The debug triggers are M-mode state (Sdtrig: only M-mode reaches their CSRs) that
    // this VMM never sets and a guest cannot: every trigger is disabled.
    if h.triggers != Default::default() {
        let armed = h
            .triggers
            .tdata1
            .iter()
            .copied()
            .find(|&t| t != vcpu_api::csr::TDATA1_TYPE_DISABLED)
            .unwrap_or(0);
        return Err(field(
            "hart.triggers",
            armed,
            "is not every trigger disabled, as this VMM keeps its guests' debug triggers \
             (M-mode state the guest cannot change)",
        ));
    }
    // IALIGN is 16 or 32 (unprivileged spec 1.5): bit 0 of pc is never set.
    if h.pc & 1 != 0 {
        return Err(field(
            "hart.pc",
            h.pc,
            "is not 2-byte aligned (IALIGN is at least 16)",
        ));
    }
    if let Some(lo) = v.pmu.shmem {
        use pmu_virt::sbi::SHMEM_SIZE;
        // SBI v2.0, sbi_pmu_snapshot_set_shmem: 4096 bytes, 4 KiB-aligned, in RAM the guest
        // may write (what `set_shmem` checks when the guest sets it).
        let in_ram = lo >= RAM_BASE
            && lo
                .checked_add(SHMEM_SIZE)
                .is_some_and(|end| end - RAM_BASE <= ram_size);
        let reason = if !v.pmu.policy.snapshot {
            Some("is set but the VM's PMU has no snapshot shared memory (--pmu-snapshot off)")
        } else if !lo.is_multiple_of(SHMEM_SIZE) {
            Some("is not 4 KiB-aligned as SBI PMU snapshot shared memory must be")
        } else if !in_ram {
            Some("does not put the 4 KiB of SBI PMU snapshot shared memory inside guest RAM")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(field("pmu.shmem", lo, reason));
        }
    }
    Ok(())
}

/// After the restore: the CSRs the VMM owns (`VMM_OWNED_CSRS`) must hold what the VMM sets
/// on `expected`, a fresh hart prepared as `vmm run` prepares one for this VM (with
/// `hstateen0.CTR` and `hstateen0.PDIS` as the saved CTR and PDIS contexts are loaded or
/// not). They are checked rather than re-derived: every other part of the snapshot relies on
/// them (the CTR context is on the hart exactly when `hstateen0.CTR` = 1), so a mismatch
/// means the file was not written by this VMM for this VM, which is worth refusing.
fn check_vmm_owned(
    id: u64,
    v: &VcpuState,
    restored: &Hart,
    expected: &mut Hart,
) -> Result<(), RestoreError> {
    use vcpu_api::Vcpu;
    let hstateen0 = expected.host_csr(csr::HSTATEEN0).unwrap_or(0);
    let ctr = if v.ctr.loaded {
        ctr_virt::csr::STATEEN0_CTR
    } else {
        0
    };
    let pdis = if v.pmu.sampling.loaded {
        1u64.checked_shl(u32::from(v.pmu.sampling.policy.numbers.stateen_pdis_bit))
            .unwrap_or(0)
            | ctr_virt::csr::STATEEN0_CSRIND
    } else {
        0
    };
    expected.set_known_csr(csr::HSTATEEN0, hstateen0 | ctr | pdis);
    for (name, num, mask) in VMM_OWNED_CSRS {
        let want = expected.host_csr(num).unwrap_or(0) & mask;
        let got = restored.host_csr(num).unwrap_or(0) & mask;
        if got != want {
            return Err(RestoreError::VcpuField {
                vcpu: id,
                field: name,
                value: got,
                reason: format!(
                    "is not what this VMM sets for this VM ({want:#x}); the VMM owns it and \
                     the guest cannot change it"
                ),
            });
        }
    }
    for (name, num) in WARL_CSRS {
        let got = restored.host_csr(num).unwrap_or(0);
        expected.set_known_csr(num, got);
        let legal = expected.host_csr(num).unwrap_or(0);
        if got != legal {
            return Err(RestoreError::VcpuField {
                vcpu: id,
                field: name,
                value: got,
                reason: format!(
                    "is not a value this hart can hold (its WARL fields make it {legal:#x})"
                ),
            });
        }
    }
    Ok(())
}

/// What a snapshot takes of one vCPU: its hart state, its CTR and its PMU as the hypervisor
/// manages them.
pub(crate) type VcpuSaved = (HartState, ctr_virt::GuestCtrState, pmu_virt::GuestPmuState);

/// What a snapshot takes of a VM besides its vCPUs: the parts its hart instances share
/// (the control socket's thread holds a copy, to snapshot a paused VM).
#[derive(Clone)]
pub(crate) struct VmCommon {
    pub(crate) memory_mib: u64,
    pub(crate) mem: GuestMemoryMmap,
    pub(crate) uart: Arc<Mutex<Uart>>,
    pub(crate) input: InputQueue,
    pub(crate) layout: BootLayout,
    pub(crate) policy: GuestPolicy,
    pub(crate) smp: Option<Arc<Smp>>,
    /// The host hart model's CTR.
    pub(crate) host_ctr: Option<vcpu_api::ctr::CtrConfig>,
    /// The VM's CTR policy (the same for every vCPU).
    pub(crate) ctr_policy: ctr_virt::CtrPolicy,
    /// Which exits its vCPUs trace (the control socket's `trace-exits`).
    pub(crate) trace: Arc<super::trace::ExitTrace>,
    /// `--clock host`: the host clock the vCPUs follow (`None`: virtual time).
    pub(crate) host_clock: Option<vcpu_api::HostClock>,
    /// `--aia aplic-imsic`: the AIA devices.
    pub(crate) aia: Option<Arc<super::aia::Aia>>,
}

impl VmCommon {
    /// The VM's state without its RAM (which a snapshot streams from `mem`), with these
    /// vCPUs (each `hart.hart_id` set, any order), while none of them runs.
    pub(crate) fn state(&self, mut all: Vec<VcpuSaved>) -> VmState {
        all.sort_by_key(|(h, _, _)| h.hart_id);
        let clock = match &self.smp {
            Some(smp) => smp.clock.now(),
            None => all.first().map_or(0, |(h, _, _)| h.vclock),
        };
        // With host time each vCPU's `mtime` is the clock's ticks plus its offset; the
        // snapshot records the offset virtual time would need for the same `mtime`.
        let now = self.host_clock.map(|c| c.ticks());
        let vcpus = all
            .into_iter()
            .map(|(mut hart, ctr, pmu)| {
                if let Some(now) = now {
                    hart.time_offset = now
                        .wrapping_add(hart.time_offset)
                        .wrapping_sub(hart.vclock / vcpu_api::INSNS_PER_TICK);
                }
                let VcpuSmpState {
                    hsm,
                    start,
                    idle,
                    ipi_posted,
                } = match &self.smp {
                    Some(smp) => smp.save_vcpu(hart.hart_id),
                    None => VcpuSmpState::ALONE,
                };
                VcpuState {
                    hart,
                    ctr,
                    pmu,
                    hsm,
                    start,
                    idle,
                    ipi_posted,
                }
            })
            .collect();
        let state = VmState {
            memory_mib: self.memory_mib,
            layout: self.layout.save(),
            trap_wfi: self.policy.trap_wfi,
            trap_time: self.policy.trap_time,
            trap_sret: self.policy.trap_sret,
            trap_vm: self.policy.trap_vm,
            sstc: self.policy.sstc,
            vcpus,
            clock,
            uart: self.uart.lock().unwrap_or_else(|e| e.into_inner()).save(),
            input: self.input.save(),
            host_clock: self.host_clock.is_some(),
            aia: self.aia.as_ref().map(|a| a.save()),
        };
        state
    }

    /// A VM snapshot written to `path` (its state, then its RAM streamed from guest memory:
    /// `crate::snapshot::write`); returns the file's size.
    pub(crate) fn write_snapshot(
        &self,
        path: &Path,
        vcpus: Vec<VcpuSaved>,
    ) -> Result<u64, SnapshotError> {
        crate::snapshot::write(path, &self.state(vcpus), &self.mem)
    }
}

impl GuestVm {
    /// What a snapshot takes of this VM besides its vCPUs.
    pub(crate) fn common(&self) -> VmCommon {
        VmCommon {
            memory_mib: self.memory_mib,
            mem: self.mem.clone(),
            uart: self.uart.clone(),
            input: self.input.clone(),
            layout: self.layout.clone(),
            policy: self.policy,
            smp: self.smp.clone(),
            host_ctr: self.host_ctr.clone(),
            ctr_policy: self.ctr.policy(),
            trace: self.trace.clone(),
            host_clock: self.hart.host_clock(),
            aia: self.aia.clone(),
        }
    }

    /// The VM's state without its RAM ([`GuestVm::memory`]). With several vCPUs only while
    /// no vCPU thread runs: before [`GuestVm::run`] or after it (`--snapshot-on-stop`);
    /// while it runs, through the control socket (which pauses it first).
    pub fn snapshot_state(&self) -> VmState {
        // Every vCPU: the one on each hart instance and the parked ones.
        let mut all = Vec::new();
        for vm in std::iter::once(self).chain(&self.secondaries) {
            let mut hart = vm.hart.save_state();
            hart.hart_id = vm.hart_id;
            all.push((hart, vm.ctr.snapshot(), vm.pmu.snapshot()));
            if let Some(sched) = &vm.sched {
                all.extend(
                    sched
                        .parked
                        .iter()
                        .map(|p| (p.saved_state(), p.ctr.snapshot(), p.pmu.snapshot())),
                );
            }
        }
        self.common().state(all)
    }

    /// Write a snapshot of the VM to `path` (see `crate::snapshot::write`); returns the
    /// file's size.
    pub fn write_snapshot(&self, path: &Path) -> Result<u64, SnapshotError> {
        crate::snapshot::write(path, &self.snapshot_state(), &self.mem)
    }

    /// A VM from snapshot `snap` on the destination described by `options`; console output
    /// goes to `console`. The VM takes over the snapshot's guest RAM (no copy).
    pub fn from_snapshot(
        snap: Snapshot,
        options: &RestoreConfig,
        console: Console,
    ) -> Result<GuestVm, Error> {
        GuestVm::from_state(&snap.state, snap.memory, options, console)
    }

    /// [`GuestVm::from_snapshot`] of a state and its guest RAM `mem`, of the state's size and
    /// already holding the VM's RAM (a snapshot file's pages, or a migration's).
    pub(crate) fn from_state(
        s: &VmState,
        mem: GuestMemoryMmap,
        options: &RestoreConfig,
        console: Console,
    ) -> Result<GuestVm, Error> {
        // A guest that never touched CTR is not refused for its reset depth: it (and its
        // hart, whose CTR is then the VMM's) gets a depth this host has.
        let fitted;
        let s = match fit_untouched_ctr(s, options.host_ctr_depths) {
            Some(f) => {
                fitted = f;
                &fitted
            }
            None => s,
        };
        let n = s.vcpus.len() as u64;
        let pcpus = check_topology(n, options.pcpus, options.slice_insns)?;
        let ram_size = check_memory(s.memory_mib)?;
        if options.paused && options.api_sock.is_none() {
            return Err(super::error::ApiError::PausedWithoutSocket.into());
        }
        for (id, v) in (0..).zip(&s.vcpus) {
            check_vcpu_fields(id, v, ram_size)?;
            if v.hart.hart_id != id {
                return Err(RestoreFailure::HartId {
                    vcpu: id,
                    found: v.hart.hart_id,
                }
                .into());
            }
            let started = v.hsm == STATE_STARTED;
            if !(started || v.hsm == STATE_STOPPED || v.hsm == STATE_START_PENDING)
                || (v.idle.is_some() && !started)
                || (n == 1 && (!started || v.idle.is_some() || v.ipi_posted))
            {
                return Err(RestoreFailure::HsmState {
                    vcpu: id,
                    hsm: v.hsm,
                    idle: v.idle,
                    vcpus: n,
                }
                .into());
            }
        }
        // The destination hart model, and what the guest keeps of its CTR policy there.
        let host_ctr = host_ctr(options.host_ctr_depths);
        let ctrs = s
            .vcpus
            .iter()
            .map(|v| ctr_virt::GuestCtr::restore(&v.ctr, v.hart.ctr.depth, options.host_ctr_depths))
            .collect::<Result<Vec<_>, _>>()?;
        let fw = pmu_virt::FwTallies::new(s.vcpus.len());
        let pmus = (0..)
            .zip(&s.vcpus)
            .map(|(id, v)| {
                pmu_virt::GuestPmu::restore(&v.pmu, id, fw.clone())
                    .ok_or(RestoreFailure::PmuState { vcpu: id as u64 })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(path) = &options.snapshot_on_stop {
            crate::snapshot::check_target(path)?;
        }
        let ram_bytes: u64 = mem.iter().map(|r| r.len()).sum();
        if ram_bytes != ram_size {
            return Err(SnapshotError::BadField {
                field: "memory_mib".into(),
                reason: format!(
                    "{} MiB of RAM announced, {ram_bytes} bytes given",
                    s.memory_mib
                ),
            }
            .into());
        }
        let clock = (n > 1).then(|| {
            let clock = SharedClock::new();
            clock.advance_to(s.clock);
            Arc::new(clock)
        });
        // The snapshot's policy: `vmm run` set each hart up from it (`vinsn::apply`, with
        // Sstc's enables when it offered Sstc), and so is each `expected` hart below.
        let policy = GuestPolicy {
            trap_wfi: s.trap_wfi,
            trap_time: s.trap_time,
            trap_sret: s.trap_sret,
            trap_vm: s.trap_vm,
            sstc: s.sstc,
        };
        // Host time continues from the latest `mtime` among the vCPUs (in a snapshot each
        // `time_offset` is as virtual time has it, whatever the clock).
        let host_clock = (options.clock == vcpu_api::ClockMode::Host).then(|| {
            let base = s
                .vcpus
                .iter()
                .map(|v| {
                    (v.hart.vclock / vcpu_api::INSNS_PER_TICK).wrapping_add(v.hart.time_offset)
                })
                .max()
                .unwrap_or(0);
            vcpu_api::HostClock::starting_at(base)
        });
        let hart_options = HartOptions {
            clock: clock.clone(),
            ctr: host_ctr.clone(),
            jit: options.jit,
            perf_map: options.perf_map,
            host_clock,
            aia_vcpus: s.aia.as_ref().map(|_| n),
        };
        let mut harts = Vec::new();
        for (id, v) in (0..).zip(&s.vcpus) {
            let hart_config = hart_options.hart_config(id);
            let mut hart = Hart::new_guest(hart_config.clone(), mem.clone())?;
            hart.restore_state(&v.hart)
                .map_err(|source| RestoreFailure::Hart {
                    vcpu: (n > 1).then_some(id),
                    source,
                })?;
            if host_clock.is_some() {
                // `mtime` is the clock's ticks: the snapshot's time, then the host's.
                hart.set_host_clock(host_clock);
            }
            let mut expected = Hart::new_guest(hart_config, mem.clone())?;
            super::vinsn::apply(&mut expected, &policy);
            ctrs[id as usize].prepare(&mut expected);
            pmus[id as usize].prepare(&mut expected);
            if s.aia.is_some() {
                super::aia::prepare(&mut expected);
            }
            check_vmm_owned(id, v, &hart, &mut expected)?;
            hart.set_trace(options.trace);
            hart.set_trace_range(options.trace_range.clone());
            harts.push(hart);
        }
        let uart = Uart::restore(&s.uart, console).map_err(RestoreFailure::Uart)?;
        let uart = Arc::new(Mutex::new(uart));
        let input = InputQueue::restore(&s.input, ()).map_err(RestoreFailure::Field)?;
        let layout = BootLayout::restore(&s.layout, ()).map_err(RestoreFailure::Field)?;
        let smp = clock.map(|clock| {
            let mailboxes = harts.iter().map(|h| h.mailbox()).collect();
            let stops = harts[..pcpus as usize]
                .iter()
                .map(|h| h.stop_handle())
                .collect();
            let smp = Smp::new(clock, host_clock, mailboxes, stops);
            // A WFI deadline is in the units of the clock it was taken with (instruction
            // slots, or host-clock ticks, which are `mtime` and continue across the restore);
            // on a clock of the other kind the wait ends at once (WFI may end spuriously)
            // and the guest waits again if it needs to.
            let same_clock = s.host_clock == host_clock.is_some();
            for (id, v) in (0..).zip(&s.vcpus) {
                let saved = VcpuSmpState {
                    hsm: v.hsm,
                    start: v.start,
                    idle: v.idle.map(|d| if same_clock { d } else { 0 }),
                    ipi_posted: v.ipi_posted,
                };
                smp.restore_vcpu(id, &saved);
            }
            Arc::new(smp)
        });
        let aia = match &s.aia {
            Some(saved) => Some(Arc::new(
                super::aia::Aia::restore(
                    saved,
                    harts.iter().map(|h| h.mailbox()).collect(),
                    smp.clone(),
                )
                .map_err(RestoreFailure::Aia)?,
            )),
            None => None,
        };
        // The instruction budget counts each vCPU's instructions from the restore.
        let insns_base: std::sync::Arc<[u64]> = s
            .vcpus
            .iter()
            .map(|v| v.hart.vclock.saturating_sub(v.hart.skipped))
            .collect();
        let shared = VmShared {
            memory_mib: s.memory_mib,
            mem,
            uart,
            aia,
            input,
            layout,
            max_insns: options.max_insns,
            insns_base,
            timeout: options.timeout,
            policy,
            fw,
            host_ctr,
            snapshot_on_stop: options.snapshot_on_stop.clone(),
            smp,
            trace: Arc::new(super::trace::ExitTrace::with_symbols(
                options.trace_exits,
                options.symbols.clone(),
            )),
        };
        let vcpus = (0..)
            .zip(harts)
            .zip(ctrs.into_iter().zip(pmus))
            .map(|((id, h), v)| (id, h, v))
            .collect();
        let can_run = |id: u64| {
            let v = &s.vcpus[id as usize];
            v.hsm == STATE_STARTED && v.idle.is_none()
        };
        let mut instances =
            place_vcpus(vcpus, pcpus, options.slice_insns, can_run, &shared).into_iter();
        let Some(mut boot) = instances.next() else {
            return Err(Error::InvalidVcpus {
                vcpus: n,
                max: MAX_VCPUS,
            });
        };
        boot.secondaries = instances.collect();
        if let Some(path) = &options.api_sock {
            boot.attach_api(path, options.paused)?;
        }
        if let Some(gdb) = &options.gdb {
            boot.attach_gdb(gdb, options.symbols.clone())?;
        }
        Ok(boot)
    }
}

/// `vmm restore`: read the snapshot at `path`, check it fits the destination, and run it.
pub fn restore_and_run(
    path: &Path,
    options: &RestoreConfig,
    console: Console,
    input: ConsoleInput,
) -> Result<(RunExit, RunStats), Error> {
    // The target of `--snapshot-on-stop` is checked before the file is even read.
    if let Some(target) = &options.snapshot_on_stop {
        crate::snapshot::check_target(target)?;
    }
    let snap = crate::snapshot::read(path)?;
    let vm = GuestVm::from_snapshot(snap, options, console)?;
    run_vm(vm, input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunConfig;
    use vm_memory::{Bytes, GuestAddress};

    /// The CTR self-test guest (CTR context loaded, PMU with snapshot shared memory
    /// allowed), stopped after some instructions, with its snapshot.
    fn source() -> (GuestVm, VmState) {
        let mut config = RunConfig::ctr_demo();
        config.memory_mib = 16;
        config.max_insns = Some(20_000);
        config.pmu_snapshot = true;
        let mut vm = GuestVm::new(&config, Box::new(std::io::sink())).unwrap();
        vm.run().unwrap();
        let state = vm.snapshot_state();
        assert!(
            state.vcpus[0].ctr.loaded,
            "the test wants the CTR context on the hart"
        );
        (vm, state)
    }

    /// Write `state` mutated by `change` to a file (the checksum is the new content's), read
    /// it and restore it: the restore must fail; the file and the source VM are unchanged.
    /// The error message.
    fn refused(name: &str, change: impl FnOnce(&mut VmState)) -> String {
        let (vm, state) = source();
        let mut bad = state.clone();
        change(&mut bad);
        let path = std::env::temp_dir().join(format!(
            "vmm-restore-check-{}-{name}.snap",
            std::process::id()
        ));
        crate::snapshot::write(&path, &bad, vm.memory()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let msg = match crate::snapshot::read(&path) {
            Err(e) => e.to_string(),
            Ok(snap) => {
                match GuestVm::from_snapshot(
                    snap,
                    &RestoreConfig::default(),
                    Box::new(std::io::sink()),
                ) {
                    Ok(_) => panic!("{name}: the mutated snapshot was restored"),
                    Err(e) => e.to_string(),
                }
            }
        };
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{name}: the file changed"
        );
        let _ = std::fs::remove_file(&path);
        assert_eq!(vm.snapshot_state(), state, "{name}: the source VM changed");
        msg
    }

    #[test]
    fn the_unchanged_snapshot_restores() {
        let (vm, state) = source();
        let path = std::env::temp_dir().join(format!(
            "vmm-restore-check-{}-unchanged.snap",
            std::process::id()
        ));
        crate::snapshot::write(&path, &state, vm.memory()).unwrap();
        let snap = crate::snapshot::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let restored =
            GuestVm::from_snapshot(snap, &RestoreConfig::default(), Box::new(std::io::sink()))
                .unwrap();
        assert_eq!(restored.snapshot_state(), state);
        // Guest RAM restored byte for byte.
        let (mut a, mut b) = (vec![0u8; 16 << 20], vec![0u8; 16 << 20]);
        vm.memory()
            .read_slice(&mut a, GuestAddress(RAM_BASE))
            .unwrap();
        restored
            .memory()
            .read_slice(&mut b, GuestAddress(RAM_BASE))
            .unwrap();
        assert!(a == b, "guest RAM differs after the restore");
    }

    #[test]
    fn skipped_beyond_the_clock_is_refused() {
        let e = refused("skipped", |s| {
            let h = &mut s.vcpus[0].hart;
            h.skipped = h.vclock + 9_614_793;
        });
        assert!(e.contains("vCPU 0: field `hart.skipped`"), "{e}");
        assert!(e.contains("more than `hart.vclock`"), "{e}");
    }

    #[test]
    fn vmm_owned_registers_are_checked_against_the_vmm_configuration() {
        let e = refused("hstateen0", |s| {
            s.vcpus[0].hart.csr.hstateen[0] &= !ctr_virt::csr::STATEEN0_CTR
        });
        assert!(
            e.contains("field `hstateen0`") && e.contains("the VMM owns it"),
            "{e}"
        );
        let e = refused("hedeleg", |s| s.vcpus[0].hart.csr.h.hedeleg = 0);
        assert!(e.contains("field `hedeleg` = 0x0"), "{e}");
        let e = refused("hideleg", |s| s.vcpus[0].hart.csr.h.hideleg = 0);
        assert!(e.contains("field `hideleg` = 0x0"), "{e}");
        let e = refused("vtw", |s| s.vcpus[0].hart.csr.h.hstatus ^= 1 << 21);
        assert!(e.contains("field `hstatus.VTSR/VTW/VTVM`"), "{e}");
        // --trap time without Sstc (with it, Sstc would not be offered: STCE differs too).
        let e = refused("tm", |s| {
            s.trap_time = !s.trap_time;
            s.sstc = false;
            s.vcpus[0].hart.csr.menvcfg &= !csr::MENVCFG_STCE;
            s.vcpus[0].hart.csr.h.henvcfg &= !csr::MENVCFG_STCE;
        });
        assert!(e.contains("field `hcounteren.TM`"), "{e}");
        let e = refused("hgatp", |s| s.vcpus[0].hart.csr.h.hgatp = 8 << 60);
        assert!(e.contains("field `hgatp` = 0x8000000000000000"), "{e}");
    }

    /// Sstc's enables (`menvcfg.STCE`, `henvcfg.STCE`) must be what the snapshot's policy
    /// sets: both with `sstc` (and `time` not trapped), neither without, as in a snapshot
    /// of format 7.
    #[test]
    fn sstc_enables_follow_the_policy() {
        let stce = csr::MENVCFG_STCE;
        let (vm, state) = source();
        assert!(state.sstc && !state.trap_time);
        assert_ne!(state.vcpus[0].hart.csr.menvcfg & stce, 0);
        assert_ne!(state.vcpus[0].hart.csr.h.henvcfg & stce, 0);
        let e = refused("sstc-policy", |s| s.sstc = false);
        assert!(e.contains("field `menvcfg`"), "{e}");
        let e = refused("sstc-menvcfg", |s| s.vcpus[0].hart.csr.menvcfg &= !stce);
        assert!(e.contains("field `menvcfg`"), "{e}");
        let e = refused("sstc-henvcfg", |s| s.vcpus[0].hart.csr.h.henvcfg &= !stce);
        assert!(e.contains("field `henvcfg`"), "{e}");
        // A VM without Sstc (as every format 7 snapshot is) restores without it.
        let mut old = state.clone();
        old.sstc = false;
        old.vcpus[0].hart.csr.menvcfg &= !stce;
        old.vcpus[0].hart.csr.h.henvcfg &= !stce;
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), 16 << 20)]).unwrap();
        let mut page = vec![0u8; 16 << 20];
        vm.memory()
            .read_slice(&mut page, GuestAddress(RAM_BASE))
            .unwrap();
        mem.write_slice(&page, GuestAddress(RAM_BASE)).unwrap();
        let restored = GuestVm::from_state(
            &old,
            mem,
            &RestoreConfig::default(),
            Box::new(std::io::sink()),
        )
        .unwrap();
        let again = restored.snapshot_state();
        assert!(!again.sstc);
        assert_eq!(again.vcpus[0].hart.csr.menvcfg & stce, 0);
    }

    #[test]
    fn warl_csrs_must_hold_legal_values() {
        // vsatp.MODE 15 is reserved; hvip bit 1 (SSIP) is not a VS-level bit.
        let e = refused("vsatp", |s| s.vcpus[0].hart.csr.h.vsatp = 15 << 60);
        assert!(
            e.contains("field `vsatp` = 0xf000000000000000 is not a value this hart can hold"),
            "{e}"
        );
        let e = refused("hvip", |s| s.vcpus[0].hart.csr.h.hvip = 1 << 1);
        assert!(e.contains("field `hvip` = 0x2 is not a value"), "{e}");
    }

    #[test]
    fn pmu_shared_memory_outside_ram_or_misaligned_is_refused() {
        for (lo, why) in [
            (RAM_BASE + 8, "not 4 KiB-aligned"),
            (0x1000, "inside guest RAM"),
            (RAM_BASE + (16 << 20), "inside guest RAM"),
            (!0xfffu64, "inside guest RAM"),
        ] {
            let e = refused("shmem", |s| s.vcpus[0].pmu.shmem = Some(lo));
            assert!(
                e.contains(&format!("field `pmu.shmem` = {lo:#x}")) && e.contains(why),
                "{e}"
            );
        }
        let e = refused("shmem-off", |s| {
            s.vcpus[0].pmu.shmem = Some(RAM_BASE);
            s.vcpus[0].pmu.policy.snapshot = false;
        });
        assert!(e.contains("--pmu-snapshot off"), "{e}");
    }

    #[test]
    fn reserved_ctr_depth_encodings_are_refused_as_such() {
        let e = refused("depth-hart", |s| s.vcpus[0].hart.ctr.depth = 5);
        assert!(e.contains("sctrdepth.DEPTH = 5 is a reserved"), "{e}");
        assert!(!e.contains("host does not support"), "{e}");
        let e = refused("depth-context", |s| s.vcpus[0].ctr.context.depth = 6);
        assert!(e.contains("ctr.context.depth = 6 is a reserved"), "{e}");
        let e = refused("sctrstatus", |s| {
            s.vcpus[0].ctr.context.sctrstatus = 1 << 40
        });
        assert!(e.contains("ctr.context.sctrstatus"), "{e}");
    }

    #[test]
    fn guest_mode_and_pc_are_checked() {
        let e = refused("pc", |s| s.vcpus[0].hart.pc |= 1);
        assert!(
            e.contains("field `hart.pc`") && e.contains("aligned"),
            "{e}"
        );
        let e = refused("prv", |s| s.vcpus[0].hart.prv = 3);
        assert!(e.contains("field `hart.prv` = 0x3"), "{e}");
        let e = refused("virt", |s| s.vcpus[0].hart.virt = false);
        assert!(e.contains("field `hart.prv`") && e.contains("V = 0"), "{e}");
    }
}
