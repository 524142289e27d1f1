// Binary literals are grouped by instruction field; `8 * 1` spells out PTE index 1.
#![allow(clippy::unusual_byte_groupings, clippy::identity_op)]
//! Sv39 translation tests (privileged spec, "Supervisor-Level ISA": Sv39 and the virtual
//! address translation process). Page tables are written into guest RAM by the test.

mod common;

use common::*;
use vcpu::trap::cause;
use vcpu::{HartConfig, PrivilegeMode};

/// Virtual pages VA_BASE + i * 4096 are described by PT_L0[i].
const VA_BASE: u64 = 0x4000_0000;
const SCODE: u64 = CODE + 0x100;
const STRAP: u64 = CODE + 0x400;
const SATP: u64 = (8 << 60) | (PT_ROOT >> 12);

fn pg(i: u64) -> u64 {
    RAM_BASE + 0x3_0000 + i * 0x1000
}
fn va(i: u64) -> u64 {
    VA_BASE + i * 0x1000
}
fn marker(i: u64) -> u64 {
    0x1111_0000_0000_0000 | (i << 32) | 0xabcd
}
fn l0(i: u64) -> u64 {
    PT_L0 + 8 * i
}

/// Leaf PTEs of PT_L0 (virtual page index, flags).
const LEAVES: &[(u64, u64)] = &[
    (0, V | R | W),                 // A = D = 0: hardware sets them
    (1, V | R | W),                 // A = D = 0
    (3, V | X | A),                 // execute-only
    (4, V | R | W | U | A | D),     // user page
    (5, V | R | A),                 // read-only
    (6, V | W | A | D),             // W without R: reserved encoding
    (7, V | R | W | X | U | A | D), // user code
    (9, V | R | W | X | A | D),     // supervisor code
];

/// A hart with the Sv39 page tables in place. Physical memory is identity-mapped by a
/// 1 GiB superpage at 0x8000_0000 (supervisor, RWX) so S-mode code and data can run from it.
fn setup() -> Vm {
    setup_with(HartConfig::default())
}

/// [`setup`] for a hart of `config`.
fn setup_with(config: HartConfig) -> Vm {
    let vm = Vm::with_config(config);
    vm.w64(PT_ROOT + 8 * 2, pte(RAM_BASE, V | R | W | X | A | D));
    vm.w64(PT_ROOT + 8 * 1, pte(PT_L1, V));
    vm.w64(PT_L1, pte(PT_L0, V));
    // A misaligned gigapage (PPN[1:0] != 0) at 0xc000_0000.
    vm.w64(PT_ROOT + 8 * 3, pte(RAM_BASE + 0x1000, V | R | A));
    for &(i, flags) in LEAVES {
        vm.w64(l0(i), pte(pg(i), flags));
    }
    // A non-leaf PTE at the last level.
    vm.w64(l0(8), pte(pg(0), V));
    for i in 0..10 {
        vm.w64(pg(i), marker(i));
        vm.w64(pg(i) + 8, marker(i) + 1);
    }
    vm
}

/// How an S-mode (or U-mode) program ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Clean,
    MTrap(Trap),
    STrap(Trap),
}

/// Set satp and `mstatus_set`, enter `mode` at `entry`, run to WFI. `body` is placed at
/// `entry`'s physical address `entry_pa`, followed by WFI.
fn run_in(
    vm: &mut Vm,
    mode: PrivilegeMode,
    mstatus_set: u64,
    entry: u64,
    entry_pa: u64,
    body: &[u32],
) -> End {
    vm.set_x(20, SATP);
    vm.set_x(21, mstatus_set);
    vm.set_x(22, STRAP);
    let mut code = vec![csrw(SATP_CSR, 20), csrrs(0, MSTATUS, 21), csrw(STVEC, 22)];
    code.extend(vm.enter_mode(mode, entry));
    vm.code(&code);
    let end = vm.code_at(entry_pa, body);
    vm.put32(STRAP, &[wfi()]);
    vm.run_to_wfi();
    let pc = vm.hart.pc();
    if pc == TRAP + 4 {
        assert_eq!(vm.hart.privilege(), PrivilegeMode::Machine);
        End::MTrap(vm.mtrap())
    } else if pc == STRAP + 4 {
        assert_eq!(vm.hart.privilege(), PrivilegeMode::Supervisor);
        End::STrap(vm.strap())
    } else {
        assert_eq!(pc, end - entry_pa + entry + 4, "unexpected stop");
        assert_eq!(vm.hart.privilege(), mode);
        End::Clean
    }
}

