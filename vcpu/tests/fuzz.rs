//! Hostile instruction streams: random words executed in every privilege mode must never
//! panic the host (the test profile keeps overflow checks on), and every exit must be one
//! of the documented ones. A fixed-seed xorshift generator keeps the runs reproducible.

use test_support::XorShift;
use vcpu::{Hart, HartConfig, MmioRange, Vcpu, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const RAM_BASE: u64 = 0x8000_0000;
const RAM_SIZE: usize = 1 << 20;

/// Words biased towards real opcodes so that execution gets past the first instruction.
fn random_word(rng: &mut XorShift) -> u32 {
    let r = rng.next();
    match r % 4 {
        0 => r as u32 >> 3 << 2 | 3, // some 32-bit encoding
        1 => (r >> 16) as u32,       // anything, often compressed
        2 => {
            // SYSTEM / CSR with a CSR number from the implemented ranges
            let csr = [
                0x300u32, 0x180, 0x305, 0x344, 0x304, 0x100, 0x003, 0xc00, 0x320, 0xb02,
            ][(r >> 8) as usize % 10];
            (csr << 20) | (((r >> 20) as u32 & 0x1f) << 15) | (((r >> 26) as u32 & 7) << 12) | 0x73
        }
        _ => {
            // loads/stores/AMOs around RAM and devices
            let ops = [0x03u32, 0x23, 0x2f, 0x07, 0x27];
            (r as u32 & 0xffff_ff80) | ops[(r >> 40) as usize % ops.len()]
        }
    }
}

fn run_seed(seed: u64, hosted: bool) {
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM_BASE), RAM_SIZE)]).unwrap();
    let mut rng = XorShift(seed | 1);
    let mut code = vec![0u8; 64 * 1024];
    for chunk in code.chunks_mut(4) {
        chunk.copy_from_slice(&random_word(&mut rng).to_le_bytes());
    }
    mem.write_slice(&code, GuestAddress(RAM_BASE)).unwrap();
    let config = HartConfig {
        mmio: vec![MmioRange {
            base: 0x1000_0000,
            size: 0x100,
        }],
        ..HartConfig::default()
    };
    let mut hart = if hosted {
        Hart::new_guest(config, mem)
    } else {
        Hart::new(config, mem)
    }
    .unwrap();
    // Traps land somewhere in the random code; registers point into RAM so memory accesses
    // hit RAM, devices and holes alike.
    for r in 1..32 {
        let v = match rng.next() % 3 {
            0 => RAM_BASE + rng.next() % RAM_SIZE as u64,
            1 => 0x1000_0000 + rng.next() % 0x100,
            _ => rng.next(),
        };
        hart.set_xreg(r, v);
    }
    hart.set_pc(RAM_BASE);
    let mut exits = 0;
    let mut executed = 0u64;
    while executed < 200_000 && exits < 10_000 {
        let before = hart.executed();
        // Trap loops outside the code (mtvec is random too) would test only one path: put
        // the hart back somewhere in the random code now and then.
        if !(RAM_BASE..RAM_BASE + code.len() as u64).contains(&hart.pc())
            || rng.next().is_multiple_of(2)
        {
            hart.set_pc(RAM_BASE + ((rng.next() % code.len() as u64) & !1));
        }
        match hart.run(2_000) {
            VcpuExit::Mmio(acc) => {
                assert!(
                    acc.addr >= 0x1000_0000 && acc.addr < 0x1000_0100,
                    "MMIO exit outside the device: {acc:?}"
                );
                assert!(matches!(acc.size, 1 | 2 | 4 | 8));
                assert_eq!(
                    acc.addr % acc.size as u64,
                    0,
                    "misaligned device access must fault, not exit"
                );
                if acc.write.is_none() {
                    hart.complete_mmio_read(rng.next());
                }
                exits += 1;
            }
            VcpuExit::Wfi => {
                hart.skip_to_timer();
                exits += 1;
            }
            VcpuExit::BudgetExhausted => {}
            VcpuExit::StopRequested => panic!("nobody asked to stop"),
            VcpuExit::DebugPoint(h) => panic!("no debugger point is set: {h:?}"),
            VcpuExit::GuestTrap(t) => {
                assert!(hosted, "only a hosted hart reports guest traps");
                // Like a VMM: emulate (skip) ECALLs, redirect everything else.
                if t.cause == 10 {
                    hart.set_pc(t.pc.wrapping_add(4));
                } else {
                    hart.inject_exception(t.cause.min(15), t.tval);
                }
                exits += 1;
            }
            VcpuExit::HostInterrupt(_) => {
                assert!(hosted, "only a hosted hart reports HS-level interrupts");
                // Like a VMM that keeps nothing pending: clear sip.
                hart.set_host_csr(0x144, 0).unwrap();
                exits += 1;
            }
        }
        executed += hart.executed() - before;
        // Whatever happened, pc stays 2-byte aligned (IALIGN = 16).
        assert_eq!(hart.pc() & 1, 0);
    }
}

#[test]
fn random_instruction_streams_never_panic_the_host() {
    for seed in 1..=40u64 {
        run_seed(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), false);
    }
}

#[test]
fn random_instruction_streams_in_a_hosted_guest_never_panic_the_host() {
    for seed in 1..=40u64 {
        run_seed(seed.wrapping_mul(0x2545_f491_4f6c_dd1d), true);
    }
}
