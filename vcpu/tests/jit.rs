// Binary literals are grouped by instruction field; `8 * 1` spells out PTE index 1.
#![allow(clippy::unusual_byte_groupings, clippy::identity_op)]
//! The block translator against the interpreter: every test runs the same program on two
//! harts over identical RAM, one with `HartConfig::jit` on and one with it off, with the same
//! budgets, and requires the same exits and the same state after every `run` return: all
//! integer registers, pc, privilege, retired and executed counts, the trap CSRs, and the
//! bytes of the data area (the whole RAM at the end of a program); with F and D, the
//! floating-point registers and `fcsr` too.
//!
//! - Random programs (fixed-seed xorshift): every op the translator handles inline, in 16- and
//!   32-bit forms, loads and stores of every width (misaligned, across a page boundary, to
//!   `x0`), forward branches and jumps, counted loops closed by every branch kind, JAL and
//!   JALR, with divisions, CSR reads and writes (scratch registers, `sstatus`, `instret`,
//!   `cycle`, the counter controls), AMOs, LR/SC and FENCE.I mixed in; in M-mode, under Sv39 (scrambled
//!   frames), in a hosted guest, with timer interrupts, recording CTR and counting events.
//! - Budgets: the same programs stopped after 1, 2, 3, ... instructions and in random steps.
//! - CTR records logged by translated code and drained into the buffer: hundreds and
//!   thousands of records in one run (around the log's ring), cycle counts that need the
//!   encoding, `sctrstatus` read by a CSR helper right after a logged record, and records
//!   through the helper and the log alternating in one run.
//! - Self-modifying code, by the guest (with and without FENCE.I, also into the running
//!   block) and by the VMM (a function called through JALR found stale once, not at every
//!   call); retranslation until the code region is emptied; vCPU switches
//!   on a hart (`Hart::switch_state`), which keep the code checks and load no store TLB
//!   entry for a page of translated code.
//! - Sv39: one physical page at two virtual addresses, and a virtual page remapped through a
//!   PTE store or a `satp` switch followed by SFENCE.VMA.
//! - Loads and stores, LR, SC and AMOs that fault or reach a device in the middle of a
//!   translated loop.
//! - F and D: random programs with every F/D instruction (32- and 16-bit loads and stores,
//!   every rounding mode static and dynamic, reserved ones, operands of every class: NaNs,
//!   signalling NaNs, infinities, zeros, subnormals, singles not NaN-boxed), `fflags` read
//!   and cleared, `frm` written, `mstatus.FS` turned Off and Clean; also in budget steps.
//! - Double and single arithmetic at the edges of the host shortcut (tiny, exact,
//!   overflowing results; NX clear and set; every rounding mode; singles not boxed).
//! - Division: DIV/DIVU/REM/REMU, the W forms and MULHSU on the spec's corner cases.
//! - Monitored blocks with F/D, CSR accesses and atomics: every event counted, counters
//!   overflowing every 2 to 7 events, each LCOFI taken and logged (`mepc`, `minstret`),
//!   counters and event selectors written mid-block; a `satp` write in a monitored block
//!   under Sv39 (the TLB models flushed, the write's own fetch reported); a counter of
//!   cycles armed close to wrapping after a loop's calls ran translated without the check.
//! - Counter CSRs (`cycle`, `time`, `instret`, `hpmcounter3`, `minstret`) read inside
//!   translated blocks and written, in budget steps of 1 to 40.

mod common;

use common::*;
use test_support::XorShift;
use vcpu::trap::cause;
use vcpu::{HartConfig, MmioRange, PrivilegeMode, VcpuExit};
use vm_memory::{Bytes, GuestAddress};

// ---------------------------------------------------------------------------------------------
// Two harts, one translating
// ---------------------------------------------------------------------------------------------

/// The data area the random programs load from and store to (two pages).
const DATA_LEN: usize = 0x2000;

/// `sctrstatus` and `mctrctl` (Smctr), `mcountinhibit` (Zicntr/Zihpm).
const SCTRSTATUS: u32 = 0x14f;
const MCTRCTL: u32 = 0x34e;
const MCOUNTINHIBIT: u32 = 0x320;

/// CSRs compared between the two harts.
const COMPARED_CSRS: [u32; 12] = [
    MSTATUS, MEPC, MCAUSE, MTVAL, MSCRATCH, SEPC, SCAUSE, STVAL, SATP, MINSTRET, MCYCLE, SSCRATCH,
];

fn machine(jit: bool, mmio: &[MmioRange]) -> Vm {
    Vm::with_config(HartConfig {
        jit,
        mmio: mmio.to_vec(),
        ..HartConfig::default()
    })
}

fn read(vm: &Vm, at: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    vm.mem.read_slice(&mut v, GuestAddress(at)).unwrap();
    v
}

/// The same machine twice: `jit` translates, `int` only interprets.
struct Pair {
    jit: Vm,
    int: Vm,
}

impl Pair {
    fn new() -> Pair {
        Pair::with_mmio(&[])
    }

    fn with_mmio(mmio: &[MmioRange]) -> Pair {
        Pair {
            jit: machine(true, mmio),
            int: machine(false, mmio),
        }
    }

    /// Apply the same setup to both machines.
    fn both<R>(&mut self, mut f: impl FnMut(&mut Vm) -> R) -> R {
        f(&mut self.int);
        f(&mut self.jit)
    }

    fn set_x(&mut self, r: usize, v: u64) {
        self.both(|vm| vm.set_x(r, v));
    }

    /// Run both for `budget` instructions; the exits and the states must match.
    fn run(&mut self, budget: u64, ctx: &str) -> VcpuExit {
        let a = self.jit.hart.run(budget);
        let b = self.int.hart.run(budget);
        assert_eq!(
            a,
            b,
            "{ctx}: run({budget}) exits differ (translator, interpreter); pc {:#x} vs {:#x}",
            self.jit.hart.pc(),
            self.int.hart.pc()
        );
        self.assert_same(ctx, DATA, DATA_LEN);
        a
    }

    /// Run both until they stop in WFI (the programs' end and the M-mode trap handler).
    fn run_to_wfi(&mut self, ctx: &str) {
        let exit = self.run(10_000_000, ctx);
        assert_eq!(
            exit,
            VcpuExit::Wfi,
            "{ctx}: no WFI (pc {:#x})",
            self.int.hart.pc()
        );
    }

    /// Run both until they stop in WFI, `budget` instructions at a time (each run
    /// compared); fails after 100 000 runs.
    fn run_to_wfi_in_steps(&mut self, budget: u64, ctx: &str) {
        for n in 0.. {
            match self.run(budget, ctx) {
                VcpuExit::BudgetExhausted => {}
                VcpuExit::Wfi => return,
                other => panic!("{ctx}: unexpected exit {other:?}"),
            }
            assert!(n < 100_000, "{ctx}: no end");
        }
    }

    /// Fail on the first difference in architectural state or in RAM `[at, at + len)`.
    fn assert_same(&self, ctx: &str, at: u64, len: usize) {
        let (t, i) = (&self.jit, &self.int);
        let mut diffs = Vec::new();
        for r in 1..32 {
            if t.x(r) != i.x(r) {
                diffs.push(format!("x{r}: {:#x} vs {:#x}", t.x(r), i.x(r)));
            }
        }
        let (th, ih) = (&t.hart, &i.hart);
        for r in 0..32 {
            if th.freg(r) != ih.freg(r) {
                diffs.push(format!("f{r}: {:#x} vs {:#x}", th.freg(r), ih.freg(r)));
            }
        }
        let (a, b) = (th.csr(FCSR as u16), ih.csr(FCSR as u16));
        if a != b {
            diffs.push(format!("fcsr: {a:x?} vs {b:x?}"));
        }
        for (what, a, b) in [
            ("pc", th.pc(), ih.pc()),
            ("instret", th.instret(), ih.instret()),
            ("executed", th.executed(), ih.executed()),
            ("clock slots", th.clock_slots(), ih.clock_slots()),
        ] {
            if a != b {
                diffs.push(format!("{what}: {a:#x} vs {b:#x}"));
            }
        }
        if th.privilege() != ih.privilege() {
            diffs.push(format!(
                "privilege: {:?} vs {:?}",
                th.privilege(),
                ih.privilege()
            ));
        }
        for c in COMPARED_CSRS {
            let (a, b) = (th.csr(c as u16), ih.csr(c as u16));
            if a != b {
                diffs.push(format!("csr {c:#x}: {a:x?} vs {b:x?}"));
            }
        }
        // CTR: the buffer (every entry of the selected depth, cycle counts included) and
        // `sctrstatus`.
        let (ra, rb) = (th.ctr_records(), ih.ctr_records());
        if ra != rb {
            let k = (0..ra.len().max(rb.len()))
                .find(|&k| ra.get(k) != rb.get(k))
                .unwrap_or(0);
            diffs.push(format!(
                "CTR entry {k} of {}/{}: {:x?} vs {:x?}",
                ra.len(),
                rb.len(),
                ra.get(k),
                rb.get(k)
            ));
        }
        let (a, b) = (th.csr(SCTRSTATUS as u16), ih.csr(SCTRSTATUS as u16));
        if a != b {
            diffs.push(format!("sctrstatus: {a:x?} vs {b:x?}"));
        }
        // The monitor: every counter, every event register (OF), LCOFIP in `mip`, and the
        // sample of the LCOFI (Sspesa's `shpmspc` and `shpmsdata`).
        for c in (0xb03..0xb20)
            .chain(0x323..0x340)
            .chain([MIP, 0x5c0, 0x5c1])
        {
            let (a, b) = (th.csr(c as u16), ih.csr(c as u16));
            if a != b {
                diffs.push(format!("csr {c:#x}: {a:x?} vs {b:x?}"));
            }
        }
        let (da, db) = (read(t, at, len), read(i, at, len));
        if let Some(k) = (0..len).find(|&k| da[k] != db[k]) {
            diffs.push(format!(
                "RAM at {:#x}: {:#04x} vs {:#04x}",
                at + k as u64,
                da[k],
                db[k]
            ));
        }
        assert!(
            diffs.is_empty(),
            "{ctx}: translator and interpreter differ (translator value first; pc {:#x}):\n  {}",
            ih.pc(),
            diffs.join("\n  ")
        );
    }

    /// Compare the whole RAM.
    fn assert_same_ram(&self, ctx: &str) {
        self.assert_same(ctx, RAM_BASE, RAM_SIZE);
    }
}

/// The generator of a seed: test-support's [`XorShift::from_seed`] with its first number
/// thrown away.
fn seeded(seed: u64) -> XorShift {
    XorShift::from_seed(seed).skip(1)
}

// ---------------------------------------------------------------------------------------------
// Random programs
// ---------------------------------------------------------------------------------------------

/// Values the programs start from and load (edge cases of signed and unsigned arithmetic).
const VALUES: [u64; 16] = [
    0,
    1,
    u64::MAX,
    i64::MIN as u64,
    i64::MAX as u64,
    0x8000_0000,
    0x7fff_ffff,
    0xffff_ffff,
    0xffff_ffff_8000_0000,
    0x1_0000_0000,
    31,
    32,
    63,
    64,
    0x8000_0000_0000_0001,
    0xdead_beef_0bad_f00d,
];

/// Floating-point values the F/D programs load (at B0 + 0x100): every class of double and of
/// NaN-boxed single, and singles that are not boxed (they read as the canonical NaN).
const FVALUES: [u64; 26] = [
    0,
    1 << 63,
    0x3ff0_0000_0000_0000,
    0xbff0_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x7ff0_0000_0000_0001,
    0xfff4_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x800f_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0x3fb9_9999_9999_999a,
    0x43e0_0000_0000_0000,
    0xc3e0_0000_0000_0001,
    0x41df_ffff_ffc0_0000,
    0xffff_ffff_3f80_0000,
    0xffff_ffff_7fc0_0000,
    0xffff_ffff_7f80_0001,
    0xffff_ffff_0000_0001,
    0xffff_ffff_ff80_0000,
    0xffff_ffff_8000_0000,
    0xffff_ffff_4f00_0000,
    0x0000_0000_3f80_0000,
    0xffff_fffe_3dcc_cccd,
];

// Registers the random programs keep for themselves.
/// Base for the `sp`-relative compressed forms: DATA + 0x1c00.
const SP: u32 = 2;
/// Loop head of JALR-closed loops.
const HEAD: u32 = 4;
/// Scratch for forward JALR targets.
const JR: u32 = 5;
/// Loop counters by nesting depth.
const CNT: [u32; 2] = [6, 7];
/// Base: DATA + 0x800, where the table of [`VALUES`] is.
const B0: u32 = 8;
/// Base: DATA + 0x1000, the boundary between the two data pages.
const B1: u32 = 9;
/// Registers random instructions write.
const DEST: [u32; 24] = [
    1, 3, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
];
/// Destinations of the compressed forms with 3-bit register fields.
const CDEST: [u32; 6] = [10, 11, 12, 13, 14, 15];

/// A random program under construction, as halfwords placed at [`CODE`].
struct Gen {
    rng: XorShift,
    /// The scratch, retired-instructions and cycle CSRs the program may access.
    csrs: [u32; 3],
    /// Mix F and D instructions in ([`Mode::Float`]).
    float: bool,
    /// Mix SCTRCLR in (even seeds of [`Mode::Ctr`], which leave `mctrctl` alone, but 600 and
    /// 640, whose full buffers the tests check): the next record has CCV = 0, which the
    /// inline record must leave to the helper.
    sctrclr: bool,
    h: Vec<u16>,
}

impl Gen {
    fn at(&self) -> usize {
        self.h.len()
    }
    fn w32(&mut self, w: u32) {
        self.h.push(w as u16);
        self.h.push((w >> 16) as u16);
    }
    fn w16(&mut self, h: u16) {
        self.h.push(h);
    }
    fn set32(&mut self, at: usize, w: u32) {
        self.h[at] = w as u16;
        self.h[at + 1] = (w >> 16) as u16;
    }
    /// Byte offset from halfword `at` to the current position.
    fn from(&self, at: usize) -> i32 {
        2 * (self.h.len() as i32 - at as i32)
    }

    fn dst(&mut self) -> u32 {
        if self.rng.chance(5) {
            0
        } else {
            self.rng.pick(&DEST)
        }
    }
    fn src(&mut self) -> u32 {
        self.rng.below(32) as u32
    }
    fn cdst(&mut self) -> u32 {
        self.rng.pick(&CDEST)
    }
    /// Any compressible register (x8-x15) as a source.
    fn csrc(&mut self) -> u32 {
        8 + self.rng.below(8) as u32
    }
    fn imm12(&mut self) -> i32 {
        match self.rng.below(7) {
            0 => 0,
            1 => -1,
            2 => -2048,
            3 => 2047,
            4 => 1,
            5 => self.rng.below(64) as i32 - 32,
            _ => self.rng.below(4096) as i32 - 2048,
        }
    }
    fn shamt(&mut self, bits: u32) -> u32 {
        match self.rng.below(6) {
            0 => 0,
            1 => 1,
            2 => bits - 1,
            3 => bits / 2,
            _ => self.rng.below(bits as u64) as u32,
        }
    }

    /// One 32-bit ALU instruction.
    fn alu(&mut self) {
        let (rd, a, b) = (self.dst(), self.src(), self.src());
        let w = match self.rng.below(36) {
            0 => add(rd, a, b),
            1 => sub(rd, a, b),
            2 => sll(rd, a, b),
            3 => slt(rd, a, b),
            4 => sltu(rd, a, b),
            5 => xor(rd, a, b),
            6 => srl(rd, a, b),
            7 => sra(rd, a, b),
            8 => or(rd, a, b),
            9 => and(rd, a, b),
            10 => addw(rd, a, b),
            11 => subw(rd, a, b),
            12 => sllw(rd, a, b),
            13 => srlw(rd, a, b),
            14 => sraw(rd, a, b),
            15 => mul(rd, a, b),
            16 => mulh(rd, a, b),
            17 => mulhu(rd, a, b),
            18 => mulw(rd, a, b),
            19 => addi(rd, a, self.imm12()),
            20 => slti(rd, a, self.imm12()),
            21 => sltiu(rd, a, self.imm12()),
            22 => xori(rd, a, self.imm12()),
            23 => ori(rd, a, self.imm12()),
            24 => andi(rd, a, self.imm12()),
            25 => addiw(rd, a, self.imm12()),
            26 => slli(rd, a, self.shamt(64)),
            27 => srli(rd, a, self.shamt(64)),
            28 => srai(rd, a, self.shamt(64)),
            29 => slliw(rd, a, self.shamt(32)),
            30 => srliw(rd, a, self.shamt(32)),
            31 => sraiw(rd, a, self.shamt(32)),
            32 => lui(rd, self.rng.pick(&[0, 0x80000, 0xfffff, 0x7ffff, 1]) as u32),
            33 => lui(rd, self.rng.below(1 << 20) as u32),
            34 => auipc(rd, self.rng.below(1 << 20) as u32),
            _ => fence(),
        };
        self.w32(w);
    }

    /// One compressed ALU instruction.
    fn calu(&mut self) {
        let (rd, crd) = (self.rng.pick(&DEST), self.cdst());
        let nz6 = |g: &mut Gen| {
            let v = g.rng.below(63) as i32 - 32;
            if v >= 0 {
                v + 1
            } else {
                v
            }
        };
        let h = match self.rng.below(19) {
            0 => c_addi(rd, nz6(self)),
            1 => c_addiw(rd, self.rng.below(64) as i32 - 32),
            2 => c_li(rd, self.rng.below(64) as i32 - 32),
            3 => c_lui(rd, nz6(self) * 4096),
            4 => c_srli(crd, 1 + self.rng.below(63) as u32),
            5 => c_srai(crd, 1 + self.rng.below(63) as u32),
            6 => c_andi(crd, self.rng.below(64) as i32 - 32),
            7 => c_sub(crd, self.csrc()),
            8 => c_xor(crd, self.csrc()),
            9 => c_or(crd, self.csrc()),
            10 => c_and(crd, self.csrc()),
            11 => c_subw(crd, self.csrc()),
            12 => c_addw(crd, self.csrc()),
            13 => c_slli(rd, 1 + self.rng.below(63) as u32),
            14 => c_mv(rd, 1 + self.rng.below(31) as u32),
            15 => c_add(rd, 1 + self.rng.below(31) as u32),
            16 => c_addi4spn(crd, 4 * (1 + self.rng.below(255) as u32)),
            17 => c_nop(),
            _ => c_li(rd, self.rng.pick(&[0, -1, 31, -32])),
        };
        self.w16(h);
    }

    /// A base register and an offset that address the data area; some accesses cross the
    /// page boundary at DATA + 0x1000.
    fn address(&mut self) -> (u32, i32) {
        match self.rng.below(5) {
            0 | 1 => (B0, self.rng.below(4096) as i32 - 2048),
            2 => (B1, self.rng.below(24) as i32 - 12),
            3 => (B1, self.rng.below(4096) as i32 - 2048),
            _ => (SP, self.rng.below(2040) as i32 - 1024),
        }
    }

    /// One 32-bit load or store.
    fn mem(&mut self) {
        let (base, off) = self.address();
        let rd = if self.rng.chance(10) { 0 } else { self.dst() };
        let rs = self.src();
        let w = match self.rng.below(11) {
            0 => lb(rd, base, off),
            1 => lh(rd, base, off),
            2 => lw(rd, base, off),
            3 => ld(rd, base, off),
            4 => lbu(rd, base, off),
            5 => lhu(rd, base, off),
            6 => lwu(rd, base, off),
            7 => sb(rs, base, off),
            8 => sh(rs, base, off),
            9 => sw(rs, base, off),
            _ => sd(rs, base, off),
        };
        self.w32(w);
    }

    /// One compressed load or store.
    fn cmem(&mut self) {
        let base = self.rng.pick(&[B0, B1]);
        let (crd, rd) = (self.cdst(), self.rng.pick(&DEST));
        let rs = self.csrc();
        let h = match self.rng.below(8) {
            0 => c_lw(crd, base, 4 * self.rng.below(32) as u32),
            1 => c_ld(crd, base, 8 * self.rng.below(32) as u32),
            2 => c_sw(rs, base, 4 * self.rng.below(32) as u32),
            3 => c_sd(rs, base, 8 * self.rng.below(32) as u32),
            4 => c_lwsp(rd, 4 * self.rng.below(64) as u32),
            5 => c_ldsp(rd, 8 * self.rng.below(64) as u32),
            6 => c_swsp(self.src(), 4 * self.rng.below(64) as u32),
            _ => c_sdsp(self.src(), 8 * self.rng.below(64) as u32),
        };
        self.w16(h);
    }

    /// An interesting value into a register.
    fn value(&mut self) {
        let rd = self.rng.pick(&DEST);
        match self.rng.below(4) {
            0 => {
                let k = self.rng.below(VALUES.len() as u64) as i32;
                self.w32(ld(rd, B0, 8 * k));
            }
            1 => {
                self.w32(lui(rd, 0x80000));
                if self.rng.chance(50) {
                    self.w32(slli(rd, rd, 32));
                    self.w32(srli(rd, rd, 32));
                }
            }
            2 => {
                self.w32(addi(rd, 0, 1));
                self.w32(slli(rd, rd, 63));
                if self.rng.chance(50) {
                    self.w32(addi(rd, rd, -1));
                }
            }
            _ => self.w16(c_li(rd, -1)),
        }
    }

    /// One instruction (or a short sequence) the translator runs inline.
    fn straight(&mut self) {
        if self.float && self.rng.chance(40) {
            return self.fp();
        }
        match self.rng.below(20) {
            0..=6 => self.alu(),
            7..=9 => self.calu(),
            10..=14 => self.mem(),
            15..=17 => self.cmem(),
            _ => self.value(),
        }
    }

    /// A rounding-mode field: mostly dynamic, every static mode, rarely a reserved one
    /// (illegal: the trap handler of [`Mode::Float`] skips the instruction).
    fn rm(&mut self) -> u32 {
        match self.rng.below(24) {
            0..=9 => 7,
            23 => 5 + self.rng.below(2) as u32,
            k => (k % 5) as u32,
        }
    }