const SATP_CSR: u32 = 0x180;

fn run_s(vm: &mut Vm, mstatus_set: u64, body: &[u32]) -> End {
    run_in(
        vm,
        PrivilegeMode::Supervisor,
        mstatus_set,
        SCODE,
        SCODE,
        body,
    )
}

fn mtrap(c: u64, epc: u64, tval: u64) -> End {
    End::MTrap(Trap {
        cause: c,
        epc,
        tval,
    })
}

#[test]
fn satp_reads_back() {
    let mut vm = setup();
    assert_eq!(run_s(&mut vm, 0, &[csrr(10, SATP_CSR)]), End::Clean);
    assert_eq!(vm.x(10), SATP);
    assert_eq!(vm.csr(SATP_CSR), SATP);
}

#[test]
fn load_through_mapping() {
    let mut vm = setup();
    vm.set_x(11, va(0) + 8);
    vm.set_x(13, pg(0));
    vm.set_x(14, 0xc0de);
    vm.set_x(15, va(9) + 0x10);
    let end = run_s(
        &mut vm,
        0,
        &[ld(10, 11, 0), ld(12, 13, 8), sd(14, 15, 0), lw(16, 15, 0)],
    );
    assert_eq!(end, End::Clean);
    assert_eq!(vm.x(10), marker(0) + 1);
    assert_eq!(vm.x(12), marker(0) + 1, "identity gigapage");
    assert_eq!(vm.r64(pg(9) + 0x10), 0xc0de);
    assert_eq!(vm.x(16), 0xc0de);
}

#[test]
fn hardware_sets_accessed_and_dirty() {
    let mut vm = setup();
    vm.set_x(11, va(0));
    vm.set_x(12, va(1) + 0x18);
    vm.set_x(13, 0x5555);
    let end = run_s(&mut vm, 0, &[ld(10, 11, 0), sd(13, 12, 0)]);
    assert_eq!(end, End::Clean);
    assert_eq!(vm.x(10), marker(0));
    assert_eq!(vm.r64(pg(1) + 0x18), 0x5555);
    assert_eq!(vm.r64(l0(0)), pte(pg(0), V | R | W | A), "load sets A only");
    assert_eq!(
        vm.r64(l0(1)),
        pte(pg(1), V | R | W | A | D),
        "store sets A and D"
    );
}

#[test]
fn unmapped_page_faults() {
    // Load, store and fetch from an invalid PTE, handled in M-mode.
    let mut vm = setup();
    vm.set_x(11, va(2));
    vm.set_x(10, 0x77);
    assert_eq!(
        run_s(&mut vm, 0, &[nop(), ld(10, 11, 0x10)]),
        mtrap(cause::LOAD_PAGE_FAULT, SCODE + 4, va(2) + 0x10)
    );
    assert_eq!(vm.x(10), 0x77);

    let mut vm = setup();
    vm.set_x(11, va(2));
    assert_eq!(
        run_s(&mut vm, 0, &[sw(0, 11, 4)]),
        mtrap(cause::STORE_PAGE_FAULT, SCODE, va(2) + 4)
    );

    let mut vm = setup();
    vm.set_x(11, va(2) + 0x20);
    assert_eq!(
        run_s(&mut vm, 0, &[jalr(1, 11, 0)]),
        mtrap(cause::INSN_PAGE_FAULT, va(2) + 0x20, va(2) + 0x20)
    );
    assert_eq!(vm.x(1), SCODE + 4);
}

