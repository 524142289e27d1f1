//! Round-trip cost of a VS-mode virtual-instruction exit that the VMM emulates.
//!
//! The guest runs a loop of N trapping CSR reads (`csrr t0, hstatus` from VS-mode raises a
//! virtual-instruction exception, which exits to the VMM). The "VMM" here does what an
//! emulating hypervisor does: decode the destination register from the exit's instruction
//! bits, write the emulated value, and resume past the instruction. The figure is wall time
//! per exit, including the guest's loop instructions (three per iteration).
//!
//! Run: `cargo bench -p vcpu --bench exit_roundtrip` (release profile).

use std::time::Instant;

use test_support::rv64;
use vcpu::{Hart, HartConfig, Vcpu, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const RAM_BASE: u64 = 0x8000_0000;

fn main() {
    let exits: u64 = std::env::args()
        .filter_map(|a| a.parse().ok())
        .next()
        .unwrap_or(5_000_000);
    let mem = GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM_BASE), 1 << 20)])
        .expect("guest RAM");
    // loop: csrr t0, hstatus; addi t1, t1, 1; j loop
    let csrr_t0_hstatus = rv64::csrr(5, 0x600);
    let addi_t1 = rv64::addi(6, 6, 1);
    let j_back = rv64::jal(0, -8);
    for (i, w) in [csrr_t0_hstatus, addi_t1, j_back].iter().enumerate() {
        mem.write_obj(*w, GuestAddress(RAM_BASE + 4 * i as u64))
            .expect("write code");
    }
    let mut hart = Hart::new_guest(HartConfig::default(), mem).expect("hart");
    hart.set_pc(RAM_BASE);
    roundtrip(&mut hart, exits);
}

/// Drive any [`Vcpu`] the way a VMM does: emulate each virtual-instruction exit.
fn roundtrip(hart: &mut impl Vcpu, exits: u64) {
    let start = Instant::now();
    let mut n = 0;
    while n < exits {
        match hart.run(1 << 20) {
            VcpuExit::GuestTrap(t) if t.cause == 22 => {
                let rd = ((t.insn >> 7) & 31) as usize;
                hart.set_xreg(rd, 0x2_0000_0000); // the emulated hstatus value
                hart.set_pc(t.pc + 4);
                n += 1;
            }
            other => panic!("unexpected exit {other:?}"),
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(
        hart.xreg(6),
        exits - 1,
        "every exit but the last was followed by the rest of the loop"
    );
    let ns = elapsed.as_nanos() as f64 / exits as f64;
    println!("exit round trip: {exits} emulated virtual-instruction exits in {:.3} s: {ns:.1} ns per exit", elapsed.as_secs_f64());
}
