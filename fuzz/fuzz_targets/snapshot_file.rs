//! A whole snapshot file: `vmm::snapshot::decode`, then, if it decodes, the restore's
//! checks (`GuestVm::from_snapshot`, which builds the VM without running it). Most inputs
//! stop at the checksum; `snapshot_state` reaches past it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vmm::run::snapshot::RestoreConfig;
use vmm::run::GuestVm;

fuzz_target!(|data: &[u8]| {
    if let Ok(snap) = vmm::snapshot::decode(data) {
        let _ = GuestVm::from_snapshot(snap, &RestoreConfig::default(), Box::new(std::io::sink()));
    }
});