#[test]
fn delegated_page_fault_sets_stval() {
    let mut vm = setup();
    vm.set_x(11, va(2));
    vm.set_x(
        19,
        (1 << cause::LOAD_PAGE_FAULT) | (1 << cause::STORE_PAGE_FAULT),
    );
    // medeleg is written before entering S (the setup code runs in M).
    let end = {
        vm.set_x(20, SATP);
        vm.set_x(22, STRAP);
        let mut code = vec![csrw(MEDELEG, 19), csrw(SATP_CSR, 20), csrw(STVEC, 22)];
        code.extend(vm.enter_mode(PrivilegeMode::Supervisor, SCODE));
        vm.code(&code);
        vm.code_at(SCODE, &[nop(), nop(), ld(10, 11, 0x123)]);
        vm.put32(STRAP, &[wfi()]);
        vm.run_to_wfi();
        vm.hart.pc()
    };
    assert_eq!(end, STRAP + 4);
    assert_eq!(vm.hart.privilege(), PrivilegeMode::Supervisor);
    assert_eq!(
        vm.strap(),
        Trap {
            cause: cause::LOAD_PAGE_FAULT,
            epc: SCODE + 8,
            tval: va(2) + 0x123
        }
    );
    assert_eq!(vm.csr(MCAUSE), 0);
}

#[test]
fn mxr_makes_execute_only_pages_readable() {
    let mut vm = setup();
    vm.set_x(11, va(3));
    assert_eq!(
        run_s(&mut vm, 0, &[ld(10, 11, 8)]),
        mtrap(cause::LOAD_PAGE_FAULT, SCODE, va(3) + 8)
    );

    let mut vm = setup();
    vm.set_x(11, va(3));
    assert_eq!(run_s(&mut vm, MS_MXR, &[ld(10, 11, 8)]), End::Clean);
    assert_eq!(vm.x(10), marker(3) + 1);

    // MXR does not grant write permission.
    let mut vm = setup();
    vm.set_x(11, va(3));
    assert_eq!(
        run_s(&mut vm, MS_MXR, &[sd(0, 11, 8)]),
        mtrap(cause::STORE_PAGE_FAULT, SCODE, va(3) + 8)
    );
}

#[test]
fn sum_controls_supervisor_access_to_user_pages() {
    let mut vm = setup();
    vm.set_x(11, va(4));
    assert_eq!(
        run_s(&mut vm, 0, &[ld(10, 11, 0)]),
        mtrap(cause::LOAD_PAGE_FAULT, SCODE, va(4))
    );

    let mut vm = setup();
    vm.set_x(11, va(4));
    vm.set_x(12, 0x9999);
    assert_eq!(
        run_s(&mut vm, MS_SUM, &[ld(10, 11, 0), sd(12, 11, 8)]),
        End::Clean
    );
    assert_eq!(vm.x(10), marker(4));
    assert_eq!(vm.r64(pg(4) + 8), 0x9999);

    // S-mode never executes from a user page, SUM or not.
    let mut vm = setup();
    vm.set_x(11, va(7));
    assert_eq!(
        run_s(&mut vm, MS_SUM, &[jalr(0, 11, 0)]),
        mtrap(cause::INSN_PAGE_FAULT, va(7), va(7))
    );
}

