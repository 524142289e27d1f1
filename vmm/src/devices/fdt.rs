//! Device-tree nodes that `vmm run`'s tree (`run/fdt.rs`) and `vmm machine`'s
//! (`machine/fdt.rs`) write alike: the root's cells and identity, `memory`, `soc`, a hart's
//! `riscv,cpu-intc`, the ns16550a UART and an IMSIC interrupt file group (devicetree
//! specification; Linux bindings `riscv/cpus.yaml`, `serial/8250.yaml`,
//! `interrupt-controller/riscv,imsics.yaml`).

use vm_fdt::{FdtWriter, FdtWriterNode};

use crate::layout::{UART_BASE, UART_SIZE};

/// What the node writers return.
pub type Result<T = ()> = std::result::Result<T, vm_fdt::Error>;

/// The UART's input clock (QEMU `virt`'s).
pub const UART_CLOCK_HZ: u32 = 3_686_400;
/// `chosen/stdout-path`: the UART.
pub const STDOUT_PATH: &str = "/soc/serial@10000000";

/// Opens the root node: two address and size cells, `compatible` as QEMU's `virt`, and
/// `model`.
pub fn root(fdt: &mut FdtWriter, model: &str) -> Result<FdtWriterNode> {
    let root = fdt.begin_node("")?;
    fdt.property_u32("#address-cells", 2)?;
    fdt.property_u32("#size-cells", 2)?;
    fdt.property_string("compatible", "riscv-virtio")?;
    fdt.property_string("model", model)?;
    Ok(root)
}

/// A hart's local interrupt controller (the child of its `cpu` node), with `phandle`.
pub fn cpu_intc(fdt: &mut FdtWriter, phandle: u32) -> Result {
    let intc = fdt.begin_node("interrupt-controller")?;
    fdt.property_u32("#interrupt-cells", 1)?;
    fdt.property_null("interrupt-controller")?;
    fdt.property_string("compatible", "riscv,cpu-intc")?;
    fdt.property_phandle(phandle)?;
    fdt.end_node(intc)
}

/// The `memory` node of RAM at `base`, `size` bytes.
pub fn memory(fdt: &mut FdtWriter, base: u64, size: u64) -> Result {
    let memory = fdt.begin_node(&format!("memory@{base:x}"))?;
    fdt.property_string("device_type", "memory")?;
    fdt.property_array_u64("reg", &[base, size])?;
    fdt.end_node(memory)
}

/// Opens the `soc` bus node (`simple-bus`, identity `ranges`).
pub fn soc(fdt: &mut FdtWriter) -> Result<FdtWriterNode> {
    let soc = fdt.begin_node("soc")?;
    fdt.property_u32("#address-cells", 2)?;
    fdt.property_u32("#size-cells", 2)?;
    fdt.property_string("compatible", "simple-bus")?;
    fdt.property_null("ranges")?;
    Ok(soc)
}

/// The ns16550a UART; with `irq` (`(interrupt-parent, interrupts)`), its interrupt.
pub fn serial(fdt: &mut FdtWriter, irq: Option<(u32, &[u32])>) -> Result {
    let uart = fdt.begin_node(&format!("serial@{UART_BASE:x}"))?;
    fdt.property_string("compatible", "ns16550a")?;
    fdt.property_array_u64("reg", &[UART_BASE, UART_SIZE])?;
    fdt.property_u32("clock-frequency", UART_CLOCK_HZ)?;
    if let Some((parent, cells)) = irq {
        fdt.property_u32("interrupt-parent", parent)?;
        fdt.property_array_u32("interrupts", cells)?;
    }
    fdt.end_node(uart)
}

/// An IMSIC group (`riscv,imsics`) of `size` bytes at `base` with `ids` identities,
/// signalling `interrupts_extended` (`(cpu-intc phandle, local interrupt)` pairs); with
/// `guest_index_bits` > 0 each hart's pages hold that many bits' worth of guest files.
pub fn imsics(
    fdt: &mut FdtWriter,
    (base, size): (u64, u64),
    interrupts_extended: &[u32],
    ids: u32,
    guest_index_bits: u32,
    phandle: u32,
) -> Result {
    let node = fdt.begin_node(&format!("imsics@{base:x}"))?;
    fdt.property_string_list(
        "compatible",
        vec!["qemu,imsics".into(), "riscv,imsics".into()],
    )?;
    fdt.property_array_u64("reg", &[base, size])?;
    fdt.property_array_u32("interrupts-extended", interrupts_extended)?;
    fdt.property_null("msi-controller")?;
    fdt.property_null("interrupt-controller")?;
    fdt.property_u32("#interrupt-cells", 0)?;
    fdt.property_u32("#msi-cells", 0)?;
    fdt.property_u32("riscv,num-ids", ids)?;
    if guest_index_bits > 0 {
        fdt.property_u32("riscv,guest-index-bits", guest_index_bits)?;
    }
    fdt.property_phandle(phandle)?;
    fdt.end_node(node)
}
