//! Building a `vmm run` VM from a [`RunConfig`]: [`VmBuilder::new`] checks the whole
//! configuration (vCPUs, hart instances, time slice, RAM size, CTR depths, PMU options, the
//! kernel and initrd files) before anything is allocated; [`VmBuilder::build`] then builds
//! the VM in named steps: RAM, kernel, initrd, device tree, vCPUs, hart instances. A Linux
//! `Image` and the initrd are read from their files straight into guest RAM
//! ([`InputFile::read_into`]): no copy of them is made in host memory.

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::backend::{Hart, HartConfig};
use vcpu_api::{SharedClock, Vcpu};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use super::aia::{self, Aia, AiaMode};
use super::kernel::{self, LoadedKernel};
use super::smp::Smp;
use super::{
    fdt, place_vcpus, vinsn, BootLayout, GuestPolicy, GuestVm, InputQueue, RunConfig, VmShared,
    FDT_FROM_END, FDT_MAX, MAX_VCPUS, PAGE,
};
use crate::devices::uart::Uart;
use crate::devices::Console;
use crate::error::{Error, InputRefusal};
use crate::machine::{HART_ID, MAX_MEMORY_MIB, RAM_BASE};

pub use super::error::BootDataError;

/// A checked configuration, ready to build: what [`VmBuilder::new`] derived from the
/// [`RunConfig`] and the files it names.
pub struct VmBuilder<'a> {
    config: &'a RunConfig,
    policy: GuestPolicy,
    /// Guest RAM size in bytes.
    ram_size: u64,
    /// Where the device tree goes.
    fdt_addr: u64,
    /// Hart instances (`--pcpus`, defaulted).
    pcpus: u64,
    /// The host hart model's CTR.
    host_ctr: Option<vcpu_api::ctr::CtrConfig>,
    /// What the guest may use of it.
    ctr_policy: ctr_virt::CtrPolicy,
    /// The guest's virtual PMU.
    pmu_policy: pmu_virt::PmuPolicy,
    /// The kernel.
    kernel: KernelInput,
    /// The initrd, if any: checked and opened, read straight into guest RAM by
    /// [`VmBuilder::build`].
    initrd: Option<InputFile>,
}

/// The kernel as [`VmBuilder::new`] found it.
enum KernelInput {
    /// Its bytes: the built-in guest, an ELF file.
    Bytes(std::borrow::Cow<'static, [u8]>),
    /// A Linux `Image` file (its header read), read straight into guest RAM by
    /// [`VmBuilder::build`], with no copy in host memory (Debian's is 31 MB).
    Image {
        header: kernel::ImageHeader,
        file: InputFile,
    },
}

impl std::fmt::Debug for VmBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VmBuilder")
            .field("ram_size", &self.ram_size)
            .field("pcpus", &self.pcpus)
            .field(
                "kernel_bytes",
                &match &self.kernel {
                    KernelInput::Bytes(b) => b.len() as u64,
                    KernelInput::Image { file, .. } => file.len,
                },
            )
            .finish_non_exhaustive()
    }
}

/// Checks the vCPU topology shared by `vmm run` and `vmm restore`: `vcpus` in
/// 1..=[`MAX_VCPUS`], `pcpus` (default `vcpus`) in 1..=`vcpus`, a non-zero time slice.
/// Returns the number of hart instances.
pub(super) fn check_topology(vcpus: u64, pcpus: Option<u64>, slice: u64) -> Result<u64, Error> {
    if vcpus == 0 || vcpus > MAX_VCPUS {
        return Err(Error::InvalidVcpus {
            vcpus,
            max: MAX_VCPUS,
        });
    }
    let pcpus = pcpus.unwrap_or(vcpus);
    if pcpus == 0 || pcpus > vcpus {
        return Err(Error::InvalidPcpus { pcpus, vcpus });
    }
    if slice == 0 {
        return Err(Error::InvalidSlice);
    }
    Ok(pcpus)
}