#[test]
fn permission_and_format_faults() {
    let cases: &[(u64, u32, u64)] = &[
        (va(5), sd(0, 11, 0), cause::STORE_PAGE_FAULT), // read-only page
        (va(5), amo(AMO_ADD, 3, 10, 11, 0), cause::STORE_PAGE_FAULT), // AMO needs W
        (va(6), ld(10, 11, 0), cause::LOAD_PAGE_FAULT), // W without R is reserved
        (va(6), sd(0, 11, 0), cause::STORE_PAGE_FAULT),
        (va(8), ld(10, 11, 0), cause::LOAD_PAGE_FAULT), // non-leaf at level 0
        (0xc000_0000, ld(10, 11, 0), cause::LOAD_PAGE_FAULT), // misaligned superpage
        (0x40_0000_0000, ld(10, 11, 0), cause::LOAD_PAGE_FAULT), // bits 63:39 != bit 38
        (0xffff_ff80_0000_0000, ld(10, 11, 0), cause::LOAD_PAGE_FAULT), // bit 38 = 0, bits 63:39 = 1
    ];
    for &(addr, insn, want) in cases {
        let mut vm = setup();
        vm.set_x(11, addr);
        assert_eq!(
            run_s(&mut vm, 0, &[insn]),
            mtrap(want, SCODE, addr),
            "{insn:#010x} at {addr:#x}"
        );
    }
    // The read-only page is still readable, and a fault leaves its PTE without D.
    let mut vm = setup();
    vm.set_x(11, va(5));
    assert_eq!(run_s(&mut vm, 0, &[ld(10, 11, 0)]), End::Clean);
    assert_eq!(vm.x(10), marker(5));
    assert_eq!(vm.r64(l0(5)), pte(pg(5), V | R | A));
}

#[test]
fn user_mode_translation() {
    // U-mode code in the user page VA 7 reads its user data page and faults on a supervisor
    // page.
    let mut vm = setup();
    vm.set_x(11, va(4));
    vm.set_x(12, va(0));
    let end = run_in(
        &mut vm,
        PrivilegeMode::User,
        0,
        va(7) + 0x100,
        pg(7) + 0x100,
        &[ld(10, 11, 8), ld(13, 12, 0)],
    );
    assert_eq!(end, mtrap(cause::LOAD_PAGE_FAULT, va(7) + 0x104, va(0)));
    assert_eq!(vm.x(10), marker(4) + 1);
    assert_eq!(vm.csr(MSTATUS) & MS_MPP, 0);

    // SUM has no effect on U-mode.
    let mut vm = setup();
    vm.set_x(12, va(0));
    let end = run_in(
        &mut vm,
        PrivilegeMode::User,
        MS_SUM,
        va(7) + 0x100,
        pg(7) + 0x100,
        &[ld(13, 12, 0)],
    );
    assert_eq!(end, mtrap(cause::LOAD_PAGE_FAULT, va(7) + 0x100, va(0)));

    // U-mode cannot fetch from a supervisor page.
    let mut vm = setup();
    let end = run_in(&mut vm, PrivilegeMode::User, 0, SCODE, SCODE, &[nop()]);
    assert_eq!(end, mtrap(cause::INSN_PAGE_FAULT, SCODE, SCODE));
}

#[test]
fn sfence_vma_makes_pte_changes_visible() {
    let mut vm = setup();
    vm.set_x(11, va(0));
    vm.set_x(14, pte(pg(5), V | R | A));
    vm.set_x(15, l0(0)); // the PTE, through the identity gigapage
    let end = run_s(
        &mut vm,
        0,
        &[
            ld(10, 11, 0),
            sd(14, 15, 0),
            sfence_vma(0, 0),
            ld(12, 11, 0),
        ],
    );
    assert_eq!(end, End::Clean);
    assert_eq!(vm.x(10), marker(0));
    assert_eq!(vm.x(12), marker(5));
}

#[test]
fn mprv_translates_m_mode_data_accesses() {
    // M-mode with MPRV = 1 and MPP = S: loads and stores use S-mode translation; fetches don't.
    let mut vm = setup();
    vm.set_x(20, SATP);
    vm.set_x(21, MS_MPRV | (1 << 11));
    vm.set_x(11, va(0) + 8);
    vm.set_x(12, va(2));
    let t = vm.exec_trap(&[
        csrw(SATP_CSR, 20),
        csrrs(0, MSTATUS, 21),
        ld(10, 11, 0),
        ld(13, 12, 0),
    ]);
    assert_eq!(vm.x(10), marker(0) + 1);
    assert_eq!(
        t,
        Trap {
            cause: cause::LOAD_PAGE_FAULT,
            epc: CODE + 12,
            tval: va(2)
        }
    );
    assert_eq!(
        vm.csr(MSTATUS) & MS_MPRV,
        MS_MPRV,
        "a trap into M leaves MPRV alone"
    );
}