    /// One F or D instruction (or a short sequence around `mstatus.FS` or `frm`).
    fn fp(&mut self) {
        let fmt = if self.rng.chance(40) { FMT_S } else { FMT_D };
        let (d, a, b, c) = (
            self.rng.below(32) as u32,
            self.rng.below(32) as u32,
            self.rng.below(32) as u32,
            self.rng.below(32) as u32,
        );
        let (xd, xs) = (self.dst(), self.src());
        let rm = self.rm();
        let special = 0x100 + 8 * self.rng.below(FVALUES.len() as u64) as i32;
        let w = match self.rng.below(40) {
            0..=3 => fld(d, B0, special),
            4 => flw(d, B0, special + 4 * self.rng.below(2) as i32),
            5 => {
                let (base, off) = self.address();
                fld(d, base, off)
            }
            6 => {
                let (base, off) = self.address();
                flw(d, base, off)
            }
            7 => {
                let (base, off) = self.address();
                fsd(a, base, off)
            }
            8 => {
                let (base, off) = self.address();
                fsw(a, base, off)
            }
            9 => {
                let base = self.rng.pick(&[B0, B1]);
                let (fd, off) = (8 + self.rng.below(8) as u32, 8 * self.rng.below(32) as u32);
                let h = if self.rng.chance(50) {
                    c_fld(fd, base, off)
                } else {
                    c_fsd(fd, base, off)
                };
                return self.w16(h);
            }
            10 | 11 => fadd(fmt, d, a, b, rm),
            12 => fsub(fmt, d, a, b, rm),
            13 | 14 => fmul(fmt, d, a, b, rm),
            15 => fdiv(fmt, d, a, b, rm),
            16 => fsqrt(fmt, d, a, rm),
            17 => fmadd(fmt, d, a, b, c, rm),
            18 => fmsub(fmt, d, a, b, c, rm),
            19 => fnmsub(fmt, d, a, b, c, rm),
            20 => fnmadd(fmt, d, a, b, c, rm),
            21 => fsgnj(fmt, d, a, b),
            22 => fsgnjn(fmt, d, a, b),
            23 => fsgnjx(fmt, d, a, b),
            24 => fmin(fmt, d, a, b),
            25 => fmax(fmt, d, a, b),
            26 => feq(fmt, xd, a, b),
            27 => flt(fmt, xd, a, b),
            28 => fle(fmt, xd, a, b),
            29 => fclass(fmt, xd, a),
            30 => fcvt_to_int(fmt, self.rng.below(4) as u32, xd, a, rm),
            31 => fcvt_from_int(fmt, self.rng.below(4) as u32, d, xs, rm),
            32 => fcvt_s_d(d, a, rm),
            33 => fcvt_d_s(d, a, rm),
            34 => fmv_x_f(fmt, xd, a),
            35 => fmv_f_x(fmt, d, xs),
            // The dynamic rounding mode, any value (5-7 reserved).
            36 => csrrwi(0, FRM, self.rng.below(8) as u32),
            // The accrued flags read, or cleared.
            37 => match self.rng.below(3) {
                0 => csrr(xd, FCSR),
                1 => csrr(xd, FFLAGS),
                _ => csrrwi(0, FFLAGS, 0),
            },
            // FS Off (the handler turns it back to Initial), or Clean.
            38 if self.rng.chance(30) => {
                self.w32(lui(JR, 6));
                self.w32(csrrc(0, MSTATUS, JR));
                self.w32(lui(JR, 4));
                csrrs(0, MSTATUS, JR)
            }
            _ => {
                self.w32(lui(JR, 6));
                csrrc(0, MSTATUS, JR)
            }
        };
        self.w32(w);
    }

    /// One instruction beyond the plain integer ones: divisions and MULHSU (inline), AMOs
    /// (inline, with the helper behind them) and LR/SC (helpers; SC and AMOs end the block), CSR reads of scratch and counter
    /// registers (helpers) and writes (helpers that end the block and the chunk), FENCE.I
    /// (left to the interpreter).
    fn other(&mut self) {
        let (rd, a, b) = (self.dst(), self.src(), self.src());
        let base = self.rng.pick(&[B0, B1, SP]);
        let w = match self.rng.below(16) {
            0 => div(rd, a, b),
            1 => divu(rd, a, b),
            2 => rem(rd, a, b),
            3 => remu(rd, a, b),
            4 => divw(rd, a, b),
            5 => remuw(rd, a, b),
            6 => mulhsu(rd, a, b),
            7 => amo(AMO_ADD, 3, rd, base, b),
            8 => amo(AMO_SWAP, 2, rd, base, b),
            9 => amo(AMO_MAXU, 3, rd, base, b),
            10 => csrr(rd, self.csrs[0]),
            11 => csrw(self.csrs[0], a),
            12 => csrr(rd, self.csrs[1]),
            13 => csrr(rd, self.csrs[2]),
            14 if self.sctrclr && self.rng.chance(50) => 0x1040_0073, // SCTRCLR
            14 => fence_i(),
            _ => {
                // LR/SC around a plain (translated) store to the reserved address.
                self.w32(lr_d(rd, B0));
                if self.rng.chance(50) {
                    self.w32(sd(a, B0, 0));
                }
                sc_d(self.dst(), B0, b)
            }
        };
        self.w32(w);
    }

    /// A run of `n` straight-line instructions, with some left to the interpreter.
    fn run_of(&mut self, n: usize) {
        for _ in 0..n {
            if self.rng.chance(4) {
                self.other();
            } else {
                self.straight();
            }
        }
    }

    /// A forward conditional branch over a few instructions.
    fn forward_branch(&mut self) {
        let at = self.at();
        let compressed = self.rng.chance(20);
        if compressed {
            self.w16(0);
        } else {
            self.w32(0);
        }
        let n = self.rng.below(6) as usize;
        self.run_of(n);
        let off = self.from(at);
        let (a, b) = (self.src(), self.src());
        if compressed {
            let r = self.csrc();
            self.h[at] = if self.rng.chance(50) {
                c_beqz(r, off)
            } else {
                c_bnez(r, off)
            };
            return;
        }
        let w = match self.rng.below(6) {
            0 => beq(a, b, off),
            1 => bne(a, b, off),
            2 => blt(a, b, off),
            3 => bge(a, b, off),
            4 => bltu(a, b, off),
            _ => bgeu(a, b, off),
        };
        self.set32(at, w);
    }

    /// A forward JAL, C.J, JALR, C.JR or C.JALR over code that never runs.
    fn forward_jump(&mut self) {
        let kind = self.rng.below(5);
        let any = self.rng.pick(&DEST);
        let link = self.rng.pick(&[0, 1, 0, any]);
        let at = self.at();
        match kind {
            0 => self.w32(0),
            1 => self.w16(0),
            2 => {
                self.w32(auipc(JR, 0));
                self.w32(0);
            }
            _ => {
                self.w32(auipc(JR, 0));
                self.w32(0);
                self.w16(if kind == 3 { c_jr(JR) } else { c_jalr(JR) });
            }
        }
        let n = 1 + self.rng.below(4) as usize;
        self.run_of(n);
        let off = self.from(at);
        match kind {
            0 => self.set32(at, jal(link, off)),
            1 => self.h[at] = c_j(off),
            2 => {
                // rd == rs1 sometimes; an odd offset is rounded down by JALR.
                let rd = self.rng.pick(&[link, JR]);
                let odd = self.rng.below(2) as i32;
                self.set32(at + 2, jalr(rd, JR, off + odd));
            }
            _ => self.set32(at + 2, addi(JR, JR, off)),
        }
    }

    /// A counted loop (1-6 passes) around random code, closed by one of the branch kinds,
    /// by JAL or C.J with an exit branch at the top, or (outermost only) by JALR.
    fn counted_loop(&mut self, depth: usize) {
        let cnt = CNT[depth];
        let passes = 1 + self.rng.below(6) as i32;
        self.w32(addi(cnt, 0, passes));
        let kind = self.rng.below(if depth == 0 { 8 } else { 7 });
        if kind == 7 {
            self.w32(auipc(HEAD, 0));
            self.w32(addi(HEAD, HEAD, 8));
        }
        let head = self.at();
        // Loops closed at the bottom by a branch on the decremented counter.
        if kind < 4 {
            self.body(depth + 1);
            self.w32(addi(cnt, cnt, -1));
            let back = -self.from(head);
            self.w32(match kind {
                0 => bne(cnt, 0, back),
                1 => blt(0, cnt, back),
                2 => bltu(0, cnt, back),
                _ => bge(cnt, 0, back), // one pass more
            });
            return;
        }
        // Loops with the exit test at the top.
        let exit = self.at();
        self.w32(0);
        self.w32(addi(cnt, cnt, -1));
        self.body(depth + 1);
        let back = -self.from(head);
        match kind {
            7 => self.w32(jalr(0, HEAD, 0)),
            _ if back >= -2048 && self.rng.chance(50) => self.w16(c_j(back)),
            _ => self.w32(jal(0, back)),
        }
        let off = self.from(exit);
        self.set32(
            exit,
            match kind {
                4 => beq(cnt, 0, off),
                5 => bgeu(0, cnt, off),
                _ => bge(0, cnt, off),
            },
        );
    }

    /// The body of a loop: random items at `depth`, small enough for the branches around it.
    fn body(&mut self, depth: usize) {
        let items = 2 + self.rng.below(12) as usize;
        let start = self.at();
        for _ in 0..items {
            if self.at() - start > 600 {
                break;
            }
            self.item(depth);
        }
    }

    fn item(&mut self, depth: usize) {
        match self.rng.below(20) {
            0..=2 => self.forward_branch(),
            3 | 4 => self.forward_jump(),
            5 if depth < 2 => self.counted_loop(depth),
            6 => {
                // A long straight run: blocks up to the translator's size limit and beyond.
                let n = 20 + self.rng.below(60) as usize;
                for _ in 0..n {
                    self.straight();
                }
            }
            _ => {
                let n = 1 + self.rng.below(8) as usize;
                self.run_of(n);
            }
        }
    }
}

/// Where and how a random program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// M-mode, code at CODE and data at DATA.
    Machine,
    /// S-mode under Sv39: code and data at virtual addresses, on physical pages in another
    /// order (the two data pages are not adjacent).
    Sv39,
    /// A hosted guest (VS-mode, V = 1), code at CODE and data at DATA.
    Hosted,
    /// M-mode as `Machine`, with a supervisor timer interrupt (Sstc) every 130 instructions
    /// or so, taken by a handler at TRAP (the program runs after a prologue at CODE).
    Interrupts,
    /// M-mode as `Machine`, recording its transfers in CTR: a prologue at CODE writes
    /// `mctrctl` from x5, which [`ctr_setting`] chooses per seed (filters, NTBREN, RASEMU).
    Ctr,
    /// M-mode as `Machine` with every event of the catalog counted (see [`pmu_setup`]).
    Pmu,
    /// S-mode under Sv39 as `Sv39`, with every event counted: the TLB models run too.
    PmuSv39,
    /// M-mode as `Machine`, with F and D instructions mixed in: a prologue at CODE sets
    /// `mstatus.FS`, `frm` (from x5, by seed: reserved values too), the F registers and NX,
    /// and a trap handler at
    /// TRAP skips the instruction that trapped (FS Off, a reserved rounding mode) and sets FS
    /// to Initial.
    Float,
    /// `Float` with every event counted and the local counter overflow interrupt (LCOFI)
    /// enabled: counters overflow after 2 to 7 events (see [`lcofi_handler`], which logs
    /// every LCOFI's `mepc` and `minstret` to [`LCOFI_LOG`] and re-arms them), and the
    /// programs read the counters and write a counter or an event selector mid-block.
    PmuFloat,
    /// M-mode as `Machine`, profiled as a sampling profiler does: counters of cycles, loads
    /// and branch misses, each overflowing every so many events by seed
    /// ([`sampling_periods`]), with the LCOFI taken by [`sampling_handler`], which logs it
    /// as [`lcofi_handler`] does and re-arms the counters that overflowed. Translated
    /// blocks then run up to the cycles they may take before the counter of cycles wraps.
    PmuSampling,
}

/// [`Mode::PmuSampling`]'s periods (events between overflows) of its counters of cycles
/// (`mhpmcounter3`), loads (4) and branch misses (5), by seed.
fn sampling_periods(seed: u64) -> [i32; 3] {
    const CYCLES: [i32; 8] = [4, 6, 9, 40, 150, 400, 900, 2000];
    const LOADS: [i32; 4] = [300, 1000, 33, 2000];
    const MISSES: [i32; 4] = [13, 150, 700, 2000];
    [
        CYCLES[seed as usize % 8],
        LOADS[seed as usize / 8 % 4],
        MISSES[seed as usize / 3 % 4],
    ]
}

/// The prologue of [`Mode::PmuSampling`]: the three counters counting (every mode) from
/// their periods below overflow, LCOFI enabled. Clobbers x5.
fn sampling_prologue(seed: u64) -> Vec<u32> {
    use vcpu::pmu::events::{selector, Event};
    const MHPMEVENT3: u32 = 0x323;
    const MHPMCOUNTER3: u32 = 0xb03;
    let mut v = vec![csrw(MCOUNTINHIBIT, 0)];
    let events = [Event::Cycles, Event::Loads, Event::BranchMisses];
    for (k, (e, period)) in events.into_iter().zip(sampling_periods(seed)).enumerate() {
        let k = k as u32;
        v.extend([
            addi(5, 0, selector(e) as i32),
            csrw(MHPMEVENT3 + k, 5),
            addi(5, 0, -period),
            csrw(MHPMCOUNTER3 + k, 5),
        ]);
    }
    v.extend([lui(5, 2), csrrs(0, MIE, 5), csrrsi(0, MSTATUS, 8)]);
    v
}

/// The trap handler of [`Mode::PmuSampling`] ([`lcofi_handler_with`]): for the LCOFI,
/// each counter whose OF bit is set re-armed to overflow after its period and its OF bit
/// cleared (no exceptions are expected).
fn sampling_handler(seed: u64) -> Vec<u32> {
    const MHPMEVENT3: u32 = 0x323;
    const MHPMCOUNTER3: u32 = 0xb03;
    lcofi_handler_with(|v| {
        for (k, period) in sampling_periods(seed).into_iter().enumerate() {
            let k = k as u32;
            v.extend([
                csrr(2, MHPMEVENT3 + k),
                bge(2, 0, 16),
                addi(2, 0, -period),
                csrw(MHPMCOUNTER3 + k, 2),
                csrrc(0, MHPMEVENT3 + k, 1),
            ]);
        }
    })
}

/// The log of [`Mode::PmuFloat`]'s LCOFIs: entries of `mepc` and `minstret`, 128 KiB
/// (wrapping), the offset of the next entry at `LCOFI_LOG - 8`.
const LCOFI_LOG: u64 = RAM_BASE + 0x8_0000;

/// The prologue of [`Mode::PmuFloat`]: `Float`'s, every event counted, LCOFI enabled.
fn pmu_float_prologue() -> Vec<u32> {
    let mut v = float_prologue();
    v.extend(pmu_setup());
    v.extend([lui(5, 2), csrrs(0, MIE, 5), csrrsi(0, MSTATUS, 8)]);
    v
}

/// The trap handler of [`Mode::PmuFloat`]: `Float`'s for exceptions; for the LCOFI, with
/// counting inhibited, the log entry (`mepc`, `minstret`), counters 3-30 re-armed to
/// overflow after `2 + (k + seed) % 6` events (the handler's last instruction, MRET,
/// counts one at most), their OF bits and LCOFIP cleared, and counting resumed.
fn lcofi_handler(seed: u64) -> Vec<u32> {
    const MHPMEVENT3: u32 = 0x323;
    const MHPMCOUNTER3: u32 = 0xb03;
    lcofi_handler_with(|v| {
        for k in 0..28u32 {
            let period = 2 + (k as i32 + seed as i32) % 6;
            v.extend([
                addi(2, 0, -period),
                csrw(MHPMCOUNTER3 + k, 2),
                csrrc(0, MHPMEVENT3 + k, 1),
            ]);
        }
    })
}

/// An M-mode trap handler at TRAP: for the LCOFI, with counting inhibited, the log entry
/// (`mepc`, `minstret`) at [`LCOFI_LOG`], then `rearm`'s code (with x1 = bit 63, the OF
/// bit, and x2 free), LCOFIP cleared and counting resumed; for exceptions (mcause >= 0)
/// `Float`'s handler. x1 and x2 are kept in `mscratch` and `sscratch` meanwhile.
fn lcofi_handler_with(rearm: impl FnOnce(&mut Vec<u32>)) -> Vec<u32> {
    let mut v = vec![
        csrrw(1, MSCRATCH, 1),
        csrrw(2, SSCRATCH, 2),
        csrr(1, MCAUSE),
    ];
    let branch = v.len();
    v.push(0);
    v.extend([
        addi(1, 0, -1),
        csrw(MCOUNTINHIBIT, 1),
        lui(2, (LCOFI_LOG >> 12) as u32),
        slli(2, 2, 32),
        srli(2, 2, 32),
        ld(1, 2, -8),
        addi(1, 1, 16),
        slli(1, 1, 47),
        srli(1, 1, 47),
        sd(1, 2, -8),
        add(1, 1, 2),
        csrr(2, MEPC),
        sd(2, 1, 0),
        csrr(2, MINSTRET),
        sd(2, 1, 8),
        addi(1, 0, -1),
        slli(1, 1, 63),
    ]);
    rearm(&mut v);
    v.extend([
        addi(1, 0, 1),
        slli(1, 1, 13),
        csrrc(0, MIP, 1),
        csrrw(2, SSCRATCH, 2),
        csrrw(1, MSCRATCH, 1),
        csrw(MCOUNTINHIBIT, 0),
        mret(),
    ]);
    // Exceptions (mcause >= 0): `Float`'s handler, x1 and x2 already saved.
    v[branch] = bge(1, 0, 4 * (v.len() - branch) as i32);
    v.extend(&float_handler()[2..]);
    v
}

/// The prologue of [`Mode::Float`].
fn float_prologue() -> Vec<u32> {
    let mut v = vec![lui(6, 2), csrrs(0, MSTATUS, 6), csrrw(0, FRM, 5)];
    // Every F register from FVALUES, and NX set (as after any inexact operation).
    v.extend((0..32).map(|r| fld(r, B0, 0x100 + 8 * (r as i32 % FVALUES.len() as i32))));
    v.push(csrrwi(0, FFLAGS, 1));
    v
}

/// The trap handler of [`Mode::Float`]: mepc past the instruction, FS Initial, with x1 and
/// x2 kept in `mscratch` and `sscratch` meanwhile (M-mode programs do not use `sscratch`).
fn float_handler() -> Vec<u32> {
    vec![
        csrrw(1, MSCRATCH, 1),
        csrrw(2, SSCRATCH, 2),
        // The length of the instruction in `mtval` (its bits): 4, or 2 when compressed.
        csrr(1, MTVAL),
        andi(1, 1, 3),
        addi(1, 1, -3),
        sltiu(1, 1, 1),
        slli(1, 1, 1),
        addi(1, 1, 2),
        csrr(2, MEPC),
        add(2, 2, 1),
        csrw(MEPC, 2),
        lui(1, 2),
        csrrs(0, MSTATUS, 1),
        csrrw(2, SSCRATCH, 2),
        csrrw(1, MSCRATCH, 1),
        mret(),
    ]
}

/// Counters 3-30 count the 28 events of the catalog, each starting a different distance
/// below its overflow, so that overflows (OF bits, LCOFIP) happen all along a program.
/// Clobbers x5.
fn pmu_setup() -> Vec<u32> {
    const MHPMEVENT3: u32 = 0x323;
    const MHPMCOUNTER3: u32 = 0xb03;
    let mut v = vec![csrw(MCOUNTINHIBIT, 0)];
    for (k, e) in vcpu::pmu::events::CATALOG.iter().enumerate().take(28) {
        let sel = e.selector as i64;
        let hi = ((sel + 0x800) >> 12) as u32 & 0xf_ffff;
        let lo = (sel - ((sel + 0x800) >> 12 << 12)) as i32;
        let k = k as u32;
        v.extend([
            lui(5, hi),
            addiw(5, 5, lo),
            csrw(MHPMEVENT3 + k, 5),
            addi(5, 0, -(60 * k as i32 + 7)),
            csrw(MHPMCOUNTER3 + k, 5),
        ]);
    }
    v
}

/// The prologue of [`Mode::Ctr`].
fn ctr_prologue() -> Vec<u32> {
    vec![csrrw(0, MCTRCTL, 5)]
}

/// `mctrctl` for seed `seed` in [`Mode::Ctr`]: M-mode recording, and by the seed's low bits
/// not-taken branches (NTBREN), RAS emulation, or a random set of inhibited types (the
/// filter bits 32 + type: `mctrctl` fields of Smctr 2.1, used by 6.2
/// "Transfer Type Filtering").
fn ctr_setting(seed: u64) -> u64 {
    use vcpu::ctr::{CTRCTL_FILTERS, CTRCTL_M, CTRCTL_NTBREN, CTRCTL_RASEMU};
    let mut rng = seeded(seed ^ 0xc7c7);
    match seed % 4 {
        0 => CTRCTL_M,
        1 => CTRCTL_M | CTRCTL_NTBREN,
        2 => CTRCTL_M | CTRCTL_RASEMU,
        _ => CTRCTL_M | CTRCTL_NTBREN | (rng.next() & CTRCTL_FILTERS),
    }
}

/// The prologue of [`Mode::Interrupts`] at CODE: STCE, a first deadline, STIE, MIE.
fn interrupt_prologue() -> Vec<u32> {
    vec![
        addi(5, 0, -1),
        slli(5, 5, 63),
        csrrs(0, MENVCFG, 5),
        csrr(5, TIME),
        addi(5, 5, 3),
        csrw(STIMECMP, 5),
        addi(5, 0, 1 << 5),
        csrrs(0, MIE, 5),
        csrrsi(0, MSTATUS, 8),
    ]
}

/// The interrupt handler of [`Mode::Interrupts`]: moves the deadline on by 13 ticks, with
/// x1 kept in `mscratch` meanwhile (the programs use `sscratch` in this mode).
fn interrupt_handler() -> Vec<u32> {
    vec![
        csrrw(1, MSCRATCH, 1),
        csrr(1, STIMECMP),
        addi(1, 1, 13),
        csrw(STIMECMP, 1),
        csrrw(1, MSCRATCH, 1),
        mret(),
    ]
}

/// Virtual pages of the random programs under Sv39 (L0 indices).
const SV39_CODE_PAGE: u64 = 64;
const SV39_DATA_PAGE: u64 = 100;

impl Mode {
    fn code(self) -> u64 {
        match self {
            Mode::Sv39 => vpage(SV39_CODE_PAGE),
            Mode::Interrupts => CODE + 4 * interrupt_prologue().len() as u64,
            Mode::Ctr => CODE + 4 * ctr_prologue().len() as u64,
            Mode::Pmu => CODE + 4 * pmu_setup().len() as u64,
            Mode::Float => CODE + 4 * float_prologue().len() as u64,
            Mode::PmuFloat => CODE + 4 * pmu_float_prologue().len() as u64,
            Mode::PmuSampling => CODE + 4 * sampling_prologue(0).len() as u64,
            Mode::PmuSv39 => vpage(SV39_CODE_PAGE),
            _ => CODE,
        }
    }
    fn data(self) -> u64 {
        match self {
            Mode::Sv39 | Mode::PmuSv39 => vpage(SV39_DATA_PAGE),
            _ => DATA,
        }
    }
    fn pair(self) -> Pair {
        if self != Mode::Hosted {
            return Pair::new();
        }
        let guest = |jit| {
            let mut vm = machine(jit, &[]);
            let config = HartConfig {
                jit,
                ..HartConfig::default()
            };
            vm.hart = vcpu::Hart::new_guest(config, vm.mem.clone()).unwrap();
            vm.hart.set_pc(CODE);
            vm
        };
        Pair {
            jit: guest(true),
            int: guest(false),
        }
    }
}