/// Checks a RAM size in MiB (1..=[`MAX_MEMORY_MIB`]) and returns it in bytes.
pub(super) fn check_memory(mib: u64) -> Result<u64, Error> {
    if mib == 0 || mib > MAX_MEMORY_MIB {
        return Err(Error::InvalidMemorySize {
            mib,
            max: MAX_MEMORY_MIB,
        });
    }
    Ok(mib << 20)
}

/// Allocates `mib` MiB of guest RAM at [`RAM_BASE`].
pub(super) fn allocate_ram(mib: u64) -> Result<GuestMemoryMmap, Error> {
    crate::ram::allocate(mib << 20).map_err(|source| Error::GuestMemory { mib, source })
}

/// Why [`read_input`] or [`open_input`] failed, or an [`InputFile`] could not be read.
#[derive(Debug)]
pub(crate) struct InputFailure {
    path: std::path::PathBuf,
    what: &'static str,
    reason: Result<InputRefusal, std::io::Error>,
}

impl InputFailure {
    /// As the VMM's error; a read error through `io` (which names the file's role).
    pub(crate) fn into_error(
        self,
        io: impl FnOnce(std::path::PathBuf, std::io::Error) -> Error,
    ) -> Error {
        match self.reason {
            Ok(reason) => Error::BadInput {
                what: self.what,
                path: self.path,
                reason,
            },
            Err(source) => io(self.path, source),
        }
    }
}

/// Reads the `what` file at `path` (an ELF kernel; `vmm machine`'s program): a regular
/// file of at most `max` bytes, checked before it is read ([`open_input`]).
pub(crate) fn read_input(
    path: &Path,
    what: &'static str,
    max: u64,
) -> Result<Vec<u8>, InputFailure> {
    open_input(path, what, max)?.read_all(max)
}

/// An input file checked and opened ([`open_input`]), not read yet.
#[derive(Debug)]
pub(crate) struct InputFile {
    path: std::path::PathBuf,
    what: &'static str,
    file: std::fs::File,
    /// Its size when checked.
    len: u64,
}

impl InputFile {
    fn fail(&self, reason: Result<InputRefusal, std::io::Error>) -> InputFailure {
        InputFailure {
            path: self.path.clone(),
            what: self.what,
            reason,
        }
    }

    /// The whole file, of at most `max` bytes (a file that grew past it since it was
    /// checked is refused too).
    fn read_all(mut self, max: u64) -> Result<Vec<u8>, InputFailure> {
        use std::io::Read;
        let mut data = Vec::new();
        data.try_reserve_exact(self.len as usize)
            .map_err(|e| self.fail(Err(std::io::Error::new(std::io::ErrorKind::OutOfMemory, e))))?;
        // At most one byte more than allowed: a file that grew since is refused too.
        let read = self.file.by_ref().take(max + 1).read_to_end(&mut data);
        read.map_err(|e| self.fail(Err(e)))?;
        if data.len() as u64 > max {
            return Err(self.fail(Ok(InputRefusal::TooLarge {
                size: data.len() as u64,
                max,
            })));
        }
        Ok(data)
    }

    /// The first `n` bytes (fewer in a shorter file), without moving the file's position.
    fn head(&self, n: usize) -> Result<Vec<u8>, InputFailure> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0; n.min(self.len as usize)];
        self.file
            .read_exact_at(&mut buf, 0)
            .map_err(|e| self.fail(Err(e)))?;
        Ok(buf)
    }

    /// Reads the file's `len` bytes straight into guest RAM at `addr`, with no copy in
    /// host memory (the caller checked that they fit there). A file that shrank since it
    /// was checked fails (`UnexpectedEof`); bytes it gained are not read.
    fn read_into(&self, mem: &GuestMemoryMmap, addr: u64) -> Result<(), InputFailure> {
        use std::io::Seek;
        let mut file = &self.file;
        file.rewind().map_err(|e| self.fail(Err(e)))?;
        mem.read_exact_volatile_from(GuestAddress(addr), &mut file, self.len as usize)
            .map_err(|e| {
                let e = match e {
                    vm_memory::GuestMemoryError::PartialBuffer {
                        expected,
                        completed,
                    } => std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!(
                            "the file ended after {completed} of the {expected} bytes it \
                                 had when it was checked (it changed since)"
                        ),
                    ),
                    e => std::io::Error::other(format!(
                        "reading {} bytes into guest RAM at {addr:#x}: {e}",
                        self.len
                    )),
                };
                self.fail(Err(e))
            })
    }
}

