//! `ctr-virt`: the hypervisor side of Control Transfer Records (Smctr/Ssctr).
//!
//! This crate will hold, per vCPU, the guest's CTR context (`vsctrctl`, `sctrstatus`, the
//! guest's virtual `sctrdepth` and every `ctrsource`/`ctrtarget`/`ctrdata` entry), the
//! load/put operations that move it onto a hart, emulation of the virtual-instruction traps on
//! `sctrdepth`, lazy switching through `hstateen0.CTR`, synthesized records for traps the VMM
//! redirects into VS-mode, and the snapshot format that carries CTR state bit for bit.
//!
//! It depends only on the backend-neutral vCPU interface of the `vcpu` crate, not on the
//! interpreter. Nothing is implemented yet (see the project's issues).
