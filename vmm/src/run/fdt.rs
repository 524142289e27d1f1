//! The flattened device tree `vmm run` hands to the guest kernel (in `a1`), written with
//! rust-vmm's `vm-fdt` from the devicetree specification and the Linux bindings
//! (`riscv/cpus.yaml`, `riscv/extensions.yaml`, `serial/8250.yaml`, `chosen`).
//!
//! ```text
//! / { #address-cells = 2; #size-cells = 2; compatible = "riscv-virtio"; model = ...;
//!   chosen { bootargs; stdout-path = "/soc/serial@10000000"; linux,initrd-start/end }
//!   cpus { #address-cells = 1; #size-cells = 0; timebase-frequency = 10 MHz;
//!     cpu@N { device_type = "cpu"; reg = N; status = "okay"; compatible = "riscv";
//!             riscv,isa = ...; riscv,isa-base = "rv64i"; riscv,isa-extensions = ...;
//!             mmu-type = "riscv,sv57";
//!             interrupt-controller { compatible = "riscv,cpu-intc"; ... } } ... one per vCPU }
//!   memory@80000000 { device_type = "memory"; reg = <RAM base, size> }
//!   soc { compatible = "simple-bus"; ranges;
//!     serial@10000000 { compatible = "ns16550a"; reg; clock-frequency = 3686400 } } }
//! ```
//!
//! With `--aia aplic-imsic` (the default) the harts list Ssaia, `soc` has the guest's
//! IMSIC (`imsics@28000000`: `riscv,imsics`, one page per hart, `interrupts-extended` to
//! each hart's S-level external interrupt) and APLIC (`aplic@d000000`: `riscv,aplic`,
//! `msi-parent` the IMSIC, 96 sources), and the UART has `interrupt-parent` the APLIC,
//! `interrupts = <10 4>` (level high; `run/aia.rs`). With `--aia none` the UART has no
//! `interrupts`: there is no interrupt controller, so drivers poll it.
//! The ISA lists exactly what the guest may use: not H (the VMM does not offer nested
//! virtualization). With Sstc (`--sstc on`, the default, and `time` not trapped) it lists
//! Sstc: the guest's `stimecmp` is the hart's `vstimecmp` (the SBI TIME extension remains for
//! guests that use it). With a PMU
//! (`--pmu on`) it lists Zihpm (the hpm counters the SBI PMU extension gives the guest are
//! read directly) and Sscofpmf (counter-overflow interrupts, which Linux's `riscv_pmu_sbi`
//! driver needs for sampling). With counter delegation (`--pmu-deleg on`) it adds Ssccfg,
//! Sscsrind and Smcntrpmf. There is no `riscv,pmu` node: that binding describes the
//! hardware to M-mode firmware, and this VMM is the guest's firmware.

use vm_fdt::FdtWriter;

use crate::devices::fdt as nodes;
use crate::run::aia;

