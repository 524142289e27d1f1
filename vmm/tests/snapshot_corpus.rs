//! Every file in `tests/snapshot-corpus/` (seeds and inputs saved by the fuzzer,
//! `cargo run --release -p vmm --example fuzz_snapshot`) goes through the snapshot parser
//! without a panic, and is refused with a message. Those stop at the magic, the version,
//! the lengths or the checksum; `tests/snapshot-state-corpus/` (below) holds states that
//! get past all of them, each replayed to the outcome recorded for it.

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

// ---------------------------------------------------------------------------------------
// States past the version and the checksum (issue 18, item 7).
//
// `tests/snapshot-state-corpus/seed.state` is the *state* part of a snapshot file (the
// bincode-encoded `VmState`) and each `*.patch` a change of it (text: `at OFFSET HEX` lines
// overwrite bytes, a `splice PREFIX SUFFIX HEX` line keeps PREFIX bytes from the start
// and SUFFIX from the end and puts HEX between them); the replay wraps each in a complete file (magic,
// version, lengths, 1 MiB of RAM, a correct CRC), so every input reaches the state decoder
// and, when it decodes, the restore's checks and the guest run. `EXPECTED` names what each
// must come to: `snapshot:<SnapshotError variant>`, `field:<the field a RestoreError
// names>`, `error:<Error variant>` or `ran:<RunExit variant>` (restored and run for 5,000
// instructions). The seeds are a two-vCPU VM (one started, its CTR context loaded, PMU
// snapshot memory set; one stopped) unchanged and with targeted changes; the rest are
// random mutations of it, a few per outcome. Regenerate with
// `REGENERATE_CORPUS=1 cargo test --release -p vmm --test snapshot_corpus`.

use std::path::{Path, PathBuf};
use test_support::XorShift;

mod common;

const STATE_CORPUS: &str = "tests/snapshot-state-corpus";

fn state_corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(STATE_CORPUS)
}

