//! Fuzz the snapshot parser: `cargo run --release -p vmm --example fuzz_snapshot [SECONDS]`.
//!
//! Starts from a valid snapshot and mutates it (bit flips, random bytes, truncation,
//! insertion, and corruption of the encoded state with the checksum recomputed, so that the
//! state decoder itself is exercised), for SECONDS (default 180). Every input that makes
//! `vmm::snapshot::decode` panic is written to `vmm/tests/snapshot-corpus/` (replayed by
//! `vmm/tests/snapshot_corpus.rs`), and the run fails. The corpus's seed files are kept
//! there too.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};
use test_support::XorShift;

fn seed() -> Vec<u8> {
    use vm_memory::{GuestAddress, GuestMemoryMmap};
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(0x8000_0000), 1 << 16)]).unwrap();
    let hart = vcpu::Hart::new_guest(vcpu::HartConfig::default(), mem).unwrap();
    let policy = ctr_virt::CtrPolicy::on(None, Some(&vcpu::ctr::CtrConfig::full())).unwrap();
    let state = vmm::snapshot::VmState {
        memory_mib: 1,
        layout: vmm::snapshot::LayoutState {
            entry: 0x8020_0000,
            kernel: (0x8020_0000, 0x8021_0000),
            initrd: None,
            fdt: 0x8010_0000,
        },
        trap_wfi: false,
        trap_time: false,
        trap_sret: false,
        trap_vm: false,
        sstc: false,
        vcpus: vec![vmm::snapshot::VcpuState {
            hart: hart.save_state(),
            ctr: ctr_virt::GuestCtr::new(policy).snapshot(),
            pmu: pmu_virt::GuestPmu::new(pmu_virt::PmuPolicy::on(), 0, pmu_virt::FwTallies::new(1))
                .snapshot(),
            hsm: 0,
            start: (0, 0),
            idle: None,
            ipi_posted: false,
        }],
        clock: 0,
        uart: vmm::devices::uart::UartState {
            registers: [1, 0, 0, 1, 3, 0x60, 8, 0, 0],
            in_buffer: vec![],
        },
        input: vec![],
        host_clock: false,
        // The AIA devices, so that mutations reach them too.
        aia: Some(vmm::snapshot::AiaState {
            aplic: vmm::devices::aplic::Aplic::new(),
            msis: vec![vec![0; vcpu_api::MAILBOX_MSI_IDS / 64]],
        }),
    };
    let mut out = Vec::new();
    // A few non-zero pages, so that mutations reach the page records.
    let mut ram = vec![0u8; 1 << 20];
    ram[4096..8192].fill(0xa5);
    ram[0x8_0000] = 1;
    vmm::snapshot::encode_into(&state, &ram, &mut out).unwrap();
    out
}

fn main() {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    let base = seed();
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshot-corpus");
    let state_end = 20 + u64::from_le_bytes(base[12..20].try_into().unwrap()) as usize;
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut next = move || rng.next();
    let end = Instant::now() + Duration::from_secs(secs);
    let (mut runs, mut crashes) = (0u64, 0u64);
    // Silence the parser's panics (they are caught and saved); anything else still aborts
    // the run with a message.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_parser = std::thread::current().name() == Some("main")
            && info
                .location()
                .is_some_and(|l| !l.file().contains("fuzz_snapshot"));
        if !in_parser {
            default_hook(info);
        }
    }));
    while Instant::now() < end {
        let mut v = base.clone();
        for _ in 0..1 + next() % 4 {
            if v.is_empty() {
                break;
            }
            match next() % 6 {
                0 => {
                    let i = next() as usize % v.len();
                    v[i] ^= 1 << (next() % 8);
                }
                1 => {
                    let i = next() as usize % state_end.min(v.len()).max(1);
                    v[i] = next() as u8;
                }
                2 => v.truncate(next() as usize % v.len()),
                3 => {
                    let i = next() as usize % v.len();
                    v.insert(i, next() as u8);
                }
                _ => {
                    // Corrupt the state, keep the lengths and fix the checksum.
                    if v.len() >= state_end + 12 {
                        let i = 20 + next() as usize % (state_end - 20);
                        v[i] = next() as u8;
                        let n = v.len() - 4;
                        let crc = crc32fast::hash(&v[..n]).to_le_bytes();
                        v[n..].copy_from_slice(&crc);
                    }
                }
            }
        }
        runs += 1;
        if catch_unwind(AssertUnwindSafe(|| vmm::snapshot::decode(&v))).is_err() {
            crashes += 1;
            let path = corpus.join(format!("crash-{runs}.bin"));
            std::fs::write(&path, &v).unwrap();
            eprintln!("panic: input saved to {}", path.display());
        }
    }
    println!("fuzz_snapshot: {runs} inputs in {secs} s, {crashes} panics");
    if crashes > 0 {
        std::process::exit(1);
    }
}
