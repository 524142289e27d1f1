//! Hart configuration: what a given hart implements and the physical memory map it sees.

/// A physical address range that belongs to a device. Accesses to it leave the hart as
/// [`crate::VcpuExit::Mmio`]; accesses outside RAM and every MMIO range raise access faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmioRange {
    /// First byte of the range.
    pub base: u64,
    /// Length in bytes.
    pub size: u64,
}

impl MmioRange {
    /// Whether `[addr, addr + len)` lies entirely inside this range.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base
            && addr.wrapping_add(len) <= self.base + self.size
            && addr.checked_add(len).is_some()
    }

    /// Whether `[addr, addr + len)` overlaps this range.
    pub fn overlaps(&self, addr: u64, len: u64) -> bool {
        addr < self.base + self.size && self.base < addr.saturating_add(len)
    }
}

/// Static description of one hart.
#[derive(Debug, Clone)]
pub struct HartConfig {
    /// Value of `mhartid`.
    pub hart_id: u64,
    /// Physical ranges that are devices (MMIO exits). May overlap RAM: the overlap then
    /// behaves as MMIO (used for the HTIF `tohost`/`fromhost` words).
    pub mmio: Vec<MmioRange>,
    /// Number of entries in the decoded-instruction cache (a power of two).
    pub decode_cache_entries: usize,
    /// A virtual clock shared with other harts (SMP); `None`: the hart's clock is its own.
    pub shared_clock: Option<std::sync::Arc<vcpu_api::SharedClock>>,
    /// Host time: `mtime` follows this clock ([`vcpu_api::HostClock`]); `None`: virtual
    /// time (instruction slots).
    pub host_clock: Option<vcpu_api::HostClock>,
    /// Control Transfer Records (Smctr/Ssctr): what this hart implements, or `None`.
    pub ctr: Option<vcpu_api::ctr::CtrConfig>,
    /// Performance monitoring: the numbers of the draft extensions' CSRs.
    pub pmu: vcpu_api::pmu::PmuConfig,
    /// Translate straight-line blocks to host code (x86-64 hosts) when nothing is observed
    /// per instruction; `false`: always interpret (see the `jit` module).
    pub jit: bool,
    /// Host code space for translated blocks, in bytes (reserved, used as needed; emptied
    /// as a whole when full). At least 1 MiB.
    pub jit_code_bytes: usize,
    /// Append a line per translated block to `/tmp/perf-PID.map` (start, size and the guest
    /// pc), so that a host `perf` profile names guest code instead of `[JIT]`.
    pub jit_perf_map: bool,
    /// Translate a block the `jit_threshold`-th time the dispatcher reaches its address (1:
    /// the first time); until then the interpreter runs it (and what follows it in its page
    /// up to the next jump, taken branch or trap).
    /// Code that runs once or twice (most of a kernel's initialisation) then costs no
    /// translation (`docs/architecture.md`, "Hot blocks"). 0 counts as 1. Guest-visible behaviour does
    /// not depend on it.
    pub jit_threshold: u16,
    /// Give the block table its host memory when the hart is made (about 12 MiB) instead of
    /// page by page as blocks are entered in it. For a VMM with several hart threads: each
    /// first write to a table page the hart had read (a page of zeros until then) makes the
    /// host kernel interrupt every other processor running the VMM to flush its TLB (a
    /// Linux boot on 2 vCPUs: about 1.6% of its host time). Guest-visible behaviour does not
    /// depend on it.
    pub jit_table_resident: bool,
    /// PAUSE (Zihintpause, a FENCE hint) gives the host CPU away (`sched_yield`), so that a
    /// vCPU spinning on a lock held by another vCPU (Linux's `cpu_relax`) lets that vCPU's
    /// thread run when host CPUs are short: once a loop of PAUSEs has spun for some
    /// thousands of instructions (pause-loop detection, `Hart::pause_loop`), so that the
    /// short waits of a VM whose vCPUs all have a host CPU make no system call. For harts of
    /// a VM of several vCPUs; guest-visible behaviour is unchanged (PAUSE still retires as
    /// a no-op).
    pub pause_yields: bool,
    /// Physical Memory Protection entries: 0 (every PMP CSR read-only zero, no checks) or
    /// [`crate::pmp::ENTRIES`] (16; S- and U-mode then need an entry that allows their
    /// accesses, as on hardware). Other values are refused by `Hart::new`.
    pub pmp_entries: usize,
    /// The IMSIC (AIA): its identities and guest interrupt files (GEILEN), or `None` (the
    /// default: no IMSIC, GEILEN = 0, as harts were before the IMSIC existed).
    pub imsic: Option<crate::csr::imsic::ImsicConfig>,
}

impl Default for HartConfig {
    fn default() -> Self {
        HartConfig {
            hart_id: 0,
            mmio: Vec::new(),
            decode_cache_entries: 1 << 16,
            shared_clock: None,
            host_clock: None,
            ctr: Some(vcpu_api::ctr::CtrConfig::full()),
            pmu: vcpu_api::pmu::PmuConfig::default(),
            jit: true,
            jit_code_bytes: 256 << 20,
            jit_perf_map: false,
            jit_threshold: 1,
            jit_table_resident: false,
            pause_yields: false,
            pmp_entries: 0,
            imsic: None,
        }
    }
}