/// Opens the `what` file at `path` (the kernel or the initrd; `vmm machine`'s program): a
/// regular file only (a FIFO, a device like `/dev/zero` or a directory is refused from its
/// metadata, without reading; the file is opened non-blocking), of at most `max` bytes.
pub(crate) fn open_input(
    path: &Path,
    what: &'static str,
    max: u64,
) -> Result<InputFile, InputFailure> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |reason| InputFailure {
        path: path.to_path_buf(),
        what,
        reason,
    };
    let check = |meta: &std::fs::Metadata| match crate::snapshot::file_kind(meta) {
        Some(kind) => Err(fail(Ok(InputRefusal::NotAFile(kind)))),
        None if meta.len() > max => Err(fail(Ok(InputRefusal::TooLarge {
            size: meta.len(),
            max,
        }))),
        None => Ok(meta.len()),
    };
    check(&std::fs::metadata(path).map_err(|e| fail(Err(e)))?)?;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| fail(Err(e)))?;
    let len = check(&f.metadata().map_err(|e| fail(Err(e)))?)?;
    Ok(InputFile {
        path: path.to_path_buf(),
        what,
        file: f,
        len,
    })
}

/// The host hart model's CTR for the depths it supports (`None`: no CTR; Smctr 2.4
/// "Supervisor Control Transfer Records Depth Register (sctrdepth)").
pub(super) fn host_ctr(depths: ctr_virt::DepthSet) -> Option<vcpu_api::ctr::CtrConfig> {
    (!depths.is_empty()).then(|| vcpu_api::ctr::CtrConfig {
        depths: depths.bits(),
        ..vcpu_api::ctr::CtrConfig::full()
    })
}

/// The hart options of `vmm run` and `vmm restore`.
#[derive(Clone)]
pub(super) struct HartOptions {
    /// Shared by every hart of a VM of several vCPUs.
    pub clock: Option<Arc<SharedClock>>,
    /// The host hart model's CTR.
    pub ctr: Option<vcpu_api::ctr::CtrConfig>,
    /// `--jit`.
    pub jit: bool,
    /// `--perf-map`.
    pub perf_map: bool,
    /// `--clock host`: the host clock every hart follows (`None`: virtual time).
    pub host_clock: Option<vcpu_api::HostClock>,
    /// `--aia aplic-imsic`: the number of vCPUs the AIA devices serve (each hart gets an
    /// IMSIC, the bus the APLIC and IMSIC pages); `None`: no AIA.
    pub aia_vcpus: Option<u64>,
}

impl HartOptions {
    /// The configuration of the hart of vCPU `hart_id`: its MMIO ranges are the VM's
    /// devices.
    pub fn hart_config(&self, hart_id: u64) -> HartConfig {
        HartConfig {
            hart_id,
            mmio: super::mmio_bus(self.aia_vcpus).ranges(),
            imsic: self.aia_vcpus.map(|_| aia::imsic_config()),
            shared_clock: self.clock.clone(),
            host_clock: self.host_clock,
            ctr: self.ctr.clone(),
            jit: self.jit,
            jit_perf_map: self.perf_map,
            jit_threshold: crate::backend::JIT_THRESHOLD,
            // A vCPU spinning on a lock yields to the holder's thread.
            pause_yields: self.clock.is_some(),
            // Several hart threads: no TLB shootdowns for the block table's pages.
            jit_table_resident: self.clock.is_some(),
            // The hart starts with an allow-all entry (`Hart::new_guest`): the VMM is the
            // guest's M-mode firmware.
            pmp_entries: crate::backend::PMP_ENTRIES,
            ..HartConfig::default()
        }
    }
}