#[test]
fn fetch_crossing_into_unmapped_page() {
    // A 32-bit instruction whose second half lies in an unmapped page: xepc points at the
    // instruction, xtval at the faulting portion (the start of the next page).
    let mut vm = setup();
    let insn = addi(10, 0, 1);
    vm.put16(pg(9) + 0xffe, &[insn as u16]);
    vm.put16(pg(10), &[(insn >> 16) as u16]);
    vm.set_x(11, va(9) + 0xffe);
    assert_eq!(
        run_s(&mut vm, 0, &[jalr(0, 11, 0)]),
        mtrap(cause::INSN_PAGE_FAULT, va(9) + 0xffe, va(10))
    );
    assert_eq!(vm.x(10), 0);
}

#[test]
fn fetch_sets_accessed_bit() {
    let mut vm = setup();
    vm.w64(l0(11), pte(pg(11), V | R | X));
    vm.put32(pg(11) + 0x40, &[addi(12, 0, 5), jalr(0, 1, 0)]);
    vm.set_x(11, va(11) + 0x40);
    assert_eq!(run_s(&mut vm, 0, &[jalr(1, 11, 0)]), End::Clean);
    assert_eq!(vm.x(12), 5);
    assert_eq!(vm.r64(l0(11)), pte(pg(11), V | R | X | A));
}

#[test]
fn page_table_outside_ram_is_an_access_fault() {
    // root[4] points at a "page table" at physical 0x1000, where there is no memory.
    let addr = 4u64 << 30;
    let cases: &[(u32, u64, u64)] = &[
        (ld(10, 11, 0), cause::LOAD_ACCESS, SCODE),
        (sd(0, 11, 0), cause::STORE_ACCESS, SCODE),
        (jalr(0, 11, 0), cause::INSN_ACCESS, addr),
    ];
    for &(insn, want, epc) in cases {
        let mut vm = setup();
        vm.w64(PT_ROOT + 8 * 4, pte(0x1000, V));
        vm.set_x(11, addr);
        assert_eq!(
            run_s(&mut vm, 0, &[insn]),
            mtrap(want, epc, addr),
            "{insn:#010x}"
        );
    }
}

#[test]
fn amo_sets_accessed_and_dirty() {
    let mut vm = setup();
    vm.set_x(11, va(1) + 0x20);
    vm.set_x(12, 3);
    vm.w64(pg(1) + 0x20, 10);
    assert_eq!(
        run_s(&mut vm, 0, &[amo(AMO_ADD, 3, 10, 11, 12)]),
        End::Clean
    );
    assert_eq!(vm.x(10), 10);
    assert_eq!(vm.r64(pg(1) + 0x20), 13);
    assert_eq!(vm.r64(l0(1)), pte(pg(1), V | R | W | A | D));
}

#[test]
fn cached_translation_is_not_reused_across_privilege() {
    // S loads a supervisor page, then SRETs to U-mode, which loads the same page: U must fault
    // even though the translation was just used.
    let mut vm = setup();
    let u = va(7) + 0x100;
    vm.set_x(12, va(0));
    vm.set_x(14, u);
    vm.put32(pg(7) + 0x100, &[ld(13, 12, 0), wfi()]);
    let end = run_s(&mut vm, 0, &[ld(10, 12, 0), csrw(SEPC, 14), sret()]);
    assert_eq!(end, mtrap(cause::LOAD_PAGE_FAULT, u, va(0)));
    assert_eq!(vm.x(10), marker(0));
    assert_eq!(vm.x(13), 0);
}