/// `riscv,isa` (the older single-string form).
pub const ISA_STRING: &str = "rv64imafdc_zicntr_zicsr_zifencei";
/// `riscv,isa-extensions`.
pub const ISA_EXTENSIONS: &[&str] = &["i", "m", "a", "f", "d", "c", "zicntr", "zicsr", "zifencei"];
/// Added to `riscv,isa-extensions` when the guest has CTR (`--ctr on`): Ssctr and the
/// Sscsrind it depends on.
pub const CTR_EXTENSIONS: &[&str] = &["sscsrind", "ssctr"];
/// Added to `riscv,isa-extensions` when the guest has Sstc (`--sstc on`).
pub const SSTC_EXTENSIONS: &[&str] = &["sstc"];
/// Added to `riscv,isa-extensions` when the guest has a PMU with overflow interrupts
/// (`--pmu on`).
pub const PMU_EXTENSIONS: &[&str] = &["sscofpmf", "zihpm"];
/// Added to `riscv,isa-extensions` with counter delegation (`--pmu-deleg on`): Ssccfg, the
/// Sscsrind it depends on, and Smcntrpmf, on which `cyclecfg`/`instretcfg` through `sireg2`
/// depend (Smcdeleg chapter 3, table 1 note 4: the guest learns from it that they exist).
pub const DELEG_EXTENSIONS: &[&str] = &["smcntrpmf", "sscsrind", "ssccfg"];
/// Added with Sspesa for the guest (`--sspesa on`, with `--pmu on`): the sample registers
/// (emulated) and the precise LCOFI (the hart's overflow interrupts are precise and reach the
/// guest through `hideleg`). The names of the draft `sspesa-ssplcofi-smpdis-draft.adoc`.
pub const SSPESA_EXTENSIONS: &[&str] = &["sspesa", "ssplcofi"];
/// Added with PDIS for the guest (`--pdis on`, with `--pmu on`): the supervisor part of the
/// draft's Smpdis/Sspdis (the guest has no M-mode). Its sample record is reached through
/// Sscsrind, listed here too when CTR does not list it.
pub const PDIS_EXTENSIONS: &[&str] = &["sspdis"];
/// `mmu-type`: the largest translation mode the hart supports (it also has Sv39 and Sv48).
pub const MMU_TYPE: &str = "riscv,sv57";
pub use crate::devices::fdt::{STDOUT_PATH, UART_CLOCK_HZ};

/// Phandle of hart 0's interrupt controller (hart N has this + N).
const CPU_INTC_PHANDLE: u32 = 1;
/// Phandle of the IMSIC node (above every hart's, [`crate::run::MAX_VCPUS`] at most).
const IMSIC_PHANDLE: u32 = 0x1000;
/// Phandle of the APLIC node.
const APLIC_PHANDLE: u32 = 0x1001;
/// Added to `riscv,isa-extensions` with AIA (`--aia aplic-imsic`).
pub const AIA_EXTENSIONS: &[&str] = &["ssaia"];

/// What the device tree describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdtConfig {
    /// Number of harts (`cpu@0` ... `cpu@N-1`).
    pub cpus: u64,
    /// Guest RAM base.
    pub ram_base: u64,
    /// Guest RAM size in bytes.
    pub ram_size: u64,
    /// The kernel command line (`/chosen/bootargs`).
    pub cmdline: String,
    /// Whether the guest has CTR (`sscsrind` and `ssctr` in `riscv,isa-extensions`).
    pub ctr: bool,
    /// The guest's PMU (`sscofpmf` and `zihpm` in `riscv,isa-extensions`).
    pub pmu: pmu_virt::PmuPolicy,
    /// Guest-physical `[start, end)` of the initrd, if any.
    pub initrd: Option<(u64, u64)>,
    /// Whether the guest has Sstc (`sstc` in `riscv,isa-extensions`).
    pub sstc: bool,
    /// Whether the guest has AIA (`--aia aplic-imsic`): Ssaia, the IMSIC and APLIC nodes,
    /// the UART's interrupt.
    pub aia: bool,
}

/// Builds the device tree blob.
pub fn build(config: &FdtConfig) -> Result<Vec<u8>, vm_fdt::Error> {
    let mut fdt = FdtWriter::new()?;
    let root = nodes::root(&mut fdt, "riscv-ctr-vmm,run")?;

    let chosen = fdt.begin_node("chosen")?;
    fdt.property_string("bootargs", &config.cmdline)?;
    fdt.property_string("stdout-path", STDOUT_PATH)?;
    if let Some((start, end)) = config.initrd {
        fdt.property_u64("linux,initrd-start", start)?;
        fdt.property_u64("linux,initrd-end", end)?;
    }
    fdt.end_node(chosen)?;

    let cpus = fdt.begin_node("cpus")?;
    fdt.property_u32("#address-cells", 1)?;
    fdt.property_u32("#size-cells", 0)?;
    fdt.property_u32("timebase-frequency", vcpu_api::TIMEBASE_HZ as u32)?;
    for id in 0..config.cpus.max(1) as u32 {
        cpu_node(&mut fdt, id, config)?;
    }
    fdt.end_node(cpus)?;

    nodes::memory(&mut fdt, config.ram_base, config.ram_size)?;

    let soc = nodes::soc(&mut fdt)?;
    // Level-high (IRQ_TYPE_LEVEL_HIGH = 4): the APLIC's Level1 source mode.
    let uart_irq = [aia::UART_SOURCE, 4];
    nodes::serial(
        &mut fdt,
        config.aia.then_some((APLIC_PHANDLE, &uart_irq[..])),
    )?;
    if config.aia {
        aia_nodes(&mut fdt, config.cpus.max(1) as u32)?;
    }
    fdt.end_node(soc)?;

    fdt.end_node(root)?;
    fdt.finish()
}

