//! Exit tracing (`--trace-exits[=FILTER]`, the control socket's `trace-exits` request): one
//! line on stderr per exit of the classes the filter selects, saying which vCPU left the
//! guest where (pc, VS or VU), why (the SBI extension and function by name with their
//! arguments, the virtual instruction disassembled, `sctrclr` or `csrrs a0, sctrdepth,
//! zero`, the MMIO device and offset, the trap's cause) and what the VMM did (the SBI
//! return, the emulation or injection, the value read). What KVM's `kvm_exit`, `kvm_sbi`
//! and `kvm_mmio` trace events give, without a tracing framework. For example:
//!
//! ```text
//! exit vcpu 0 pc 0x80200a14 VS sbi TIME set_timer(0x1e848, 0x0, 0x0) -> SBI_SUCCESS 0x0
//! exit vcpu 0 pc 0x80200b20 VS virtual-insn csrrs a0, sctrdepth, zero -> emulated-ctr-depth
//! exit vcpu 1 pc 0x80200c08 VS mmio uart+0x5 read 1 -> 0x60
//! ```
//!
//! With `--symbols FILE` ([`crate::symbols`]) a pc a symbol covers is followed by it:
//! `exit vcpu 0 pc 0x80200a14 <set_timer+0x14> VS sbi TIME ...`.
//!
//! The filter is shared by every vCPU of the VM and read once per exit (a relaxed atomic
//! load): with tracing off, an exit costs nothing more.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::symbols::Symbols;

/// The classes of exits a filter selects, one bit each.
pub mod class {
    /// SBI calls (`ECALL` from VS-mode).
    pub const SBI: u32 = 1 << 0;
    /// Virtual-instruction exceptions.
    pub const VINSN: u32 = 1 << 1;
    /// Device accesses.
    pub const MMIO: u32 = 1 << 2;
    /// WFI left to the VMM.
    pub const WFI: u32 = 1 << 3;
    /// HS-level interrupts (counter overflows passed on to the guest).
    pub const IRQ: u32 = 1 << 4;
    /// Other guest traps the VMM injects back (access and guest-page faults, ...).
    pub const FAULT: u32 = 1 << 5;
    /// Every class.
    pub const ALL: u32 = (1 << 6) - 1;
    /// The classes by name, as a filter spells them.
    pub const NAMES: [(&str, u32); 6] = [
        ("sbi", SBI),
        ("vinsn", VINSN),
        ("mmio", MMIO),
        ("wfi", WFI),
        ("irq", IRQ),
        ("fault", FAULT),
    ];
}

/// A trace filter that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// A name that is no class.
    #[error("unknown exit class `{0}` in the trace filter (classes: all, sbi, vinsn, mmio, wfi, irq, fault)")]
    UnknownClass(String),
}

/// Reads a filter: `all`, or classes separated by commas (`sbi,vinsn`).
pub fn parse_filter(filter: &str) -> Result<u32, FilterError> {
    let mut classes = 0;
    for name in filter.split(',').map(str::trim) {
        classes |= match name {
            "all" => class::ALL,
            _ => class::NAMES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, c)| *c)
                .ok_or_else(|| FilterError::UnknownClass(name.to_string()))?,
        };
    }
    Ok(classes)
}

/// The names of the classes in `classes` (for answers of the control socket).
pub fn class_names(classes: u32) -> Vec<&'static str> {
    class::NAMES
        .iter()
        .filter(|(_, c)| classes & c != 0)
        .map(|(n, _)| *n)
        .collect()
}

/// Which exits the VM traces (none by default); shared by its vCPUs and its control socket.
#[derive(Debug, Default)]
pub struct ExitTrace {
    classes: AtomicU32,
    /// `--symbols`: a line's pc is followed by `<function+0xoff>`.
    symbols: Option<Arc<Symbols>>,
}

impl ExitTrace {
    /// Tracing the exits of `classes` (0: none).
    pub fn new(classes: u32) -> ExitTrace {
        ExitTrace::with_symbols(classes, None)
    }

    /// Tracing the exits of `classes`, naming pcs with `symbols`.
    pub fn with_symbols(classes: u32, symbols: Option<Arc<Symbols>>) -> ExitTrace {
        ExitTrace {
            classes: AtomicU32::new(classes),
            symbols,
        }
    }

    /// A pc as a line shows it: `0x80200a14`, or `0x80200a14 <main+0x14>` with a symbol
    /// that covers it.
    pub fn pc(&self, pc: u64) -> String {
        match self.symbols.as_deref().and_then(|s| s.annotate(pc)) {
            Some(sym) => format!("{pc:#x} {sym}"),
            None => format!("{pc:#x}"),
        }
    }

    /// From now on, trace the exits of `classes` (0: none).
    pub fn set(&self, classes: u32) {
        self.classes.store(classes, Ordering::Relaxed);
    }

    /// The classes traced now.
    pub fn classes(&self) -> u32 {
        self.classes.load(Ordering::Relaxed)
    }

    /// Whether exits of `class` are traced.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        self.classes() & class != 0
    }

    /// Prints one trace line (one write, so that lines of several vCPUs do not mix).
    pub fn emit(&self, line: &str) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        assert_eq!(parse_filter("all"), Ok(class::ALL));
        assert_eq!(parse_filter("sbi"), Ok(class::SBI));
        assert_eq!(
            parse_filter("vinsn, mmio,irq"),
            Ok(class::VINSN | class::MMIO | class::IRQ)
        );
        assert_eq!(
            parse_filter("sbi,nope"),
            Err(FilterError::UnknownClass("nope".into()))
        );
        assert_eq!(parse_filter(""), Err(FilterError::UnknownClass("".into())));
        assert_eq!(class_names(class::SBI | class::FAULT), ["sbi", "fault"]);
        assert_eq!(class_names(class::ALL).len(), class::NAMES.len());
        let t = ExitTrace::new(0);
        assert!(!t.wants(class::SBI));
        t.set(class::SBI);
        assert!(t.wants(class::SBI) && !t.wants(class::MMIO));
        assert_eq!(t.pc(0x8000_0004), "0x80000004");
        let map = b"80000000 T main\n80000100 D data\n";
        let symbols = Symbols::parse(map, std::path::Path::new("System.map")).unwrap();
        let t = ExitTrace::with_symbols(class::ALL, Some(Arc::new(symbols)));
        assert_eq!(t.pc(0x8000_0004), "0x80000004 <main+0x4>");
        assert_eq!(t.pc(0x8000_0000), "0x80000000 <main>");
        assert_eq!(t.pc(0x8000_0100), "0x80000100");
    }
}
