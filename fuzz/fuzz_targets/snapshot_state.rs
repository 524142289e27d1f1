//! The state part of a snapshot file (the encoded `VmState`), wrapped in a complete file
//! with 1 MiB of zero RAM (no page record) and a correct CRC, so every input reaches the
//! state decoder and, when it decodes, the restore's checks. Seed it with
//! `vmm/tests/snapshot-state-corpus/seed.state`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vmm::run::snapshot::RestoreConfig;
use vmm::run::GuestVm;

fuzz_target!(|body: &[u8]| {
    let mut f = Vec::with_capacity(body.len() + 48);
    f.extend_from_slice(&vmm::snapshot::MAGIC);
    f.extend_from_slice(&vmm::snapshot::VERSION.to_le_bytes());
    f.extend_from_slice(&(body.len() as u64).to_le_bytes());
    f.extend_from_slice(body);
    f.extend_from_slice(&(1u64 << 20).to_le_bytes());
    // No page record (1 MiB of zero RAM), and their count.
    f.extend_from_slice(&0u64.to_le_bytes());
    let crc = crc32fast::hash(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    if let Ok(snap) = vmm::snapshot::decode(&f) {
        let _ = GuestVm::from_snapshot(snap, &RestoreConfig::default(), Box::new(std::io::sink()));
    }
});