/// A complete snapshot file around the encoded state `body`, with 1 MiB of zero RAM.
fn wrap(body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&vmm::snapshot::MAGIC);
    f.extend_from_slice(&vmm::snapshot::VERSION.to_le_bytes());
    f.extend_from_slice(&(body.len() as u64).to_le_bytes());
    f.extend_from_slice(body);
    f.extend_from_slice(&(1u64 << 20).to_le_bytes());
    // No page record (1 MiB of zero RAM), and their count.
    f.extend_from_slice(&0u64.to_le_bytes());
    let crc = crc32fast::hash(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

/// The name of an enum value's variant (from its `Debug` form).
fn variant(debug: &str) -> String {
    debug
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_string()
}

/// What restoring the file at `path` comes to (see the section's documentation).
fn outcome(path: &Path) -> String {
    use vmm::run::snapshot::{restore_and_run, RestoreConfig, RestoreError};
    let options = RestoreConfig {
        max_insns: Some(5_000),
        timeout: Some(std::time::Duration::from_secs(10)),
        ..RestoreConfig::default()
    };
    let result = restore_and_run(
        path,
        &options,
        Box::new(std::io::sink()),
        vmm::run::ConsoleInput::None,
    );
    match result {
        Ok((exit, _)) => format!("ran:{}", variant(&format!("{exit:?}"))),
        Err(vmm::Error::Snapshot(e)) => {
            assert!(!e.to_string().is_empty());
            format!("snapshot:{}", variant(&format!("{e:?}")))
        }
        Err(vmm::Error::RestoreField(RestoreError::VcpuField { field, .. })) => {
            format!("field:{field}")
        }
        Err(e) => {
            assert!(!e.to_string().trim().is_empty(), "{e:?}");
            format!("error:{}", variant(&format!("{e:?}")))
        }
    }
}

fn temp(name: &str) -> PathBuf {
    test_support::temp_path("vmm-state-corpus", name)
}

#[test]
fn state_corpus_reaches_the_restore_checks_and_ends_as_recorded() {
    let dir = state_corpus_dir();
    let expected = std::fs::read_to_string(dir.join("EXPECTED")).unwrap();
    let seed = std::fs::read(dir.join("seed.state")).unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    let mut n = 0;
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        let (name, want) = line.split_once(' ').expect("NAME OUTCOME");
        let body = if name.ends_with(".patch") {
            apply(&seed, &std::fs::read_to_string(dir.join(name)).unwrap())
        } else {
            std::fs::read(dir.join(name)).unwrap()
        };
        let path = temp(name);
        let file = wrap(&body);
        std::fs::write(&path, &file).unwrap();
        let got = outcome(&path);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            file,
            "{name}: the file changed"
        );
        let _ = std::fs::remove_file(&path);
        assert_eq!(got, want, "{name}");
        kinds.insert(got.split(':').next().unwrap().to_string());
        n += 1;
    }
    assert!(n >= 20, "the corpus lost files: {n}");
    // Every stage past the checksum is reached: the decoder, the restore checks, the run.
    for k in ["snapshot", "field", "ran"] {
        assert!(kinds.contains(k), "no input ends in {k}: {kinds:?}");
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(h: &str) -> Vec<u8> {
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// `seed` changed by `patch` (see the section's documentation).
fn apply(seed: &[u8], patch: &str) -> Vec<u8> {
    let mut b = seed.to_vec();
    for line in patch.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w[..] {
            ["at", off, h] => {
                let off: usize = off.parse().unwrap();
                let bytes = unhex(h);
                b[off..off + bytes.len()].copy_from_slice(&bytes);
            }
            ["splice", pre, suf, ref h @ ..] if h.len() <= 1 => {
                let h = h.first().copied().unwrap_or("");
                let (pre, suf): (usize, usize) = (pre.parse().unwrap(), suf.parse().unwrap());
                let mut out = b[..pre].to_vec();
                out.extend(unhex(h));
                out.extend_from_slice(&b[b.len() - suf..]);
                b = out;
            }
            _ => panic!("bad patch line {line:?}"),
        }
    }
    b
}

/// The patch that makes `seed` into `b`.
fn diff(seed: &[u8], b: &[u8]) -> String {
    if seed.len() == b.len() {
        let mut out = String::new();
        let mut i = 0;
        while i < b.len() {
            if seed[i] == b[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && seed[i] != b[i] {
                i += 1;
            }
            out += &format!("at {start} {}\n", hex(&b[start..i]));
        }
        return out;
    }
    let pre = seed.iter().zip(b).take_while(|(x, y)| x == y).count();
    let max_suf = seed.len().min(b.len()) - pre;
    let suf = seed
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suf)
        .take_while(|(x, y)| x == y)
        .count();
    format!("splice {pre} {suf} {}\n", hex(&b[pre..b.len() - suf]))
}

/// The seed state: a two-vCPU VM whose hart 0 set PMU snapshot memory, touched CTR, and
/// spins; hart 1 stopped.
fn seed_state() -> Vec<u8> {
    use vmm::run::{GuestVm, RunConfig};
    const A0: u32 = 10;
    const A6: u32 = 16;
    const A7: u32 = 17;
    let addi = |rd: u32, rs1: u32, imm: i32| {
        (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (rd << 7) | 0x13
    };
    let slli = |rd: u32, rs1: u32, sh: u32| (sh << 20) | (rs1 << 15) | (1 << 12) | (rd << 7) | 0x13;
    let lui = |rd: u32, imm: u32| (imm << 12) | (rd << 7) | 0x37;
    let code = vec![
        // a0 = RAM base + 0x8000: the PMU snapshot page (snapshot_set_shmem).
        addi(A0, 0, 1),
        slli(A0, A0, 31),
        lui(A0 + 1, 8),
        0x00b5_0533, // add a0, a0, a1
        addi(A0 + 1, 0, 0),
        addi(A0 + 2, 0, 0),
        lui(A7, 0x505),
        addi(A7, A7, 0xd55),
        addi(A6, 0, 7),
        0x0000_0073, // ecall
        0x1400_2573, // csrr a0, sscratch
        0x14f0_2573, // csrr a0, sctrstatus (loads the CTR context)
        0x0000_006f, // j .
    ];
    let elf = temp("seed.elf");
    std::fs::write(&elf, common::elf(&code)).unwrap();
    let mut config = RunConfig::new(&elf);
    config.memory_mib = 1;
    config.vcpus = 2;
    config.pmu_snapshot = true;
    config.max_insns = Some(1_000);
    let mut vm = GuestVm::new(&config, Box::new(std::io::sink())).unwrap();
    let exit = vm.run().unwrap();
    assert!(
        matches!(exit, vmm::run::RunExit::BudgetExhausted { .. }),
        "{exit:?}"
    );
    let state = vm.snapshot_state();
    let _ = std::fs::remove_file(&elf);
    assert!(
        state.vcpus[0].pmu.shmem.is_some(),
        "the seed sets PMU snapshot memory"
    );
    assert!(state.vcpus[0].ctr.loaded, "the seed loads its CTR context");
    let mut out = Vec::new();
    vmm::snapshot::encode_into(&state, &[], &mut out).unwrap();
    let len = u64::from_le_bytes(out[12..20].try_into().unwrap()) as usize;
    out[20..20 + len].to_vec()
}

/// Writes the state corpus and its `EXPECTED` (the outcomes as they are now: review the
/// diff before committing).
/// The committed corpus is exactly what [`write_corpus`] writes (see
/// `common::check_generated`; `REGENERATE_CORPUS=1` rewrites it).
#[test]
fn corpus_is_what_its_generator_writes() {
    common::check_generated(&state_corpus_dir(), write_corpus);
}

fn write_corpus(dir: &Path) {
    use vmm::snapshot::VmState;
    // Its own temporary files: the replay test runs beside it in this process.
    let temp = |name: &str| temp(&format!("gen-{name}"));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let base = seed_state();
    let decode = |b: &[u8]| -> VmState {
        let path = temp("decode");
        std::fs::write(&path, wrap(b)).unwrap();
        let s = vmm::snapshot::read(&path).unwrap().state;
        let _ = std::fs::remove_file(&path);
        s
    };
    let encode = |s: &VmState| -> Vec<u8> {
        let mut out = Vec::new();
        vmm::snapshot::encode_into(s, &[], &mut out).unwrap();
        let len = u64::from_le_bytes(out[12..20].try_into().unwrap()) as usize;
        out[20..20 + len].to_vec()
    };
    let s0 = decode(&base);
    let mut inputs: Vec<(String, Vec<u8>)> = vec![("seed.state".into(), base.clone())];
    type Change = Box<dyn Fn(&mut VmState)>;
    let targeted: Vec<(&str, Change)> = vec![
        (
            "skipped-beyond-clock",
            Box::new(|s| s.vcpus[0].hart.skipped = s.vcpus[0].hart.vclock + 1),
        ),
        ("pc-odd", Box::new(|s| s.vcpus[0].hart.pc |= 1)),
        ("prv-hs", Box::new(|s| s.vcpus[0].hart.virt = false)),
        (
            "shmem-outside-ram",
            Box::new(|s| s.vcpus[0].pmu.shmem = Some(0x9000_0000)),
        ),
        (
            "shmem-misaligned",
            Box::new(|s| s.vcpus[0].pmu.shmem = Some(0x8000_8008)),
        ),
        ("memory-mib-2", Box::new(|s| s.memory_mib = 2)),
        (
            "memory-mib-overflow",
            Box::new(|s| s.memory_mib = (1 << 44) + 4),
        ),
        ("hsm-7", Box::new(|s| s.vcpus[1].hsm = 7)),
        (
            "ctr-context-depth-5",
            Box::new(|s| s.vcpus[0].ctr.context.depth = 5),
        ),
        // A loaded context is the guest's even if the flag says it never touched CTR.
        (
            "ctr-untouched-loaded",
            Box::new(|s| s.vcpus[0].ctr.touched = false),
        ),
        ("stopped-and-idle", Box::new(|s| s.vcpus[1].idle = Some(5))),
        ("hart-id-swapped", Box::new(|s| s.vcpus[1].hart.hart_id = 0)),
        ("no-vcpu", Box::new(|s| s.vcpus.clear())),
        (
            "pmu-counters-short",
            Box::new(|s| s.vcpus[0].pmu.counters.truncate(3)),
        ),
        (
            "uart-in-buffer-65",
            Box::new(|s| s.uart.in_buffer = vec![0; 65]),
        ),
        (
            "vcpu1-started-pending",
            Box::new(|s| {
                s.vcpus[1].hsm = 2;
                s.vcpus[1].start = (u64::MAX, 0);
            }),
        ),
    ];
    for (name, change) in targeted {
        let mut s = s0.clone();
        change(&mut s);
        inputs.push((format!("seed-{name}.patch"), encode(&s)));
    }
    // Random mutations, at most three per outcome.
    let mut rng = XorShift(0x5eed_c0de);
    let mut next = move || rng.next();
    let mut per_kind = std::collections::BTreeMap::<String, usize>::new();
    let mut lines = Vec::new();
    for (name, body) in &inputs {
        let path = temp(name);
        std::fs::write(&path, wrap(body)).unwrap();
        let got = outcome(&path);
        let _ = std::fs::remove_file(&path);
        if name.ends_with(".patch") {
            let patch = diff(&base, body);
            assert_eq!(&apply(&base, &patch), body);
            std::fs::write(dir.join(name), patch).unwrap();
        } else {
            std::fs::write(dir.join(name), body).unwrap();
        }
        lines.push(format!("{name} {got}"));
        *per_kind.entry(got).or_default() += 1;
    }
    let mut kept = 0;
    for i in 0..400 {
        let mut b = base.clone();
        for _ in 0..1 + next() % 3 {
            let at = (next() % b.len() as u64) as usize;
            match next() % 3 {
                0 => b[at] ^= 1 << (next() % 8),
                1 => b[at] = next() as u8,
                _ => {
                    let at = at & !7;
                    if at + 8 <= b.len() {
                        let v = [0, u64::MAX, 1 << 63, next(), 1 << 32][(next() % 5) as usize];
                        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        let path = temp("mutant");
        std::fs::write(&path, wrap(&b)).unwrap();
        let got = outcome(&path);
        let _ = std::fs::remove_file(&path);
        let n = per_kind.entry(got.clone()).or_default();
        if *n >= 3 {
            continue;
        }
        *n += 1;
        let name = format!("mutant-{i:03}.patch");
        let patch = diff(&base, &b);
        assert_eq!(apply(&base, &patch), b);
        std::fs::write(dir.join(&name), patch).unwrap();
        lines.push(format!("{name} {got}"));
        kept += 1;
    }
    lines.push(String::new());
    std::fs::write(dir.join("EXPECTED"), lines.join("\n")).unwrap();
    eprintln!("{} seeds, {kept} mutants: {per_kind:?}", inputs.len());
}
