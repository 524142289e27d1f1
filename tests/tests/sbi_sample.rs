//! Sampling for `vmm run` guests (`pmu_virt::sample`, `docs/pmu-virt.md` "Sampling"): the
//! `sbi_pmu_sample` guest kernel checks Sspesa/Ssplcofi (samples of its SBI PMU counters,
//! emulated `shpmspc`/`shpmsdata`/`scountovf`) and Sspdis (lazy PDIS state, VS and VU samples,
//! guest virtual and guest physical addresses) from inside; these tests check what the VMM
//! saw (one lazy-load exit, one exit per Sspesa access, none for PDIS after the first), the
//! paths with the extensions off, and a snapshot taken while an LCOFI is pending with live
//! Sspesa and PDIS state.

use vmm::run::snapshot::{restore_and_run, RestoreConfig};
use vmm::run::{
    run_kernel, ConsoleInput, GuestVm, RunConfig, RunExit, RunStats, VirtualInsnAction,
};
use vmm_tests::{guest, SharedBuf, BUDGET};

fn config() -> RunConfig {
    let mut c = RunConfig::new(guest("sbi_pmu_sample"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c
}

fn run(config: &RunConfig) -> (RunExit, RunStats, String) {
    let out = SharedBuf::default();
    let r = run_kernel(config, Box::new(out.clone()), ConsoleInput::None);
    let text = out.text();
    let (exit, stats) = r.unwrap_or_else(|e| panic!("vmm: {e}\n{text}"));
    (exit, stats, text)
}

fn passes(exit: &RunExit, out: &str) {
    assert!(!out.contains("FAIL"), "failures:\n{out}");
    assert!(out.ends_with("sbi_pmu_sample: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{out}");
}

/// The CSR number of a CSR instruction.
fn csr_of(insn: u32) -> u32 {
    insn >> 20
}

#[test]
fn sampling_guest_passes_with_one_lazy_pdis_exit() {
    let (exit, stats, out) = run(&config());
    passes(&exit, &out);
    assert!(out.contains("sspesa present\n"), "{out}");
    assert!(out.contains("pdis present\n"), "{out}");
    let e = &stats.exits;
    assert_eq!(e.virtual_insn_dropped(), 0);
    // Every shpmspc/shpmsdata access of the guest exited and was emulated.
    let accesses: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("sspesa accesses "))
        .expect("sspesa accesses line")
        .parse()
        .unwrap();
    assert!(accesses >= 15, "{out}");
    assert_eq!(e.get("sspesa emulated"), accesses, "{}", e.table());
    assert!(e.get("scountovf emulated") >= 4, "{}", e.table());
    // PDIS: the first access exits, no other VS access to PDIS state does.
    assert_eq!(e.get("pdis lazy load"), 1, "{}", e.table());
    let pdis_exits: Vec<_> = e
        .virtual_insn_exits()
        .iter()
        .filter(|x| (0x5c2..=0x5c6).contains(&csr_of(x.insn)) || x.insn >> 20 == 0x151)
        .collect();
    let vs: Vec<_> = pdis_exits.iter().filter(|x| !x.from_vu).collect();
    assert_eq!(vs.len(), 1, "{pdis_exits:#x?}");
    assert_eq!(vs[0].action, VirtualInsnAction::PdisLoaded);
    assert_eq!(
        csr_of(vs[0].insn),
        0x5c2,
        "the first access is a read of spdisctl"
    );
    // VU accesses exited and were answered with illegal-instruction.
    let vu: Vec<_> = e
        .virtual_insn_exits()
        .iter()
        .filter(|x| x.from_vu)
        .map(|x| (csr_of(x.insn), x.action))
        .collect();
    assert_eq!(
        vu,
        [
            (0x5c0, VirtualInsnAction::InjectedIllegal),
            (0x5c2, VirtualInsnAction::InjectedIllegal)
        ]
    );
    // vspdisctl from VS (an H-level CSR): injected illegal.
    assert!(e
        .virtual_insn_exits()
        .iter()
        .any(|x| csr_of(x.insn) == 0x6c0 && x.action == VirtualInsnAction::InjectedIllegal));
}

#[test]
fn with_sampling_off_the_accesses_are_illegal_without_exits() {
    let mut c = config();
    c.sspesa = false;
    c.pdis = false;
    let (exit, stats, out) = run(&c);
    passes(&exit, &out);
    assert!(out.contains("sspesa absent\n"), "{out}");
    assert!(out.contains("pdis absent\n"), "{out}");
    let e = &stats.exits;
    for reason in ["sspesa emulated", "scountovf emulated", "pdis lazy load"] {
        assert_eq!(e.get(reason), 0, "{reason}: {}", e.table());
    }
    // No sampling CSR exited at all (illegal-instruction went straight to the guest).
    assert!(
        e.virtual_insn_exits()
            .iter()
            .all(|x| !(0x5c0..=0x5c6).contains(&csr_of(x.insn)) && csr_of(x.insn) != 0xda0),
        "{:#x?}",
        e.virtual_insn_exits()
    );
}

#[test]
fn pdis_without_sspesa_records_no_hpm_bits() {
    let mut c = config();
    c.sspesa = false;
    let (exit, stats, out) = run(&c);
    passes(&exit, &out);
    assert!(out.contains("sspesa absent\n"), "{out}");
    assert!(out.contains("pdis present\n"), "{out}");
    assert!(
        out.contains("ok   pdishdrev.HPM3 (the guest's load counter, with Sspesa) = 0x0"),
        "{out}"
    );
    assert_eq!(stats.exits.get("pdis lazy load"), 1);
    assert_eq!(stats.exits.get("scountovf emulated"), 0);
}

#[test]
fn without_a_pmu_there_is_no_sampling() {
    let mut c = config();
    c.pmu = false;
    let (_, stats, out) = run(&c);
    assert!(out.contains("sspesa absent\n"), "{out}");
    assert!(out.contains("pdis absent\n"), "{out}");
    assert_eq!(stats.exits.get("pdis lazy load"), 0);
}

fn temp(name: &str) -> std::path::PathBuf {
    test_support::temp_path("vmm-sample-test", name)
}

#[test]
fn a_pending_lcofi_and_the_sampling_state_survive_a_snapshot() {
    let (exit, stats, want) = run(&config());
    passes(&exit, &want);
    // The guest spins about two million instructions with the LCOFI pending, then prints
    // little: a stop one million instructions before the end is inside the spin.
    let at = stats.instructions - 1_000_000;
    let path = temp("pending");
    let out = SharedBuf::default();
    let mut c = config();
    c.max_insns = Some(at);
    let mut vm = GuestVm::new(&c, Box::new(out.clone())).unwrap();
    let end = vm.run().unwrap();
    assert!(matches!(end, RunExit::BudgetExhausted { .. }), "{end:?}");
    vm.write_snapshot(&path).unwrap();
    let before = out.text();
    assert!(before.contains("pending: armed sip 0x2000 "), "{before}");
    assert!(!before.contains("pending: delivered"), "{before}");

    let out = SharedBuf::default();
    let options = RestoreConfig {
        max_insns: Some(BUDGET),
        ..RestoreConfig::default()
    };
    let (exit, _) = restore_and_run(&path, &options, Box::new(out.clone()), ConsoleInput::None)
        .unwrap_or_else(|e| panic!("restore: {e}"));
    let _ = std::fs::remove_file(&path);
    let after = out.text();
    assert!(after.starts_with("pending: delivered"), "{after}");
    assert_eq!(exit.exit_code(), 0, "{after}");
    // Identical to the run straight through: the LCOFI arrives where it did, with the same
    // sample, record and counter.
    assert_eq!(format!("{before}{after}"), want);
}

/// Two vCPUs take samples on the same counter index and their own PDIS configuration, then
/// spin with an LCOFI pending; each checks its state is its own.
fn smp(pcpus: Option<u64>, slice: u64) -> (RunStats, String) {
    smp_with(pcpus, slice, |_| {})
}

fn smp_with(pcpus: Option<u64>, slice: u64, tweak: impl Fn(&mut RunConfig)) -> (RunStats, String) {
    let mut c = RunConfig::new(guest("sbi_pmu_sample_smp"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c.vcpus = 2;
    c.pcpus = pcpus;
    c.slice_insns = slice;
    tweak(&mut c);
    let (exit, stats, out) = run(&c);
    assert!(!out.contains("FAIL"), "failures:\n{out}");
    assert!(out.ends_with("sbi_pmu_sample_smp: PASS\n"), "{out}");
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{out}");
    // One lazy PDIS load per vCPU.
    assert_eq!(
        stats.exits.get("pdis lazy load"),
        2,
        "{}",
        stats.exits.table()
    );
    (stats, out)
}

#[test]
fn each_vcpu_has_its_own_sample_and_pdis_state() {
    let (_, alone) = smp(None, vmm::run::DEFAULT_SLICE_INSNS);
    for slice in [300, 5_000] {
        let (stats, out) = smp(Some(1), slice);
        assert_eq!(out, alone, "slice {slice}");
        // The spins (400 000 instructions each) were cut into many slices.
        assert!(
            stats.switches[0] > 100_000 / slice,
            "slice {slice}: {:?}",
            stats.switches
        );
    }
}

/// With selective LCOFI delivery the VMM clears the hart's `mip.LCOFIP` on every overflow it
/// passes on, so the hart captures every overflow; the guest still sees the sample of the
/// overflow that made its (virtual) LCOFI pending, which the VMM latched (the guest's "second
/// overflow while pending keeps the first sample" checks), and the rest of its checks pass.
#[test]
fn samples_are_latched_with_selective_delivery() {
    let mut c = config();
    c.lcofi_delivery = pmu_virt::LcofiDelivery::Selective;
    let (exit, stats, out) = run(&c);
    passes(&exit, &out);
    assert!(
        stats.exits.get("interrupt LCOFI to guest (hvip)") > 0,
        "{}",
        stats.exits.table()
    );
}

/// The same two vCPUs with selective LCOFI delivery, on one hart instance: each vCPU's
/// latched sample and pending virtual LCOFI (`hvip`) travel with it. With counter delegation
/// too, everything but the PDIS record's HPM bits is the same (those name hart counters,
/// and the guest reads the record without an exit: documented in `docs/pmu-virt.md`).
#[test]
fn selective_delivery_and_delegation_survive_vcpu_switches() {
    let (_, alone) = smp(None, vmm::run::DEFAULT_SLICE_INSNS);
    let selective = |c: &mut RunConfig| c.lcofi_delivery = pmu_virt::LcofiDelivery::Selective;
    let (_, own) = smp_with(None, vmm::run::DEFAULT_SLICE_INSNS, selective);
    assert_eq!(own, alone);
    let (stats, shared) = smp_with(Some(1), 300, selective);
    assert_eq!(shared, alone);
    assert!(
        stats.exits.get("interrupt LCOFI to guest (hvip)") > 0,
        "{}",
        stats.exits.table()
    );
    // Delegation: the moved counters' scountovf (PDIS bit 1 included) and samples are the
    // guest's; only the record's HPM3 bit differs (hart counter 31 counted the loads).
    let mut c = RunConfig::new(guest("sbi_pmu_sample_smp"));
    c.memory_mib = 32;
    c.max_insns = Some(BUDGET);
    c.vcpus = 2;
    c.pcpus = Some(1);
    c.slice_insns = 300;
    c.pmu_deleg = true;
    c.lcofi_delivery = pmu_virt::LcofiDelivery::Selective;
    let (_, stats, out) = run(&c);
    let hpm = "FAIL   pdishdrev: load, HPM3 = 0x1, want 0x9";
    assert_eq!(out.matches("FAIL").count(), 2, "{out}");
    assert_eq!(out.matches(hpm).count(), 2, "{out}");
    // scountovf went to the delegation's emulation (with the PDIS bit).
    assert_eq!(
        stats.exits.get("pmu-deleg scountovf"),
        2,
        "{}",
        stats.exits.table()
    );
}