impl<'a> VmBuilder<'a> {
    /// Checks `config` (with the VMM trapping what `policy` names) and opens the kernel and
    /// initrd (an ELF kernel is read; a Linux `Image` and the initrd only checked, and read
    /// into guest RAM by [`VmBuilder::build`]); nothing is allocated for the guest yet.
    pub fn new(config: &'a RunConfig, policy: GuestPolicy) -> Result<VmBuilder<'a>, Error> {
        // Sstc is chosen by `--sstc`, not `--trap`: the policy carries it (snapshots and
        // migration keep it with the trap policy).
        let policy = GuestPolicy {
            sstc: config.sstc,
            ..policy
        };
        let ram_size = check_memory(config.memory_mib)?;
        let pcpus = check_topology(config.vcpus, config.pcpus, config.slice_insns)?;
        if let Some(path) = &config.snapshot_on_stop {
            crate::snapshot::check_target(path)?;
        }
        // The host hart model's CTR, and what the guest may use of it (refused here, before
        // the guest starts, if nothing fits).
        let host_ctr = host_ctr(config.host_ctr_depths);
        let ctr_policy = if config.ctr {
            ctr_virt::CtrPolicy::on(config.ctr_depths, host_ctr.as_ref())?
        } else {
            ctr_virt::CtrPolicy::off()
        };
        let pmu_policy = match (config.pmu, config.pmu_deleg) {
            (true, deleg) => {
                let mut p = pmu_virt::PmuPolicy {
                    lcofi: config.lcofi_delivery,
                    snapshot: config.pmu_snapshot,
                    ..pmu_virt::PmuPolicy::with_hpm_counters(config.pmu_counters)
                        .ok_or(Error::PmuCounters(config.pmu_counters))?
                }
                .with_deleg(deleg);
                p.sampling.sspesa = config.sspesa;
                p.sampling.pdis = config.pdis;
                p
            }
            (false, false) => pmu_virt::PmuPolicy::off(),
            (false, true) => return Err(Error::PmuDelegWithoutPmu),
        };
        let ram_end = RAM_BASE + ram_size;
        let fdt_addr = if ram_size >= 4 * FDT_FROM_END {
            ram_end - FDT_FROM_END
        } else {
            ram_end - FDT_MAX
        };
        // A kernel file is at most the guest's RAM (an ELF file holds more than it loads),
        // an initrd what lies below the device tree.
        let program =
            |e: InputFailure| e.into_error(|path, source| Error::ReadProgram { path, source });
        let kernel = match config.kernel_image {
            Some(bytes) => KernelInput::Bytes(std::borrow::Cow::Borrowed(bytes)),
            None => {
                let file = open_input(&config.kernel, "kernel", ram_size).map_err(program)?;
                let head = file.head(kernel::IMAGE_HEADER_LEN).map_err(program)?;
                match kernel::ImageHeader::parse(&head) {
                    Some(header) if !head.starts_with(b"\x7fELF") => {
                        KernelInput::Image { header, file }
                    }
                    _ => KernelInput::Bytes(file.read_all(ram_size).map_err(program)?.into()),
                }
            }
        };
        let initrd = match &config.initrd {
            Some(path) => Some(
                open_input(path, "initrd", fdt_addr - RAM_BASE)
                    .map_err(|e| e.into_error(|path, source| Error::ReadInitrd { path, source }))?,
            ),
            None => None,
        };
        Ok(VmBuilder {
            config,
            policy,
            ram_size,
            fdt_addr,
            pcpus,
            host_ctr,
            ctr_policy,
            pmu_policy,
            kernel,
            initrd,
        })
    }

    /// Builds the VM: RAM, kernel, initrd, device tree, vCPUs, hart instances, and the
    /// control socket if the configuration asks for one.
    pub fn build(self, console: Console) -> Result<GuestVm, Error> {
        let mem = allocate_ram(self.config.memory_mib)?;
        let kernel = self.load_kernel(&mem)?;
        let initrd = self.load_initrd(&mem, &kernel)?;
        self.write_fdt(&mem, initrd.as_ref())?;
        log::debug!(
            "run: {:?} kernel at {:#x?}, entry {:#x}, initrd {:#x?}, fdt at {:#x}",
            kernel.format,
            kernel.span,
            kernel.entry,
            initrd,
            self.fdt_addr
        );
        let layout = BootLayout {
            entry: kernel.entry,
            kernel: kernel.span,
            initrd,
            fdt: self.fdt_addr,
        };
        let (harts, clock) = self.create_harts(&mem, layout.entry)?;
        let mut boot = self.place(harts, clock, mem, layout, console);
        if let Some(path) = &self.config.api_sock {
            boot.attach_api(path, false)?;
        }
        if let Some(gdb) = &self.config.gdb {
            // `monitor ctr` names addresses with --symbols, else with the kernel's own
            // symbols when it is an ELF that has them (a Linux Image has none).
            let symbols = self.config.symbols.clone().or_else(|| {
                crate::symbols::Symbols::load(&self.config.kernel)
                    .ok()
                    .map(Arc::new)
            });
            boot.attach_gdb(gdb, symbols)?;
        }
        Ok(boot)
    }

    /// Loads the kernel: it may use RAM up to the device tree (or the initrd below it).
    fn load_kernel(&self, mem: &GuestMemoryMmap) -> Result<LoadedKernel, Error> {
        let bad = |source| Error::Kernel {
            path: self.config.kernel.clone(),
            source,
        };
        let ram = RAM_BASE..self.fdt_addr;
        match &self.kernel {
            KernelInput::Bytes(data) => kernel::load_kernel(data, mem, ram).map_err(bad),
            KernelInput::Image { header, file } => {
                let span = kernel::place_image(header, file.len, ram).map_err(bad)?;
                file.read_into(mem, span.start).map_err(|e| {
                    e.into_error(|path, source| Error::ReadProgram { path, source })
                })?;
                Ok(LoadedKernel {
                    format: kernel::KernelFormat::Image,
                    entry: span.start,
                    span,
                })
            }
        }
    }

    /// Puts the initrd below the device tree, page-aligned, as high as it fits.
    fn load_initrd(
        &self,
        mem: &GuestMemoryMmap,
        kernel: &LoadedKernel,
    ) -> Result<Option<Range<u64>>, Error> {
        let (Some(path), Some(file)) = (&self.config.initrd, &self.initrd) else {
            return Ok(None);
        };
        let size = file.len;
        let room = self.fdt_addr.saturating_sub(kernel.span.end);
        let start = self.fdt_addr.checked_sub(size).map(|a| a & !(PAGE - 1));
        match start {
            Some(start) if start >= kernel.span.end => {
                file.read_into(mem, start)
                    .map_err(|e| e.into_error(|path, source| Error::ReadInitrd { path, source }))?;
                Ok(Some(start..start + size))
            }
            _ => Err(Error::InitrdTooBig {
                path: path.clone(),
                size,
                room,
            }),
        }
    }

    /// Builds the device tree and writes it to RAM.
    fn write_fdt(&self, mem: &GuestMemoryMmap, initrd: Option<&Range<u64>>) -> Result<(), Error> {
        let blob = fdt::build(&fdt::FdtConfig {
            cpus: self.config.vcpus,
            ram_base: RAM_BASE,
            ram_size: self.ram_size,
            cmdline: self.config.cmdline.clone(),
            initrd: initrd.map(|r| (r.start, r.end)),
            ctr: self.ctr_policy.enabled,
            pmu: self.pmu_policy,
            sstc: self.policy.sstc_offered(),
            aia: self.config.aia == AiaMode::AplicImsic,
        })
        .map_err(BootDataError::Build)?;
        if blob.len() as u64 > FDT_MAX {
            return Err(BootDataError::TooBig { size: blob.len() }.into());
        }
        mem.write_slice(&blob, GuestAddress(self.fdt_addr))
            .map_err(|e| BootDataError::WriteFdt(e).into())
    }

    /// One hart per vCPU; the boot hart starts at `entry` with `a0` = its id and `a1` = the
    /// device tree.
    fn create_harts(
        &self,
        mem: &GuestMemoryMmap,
        entry: u64,
    ) -> Result<(Vec<Hart>, Option<Arc<SharedClock>>), Error> {
        let clock = (self.config.vcpus > 1).then(|| Arc::new(SharedClock::new()));
        let options = HartOptions {
            clock: clock.clone(),
            ctr: self.host_ctr.clone(),
            jit: self.config.jit,
            perf_map: self.config.perf_map,
            // Guest time starts at 0, as with virtual time.
            host_clock: (self.config.clock == vcpu_api::ClockMode::Host)
                .then(|| vcpu_api::HostClock::starting_at(0)),
            aia_vcpus: (self.config.aia == AiaMode::AplicImsic).then_some(self.config.vcpus),
        };
        let mut harts = (0..self.config.vcpus)
            .map(|hart_id| -> Result<Hart, Error> {
                let mut hart = Hart::new_guest(options.hart_config(hart_id), mem.clone())?;
                hart.set_trace(self.config.trace);
                hart.set_trace_range(self.config.trace_range.clone());
                vinsn::apply(&mut hart, &self.policy);
                Ok(hart)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let boot = &mut harts[0];
        Vcpu::set_pc(boot, entry);
        Vcpu::set_xreg(boot, 10, HART_ID);
        Vcpu::set_xreg(boot, 11, self.fdt_addr);
        Ok((harts, clock))
    }

    /// Gives every vCPU its CTR and PMU and puts the vCPUs on their hart instances; returns
    /// the first instance, with the others in its `secondaries`.
    fn place(
        &self,
        harts: Vec<Hart>,
        clock: Option<Arc<SharedClock>>,
        mem: GuestMemoryMmap,
        layout: BootLayout,
        console: Console,
    ) -> GuestVm {
        let config = self.config;
        let smp = clock.map(|clock| {
            let mailboxes = harts.iter().map(|h| h.mailbox()).collect();
            let stops = harts[..self.pcpus as usize]
                .iter()
                .map(|h| h.stop_handle())
                .collect();
            Arc::new(Smp::new(clock, harts[0].host_clock(), mailboxes, stops))
        });
        let fw = pmu_virt::FwTallies::new(config.vcpus as usize);
        let aia_on = config.aia == AiaMode::AplicImsic;
        let aia = aia_on.then(|| {
            let mailboxes = harts.iter().map(|h| h.mailbox()).collect();
            Arc::new(Aia::new(mailboxes, smp.clone()))
        });
        let uart = Arc::new(Mutex::new(Uart::new(console)));
        let input = InputQueue::default();
        let shared = VmShared {
            memory_mib: config.memory_mib,
            mem,
            uart,
            aia,
            input,
            layout,
            max_insns: config.max_insns,
            insns_base: Arc::from(Vec::new()),
            timeout: config.timeout,
            policy: self.policy,
            fw: fw.clone(),
            host_ctr: self.host_ctr.clone(),
            snapshot_on_stop: config.snapshot_on_stop.clone(),
            smp,
            trace: Arc::new(super::trace::ExitTrace::with_symbols(
                config.trace_exits,
                config.symbols.clone(),
            )),
        };
        let vcpus = (0..)
            .zip(harts)
            .map(|(id, mut hart)| {
                let ctr = ctr_virt::GuestCtr::new(self.ctr_policy);
                ctr.prepare(&mut hart);
                let pmu = pmu_virt::GuestPmu::new(self.pmu_policy, id as usize, fw.clone());
                pmu.prepare(&mut hart);
                if aia_on {
                    aia::prepare(&mut hart);
                }
                (id, hart, (ctr, pmu))
            })
            .collect();
        let mut instances = place_vcpus(vcpus, self.pcpus, config.slice_insns, |_| true, &shared);
        // `check_topology` made sure there is at least one instance.
        let mut boot = instances.remove(0);
        boot.secondaries = instances;
        boot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option is checked before the kernel is read or RAM allocated: a bad vCPU
    /// count is reported even with a kernel that does not exist and 4 GiB of RAM.
    #[test]
    fn the_config_is_checked_before_anything_is_loaded() {
        let mut config = RunConfig::new("/nonexistent/kernel");
        config.memory_mib = 4096;
        config.vcpus = 0;
        let err = VmBuilder::new(&config, GuestPolicy::default()).err();
        assert!(
            matches!(err, Some(Error::InvalidVcpus { vcpus: 0, .. })),
            "{err:?}"
        );
        config.vcpus = 2;
        config.pcpus = Some(3);
        let err = VmBuilder::new(&config, GuestPolicy::default()).err();
        assert!(
            matches!(err, Some(Error::InvalidPcpus { pcpus: 3, vcpus: 2 })),
            "{err:?}"
        );
        config.pcpus = None;
        config.pmu = false;
        config.pmu_deleg = true;
        let err = VmBuilder::new(&config, GuestPolicy::default()).err();
        assert!(matches!(err, Some(Error::PmuDelegWithoutPmu)), "{err:?}");
        config.pmu_deleg = false;
        let err = VmBuilder::new(&config, GuestPolicy::default()).err();
        assert!(matches!(err, Some(Error::ReadProgram { .. })), "{err:?}");
    }

    /// A Linux `Image` and the initrd are read from their files straight into guest RAM,
    /// byte for byte where they belong; a file that shrank after `VmBuilder::new` checked
    /// it fails the build with an error that names it, instead of loading less.
    #[test]
    fn image_and_initrd_are_read_straight_into_guest_ram() {
        use vm_memory::Bytes;
        let scratch = |name: &str| {
            std::env::temp_dir().join(format!("vmm-builder-{}-{name}", std::process::id()))
        };
        // An `Image` header (text_offset 2 MiB, image_size 0) and a body of a pattern.
        let mut image = vec![0u8; 64 + 5000];
        image[0..4].copy_from_slice(&0x0000_0013u32.to_le_bytes());
        image[8..16].copy_from_slice(&0x20_0000u64.to_le_bytes());
        image[56..60].copy_from_slice(&kernel::IMAGE_MAGIC2.to_le_bytes());
        for (i, b) in image.iter_mut().enumerate().skip(64) {
            *b = (i * 7) as u8;
        }
        let initrd: Vec<u8> = (0..9000u32).map(|i| (i * 13 + 1) as u8).collect();
        let (kpath, ipath) = (scratch("image"), scratch("initrd"));
        std::fs::write(&kpath, &image).unwrap();
        std::fs::write(&ipath, &initrd).unwrap();
        let mut config = RunConfig::new(&kpath);
        config.memory_mib = 16;
        config.initrd = Some(ipath.clone());
        let vm = VmBuilder::new(&config, GuestPolicy::default())
            .unwrap()
            .build(Box::new(std::io::sink()))
            .unwrap();
        let layout = vm.layout().clone();
        assert_eq!(
            layout.kernel,
            RAM_BASE + 0x20_0000..RAM_BASE + 0x20_0000 + 5064
        );
        let mut got = vec![0u8; image.len()];
        vm.memory()
            .read_slice(&mut got, GuestAddress(layout.kernel.start))
            .unwrap();
        assert!(got == image, "the kernel in RAM differs from its file");
        let at = layout.initrd.clone().expect("no initrd");
        assert_eq!(at.end - at.start, initrd.len() as u64);
        let mut got = vec![0u8; initrd.len()];
        vm.memory()
            .read_slice(&mut got, GuestAddress(at.start))
            .unwrap();
        assert!(got == initrd, "the initrd in RAM differs from its file");
        drop(vm);
        // Checked at 9000 bytes, 4000 when read.
        let builder = VmBuilder::new(&config, GuestPolicy::default()).unwrap();
        std::fs::write(&ipath, &initrd[..4000]).unwrap();
        let e = builder
            .build(Box::new(std::io::sink()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&ipath.display().to_string())
                && e.contains("ended after 4000 of the 9000 bytes"),
            "{e}"
        );
        // The same for the kernel.
        std::fs::write(&ipath, &initrd).unwrap();
        let builder = VmBuilder::new(&config, GuestPolicy::default()).unwrap();
        std::fs::write(&kpath, &image[..100]).unwrap();
        let e = builder
            .build(Box::new(std::io::sink()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&kpath.display().to_string())
                && e.contains("ended after 100 of the 5064 bytes"),
            "{e}"
        );
        std::fs::remove_file(&kpath).unwrap();
        std::fs::remove_file(&ipath).unwrap();
    }

    /// Kernel and initrd files: regular files only, refused from their metadata (a FIFO
    /// would block, `/dev/zero` never ends), and no larger than the guest RAM they must fit
    /// in, checked before they are read; a `--snapshot-on-stop` target that cannot be
    /// written is refused before anything is loaded.
    #[test]
    fn kernel_initrd_and_snapshot_target_are_checked_before_reading() {
        let scratch = |name: &str| {
            std::env::temp_dir().join(format!("vmm-builder-{}-{name}", std::process::id()))
        };
        let msg = |config: &RunConfig| match VmBuilder::new(config, GuestPolicy::default()) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        };
        let mut config = RunConfig::new("/dev/zero");
        config.memory_mib = 16;
        let e = msg(&config);
        assert_eq!(
            e,
            "cannot use kernel /dev/zero: it is a character device, not a regular file"
        );
        let fifo = scratch("fifo");
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        config.kernel = fifo.clone();
        assert!(msg(&config).contains("it is a FIFO, not a regular file"));
        config.kernel = std::env::temp_dir();
        assert!(msg(&config).contains("it is a directory"));
        // A sparse kernel of 16 MiB + 1 byte for 16 MiB of RAM: refused from its size
        // (reading it would take 16 MiB).
        let big = scratch("big");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len((16 << 20) + 1).unwrap();
        config.kernel = big.clone();
        assert_eq!(
            msg(&config),
            format!(
                "cannot use kernel {}: it has 16777217 bytes, more than the 16777216 bytes of \
                 guest RAM it must fit in (use a larger --memory)",
                big.display()
            )
        );
        // The initrd: the same checks, its room is what lies below the device tree.
        let config = {
            let mut c = RunConfig::ctr_demo();
            c.memory_mib = 16;
            c.initrd = Some(fifo.clone());
            c
        };
        assert!(msg(&config).contains("cannot use initrd") && msg(&config).contains("FIFO"));
        let mut config = config;
        config.initrd = Some(big.clone());
        let e = msg(&config);
        assert!(
            e.contains("cannot use initrd") && e.contains("16777217 bytes"),
            "{e}"
        );
        std::fs::remove_file(&fifo).unwrap();
        std::fs::remove_file(&big).unwrap();
        config.initrd = None;
        config.snapshot_on_stop = Some(scratch("missing-dir").join("s.snap"));
        let e = msg(&config);
        assert!(
            e.starts_with("cannot write a snapshot to") && e.contains("does not exist"),
            "{e}"
        );
        config.snapshot_on_stop = Some(std::env::temp_dir());
        assert!(msg(&config).contains("it is a directory"));
    }
}
