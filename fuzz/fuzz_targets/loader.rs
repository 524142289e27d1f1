//! A kernel file (ELF or Linux `Image`) loaded into 8 MiB of guest RAM; anything loaded
//! must have an even entry inside the loaded span, and the span inside RAM. Seed it with
//! `vmm/tests/loader-corpus/`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vm_memory::{GuestAddress, GuestMemoryMmap};

const RAM: u64 = 0x8000_0000;
const RAM_SIZE: u64 = 8 << 20;

fuzz_target!(|data: &[u8]| {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM), RAM_SIZE as usize)])
        .expect("8 MiB of guest RAM");
    if let Ok(k) = vmm::run::kernel::load_kernel(data, &mem, RAM..RAM + RAM_SIZE) {
        assert!(k.entry % 2 == 0 && k.span.contains(&k.entry));
        assert!(k.span.start >= RAM && k.span.end <= RAM + RAM_SIZE);
    }
});