/// The IMSIC and APLIC nodes (Linux bindings `interrupt-controller/riscv,imsics.yaml` and
/// `riscv,aplic.yaml`): the S-level IMSIC, one page per hart, each hart's file signalling
/// its S-level external interrupt (9); the APLIC domain in MSI mode, its MSIs going to the
/// IMSIC.
fn aia_nodes(fdt: &mut FdtWriter, cpus: u32) -> Result<(), vm_fdt::Error> {
    let ext: Vec<u32> = (0..cpus)
        .flat_map(|id| [CPU_INTC_PHANDLE + id, vcpu_api::trap::irq::SEI as u32])
        .collect();
    let window = (aia::IMSIC_BASE, aia::imsic_window(u64::from(cpus)));
    nodes::imsics(fdt, window, &ext, aia::IMSIC_IDS, 0, IMSIC_PHANDLE)?;

    let aplic = fdt.begin_node(&format!("aplic@{:x}", aia::APLIC_BASE))?;
    fdt.property_string_list(
        "compatible",
        vec!["qemu,aplic".into(), "riscv,aplic".into()],
    )?;
    fdt.property_array_u64("reg", &[aia::APLIC_BASE, aia::APLIC_SIZE])?;
    fdt.property_u32("msi-parent", IMSIC_PHANDLE)?;
    fdt.property_null("interrupt-controller")?;
    fdt.property_u32("#interrupt-cells", 2)?;
    fdt.property_u32("riscv,num-sources", aia::NUM_SOURCES)?;
    fdt.property_phandle(APLIC_PHANDLE)?;
    fdt.end_node(aplic)?;
    Ok(())
}

