//! Control Transfer Records (Smctr/Ssctr): differential tests against QEMU 10 through golden
//! files.
//!
//! The guests `ctr_m`, `ctr_modes` and `ctr_h` (see their headers) dump CTR state on the
//! UART. `tests/golden/<guest>.out` holds what `qemu-system-riscv64 -M virt -bios none -cpu
//! CTR_QEMU_CPU` prints for the same ELF; `scripts/ctr-golden.sh` rewrites the files (it runs
//! this test with `CTR_GOLDEN_UPDATE=1`).
//!
//! - `vmm_matches_golden_files`: each guest on `vmm machine` prints its golden file, line for
//!   line, except the lines in [`DEPARTURES`], where QEMU departs from the specification and
//!   the spec's behaviour is asserted instead (each departure's QEMU line must be in the
//!   golden file, so the list cannot go stale). Lines starting with `info ` hold
//!   implementation choices and are not compared.
//! - `golden_files_are_qemu_output`: QEMU still prints the golden files (so an edited guest
//!   without regenerated golden files fails here, naming the script).
//!
//! Spec rules QEMU cannot arbitrate (cycle counting, which QEMU does not implement, and the
//! departures above) are checked by the vmm-only guest `ctr_strict` and by `vcpu/tests/ctr.rs`.

use vmm_tests::golden::{Departure, GoldenSuite};

/// The QEMU CPU for the CTR guests: QEMU 10's `rv64` (which has H) with Smctr/Ssctr and what
/// they depend on.
pub const CTR_QEMU_CPU: &str =
    "rv64,h=true,smctr=true,ssctr=true,smcsrind=true,sscsrind=true,smstateen=true";

/// The guests compared through golden files.
pub const GOLDEN_GUESTS: &[&str] = &["ctr_m", "ctr_modes", "ctr_h"];

const STATEEN_SIREG: &str = "Smctr chapter 5: with mstateen0.CTR = 0, accesses below M-mode \
     to sireg* with siselect in 0x200..0x2FF (and vsireg* with vsiselect there) raise \
     illegal-instruction; QEMU 10.0 allows them";
const HSTATEEN_SIREG: &str = "Smctr chapter 5: with mstateen0.CTR = 1 and hstateen0.CTR = 0, \
     VS-mode accesses to sireg* (really vsireg*) with vsiselect in 0x200..0x2FF raise \
     virtual-instruction; QEMU 10.0 allows them";
const VU_SIREG: &str = "Sscsrind with Smstateen: while mstateen0.CSRIND = 1, every VU-mode \
     access to siselect or sireg* raises virtual-instruction, regardless of any other mstateen \
     bit (so also with mstateen0.CTR = 0) and of the select value; QEMU 10.0 raises \
     illegal-instruction";
const FILTER_VS_HS: &str = "Smctr 6.1.1: on a trap between VS/VU and M/HS, the filter fields \
     (EXCINH here) come from vsctrctl; QEMU 10.0 uses sctrctl for a VS->HS trap";
const STE_VS: &str = "Smctr table 8: an external trap VS->HS needs sctrctl.STE, and VS->M needs \
     mctrctl.MTE and sctrctl.STE (vsctrctl.STE only matters for traps from VU); QEMU 10.0 \
     records neither";

const DEPARTURES: &[Departure] = &[
    Departure {
        guest: "ctr_modes",
        qemu: "S, mstateen0.CTR=0: sireg (ctrsource): 0",
        spec: "S, mstateen0.CTR=0: sireg (ctrsource): 2",
        why: STATEEN_SIREG,
    },
    Departure {
        guest: "ctr_modes",
        qemu: "S, mstateen0.CTR=0: sireg2 (ctrtarget): 0",
        spec: "S, mstateen0.CTR=0: sireg2 (ctrtarget): 2",
        why: STATEEN_SIREG,
    },
    Departure {
        guest: "ctr_modes",
        qemu: "S, mstateen0.CTR=0: sireg3 (ctrdata): 0",
        spec: "S, mstateen0.CTR=0: sireg3 (ctrdata): 2",
        why: STATEEN_SIREG,
    },
    Departure {
        guest: "ctr_modes",
        qemu: "S, mstateen0.CTR=0: vsireg (ctrsource): 0",
        spec: "S, mstateen0.CTR=0: vsireg (ctrsource): 2",
        why: STATEEN_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS -> HS, sctrctl.EXCINH (not used): wrptr=3: +27c>+280/11 +1b4>+27c/3 +274>+278/11",
        spec: "VS -> HS, sctrctl.EXCINH (not used): wrptr=4: +27c>+280/11 +1b4>+27c/3 +278>+180/1 +274>+278/11",
        why: FILTER_VS_HS,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS -> HS, vsctrctl.EXCINH (used): wrptr=4: +27c>+280/11 +1b4>+27c/3 +278>+180/1 +274>+278/11",
        spec: "VS -> HS, vsctrctl.EXCINH (used): wrptr=3: +27c>+280/11 +1b4>+27c/3 +274>+278/11",
        why: FILTER_VS_HS,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS->HS with STE: wrptr=2: +27c>+280/11 +274>+278/11",
        spec: "VS->HS with STE: wrptr=3: +27c>+280/11 +278>0/1 +274>+278/11",
        why: STE_VS,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS->M with MTE, STE: wrptr=1: +274>+278/11",
        spec: "VS->M with MTE, STE: wrptr=2: +278>0/1 +274>+278/11",
        why: STE_VS,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS m=1 h=0: sireg (ctrsource): 0",
        spec: "VS m=1 h=0: sireg (ctrsource): 22",
        why: HSTATEEN_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS m=1 h=0: sireg3 (ctrdata): 0",
        spec: "VS m=1 h=0: sireg3 (ctrdata): 22",
        why: HSTATEEN_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS m=0 h=1: sireg (ctrsource): 0",
        spec: "VS m=0 h=1: sireg (ctrsource): 2",
        why: STATEEN_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VS m=0 h=1: sireg3 (ctrdata): 0",
        spec: "VS m=0 h=1: sireg3 (ctrdata): 2",
        why: STATEEN_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VU m=1 h=1: sireg (ctrsource): 2",
        spec: "VU m=1 h=1: sireg (ctrsource): 22",
        why: VU_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VU m=1 h=1: sireg3 (ctrdata): 2",
        spec: "VU m=1 h=1: sireg3 (ctrdata): 22",
        why: VU_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VU m=0 h=1: sireg (ctrsource): 2",
        spec: "VU m=0 h=1: sireg (ctrsource): 22",
        why: VU_SIREG,
    },
    Departure {
        guest: "ctr_h",
        qemu: "VU m=0 h=1: sireg3 (ctrdata): 2",
        spec: "VU m=0 h=1: sireg3 (ctrdata): 22",
        why: VU_SIREG,
    },
];

/// The golden-file comparison of [`GOLDEN_GUESTS`] with [`DEPARTURES`].
const SUITE: GoldenSuite = GoldenSuite {
    guests: GOLDEN_GUESTS,
    departures: DEPARTURES,
    qemu_cpu: CTR_QEMU_CPU,
    qemu_args: &[],
    qemu_needs: "QEMU >= 10.0 for Smctr",
    update_var: "CTR_GOLDEN_UPDATE",
    script: "scripts/ctr-golden.sh",
    departures_file: file!(),
};

vmm_tests::golden_tests!(SUITE);
