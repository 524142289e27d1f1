//! Every file in `tests/snapshot-corpus/` (seeds and inputs saved by the fuzzer,
//! `cargo run --release -p vmm --example fuzz_snapshot`) goes through the snapshot parser
//! without a panic, and is refused with a message.

#[test]
fn corpus_inputs_are_refused_without_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshot-corpus");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let e = vmm::snapshot::decode(&bytes)
            .err()
            .unwrap_or_else(|| panic!("{} decodes", path.display()));
        assert!(!e.to_string().is_empty());
        n += 1;
    }
    assert!(n >= 3, "the corpus lost its seed files");
}
