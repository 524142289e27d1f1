//! Performance monitoring (Zihpm, Sscofpmf, Smcntrpmf, Smcdeleg/Ssccfg): differential tests
//! against QEMU 10 through golden files, in the manner of `tests/ctr.rs`.
//!
//! The guests `pmu_m` (M-mode), `pmu_deleg` (S and U) and `pmu_h` (VS and VU) print one
//! line per check. `tests/golden/<guest>.out` holds what `qemu-system-riscv64 -M virt -bios
//! none -cpu PMU_QEMU_CPU -icount shift=0` prints for the same ELF; `scripts/pmu-golden.sh`
//! rewrites the files (it runs this test with `PMU_GOLDEN_UPDATE=1`).
//!
//! - `vmm_matches_golden_files`: each guest on `vmm machine` prints its golden file, line for
//!   line, except the lines in [`DEPARTURES`], where QEMU departs from the specification and
//!   the spec's behaviour is asserted instead (each departure's QEMU line must be in the
//!   golden file, so the list cannot go stale). Lines starting with `info ` hold
//!   implementation choices and are not compared.
//! - `golden_files_are_qemu_output`: QEMU still prints the golden files.
//! - `pmu_strict_passes_on_vmm`: the vmm-only guest `pmu_strict` (exact event counts from the
//!   catalog, the precise LCOFI, the Smcntrpmf instret rules, the departures below and the
//!   LCOFI delegated to VS through `hideleg` bit 13, which QEMU 10.0 does not implement)
//!   passes.
//!
//! - `pmu_sample_passes_on_vmm`, `pmu_ctr_passes_on_vmm`, `pmu_pdis_passes_on_vmm`: the
//!   vmm-only guests of the draft extensions, which QEMU does not implement: `pmu_sample`
//!   (Sspesa/Ssplcofi), `pmu_ctr` (the Smctr 6.5 LCOFI freeze with a precise overflow and
//!   `shpmspc`) and `pmu_pdis` (Smpdis/Sspdis).
//!
//! The guests print no counter values that depend on timing (the hart's cycle count is a
//! cost model, QEMU's follows the host or icount), only facts such as "advanced"/"stopped",
//! OF bits, `scountovf`, trap causes.
//!
//! QEMU needs `-icount shift=0`: without it, QEMU 10.0 raises the overflow of a counter
//! counting instructions (event 0x2) from a host timer, so OF and `mip.LCOFIP` are not set
//! when the counter wraps (it sets them later, or never in a short run); with icount they
//! are set at the wrap.

use vmm_tests::golden::{Departure, GoldenSuite};
use vmm_tests::{check_guest, BUDGET};

/// The QEMU CPU for the PMU guests: QEMU 10's `rv64` (which has H) with Sscofpmf,
/// Smcntrpmf, Smcdeleg/Ssccfg and what they depend on (Smcsrind/Sscsrind, Smstateen,
/// Smaia/Ssaia), and all 29 hpm counters (`pmu-mask`; QEMU 10.0's default is counters
/// 3-18).
pub const PMU_QEMU_CPU: &str = "rv64,h=true,sscofpmf=true,smcntrpmf=true,smcdeleg=true,\
                                ssccfg=true,smcsrind=true,sscsrind=true,smstateen=true,\
                                smaia=true,ssaia=true,pmu-mask=0xfffffff8";

/// More QEMU arguments: instruction counting by icount (see the module comment).
pub const PMU_QEMU_ARGS: &[&str] = &["-icount", "shift=0"];

/// The guests compared through golden files.
pub const GOLDEN_GUESTS: &[&str] = &["pmu_m", "pmu_deleg", "pmu_h"];

const SCOUNTOVF_M: &str = "Sscofpmf (scountovf): in M-mode, scountovf bit X is always \
     readable; QEMU 10.0 masks M-mode reads with mcounteren";
const SCOUNTOVF_VS: &str = "Sscofpmf (scountovf): in VS-mode, bit X is readable when \
     mcounteren bit X and hcounteren bit X are both set, and otherwise reads as zero; QEMU \
     10.0 ignores hcounteren";