#[test]
fn clearing_sum_takes_effect_immediately() {
    let mut vm = setup();
    vm.set_x(11, va(4));
    vm.set_x(12, MS_SUM);
    let end = run_s(
        &mut vm,
        MS_SUM,
        &[ld(10, 11, 0), csrrc(0, SSTATUS, 12), ld(13, 11, 8)],
    );
    assert_eq!(end, mtrap(cause::LOAD_PAGE_FAULT, SCODE + 8, va(4) + 8));
    assert_eq!(vm.x(10), marker(4));
}

#[test]
fn setting_mxr_takes_effect_immediately() {
    let mut vm = setup();
    vm.set_x(11, va(3));
    vm.set_x(12, MS_MXR);
    // The first load faults into M, which would end the run, so set MXR before any access and
    // then clear it: the second load must fault.
    let end = run_s(
        &mut vm,
        0,
        &[
            csrrs(0, SSTATUS, 12),
            ld(10, 11, 0),
            csrrc(0, SSTATUS, 12),
            ld(13, 11, 8),
        ],
    );
    assert_eq!(end, mtrap(cause::LOAD_PAGE_FAULT, SCODE + 12, va(3) + 8));
    assert_eq!(vm.x(10), marker(3));
}

#[test]
fn sv48_four_level_walk() {
    // satp.MODE = 9: the walk starts one level higher and VAs are 48 bits.
    let vm0 = Vm::new();
    vm0.w64(PT_ROOT, pte(PT_L1, V)); // VPN[3] = 0
    vm0.w64(PT_L1 + 8 * 2, pte(RAM_BASE, V | R | W | X | A | D)); // identity 1 GiB
    vm0.w64(PT_ROOT + 8, pte(PT_L0, V)); // VPN[3] = 1
    vm0.w64(PT_L0, pte(RAM_BASE, V | R | A)); // 0x80_0000_0000 -> RAM_BASE, 1 GiB
    vm0.w64(DATA, 0x4848_4848);
    let mut vm = vm0;
    let high = 0x80_0000_0000u64 + (DATA - RAM_BASE);
    vm.set_x(20, (9u64 << 60) | (PT_ROOT >> 12));
    vm.set_x(11, high);
    vm.set_x(12, 0x8000_0000_0000); // bit 47 set, bits 63:48 clear: not canonical
    let mut code = vec![csrw(SATP_CSR, 20)];
    code.extend(vm.enter_mode(PrivilegeMode::Supervisor, SCODE));
    vm.code(&code);
    vm.code_at(SCODE, &[ld(10, 11, 0), ld(13, 12, 0)]);
    vm.run_to_wfi();
    assert_eq!(vm.x(10), 0x4848_4848);
    assert_eq!(
        vm.mtrap(),
        Trap {
            cause: cause::LOAD_PAGE_FAULT,
            epc: SCODE + 4,
            tval: 0x8000_0000_0000
        }
    );
    assert_eq!(vm.csr(SATP_CSR) >> 60, 9);
}

/// Virtual page 12 as supervisor code in frame 12, with x14 the PTE that maps it to frame 13
/// instead and x15 the address of its PTE: `sd x14, 0(x15)` remaps it.
fn remappable_code_page(vm: &mut Vm) {
    vm.w64(l0(12), pte(pg(12), V | R | X | A));
    vm.set_x(14, pte(pg(13), V | R | X | A));
    vm.set_x(15, l0(12));
}

