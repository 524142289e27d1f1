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
//! (`run/pause.rs`), with the same [`VmCommon::snapshot`].

use std::path::Path;
use std::sync::{Arc, Mutex};

use vcpu::state::HartState;
use vcpu::{Hart, HartConfig, MmioRange, SharedClock};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use super::smp::Smp;
use super::{
    place_vcpus, run_vm, BootLayout, ConsoleInput, GuestPolicy, GuestVm, InputQueue, RunExit,
    RunStats, MAX_VCPUS,
};
use crate::devices::uart::Uart;
use crate::devices::Console;
use crate::error::Error;
use crate::machine::{MAX_MEMORY_MIB, RAM_BASE, UART_BASE, UART_SIZE};
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
}

impl Default for RestoreConfig {
    fn default() -> Self {
        RestoreConfig {
            host_ctr_depths: ctr_virt::DepthSet::ALL,
            max_insns: None,
            timeout: None,
            trace: false,
            api_sock: None,
            snapshot_on_stop: None,
            paused: false,
            pcpus: None,
            slice_insns: super::DEFAULT_SLICE_INSNS,
            jit: true,
        }
    }
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
    pub(crate) host_ctr: Option<vcpu::ctr::CtrConfig>,
}

impl VmCommon {
    /// The VM's state and RAM, with these vCPUs (each `hart.hart_id` set, any order), while
    /// none of them runs.
    pub(crate) fn snapshot(
        &self,
        mut all: Vec<VcpuSaved>,
    ) -> Result<(VmState, Vec<u8>), SnapshotError> {
        let mut memory = vec![0u8; (self.memory_mib << 20) as usize];
        self.mem
            .read_slice(&mut memory, GuestAddress(RAM_BASE))
            .map_err(|e| SnapshotError::Unsupported(format!("cannot read guest RAM: {e}")))?;
        all.sort_by_key(|(h, _, _)| h.hart_id);
        let clock = match &self.smp {
            Some(smp) => smp.clock.now(),
            None => all.first().map_or(0, |(h, _, _)| h.vclock),
        };
        let vcpus = all
            .into_iter()
            .map(|(hart, ctr, pmu)| {
                let (hsm, start, idle, ipi_posted) = match &self.smp {
                    Some(smp) => smp.vcpu_state(hart.hart_id),
                    None => (STATE_STARTED, (0, 0), None, false),
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
        let l = &self.layout;
        let state = VmState {
            memory_mib: self.memory_mib,
            layout: LayoutState {
                entry: l.entry,
                kernel: (l.kernel.start, l.kernel.end),
                initrd: l.initrd.as_ref().map(|r| (r.start, r.end)),
                fdt: l.fdt,
            },
            trap_wfi: self.policy.trap_wfi,
            trap_time: self.policy.trap_time,
            vcpus,
            clock,
            uart: self.uart.lock().unwrap_or_else(|e| e.into_inner()).state(),
            input: self.input.peek_all(),
        };
        Ok((state, memory))
    }

    /// A VM snapshot written to `path`: see [`VmCommon::snapshot`].
    pub(crate) fn write_snapshot(
        &self,
        path: &Path,
        vcpus: Vec<VcpuSaved>,
    ) -> Result<(), SnapshotError> {
        let (state, memory) = self.snapshot(vcpus)?;
        crate::snapshot::write(path, &state, &memory)
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
        }
    }

    /// The VM's state and RAM. With several vCPUs only while no vCPU thread runs: before
    /// [`GuestVm::run`] or after it (`--snapshot-on-stop`); while it runs, through the
    /// control socket (which pauses it first).
    pub fn snapshot(&self) -> Result<(VmState, Vec<u8>), SnapshotError> {
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
                        .map(|p| (p.state.clone(), p.ctr.snapshot(), p.pmu.snapshot())),
                );
            }
        }
        self.common().snapshot(all)
    }

    /// Write a snapshot of the VM to `path`.
    pub fn write_snapshot(&self, path: &Path) -> Result<(), SnapshotError> {
        let (state, memory) = self.snapshot()?;
        crate::snapshot::write(path, &state, &memory)
    }

    /// A VM from snapshot `snap` on the destination described by `options`; console output
    /// goes to `console`.
    pub fn from_snapshot(
        snap: &Snapshot,
        options: &RestoreConfig,
        console: Console,
    ) -> Result<GuestVm, Error> {
        let s = &snap.state;
        let n = s.vcpus.len() as u64;
        if n == 0 || n > MAX_VCPUS {
            return Err(Error::InvalidVcpus {
                vcpus: n,
                max: MAX_VCPUS,
            });
        }
        if s.memory_mib == 0 || s.memory_mib > MAX_MEMORY_MIB {
            return Err(Error::InvalidMemorySize {
                mib: s.memory_mib,
                max: MAX_MEMORY_MIB,
            });
        }
        for (id, v) in (0..).zip(&s.vcpus) {
            if v.hart.hart_id != id {
                return Err(Error::Restore(format!(
                    "vCPU {id} has hart id {} (expected {id})",
                    v.hart.hart_id
                )));
            }
            let started = v.hsm == STATE_STARTED;
            if !(started || v.hsm == STATE_STOPPED || v.hsm == STATE_START_PENDING)
                || (v.idle.is_some() && !started)
                || (n == 1 && (!started || v.idle.is_some() || v.ipi_posted))
            {
                return Err(Error::Restore(format!(
                    "vCPU {id}: HSM state {} with WFI wait {:?} is not a state a VM of {n} \
                     vCPUs can be in",
                    v.hsm, v.idle
                )));
            }
        }
        let pcpus = options.pcpus.unwrap_or(n);
        if pcpus == 0 || pcpus > n {
            return Err(Error::InvalidPcpus { pcpus, vcpus: n });
        }
        if options.slice_insns == 0 {
            return Err(Error::InvalidSlice);
        }
        // The destination hart model, and what the guest keeps of its CTR policy there.
        let host_ctr = (!options.host_ctr_depths.is_empty()).then(|| vcpu::ctr::CtrConfig {
            depths: options.host_ctr_depths.bits(),
            ..vcpu::ctr::CtrConfig::full()
        });
        let ctrs = s
            .vcpus
            .iter()
            .map(|v| ctr_virt::GuestCtr::restore(&v.ctr, v.hart.ctr.depth, options.host_ctr_depths))
            .collect::<Result<Vec<_>, _>>()?;
        let fw = pmu_virt::FwTallies::new(s.vcpus.len());
        let pmus = (0..)
            .zip(&s.vcpus)
            .map(|(id, v)| {
                pmu_virt::GuestPmu::restore(&v.pmu, id, fw.clone()).ok_or_else(|| {
                    Error::Restore(format!("vCPU {id}: the virtual PMU state is invalid"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ram_size = s.memory_mib << 20;
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), ram_size as usize)])
            .map_err(|source| Error::GuestMemory {
                mib: s.memory_mib,
                source,
            })?;
        let clock = (n > 1).then(|| {
            let clock = SharedClock::new();
            clock.advance_to(s.clock);
            Arc::new(clock)
        });
        let mut harts = Vec::new();
        for (id, v) in (0..).zip(&s.vcpus) {
            let hart_config = HartConfig {
                hart_id: id,
                mmio: vec![MmioRange {
                    base: UART_BASE,
                    size: UART_SIZE,
                }],
                shared_clock: clock.clone(),
                ctr: host_ctr.clone(),
                jit: options.jit,
                ..HartConfig::default()
            };
            let mut hart = Hart::new_guest(hart_config, mem.clone())?;
            hart.restore_state(&v.hart).map_err(|e| {
                Error::Restore(if n == 1 {
                    e.to_string()
                } else {
                    format!("vCPU {id}: {e}")
                })
            })?;
            hart.set_trace(options.trace);
            harts.push(hart);
        }
        mem.write_slice(&snap.memory, GuestAddress(RAM_BASE))
            .map_err(|e| Error::Restore(format!("cannot write guest RAM: {e}")))?;
        let uart = Uart::from_state(&s.uart, console)
            .ok_or_else(|| Error::Restore("the UART state is invalid".into()))?;
        let uart = Arc::new(Mutex::new(uart));
        let input = InputQueue::default();
        input.push(&s.input);
        let smp = clock.map(|clock| {
            let mailboxes = harts.iter().map(|h| h.mailbox()).collect();
            let stops = harts[..pcpus as usize]
                .iter()
                .map(|h| h.stop_handle())
                .collect();
            let smp = Smp::new(clock, mailboxes, stops);
            for (id, v) in (0..).zip(&s.vcpus) {
                let ipi = if v.ipi_posted { super::VSSIP } else { 0 };
                smp.restore_vcpu_state(id, v.hsm, v.start, v.idle, ipi);
            }
            Arc::new(smp)
        });
        if options.paused && options.api_sock.is_none() {
            return Err(Error::Api(
                "--paused needs --api-sock (to resume the guest)".into(),
            ));
        }
        let l = &s.layout;
        // The instruction budget counts from the restore (with several vCPUs, from the
        // largest count among them).
        let done = s
            .vcpus
            .iter()
            .map(|v| v.hart.vclock.saturating_sub(v.hart.skipped))
            .max()
            .unwrap_or(0);
        let make = |hart: Hart, hart_id: u64, (ctr, pmu): super::VcpuVirt| GuestVm {
            hart,
            memory_mib: s.memory_mib,
            hart_id,
            mem: mem.clone(),
            uart: uart.clone(),
            input: input.clone(),
            layout: BootLayout {
                entry: l.entry,
                kernel: l.kernel.0..l.kernel.1,
                initrd: l.initrd.map(|(a, b)| a..b),
                fdt: l.fdt,
            },
            max_insns: options.max_insns.map(|m| m.saturating_add(done)),
            timeout: options.timeout,
            policy: GuestPolicy {
                trap_wfi: s.trap_wfi,
                trap_time: s.trap_time,
            },
            ctr,
            pmu,
            fw: fw.clone(),
            api: None,
            pause: None,
            host_ctr: host_ctr.clone(),
            snapshot_on_stop: options.snapshot_on_stop.clone(),
            stats: Default::default(),
            smp: smp.clone(),
            secondaries: Vec::new(),
            sched: None,
            switch_counts: Vec::new(),
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
            place_vcpus(vcpus, pcpus, options.slice_insns, can_run, make).into_iter();
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
    let snap = crate::snapshot::read(path)?;
    let vm = GuestVm::from_snapshot(&snap, options, console)?;
    run_vm(vm, input)
}
