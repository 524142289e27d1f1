//! SBI dispatch tests against a mock platform.

use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

use super::srst::{ResetRequest, ResetType};
use super::*;

const RAM: u64 = 0x8000_0000;
const RAM_SIZE: u64 = 0x10_0000;

pub(crate) struct MockEnv {
    pub harts: u64,
    pub mem: GuestMemoryMmap,
    pub timer: Option<u64>,
    pub ipis: Vec<u64>,
    pub out: Vec<u8>,
    pub input: Vec<u8>,
}

impl MockEnv {
    pub fn new() -> MockEnv {
        MockEnv {
            harts: 1,
            mem: GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM), RAM_SIZE as usize)]).unwrap(),
            timer: None,
            ipis: Vec::new(),
            out: Vec::new(),
            input: Vec::new(),
        }
    }
}

impl SbiEnv for MockEnv {
    fn hart_count(&self) -> u64 {
        self.harts
    }
    fn set_timer(&mut self, deadline: u64) {
        self.timer = Some(deadline);
    }
    fn send_ipi(&mut self, hart: u64) {
        self.ipis.push(hart);
    }
    fn memory(&self) -> &GuestMemoryMmap {
        &self.mem
    }
    fn console_write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.out.extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn console_read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.input.len());
        buf[..n].copy_from_slice(&self.input[..n]);
        self.input.drain(..n);
        n
    }
}

fn call(env: &mut MockEnv, eid: u64, fid: u64, args: &[u64]) -> SbiOutcome {
    let mut a = [0; 6];
    a[..args.len()].copy_from_slice(args);
    handle(&SbiCall { eid, fid, args: a }, env)
}

fn ret(env: &mut MockEnv, eid: u64, fid: u64, args: &[u64]) -> SbiRet {
    match call(env, eid, fid, args) {
        SbiOutcome::Return(r) => r,
        other => panic!("eid {eid:#x} fid {fid}: {other:?}"),
    }
}

#[test]
fn unknown_extensions_and_functions_are_not_supported() {
    let mut env = MockEnv::new();
    for eid in [0x0, 0x1, 0x8, 0xf, 0x11, 0x4e41_4350, 0x5043_4d50, u64::MAX] {
        assert_eq!(
            ret(&mut env, eid, 0, &[]),
            SbiRet::err(SBI_ERR_NOT_SUPPORTED)
        );
    }
    for e in EXTENSIONS {
        assert_eq!(
            ret(&mut env, *e, 99, &[]),
            SbiRet::err(SBI_ERR_NOT_SUPPORTED),
            "{}",
            extension_name(*e)
        );
    }
    assert_eq!(SBI_ERR_NOT_SUPPORTED, -2);
}

#[test]
fn base() {
    let mut env = MockEnv::new();
    assert_eq!(ret(&mut env, eid::BASE, 0, &[]), SbiRet::ok(0x0200_0000));
    assert_eq!(ret(&mut env, eid::BASE, 1, &[]), SbiRet::ok(base::IMPL_ID));
    assert_eq!(ret(&mut env, eid::BASE, 2, &[]).error, 0);
    for e in EXTENSIONS {
        assert_eq!(ret(&mut env, eid::BASE, 3, &[*e]), SbiRet::ok(1));
    }
    for e in [0x1, 0x4e41_4350, 0x5043_4d50, 0x53555350] {
        assert_eq!(ret(&mut env, eid::BASE, 3, &[e]), SbiRet::ok(0));
    }
    for fid in 4..=6 {
        assert_eq!(ret(&mut env, eid::BASE, fid, &[]), SbiRet::ok(0));
    }
}

#[test]
fn set_timer_reaches_the_platform() {
    let mut env = MockEnv::new();
    assert_eq!(ret(&mut env, eid::TIME, 0, &[12345]), SbiRet::ok(0));
    assert_eq!(env.timer, Some(12345));
}