/// Physical page of page `k` of a random program's code under Sv39 (in reverse order).
fn sv39_code_frame(k: u64) -> u64 {
    RAM_BASE + 0x4_0000 + (15 - k) * 0x1000
}
/// Physical pages of the two data pages under Sv39.
const SV39_DATA_FRAMES: [u64; 2] = [RAM_BASE + 0x5_3000, RAM_BASE + 0x5_0000];

/// A random program of about `halfwords` halfwords ending in WFI; returns its halfwords.
fn random_program(seed: u64, halfwords: usize, mode: Mode) -> Vec<u16> {
    let mut g = Gen {
        rng: seeded(seed),
        // The CSR the programs write: with an odd seed in `Ctr` and `Pmu` mode the one
        // that switches recording or counting on and off (random values: enables, filters,
        // RASEMU; inhibit bits), so that blocks run under changing settings and the
        // translator switches between plain and monitored blocks.
        csrs: match mode {
            Mode::Ctr if seed % 2 == 1 => [MCTRCTL, MINSTRET, MCYCLE],
            Mode::Pmu if seed % 2 == 1 => [MCOUNTINHIBIT, MINSTRET, MCYCLE],
            Mode::Machine | Mode::Ctr | Mode::Pmu | Mode::Float => [MSCRATCH, MINSTRET, MCYCLE],
            // The counter of cycles read, through its unprivileged alias too.
            Mode::PmuSampling => [MSCRATCH, 0xb03, 0xc03],
            // A counter or an event selector written (random values: near overflow, OF
            // set, modes inhibited, events outside the catalog) and read, and a counter
            // read through its unprivileged alias.
            Mode::PmuFloat => {
                let k = (seed % 28) as u32;
                let written = if seed.is_multiple_of(2) { 0xb03 } else { 0x323 };
                [written + k, 0xc03 + (k + 5) % 28, MCYCLE]
            }
            // With an odd seed under Sv39, in a hosted guest (`vsstatus`) and with timer
            // interrupts: `sstatus` (random values: SIE, SUM, MXR, FS set and cleared), whose
            // writes do not end a block (`x64::csr_ends_block`).
            Mode::Sv39 | Mode::Hosted | Mode::Interrupts if seed % 2 == 1 => {
                [SSTATUS, INSTRET, CYCLE]
            }
            _ => [SSCRATCH, INSTRET, CYCLE],
        },
        float: matches!(mode, Mode::Float | Mode::PmuFloat),
        sctrclr: mode == Mode::Ctr && seed.is_multiple_of(2) && ![600, 640].contains(&seed),
        h: Vec::new(),
    };
    while g.h.len() < halfwords {
        g.item(0);
    }
    if matches!(mode, Mode::Interrupts | Mode::PmuFloat | Mode::PmuSampling) {
        // Nothing enabled, so that WFI stops the hart.
        g.w32(csrrci(0, MSTATUS, 8));
        g.w32(csrw(MIE, 0));
    }
    g.w32(wfi());
    assert!(
        2 * g.h.len() as u64 <= DATA - CODE,
        "program too large for the code area"
    );
    assert!(
        g.h.len() <= 16 * 0x800,
        "program too large for the Sv39 code pages"
    );
    g.h
}

/// Load a random program, its data and its initial registers into both machines; returns
/// the address of its final WFI.
fn load_random(p: &mut Pair, seed: u64, halfwords: usize) -> u64 {
    load_random_in(p, seed, halfwords, Mode::Machine)
}

fn load_random_in(p: &mut Pair, seed: u64, halfwords: usize, mode: Mode) -> u64 {
    let code = random_program(seed, halfwords, mode);
    let data_va = mode.data();
    let mut rng = seeded(seed ^ 0x5555);
    let mut data: Vec<u8> = (0..DATA_LEN).map(|_| rng.next() as u8).collect();
    for (k, v) in VALUES.iter().enumerate() {
        data[0x800 + 8 * k..0x808 + 8 * k].copy_from_slice(&v.to_le_bytes());
    }
    if matches!(mode, Mode::Float | Mode::PmuFloat) {
        for (k, v) in FVALUES.iter().enumerate() {
            data[0x900 + 8 * k..0x908 + 8 * k].copy_from_slice(&v.to_le_bytes());
        }
    }
    let mut regs = [0u64; 32];
    for (r, v) in regs.iter_mut().enumerate().skip(1) {
        *v = if rng.chance(50) {
            rng.pick(&VALUES)
        } else {
            rng.next()
        };
        *v = match r as u32 {
            SP => data_va + 0x1c00,
            B0 => data_va + 0x800,
            B1 => data_va + 0x1000,
            31 => TRAP, // read by the boot stub
            5 if mode == Mode::Ctr => ctr_setting(seed),
            // RNE for half the seeds, any value (reserved ones too) for the others.
            5 if matches!(mode, Mode::Float | Mode::PmuFloat) => (seed / 2 % 8) * (seed % 2),
            _ => *v,
        };
    }
    p.both(|vm| {
        for (r, &v) in regs.iter().enumerate() {
            vm.set_x(r, v);
        }
        if !matches!(mode, Mode::Sv39 | Mode::PmuSv39) {
            vm.put16(mode.code(), &code);
            vm.mem.write_slice(&data, GuestAddress(DATA)).unwrap();
            if mode == Mode::Interrupts {
                vm.put32(CODE, &interrupt_prologue());
                vm.put32(TRAP, &interrupt_handler());
            }
            if mode == Mode::Ctr {
                vm.put32(CODE, &ctr_prologue());
            }
            if mode == Mode::Pmu {
                vm.put32(CODE, &pmu_setup());
            }
            if mode == Mode::Float {
                vm.put32(CODE, &float_prologue());
                vm.put32(TRAP, &float_handler());
            }
            if mode == Mode::PmuFloat {
                vm.put32(CODE, &pmu_float_prologue());
                vm.put32(TRAP, &lcofi_handler(seed));
            }
            if mode == Mode::PmuSampling {
                vm.put32(CODE, &sampling_prologue(seed));
                vm.put32(TRAP, &sampling_handler(seed));
            }
            return;
        }
        page_tables(vm);
        for (k, page) in code.chunks(0x800).enumerate() {
            let k = k as u64;
            vm.put16(sv39_code_frame(k), page);
            map(vm, false, SV39_CODE_PAGE + k, sv39_code_frame(k), V | X | A);
        }
        // Hardware sets A and D of the first data page, and D of the second.
        let flags = [V | R | W, V | R | W | A];
        for (k, (page, frame)) in data.chunks(0x1000).zip(SV39_DATA_FRAMES).enumerate() {
            vm.mem.write_slice(page, GuestAddress(frame)).unwrap();
            map(vm, false, SV39_DATA_PAGE + k as u64, frame, flags[k]);
        }
        // M-mode: satp, the counters for S-mode, then S-mode at the program.
        vm.set_x(19, satp(PT_ROOT));
        vm.set_x(18, 7);
        let mut m = vec![csrw(SATP, 19), sfence_vma(0, 0), csrw(MCOUNTEREN, 18)];
        if mode == Mode::PmuSv39 {
            m.extend(pmu_setup());
        }
        m.extend(vm.enter_mode(PrivilegeMode::Supervisor, mode.code()));
        vm.code(&m);
    });
    mode.code() + 2 * code.len() as u64 - 4
}

#[test]
fn random_programs_match_the_interpreter() {
    let mut total = 0;
    for seed in 1..=48u64 {
        let mut p = Pair::new();
        let end = load_random(&mut p, seed, 6000);
        let ctx = format!("seed {seed}");
        p.run_to_wfi(&ctx);
        assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        p.assert_same_ram(&ctx);
        total += p.int.hart.executed();
        assert!(p.int.hart.executed() > 3000, "{ctx}: too short a run");
    }
    assert!(total > 300_000, "{total} instructions in all");
}

/// A pair whose translating hart translates a block at the third dispatch to it
/// (`HartConfig::jit_threshold`, as `vmm` does): the first two run interpreted.
fn pair_translating_at_the_third_dispatch() -> Pair {
    Pair {
        jit: Vm::with_config(HartConfig {
            jit: true,
            jit_threshold: 3,
            ..HartConfig::default()
        }),
        int: machine(false, &[]),
    }
}

/// The random programs with blocks translated at their third dispatch: interpreted runs of
/// blocks not translated yet, and translated blocks, alternate as the program goes.
#[test]
fn random_programs_match_the_interpreter_translating_at_the_third_dispatch() {
    for seed in 1..=16u64 {
        let mut p = pair_translating_at_the_third_dispatch();
        let end = load_random(&mut p, seed, 6000);
        let ctx = format!("seed {seed}, third dispatch");
        p.run_to_wfi(&ctx);
        assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        p.assert_same_ram(&ctx);
        assert!(
            p.jit.hart.translated_blocks() > 0,
            "{ctx}: nothing translated"
        );
    }
}

/// A loop of one block with the threshold at 3: two iterations leave it untranslated, the
/// third dispatch translates it (and the rest of the loop runs translated); the same
/// results as the interpreter's either way, also in budget steps of 1 to 4. Where a step
/// is too short for the block, the interpreter runs it: a run that ends inside it starts the
/// next one there without a dispatch, so no block is translated inside it
/// (`Hart::jit_short_of`).
/// (The first instruction, before the loop, fills the fetch TLB: a dispatch that misses it
/// is no dispatch to a block.)
#[test]
fn a_block_is_translated_at_the_third_dispatch_to_it() {
    let body = [
        addi(0, 0, 0),
        addi(13, 13, 3),
        addi(10, 10, 1),
        blt(10, 11, -8),
    ];
    for (iterations, translated) in [(1, 0), (2, 0), (3, 1), (50, 1)] {
        for step in [10_000_000, 1, 2, 3, 4] {
            let ctx = format!("{iterations} iterations, budget steps of {step}");
            let mut p = pair_translating_at_the_third_dispatch();
            p.set_x(11, iterations);
            p.both(|vm| {
                vm.code(&body);
            });
            p.run_to_wfi_in_steps(step, &ctx);
            assert_eq!(p.jit.x(13), 3 * iterations, "{ctx}");
            // In steps the block may never fit: then nothing is translated.
            if step == 10_000_000 {
                assert_eq!(p.jit.hart.translated_blocks(), translated, "{ctx}");
            } else {
                assert!(p.jit.hart.translated_blocks() <= translated, "{ctx}");
            }
        }
    }
}

/// The interpreter runs a block too long for the rest of a run without dispatches inside
/// it (above), and no further: the block after it in a straight line (a loop of 71
/// instructions: a block of 64, the most, then one of 7 with the closing branch) is
/// dispatched to and translated, although the first never fits in runs of 50 (it is
/// translated too, when the second's closing branch is linked to it, and never runs).
#[test]
fn the_block_after_one_too_long_for_the_run_is_dispatched() {
    let mut body = vec![addi(9, 0, 20)];
    let head = body.len();
    body.extend((0..69).map(|k| addi(10 + k % 4, 10 + k % 4, 1)));
    body.push(addi(9, 9, -1));
    let back = -4 * (body.len() - head) as i32;
    body.push(bne(9, 0, back));
    let mut p = pair_translating_at_the_third_dispatch();
    p.both(|vm| {
        vm.code(&body);
    });
    p.run_to_wfi_in_steps(50, "runs of 50");
    assert_eq!(p.jit.x(10), 20 * 18, "x10");
    assert_eq!(p.jit.hart.translated_blocks(), 2, "both blocks");
}

/// A forward conditional branch is a side exit (`x64::side_exit`): taken, it leaves its
/// block, which gives back the budget of the instructions after it; not taken, the block
/// goes on. A loop whose body skips an instruction on every fourth pass is one block with a
/// side exit, plus the block at the branch's target (and the one of the CSR write before
/// the loop): three blocks, where a branch that ends its block makes four. With CTR
/// recording taken branches the side exits record them (records and cycle counts are the
/// interpreter's: the side exit's clock). Where CTR records branches not taken
/// (`CTRCTL.NTBREN`), each branch ends its block again (else the records of those not taken
/// would be missing). Each run matches the interpreter, in budget steps too.
#[test]
fn a_forward_branch_leaves_its_block_only_when_taken() {
    use vcpu::ctr::{CTRCTL_M, CTRCTL_NTBREN};
    let body = [
        csrrw(0, MCTRCTL, 5),
        addi(10, 10, 1), // the loop
        andi(12, 10, 3),
        beq(12, 0, 8), // every fourth pass: over the next instruction
        addi(13, 13, 1),
        addi(14, 14, 2),
        blt(10, 11, -20),
    ];
    // With CTR on, the first record through the helper also changes the blocks' CTR key
    // (`Jit::ctr_pair`), and some are translated again: blocks are counted with CTR off.
    for (ctl, blocks) in [
        (0, Some(3)),
        (CTRCTL_M, None),
        (CTRCTL_M | CTRCTL_NTBREN, None),
    ] {
        for step in [None, Some(1), Some(2), Some(3), Some(5), Some(7), Some(40)] {
            let ctx = format!("mctrctl {ctl:#x}, budget steps {step:?}");
            let mut p = Pair::new();
            p.both(|vm| {
                vm.code(&body);
            });
            p.set_x(5, ctl);
            p.set_x(11, 1000);
            match step {
                None => p.run_to_wfi(&ctx),
                Some(n) => p.run_to_wfi_in_steps(n, &ctx),
            }
            assert_eq!((p.jit.x(13), p.jit.x(14)), (750, 2000), "{ctx}");
            if ctl != 0 {
                assert_eq!(p.jit.hart.ctr_records().len(), 16, "{ctx}");
            }
            if let (None, Some(blocks)) = (step, blocks) {
                assert_eq!(p.jit.hart.translated_blocks(), blocks, "{ctx}");
            }
        }
    }
}

/// PAUSE on a hart with `HartConfig::pause_yields` (a vCPU of a VM of several) stays in
/// the block around it, which runs the interpreter's pause-loop detection through a helper
/// (`jit_pause`) instead of leaving translated code at every PAUSE: a spin loop with two
/// PAUSEs is translated into the blocks it has when PAUSE is a plain FENCE, with the
/// interpreter's results, also in budget steps. Its 4 000 iterations pass the pause window
/// (4 096 instruction slots) more than once, so the helper gives the host CPU away on the
/// way.
#[test]
fn pause_in_a_spin_loop_splits_no_block() {
    const PAUSE: u32 = 0x0100_000f;
    let body = [
        addi(13, 13, 3),
        PAUSE,
        addi(10, 10, 1),
        PAUSE,
        addi(12, 12, 2),
        blt(10, 11, -20),
    ];
    for step in [10_000_000, 1, 3] {
        let ctx = format!("budget steps of {step}");
        let config = |jit, pause_yields| HartConfig {
            jit,
            pause_yields,
            ..HartConfig::default()
        };
        // The same program with PAUSE a plain FENCE (`pause_yields` off): its blocks.
        let mut plain = Pair {
            jit: Vm::with_config(config(true, false)),
            int: Vm::with_config(config(false, false)),
        };
        let mut p = Pair {
            jit: Vm::with_config(config(true, true)),
            int: Vm::with_config(config(false, true)),
        };
        for p in [&mut plain, &mut p] {
            p.set_x(11, 4000);
            p.both(|vm| {
                vm.code(&body);
            });
            p.run_to_wfi_in_steps(step, &ctx);
            assert_eq!(p.jit.x(13), 12_000, "{ctx}");
            assert_eq!(p.jit.x(12), 8_000, "{ctx}");
        }
        if step == 10_000_000 {
            // Before, each PAUSE ended a block and ran in the interpreter: 4 blocks, not 3.
            assert_eq!(
                p.jit.hart.translated_blocks(),
                plain.jit.hart.translated_blocks(),
                "{ctx}"
            );
        }
    }
}

fn random_programs_in(mode: Mode, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let mut p = mode.pair();
        let end = load_random_in(&mut p, seed, 6000, mode);
        let ctx = format!("{mode:?}, seed {seed}");
        p.run_to_wfi(&ctx);
        assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        p.assert_same_ram(&ctx);
        assert!(p.int.hart.executed() > 3000, "{ctx}: too short a run");
        if mode == Mode::Interrupts {
            // Interrupts were taken all along (the deadline moved on with time).
            let deadline = p.int.csr(STIMECMP);
            let now = p.int.csr(TIME);
            assert!(
                deadline > 13 * 10,
                "{ctx}: few interrupts (stimecmp {deadline})"
            );
            assert!(
                deadline + 13 > now,
                "{ctx}: interrupts stopped early (stimecmp {deadline}, time {now})"
            );
        }
    }
}

#[test]
fn random_programs_match_the_interpreter_under_sv39() {
    random_programs_in(Mode::Sv39, 300..324);
}

/// PMP (16 entries) under Sv39: NA4 entries inside the first data page and the first code
/// page give those pages more than one verdict, so the TLB never keeps them (every access
/// and fetch there takes the slow path, and no block is entered on that code page); an
/// allow-all entry 15 covers the rest. Then a store into a page the PMP makes read-only
/// mid-program: the same access fault, in the same place, translated or not.
#[test]
fn random_programs_match_the_interpreter_with_pmp() {
    use vcpu::Vcpu;
    const PMPCFG0: u16 = 0x3a0;
    const PMPCFG2: u16 = 0x3a2;
    const PMPADDR0: u16 = 0x3b0;
    let pmp_pair = || {
        let vm = |jit| {
            Vm::with_config(HartConfig {
                jit,
                pmp_entries: 16,
                ..HartConfig::default()
            })
        };
        Pair {
            jit: vm(true),
            int: vm(false),
        }
    };
    let setup = |vm: &mut Vm, data_cfg: u64| {
        let h = &mut vm.hart;
        h.set_host_csr(PMPADDR0, (SV39_DATA_FRAMES[0] + 0x10) >> 2)
            .unwrap();
        h.set_host_csr(PMPADDR0 + 1, (sv39_code_frame(0) + 0x20) >> 2)
            .unwrap();
        h.set_host_csr(PMPADDR0 + 15, u64::MAX).unwrap();
        // Entries 0 and 1: NA4 (RWX, or R only for entry 0 in the faulting run).
        h.set_host_csr(PMPCFG0, data_cfg | (0x17 << 8)).unwrap();
        h.set_host_csr(PMPCFG2, 0x1f << 56).unwrap();
    };
    for seed in 500..512 {
        let mut p = pmp_pair();
        let end = load_random_in(&mut p, seed, 6000, Mode::Sv39);
        p.both(|vm| setup(vm, 0x17));
        let ctx = format!("PMP, seed {seed}");
        p.run_to_wfi(&ctx);
        assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        p.assert_same_ram(&ctx);
        assert!(p.int.hart.executed() > 3000, "{ctx}: too short a run");
    }
    // Entry 0 read-only on a word the programs store to (the data pointers start at
    // 0x800 and 0x1000 into the area): they stop on an access fault, the same in both.
    let mut faulted = 0;
    for seed in 500..512 {
        let mut p = pmp_pair();
        load_random_in(&mut p, seed, 6000, Mode::Sv39);
        p.both(|vm| {
            setup(vm, 0x11);
            vm.hart
                .set_host_csr(PMPADDR0, (SV39_DATA_FRAMES[0] + 0x800) >> 2)
                .unwrap();
        });
        let ctx = format!("PMP fault, seed {seed}");
        p.run_to_wfi(&ctx);
        p.assert_same_ram(&ctx);
        if p.int.hart.pc() == TRAP + 4 {
            // A store, or a load that covers only part of the entry's 4 bytes (a partial
            // match fails whatever the permissions).
            let c = p.int.mtrap().cause;
            assert!(
                c == cause::STORE_ACCESS || c == cause::LOAD_ACCESS,
                "{ctx}: cause {c}"
            );
            faulted += 1;
        }
    }
    assert!(faulted > 0, "no program stored to the read-only word");
}

/// Debug triggers (Sdtrig `mcontrol6`): while one is armed the hart runs no translated
/// block, and a breakpoint stops a program at the same instruction, with the same state,
/// translated or not. M-mode programs with `mstatus.MIE` = 1 (so that M-mode triggers may
/// match, debug spec 5.4; `mie` = 0 keeps interrupts off): a load/store trigger on a word
/// the programs use, an execute trigger inside the program, and a trigger enabled only for
/// U (armed, never firing: the program completes).
#[test]
fn random_programs_match_the_interpreter_with_triggers() {
    use vcpu::Vcpu;
    use vcpu_api::csr as c;
    let t6 = c::TDATA1_TYPE_MCONTROL6;
    let mut fired = [0; 2];
    for seed in 600..624u64 {
        for (kind, t1) in [
            (
                0usize,
                t6 | c::MCONTROL6_M | c::MCONTROL6_LOAD | c::MCONTROL6_STORE,
            ),
            (1, t6 | c::MCONTROL6_M | c::MCONTROL6_EXECUTE),
            (
                2,
                t6 | c::MCONTROL6_U | c::MCONTROL6_EXECUTE | c::MCONTROL6_LOAD,
            ),
        ] {
            let mut p = Pair::new();
            let end = load_random(&mut p, seed, 6000);
            let t2 = match kind {
                0 => DATA + 0x800 + 8 * (seed % 8),
                _ => CODE + 0x100 + 2 * (seed * 37 % 2000),
            };
            p.both(|vm| {
                let h = &mut vm.hart;
                h.set_host_csr(c::TSELECT, seed % 4).unwrap();
                h.set_host_csr(c::TDATA1, 0).unwrap();
                h.set_host_csr(c::TDATA2, t2).unwrap();
                h.set_host_csr(c::TDATA1, t1).unwrap();
                let ms = h.host_csr(c::MSTATUS).unwrap();
                h.set_host_csr(c::MSTATUS, ms | c::MSTATUS_MIE).unwrap();
            });
            let ctx = format!("triggers, seed {seed}, kind {kind}");
            p.run_to_wfi(&ctx);
            p.assert_same_ram(&ctx);
            assert_eq!(p.jit.hart.translated_blocks(), 0, "{ctx}: translated");
            let (i, j) = (p.int.mtrap(), p.jit.mtrap());
            assert_eq!((i.cause, i.epc, i.tval), (j.cause, j.epc, j.tval), "{ctx}");
            if p.int.hart.pc() == end + 4 {
                continue;
            }
            assert!(kind < 2, "{ctx}: a U-only trigger fired in M");
            if i.cause == cause::BREAKPOINT {
                // Equal match: the byte that matched is tdata2.
                assert_eq!(i.tval, t2, "{ctx}");
                fired[kind] += 1;
            }
        }
    }
    assert!(fired[0] > 0 && fired[1] > 0, "breakpoints taken: {fired:?}");
}

#[test]
fn random_programs_match_the_interpreter_in_a_hosted_guest() {
    random_programs_in(Mode::Hosted, 400..424);
}

#[test]
fn random_programs_match_the_interpreter_with_timer_interrupts() {
    random_programs_in(Mode::Interrupts, 500..524);
}

#[test]
fn random_programs_match_the_interpreter_recording_ctr() {
    random_programs_in(Mode::Ctr, 600..632);
    // The programs did record: a full buffer, every entry with CCV set but the oldest.
    let mut p = Mode::Ctr.pair();
    load_random_in(&mut p, 600, 6000, Mode::Ctr);
    p.run_to_wfi("CTR, seed 600");
    let records = p.int.hart.ctr_records();
    assert!(
        records.len() >= 16 && records.iter().all(|e| e.source & 1 == 1),
        "CTR recorded too little: {records:x?}"
    );
}

