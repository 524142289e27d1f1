//! Snapshots of `vmm run` VMs and `vmm restore` (the file format is `crate::snapshot`).
//!
//! A snapshot is taken between two runs of the vCPU, so the hart is at an instruction
//! boundary with no device access pending. The source VM is only read. Restoring builds a
//! new VM on a hart model given by the destination's options (`--host-ctr-depths`): every
//! check (format, checksum, RAM size, the hart state against the destination hart, the
//! guest's CTR depth against the destination's depths) happens before the guest runs.
//!
//! Only single-vCPU VMs can be snapshotted so far; a VM with more vCPUs is refused with a
//! message saying so.

use std::path::Path;
use std::sync::{Arc, Mutex};

use vcpu::{Hart, HartConfig, MmioRange};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use super::{
    run_vm, BootLayout, ConsoleInput, GuestPolicy, GuestVm, InputQueue, RunExit, RunStats,
};
use crate::devices::uart::Uart;
use crate::devices::Console;
use crate::error::Error;
use crate::machine::{HART_ID, MAX_MEMORY_MIB, RAM_BASE, UART_BASE, UART_SIZE};
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
        }
    }
}

impl GuestVm {
    /// The VM's state and RAM.
    pub fn snapshot(&self) -> Result<(VmState, Vec<u8>), SnapshotError> {
        if self.smp.is_some() {
            return Err(SnapshotError::Unsupported(
                "snapshots of VMs with more than one vCPU are not implemented yet".into(),
            ));
        }
        let mut memory = vec![0u8; (self.memory_mib << 20) as usize];
        self.mem
            .read_slice(&mut memory, GuestAddress(RAM_BASE))
            .map_err(|e| SnapshotError::Unsupported(format!("cannot read guest RAM: {e}")))?;
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
            vcpus: vec![VcpuState {
                hart: self.hart.save_state(),
                ctr: self.ctr.snapshot(),
            }],
            uart: self.uart().state(),
            input: self.input.peek_all(),
        };
        Ok((state, memory))
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
        if s.vcpus.len() != 1 {
            return Err(Error::Restore(format!(
                "{} vCPUs: only single-vCPU snapshots are supported",
                s.vcpus.len()
            )));
        }
        if s.memory_mib == 0 || s.memory_mib > MAX_MEMORY_MIB {
            return Err(Error::InvalidMemorySize {
                mib: s.memory_mib,
                max: MAX_MEMORY_MIB,
            });
        }
        let v = &s.vcpus[0];
        if v.hart.hart_id != HART_ID {
            return Err(Error::Restore(format!(
                "vCPU with hart id {} (expected {HART_ID})",
                v.hart.hart_id
            )));
        }
        // The destination hart model, and what the guest keeps of its CTR policy there.
        let host_ctr = (!options.host_ctr_depths.is_empty()).then(|| vcpu::ctr::CtrConfig {
            depths: options.host_ctr_depths.bits(),
            ..vcpu::ctr::CtrConfig::full()
        });
        let ctr = ctr_virt::GuestCtr::restore(&v.ctr, v.hart.ctr.depth, options.host_ctr_depths)?;
        let ram_size = s.memory_mib << 20;
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), ram_size as usize)])
            .map_err(|source| Error::GuestMemory {
                mib: s.memory_mib,
                source,
            })?;
        let hart_config = HartConfig {
            hart_id: HART_ID,
            mmio: vec![MmioRange {
                base: UART_BASE,
                size: UART_SIZE,
            }],
            ctr: host_ctr,
            ..HartConfig::default()
        };
        let mut hart = Hart::new_guest(hart_config, mem.clone())?;
        hart.restore_state(&v.hart)
            .map_err(|e| Error::Restore(e.to_string()))?;
        hart.set_trace(options.trace);
        mem.write_slice(&snap.memory, GuestAddress(RAM_BASE))
            .map_err(|e| Error::Restore(format!("cannot write guest RAM: {e}")))?;
        let uart = Uart::from_state(&s.uart, console)
            .ok_or_else(|| Error::Restore("the UART state is invalid".into()))?;
        let input = InputQueue::default();
        input.push(&s.input);
        let l = &s.layout;
        let api = match &options.api_sock {
            Some(path) => {
                let mut api = super::api::VmApi::spawn(path, hart.stop_handle())?;
                api.paused = options.paused;
                Some(api)
            }
            None if options.paused => {
                return Err(Error::Api(
                    "--paused needs --api-sock (to resume the guest)".into(),
                ))
            }
            None => None,
        };
        Ok(GuestVm {
            hart,
            memory_mib: s.memory_mib,
            hart_id: HART_ID,
            mem,
            uart: Arc::new(Mutex::new(uart)),
            input,
            layout: BootLayout {
                entry: l.entry,
                kernel: l.kernel.0..l.kernel.1,
                initrd: l.initrd.map(|(a, b)| a..b),
                fdt: l.fdt,
            },
            // The instruction budget counts from the restore.
            max_insns: options
                .max_insns
                .map(|n| n.saturating_add(v.hart.vclock - v.hart.skipped)),
            timeout: options.timeout,
            policy: GuestPolicy {
                trap_wfi: s.trap_wfi,
                trap_time: s.trap_time,
            },
            ctr,
            api,
            snapshot_on_stop: options.snapshot_on_stop.clone(),
            stats: Default::default(),
            smp: None,
            secondaries: Vec::new(),
            secondary_insns: 0,
            sched: None,
            switch_counts: Vec::new(),
        })
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
