//! The built-in CTR self-test guest of `vmm run` (no `--kernel`): it is the build of its
//! source, and it passes.

use object::{Object, ObjectSegment};
use vmm::run::{run_kernel, ConsoleInput, RunConfig, CTR_DEMO_GUEST};
use vmm_tests::{guest, SharedBuf};

/// Entry point and loadable segments (address, size in memory, file bytes).
fn loadable(elf: &[u8]) -> (u64, Vec<(u64, u64, Vec<u8>)>) {
    let f = object::File::parse(elf).expect("an ELF file");
    let segs = f
        .segments()
        .map(|s| (s.address(), s.size(), s.data().unwrap().to_vec()))
        .collect();
    (f.entry(), segs)
}

#[test]
fn embedded_guest_is_the_build_of_its_source() {
    let built = std::fs::read(guest("sbi_ctr_demo")).unwrap();
    assert!(
        loadable(CTR_DEMO_GUEST) == loadable(&built),
        "vmm/guest/ctr-demo.elf is not the build of tests/guests/sbi_ctr_demo.c (its loadable \
         segments or entry differ): run scripts/update-ctr-demo.sh and commit the result"
    );
}

#[test]
fn vmm_run_without_a_kernel_runs_the_ctr_self_test() {
    let out = SharedBuf::default();
    let mut config = RunConfig::ctr_demo();
    config.max_insns = Some(10_000_000);
    let (exit, stats) = run_kernel(&config, Box::new(out.clone()), ConsoleInput::None)
        .unwrap_or_else(|e| panic!("vmm: {e}\n{}", out.text()));
    let text = out.text();
    assert_eq!(exit.exit_code(), 0, "{exit:?}\n{text}");
    assert!(text.contains("transfers recorded (WRPTR"), "{text}");
    assert!(
        text.contains("vu_task+0x4 -> trap_entry+0x0  exception"),
        "{text}"
    );
    assert!(text.ends_with("0 failures: PASS\n"), "{text}");
    assert_eq!(stats.exits.get("ctr lazy load"), 1);
}