/// Translated code logs its common records and the log is drained into the buffer when it
/// returns, and before a helper records or runs a CSR instruction (`ctr/log.rs`). A loop
/// whose recorded transfers are JALs (its branches inhibited) runs hundreds of records in
/// one run of linked blocks, and thousands (around the log's ring several times): only the
/// last 16 reach the buffer; the others move WRPTR and the cycle counter. With a long inner
/// loop, cycle counts of 4096 and more, which
/// need the encoding; or each pass reads `sctrstatus` after a record. Then blocks translated
/// while the mode recorded nothing (which record through the helper) and a block
/// translated while it records (which logs) alternate in one run. Registers, buffer, cycle
/// counts and `sctrstatus` are compared with the interpreter's, after whole runs and after
/// runs cut every few instructions.
#[test]
fn logged_ctr_records_drain_as_the_interpreter_records() {
    use vcpu::ctr::{ty, CTRCTL_M, CTRCTL_S};
    // With `read`, each pass reads `sctrstatus` after its record (a CSR helper).
    let program = |read: bool| {
        [
            csrrw(0, MCTRCTL, 5),
            addi(12, 0, 0),
            andi(10, 12, 3), // outer: passes 1 to 4 cycles apart
            addi(10, 10, 1), // inner
            blt(10, 11, -4),
            addi(12, 12, 1),
            jal(0, 4),
            if read {
                csrrs(14, SCTRSTATUS, 0)
            } else {
                addi(14, 14, 1)
            },
            beq(15, 0, 8),
            jal(0, 4), // a detour with x15 != 0
            blt(12, 13, -32),
        ]
    };
    let recording = CTRCTL_M | 1u64 << (32 + ty::TAKEN_BRANCH);
    let load = |p: &mut Pair, ctl: u64, inner: u64, outer: u64, detour: u64| {
        p.both(|vm| vm.hart.set_pc(CODE));
        p.set_x(5, ctl);
        p.set_x(11, inner);
        p.set_x(13, outer);
        p.set_x(15, detour);
    };
    let check = |p: &Pair, ctx: &str, encoded: bool| {
        let records = p.int.hart.ctr_records();
        assert_eq!(records.len(), 16, "{ctx}");
        assert!(
            records.iter().all(|e| e.source & 1 == 1),
            "{ctx}: {records:x?}"
        );
        // ctrdata.CCE (bits 31:28) nonzero: the count needed the encoding.
        assert_eq!(
            records.iter().all(|e| e.data >> 28 != 0),
            encoded,
            "{ctx}: {records:x?}"
        );
    };
    for (inner, outer, step, read) in [
        (4, 300, None, false),
        (4, 2000, None, false),
        (2500, 20, None, false),
        (4, 300, Some(97), false),
        (700, 30, Some(1000), false),
        (4, 300, None, true),
    ] {
        let ctx = format!("inner {inner}, outer {outer}, steps {step:?}, read {read}");
        let mut p = Pair::new();
        p.both(|vm| {
            vm.code(&program(read));
        });
        load(&mut p, recording, inner, outer, 0);
        match step {
            None => p.run_to_wfi(&ctx),
            Some(n) => p.run_to_wfi_in_steps(n, &ctx),
        }
        check(&p, &ctx, inner > 1000);
    }
    // Translated while M-mode records nothing (S-mode does): every block but the detour.
    let mut p = Pair::new();
    p.both(|vm| {
        vm.code(&program(false));
    });
    load(&mut p, CTRCTL_S, 4, 50, 0);
    p.run_to_wfi("M-mode not recording");
    assert!(p.int.hart.ctr_records().iter().all(|e| e.source & 1 == 0));
    load(&mut p, recording, 4, 300, 1);
    p.run_to_wfi("helper and log records alternating");
    check(&p, "helper and log records alternating", false);
}

/// Blocks are translated for the recording in force (`Jit::ctr_pair`: the recorded types,
/// and those logged inline) and keyed by it. Blocks translated while recording is off have
/// no CTR code; with recording switched on the same code is translated again for it, and
/// recording off again finds the first blocks: both kinds live side by side, the region is
/// never emptied for it, and every pass matches the interpreter.
#[test]
fn ctr_switched_on_after_translation_matches_the_interpreter() {
    // Even seeds: the programs leave `mctrctl` alone; 4k records every type, 4k + 2 in RAS
    // emulation (section 6.4: returns pop records).
    for seed in [660u64, 662, 664, 666] {
        let mut p = Mode::Ctr.pair();
        let end = load_random_in(&mut p, seed, 6000, Mode::Ctr);
        let ctx = format!("CTR switched on after translation, seed {seed}");
        let valid = |p: &Pair| {
            p.int
                .hart
                .ctr_records()
                .iter()
                .filter(|e| e.source & 1 == 1)
                .count()
        };
        let pass = |p: &mut Pair, ctl: u64, ctx: &str| {
            p.set_x(5, ctl);
            p.both(|vm| vm.hart.set_pc(CODE));
            p.run_to_wfi(ctx);
            assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        };
        // First passes: the prologue writes mctrctl = 0, so the blocks record nothing.
        for k in 0..3 {
            pass(&mut p, 0, &format!("{ctx}, off {k}"));
        }
        assert_eq!(valid(&p), 0, "{ctx}: recorded while off");
        let resets = p.jit.hart.translated_code_resets();
        let off = p.jit.hart.translated_blocks();
        for k in 0..3 {
            pass(&mut p, ctr_setting(seed), &format!("{ctx}, on {k}"));
        }
        let on = p.jit.hart.translated_blocks();
        assert!(on > off, "{ctx}: no block translated for recording");
        // Off again: the blocks without CTR code are still there.
        for k in 0..2 {
            pass(&mut p, 0, &format!("{ctx}, off again {k}"));
        }
        assert!(
            p.jit.hart.translated_blocks() - on < (on - off) / 4,
            "{ctx}: the blocks without CTR code were translated again ({off}, {on}, {})",
            p.jit.hart.translated_blocks()
        );
        pass(&mut p, ctr_setting(seed), &format!("{ctx}, on again"));
        assert_eq!(
            p.jit.hart.translated_code_resets(),
            resets,
            "{ctx}: the region was emptied"
        );
        p.assert_same_ram(&ctx);
        // (In RAS emulation returns pop records, so the buffer may end up empty.)
        if seed % 4 == 0 {
            assert_eq!(valid(&p), 16, "{ctx}: recorded too little");
        }
    }
}

/// With `HartConfig::pause_yields` (several vCPUs), PAUSE gives the host CPU away and is
/// left to the interpreter; the guest sees a no-op that retires, exactly as on a hart
/// without it, translated or not.
#[test]
fn pause_that_yields_is_a_no_op_to_the_guest() {
    let spin = [
        addi(5, 0, 300),
        vcpu::decode::PAUSE,
        addi(6, 6, 3),
        addi(5, 5, -1),
        bne(5, 0, -12),
    ];
    let yielding = |jit| {
        Vm::with_config(HartConfig {
            jit,
            pause_yields: true,
            ..HartConfig::default()
        })
    };
    for jit in [true, false] {
        let mut p = Pair {
            jit: yielding(jit),
            int: machine(false, &[]),
        };
        p.both(|vm| {
            vm.code(&spin);
        });
        p.run_to_wfi(&format!("pause yields, jit {jit}"));
        assert_eq!(p.int.x(6), 900);
        assert!(p.int.hart.executed() > 1200);
    }
}

/// The same on a hart with the least CTR the spec allows (`CtrConfig::minimal`: no TYPE
/// field, no cycle counting), whose inline records the translator writes differently.
#[test]
fn random_programs_match_the_interpreter_recording_minimal_ctr() {
    let hart = |jit| {
        Vm::with_config(HartConfig {
            jit,
            ctr: Some(vcpu::ctr::CtrConfig::minimal()),
            ..HartConfig::default()
        })
    };
    for seed in 640..656 {
        let mut p = Pair {
            jit: hart(true),
            int: hart(false),
        };
        let end = load_random_in(&mut p, seed, 6000, Mode::Ctr);
        let ctx = format!("minimal CTR, seed {seed}");
        p.run_to_wfi(&ctx);
        assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        p.assert_same_ram(&ctx);
        let records = p.int.hart.ctr_records();
        if seed == 640 {
            // Recorded, with neither TYPE nor CC: ctrdata is 0 in every entry.
            assert!(
                records.len() == 16 && records.iter().all(|e| e.source & 1 == 1 && e.data == 0),
                "{ctx}: {records:x?}"
            );
        }
    }
}

#[test]
fn random_float_programs_match_the_interpreter() {
    random_programs_in(Mode::Float, 1000..1032);
    // The programs did compute: flags accrued, and traps (FS Off, reserved rounding modes)
    // were taken and skipped.
    let mut p = Mode::Float.pair();
    load_random_in(&mut p, 1001, 6000, Mode::Float);
    p.run_to_wfi("Float, seed 1001");
    assert_ne!(p.int.csr(FCSR) & 0x1f, 0, "no flags accrued");
    assert_eq!(p.int.csr(MCAUSE), cause::ILLEGAL_INSN);
    assert!(p.jit.hart.translated_blocks() > 50);
}

/// Monitored blocks with CSR accesses, atomics and F/D instructions: every event counted,
/// counters overflowing every 2 to 7 events with the LCOFI taken (each one logged with its
/// `mepc` and `minstret`, compared with the rest of RAM), counters and event selectors read
/// and written mid-block; whole runs and runs in budget steps.
#[test]
fn random_float_programs_match_the_interpreter_with_every_counter_overflowing() {
    programs_taking_lcofis(
        Mode::PmuFloat,
        1200..1216,
        (1300..1304, 0x1c0f),
        1500,
        [1200, 1201],
        500,
    );
}

/// A sampling profiler's counters (cycles, loads, branch misses) overflowing every 4 to
/// 2000 cycles, 33 to 2000 loads and 13 to 2000 branch misses, each LCOFI taken and logged:
/// translated blocks that check their cycles against the room left before the counter of
/// cycles wraps take every LCOFI on the instruction the interpreter takes it on; whole
/// runs and runs in budget steps.
#[test]
fn random_programs_match_the_interpreter_with_a_sampling_profilers_counters() {
    // (Periods of 40 and 150 cycles in the last two.)
    programs_taking_lcofis(
        Mode::PmuSampling,
        1400..1432,
        (1440..1448, 0x5a3),
        3000,
        [1403, 1404],
        20,
    );
}

/// Random programs of `mode` (whose counters overflow and whose LCOFI handler logs each
/// LCOFI) compared with the interpreter: `whole` seeds in whole runs, `stepped` seeds of
/// `halfwords` in random budget steps (drawn from the seed mixed with the salt); then the `checked` seeds run whole must
/// have taken more than `min_lcofis` LCOFIs, with their blocks translated.
fn programs_taking_lcofis(
    mode: Mode,
    whole: std::ops::Range<u64>,
    (stepped, salt): (std::ops::Range<u64>, u64),
    halfwords: usize,
    checked: [u64; 2],
    min_lcofis: u64,
) {
    random_programs_in(mode, whole);
    for seed in stepped {
        let mut rng = seeded(seed ^ salt);
        run_in_steps_in(mode, seed, halfwords, "LCOFI, random steps", || {
            match rng.below(3) {
                0 => 1 + rng.below(3),
                1 => 1 + rng.below(70),
                _ => 1 + rng.below(1000),
            }
        });
    }
    // The LCOFIs were taken all along, and the blocks ran translated.
    for seed in checked {
        let mut p = mode.pair();
        load_random_in(&mut p, seed, 6000, mode);
        p.run_to_wfi(&format!("{mode:?}"));
        let lcofis = p.int.r64(LCOFI_LOG - 8) / 16;
        let insns = p.int.hart.executed();
        assert!(
            lcofis > min_lcofis,
            "seed {seed}: only {lcofis} LCOFIs in {insns} instructions"
        );
        assert!(p.jit.hart.translated_blocks() > 50, "seed {seed}");
    }
}

/// A counter of cycles written close to wrapping while a loop calls a function through
/// JALR: from then on monitored blocks check their cycles, and those translated before
/// without the check are forgotten (`Jit::forget_monitored_unchecked`), also from the jump
/// cache, which the loop's calls and returns would otherwise keep entering them through
/// (running past the overflow: each LCOFI taken late, after another instruction than the
/// interpreter's, whose `mepc` and `minstret` the handler logs).
#[test]
fn lcofis_of_a_counter_of_cycles_armed_after_its_blocks_ran_are_taken_on_time() {
    use vcpu::pmu::events::{selector, Event};
    const MHPMEVENT3: u32 = 0x323;
    const MHPMCOUNTER3: u32 = 0xb03;
    // `sampling_handler`'s period of 2 000 cycles for `mhpmcounter3`.
    const SEED: u64 = 7;
    assert_eq!(sampling_periods(SEED)[0], 2000);
    let f = CODE + 0x200;
    let calls = |v: &mut Vec<u32>| v.extend([jalr(1, 12, 0), addi(11, 11, -1), bne(11, 0, -8)]);
    // Cycles counted from 0 (2^64 to go: no block checks them), LCOFI enabled.
    let mut prog = vec![
        csrw(MCOUNTINHIBIT, 0),
        addi(5, 0, selector(Event::Cycles) as i32),
        csrw(MHPMEVENT3, 5),
        csrw(MHPMCOUNTER3, 0),
        lui(5, 2),
        csrrs(0, MIE, 5),
        csrrsi(0, MSTATUS, 8),
        addi(11, 0, 300),
    ];
    calls(&mut prog);
    // 2 000 cycles before it wraps.
    prog.extend([addi(5, 0, -2000), csrw(MHPMCOUNTER3, 5), addi(11, 0, 300)]);
    calls(&mut prog);
    let mut function = vec![addi(18, 18, 1); 24];
    function.push(jalr(0, 1, 0));
    let mut p = Pair::new();
    let end = p.both(|vm| {
        vm.put32(f, &function);
        vm.put32(TRAP, &sampling_handler(SEED));
        vm.code(&prog)
    });
    p.set_x(12, f);
    p.run_to_wfi("calls");
    assert_eq!(p.int.hart.pc(), end + 4, "the program trapped");
    p.assert_same_ram("calls");
    let lcofis = p.int.r64(LCOFI_LOG - 8) / 16;
    assert!(lcofis >= 3, "{lcofis} LCOFIs");
    assert!(p.jit.hart.translated_blocks() > 3);
}

#[test]
fn float_budgets_stop_on_the_same_instruction() {
    for seed in 1100..1108u64 {
        let mut rng = seeded(seed ^ 0xf10a7);
        run_in_steps_in(Mode::Float, seed, 1500, "random steps", || {
            match rng.below(3) {
                0 => 1 + rng.below(3),
                1 => 1 + rng.below(70),
                _ => 1 + rng.below(1000),
            }
        });
    }
}

/// Double- and single-precision arithmetic at the edges of the translator's host shortcut
/// (`Hart::exec_float_host`, `x64::emit_float_host`): results around the smallest normal number and the largest
/// finite one, exact and inexact results, zeros, infinities, NaNs, 0/0, x/0, square roots
/// of negative numbers, with `fflags.NX` clear and set before each operation, in every
/// rounding mode; every result and the flags after it are stored and compared, and a few
/// are checked against the spec's values.
#[test]
fn double_arithmetic_around_the_host_shortcut() {
    const MIN_NORMAL: u64 = 0x0010_0000_0000_0000;
    let values: [u64; 14] = [
        0x3ff0_0000_0000_0000, // 1
        0x4008_0000_0000_0000, // 3
        0xbfe0_0000_0000_0000, // -0.5
        MIN_NORMAL,            // smallest normal
        MIN_NORMAL + 1,        // just above it
        0x0020_0000_0000_0000, // twice it
        0x000f_ffff_ffff_ffff, // largest subnormal
        0x7fef_ffff_ffff_ffff, // largest finite
        0x7fe0_0000_0000_0000, // 2^1023
        0,                     // +0
        1 << 63,               // -0
        0x7ff0_0000_0000_0000, // +inf
        0x7ff8_0000_0000_0000, // qNaN
        0x3ca0_0000_0000_0000, // 2^-53
    ];
    type Op3 = fn(u32, u32, u32, u32, u32) -> u32;
    let ops: [Op3; 4] = [fadd, fsub, fmul, fdiv];
    // f1, f2, f3 from the table at x9 (indices in x10, x11, x12 of the loop), the result to
    // x8, then fflags; fflags written from x13 (0 or NX) before each operation.
    // The same classes in single precision, NaN-boxed, and one single not boxed.
    let mut singles: [u64; 15] = [
        0x3f80_0000,
        0x4040_0000,
        0xbf00_0000,
        0x0080_0000,
        0x0080_0001,
        0x0100_0000,
        0x007f_ffff,
        0x7f7f_ffff,
        0x7f00_0000,
        0,
        0x8000_0000,
        0x7f80_0000,
        0x7fc0_0000,
        0x3380_0000,
        0x3f80_0000,
    ]
    .map(|v| v | 0xffff_ffff_0000_0000);
    singles[14] = 0x0000_0001_3f80_0000;
    let mut body = Vec::new();
    let mut rng = seeded(0xf1a6);
    for (fmt, base, n) in [(FMT_D, 0, values.len()), (FMT_S, 0x100, singles.len())] {
        for rm in [0, 1, 2, 3, 4, 7] {
            for nx in [0, 1] {
                for _ in 0..40 {
                    let [i, j, k] = [0; 3].map(|_| base + 8 * rng.below(n as u64) as i32);
                    body.extend([fld(1, 9, i), fld(2, 9, j), fld(3, 9, k)]);
                    body.push(csrrwi(0, FFLAGS, nx));
                    body.push(match rng.below(9) {
                        k @ 0..=3 => ops[k as usize](fmt, 4, 1, 2, rm),
                        4 => fsqrt(fmt, 4, 1, rm),
                        5 => fmadd(fmt, 4, 1, 2, 3, rm),
                        6 => fmsub(fmt, 4, 1, 2, 3, rm),
                        7 => fnmsub(fmt, 4, 1, 2, 3, rm),
                        _ => fnmadd(fmt, 4, 1, 2, 3, rm),
                    });
                    body.extend([fsd(4, 8, 0), csrr(5, FFLAGS), sd(5, 8, 8), addi(8, 8, 16)]);
                }
            }
        }
    }
    // Checked cases, RNE with NX set before: 1/3 (inexact); MIN_NORMAL / 3 (tiny and
    // inexact: UF); (MIN_NORMAL + 1) - MIN_NORMAL and MIN_NORMAL * -0.5 (tiny but exact: no
    // UF); largest * 2^1023 (OF). f3 and f4 from the table by `(a, b)`.
    let checked = [
        (fdiv(FMT_D, 4, 1, 2, 0), 0, 0),
        (fdiv(FMT_D, 4, 3, 2, 0), 3, 0),
        (fsub(FMT_D, 4, 4, 3, 0), 3, 4),
        (fmul(FMT_D, 4, 3, 4, 0), 3, 2),
        (fmul(FMT_D, 4, 7, 8, 0), 0, 0),
    ];
    for (op, a, b) in checked {
        body.extend([
            fld(1, 9, 0),
            fld(2, 9, 8),
            fld(3, 9, 8 * a),
            fld(4, 9, 8 * b),
        ]);
        body.extend([fld(7, 9, 8 * 7), fld(8, 9, 8 * 8)]);
        body.extend([csrrwi(0, FFLAGS, 1), op]);
        body.extend([fsd(4, 8, 0), csrr(5, FFLAGS), sd(5, 8, 8), addi(8, 8, 16)]);
    }
    let table = DATA + 0x1d00;
    let mut p = Pair::new();
    p.both(|vm| {
        for (k, &v) in values.iter().enumerate() {
            vm.w64(table + 8 * k as u64, v);
        }
        for (k, &v) in singles.iter().enumerate() {
            vm.w64(table + 0x100 + 8 * k as u64, v);
        }
        vm.set_x(9, table);
        vm.set_x(8, DATA + 0x2000);
        let mut prologue = vec![lui(6, 2), csrrs(0, MSTATUS, 6)];
        prologue.extend(&body);
        vm.code(&prologue);
    });
    p.run_to_wfi("double arithmetic");
    p.assert_same_ram("double arithmetic");
    let end = DATA + 0x2000 + 16 * (body.iter().filter(|&&w| w == addi(8, 8, 16)).count() as u64);
    let result = |k: u64| {
        let at = end - 16 * (5 - k);
        (p.jit.r64(at), p.jit.r64(at + 8))
    };
    assert_eq!(result(0), (0x3fd5_5555_5555_5555, 1)); // NX
    assert_eq!(result(1), (0x0005_5555_5555_5555, 3)); // UF, NX
    assert_eq!(result(2), (1, 1));
    assert_eq!(result(3), (0x8008_0000_0000_0000, 1));
    assert_eq!(result(4), (0x7ff0_0000_0000_0000, 5)); // OF, NX
}

/// Counter CSRs read in the middle of translated blocks (`cycle`, `time`, `instret`,
/// `hpmcounter3`, `minstret`), with a write of `minstret` in the loop, run in budget steps of
/// every size from 1 to 40: every value read is the interpreter's, and consecutive `instret`
/// reads differ by the loop's length.
#[test]
fn counter_reads_in_translated_blocks() {
    const MHPMCOUNTER3: u32 = 0xb03;
    // x8 the store pointer, x9 the pass count; the reads go to x10-x14 and then to RAM.
    let mut body = vec![addi(9, 0, 60)];
    let head = body.len();
    body.extend([
        addi(15, 15, 3),
        csrr(10, CYCLE),
        mul(16, 15, 15),
        csrr(11, TIME),
        csrr(12, INSTRET),
        div(17, 16, 15),
        csrr(13, 0xc03),
        csrr(14, MINSTRET),
        sd(10, 8, 0),
        sd(11, 8, 8),
        sd(12, 8, 16),
        sd(13, 8, 24),
        sd(14, 8, 32),
        addi(8, 8, 40),
        andi(18, 9, 15),
    ]);
    // Every 16th pass: minstret and mhpmcounter3 written (the block ends there).
    let skip = body.len();
    body.push(0);
    body.extend([csrw(MINSTRET, 16), csrw(MHPMCOUNTER3, 9)]);
    let after = body.len();
    body[skip] = bne(18, 0, 4 * (after - skip) as i32);
    body.extend([addi(9, 9, -1)]);
    let back = -4 * (body.len() - head) as i32;
    body.push(bne(9, 0, back));
    // A pass without the writes: the instructions from `head` to `after` less the two
    // writes, plus the closing ADDI and BNE.
    let pass = (after - head) as u64;
    for budget in 1..=40u64 {
        let mut p = Pair::new();
        p.both(|vm| {
            vm.set_x(8, DATA);
            vm.code(&body);
        });
        let ctx = format!("budget {budget}");
        p.run_to_wfi_in_steps(budget, &ctx);
        p.assert_same_ram(&ctx);
        // Consecutive `instret` reads of passes without the writes: one loop apart.
        let instret = |k: u64| p.jit.r64(DATA + 40 * k + 16);
        assert_eq!(instret(2) - instret(1), pass, "{ctx}");
        assert!(p.jit.hart.translated_blocks() > 0);
    }
}

