//! Performance monitoring per hart configuration: the draft extensions' CSR numbers and
//! `mstateen0` bit can be moved (`PmuConfig::numbers`), and impossible choices are refused.
//! The behaviour itself is checked by the guests `pmu_*` (`tests/tests/pmu.rs`).

mod common;
use common::*;
use vcpu::pmu::{DraftNumbers, PmuConfig};
use vcpu::{Hart, HartConfig};
use vm_memory::{GuestAddress, GuestMemoryMmap};

fn vm(numbers: DraftNumbers) -> Vm {
    Vm::with_config(HartConfig {
        pmu: PmuConfig { numbers },
        ..HartConfig::default()
    })
}

#[test]
fn draft_csrs_follow_the_configured_numbers() {
    let numbers = DraftNumbers {
        mpdisctl: 0x7d0,
        shpmspc: 0x5d0,
        stateen_pdis_bit: 40,
        ..DraftNumbers::PROVISIONAL
    };
    // mpdisctl at its new number holds M | SEL = 1; at the provisional one it is gone.
    let mut v = vm(numbers);
    v.set_x(5, (1 << 62) | 1);
    v.exec(&[csrrw(0, 0x7d0, 5), csrr(10, 0x7d0), csrr(11, 0x5d0)]);
    assert_eq!(v.x(10), (1 << 62) | 1);
    assert_eq!(v.x(11), 0, "shpmspc at 0x5d0");
    let mut v = vm(numbers);
    assert_eq!(v.exec_trap(&[csrr(10, 0x7c0)]).cause, 2, "0x7c0 moved away");
    let mut v = vm(numbers);
    assert_eq!(v.exec_trap(&[csrr(10, 0x5c0)]).cause, 2, "0x5c0 moved away");
    // The other draft CSRs stay at their provisional numbers; the PDIS stateen bit moved.
    let mut v = vm(numbers);
    v.set_x(5, u64::MAX);
    v.exec(&[csrr(10, 0x5c3), csrrw(0, 0x30c, 5), csrr(12, 0x30c)]);
    assert_ne!(v.x(12) & (1 << 40), 0);
    assert_eq!(v.x(12) & (1 << 53), 0);
}

#[test]
fn impossible_numbers_are_refused() {
    let bad = [
        // Another privilege class.
        DraftNumbers {
            mpdisctl: 0x5d0,
            ..DraftNumbers::PROVISIONAL
        },
        // A read-only number.
        DraftNumbers {
            shpmspc: 0xdc0,
            ..DraftNumbers::PROVISIONAL
        },
        // Taken by another CSR (sscratch).
        DraftNumbers {
            shpmspc: 0x140,
            ..DraftNumbers::PROVISIONAL
        },
        // Given twice.
        DraftNumbers {
            shpmsdata: 0x5c0,
            shpmspc: 0x5c0,
            ..DraftNumbers::PROVISIONAL
        },
        // A stateen bit in use.
        DraftNumbers {
            stateen_pdis_bit: 54,
            ..DraftNumbers::PROVISIONAL
        },
    ];
    for numbers in bad {
        let config = HartConfig {
            pmu: PmuConfig { numbers },
            ..HartConfig::default()
        };
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), RAM_SIZE)]).unwrap();
        let err = Hart::new(config, mem)
            .err()
            .unwrap_or_else(|| panic!("{numbers:?} accepted"));
        assert!(
            err.to_string().contains("invalid hart configuration"),
            "{err}"
        );
    }
}
