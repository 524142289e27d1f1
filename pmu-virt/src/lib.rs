//! `pmu-virt`: the hypervisor side of performance monitoring.
//!
//! This crate will hold virtual counters mapped onto the hart's (Zihpm, Sscofpmf, Smcntrpmf),
//! the SBI PMU extension for guests, `scountovf` and counter-delegation (Ssccfg) emulation,
//! LCOFI delivery through `hvip`/`hvien` (Smcdeleg/Ssccfg chapter 6, AIA), and the guest side of
//! Sspesa and instruction sampling (Smpdis/Sspdis), with their state in VM snapshots.
//!
//! It depends only on the backend-neutral vCPU interface of the `vcpu` crate, not on the
//! interpreter. Nothing is implemented yet (see the project's issues).
