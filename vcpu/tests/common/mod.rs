//! Shared helpers for the `vcpu` integration tests: the RV64 encoders of the workspace's
//! `test-support` crate (re-exported), CSR numbers and bits, and a harness that runs code on
//! a hart over 1 MiB of RAM at 0x8000_0000.
#![allow(dead_code)]

use vcpu::{Hart, HartConfig, PrivilegeMode, VcpuExit};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

// ---------------------------------------------------------------------------------------------
// Memory map used by the tests
// ---------------------------------------------------------------------------------------------

pub const RAM_BASE: u64 = 0x8000_0000;

// Sv39 page-table entry bits and the tables the translation tests build (at fixed places
// in RAM, clear of the code and data areas).
pub const V: u64 = 1 << 0;
pub const R: u64 = 1 << 1;
pub const W: u64 = 1 << 2;
pub const X: u64 = 1 << 3;
pub const U: u64 = 1 << 4;
pub const A: u64 = 1 << 6;
pub const D: u64 = 1 << 7;
/// An Sv39/48/57 page-table entry mapping physical address `pa` with `flags`.
pub fn pte(pa: u64, flags: u64) -> u64 {
    ((pa >> 12) << 10) | flags
}
pub const PT_ROOT: u64 = RAM_BASE + 0x2_0000;
pub const PT_L1: u64 = RAM_BASE + 0x2_1000;
pub const PT_L0: u64 = RAM_BASE + 0x2_2000;
pub const RAM_SIZE: usize = 1 << 20;
/// Boot stub: `csrw mtvec, x31; j CODE`.
pub const BOOT: u64 = RAM_BASE;
/// Default M-mode trap handler: a single `wfi` (mie = 0, so the hart exits with `Wfi`).
pub const TRAP: u64 = RAM_BASE + 0x800;
/// Where test code goes.
pub const CODE: u64 = RAM_BASE + 0x1000;
/// Scratch data.
pub const DATA: u64 = RAM_BASE + 0x1_0000;

// CSR numbers (privileged spec, CSR listing).
pub const FFLAGS: u32 = 0x001;
pub const FRM: u32 = 0x002;
pub const FCSR: u32 = 0x003;
pub const SSTATUS: u32 = 0x100;
pub const SIE: u32 = 0x104;
pub const STVEC: u32 = 0x105;
pub const SCOUNTEREN: u32 = 0x106;
pub const SSCRATCH: u32 = 0x140;
pub const SEPC: u32 = 0x141;
pub const SCAUSE: u32 = 0x142;
pub const STVAL: u32 = 0x143;
pub const SIP: u32 = 0x144;
pub const SATP: u32 = 0x180;
pub const MSTATUS: u32 = 0x300;
pub const MISA: u32 = 0x301;
pub const MEDELEG: u32 = 0x302;
pub const MIDELEG: u32 = 0x303;
pub const MIE: u32 = 0x304;
pub const MTVEC: u32 = 0x305;
pub const MCOUNTEREN: u32 = 0x306;
pub const MSCRATCH: u32 = 0x340;
pub const MEPC: u32 = 0x341;
pub const MCAUSE: u32 = 0x342;
pub const MTVAL: u32 = 0x343;
pub const MIP: u32 = 0x344;
pub const MCYCLE: u32 = 0xB00;
pub const MINSTRET: u32 = 0xB02;
pub const CYCLE: u32 = 0xC00;
pub const TIME: u32 = 0xC01;
pub const INSTRET: u32 = 0xC02;
pub const MVENDORID: u32 = 0xF11;
pub const MHARTID: u32 = 0xF14;

// mstatus bits.
pub const MS_SIE: u64 = 1 << 1;
pub const MS_MIE: u64 = 1 << 3;
pub const MS_SPIE: u64 = 1 << 5;
pub const MS_MPIE: u64 = 1 << 7;
pub const MS_SPP: u64 = 1 << 8;
pub const MS_MPP: u64 = 3 << 11;
pub const MS_FS: u64 = 3 << 13;
pub const MS_MPRV: u64 = 1 << 17;
pub const MS_SUM: u64 = 1 << 18;
pub const MS_MXR: u64 = 1 << 19;
pub const MS_SD: u64 = 1 << 63;