/// A loop over operand pairs, run on both machines to WFI and compared: `cases` are written
/// at DATA + 0x1000 (16 bytes each, reached through x9), and each of `passes` passes (x13
/// counts them) loads case k's pair into x10 and x11 and runs `per_case(k)`, which stores
/// its results through x12 (DATA at the start of each pass, from x15). The passes after the
/// first run the translated blocks. `setup` is applied to both machines before.
fn corner_case_loop(
    ctx: &str,
    cases: &[(u64, u64)],
    passes: i32,
    per_case: impl Fn(usize) -> Vec<u32>,
    setup: impl Fn(&mut Vm),
) -> Pair {
    let mut body = vec![addi(13, 0, passes)];
    let head = body.len();
    body.push(addi(12, 15, 0));
    for k in 0..cases.len() {
        body.extend([ld(10, 9, 16 * k as i32), ld(11, 9, 16 * k as i32 + 8)]);
        body.extend(per_case(k));
    }
    body.extend([addi(13, 13, -1)]);
    let back = -4 * (body.len() - head) as i32;
    body.push(bne(13, 0, back));
    let operands = DATA + 0x1000;
    let mut p = Pair::new();
    p.both(|vm| {
        for (k, &(a, b)) in cases.iter().enumerate() {
            vm.w64(operands + 16 * k as u64, a);
            vm.w64(operands + 16 * k as u64 + 8, b);
        }
        vm.set_x(9, operands);
        vm.set_x(15, DATA);
        setup(vm);
        vm.code(&body);
    });
    p.run_to_wfi(ctx);
    p.assert_same_ram(ctx);
    p
}

/// DIV, DIVU, REM, REMU, their W forms and MULHSU on the corner cases of the M extension's
/// table ("Semantics for division by zero and division overflow") and around them, in one
/// loop that runs translated: the results (stored to DATA) are the spec's and the
/// interpreter's.
#[test]
fn division_corner_cases() {
    const MIN: u64 = i64::MIN as u64;
    const W_MIN: u64 = 0xffff_ffff_8000_0000;
    let cases: [(u64, u64); 10] = [
        (7, 0),
        (MIN, u64::MAX),
        (W_MIN, u64::MAX),
        (0x1_8000_0000, 0xffff_ffff),
        (u64::MAX, 2),
        (MIN, 0),
        (100, 0xffff_ffff_0000_0000),
        (0xffff_fff9, 2),
        (0xdead_beef_0bad_f00d, 0x1234_5678),
        (5, u64::MAX),
    ];
    let ops: [fn(u32, u32, u32) -> u32; 9] =
        [div, divu, rem, remu, divw, divuw, remw, remuw, mulhsu];
    // Each result is stored; two passes, so that the second runs the translated block.
    let p = corner_case_loop(
        "divisions",
        &cases,
        2,
        |_| {
            ops.iter()
                .flat_map(|op| [op(14, 10, 11), sd(14, 12, 0), addi(12, 12, 8)])
                .collect()
        },
        |_| {},
    );
    let got = |k: usize, op: usize| p.jit.r64(DATA + 8 * (9 * k + op) as u64);
    // x / 0: quotient all ones, remainder the dividend (W forms: of its low word).
    assert_eq!(
        (0..8).map(|op| got(0, op)).collect::<Vec<_>>(),
        [u64::MAX, u64::MAX, 7, 7, u64::MAX, u64::MAX, 7, 7]
    );
    assert_eq!((got(5, 0), got(5, 2), got(5, 6)), (u64::MAX, MIN, 0));
    // Signed overflow: quotient the dividend, remainder 0.
    assert_eq!((got(1, 0), got(1, 2)), (MIN, 0));
    assert_eq!((got(2, 4), got(2, 6)), (W_MIN, 0));
    // W forms use the low words and sign-extend: 0x8000_0000 / 0xffff_ffff.
    assert_eq!((got(3, 4), got(3, 5)), (W_MIN, 0));
    assert_eq!((got(3, 6), got(3, 7)), (0, 0xffff_ffff_8000_0000));
    // Ordinary divisions truncate toward zero.
    assert_eq!((got(4, 0), got(4, 2)), (0, u64::MAX));
    assert_eq!((got(4, 1), got(4, 3)), (u64::MAX / 2, 1));
    assert_eq!((got(7, 4), got(7, 6)), (0xffff_ffff_ffff_fffd, u64::MAX));
    // MULHSU: signed times unsigned.
    assert_eq!(got(9, 8), 4);
    assert_eq!(got(1, 8), MIN);
    assert_eq!(p.jit.hart.instret(), p.int.hart.instret());
}

#[test]
fn random_programs_match_the_interpreter_counting_every_event() {
    random_programs_in(Mode::Pmu, 800..824);
    random_programs_in(Mode::PmuSv39, 900..924);
    // The counters counted and overflowed.
    for mode in [Mode::Pmu, Mode::PmuSv39] {
        let mut p = mode.pair();
        load_random_in(&mut p, 800, 6000, mode);
        p.run_to_wfi("PMU, seed 800");
        let of = (3..31).filter(|i| p.int.csr(0x320 + i) >> 63 == 1).count();
        assert!(of >= 10, "{mode:?}: only {of} counters overflowed");
        assert!(p.int.csr(MIP) & 1 << 13 != 0, "{mode:?}: no LCOFIP");
    }
}

#[test]
fn budgets_stop_on_the_same_instruction_counting_every_event() {
    for seed in 1000..1008u64 {
        let mode = [Mode::Pmu, Mode::PmuSv39][seed as usize % 2];
        let mut rng = seeded(seed);
        run_in_steps_in(mode, seed, 1500, "PMU, random steps", || 1 + rng.below(90));
    }
}

/// Monitored blocks skip the models for an access to the line the models saw last
/// (`MonitorView::last_line`): an interpreted access in between that evicts that line (the
/// same L1D slot, 32 KiB away) must undo the shortcut. Random budgets make the interpreter
/// run some of the loads (a block runs only when it fits), between blocks that load the
/// other line; the miss counts must stay the interpreter's.
#[test]
fn interpreted_accesses_between_monitored_blocks_keep_the_cache_model_exact() {
    let lines = (vcpu::pmu::model::L1D_LINES * 64) as i32;
    let body = [
        ld(6, 10, 0),
        ld(7, 11, 0),
        ld(6, 10, 0),
        addi(12, 12, -1),
        bne(12, 0, -16),
        wfi(),
    ];
    for seed in 0..8u64 {
        let mut p = Mode::Pmu.pair();
        p.both(|vm| {
            vm.put32(CODE, &pmu_setup());
            vm.put32(Mode::Pmu.code(), &body);
        });
        p.set_x(10, DATA);
        p.set_x(11, DATA + lines as u64);
        p.set_x(12, 300);
        let mut rng = seeded(seed);
        let mut n = 0;
        loop {
            let ctx = format!("seed {seed}, call {n}");
            match p.run(1 + rng.below(7), &ctx) {
                VcpuExit::BudgetExhausted => {}
                VcpuExit::Wfi => break,
                other => panic!("{ctx}: unexpected exit {other:?}"),
            }
            n += 1;
            assert!(n < 100_000, "{ctx}: the loop does not end");
        }
        assert_eq!(
            p.int.x(12),
            0,
            "seed {seed}: the loop did not run to its end"
        );
    }
}

/// Monitored blocks look the DTLB model up with the data translation tag, all ones when data
/// is not translated, and count a miss only where the interpreter does. M-mode loads with
/// `mstatus.MPRV` (MPP = S, Sv39: translated, the model's entry 63 filled) alternate with
/// loads without it (untranslated: the same entry, which must stay and count nothing), in
/// every small budget.
#[test]
fn untranslated_accesses_leave_the_dtlb_model_alone() {
    // MPRV (bit 17) and MPP = S (bits 12:11 = 1).
    const MPRV_S: i32 = (1 << 17) | (1 << 11);
    let body = [
        lui(5, (MPRV_S as u32 + 0x800) >> 12),
        addi(5, 5, (MPRV_S << 20) >> 20),
        // loop:
        csrrs(0, MSTATUS, 5),
        ld(6, 10, 0),
        ld(6, 10, 64),
        csrrc(0, MSTATUS, 5),
        ld(7, 11, 0),
        ld(7, 11, 64),
        ld(7, 11, 128),
        addi(12, 12, -1),
        bne(12, 0, -32),
        wfi(),
    ];
    for budget in (1..=12u64).chain([1000]) {
        let mut p = Mode::Pmu.pair();
        p.both(|vm| {
            page_tables(vm);
            let mut code = vec![csrw(SATP, 19)];
            code.extend(pmu_setup());
            code.extend(body);
            vm.put32(CODE, &code);
        });
        p.set_x(19, satp(PT_ROOT));
        // A page whose number selects the model's last entry (63), through the identity
        // gigapage; then untranslated data.
        p.set_x(10, RAM_BASE + 63 * 0x1000);
        p.set_x(11, DATA);
        p.set_x(12, 40);
        let ctx = format!("MPRV loads, budget {budget}");
        p.run_to_wfi_in_steps(budget, &ctx);
        assert_eq!(p.int.x(12), 0, "{ctx}: the loop did not run to its end");
        assert!(p.jit.hart.translated_blocks() > 0, "{ctx}");
    }
}