const SCOUNTINHIBIT_CDE0: &str = "Smcdeleg chapter 4: when menvcfg.CDE = 0, attempts to \
     access scountinhibit raise an illegal-instruction exception (also from VS/VU: the \
     virtual-instruction rule applies only while the extension is enabled); QEMU 10.0 allows \
     the S-mode access and raises virtual-instruction from VS/VU";
const VS_SIREG_CDE0: &str = "Smcdeleg chapter 3: with vsiselect in 0x40-0x5F, a VS-mode \
     access to any sireg* (really vsireg*) raises illegal-instruction if menvcfg.CDE = 0; \
     QEMU 10.0 raises virtual-instruction for sireg";
const VS_SIREG_CDE1: &str = "Smcdeleg chapter 3: with vsiselect in 0x40-0x5F, a VS-mode \
     access to any sireg* (really vsireg*) raises virtual-instruction if menvcfg.CDE = 1; \
     QEMU 10.0 raises illegal-instruction for sireg2..sireg6";
const VU_SIREG: &str = "Sscsrind with Smstateen (and Smcdeleg chapter 3): while \
     mstateen0.CSRIND = 1, every VU-mode access to siselect or sireg* raises \
     virtual-instruction; QEMU 10.0 raises illegal-instruction";
const VU_SCOUNTOVF: &str = "H extension, virtual-instruction exceptions: in VU-mode, an \
     access to an implemented supervisor CSR that would be allowed in HS-mode raises \
     virtual-instruction (scountovf with CDE = 0); QEMU 10.0 raises illegal-instruction";
const SCOUNTOVF_CDE1: &str = "Smcdeleg chapter 5: with menvcfg.CDE = 1, accesses to \
     scountovf from VS-mode or VU-mode raise virtual-instruction; QEMU 10.0 raises \
     illegal-instruction from VU";
const HVIP_ALIAS: &str = "AIA 6.3.2 (and Smcdeleg chapter 6): while hideleg bit 13 = 0 and \
     hvien bit 13 = 1, vsip bit 13 is an alias of hvip bit 13; QEMU 10.0 reads 0 (yet takes \
     the interrupt in VS)";

const CFG_MINH: &str = "Smcdeleg chapter 3: through sireg2, bit 62 (MINH) of mcyclecfg and \
     minstretcfg is read-only 0; QEMU 10.0 shows it";

const CFG_OF: &str = "Smcntrpmf 2.1: bit 63 of mcyclecfg and minstretcfg (the OF position \
     of Sscofpmf's format) is read-only 0; QEMU 10.0 keeps it";
const SCOUNTINHIBIT_RO: &str = "Smcdeleg chapter 4: scountinhibit bits of counters not \
     delegated to S-mode are read-only zero, so an S-mode write leaves their mcountinhibit \
     bits alone; QEMU 10.0 clears mcountinhibit bit 4 of an undelegated counter";

