//! The flattened device tree `vmm machine` hands to its program in `a1`, as QEMU's `virt`
//! board does with `-bios none -kernel`, so that firmware (OpenSBI's generic platform, say)
//! and programs that look their devices up find them: written with rust-vmm's `vm-fdt` from
//! the devicetree specification and the Linux bindings (`riscv/cpus.yaml`,
//! `riscv/extensions.yaml`, `interrupt-controller/sifive,plic-1.0.0.yaml`,
//! `timer/sifive,clint.yaml`, `serial/8250.yaml`, `power/reset/syscon-poweroff.yaml`,
//! `interrupt-controller/riscv,imsics.yaml`).
//!
//! ```text
//! / { #address-cells = 2; #size-cells = 2; compatible = "riscv-virtio"; model = ...;
//!   chosen { stdout-path = "/soc/serial@10000000" }
//!   cpus { timebase-frequency = 10 MHz;
//!     cpu@0 { riscv,isa(-base/-extensions) = what the hart implements; mmu-type;
//!             interrupt-controller { compatible = "riscv,cpu-intc" } } }
//!   memory@80000000 { reg = <RAM base, size> }
//!   poweroff { compatible = "syscon-poweroff"; regmap = <test>; value = 0x5555 }
//!   soc { compatible = "simple-bus"; ranges;
//!     test@100000 { compatible = "sifive,test1", "sifive,test0", "syscon" }
//!     clint@2000000 { interrupts-extended = <cpu 3 (MSI), cpu 7 (MTI)> }
//!     plic@c000000 { riscv,ndev = 95; interrupts-extended = <cpu 11 (MEI), cpu 9 (SEI)> }
//!     serial@10000000 { compatible = "ns16550a"; interrupt-parent = <plic>; interrupts = <10> }
//!     (--aia imsic) imsics@24000000 (M level), imsics@28000000 (S level, 7 guest files) } }
//! ```
//!
//! The blob is placed as QEMU places it: at the end of RAM (or of the first 3 GiB, whichever
//! is lower), rounded down to 2 MiB ([`fdt_address`]); a program that uses that RAM for
//! something else simply overwrites it.

use vm_fdt::FdtWriter;

use super::Aia;
use crate::devices::fdt as nodes;
use crate::devices::plic::{SOURCES, UART_SOURCE};
use crate::layout::*;

/// The `riscv,isa-extensions` of the machine's hart (single letters first, in canonical
/// order): everything the hart implements that has a name in the ISA naming rules.
pub const EXTENSIONS: &[&str] = &[
    "i",
    "m",
    "a",
    "f",
    "d",
    "c",
    "h",
    "zicntr",
    "zicsr",
    "zifencei",
    "zihpm",
    "smstateen",
    "smcsrind",
    "sscsrind",
    "smctr",
    "ssctr",
    "sstc",
    "sscofpmf",
    "smcntrpmf",
    "smcdeleg",
    "ssccfg",
    "sspesa",
    "ssplcofi",
    "sdtrig",
    "smaia",
    "ssaia",
];
/// `riscv,isa` (the older single-string form).
pub const ISA_STRING: &str = "rv64imafdch_zicntr_zicsr_zifencei_zihpm";
/// The hart's widest translation mode.
pub const MMU_TYPE: &str = "riscv,sv57";

const CPU_INTC_PHANDLE: u32 = 1;
const PLIC_PHANDLE: u32 = 2;
const TEST_PHANDLE: u32 = 3;
const IMSIC_M_PHANDLE: u32 = 4;
const IMSIC_S_PHANDLE: u32 = 5;

/// Local interrupt numbers (`mip` bits) the controllers signal.
const IRQ_M_SOFT: u32 = 3;
const IRQ_M_TIMER: u32 = 7;
const IRQ_S_EXT: u32 = 9;
const IRQ_M_EXT: u32 = 11;