#[test]
fn hart_masks() {
    assert_eq!(selected_harts(1, 0, 1), Some(vec![0]));
    assert_eq!(selected_harts(0, 0, 1), Some(vec![]));
    assert_eq!(selected_harts(0, 5, 1), Some(vec![]));
    assert_eq!(selected_harts(2, 0, 1), None);
    assert_eq!(selected_harts(1, 1, 1), None);
    assert_eq!(selected_harts(0xdead, u64::MAX, 1), Some(vec![0]));
    assert_eq!(selected_harts(0b101, 2, 8), Some(vec![2, 4]));
    assert_eq!(selected_harts(1 << 63, u64::MAX - 1, 8), None);

    let mut env = MockEnv::new();
    assert_eq!(ret(&mut env, eid::IPI, 0, &[1, 0]), SbiRet::ok(0));
    assert_eq!(ret(&mut env, eid::IPI, 0, &[0, u64::MAX]), SbiRet::ok(0));
    assert_eq!(env.ipis, vec![0, 0]);
    assert_eq!(
        ret(&mut env, eid::IPI, 0, &[3, 0]),
        SbiRet::err(SBI_ERR_INVALID_PARAM)
    );
    assert_eq!(
        ret(&mut env, eid::IPI, 0, &[1, 1]),
        SbiRet::err(SBI_ERR_INVALID_PARAM)
    );
    assert_eq!(env.ipis, vec![0, 0], "no IPI sent for an invalid mask");
    for fid in 0..=2 {
        assert_eq!(
            ret(&mut env, eid::RFENCE, fid, &[1, 0, 0, 4096, 1]),
            SbiRet::ok(0)
        );
        assert_eq!(
            ret(&mut env, eid::RFENCE, fid, &[0, u64::MAX]),
            SbiRet::ok(0)
        );
        assert_eq!(
            ret(&mut env, eid::RFENCE, fid, &[2, 0]),
            SbiRet::err(SBI_ERR_INVALID_PARAM)
        );
    }
    for fid in 3..=6 {
        assert_eq!(
            ret(&mut env, eid::RFENCE, fid, &[1, 0]),
            SbiRet::err(SBI_ERR_NOT_SUPPORTED)
        );
    }
}

#[test]
fn hsm() {
    let mut env = MockEnv::new();
    assert_eq!(
        ret(&mut env, eid::HSM, 0, &[0, RAM, 0]),
        SbiRet::err(SBI_ERR_ALREADY_AVAILABLE)
    );
    assert_eq!(
        ret(&mut env, eid::HSM, 0, &[1, RAM, 0]),
        SbiRet::err(SBI_ERR_INVALID_PARAM)
    );
    assert_eq!(ret(&mut env, eid::HSM, 2, &[0]), SbiRet::ok(0));
    assert_eq!(
        ret(&mut env, eid::HSM, 2, &[1]),
        SbiRet::err(SBI_ERR_INVALID_PARAM)
    );
    assert_eq!(ret(&mut env, eid::HSM, 3, &[0, 0, 0]), SbiRet::ok(0));
    assert_eq!(
        ret(&mut env, eid::HSM, 3, &[0x8000_0000, RAM, 0]),
        SbiRet::err(SBI_ERR_NOT_SUPPORTED)
    );
    assert_eq!(
        ret(&mut env, eid::HSM, 3, &[1, 0, 0]),
        SbiRet::err(SBI_ERR_INVALID_PARAM)
    );
    assert_eq!(call(&mut env, eid::HSM, 1, &[]), SbiOutcome::HartStopped);
}