// The RV64 encoders (the instruction listings' mnemonics) are test-support's.
pub use test_support::rv64::*;

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// State of the machine-mode trap CSRs after a trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trap {
    pub cause: u64,
    pub epc: u64,
    pub tval: u64,
}

/// A hart over 1 MiB of RAM at [`RAM_BASE`], booting through a stub that points `mtvec` at
/// [`TRAP`] (from `x31`, which tests may change before running) and jumps to [`CODE`].
pub struct Vm {
    pub hart: Hart,
    pub mem: GuestMemoryMmap,
}

impl Default for Vm {
    fn default() -> Self {
        Self::new()
    }
}

impl Vm {
    pub fn new() -> Vm {
        Self::with_config(HartConfig::default())
    }

    pub fn with_config(config: HartConfig) -> Vm {
        let mem = GuestMemoryMmap::from_ranges(&[(GuestAddress(RAM_BASE), RAM_SIZE)]).unwrap();
        let hart = Hart::new(config, mem.clone()).unwrap();
        let mut vm = Vm { hart, mem };
        vm.put32(BOOT, &[csrw(MTVEC, 31), jal(0, (CODE - BOOT - 4) as i32)]);
        vm.put32(TRAP, &[wfi()]);
        vm.hart.set_xreg(31, TRAP);
        vm.hart.set_pc(BOOT);
        vm
    }

    pub fn put32(&self, addr: u64, words: &[u32]) {
        for (i, w) in words.iter().enumerate() {
            self.mem
                .write_obj(*w, GuestAddress(addr + 4 * i as u64))
                .unwrap();
        }
    }
    pub fn put16(&self, addr: u64, halves: &[u16]) {
        for (i, h) in halves.iter().enumerate() {
            self.mem
                .write_obj(*h, GuestAddress(addr + 2 * i as u64))
                .unwrap();
        }
    }
    pub fn w8(&self, addr: u64, v: u8) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn w16(&self, addr: u64, v: u16) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn w32(&self, addr: u64, v: u32) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn w64(&self, addr: u64, v: u64) {
        self.mem.write_obj(v, GuestAddress(addr)).unwrap();
    }
    pub fn r8(&self, addr: u64) -> u8 {
        self.mem.read_obj(GuestAddress(addr)).unwrap()
    }
    pub fn r32(&self, addr: u64) -> u32 {
        self.mem.read_obj(GuestAddress(addr)).unwrap()
    }
    pub fn r64(&self, addr: u64) -> u64 {
        self.mem.read_obj(GuestAddress(addr)).unwrap()
    }

    pub fn x(&self, i: usize) -> u64 {
        self.hart.xreg(i)
    }
    pub fn set_x(&mut self, i: usize, v: u64) {
        self.hart.set_xreg(i, v);
    }
    pub fn f(&self, i: usize) -> u64 {
        self.hart.freg(i)
    }
    pub fn csr(&self, num: u32) -> u64 {
        self.hart
            .csr(num as u16)
            .unwrap_or_else(|| panic!("CSR {num:#x} does not exist"))
    }
    pub fn mtrap(&self) -> Trap {
        Trap {
            cause: self.csr(MCAUSE),
            epc: self.csr(MEPC),
            tval: self.csr(MTVAL),
        }
    }
    pub fn strap(&self) -> Trap {
        Trap {
            cause: self.csr(SCAUSE),
            epc: self.csr(SEPC),
            tval: self.csr(STVAL),
        }
    }

    /// Write `words` at `addr` followed by a `wfi`; returns the address of that `wfi`.
    pub fn code_at(&self, addr: u64, words: &[u32]) -> u64 {
        self.put32(addr, words);
        let end = addr + 4 * words.len() as u64;
        self.put32(end, &[wfi()]);
        end
    }
    /// Write `words` at [`CODE`] followed by a `wfi`; returns the address of that `wfi`.
    pub fn code(&self, words: &[u32]) -> u64 {
        self.code_at(CODE, words)
    }

    /// Run until the hart stops in WFI (every test program ends in one, and so does the trap
    /// handler).
    pub fn run_to_wfi(&mut self) {
        let exit = self.hart.run(1_000_000);
        assert_eq!(
            exit,
            VcpuExit::Wfi,
            "hart did not reach wfi (pc={:#x})",
            self.hart.pc()
        );
    }