/// Where the blob of `size` bytes goes in a RAM of `ram_size` bytes (QEMU's rule for
/// `virt`: the end of RAM or of the first 3 GiB of it, less the blob, rounded down to
/// 2 MiB); `None` when it does not fit.
pub fn fdt_address(ram_size: u64, size: u64) -> Option<u64> {
    let end = RAM_BASE + ram_size.min(3 << 30);
    let at = end.checked_sub(size)? & !((2 << 20) - 1);
    (at >= RAM_BASE).then_some(at)
}

/// The device tree of a machine with `ram_size` bytes of RAM.
pub fn build(ram_size: u64, aia: Aia) -> Result<Vec<u8>, vm_fdt::Error> {
    let imsic = aia == Aia::Imsic;
    let mut fdt = FdtWriter::new()?;
    let root = nodes::root(&mut fdt, "riscv-ctr-vmm,machine")?;

    let chosen = fdt.begin_node("chosen")?;
    fdt.property_string("stdout-path", nodes::STDOUT_PATH)?;
    fdt.end_node(chosen)?;

    let cpus = fdt.begin_node("cpus")?;
    fdt.property_u32("#address-cells", 1)?;
    fdt.property_u32("#size-cells", 0)?;
    fdt.property_u32("timebase-frequency", vcpu_api::TIMEBASE_HZ as u32)?;
    let cpu = fdt.begin_node(&format!("cpu@{HART_ID:x}"))?;
    fdt.property_string("device_type", "cpu")?;
    fdt.property_u32("reg", HART_ID as u32)?;
    fdt.property_string("status", "okay")?;
    fdt.property_string("compatible", "riscv")?;
    fdt.property_string("riscv,isa", ISA_STRING)?;
    fdt.property_string("riscv,isa-base", "rv64i")?;
    // Smaia/Ssaia: the hart has the AIA CSRs with or without an IMSIC.
    let extensions: Vec<String> = EXTENSIONS.iter().map(|e| e.to_string()).collect();
    fdt.property_string_list("riscv,isa-extensions", extensions)?;
    fdt.property_string("mmu-type", MMU_TYPE)?;
    nodes::cpu_intc(&mut fdt, CPU_INTC_PHANDLE)?;
    fdt.end_node(cpu)?;
    fdt.end_node(cpus)?;

    nodes::memory(&mut fdt, RAM_BASE, ram_size)?;

    // The finisher's 0x5555 powers off (`devices::finisher`).
    let poweroff = fdt.begin_node("poweroff")?;
    fdt.property_string("compatible", "syscon-poweroff")?;
    fdt.property_u32("regmap", TEST_PHANDLE)?;
    fdt.property_u32("offset", 0)?;
    fdt.property_u32("value", 0x5555)?;
    fdt.end_node(poweroff)?;

    let soc = nodes::soc(&mut fdt)?;

    let test = fdt.begin_node(&format!("test@{FINISHER_BASE:x}"))?;
    fdt.property_string_list(
        "compatible",
        vec![
            "sifive,test1".into(),
            "sifive,test0".into(),
            "syscon".into(),
        ],
    )?;
    fdt.property_array_u64("reg", &[FINISHER_BASE, FINISHER_SIZE])?;
    fdt.property_phandle(TEST_PHANDLE)?;
    fdt.end_node(test)?;

    let clint = fdt.begin_node(&format!("clint@{CLINT_BASE:x}"))?;
    fdt.property_string_list(
        "compatible",
        vec!["sifive,clint0".into(), "riscv,clint0".into()],
    )?;
    fdt.property_array_u64("reg", &[CLINT_BASE, CLINT_SIZE])?;
    fdt.property_array_u32(
        "interrupts-extended",
        &[CPU_INTC_PHANDLE, IRQ_M_SOFT, CPU_INTC_PHANDLE, IRQ_M_TIMER],
    )?;
    fdt.end_node(clint)?;

    // Context 0 is the hart's M-mode (MEIP), context 1 its S-mode (SEIP).
    let plic = fdt.begin_node(&format!("plic@{PLIC_BASE:x}"))?;
    fdt.property_string_list(
        "compatible",
        vec!["sifive,plic-1.0.0".into(), "riscv,plic0".into()],
    )?;
    fdt.property_array_u64("reg", &[PLIC_BASE, PLIC_SIZE])?;
    fdt.property_u32("#address-cells", 0)?;
    fdt.property_u32("#interrupt-cells", 1)?;
    fdt.property_null("interrupt-controller")?;
    fdt.property_u32("riscv,ndev", SOURCES - 1)?;
    fdt.property_array_u32(
        "interrupts-extended",
        &[CPU_INTC_PHANDLE, IRQ_M_EXT, CPU_INTC_PHANDLE, IRQ_S_EXT],
    )?;
    fdt.property_phandle(PLIC_PHANDLE)?;
    fdt.end_node(plic)?;

    nodes::serial(&mut fdt, Some((PLIC_PHANDLE, &[UART_SOURCE])))?;

    if imsic {
        use crate::devices::imsic::*;
        // The M-level file; the S-level one with GEILEN 7 guest files after it (8 pages
        // a hart: 3 guest index bits).
        let files = [
            ((IMSIC_M_BASE, PAGE), IRQ_M_EXT, 0, IMSIC_M_PHANDLE),
            (
                (IMSIC_S_BASE, IMSIC_S_STRIDE),
                IRQ_S_EXT,
                3,
                IMSIC_S_PHANDLE,
            ),
        ];
        for (window, irq, guest_bits, phandle) in files {
            let ext = [CPU_INTC_PHANDLE, irq];
            nodes::imsics(&mut fdt, window, &ext, IMSIC_IDS, guest_bits, phandle)?;
        }
    }

    fdt.end_node(soc)?;
    fdt.end_node(root)?;
    fdt.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains(blob: &[u8], s: &[u8]) -> bool {
        blob.windows(s.len()).any(|w| w == s)
    }

    #[test]
    fn the_tree_names_the_machines_devices() {
        let blob = build(128 << 20, Aia::None).unwrap();
        assert_eq!(&blob[..4], &[0xd0, 0x0d, 0xfe, 0xed], "FDT magic");
        for s in [
            &b"plic@c000000"[..],
            b"sifive,plic-1.0.0",
            b"riscv,plic0",
            b"clint@2000000",
            b"serial@10000000",
            b"ns16550a",
            b"test@100000",
            b"syscon-poweroff",
            b"smctr",
            b"riscv,sv57",
            b"/soc/serial@10000000",
        ] {
            assert!(contains(&blob, s), "{}", String::from_utf8_lossy(s));
        }
        assert!(!contains(&blob, b"imsics@"), "no IMSIC without --aia imsic");
        let aia = build(128 << 20, Aia::Imsic).unwrap();
        for s in [&b"imsics@24000000"[..], b"imsics@28000000", b"riscv,imsics"] {
            assert!(contains(&aia, s), "{}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn the_tree_goes_where_qemu_puts_it() {
        // 128 MiB: the last 2 MiB-aligned spot below the end.
        assert_eq!(
            fdt_address(128 << 20, 4096),
            Some(0x8000_0000 + (126 << 20))
        );
        // 2 MiB exactly: at the start of RAM.
        assert_eq!(fdt_address(2 << 20, 4096), Some(0x8000_0000));
        // Beyond 3 GiB: below 3 GiB of RAM.
        assert_eq!(
            fdt_address(8 << 30, 4096),
            Some(0x8000_0000 + (3 << 30) - (2 << 20))
        );
        // 1 MiB of RAM: rounded down to the start of RAM; a tree larger than RAM: nowhere.
        assert_eq!(fdt_address(1 << 20, 4096), Some(0x8000_0000));
        assert_eq!(fdt_address(1 << 20, 2 << 20), None);
    }
}