#[test]
fn a_pages_last_halfword_is_fetched_through_its_cached_translation() {
    // The instruction in the last halfword of a page comes through the TLB like the rest
    // of the page (it was walked at every execution): after the page's PTE is changed
    // without SFENCE.VMA, the whole page still runs from the cached translation, both
    // halfwords of the same old page (either translation is allowed until the fence, but
    // not a mix of the two); after the fence, the new one. The interpreter runs the page's
    // end (a translated block would keep its own copy of the instructions).
    let mut vm = setup_with(HartConfig {
        jit: false,
        ..HartConfig::default()
    });
    remappable_code_page(&mut vm);
    // Old page: a0 = 1, return with ra kept. New page: a0 = 2, return through c.jalr,
    // which leaves ra at the end of the page.
    vm.put16(pg(12) + 0xffc, &[c_li(10, 1), c_jr(1)]);
    vm.put16(pg(13) + 0xffc, &[c_li(10, 2), c_jalr(1)]);
    vm.set_x(11, va(12) + 0xffc);
    let end = run_s(
        &mut vm,
        0,
        &[
            jalr(1, 11, 0),
            sd(14, 15, 0),
            addi(10, 0, 0),
            jalr(1, 11, 0),
            add(16, 1, 0),
            add(17, 10, 0),
            sfence_vma(0, 0),
            jalr(1, 11, 0),
        ],
    );
    assert_eq!(end, End::Clean);
    assert_eq!((vm.x(17), vm.x(16)), (1, SCODE + 16), "before the fence");
    assert_eq!((vm.x(10), vm.x(1)), (2, va(12) + 0x1000), "after the fence");
}

/// A loop calling the function at x11 three times through a JALR (x7 counts; the JALR's
/// block is translated and its target cached after the second call), then `then`.
fn call_x11_three_times(then: &[u32]) -> Vec<u32> {
    let mut code = vec![addi(7, 0, 3), jalr(1, 11, 0), addi(7, 7, -1), bne(7, 0, -8)];
    code.extend_from_slice(then);
    code
}

#[test]
fn a_jalr_after_a_fence_of_its_target_page_reaches_the_new_translation() {
    // Translated code keeps the blocks its JALRs reached (the jump cache): a fence of the
    // target's page alone must make the next JALR translate it again. A function at va 12
    // (a0 = 1) is called three times through a JALR in a loop; its PTE is then pointed at
    // another page (a0 = 2), SFENCE.VMA of that address, and a last call.
    let mut vm = setup();
    remappable_code_page(&mut vm);
    vm.put32(pg(12), &[addi(10, 0, 1), jalr(0, 1, 0)]);
    vm.put32(pg(13), &[addi(10, 0, 2), jalr(0, 1, 0)]);
    vm.set_x(11, va(12));
    let end = run_s(
        &mut vm,
        0,
        &call_x11_three_times(&[
            add(16, 10, 0),
            sd(14, 15, 0),
            sfence_vma(11, 0),
            jalr(1, 11, 0),
        ]),
    );
    assert_eq!(end, End::Clean);
    assert_eq!(vm.x(16), 1, "before the fence");
    assert_eq!(vm.x(10), 2, "after the fence");
    assert!(vm.hart.translated_blocks() > 0, "translated code ran");
}

#[test]
fn a_jalr_in_user_mode_does_not_reach_a_block_supervisor_code_reached() {
    // The jump cache holds only while the fetch context stays the same: S-mode calls a
    // function in a supervisor page three times through a JALR, then returns to U-mode,
    // whose JALR to the same function must take an instruction page fault (U-mode cannot
    // fetch from a supervisor page) instead of entering the block S-mode ran.
    let mut vm = setup();
    let f = SCODE + 0x200;
    let u = va(7) + 0x100;
    vm.put32(f, &[addi(10, 10, 1), jalr(0, 1, 0)]);
    // The interpreter runs the first instruction of a page not in the fetch TLB yet: the
    // JALR comes second, in a translated block.
    vm.put32(pg(7) + 0x100, &[nop(), jalr(1, 11, 0), wfi()]);
    vm.set_x(11, f);
    vm.set_x(14, u);
    let end = run_s(&mut vm, 0, &call_x11_three_times(&[csrw(SEPC, 14), sret()]));
    assert_eq!(end, mtrap(cause::INSN_PAGE_FAULT, f, f));
    assert_eq!(vm.x(10), 3, "S-mode's calls");
    assert!(vm.hart.translated_blocks() > 0, "translated code ran");
}