/// The node of hart `id` with its interrupt controller.
fn cpu_node(fdt: &mut FdtWriter, id: u32, config: &FdtConfig) -> Result<(), vm_fdt::Error> {
    let pmu: &[&str] = match config.pmu {
        p if p.enabled && p.sscofpmf => PMU_EXTENSIONS,
        p if p.enabled => &["zihpm"],
        _ => &[],
    };
    let sampling = config.pmu.effective_sampling();
    let sspesa: &[&str] = if sampling.sspesa {
        SSPESA_EXTENSIONS
    } else {
        &[]
    };
    let pdis: &[&str] = match (sampling.pdis, config.ctr) {
        (false, _) => &[],
        (true, true) => PDIS_EXTENSIONS,
        (true, false) => &["sscsrind", "sspdis"],
    };
    let cpu = fdt.begin_node(&format!("cpu@{id:x}"))?;
    fdt.property_string("device_type", "cpu")?;
    fdt.property_u32("reg", id)?;
    fdt.property_string("status", "okay")?;
    fdt.property_string("compatible", "riscv")?;
    fdt.property_string("riscv,isa", ISA_STRING)?;
    fdt.property_string("riscv,isa-base", "rv64i")?;
    let deleg: &[&str] = if config.pmu.deleg_on() {
        DELEG_EXTENSIONS
    } else {
        &[]
    };
    let mut extensions: Vec<String> = Vec::new();
    for e in ISA_EXTENSIONS
        .iter()
        .chain(if config.sstc { SSTC_EXTENSIONS } else { &[] })
        .chain(if config.aia { AIA_EXTENSIONS } else { &[] })
        .chain(if config.ctr { CTR_EXTENSIONS } else { &[] })
        .chain(pmu)
        .chain(deleg)
        .chain(sspesa)
        .chain(pdis)
    {
        if !extensions.iter().any(|x| x == e) {
            extensions.push(e.to_string());
        }
    }
    fdt.property_string_list("riscv,isa-extensions", extensions)?;
    fdt.property_string("mmu-type", MMU_TYPE)?;
    nodes::cpu_intc(fdt, CPU_INTC_PHANDLE + id)?;
    fdt.end_node(cpu)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains(hay: &[u8], needle: &[u8]) -> bool {
        hay.windows(needle.len()).any(|w| w == needle)
    }

    fn count(hay: &[u8], needle: &[u8]) -> usize {
        hay.windows(needle.len()).filter(|w| *w == needle).count()
    }

    /// A small VM's tree settings: `cpus` harts, 16 MiB, no command line or initrd, CTR
    /// and the PMU on, Sstc, no AIA (tests change what they look at).
    fn small(cpus: u64) -> FdtConfig {
        FdtConfig {
            cpus,
            ram_base: 0x8000_0000,
            ram_size: 16 << 20,
            cmdline: String::new(),
            initrd: None,
            ctr: true,
            pmu: pmu_virt::PmuPolicy::on(),
            sstc: true,
            aia: false,
        }
    }

    #[test]
    fn blob_has_the_expected_nodes_and_properties() {
        let blob = build(&FdtConfig {
            cpus: 1,
            ram_base: 0x8000_0000,
            ram_size: 256 << 20,
            cmdline: "console=ttyS0 earlycon=sbi".into(),
            initrd: Some((0x8f00_0000, 0x8f10_0000)),
            ctr: true,
            pmu: pmu_virt::PmuPolicy::on(),
            sstc: false,
            aia: false,
        })
        .unwrap();
        assert_eq!(&blob[..4], &0xd00d_feedu32.to_be_bytes());
        let total = u32::from_be_bytes(blob[4..8].try_into().unwrap()) as usize;
        assert_eq!(total, blob.len());
        for s in [
            &b"memory@80000000\0"[..],
            b"serial@10000000\0",
            b"cpu@0\0",
            b"console=ttyS0 earlycon=sbi\0",
            b"rv64imafdc_zicntr_zicsr_zifencei\0",
            b"riscv,cpu-intc\0",
            b"ns16550a\0",
            b"/soc/serial@10000000\0",
            b"linux,initrd-start\0",
            b"riscv,sv57\0",
            b"zifencei\0",
            b"ssctr\0",
            b"sscsrind\0",
            b"sscofpmf\0",
            b"zihpm\0",
            b"sspesa\0",
            b"ssplcofi\0",
            b"sspdis\0",
        ] {
            assert!(
                contains(&blob, s),
                "{:?} missing",
                String::from_utf8_lossy(s)
            );
        }
        // memory reg = <0x0 0x80000000 0x0 0x10000000>
        assert!(contains(
            &blob,
            &[0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0]
        ));
        // No H; no Sstc with `sstc` false.
        assert!(!contains(&blob, b"sstc"));
        assert!(!contains(&blob, b"\0h\0"));
    }

    #[test]
    fn sstc_is_listed_once_when_on() {
        let config = |sstc| FdtConfig { sstc, ..small(2) };
        // One `riscv,isa-extensions` entry per cpu node.
        assert_eq!(count(&build(&config(true)).unwrap(), b"\0sstc\0"), 2);
        assert!(!contains(&build(&config(false)).unwrap(), b"sstc"));
    }

    /// `--aia aplic-imsic`: Ssaia on every hart, the IMSIC (one page per hart, rounded up
    /// to a power of two: 4 pages for 3 harts) with each hart's S external interrupt, the
    /// APLIC with the IMSIC as its MSI parent, the UART as its source 10, level high.
    #[test]
    fn aia_nodes_are_described() {
        let config = |aia| FdtConfig {
            ctr: false,
            pmu: pmu_virt::PmuPolicy::off(),
            aia,
            ..small(3)
        };
        let blob = build(&config(true)).unwrap();
        assert_eq!(count(&blob, b"\0ssaia\0"), 3);
        for s in [
            &b"imsics@28000000\0"[..],
            b"riscv,imsics\0",
            b"aplic@d000000\0",
            b"riscv,aplic\0",
            b"riscv,num-ids\0",
            b"riscv,num-sources\0",
            b"msi-parent\0",
            b"interrupts-extended\0",
            b"msi-controller\0",
        ] {
            assert!(contains(&blob, s), "{:?}", String::from_utf8_lossy(s));
        }
        // reg = <0x0 0x28000000 0x0 0x4000>; interrupts-extended = <1 9 2 9 3 9>;
        // the UART's interrupts = <10 4>.
        assert!(contains(
            &blob,
            &[0, 0, 0, 0, 0x28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0]
        ));
        let ext: Vec<u8> = [1u32, 9, 2, 9, 3, 9]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        assert!(contains(&blob, &ext));
        assert!(contains(&blob, &[0, 0, 0, 10, 0, 0, 0, 4]));
        let blob = build(&config(false)).unwrap();
        assert!(!contains(&blob, b"ssaia") && !contains(&blob, b"imsics"));
        assert!(!contains(&blob, b"aplic"));
    }

    #[test]
    fn no_initrd_no_initrd_properties() {
        let blob = build(&FdtConfig {
            ctr: false,
            pmu: pmu_virt::PmuPolicy::off(),
            sstc: false,
            ..small(1)
        })
        .unwrap();
        assert!(!contains(&blob, b"linux,initrd"));
        // --ctr off: the device tree does not list Ssctr.
        assert!(!contains(&blob, b"ssctr"));
        // --pmu off: no Sscofpmf, no Zihpm.
        assert!(!contains(&blob, b"sscofpmf"));
        assert!(!contains(&blob, b"zihpm"));
        assert!(!contains(&blob, b"ssccfg"));
        // No sampling without a PMU.
        assert!(!contains(&blob, b"sspesa"));
        assert!(!contains(&blob, b"sspdis"));
    }

    #[test]
    fn counter_delegation_lists_ssccfg_once_with_sscsrind() {
        let config = |ctr, deleg| FdtConfig {
            ctr,
            pmu: {
                // Without PDIS, which lists Sscsrind as well.
                let mut p = pmu_virt::PmuPolicy::on().with_deleg(deleg);
                p.sampling.pdis = false;
                p
            },
            ..small(1)
        };
        for ctr in [false, true] {
            let blob = build(&config(ctr, true)).unwrap();
            assert_eq!(count(&blob, b"\0ssccfg\0"), 1);
            assert_eq!(count(&blob, b"\0sscsrind\0"), 1);
            assert_eq!(count(&blob, b"\0smcntrpmf\0"), 1);
            let blob = build(&config(ctr, false)).unwrap();
            assert!(!contains(&blob, b"ssccfg"));
            assert!(!contains(&blob, b"smcntrpmf"));
            assert_eq!(count(&blob, b"sscsrind"), usize::from(ctr));
        }
    }

    #[test]
    fn pdis_without_ctr_lists_sscsrind() {
        let mut pmu = pmu_virt::PmuPolicy::on();
        pmu.sampling.sspesa = false;
        let blob = build(&FdtConfig {
            ctr: false,
            pmu,
            ..small(1)
        })
        .unwrap();
        assert!(contains(&blob, b"sscsrind\0sspdis\0"));
        assert!(!contains(&blob, b"sspesa"));
        assert!(!contains(&blob, b"ssplcofi"));
    }
}