#[test]
fn system_reset() {
    let mut env = MockEnv::new();
    let reset = |kind, reason| SbiOutcome::Reset(ResetRequest { kind, reason });
    assert_eq!(
        call(&mut env, eid::SRST, 0, &[0, 0]),
        reset(ResetType::Shutdown, 0)
    );
    assert_eq!(
        call(&mut env, eid::SRST, 0, &[0, 1]),
        reset(ResetType::Shutdown, 1)
    );
    assert_eq!(
        call(&mut env, eid::SRST, 0, &[1, 0]),
        reset(ResetType::ColdReboot, 0)
    );
    assert_eq!(
        call(&mut env, eid::SRST, 0, &[2, 0xe000_0000]),
        reset(ResetType::WarmReboot, 0xe000_0000)
    );
    assert_eq!(
        ResetRequest {
            kind: ResetType::Shutdown,
            reason: 0
        }
        .exit_code(),
        0
    );
    assert_eq!(
        ResetRequest {
            kind: ResetType::Shutdown,
            reason: 1
        }
        .exit_code(),
        1
    );
    assert_eq!(
        ret(&mut env, eid::SRST, 0, &[3, 0]),
        SbiRet::err(SBI_ERR_INVALID_PARAM)
    );
    assert_eq!(
        ret(&mut env, eid::SRST, 0, &[0, 2]),
        SbiRet::err(SBI_ERR_INVALID_PARAM)
    );
    assert_eq!(
        ret(&mut env, eid::SRST, 0, &[0xf000_0000, 0]),
        SbiRet::err(SBI_ERR_NOT_SUPPORTED)
    );
}

#[test]
fn debug_console() {
    let mut env = MockEnv::new();
    env.mem
        .write_slice(b"hello", GuestAddress(RAM + 0x100))
        .unwrap();
    assert_eq!(
        ret(&mut env, eid::DBCN, 0, &[5, RAM + 0x100, 0]),
        SbiRet::ok(5)
    );
    assert_eq!(
        ret(&mut env, eid::DBCN, 2, &[u64::from(b'!') | 0x100]),
        SbiRet::ok(0)
    );
    assert_eq!(env.out, b"hello!");

    // Buffers outside RAM, straddling its end, wrapping, or with base_addr_hi set.
    let bad: &[[u64; 3]] = &[
        [5, 0x1000, 0],
        [5, RAM - 2, 0],
        [5, RAM + RAM_SIZE - 2, 0],
        [1, RAM + RAM_SIZE, 0],
        [16, u64::MAX - 4, 0],
        [5, RAM, 1],
    ];
    for args in bad {
        assert_eq!(
            ret(&mut env, eid::DBCN, 0, args),
            SbiRet::err(SBI_ERR_INVALID_PARAM),
            "write {args:x?}"
        );
        assert_eq!(
            ret(&mut env, eid::DBCN, 1, args),
            SbiRet::err(SBI_ERR_INVALID_PARAM),
            "read {args:x?}"
        );
    }
    assert_eq!(env.out, b"hello!");
    // The last byte of RAM is fine.
    assert_eq!(
        ret(&mut env, eid::DBCN, 0, &[1, RAM + RAM_SIZE - 1, 0]),
        SbiRet::ok(1)
    );

    env.input = b"abc\n".to_vec();
    assert_eq!(
        ret(&mut env, eid::DBCN, 1, &[2, RAM + 0x200, 0]),
        SbiRet::ok(2)
    );
    assert_eq!(
        ret(&mut env, eid::DBCN, 1, &[16, RAM + 0x202, 0]),
        SbiRet::ok(2)
    );
    assert_eq!(
        ret(&mut env, eid::DBCN, 1, &[16, RAM + 0x204, 0]),
        SbiRet::ok(0)
    );
    let mut got = [0u8; 4];
    env.mem
        .read_slice(&mut got, GuestAddress(RAM + 0x200))
        .unwrap();
    assert_eq!(&got, b"abc\n");
}

#[test]
fn call_from_registers() {
    let c = SbiCall::from_regs(|i| i as u64 * 10);
    assert_eq!(c.eid, 170);
    assert_eq!(c.fid, 160);
    assert_eq!(c.args, [100, 110, 120, 130, 140, 150]);
}