const DEPARTURES: &[Departure] = &[
    Departure {
        guest: "pmu_m",
        qemu: "M: mcyclecfg after writing ones, bits 63:58: 0xfc00000000000000",
        spec: "M: mcyclecfg after writing ones, bits 63:58: 0x7c00000000000000",
        why: CFG_OF,
    },
    Departure {
        guest: "pmu_m",
        qemu: "M: minstretcfg after writing ones, bits 63:58: 0xfc00000000000000",
        spec: "M: minstretcfg after writing ones, bits 63:58: 0x7c00000000000000",
        why: CFG_OF,
    },
    Departure {
        guest: "pmu_deleg",
        qemu: "S, CDE=1: mcountinhibit after scountinhibit = 0: 0x0",
        spec: "S, CDE=1: mcountinhibit after scountinhibit = 0: 0x10",
        why: SCOUNTINHIBIT_RO,
    },
    Departure {
        guest: "pmu_m",
        qemu: "M:   scountovf read in M: 0x0",
        spec: "M:   scountovf read in M: 0x8",
        why: SCOUNTOVF_M,
    },
    Departure {
        guest: "pmu_deleg",
        qemu: "S, CDE=1: sireg2 (0x40) with mcyclecfg = MINH|UINH: 0x5000000000000000",
        spec: "S, CDE=1: sireg2 (0x40) with mcyclecfg = MINH|UINH: 0x1000000000000000",
        why: CFG_MINH,
    },
    Departure {
        guest: "pmu_deleg",
        qemu: "S, CDE=1: sireg2 (0x42) with minstretcfg = MINH|SINH: 0x6000000000000000",
        spec: "S, CDE=1: sireg2 (0x42) with minstretcfg = MINH|SINH: 0x2000000000000000",
        why: CFG_MINH,
    },
    Departure {
        guest: "pmu_deleg",
        qemu: "M, mcounteren=0: scountovf: 0x0",
        spec: "M, mcounteren=0: scountovf: 0x80000018",
        why: SCOUNTOVF_M,
    },
    Departure {
        guest: "pmu_deleg",
        qemu: "M, mcounteren=CY IR HPM3 HPM31: scountovf: 0x80000008",
        spec: "M, mcounteren=CY IR HPM3 HPM31: scountovf: 0x80000018",
        why: SCOUNTOVF_M,
    },
    Departure {
        guest: "pmu_deleg",
        qemu: "S, CDE=0: scountinhibit: ok",
        spec: "S, CDE=0: scountinhibit: illegal",
        why: SCOUNTINHIBIT_CDE0,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=0: sireg (vsiselect 0x40): virtual",
        spec: "VS, CDE=0: sireg (vsiselect 0x40): illegal",
        why: VS_SIREG_CDE0,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=0: sireg (vsiselect 0x43): virtual",
        spec: "VS, CDE=0: sireg (vsiselect 0x43): illegal",
        why: VS_SIREG_CDE0,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg2 (vsiselect 0x40): illegal",
        spec: "VS, CDE=1: sireg2 (vsiselect 0x40): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg3 (vsiselect 0x40): illegal",
        spec: "VS, CDE=1: sireg3 (vsiselect 0x40): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg4 (vsiselect 0x40): illegal",
        spec: "VS, CDE=1: sireg4 (vsiselect 0x40): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg5 (vsiselect 0x40): illegal",
        spec: "VS, CDE=1: sireg5 (vsiselect 0x40): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg6 (vsiselect 0x40): illegal",
        spec: "VS, CDE=1: sireg6 (vsiselect 0x40): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg2 (vsiselect 0x43): illegal",
        spec: "VS, CDE=1: sireg2 (vsiselect 0x43): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg3 (vsiselect 0x43): illegal",
        spec: "VS, CDE=1: sireg3 (vsiselect 0x43): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg4 (vsiselect 0x43): illegal",
        spec: "VS, CDE=1: sireg4 (vsiselect 0x43): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg5 (vsiselect 0x43): illegal",
        spec: "VS, CDE=1: sireg5 (vsiselect 0x43): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=1: sireg6 (vsiselect 0x43): illegal",
        spec: "VS, CDE=1: sireg6 (vsiselect 0x43): virtual",
        why: VS_SIREG_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg (vsiselect 0x40): illegal",
        spec: "VU, CDE=1: sireg (vsiselect 0x40): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg2 (vsiselect 0x40): illegal",
        spec: "VU, CDE=1: sireg2 (vsiselect 0x40): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg3 (vsiselect 0x40): illegal",
        spec: "VU, CDE=1: sireg3 (vsiselect 0x40): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg4 (vsiselect 0x40): illegal",
        spec: "VU, CDE=1: sireg4 (vsiselect 0x40): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg5 (vsiselect 0x40): illegal",
        spec: "VU, CDE=1: sireg5 (vsiselect 0x40): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg6 (vsiselect 0x40): illegal",
        spec: "VU, CDE=1: sireg6 (vsiselect 0x40): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: siselect (vsiselect 0x40): illegal",
        spec: "VU, CDE=1: siselect (vsiselect 0x40): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg (vsiselect 0x43): illegal",
        spec: "VU, CDE=1: sireg (vsiselect 0x43): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg2 (vsiselect 0x43): illegal",
        spec: "VU, CDE=1: sireg2 (vsiselect 0x43): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg3 (vsiselect 0x43): illegal",
        spec: "VU, CDE=1: sireg3 (vsiselect 0x43): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg4 (vsiselect 0x43): illegal",
        spec: "VU, CDE=1: sireg4 (vsiselect 0x43): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg5 (vsiselect 0x43): illegal",
        spec: "VU, CDE=1: sireg5 (vsiselect 0x43): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: sireg6 (vsiselect 0x43): illegal",
        spec: "VU, CDE=1: sireg6 (vsiselect 0x43): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: siselect (vsiselect 0x43): illegal",
        spec: "VU, CDE=1: siselect (vsiselect 0x43): virtual",
        why: VU_SIREG,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=0: scountinhibit: virtual",
        spec: "VS, CDE=0: scountinhibit: illegal",
        why: SCOUNTINHIBIT_CDE0,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=0: scountinhibit: virtual",
        spec: "VU, CDE=0: scountinhibit: illegal",
        why: SCOUNTINHIBIT_CDE0,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, CDE=0:   scountovf value: 0x80000018",
        spec: "VS, CDE=0:   scountovf value: 0x80000008",
        why: SCOUNTOVF_VS,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=0: scountovf: illegal",
        spec: "VU, CDE=0: scountovf: virtual",
        why: VU_SCOUNTOVF,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VU, CDE=1: scountovf: illegal",
        spec: "VU, CDE=1: scountovf: virtual",
        why: SCOUNTOVF_CDE1,
    },
    Departure {
        guest: "pmu_h",
        qemu: "VS, hvien.LCOFI=1 hvip.LCOFI=1: sip (vsip) bit 13: 0x0",
        spec: "VS, hvien.LCOFI=1 hvip.LCOFI=1: sip (vsip) bit 13: 0x2000",
        why: HVIP_ALIAS,
    },
];

