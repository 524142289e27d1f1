//! Smctr/Ssctr per hart configuration (the optional parts of chapters 2, 3 and 6): a hart
//! without CTR, the minimal hart, a hart with some depths and a 0-bit CC exponent, and the
//! configuration errors. The full configuration's behaviour is checked by the guests
//! `ctr_m`, `ctr_modes`, `ctr_h` (against QEMU) and `ctr_strict`.

mod common;
use common::*;
use vcpu::ctr::{self, CtrConfig};
use vcpu::HartConfig;

const SCTRCTL: u32 = 0x14e;
const SCTRSTATUS: u32 = 0x14f;
const SISELECT: u32 = 0x150;
const SIREG: u32 = 0x151;
const SIREG3: u32 = 0x153;
const SCTRDEPTH: u32 = 0x15f;
const VSCTRCTL: u32 = 0x24e;
const MSTATEEN0: u32 = 0x30c;
const MCTRCTL: u32 = 0x34e;
const SCTRCLR: u32 = 0x1040_0073;

fn vm(ctr: Option<CtrConfig>) -> Vm {
    Vm::with_config(HartConfig {
        ctr,
        ..HartConfig::default()
    })
}

#[test]
fn without_smctr_every_ctr_csr_and_sctrclr_is_illegal() {
    for csr in [MCTRCTL, SCTRCTL, SCTRSTATUS, SCTRDEPTH, VSCTRCTL] {
        let mut v = vm(None);
        let t = v.exec_trap(&[csrrs(10, csr, 0)]);
        assert_eq!(t.cause, 2, "csr {csr:#x}");
    }
    let mut v = vm(None);
    assert_eq!(v.exec_trap(&[SCTRCLR]).cause, 2);
    // The entry registers do not exist either.
    let mut v = vm(None);
    v.set_x(5, 0x200);
    assert_eq!(
        v.exec_trap(&[csrrw(0, SISELECT, 5), csrrs(10, SIREG, 0)])
            .cause,
        2
    );
    // mstateen0.CTR is read-only 0.
    let mut v = vm(None);
    v.set_x(5, u64::MAX);
    v.exec(&[csrrw(0, MSTATEEN0, 5), csrrs(10, MSTATEEN0, 0)]);
    assert_eq!(v.x(10) & (1 << 54), 0);
    // Jumps are not recorded.
    assert!(v.hart.ctr_records().is_empty());
}

#[test]
fn minimal_hart_has_only_the_mandatory_fields() {
    let mut v = vm(Some(CtrConfig::minimal()));
    v.set_x(5, u64::MAX);
    v.set_x(6, 4);
    v.set_x(7, 0x200);
    v.exec(&[
        csrrw(0, MCTRCTL, 5),
        csrrs(10, MCTRCTL, 0),
        csrrw(0, SCTRDEPTH, 6),
        csrrs(11, SCTRDEPTH, 0),
        csrrw(0, SISELECT, 7),
        csrrw(0, SIREG3, 5),
        csrrs(12, SIREG3, 0),
        csrrw(0, MCTRCTL, 0),
    ]);
    assert_eq!(v.x(10), 0x807, "M, S, U, BPFRZ only");
    assert_eq!(v.x(11), 0, "depth 16 only");
    assert_eq!(v.x(12), 0, "no TYPE, no cycle count: ctrdata reads 0");

    // Recording: with no filter bits every jump is recorded, and TYPE reads 0.
    let mut v = vm(Some(CtrConfig::minimal()));
    v.set_x(5, ctr::CTRCTL_M | ctr::CTRCTL_FILTERS);
    v.exec(&[
        csrrw(0, MCTRCTL, 5),
        jal(0, 4),
        jal(0, 4),
        csrrw(0, MCTRCTL, 0),
    ]);
    let r = v.hart.ctr_records();
    assert_eq!(r.len(), 16);
    assert_eq!(r[0].source & 1, 1);
    assert_eq!(r[0].data, 0);
    assert_eq!(r[1].source & 1, 1);
    assert_eq!(r[2].source & 1, 0);
}

#[test]
fn depth_set_and_cce_width_come_from_the_configuration() {
    let cfg = CtrConfig {
        depths: 0b110, // 32 and 64
        ctl_fields: ctr::CTRCTL_OPTIONAL,
        type_field: true,
        cce_bits: Some(0),
    };
    let mut v = vm(Some(cfg));
    v.set_x(5, 0);
    v.set_x(6, 2);
    v.set_x(7, 4);
    v.exec(&[
        csrrs(10, SCTRDEPTH, 0), // reset: the smallest supported depth
        csrrw(0, SCTRDEPTH, 5),  // 16: unsupported, kept
        csrrs(11, SCTRDEPTH, 0),
        csrrw(0, SCTRDEPTH, 6), // 64
        csrrs(12, SCTRDEPTH, 0),
        csrrw(0, SCTRDEPTH, 7), // 256: unsupported, kept
        csrrs(13, SCTRDEPTH, 0),
    ]);
    assert_eq!((v.x(10), v.x(11), v.x(12), v.x(13)), (1, 1, 2, 2));
    // ctrdata: TYPE, CCV, CCM; no CCE bits.
    let mut v = vm(Some(CtrConfig {
        depths: 0b110,
        ctl_fields: 0,
        type_field: true,
        cce_bits: Some(0),
    }));
    v.set_x(5, u64::MAX);
    v.set_x(7, 0x200);
    v.exec(&[
        csrrw(0, SISELECT, 7),
        csrrw(0, SIREG3, 5),
        csrrs(10, SIREG3, 0),
    ]);
    assert_eq!(v.x(10), 0x0fff_800f);
    // A count of 5000 cycles saturates at CCM = 4095 with no exponent bits.
    assert_eq!(ctr::encode_cc(5000, 0), 0x0fff);
}

#[test]
fn sctrstatus_wrptr_is_masked_to_the_depth() {
    let mut v = vm(Some(CtrConfig::full()));
    v.set_x(5, 0xff);
    v.exec(&[csrrw(0, SCTRSTATUS, 5), csrrs(10, SCTRSTATUS, 0)]);
    assert_eq!(v.x(10), 15);
}

#[test]
fn bad_configurations_are_refused_with_a_reason() {
    let mem = vm_memory::GuestMemoryMmap::<()>::from_ranges(&[(
        vm_memory::GuestAddress(RAM_BASE),
        RAM_SIZE,
    )])
    .unwrap();
    let cases = [
        (
            CtrConfig {
                depths: 0,
                ..CtrConfig::full()
            },
            "depth",
        ),
        (
            CtrConfig {
                ctl_fields: ctr::CTRCTL_MTE,
                ..CtrConfig::full()
            },
            "MTE and STE",
        ),
        (
            CtrConfig {
                cce_bits: Some(5),
                ..CtrConfig::full()
            },
            "4 bits",
        ),
        (
            CtrConfig {
                ctl_fields: 1 << 63,
                ..CtrConfig::full()
            },
            "not optional",
        ),
    ];
    for (cfg, want) in cases {
        let err = vcpu::Hart::new(
            HartConfig {
                ctr: Some(cfg.clone()),
                ..HartConfig::default()
            },
            mem.clone(),
        )
        .err()
        .unwrap_or_else(|| panic!("{cfg:?} accepted"));
        assert!(err.to_string().contains(want), "{err}");
    }
}