#[test]
fn budgets_stop_on_the_same_instruction_recording_ctr() {
    for seed in 700..708u64 {
        let mut rng = seeded(seed);
        run_in_steps_in(Mode::Ctr, seed, 1500, "CTR, random steps", || {
            1 + rng.below(90)
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Budgets
// ---------------------------------------------------------------------------------------------

/// Run a program to its end in steps of `step()` instructions, comparing after each.
fn run_in_steps(seed: u64, halfwords: usize, what: &str, step: impl FnMut() -> u64) {
    run_in_steps_in(Mode::Machine, seed, halfwords, what, step)
}

fn run_in_steps_in(
    mode: Mode,
    seed: u64,
    halfwords: usize,
    what: &str,
    mut step: impl FnMut() -> u64,
) {
    let mut p = mode.pair();
    let end = load_random_in(&mut p, seed, halfwords, mode);
    for n in 0.. {
        let budget = step();
        let ctx = format!("seed {seed}, {what}, call {n}");
        match p.run(budget, &ctx) {
            VcpuExit::BudgetExhausted => {}
            VcpuExit::Wfi => break,
            other => panic!("{ctx}: unexpected exit {other:?}"),
        }
        assert!(n < 2_000_000, "{ctx}: the program does not end");
    }
    assert_eq!(p.int.hart.pc(), end + 4, "seed {seed}: the program trapped");
    p.assert_same_ram(&format!("seed {seed}, {what}"));
}

#[test]
fn every_small_budget_stops_on_the_same_instruction() {
    for seed in [101u64, 102, 103] {
        for budget in (1..=24).chain([31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 4095, 4097]) {
            run_in_steps(seed, 700, &format!("budget {budget}"), || budget);
        }
    }
}

#[test]
fn random_budgets_stop_on_the_same_instruction() {
    for seed in 200..224u64 {
        let mode = [
            Mode::Machine,
            Mode::Interrupts,
            Mode::Sv39,
            Mode::Hosted,
            Mode::Ctr,
            Mode::Pmu,
            Mode::PmuSv39,
        ][seed as usize % 7];
        let mut rng = seeded(seed ^ 0xb0d6e7);
        run_in_steps_in(mode, seed, 1500, "random steps", || match rng.below(4) {
            0 => 1 + rng.below(3),
            1 => 1 + rng.below(70),
            2 => 1 + rng.below(300),
            _ => 1 + rng.below(5000),
        });
    }
}

/// Integer results the register cache holds (`jit::emit`: more live values than its four
/// host registers, a destination that is also the second operand, a multiply and W forms)
/// reach the hart before every way out of a block: a device access the block leaves before
/// (the exit compares the registers), its store, its end, and any budget.
#[test]
fn register_cache_values_reach_the_hart_before_every_exit() {
    const DEV: u64 = 0x1000_0000;
    let mut code = vec![addi(6, 0, 4)];
    let head = code.len();
    code.extend([
        addi(10, 10, 3),
        add(11, 10, 10),
        sub(12, 11, 10),
        xor(13, 12, 11),
        sub(10, 13, 10), // rd = rs2
        mul(14, 13, 12),
        slli(16, 14, 7),
        or(17, 16, 11),
        addw(18, 17, 10),
        and(19, 18, 14),
        add(11, 19, 17),
        lw(20, 21, 4), // device: the block leaves before it
        add(12, 20, 12),
        sub(13, 10, 12),
        sd(13, 15, 0),
        xor(10, 13, 11),
        addi(6, 6, -1),
    ]);
    let back = -4 * (code.len() - head) as i32;
    code.push(bne(6, 0, back));
    for budget in [1u64, 2, 3, 5, 7, 11, 12, 13, 17, 18, 19, 1000] {
        let mut p = Pair::with_mmio(&[MmioRange {
            base: DEV,
            size: 0x100,
        }]);
        p.set_x(21, DEV);
        p.set_x(15, DATA);
        p.both(|vm| {
            vm.code(&code);
        });
        let (ctx, mut reads) = (format!("budget {budget}"), 0);
        loop {
            match p.run(budget, &ctx) {
                VcpuExit::Mmio(acc) => {
                    assert!(acc.write.is_none(), "{ctx}: only the device read");
                    reads += 1;
                    p.both(|vm| vm.hart.complete_mmio_read(0x1234_5678 * reads));
                    p.assert_same(&ctx, DATA, 8);
                }
                VcpuExit::BudgetExhausted => {}
                VcpuExit::Wfi => break,
                other => panic!("{ctx}: unexpected {other:?}"),
            }
        }
        assert_eq!(reads, 4, "{ctx}: one device read per pass");
        assert_ne!(p.jit.r64(DATA), 0, "{ctx}: the loop stored its result");
    }
}

/// A budget that ends inside a long block, then budgets that fit it exactly.
#[test]
fn budgets_around_a_full_block() {
    // 100 ADDIs (more than one block holds) closed by a loop branch, 5 passes.
    let mut body: Vec<u32> = (0..100)
        .map(|k| addi(10 + k % 8, 10 + k % 8, k as i32))
        .collect();
    let head = 1;
    let mut code = vec![addi(6, 0, 5)];
    code.append(&mut body);
    code.push(addi(6, 6, -1));
    let back = -(4 * (code.len() - head) as i32);
    code.push(bne(6, 0, back));
    for budget in [1u64, 7, 50, 63, 64, 65, 99, 101, 102, 103, 200, 511] {
        let mut p = Pair::new();
        p.both(|vm| {
            vm.code(&code);
        });
        let ctx = format!("budget {budget}");
        while p.run(budget, &ctx) != VcpuExit::Wfi {}
        assert_eq!(p.int.hart.instret(), 2 + 1 + 5 * 102 + 1);
    }
}

// ---------------------------------------------------------------------------------------------
// Self-modifying code
// ---------------------------------------------------------------------------------------------

/// Two machines whose code page ([`CODE`]'s) holds translated code and, with `mixed`, has
/// turned mixed (`jit::guard`): a loop of two blocks has stored into the page eight times,
/// each store finding the page protected again by the next block's check. The blocks on a
/// mixed page compare their code at every entry and check their own stores inline, instead
/// of relying on the page's protection. Both harts then start over at `BOOT` (the old
/// blocks stay in the translator until the test's code replaces their bytes).
fn code_page(mixed: bool) -> Pair {
    let mut p = Pair::new();
    if !mixed {
        return p;
    }
    let warm = [
        auipc(5, 0),
        addi(6, 0, 8),
        sw(0, 5, 0x7f0), // A: data beside the code
        jal(0, 4),
        addi(6, 6, -1), // B
        bne(6, 0, -12),
    ];
    p.both(|vm| {
        vm.code(&warm);
    });
    p.run_to_wfi("stores beside the code");
    assert_eq!(p.jit.hart.mixed_code_pages(), 1, "the code page is mixed");
    assert_eq!(p.int.hart.mixed_code_pages(), 0, "no translator, no pages");
    p.both(|vm| {
        vm.set_x(5, 0);
        vm.hart.set_pc(BOOT);
    });
    p
}

/// A loop whose first instruction (at CODE + 8) is rewritten by the guest after three passes;
/// six passes in all. `patch` is the store (and what follows it) run once, after pass three.
fn guest_patch(first: &[u16], new: u32, patch: &[u32], mixed: bool) -> Pair {
    let mut p = code_page(mixed);
    // x11: address of the patched instruction; x12: its new bits; x16 = 3, x17 = 6.
    p.set_x(12, new as u64);
    p.set_x(16, 3);
    p.set_x(17, 6);
    let mut h: Vec<u16> = Vec::new();
    let w = |h: &mut Vec<u16>, w: u32| {
        h.push(w as u16);
        h.push((w >> 16) as u16);
    };
    w(&mut h, auipc(11, 0));
    w(&mut h, addi(11, 11, 8));
    let head = h.len();
    h.extend_from_slice(first);
    w(&mut h, addi(10, 10, 1));
    let skip = h.len();
    w(&mut h, 0);
    for &i in patch {
        w(&mut h, i);
    }
    let off = 2 * (h.len() - skip) as i32;
    h[skip] = bne(10, 16, off) as u16;
    h[skip + 1] = (bne(10, 16, off) >> 16) as u16;
    let back = -2 * (h.len() - head) as i32;
    w(&mut h, blt(10, 17, back));
    w(&mut h, wfi());
    p.both(|vm| vm.put16(CODE, &h));
    p
}

fn halves(w: u32) -> [u16; 2] {
    [w as u16, (w >> 16) as u16]
}

#[test]
fn guest_rewrites_an_instruction_it_ran_with_fence_i() {
    for mixed in [false, true] {
        let mut p = guest_patch(
            &halves(addi(13, 13, 1)),
            addi(13, 13, 100),
            &[sw(12, 11, 0), fence_i()],
            mixed,
        );
        p.run_to_wfi("patch + fence.i");
        assert_eq!(p.jit.x(13), 3 + 3 * 100, "mixed page: {mixed}");
    }
}

#[test]
fn guest_rewrites_an_instruction_it_ran_without_fence_i() {
    // The store and the patched instruction are in different blocks: the next pass enters
    // the patched block again.
    for mixed in [false, true] {
        let mut p = guest_patch(
            &halves(addi(13, 13, 1)),
            addi(13, 13, 100),
            &[sw(12, 11, 0)],
            mixed,
        );
        p.run_to_wfi("patch");
        assert_eq!(p.jit.x(13), 3 + 3 * 100, "mixed page: {mixed}");
    }
}

/// A loop in one block goes back to its head without checking its code again: its own
/// stores into its code must leave it. The loop's store rewrites the loop's first
/// instruction (which already ran in this pass), after three passes (the store of the
/// earlier passes writes the old bits back); every small budget, so that the passes start
/// from the dispatcher and from the jump back alike.
#[test]
fn a_loop_in_one_block_rewrites_its_own_head() {
    let old = addi(13, 13, 1);
    let new = addi(13, 13, 100);
    // x11: the head's address; x10: passes; x12: the bits stored (old, then new).
    let body = [
        auipc(11, 0),
        addi(11, 11, 12),
        addi(10, 0, 0),
        // head:
        old,
        addi(10, 10, 1),
        sltiu(14, 10, 4),
        // x12 = old bits while x10 < 4, else new: x12 = new + x14 * (old - new).
        mul(15, 14, 16),
        add(12, 17, 15),
        sw(12, 11, 0),
        addi(18, 10, -8),
        bne(18, 0, -28),
        wfi(),
    ];
    for (budget, mixed) in (1..=12u64)
        .chain([1000])
        .flat_map(|b| [(b, false), (b, true)])
    {
        let mut p = code_page(mixed);
        p.set_x(16, (old as i64 - new as i64) as u64);
        p.set_x(17, new as u64);
        p.both(|vm| vm.put32(CODE, &body));
        let ctx = format!("loop rewriting its head, budget {budget}, mixed page: {mixed}");
        p.run_to_wfi_in_steps(budget, &ctx);
        // Passes 1-4 add 1 (the head is rewritten in pass 4, after it ran), 5-8 add 100.
        assert_eq!(p.jit.x(13), 4 + 4 * 100, "{ctx}");
        assert!(p.jit.hart.translated_blocks() > 0, "{ctx}");
    }
}

/// A block whose AMO (a helper call) rewrites the block's own first instruction, in the
/// pass before the last: the helper moves the code epoch (a store to a protected page), and
/// when the loop comes back to the block through its links, without the dispatcher, the
/// block must find its slot behind the new epoch and compare its code. Blocks keep the
/// epoch in a host register, which `x64::call` loads again after every helper; with the
/// register left as it was, the block would run its old code.
#[test]
fn an_amo_rewriting_its_block_is_seen_through_the_links() {
    let old = addi(10, 10, 1);
    let new = addi(10, 10, 100);
    // x6: where the AMO stores (data, then the head); x5: what (old bits, then new);
    // x7: passes left.
    let body = [
        auipc(11, 0),
        addi(11, 11, 8),
        // head:
        old,
        amo(AMO_SWAP, 2, 0, 6, 5),
        addi(7, 7, -1),
        bne(7, 9, 12),
        addi(6, 11, 0),
        addi(5, 8, 0),
        bne(7, 13, -24),
        wfi(),
    ];
    for mixed in [false, true] {
        let mut p = code_page(mixed);
        p.set_x(5, old as u64);
        p.set_x(6, DATA);
        p.set_x(7, 10);
        p.set_x(8, new as u64);
        p.set_x(9, 1);
        p.set_x(13, u64::MAX);
        p.both(|vm| vm.put32(CODE, &body));
        let ctx = format!("an AMO rewriting its block, mixed page: {mixed}");
        p.run_to_wfi(&ctx);
        assert_eq!(
            p.jit.x(10),
            10 + 100,
            "{ctx}: passes 1-10 add 1, the last 100"
        );
        assert!(p.jit.hart.translated_blocks() > 0, "{ctx}");
    }
}

/// A block linked to from another one is rewritten: its stale translation is left once,
/// and the link goes to the new translation from then on (not through the stale block and
/// the dispatcher at every pass).
#[test]
fn a_rewritten_block_is_unlinked_from_the_blocks_that_jump_to_it() {
    let old = addi(13, 13, 1);
    let new = addi(13, 13, 100);
    const PASSES: u64 = 200;
    // x11: B's address; x12: B's new first instruction; x10: passes; the patch in pass 3.
    let body = [
        auipc(11, 0),
        addi(11, 11, 24),
        addi(16, 0, 3),
        addi(17, 0, PASSES as i32),
        // A (loop head): one pass more, then to B, in the same page (a linked exit).
        addi(10, 10, 1),
        jal(0, 4),
        // B
        old,
        bne(10, 16, 12),
        sw(12, 11, 0),
        fence_i(),
        blt(10, 17, -24),
        wfi(),
    ];
    for mixed in [false, true] {
        let mut p = code_page(mixed);
        p.set_x(12, new as u64);
        p.both(|vm| vm.put32(CODE, &body));
        p.run_to_wfi("a linked block rewritten");
        assert_eq!(p.jit.x(13), 3 + (PASSES - 3) * 100, "mixed page: {mixed}");
        // B's old translation once (and on the mixed page the warm-up's blocks that the
        // test's code replaced); 197 without the unlinking.
        let stale = p.jit.hart.stale_block_exits();
        assert!(
            (1..=8).contains(&stale),
            "mixed page: {mixed}: {stale} runs ended in the stale block (of {PASSES} passes)"
        );
    }
}

#[test]
fn guest_rewrites_compressed_code_and_instruction_lengths() {
    // A 16-bit instruction between two others, rewritten by a halfword store.
    for mixed in [false, true] {
        let mut first = vec![c_addi(13, 1), c_nop()];
        first.extend(halves(addi(14, 14, 1)));
        let patch = [sh(12, 11, 0), fence_i()];
        let mut p = guest_patch(&first, c_addi(13, 20) as u32, &patch, mixed);
        p.run_to_wfi("compressed patch");
        assert_eq!((p.jit.x(13), p.jit.x(14)), (3 + 3 * 20, 6), "{mixed}");
        // One 32-bit instruction becomes two 16-bit ones.
        let two = c_addi(13, 7) as u32 | (c_addi(14, 1) as u32) << 16;
        let mut p = guest_patch(&halves(addi(13, 13, 1)), two, &[sw(12, 11, 0)], mixed);
        p.run_to_wfi("length patch");
        assert_eq!((p.jit.x(13), p.jit.x(14)), (3 + 3 * 7, 3), "{mixed}");
    }
}

#[test]
fn guest_store_then_fence_i_then_the_patched_instruction() {
    // Every pass stores the instruction's bits (the old ones for three passes, then the new
    // ones), executes FENCE.I, then runs the instruction.
    let old = addi(13, 13, 1);
    let new = addi(13, 13, 100);
    let mut p = Pair::new();
    p.set_x(12, old as u64);
    p.set_x(18, new.wrapping_sub(old) as u64);
    p.set_x(16, 3);
    p.set_x(17, 6);
    let code = [
        auipc(11, 0),
        addi(11, 11, 16), // x11 = the patched instruction
        sw(12, 11, 0),    // loop head
        fence_i(),
        old,
        addi(10, 10, 1),
        bne(10, 16, 8),
        add(12, 12, 18),
        blt(10, 17, -24),
    ];
    p.both(|vm| {
        vm.code(&code);
    });
    p.run_to_wfi("store, fence.i, patched");
    assert_eq!(p.jit.x(13), 3 + 3 * 100);
}

/// A loop whose store rewrites an instruction later in the same straight-line run: the old
/// bits for three passes, then the new ones. No FENCE.I: the interpreter fetches the new
/// instruction at once, and so must the translator (its block holds both instructions).
fn store_into_the_running_block(
    gap: &[u32],
    target: u32,
    new: u32,
    store: fn(u32, u32, i32) -> u32,
    mixed: bool,
) -> Pair {
    let mut p = code_page(mixed);
    p.set_x(12, target as u64);
    p.set_x(18, new.wrapping_sub(target) as u64);
    p.set_x(16, 3);
    p.set_x(17, 6);
    let mut code = vec![
        auipc(11, 0),
        addi(11, 11, 12 + 4 * gap.len() as i32),
        store(12, 11, 0),
    ];
    code.extend_from_slice(gap);
    code.extend([target, addi(10, 10, 1), bne(10, 16, 8), add(12, 12, 18)]);
    let back = -4 * (code.len() as i32 - 2);
    code.push(blt(10, 17, back));
    p.both(|vm| {
        vm.code(&code);
    });
    p
}

#[test]
fn guest_store_into_the_running_block_without_fence_i() {
    let two = c_addi(15, 1) as u32 | (c_nop() as u32) << 16;
    for mixed in [false, true] {
        for gap in [&[][..], &[addi(14, 14, 1), two][..]] {
            let (old, new) = (addi(13, 13, 1), addi(13, 13, 100));
            let mut p = store_into_the_running_block(gap, old, new, sw, mixed);
            p.run_to_wfi("store into the running block");
            assert_eq!(
                p.jit.x(13),
                3 + 3 * 100,
                "gap of {} instructions, mixed page: {mixed}",
                gap.len()
            );
        }
        // A halfword store to the first half of an instruction (its immediate stays the same).
        let (old, new) = (addi(13, 13, 1), addi(14, 13, 1));
        let mut p = store_into_the_running_block(&[], old, new, sh, mixed);
        p.run_to_wfi("halfword store into the running block");
        assert_eq!((p.jit.x(13), p.jit.x(14)), (3, 4), "mixed page: {mixed}");
    }
}

#[test]
fn vmm_rewrites_code_between_runs() {
    // 1000 passes over a loop that adds 1 to x13; the VMM rewrites the ADDI to add 7.
    for (budget, compressed) in [(1u64, false), (150, false), (1001, true), (2000, false)] {
        let mut p = Pair::new();
        p.set_x(11, 1000);
        let inc = if compressed {
            c_addi(13, 1) as u32 | (c_nop() as u32) << 16
        } else {
            addi(13, 13, 1)
        };
        let end = p.both(|vm| vm.code(&[inc, addi(10, 10, 1), blt(10, 11, -8)]));
        let ctx = format!("budget {budget}");
        assert_eq!(p.run(budget, &ctx), VcpuExit::BudgetExhausted);
        let done = p.int.x(13);
        let new = if compressed {
            c_addi(13, 7) as u32 | (c_nop() as u32) << 16
        } else {
            addi(13, 13, 7)
        };
        p.both(|vm| vm.w32(CODE, new));
        p.run_to_wfi(&ctx);
        assert_eq!(p.int.hart.pc(), end + 4);
        assert_eq!(p.jit.x(13), done + 7 * (1000 - done), "{ctx}");
    }
}

/// `Vcpu::set_budget_slack`: a run may finish the translated block it ends in, and go on in
/// translated code, up to the slack past its budget, instead of interpreting the block's
/// tail; without slack (the default) a run executes exactly its budget.
#[test]
fn budget_slack_lets_a_run_finish_its_block() {
    // One block of 41 instructions, a loop: 40 ADDIs and the jump back.
    let mut code = vec![addi(5, 5, 1); 40];
    code.push(jal(0, -160));
    for (slack, budget, executed) in [(0, 10, 10), (0, 100, 100), (64, 10, 41), (64, 100, 164)] {
        let mut vm = machine(true, &[]);
        vm.code(&code);
        vm.hart.set_pc(CODE);
        vcpu::Vcpu::set_budget_slack(&mut vm.hart, slack);
        assert_eq!(vm.hart.run(budget), VcpuExit::BudgetExhausted);
        assert_eq!(
            vm.hart.executed(),
            executed,
            "slack {slack}, budget {budget}"
        );
        assert_eq!(
            vm.x(5),
            executed - executed / 41,
            "slack {slack}, budget {budget}"
        );
    }
}

/// `Vcpu::run_on` is for a VMM that has written no guest RAM since the last run: translated
/// code is not checked against RAM again, so a VMM write is seen through `Vcpu::run` only
/// (a loop keeps adding 1 after the VMM made it add 7, until a `run`).
#[test]
fn run_on_keeps_translated_code_that_run_checks_again() {
    let mut vm = machine(true, &[]);
    vm.set_x(11, 1000);
    vm.code(&[addi(13, 13, 1), addi(10, 10, 1), blt(10, 11, -8)]);
    assert_eq!(vm.hart.run(300), VcpuExit::BudgetExhausted);
    let before = vm.x(13);
    assert_eq!(before, 100);
    vm.w32(CODE, addi(13, 13, 7));
    assert_eq!(vm.hart.run_on(30), VcpuExit::BudgetExhausted);
    let mid = vm.x(13);
    assert!(
        mid - before < 70,
        "run_on ran the translation made before ({before} to {mid})"
    );
    assert_eq!(vm.hart.run(30), VcpuExit::BudgetExhausted);
    assert_eq!(vm.x(13), mid + 70, "run ran the code now in RAM");
    assert!(vm.hart.translated_blocks() > 0);
}

/// vCPU switches on a hart instance (`Hart::switch_state`, `--pcpus`): the blocks keep
/// their code checks, and the TLB loaded maps no page of translated code writable. One vCPU
/// stored to the code page before any code there was translated, so its saved TLB holds a
/// store entry for that page; its store into the translated loop must still reach the code
/// guard. (FIRST and PATCH lie on another page than the loop.)
#[test]
fn switched_vcpus_keep_code_checks_and_their_stores_stay_guarded() {
    const FIRST: u64 = CODE + 0x2000;
    const PATCH: u64 = FIRST + 0x100;
    let mut vm = machine(true, &[]);
    // vCPU A: a store to the code page, which holds no translated code yet.
    vm.set_x(11, CODE + 0x800);
    vm.code_at(FIRST, &[sw(0, 11, 0)]);
    vm.hart.set_pc(FIRST);
    vm.run_to_wfi();
    let a = vm.hart.save_state();
    // vCPU B translates a loop on the code page (the guard protects the page).
    vm.code(&[addi(13, 13, 1), addi(10, 10, 1), blt(10, 11, -8)]);
    let looped = |vm: &mut Vm, pc: u64| {
        vm.set_x(10, 0);
        vm.set_x(11, 10);
        vm.set_x(13, 0);
        vm.hart.set_pc(pc);
        assert_eq!(vm.hart.run_on(10_000), VcpuExit::Wfi);
        vm.x(13)
    };
    assert_eq!(looped(&mut vm, CODE), 10);
    assert!(vm.hart.translated_blocks() > 0);
    let b = vm.hart.save_state();
    // A, then B again. Code checks kept: a write behind the guests' backs (which only
    // `Hart::run` looks for) is not seen.
    vm.hart.switch_state(&a).unwrap();
    vm.hart.switch_state(&b).unwrap();
    vm.w32(CODE, addi(13, 13, 3));
    assert_eq!(
        looped(&mut vm, CODE),
        10,
        "a switch dropped the code checks"
    );
    // A again: its own store into the loop (no FENCE.I) is seen, as every store of a hart
    // to its translated code is, and as the interpreter sees it.
    vm.hart.switch_state(&a).unwrap();
    vm.set_x(14, CODE);
    vm.set_x(15, addi(13, 13, 7) as u64);
    vm.put32(
        PATCH,
        &[
            sw(15, 14, 0),
            jal(0, (CODE as i64 - (PATCH + 4) as i64) as i32),
        ],
    );
    assert_eq!(
        looped(&mut vm, PATCH),
        70,
        "a store through the switched-in TLB went past the code guard"
    );
}

#[test]
fn vmm_rewrites_a_linked_block_between_runs() {
    // Block A (the loop head) jumps to block B (same page) which jumps back: linked both
    // ways after the first passes. The VMM rewrites B's first instruction.
    let mut p = Pair::new();
    p.set_x(11, 500);
    let code = [
        addi(10, 10, 1), // A
        jal(0, 0x100),   // to B
    ];
    let b = [
        addi(13, 13, 1), // B, rewritten
        addi(14, 14, 1),
        blt(10, 11, -(0x100 + 4 + 8)),
        wfi(),
    ];
    p.both(|vm| {
        vm.put32(CODE, &code);
        vm.put32(CODE + 4 + 0x100, &b);
    });
    assert_eq!(p.run(300, "A/B"), VcpuExit::BudgetExhausted);
    let done = p.int.x(13);
    p.both(|vm| vm.w32(CODE + 4 + 0x100, addi(13, 13, 5)));
    p.run_to_wfi("A/B");
    assert_eq!(p.jit.x(13), done + 5 * (500 - done));
    assert_eq!(p.jit.x(14), 500);
}

/// A pair whose translating hart has the smallest code region (1 MiB), which tests fill.
fn pair_with_a_1_mib_code_region() -> Pair {
    let mut p = Pair::new();
    p.jit = Vm::with_config(HartConfig {
        jit_code_bytes: 1 << 20,
        ..HartConfig::default()
    });
    p
}

/// Enough translations to fill the translator's code region (the minimum, 1 MiB) several
/// times over: every pass rewrites the immediate of the first instruction of a long block B,
/// which is then translated anew; A (the loop head) stays linked to B's first translation.
#[test]
fn retranslation_past_the_code_region_size() {
    const PASSES: u64 = 20_000;
    let mut p = pair_with_a_1_mib_code_region();
    p.set_x(16, addi(13, 13, 0) as u64);
    p.set_x(17, PASSES);
    let b = CODE + 0x200;
    let a = [
        andi(15, 10, 0x7ff), // A: x15 = the new ADDI
        slli(15, 15, 20),
        or(15, 15, 16),
        sw(15, 11, 0),
        jal(0, 0x200 - 16),
    ];
    let mut blk = vec![addi(13, 13, 0)]; // B, rewritten
    blk.extend((0..60).map(|k| addi(20 + k % 8, 20 + k % 8, k as i32)));
    blk.push(addi(10, 10, 1));
    blk.push(blt(10, 17, -(0x200 + 4 * blk.len() as i32)));
    let end = p.both(|vm| {
        vm.put32(CODE, &a);
        vm.code_at(b, &blk)
    });
    p.set_x(11, b);
    assert_eq!(p.run(50_000_000, "retranslation"), VcpuExit::Wfi);
    assert_eq!(p.int.hart.pc(), end + 4);
    let want: u64 = (0..PASSES).map(|k| k & 0x7ff).sum();
    assert_eq!(p.jit.x(13), want);
    p.assert_same_ram("retranslation");
    let resets = p.jit.hart.translated_code_resets();
    assert!(resets >= 3, "the code region was emptied {resets} times");
}

/// A JALR whose target's block was cached in the jump cache before the code region was
/// emptied (by a chain of more blocks than it holds, run once) must not enter the old
/// block's address: F is called twice (its block is then in the cache), the chain runs,
/// and F is called again.
#[test]
fn a_jalr_after_the_code_region_is_emptied() {
    const BLOCKS: u64 = 12_000;
    let mut p = pair_with_a_1_mib_code_region();
    let (f, chain) = (CODE + 0x100, RAM_BASE + 0x8_0000);
    let head = [
        jalr(1, 12, 0),
        jalr(1, 12, 0),
        jal(0, (chain - (CODE + 8)) as i32),
    ];
    let mut blocks: Vec<u32> = (0..BLOCKS)
        .flat_map(|_| [addi(13, 13, 1), jal(0, 4)])
        .collect();
    blocks.push(jalr(1, 12, 0));
    let end = p.both(|vm| {
        vm.put32(CODE, &head);
        vm.put32(f, &[addi(18, 18, 1), jalr(0, 1, 0)]);
        vm.code_at(chain, &blocks)
    });
    p.set_x(12, f);
    assert_eq!(p.run(1_000_000, "chain"), VcpuExit::Wfi);
    assert_eq!(p.int.hart.pc(), end + 4);
    assert_eq!((p.jit.x(13), p.jit.x(18)), (BLOCKS, 3));
    let resets = p.jit.hart.translated_code_resets();
    assert!(resets >= 1, "the code region was emptied {resets} times");
}

/// A function called through JALR, rewritten by the VMM between runs: its block is found
/// stale once, at the first call of the next run, and forgotten, also from the jump cache
/// (`Jit::unlink_stale`); the later calls reach its new translation instead of entering the
/// stale block, and leaving it for the dispatcher, at every call.
#[test]
fn a_function_rewritten_between_runs_is_found_stale_once() {
    let mut p = Pair::new();
    let f = CODE + 0x200;
    let prog = [
        addi(11, 0, 50),
        jalr(1, 12, 0),
        addi(11, 11, -1),
        bne(11, 0, -8),
    ];
    let end = p.both(|vm| {
        vm.put32(f, &[addi(18, 18, 1), jalr(0, 1, 0)]);
        vm.code(&prog)
    });
    p.set_x(12, f);
    p.run_to_wfi("first run");
    assert_eq!(p.jit.x(18), 50);
    p.both(|vm| {
        vm.put32(f, &[addi(18, 18, 2)]);
        vm.hart.set_pc(CODE);
    });
    p.run_to_wfi("after the rewrite");
    assert_eq!(p.int.hart.pc(), end + 4);
    assert_eq!(p.jit.x(18), 150);
    let stale = p.jit.hart.stale_block_exits();
    assert!((1..=2).contains(&stale), "{stale} exits from a stale block");
}

// ---------------------------------------------------------------------------------------------
// Sv39
// ---------------------------------------------------------------------------------------------

/// A second set of tables (for a `satp` switch).
const PT2_ROOT: u64 = RAM_BASE + 0x2_3000;
const PT2_L1: u64 = RAM_BASE + 0x2_4000;
const PT2_L0: u64 = RAM_BASE + 0x2_5000;
/// Virtual page i is `VA_BASE + i * 4096`, described by L0 entry i.
const VA_BASE: u64 = 0x4000_0000;
/// S-mode code (identity-mapped by a gigapage).
const SCODE: u64 = CODE + 0x400;

fn satp(root: u64) -> u64 {
    (8 << 60) | (root >> 12)
}
fn ppage(i: u64) -> u64 {
    RAM_BASE + 0x3_0000 + i * 0x1000
}
fn vpage(i: u64) -> u64 {
    VA_BASE + i * 0x1000
}

/// Both table sets: RAM identity-mapped by a supervisor RWX gigapage, and the L0 tables for
/// the virtual pages at `VA_BASE` (all invalid).
fn page_tables(vm: &mut Vm) {
    for (root, l1, l0) in [(PT_ROOT, PT_L1, PT_L0), (PT2_ROOT, PT2_L1, PT2_L0)] {
        vm.w64(root + 8 * 2, pte(RAM_BASE, V | R | W | X | A | D));
        vm.w64(root + 8 * 1, pte(l1, V));
        vm.w64(l1, pte(l0, V));
    }
}

/// Map virtual page `i` to `pa` in the first (or second) table set.
fn map(vm: &mut Vm, second: bool, i: u64, pa: u64, flags: u64) {
    let l0 = if second { PT2_L0 } else { PT_L0 };
    vm.w64(l0 + 8 * i, pte(pa, flags));
}

/// A `satp` write in a monitored S-mode block under Sv39 (every event counted, so every
/// instruction's fetch goes through the ITLB model): the write flushes the TLB models, and
/// the interpreter reports the write's own fetch (an ITLB miss, and its cycles) right after
/// it, before the counter reads that follow, which the translator must match; also counter
/// and `satp` reads around it, in every small budget.
#[test]
fn satp_writes_in_monitored_blocks_report_their_fetch() {
    let mut body = vec![addi(9, 0, 40)];
    let head = body.len();
    body.extend([
        ld(10, 8, 0),
        csrr(11, SATP),
        csrr(12, CYCLE),
        csrw(SATP, 11),
        csrr(13, CYCLE),
        csrr(14, 0xc03 + 21),
        sd(12, 8, 0),
        sd(13, 8, 8),
        sd(14, 8, 16),
        addi(8, 8, 24),
        addi(9, 9, -1),
    ]);
    let back = -4 * (body.len() - head) as i32;
    body.push(bne(9, 0, back));
    for budget in (1..=30u64).chain([1000]) {
        let mut p = Pair::new();
        let end = p.both(|vm| {
            page_tables(vm);
            vm.set_x(8, DATA);
            vm.set_x(19, satp(PT_ROOT));
            vm.set_x(18, -1i64 as u64);
            let mut m = vec![csrw(SATP, 19), sfence_vma(0, 0), csrw(MCOUNTEREN, 18)];
            m.extend(pmu_setup());
            m.extend(vm.enter_mode(PrivilegeMode::Supervisor, SCODE));
            assert!(CODE + 4 * m.len() as u64 <= SCODE);
            vm.code(&m);
            vm.code_at(SCODE, &body)
        });
        let ctx = format!("satp writes, budget {budget}");
        p.run_to_wfi_in_steps(budget, &ctx);
        assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        p.assert_same_ram(&ctx);
        assert!(p.jit.hart.translated_blocks() > 0, "{ctx}");
    }
}

/// Writes of `sstatus` do not end a block that is not monitored (`x64::csr_ends_block`), as
/// Linux masks and unmasks interrupts. S-mode code makes its own software interrupt pending
/// while SIE is clear (`sip.SSIP`), then sets SIE in the middle of a block: the interrupt is
/// taken right after that write, with `sepc` at the next instruction (privileged spec
/// 3.1.9, "Machine Interrupt Registers": an interrupt is taken when pending, enabled and
/// globally enabled), as the interpreter takes it. The save (`csrrci`) and the restore
/// (`csrrs`) that follow in the same block read SIE set and leave it set, and a clear of SIE
/// ends nothing. In every small budget, and compared with the interpreter throughout.
#[test]
fn sstatus_writes_inside_a_translated_block() {
    const PASSES: u64 = 30;
    const STRAP: u64 = SCODE + 0x200;
    // The S-mode handler logs `sepc` at x8 and clears SSIP.
    let handler = [
        csrr(14, SEPC),
        sd(14, 8, 0),
        addi(8, 8, 8),
        csrrci(0, SIP, 2),
        sret(),
    ];
    let mut body = vec![addi(9, 0, PASSES as i32)];
    let head = body.len();
    body.extend([
        csrrsi(0, SIP, 2), // SSIP pending, SIE clear: not taken (the block ends here)
        addi(10, 10, 1),
        csrrsi(0, SSTATUS, 2), // SIE set: taken after it
        addi(11, 11, 1),
        csrrci(12, SSTATUS, 2), // save: x12 has SIE set (SRET set it again)
        add(13, 13, 12),
        csrrs(0, SSTATUS, 12), // restore: SIE set, nothing pending
        csrrci(0, SSTATUS, 2),
        addi(9, 9, -1),
    ]);
    let taken_at = SCODE + 4 * (head as u64 + 3);
    let back = -4 * (body.len() - head) as i32;
    body.push(bne(9, 0, back));
    for budget in (1..=24u64).chain([1000]) {
        let mut p = Pair::new();
        let end = p.both(|vm| {
            vm.set_x(8, DATA);
            vm.set_x(5, STRAP);
            let mut m = vec![csrrsi(0, MIDELEG, 2), csrrsi(0, SIE, 2), csrw(STVEC, 5)];
            m.extend(vm.enter_mode(PrivilegeMode::Supervisor, SCODE));
            assert!(CODE + 4 * m.len() as u64 <= SCODE);
            vm.code(&m);
            vm.put32(STRAP, &handler);
            vm.code_at(SCODE, &body)
        });
        let ctx = format!("sstatus writes, budget {budget}");
        p.run_to_wfi_in_steps(budget, &ctx);
        assert_eq!(p.int.hart.pc(), end + 4, "{ctx}: the program trapped");
        p.assert_same_ram(&ctx);
        let t = &p.jit;
        assert_eq!((t.x(10), t.x(11)), (PASSES, PASSES), "{ctx}");
        assert_eq!(t.x(8), DATA + 8 * PASSES, "{ctx}: interrupts taken");
        for k in 0..PASSES {
            assert_eq!(
                t.r64(DATA + 8 * k),
                taken_at,
                "{ctx}: sepc of interrupt {k}"
            );
        }
        assert_eq!(t.x(12) & MS_SIE, MS_SIE, "{ctx}: SIE as saved");
        assert_eq!(t.csr(SSTATUS) & MS_SIE, 0, "{ctx}: SIE at the end");
        assert!(t.hart.translated_blocks() > 0, "{ctx}");
    }
}

/// `sstatus.SUM` and `sstatus.MXR` set and cleared in the middle of an S-mode block under
/// Sv39 take effect at the next access of the same block (privileged spec 12.1.1.2,
/// "Memory Privilege in sstatus Register"): a load from a user page succeeds with SUM set
/// and faults (load page fault, `stval` the address) right after SUM is cleared; a load
/// from an execute-only page likewise with MXR. Compared with the interpreter.
#[test]
fn sum_and_mxr_written_inside_a_translated_block() {
    // Virtual pages 3 (user) and 4 (execute-only), both on physical page 1.
    for (bit, i, flags) in [(MS_SUM, 3, V | R | U | A), (MS_MXR, 4, V | X | A)] {
        let page = vpage(i);
        let body = [
            csrrs(0, SSTATUS, 5),
            ld(10, 6, 0),
            ld(11, 6, 8),
            csrrc(0, SSTATUS, 5),
            addi(12, 12, 1),
            ld(13, 6, 16),
        ];
        let fault_at = SCODE + 4 * 5;
        let mut p = Pair::new();
        p.both(|vm| {
            page_tables(vm);
            vm.w64(ppage(1), 0x1111);
            vm.w64(ppage(1) + 8, 0x2222);
            map(vm, false, i, ppage(1), flags);
            vm.set_x(5, bit);
            vm.set_x(6, page);
            vm.set_x(19, satp(PT_ROOT));
            let mut m = vec![csrw(SATP, 19), sfence_vma(0, 0)];
            m.extend(vm.enter_mode(PrivilegeMode::Supervisor, SCODE));
            assert!(CODE + 4 * m.len() as u64 <= SCODE);
            vm.code(&m);
            vm.code_at(SCODE, &body);
        });
        let ctx = format!("sstatus bit {bit:#x}");
        p.run_to_wfi(&ctx);
        p.assert_same_ram(&ctx);
        let t = &p.jit;
        assert_eq!((t.x(10), t.x(11), t.x(12)), (0x1111, 0x2222, 1), "{ctx}");
        assert_eq!(t.x(13), 0, "{ctx}: the load after the clear");
        let trap = t.mtrap();
        assert_eq!(trap.cause, cause::LOAD_PAGE_FAULT, "{ctx}");
        assert_eq!((trap.epc, trap.tval), (fault_at, page + 16), "{ctx}");
        assert!(t.hart.translated_blocks() > 0, "{ctx}");
    }
}

/// Monitored blocks skip the ITLB model for a fetch from the page the model saw last
/// (`MonitorView::fetch_page`), which is set on the way into translated code from what the
/// interpreter left. S-mode code on two virtual pages that share the model's entry (64
/// pages apart) jumps back and forth, so that every crossing is an ITLB miss; in every small
/// budget, runs start on either page after the other, and the miss counts must stay the
/// interpreter's.
#[test]
fn fetches_from_pages_that_share_an_itlb_entry_are_reported_at_every_run_start() {
    let (a, b) = (8, 8 + vcpu::pmu::model::TLB_ENTRIES as u64);
    let to_b = (vpage(b) - (vpage(a) + 12)) as i32;
    let to_a = (vpage(a) as i64 - (vpage(b) + 8) as i64) as i32;
    let page_a = [
        addi(9, 9, -1),
        ld(11, 8, 0),
        beq(9, 0, 8),
        jal(0, to_b),
        wfi(),
    ];
    let page_b = [addi(10, 10, 1), ld(12, 8, 8), jal(0, to_a)];
    for budget in (1..=9u64).chain([1000]) {
        let mut p = Pair::new();
        p.both(|vm| {
            page_tables(vm);
            vm.put32(ppage(1), &page_a);
            vm.put32(ppage(2), &page_b);
            map(vm, false, a, ppage(1), V | R | X | A);
            map(vm, false, b, ppage(2), V | R | X | A);
            vm.set_x(8, DATA);
            vm.set_x(9, 40);
            vm.set_x(19, satp(PT_ROOT));
            let mut m = vec![csrw(SATP, 19), sfence_vma(0, 0)];
            m.extend(pmu_setup());
            m.extend(vm.enter_mode(PrivilegeMode::Supervisor, vpage(a)));
            vm.code(&m);
        });
        let ctx = format!("pages sharing an ITLB entry, budget {budget}");
        p.run_to_wfi_in_steps(budget, &ctx);
        assert_eq!(p.int.x(9), 0, "{ctx}: the loop did not run to its end");
        assert!(p.jit.hart.translated_blocks() > 0, "{ctx}");
    }
}

/// Enter S-mode at SCODE with the first table set; `body` (then WFI) is placed there.
fn sv39_program(p: &mut Pair, body: &[u32]) -> u64 {
    p.both(|vm| {
        vm.set_x(19, satp(PT_ROOT));
        let mut m = vec![csrw(SATP, 19), sfence_vma(0, 0)];
        m.extend(vm.enter_mode(PrivilegeMode::Supervisor, SCODE));
        vm.code(&m);
        vm.code_at(SCODE, body)
    })
}

#[test]
fn one_physical_page_at_two_virtual_addresses() {
    let mut p = Pair::new();
    p.both(|vm| {
        page_tables(vm);
        map(vm, false, 3, ppage(0), V | R | W | X | A | D);
        map(vm, false, 7, ppage(0), V | R | W | X | A | D);
        // The shared page: x10 = its virtual address, a load and a store through it.
        vm.put32(
            ppage(0),
            &[
                auipc(10, 0),
                ld(15, 10, 0x100),
                addi(15, 15, 1),
                sd(15, 10, 0x100),
                addi(11, 11, 1),
                jalr(0, 1, 0),
            ],
        );
        vm.w64(ppage(0) + 0x100, 1000);
    });
    p.set_x(21, vpage(3));
    p.set_x(22, vpage(7));
    p.set_x(23, 6);
    let end = sv39_program(
        &mut p,
        &[
            jalr(1, 21, 0), // loop: x10 = vpage(3)
            add(13, 13, 10),
            jalr(1, 22, 0), // x10 = vpage(7)
            sub(13, 13, 10),
            add(14, 14, 10),
            addi(23, 23, -1),
            bne(23, 0, -24),
        ],
    );
    p.run_to_wfi("aliases");
    assert_eq!(p.int.hart.pc(), end + 4, "no clean end");
    let d = vpage(3).wrapping_sub(vpage(7));
    assert_eq!(p.jit.x(13), d.wrapping_mul(6));
    assert_eq!(p.jit.x(14), 6 * vpage(7));
    assert_eq!(p.jit.x(11), 12);
    assert_eq!(p.jit.r64(ppage(0) + 0x100), 1012);
    p.assert_same_ram("aliases");
}

/// Three calls through virtual page 9 (mapped to code returning 1), then `switch` (which
/// maps it to code returning 2), then three more calls; x14 and x15 sum the results.
fn remap(switch: &[u32], second: bool) {
    // The second frame is 512 KiB after the first: their blocks share a slot of the
    // translator's block table, which must tell them apart by RAM offset.
    const FAR: u64 = RAM_BASE + 0x3_1000 + 0x8_0000;
    let mut p = Pair::new();
    p.both(|vm| {
        page_tables(vm);
        map(vm, false, 9, ppage(1), V | R | X | A);
        if second {
            map(vm, true, 9, FAR, V | R | X | A);
        }
        for (pa, v) in [(ppage(1), 1), (FAR, 2)] {
            vm.put32(pa, &[addi(10, 0, v), addi(12, 12, 1), jalr(0, 1, 0)]);
        }
    });
    p.set_x(21, vpage(9));
    p.set_x(22, 3);
    p.set_x(24, PT_L0 + 8 * 9);
    p.set_x(25, pte(FAR, V | R | X | A));
    p.set_x(26, satp(PT2_ROOT));
    let mut body = vec![
        jalr(1, 21, 0),
        add(14, 14, 10),
        addi(22, 22, -1),
        bne(22, 0, -12),
    ];
    body.extend_from_slice(switch);
    body.extend([
        addi(22, 0, 3),
        jalr(1, 21, 0),
        add(15, 15, 10),
        addi(22, 22, -1),
        bne(22, 0, -12),
    ]);
    let end = sv39_program(&mut p, &body);
    p.run_to_wfi("remap");
    assert_eq!(p.int.hart.pc(), end + 4, "no clean end");
    assert_eq!((p.jit.x(14), p.jit.x(15), p.jit.x(12)), (3, 6, 6));
}

#[test]
fn a_pte_store_and_sfence_vma_remap_translated_code() {
    remap(&[sd(25, 24, 0), sfence_vma(0, 0)], false);
}

#[test]
fn a_satp_switch_and_sfence_vma_remap_translated_code() {
    remap(&[csrw(SATP, 26), sfence_vma(0, 0)], true);
}

// ---------------------------------------------------------------------------------------------
// Faults and devices in the middle of a block
// ---------------------------------------------------------------------------------------------

/// A loop of straight-line code whose access address moves by a page per pass, until the
/// access at index `idx` of `body` faults; the trap must be identical and exact.
/// The loop is placed at `at` (CODE in M-mode, SCODE under Sv39).
fn fault_loop(p: &mut Pair, at: u64, start: u64, body: &[u32], idx: usize, want: (u64, u64)) {
    // x20: the moving address; x24 = 4096.
    p.set_x(20, start);
    p.set_x(24, 0x1000);
    let mut code = body.to_vec();
    code.push(add(20, 20, 24));
    code.push(jal(0, -4 * (code.len() as i32)));
    p.both(|vm| vm.code_at(at, &code));
    let (want_cause, tval) = want;
    p.run_to_wfi("fault loop");
    assert_eq!(p.int.hart.pc(), TRAP + 4, "no trap");
    let t = p.jit.mtrap();
    assert_eq!(
        t,
        Trap {
            cause: want_cause,
            epc: at + 4 * idx as u64,
            tval,
        }
    );
    p.assert_same_ram("fault loop");
}

/// Straight-line code around one access: x10 counts before it, x12 after it.
fn around(access: u32) -> Vec<u32> {
    vec![
        addi(10, 10, 1),
        c_pair(),
        access,
        addi(12, 12, 1),
        sd(10, 21, 0),
    ]
}

/// Two compressed instructions as one word (x13 += 1; nop).
fn c_pair() -> u32 {
    c_addi(13, 1) as u32 | (c_nop() as u32) << 16
}

/// LR, SC and AMOs (helpers in translated code) that fault in the middle of a translated
/// loop: the block leaves before them and the interpreter takes the trap.
#[test]
fn an_atomic_fault_inside_a_translated_loop() {
    const RAM_END: u64 = RAM_BASE + RAM_SIZE as u64;
    let last = RAM_END - 0x1000;
    for (access, c) in [
        (amo(AMO_ADD, 3, 11, 20, 10), cause::STORE_ACCESS),
        (amo(AMO_SWAP, 2, 0, 20, 10), cause::STORE_ACCESS),
        (lr_d(11, 20), cause::LOAD_ACCESS),
        (sc_d(11, 20, 10), cause::STORE_ACCESS),
    ] {
        let mut p = Pair::new();
        p.set_x(21, DATA);
        let start = last - 3 * 0x1000 + 8;
        fault_loop(&mut p, CODE, start, &around(access), 2, (c, RAM_END + 8));
        assert_eq!(p.jit.x(10), 5);
        assert_eq!(p.jit.x(12), 4);
    }
}

#[test]
fn an_access_fault_inside_a_translated_loop() {
    // M-mode, no translation: x20 walks towards the end of RAM.
    const RAM_END: u64 = RAM_BASE + RAM_SIZE as u64;
    let last = RAM_END - 0x1000;
    for (access, c, off) in [
        (ld(11, 20, 8), cause::LOAD_ACCESS, 8),
        (sw(11, 20, 8), cause::STORE_ACCESS, 8),
        (lbu(0, 20, 0), cause::LOAD_ACCESS, 0),
    ] {
        let mut p = Pair::new();
        p.set_x(21, DATA);
        let start = last - 3 * 0x1000;
        fault_loop(&mut p, CODE, start, &around(access), 2, (c, RAM_END + off));
        assert_eq!(p.jit.x(10), 5);
        assert_eq!(p.jit.x(12), 4);
    }
    // Misaligned across the end of RAM: the fault reports the first byte outside.
    let mut p = Pair::new();
    p.set_x(21, DATA);
    let start = last - 0x1000 + 0xffc;
    let want = (cause::LOAD_ACCESS, RAM_END);
    fault_loop(&mut p, CODE, start, &around(ld(11, 20, 0)), 2, want);
}

/// A monitored block that leaves before an access that faults has reported the loads and
/// stores it retired before it, and not the one that faults: every counter of the
/// catalog's events ends as the interpreter's.
#[test]
fn a_fault_inside_a_monitored_loop_counts_the_accesses_before_it() {
    const RAM_END: u64 = RAM_BASE + RAM_SIZE as u64;
    for (access, c) in [
        (ld(11, 20, 8), cause::LOAD_ACCESS),
        (sw(11, 20, 8), cause::STORE_ACCESS),
    ] {
        let mut p = Pair::new();
        p.set_x(20, RAM_END - 4 * 0x1000);
        p.set_x(21, DATA);
        p.set_x(24, 0x1000);
        let mut code = pmu_setup();
        let head = code.len();
        code.extend([
            ld(14, 21, 8),
            sd(10, 21, 16),
            lw(15, 21, 24),
            addi(10, 10, 1),
            access,
            addi(12, 12, 1),
            sd(10, 21, 0),
            add(20, 20, 24),
        ]);
        code.push(jal(0, -4 * (code.len() - head) as i32));
        p.both(|vm| vm.code(&code));
        p.run_to_wfi("monitored fault loop");
        assert_eq!(p.int.hart.pc(), TRAP + 4, "no trap");
        assert_eq!(p.jit.mtrap().cause, c);
        assert_eq!(p.jit.x(10), 5, "passes");
        for k in 0..29 {
            let counter = 0xb03 + k;
            assert_eq!(
                p.jit.csr(counter),
                p.int.csr(counter),
                "mhpmcounter{} (event {:#x})",
                k + 3,
                p.int.csr(0x323 + k)
            );
        }
        assert!(p.jit.hart.translated_blocks() > 0);
    }
}

/// Code that stores each doubleword's address into it, over the data pages (x20 = DATA,
/// x23 = their end), then sets x20 = x21 - 8.
fn fill_with_addresses() -> Vec<u32> {
    vec![
        sd(20, 20, 0),
        addi(20, 20, 8),
        bne(20, 23, -8),
        addi(20, 21, -8),
    ]
}

/// A base register a block has just changed (its new value still only in a host register:
/// loads and stores keep the register cache) and two loads through it, the second
/// chained to the first, crossing into the next page at one iteration: the chain's page
/// check fails there, and the full lookup must start from the new base, not the hart's
/// copy. Each doubleword of the data holds its own address.
#[test]
fn a_chained_load_into_the_next_page_uses_the_unwritten_base() {
    let mut p = Pair::new();
    p.set_x(21, DATA);
    p.set_x(22, DATA + DATA_LEN as u64 - 16);
    p.set_x(23, DATA + DATA_LEN as u64);
    p.set_x(20, DATA);
    let mut code = fill_with_addresses();
    code.extend([
        // Walk: the pairs (x20, x20 + 8), from (DATA, DATA + 8) on.
        addi(20, 20, 8),
        ld(11, 20, 0),
        ld(12, 20, 8),
        add(13, 13, 11),
        xor(14, 14, 12),
        bne(20, 22, -20),
        wfi(),
    ]);
    p.both(|vm| vm.code(&code));
    p.run_to_wfi("chained loads across a page");
    let n = (DATA_LEN as u64 - 8) / 8;
    let sum = (0..n).map(|k| DATA + 8 * k).fold(0u64, u64::wrapping_add);
    let x = (1..=n).map(|k| DATA + 8 * k).fold(0, |a, v| a ^ v);
    assert_eq!(p.jit.x(13), sum, "the first loads' sum");
    assert_eq!(p.jit.x(14), x, "the second loads' xor");
    assert!(p.jit.hart.translated_blocks() > 0);
}

/// A load whose destination is its base (`ld x10, 0(x10)`, pointer chasing) at the start of
/// a block, where the base is not in a host register yet: the block loads straight into
/// the register caching the destination, which it must take only once the address is
/// formed from the base. The list's nodes are 16 bytes apart in the data pages, each
/// holding the next one's address (the last 0).
#[test]
fn a_load_into_its_own_base_follows_a_list() {
    const NODES: u64 = 300;
    let mut words = Vec::new();
    for k in 0..NODES {
        let next = if k + 1 < NODES {
            DATA + 16 * (k + 1)
        } else {
            0
        };
        words.extend([next as u32, (next >> 32) as u32, 0, 0]);
    }
    let code = vec![
        // head: (a block of its own: entered from the block below, not a loop in one block)
        ld(10, 10, 0),
        addi(11, 11, 1),
        beq(10, 0, 16),
        // The next block leaves another address of the data, x10 + 8 (where 0 is), in the
        // host register it computes x14 in, the first one: the one the load at the head
        // is given for x10.
        addi(14, 10, 8),
        addi(10, 14, -8),
        jal(0, -20),
        wfi(),
    ];
    let mut p = Pair::new();
    p.set_x(10, DATA);
    p.both(|vm| {
        vm.put32(DATA, &words);
        vm.code(&code);
    });
    p.run_to_wfi("a list followed by loads into their base");
    assert_eq!(p.jit.x(11), NODES, "nodes visited");
    assert_eq!(p.jit.x(10), 0);
    assert!(p.jit.hart.translated_blocks() > 0);
}

/// Two loads through one base register with integer instructions between them: chained
/// (`x64::keeps_chain`) when those leave the base alone, crossing into the next page at
/// one iteration; not when one of them moves the base (the second load then reads where
/// the moved base points, not where the first's address says).
#[test]
fn loads_chain_across_instructions_that_keep_their_base() {
    for moves_base in [false, true] {
        let mut p = Pair::new();
        p.set_x(21, DATA);
        p.set_x(22, DATA + DATA_LEN as u64 - 24);
        p.set_x(23, DATA + DATA_LEN as u64);
        p.set_x(20, DATA);
        let between = if moves_base {
            addi(20, 20, 8)
        } else {
            addi(15, 20, 8)
        };
        let mut code = fill_with_addresses();
        code.extend([
            // Walk: (x20, x20 + 8 or + 16), from (DATA, ...) on.
            addi(20, 20, 8),
            ld(11, 20, 0),
            add(13, 13, 11),
            between,
            ld(12, 20, 8),
            xor(14, 14, 12),
            bltu(20, 22, -24),
            wfi(),
        ]);
        p.both(|vm| vm.code(&code));
        p.run_to_wfi("loads chained across integer instructions");
        // The program, with each doubleword holding its address.
        let (mut x20, mut sum, mut x) = (DATA - 8, 0u64, 0u64);
        loop {
            x20 += 8;
            sum = sum.wrapping_add(x20);
            if moves_base {
                x20 += 8;
            }
            x ^= x20 + 8;
            if x20 >= DATA + DATA_LEN as u64 - 24 {
                break;
            }
        }
        assert_eq!(p.jit.x(13), sum, "moves_base {moves_base}: the first loads");
        assert_eq!(p.jit.x(14), x, "moves_base {moves_base}: the second loads");
        assert!(p.jit.hart.translated_blocks() > 0);
    }
}

#[test]
fn a_page_fault_inside_a_translated_loop() {
    // A load, then a store, to the same page: the store needs W, not what the load found.
    let load_store = vec![
        addi(10, 10, 1),
        ld(11, 20, 16),
        sd(11, 20, 16),
        addi(12, 12, 1),
        sd(10, 21, 0),
    ];
    // (body, flags of page 23, first address, cause, mtval): pages 20-22 are mapped.
    let ro = V | R | A;
    let cases = [
        (
            around(ld(11, 20, 16)),
            0,
            vpage(20),
            cause::LOAD_PAGE_FAULT,
            vpage(23) + 16,
        ),
        (
            around(sd(11, 20, 16)),
            ro,
            vpage(20),
            cause::STORE_PAGE_FAULT,
            vpage(23) + 16,
        ),
        (
            around(lb(0, 20, 0)),
            0,
            vpage(20),
            cause::LOAD_PAGE_FAULT,
            vpage(23),
        ),
        (
            load_store,
            ro,
            vpage(20),
            cause::STORE_PAGE_FAULT,
            vpage(23) + 16,
        ),
        // Misaligned across pages: the fault is in the second page.
        (
            around(sw(11, 20, -2)),
            ro,
            vpage(21),
            cause::STORE_PAGE_FAULT,
            vpage(23),
        ),
        (
            around(lw(11, 20, 0)),
            0,
            vpage(20) + 0xffe,
            cause::LOAD_PAGE_FAULT,
            vpage(23),
        ),
        (
            around(ld(11, 20, 0)),
            ro,
            vpage(20) + 0xffc,
            cause::LOAD_PAGE_FAULT,
            vpage(24),
        ),
    ];
    for (body, flags, start, c, tval) in cases {
        let mut p = Pair::new();
        p.both(|vm| {
            page_tables(vm);
            for i in 0..3 {
                map(vm, false, 20 + i, ppage(10 + i), V | R | W | A | D);
            }
            map(vm, false, 23, ppage(13), flags);
        });
        p.set_x(21, DATA);
        sv39_program(&mut p, &[]);
        fault_loop(&mut p, SCODE, start, &body, 2, (c, tval));
    }
}

#[test]
fn device_accesses_inside_a_translated_loop() {
    // A device outside RAM and one sharing a page with RAM (like HTIF's tohost).
    const DEV: u64 = 0x1000_0000;
    const IN_RAM: u64 = RAM_BASE + 0x1_8000;
    let mut p = Pair::with_mmio(&[
        MmioRange {
            base: DEV,
            size: 0x100,
        },
        MmioRange {
            base: IN_RAM,
            size: 8,
        },
    ]);
    p.set_x(20, DEV);
    p.set_x(21, IN_RAM);
    p.set_x(23, 40);
    let end = p.both(|vm| {
        vm.code(&[
            addi(10, 10, 1),
            ld(11, 21, 0x100), // RAM in the device's page
            add(11, 11, 10),
            sd(11, 21, 0x108),
            lw(12, 20, 4), // device
            add(13, 13, 12),
            sw(13, 20, 8), // device
            sd(13, 21, 0), // in-RAM device
            addi(14, 14, 1),
            bne(10, 23, -36),
        ])
    });
    let mut rng = seeded(77);
    let mut exits = Vec::new();
    loop {
        let budget = 1 + rng.below(50);
        match p.run(budget, "devices") {
            VcpuExit::Mmio(acc) => {
                exits.push(acc);
                if acc.write.is_none() {
                    let v = rng.next();
                    p.both(|vm| vm.hart.complete_mmio_read(v));
                    p.assert_same("devices, completed", DATA, DATA_LEN);
                }
            }
            VcpuExit::BudgetExhausted => {}
            VcpuExit::Wfi => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(p.int.hart.pc(), end + 4);
    assert_eq!(exits.len(), 3 * 40);
    assert_eq!(p.jit.x(14), 40);
    p.assert_same_ram("devices");
}

/// `HartConfig::jit_perf_map`: every translated block gets a line `START SIZE NAME` in
/// `/tmp/perf-PID.map` (hex, as `perf report` reads it) naming its guest pc, and the
/// host range lies in no other block's.
#[test]
fn the_perf_map_names_every_translated_block() {
    let (_one, path, mut vm) = perf_map_vm();
    // A loop of two blocks: the body (ending in its branch) and what follows it.
    vm.put32(
        CODE,
        &[
            addi(5, 0, 100),
            addi(6, 6, 3),
            addi(5, 5, -1),
            bne(5, 0, -8),
            addi(7, 0, 1),
            wfi(),
        ],
    );
    vm.hart.set_pc(CODE);
    assert_eq!(vm.hart.run(10_000), VcpuExit::Wfi);
    assert_eq!(vm.x(6), 300);
    let ranges = perf_map_ranges(&path);
    for (start, end, name) in &ranges {
        assert!(
            end > start && name.starts_with("guest 0x8000"),
            "{start:x} {end:x} {name}"
        );
    }
    assert!(
        ranges.iter().any(|r| r.2 == "guest 0x80001004"),
        "the loop body's block is not named: {ranges:x?}"
    );
    assert!(
        ranges.windows(2).all(|w| w[0].1 <= w[1].0),
        "overlapping blocks: {ranges:x?}"
    );
}

/// Held by the tests that write the process's perf map, which all share one file.
static PERF_MAP: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A translating hart that writes the perf map, the map's path (emptied), and the lock on
/// it, to hold while the test runs.
fn perf_map_vm() -> (std::sync::MutexGuard<'static, ()>, String, Vm) {
    let one = PERF_MAP.lock().unwrap_or_else(|e| e.into_inner());
    let path = format!("/tmp/perf-{}.map", std::process::id());
    let _ = std::fs::remove_file(&path);
    let vm = Vm::with_config(HartConfig {
        jit: true,
        jit_perf_map: true,
        ..HartConfig::default()
    });
    (one, path, vm)
}

/// The lines of the perf map at `path` as `(start, end, name)`, sorted, the file removed.
fn perf_map_ranges(path: &str) -> Vec<(u64, u64, String)> {
    let map = std::fs::read_to_string(path).expect("no perf map written");
    let _ = std::fs::remove_file(path);
    let mut ranges: Vec<_> = map
        .lines()
        .map(|line| {
            let (start, rest) = line.split_once(' ').unwrap();
            let (len, name) = rest.split_once(' ').unwrap();
            let start = u64::from_str_radix(start, 16).unwrap();
            (
                start,
                start + u64::from_str_radix(len, 16).unwrap(),
                name.to_string(),
            )
        })
        .collect();
    ranges.sort();
    ranges
}

/// With a perf map, emptying the translated code (here because the recording changes more
/// often than a region keeps CTR keys for: each pass through the loop inhibits other jump
/// types, and a pass has two keys, before and after its first record) moves it to new
/// addresses: the loop translated again is named again, at other addresses, and no address
/// has two names (host `perf` would give samples there either one).
#[test]
fn the_perf_map_names_each_address_once_across_an_emptied_region() {
    let (_one, path, mut vm) = perf_map_vm();
    let loop_pc = CODE + 20;
    vm.put32(
        CODE,
        &[
            addi(9, 0, 20),
            // outer: mctrctl.M, and the jump types of bits 8-15 inhibited as x9 says.
            slli(7, 9, 40),
            ori(7, 7, vcpu::ctr::CTRCTL_M as i32),
            csrrw(0, MCTRCTL, 7),
            addi(5, 0, 100),
            // loop: the body, ending in its branch.
            addi(6, 6, 3),
            addi(5, 5, -1),
            bne(5, 0, -8),
            addi(9, 9, -1),
            bne(9, 0, -32),
            wfi(),
        ],
    );
    vm.hart.set_pc(CODE);
    assert_eq!(vm.hart.run(10_000), VcpuExit::Wfi);
    assert_eq!(vm.x(6), 6000);
    assert!(
        vm.hart.translated_code_resets() >= 1,
        "the region was not emptied"
    );
    let ranges = perf_map_ranges(&path);
    let name = format!("guest {loop_pc:#x}");
    let loops: Vec<_> = ranges.iter().filter(|r| r.2 == name).collect();
    assert!(
        loops.len() >= 20,
        "the loop is not named once a pass: {ranges:x?}"
    );
    assert!(
        ranges.windows(2).all(|w| w[0].1 <= w[1].0),
        "an address named twice: {ranges:x?}"
    );
}

/// Every AMO in both widths on the A extension's corner cases (signed and unsigned order
/// across the sign bit, the W forms' use of the low word and sign extension of the old
/// value, rd = x0, rd the same as rs2), in a loop that runs translated, where the blocks
/// perform them inline (`x64::emit_amo`): the old values (stored to DATA) and the memory
/// after each are the spec's and the interpreter's.
#[test]
fn amo_corner_cases() {
    const MIN: u64 = i64::MIN as u64;
    // (memory, register)
    let cases: [(u64, u64); 8] = [
        (5, 3),
        (MIN, u64::MAX),
        (u64::MAX, 1),
        (0x0000_0000_8000_0000, 0x7fff_ffff),
        (0xdead_beef_ffff_fffe, 0x1234_5678_0000_0002),
        (0x7fff_ffff_ffff_ffff, MIN),
        (0, 0xffff_ffff_8000_0000),
        (0x1_0000_0001, 0x1_0000_0001),
    ];
    let ops = [
        AMO_SWAP, AMO_ADD, AMO_XOR, AMO_AND, AMO_OR, AMO_MIN, AMO_MAX, AMO_MINU, AMO_MAXU,
    ];
    // x20: the AMOs' doubleword, at DATA + 0x1800. Each case (memory in x10, register in
    // x11) and op: the memory operand stored at x20, the AMO, then its old value (x14) and
    // the memory after it stored. Three passes: the later ones run the translated blocks.
    let cell = DATA + 0x1800;
    let per_case = |k: usize| {
        let mut body = Vec::new();
        for (n, &op) in ops.iter().enumerate() {
            for width in [2, 3] {
                body.push(sd(10, 20, 0));
                // rd = x0 for one op in each case, rd = rs2 for another (then x11 is read
                // again from the case).
                match (n + k) % ops.len() {
                    0 => body.extend([amo(op, width, 0, 20, 11), addi(14, 0, -1)]),
                    1 => body.extend([
                        amo(op, width, 11, 20, 11),
                        addi(14, 11, 0),
                        ld(11, 9, 16 * k as i32 + 8),
                    ]),
                    _ => body.push(amo(op, width, 14, 20, 11)),
                }
                body.extend([
                    ld(16, 20, 0),
                    sd(14, 12, 0),
                    sd(16, 12, 8),
                    addi(12, 12, 16),
                ]);
            }
        }
        body
    };
    let p = corner_case_loop("AMOs", &cases, 3, per_case, |vm| vm.set_x(20, cell));
    assert!(p.jit.hart.translated_blocks() > 0);
    // (old value, memory after) of case k, op n, width w (0: W, 1: D).
    let got = |k: usize, n: usize, w: usize| {
        let at = DATA + 16 * (2 * (ops.len() * k + n) + w) as u64;
        (p.jit.r64(at), p.jit.r64(at + 8))
    };
    let sx = |v: u64| v as u32 as i32 as i64 as u64;
    let hi = |mem: u64| mem & !0xffff_ffff;
    // Case 3 (memory 0x8000_0000, register 0x7fff_ffff), op by op: MIN (5) and MAX (6)
    // order the words as signed (0x8000_0000 is negative), MINU and MAXU as unsigned; the
    // D forms see a positive doubleword.
    let (m, r) = cases[3];
    assert_eq!(got(3, 5, 0), (sx(m), m), "AMOMIN.W");
    // (rd = x0 for MAX in this case: the -1 put there.)
    assert_eq!(got(3, 6, 0), (u64::MAX, r), "AMOMAX.W");
    assert_eq!(got(3, 7, 0), (sx(m), r), "AMOMINU.W");
    assert_eq!(got(3, 8, 0), (sx(m), m), "AMOMAXU.W");
    assert_eq!(got(3, 5, 1), (m, r), "AMOMIN.D");
    assert_eq!(got(3, 8, 1), (m, m), "AMOMAXU.D");
    // Case 1 (memory i64::MIN, register -1): signed MIN keeps the memory, unsigned MIN
    // takes it too (i64::MIN < u64::MAX), MAXU takes the register.
    let (m, r) = cases[1];
    assert_eq!(got(1, 5, 1), (m, m), "AMOMIN.D");
    assert_eq!(got(1, 6, 1), (m, r), "AMOMAX.D");
    assert_eq!(got(1, 7, 1), (m, m), "AMOMINU.D");
    assert_eq!(got(1, 8, 1), (u64::MAX, r), "AMOMAXU.D (rd = x0)");
    // Case 4: the W forms change the low word only and return it sign-extended; ADD.W
    // wraps within the word.
    let (m, r) = cases[4];
    assert_eq!(got(4, 1, 0), (sx(m), hi(m)), "AMOADD.W");
    assert_eq!(got(4, 1, 1), (m, m.wrapping_add(r)), "AMOADD.D");
    assert_eq!(
        got(4, 0, 0),
        (sx(m), hi(m) | (r & 0xffff_ffff)),
        "AMOSWAP.W"
    );
    assert_eq!(got(4, 2, 1), (m, m ^ r), "AMOXOR.D");
    assert_eq!(got(4, 3, 1), (m, m & r), "AMOAND.D");
    assert_eq!(got(4, 4, 0), (sx(m), m | (r & 0xffff_ffff)), "AMOOR.W");
    // rd = x0 ((n + k) % 9 == 0) writes nothing: the stored old value is the -1 put there.
    assert_eq!(got(0, 0, 1), (u64::MAX, cases[0].1), "AMOSWAP.D to x0");
    assert_eq!(p.jit.hart.instret(), p.int.hart.instret());
}

/// LR and SC on the A extension's cases ("Load-Reserved/Store-Conditional Instructions"),
/// in a loop that runs translated, where the blocks perform them inline
/// (`x64::emit_lr`, `x64::emit_sc`), in both widths, on operands across the sign bit:
/// - an SC after an LR of the same address stores and writes 0; LR.W sign-extends the word,
///   and SC.W changes the low word only;
/// - an SC with no reservation (the one before took it) fails and writes 1, storing nothing;
/// - an SC to another address than the LR's fails;
/// - an SC after a store of another value to the reserved word fails (the memory no longer
///   holds what LR read: the compare-and-swap of `Hart::exec_atomic`), and one after a store
///   of the same value succeeds (documented there);
/// - rd = x0 for LR, rd = rs2 for SC.
///
/// The results (stored to DATA) are the spec's and the interpreter's.
#[test]
fn lr_sc_corner_cases() {
    const MIN: u64 = i64::MIN as u64;
    // (memory, register)
    // (The last: an SC with a reservation left over would find the value LR read.)
    let cases: [(u64, u64); 7] = [
        (5, 3),
        (MIN, u64::MAX),
        (0x0000_0000_8000_0000, 0x7fff_ffff),
        (0xdead_beef_ffff_fffe, 0x1234_5678_0000_0002),
        (u64::MAX, 0),
        (0x1_0000_0001, 0xffff_ffff_8000_0000),
        (7, 7),
    ];
    // x20: the reserved doubleword (DATA + 0x1800), x21 another (DATA + 0x1808). Each
    // sequence ends by storing x14 (LR's value), x16 (SC's result) and x17 (the memory SC
    // aimed at, after it) through x12.
    let (cell, other) = (DATA + 0x1800, DATA + 0x1808);
    const SEQUENCES: usize = 5;
    let per_case = |k: usize| {
        let mut body = Vec::new();
        for width in [2, 3] {
            let (lr, sc) = if width == 2 {
                (
                    lr_w as fn(u32, u32) -> u32,
                    sc_w as fn(u32, u32, u32) -> u32,
                )
            } else {
                (
                    lr_d as fn(u32, u32) -> u32,
                    sc_d as fn(u32, u32, u32) -> u32,
                )
            };
            let record = |body: &mut Vec<u32>, at: u32| {
                body.extend([
                    ld(17, at, 0),
                    sd(14, 12, 0),
                    sd(16, 12, 8),
                    sd(17, 12, 16),
                    addi(12, 12, 24),
                ])
            };
            // 0: LR then SC: stores. In odd cases LR's rd is x0 (x14 keeps the -1 put there).
            body.push(sd(10, 20, 0));
            if k % 2 == 1 {
                body.extend([addi(14, 0, -1), lr(0, 20)]);
            } else {
                body.push(lr(14, 20));
            }
            body.push(sc(16, 20, 11));
            record(&mut body, 20);
            // 1: SC again: the reservation is gone.
            body.extend([addi(14, 0, 0), sc(16, 20, 10)]);
            record(&mut body, 20);
            // 2: LR of one address, SC to another.
            body.extend([sd(10, 20, 0), sd(10, 21, 0), lr(14, 20), sc(16, 21, 11)]);
            record(&mut body, 21);
            // 3: a store of another value between them.
            body.extend([
                sd(10, 20, 0),
                lr(14, 20),
                addi(18, 10, 1),
                sd(18, 20, 0),
                sc(16, 20, 11),
            ]);
            record(&mut body, 20);
            // 4: a store of the same value between them; SC's rd is rs2 (x11 is loaded
            // again from the case after it).
            body.extend([
                sd(10, 20, 0),
                lr(14, 20),
                sd(10, 20, 0),
                sc(11, 20, 11),
                addi(16, 11, 0),
                ld(11, 9, 16 * k as i32 + 8),
            ]);
            record(&mut body, 20);
        }
        body
    };
    let p = corner_case_loop("LR/SC", &cases, 3, per_case, |vm| {
        vm.set_x(20, cell);
        vm.set_x(21, other);
    });
    assert!(p.jit.hart.translated_blocks() > 0);
    // (LR's value, SC's result, memory after) of case k, width w (0: W, 1: D), sequence s.
    let got = |k: usize, w: usize, s: usize| {
        let at = DATA + 24 * ((2 * k + w) * SEQUENCES + s) as u64;
        (p.jit.r64(at), p.jit.r64(at + 8), p.jit.r64(at + 16))
    };
    let sx = |v: u64| v as u32 as i32 as i64 as u64;
    let low = |mem: u64, r: u64| (mem & !0xffff_ffff) | (r & 0xffff_ffff);
    for (k, &(m, r)) in cases.iter().enumerate() {
        let lr_w = if k % 2 == 1 { u64::MAX } else { sx(m) };
        let lr_d = if k % 2 == 1 { u64::MAX } else { m };
        assert_eq!(got(k, 0, 0), (lr_w, 0, low(m, r)), "case {k}: LR.W, SC.W");
        assert_eq!(got(k, 1, 0), (lr_d, 0, r), "case {k}: LR.D, SC.D");
        assert_eq!(got(k, 0, 1), (0, 1, low(m, r)), "case {k}: SC.W alone");
        assert_eq!(got(k, 1, 1), (0, 1, r), "case {k}: SC.D alone");
        assert_eq!(got(k, 0, 2), (sx(m), 1, m), "case {k}: SC.W elsewhere");
        assert_eq!(got(k, 1, 2), (m, 1, m), "case {k}: SC.D elsewhere");
        let bumped = m.wrapping_add(1);
        assert_eq!(
            got(k, 0, 3),
            (sx(m), 1, bumped),
            "case {k}: SC.W after a store"
        );
        assert_eq!(got(k, 1, 3), (m, 1, bumped), "case {k}: SC.D after a store");
        assert_eq!(
            got(k, 0, 4),
            (sx(m), 0, low(m, r)),
            "case {k}: SC.W, same value"
        );
        assert_eq!(got(k, 1, 4), (m, 0, r), "case {k}: SC.D, same value");
    }
    assert_eq!(p.jit.hart.instret(), p.int.hart.instret());
}

/// A misaligned AMO, LR or SC in a loop that runs translated raises the address-misaligned
/// exception (the A extension: they are never emulated; store/AMO for AMOs and SC, load for
/// LR), with the address, as the interpreter does; the aligned AMO before it in the loop
/// was performed.
#[test]
fn a_misaligned_atomic_in_a_translated_loop() {
    type Insn = fn(u32) -> u32;
    let insns: [(&str, Insn, u64); 3] = [
        (
            "AMOADD",
            |w| amo(AMO_ADD, w, 14, 20, 11),
            cause::STORE_MISALIGNED,
        ),
        ("LR", |w| amo(AMO_LR, w, 14, 20, 0), cause::LOAD_MISALIGNED),
        (
            "SC",
            |w| amo(AMO_SC, w, 14, 20, 11),
            cause::STORE_MISALIGNED,
        ),
    ];
    for (name, insn, want) in insns {
        for (width, step) in [(3, 4), (2, 2)] {
            let ctx = format!("misaligned {name}, width {width}");
            // x20 starts aligned and moves by `step` bytes an iteration: the second access is
            // misaligned (by 4 for the D form, by 2 for the W form).
            let body = [
                addi(13, 0, 10),
                insn(width),
                addi(20, 20, step),
                addi(13, 13, -1),
                bne(13, 0, -12),
            ];
            let mut p = Pair::new();
            p.both(|vm| {
                vm.set_x(20, DATA);
                vm.set_x(11, 1);
                vm.code(&body);
            });
            p.run_to_wfi(&ctx);
            p.assert_same_ram(&ctx);
            let t = p.jit.mtrap();
            assert_eq!(t.cause, want, "{ctx}");
            let at = if width == 3 { DATA + 4 } else { DATA + 2 };
            assert_eq!(t.tval, at, "{ctx}");
            // The aligned AMO added 1; the SC had no reservation.
            assert_eq!(p.jit.r64(DATA), (name == "AMOADD") as u64, "{ctx}");
        }
    }
}

/// Runs `body` at CODE on two harts over one RAM, translating, on two threads that start
/// together (so that their loops overlap), each to WFI; `init(k, hart)` sets hart k up.
/// Returns the RAM.
fn on_two_harts(body: &[u32], init: impl Fn(usize, &mut vcpu::Hart)) -> vm_memory::GuestMemoryMmap {
    let vm = machine(true, &[]);
    vm.code(body);
    let second = vcpu::Hart::new(
        HartConfig {
            jit: true,
            ..HartConfig::default()
        },
        vm.mem.clone(),
    )
    .unwrap();
    let mut harts = [vm.hart, second];
    for (k, h) in harts.iter_mut().enumerate() {
        h.set_pc(CODE);
        init(k, h);
    }
    let start = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        for h in harts.iter_mut() {
            let start = &start;
            s.spawn(move || {
                start.wait();
                let exit = h.run(100_000_000);
                assert_eq!(exit, VcpuExit::Wfi, "pc {:#x}", h.pc());
            });
        }
    });
    for h in &harts {
        assert!(h.translated_blocks() > 0);
    }
    vm.mem
}

/// AMOs of translated blocks are atomic across harts on different threads (the inline
/// AMOs are the host's locked read-modify-writes): two harts over one RAM each run a
/// translated loop of AMOADD.D, AMOADD.W, AMOOR.D and AMOMAXU.W on shared words, 200 000
/// iterations; the sum is exact, the OR has every bit of both, the maximum is the largest.
#[test]
fn amos_of_translated_blocks_are_atomic_across_harts() {
    const N: i32 = 200_000;
    // x10: the shared words (DATA); x11: 1; x17: this hart's bit; x18: this hart's values
    // for AMOMAXU.W (counting up from its base).
    let body = [
        // x12 = N: LUI's rounded upper part, ADDI's sign-extended low 12 bits.
        lui(12, (N as u32 + 0x800) >> 12),
        addi(12, 12, (N << 20) >> 20),
        addi(15, 10, 8),
        addi(16, 10, 16),
        addi(19, 10, 24),
        // loop:
        amo(AMO_ADD, 3, 0, 10, 11),
        amo(AMO_ADD, 2, 0, 15, 11),
        amo(AMO_OR, 3, 0, 16, 17),
        amo(AMO_MAXU, 2, 0, 19, 18),
        addi(18, 18, 1),
        addi(12, 12, -1),
        bne(12, 0, -24),
    ];
    let mem = on_two_harts(&body, |k, h| {
        h.set_xreg(10, DATA);
        h.set_xreg(11, 1);
        h.set_xreg(17, 1 << (8 * k));
        h.set_xreg(18, 1000 * k as u64);
    });
    let r64 = |at: u64| -> u64 { mem.read_obj(GuestAddress(at)).unwrap() };
    assert_eq!(r64(DATA), 2 * N as u64, "AMOADD.D");
    assert_eq!(r64(DATA + 8) as u32, 2 * N as u32, "AMOADD.W");
    assert_eq!(r64(DATA + 16), 0x101, "AMOOR.D");
    assert_eq!(r64(DATA + 24) as u32, 1000 + N as u32 - 1, "AMOMAXU.W");
}

/// LR/SC of translated blocks are atomic across harts on different threads (the inline SC
/// is the host's LOCK CMPXCHG of the value LR read): two harts over one RAM each add 1 to a
/// shared doubleword with an LR.D/SC.D loop and to a shared word with LR.W/SC.W, retrying
/// when SC fails, a million times; both sums are exact, and the upper half of the word's
/// doubleword is untouched.
#[test]
fn lr_sc_of_translated_blocks_are_atomic_across_harts() {
    const N: i32 = 1_000_000;
    // x10: the shared doubleword (DATA), x15: the shared word (DATA + 8).
    let body = [
        lui(12, (N as u32 + 0x800) >> 12),
        addi(12, 12, (N << 20) >> 20),
        addi(15, 10, 8),
        // The upper half of the word's doubleword: all ones.
        addi(17, 0, -1),
        sw(17, 15, 4),
        // loop: (SC ends a block; each BNE retries from its LR)
        lr_d(14, 10),
        addi(14, 14, 1),
        sc_d(16, 10, 14),
        bne(16, 0, -12),
        lr_w(14, 15),
        addi(14, 14, 1),
        sc_w(16, 15, 14),
        bne(16, 0, -12),
        addi(12, 12, -1),
        bne(12, 0, -36),
    ];
    let mem = on_two_harts(&body, |_, h| h.set_xreg(10, DATA));
    let r64 = |at: u64| -> u64 { mem.read_obj(GuestAddress(at)).unwrap() };
    assert_eq!(r64(DATA), 2 * N as u64, "LR.D/SC.D");
    assert_eq!(r64(DATA + 8), !0xffff_ffff | (2 * N as u64), "LR.W/SC.W");
}