/// The golden-file comparison of [`GOLDEN_GUESTS`] with [`DEPARTURES`].
const SUITE: GoldenSuite = GoldenSuite {
    guests: GOLDEN_GUESTS,
    departures: DEPARTURES,
    qemu_cpu: PMU_QEMU_CPU,
    qemu_args: PMU_QEMU_ARGS,
    qemu_needs: "QEMU >= 10.0",
    update_var: "PMU_GOLDEN_UPDATE",
    script: "scripts/pmu-golden.sh",
    departures_file: file!(),
};

vmm_tests::golden_tests!(SUITE);

#[test]
fn pmu_strict_passes_on_vmm() {
    let run = check_guest("pmu_strict", BUDGET);
    assert!(
        run.text().lines().any(|l| l == "pmu_strict: PASS"),
        "{}",
        run.text()
    );
}

/// Sspesa/Ssplcofi (draft; QEMU has neither): `shpmspc`, `shpmsdata.CNTRID` and the precise
/// LCOFI in M, S and VS, capture only on the LCOFIP 0 -> 1 transition and only for delegated
/// counters while CDE = 1, and the access rules.
#[test]
fn pmu_sample_passes_on_vmm() {
    let run = check_guest("pmu_sample", BUDGET);
    assert!(
        run.text().lines().any(|l| l == "pmu_sample: PASS"),
        "{}",
        run.text()
    );
}

/// Smctr section 6.5 with a real overflow: the LCOFI of a counter counting taken branches
/// freezes CTR (LCOFIFRZ of the register governing the trap, in M, S and VS) without being
/// recorded, and the newest entry is the overflowing branch (source = `shpmspc`).
#[test]
fn pmu_ctr_passes_on_vmm() {
    let run = check_guest("pmu_ctr", BUDGET);
    assert!(
        run.text().lines().any(|l| l == "pmu_ctr: PASS"),
        "{}",
        run.text()
    );
}

/// Smpdis/Sspdis (draft; QEMU has none): COUNT per SEL and mode, INITVAL reload, the sample
/// record of loads, stores and control transfers (TYPE, pdispc, addresses, L1MISS, transfer
/// type, EPT, PA also with V = 1), OF/LCOFIP/`scountovf` bit 1, the PDIS.* events, event and
/// latency filtering, ACC, stateen gating and the WARL fields.
#[test]
fn pmu_pdis_passes_on_vmm() {
    let run = check_guest("pmu_pdis", BUDGET);
    assert!(
        run.text().lines().any(|l| l == "pmu_pdis: PASS"),
        "{}",
        run.text()
    );
}