    /// Run code that must reach the `wfi` at `end` without trapping.
    pub fn run_clean(&mut self, end: u64) {
        self.run_to_wfi();
        assert_eq!(
            self.hart.pc(),
            end + 4,
            "program did not finish cleanly: mcause={:#x} mepc={:#x} mtval={:#x}",
            self.csr(MCAUSE),
            self.csr(MEPC),
            self.csr(MTVAL)
        );
    }

    /// Run `body` at [`CODE`] (followed by `wfi`) and check it finished without a trap.
    pub fn exec(&mut self, body: &[u32]) {
        let end = self.code(body);
        self.run_clean(end);
    }

    /// Run `body` at [`CODE`] and check it trapped to the M-mode handler at [`TRAP`].
    pub fn exec_trap(&mut self, body: &[u32]) -> Trap {
        let end = self.code(body);
        self.run_to_wfi();
        assert_ne!(
            self.hart.pc(),
            end + 4,
            "expected a trap, but the program finished"
        );
        assert_eq!(self.hart.pc(), TRAP + 4, "expected the M-mode trap handler");
        assert_eq!(self.hart.privilege(), PrivilegeMode::Machine);
        self.mtrap()
    }

    /// Code (for M-mode) that enters `mode` at `target` through MRET. Uses x28-x30.
    pub fn enter_mode(&mut self, mode: PrivilegeMode, target: u64) -> Vec<u32> {
        self.set_x(28, MS_MPP);
        self.set_x(29, target);
        self.set_x(30, (mode as u64) << 11);
        vec![
            csrrc(0, MSTATUS, 28),
            csrrs(0, MSTATUS, 30),
            csrw(MEPC, 29),
            mret(),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// Smstateen, Smcsrind, Sstc and Smaia CSRs, and helpers for running code in a lower mode
// ---------------------------------------------------------------------------------------------

pub const SENVCFG: u32 = 0x10A;
pub const SSTATEEN0: u32 = 0x10C;
pub const STIMECMP: u32 = 0x14D;
pub const SISELECT: u32 = 0x150;
pub const SIREG: u32 = 0x151;
pub const MVIEN: u32 = 0x308;
pub const MVIP: u32 = 0x309;
pub const MENVCFG: u32 = 0x30A;
pub const MSTATEEN0: u32 = 0x30C;
pub const MISELECT: u32 = 0x350;
pub const MIREG: u32 = 0x351;
pub const STOPI: u32 = 0xDB0;
pub const MTOPI: u32 = 0xFB0;
/// The six alias CSRs of each indirect window, `xireg` first.
pub const MIREGS: [u32; 6] = [0x351, 0x352, 0x353, 0x355, 0x356, 0x357];
pub const SIREGS: [u32; 6] = [0x151, 0x152, 0x153, 0x155, 0x156, 0x157];

/// `mstateen0` bits.
pub const SE0: u64 = 1 << 63;
pub const ST_ENVCFG: u64 = 1 << 62;
pub const ST_CSRIND: u64 = 1 << 60;
pub const ST_AIA: u64 = 1 << 59;
/// `menvcfg.STCE`
pub const STCE: u64 = 1 << 63;

/// Where [`Vm::run_in_mode`] puts the lower-privilege code.
pub const LOW_CODE: u64 = CODE + 0x800;

/// How a run of [`Vm::run_in_mode`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The lower-mode code reached its final `wfi`.
    Clean,
    /// The M-mode trap handler at [`TRAP`] was entered.
    MTrap(Trap),
}

impl Vm {
    /// Run `setup` in M-mode at [`CODE`], then enter `mode` and run `body` at [`LOW_CODE`]
    /// (followed by `wfi`). `setup` must not use x28-x31.
    pub fn run_in_mode(&mut self, setup: &[u32], mode: PrivilegeMode, body: &[u32]) -> Outcome {
        let mut m = setup.to_vec();
        m.extend(self.enter_mode(mode, LOW_CODE));
        assert!(CODE + 4 * m.len() as u64 <= LOW_CODE, "setup too long");
        self.put32(CODE, &m);
        let end = self.code_at(LOW_CODE, body);
        self.run_to_wfi();
        if self.hart.pc() == end + 4 {
            assert_eq!(self.hart.privilege(), mode);
            Outcome::Clean
        } else {
            assert_eq!(self.hart.pc(), TRAP + 4, "expected the M-mode trap handler");
            Outcome::MTrap(self.mtrap())
        }
    }

    /// As [`Vm::run_in_mode`], but `body` must raise illegal-instruction at its instruction
    /// `idx`, with the instruction bits in `mtval`.
    pub fn expect_illegal(&mut self, setup: &[u32], mode: PrivilegeMode, body: &[u32], idx: usize) {
        let out = self.run_in_mode(setup, mode, body);
        assert_eq!(
            out,
            Outcome::MTrap(Trap {
                cause: vcpu::trap::cause::ILLEGAL_INSN,
                epc: LOW_CODE + 4 * idx as u64,
                tval: body[idx] as u64,
            }),
            "{mode:?} body {body:08x?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// H-level CSRs of Smstateen, Sscsrind, Sstc and Ssaia, and helpers for running code with V = 1
// ---------------------------------------------------------------------------------------------

pub const VSSTATUS: u32 = 0x200;
pub const VSIE: u32 = 0x204;
pub const VSTVEC: u32 = 0x205;
pub const VSCAUSE: u32 = 0x242;
pub const VSIP: u32 = 0x244;
pub const VSTIMECMP: u32 = 0x24D;
pub const VSISELECT: u32 = 0x250;
pub const VSIREG: u32 = 0x251;
pub const VSIREGS: [u32; 6] = [0x251, 0x252, 0x253, 0x255, 0x256, 0x257];
pub const HSTATUS: u32 = 0x600;
pub const HIDELEG: u32 = 0x603;
pub const HIE: u32 = 0x604;
pub const HTIMEDELTA: u32 = 0x605;
pub const HCOUNTEREN: u32 = 0x606;
pub const HVIEN: u32 = 0x608;
pub const HVICTL: u32 = 0x609;
pub const HENVCFG: u32 = 0x60A;
pub const HSTATEEN0: u32 = 0x60C;
pub const HSTATEEN: [u32; 4] = [0x60C, 0x60D, 0x60E, 0x60F];
pub const HIP: u32 = 0x644;
pub const HVIP: u32 = 0x645;
pub const HVIPRIO1: u32 = 0x646;
pub const HVIPRIO2: u32 = 0x647;
pub const VSTOPI: u32 = 0xEB0;

/// `mstatus.MPV`
pub const MS_MPV: u64 = 1 << 39;
/// `mcause` of illegal-instruction and virtual-instruction.
pub const ILLEGAL: u64 = 2;
pub const VIRTUAL: u64 = 22;
/// Where VS-mode traps go in the tests that take interrupts in VS-mode: a spin loop.
pub const VS_TRAP: u64 = CODE + 0x1800;

/// M-mode code writing each `(csr, value)` pair, through x5-x26 (preset in the hart).
pub fn set_csrs(vm: &mut Vm, pairs: &[(u32, u64)]) -> Vec<u32> {
    assert!(pairs.len() <= 22, "too many CSR writes");
    pairs
        .iter()
        .enumerate()
        .map(|(i, &(csr, v))| {
            let r = 5 + i as u32;
            vm.set_x(r as usize, v);
            csrw(csr, r)
        })
        .collect()
}

impl Vm {
    /// As [`Vm::run_in_mode`], but with V = 1 (`mode` Supervisor = VS, User = VU). `setup`
    /// must not use x27-x31.
    pub fn run_in_vmode(
        &mut self,
        setup: &[u32],
        mode: vcpu::PrivilegeMode,
        body: &[u32],
    ) -> Outcome {
        self.set_x(27, MS_MPV);
        let mut s = setup.to_vec();
        s.push(csrrs(0, MSTATUS, 27));
        self.run_in_mode(&s, mode, body)
    }

    /// `body` run with V = 1 (or V = 0 when `virt` is false) must trap to M with `cause` at its
    /// instruction `idx`, with the instruction bits in `mtval`.
    pub fn expect_fault(
        &mut self,
        setup: &[u32],
        mode: vcpu::PrivilegeMode,
        virt: bool,
        body: &[u32],
        idx: usize,
        cause: u64,
    ) {
        let out = if virt {
            self.run_in_vmode(setup, mode, body)
        } else {
            self.run_in_mode(setup, mode, body)
        };
        assert_eq!(
            out,
            Outcome::MTrap(Trap {
                cause,
                epc: LOW_CODE + 4 * idx as u64,
                tval: body[idx] as u64,
            }),
            "{mode:?} V={virt} body {body:08x?}"
        );
    }
}
