//! x86-64 code generation for a planned block (see [`super::Plan`]).
//!
//! A block is a leaf function `extern "sysv64" fn(hart: *mut Hart) -> u64` that keeps every
//! guest register in the hart (`[rdi + x]`) and uses only caller-saved host registers. It
//! returns how many of its instructions completed and has stored the guest pc to continue at;
//! `u64::MAX` means its code bytes changed in guest RAM since translation (nothing ran).
//!
//! Loads and stores translate through the hart's software TLB inline. Whatever the inline
//! path cannot do (a TLB miss, a page-crossing access, a device) ends the block *before*
//! that instruction, so the interpreter executes it with the full rules (page walk, faults,
//! MMIO exits).

use dynasmrt::x64::X64Relocation;
use dynasmrt::{dynasm, DynasmApi, DynasmLabelApi, VecAssembler};

use super::{Layout, Plan};
use crate::decode::{Insn, Op, X0_SINK};

type Asm = VecAssembler<X64Relocation>;

/// Displacement of integer register `r` from the hart pointer.
fn xd(l: &Layout, r: u8) -> i32 {
    l.x + 8 * (r as i32 & 63)
}

/// rax = x[r]
fn get_rax(a: &mut Asm, l: &Layout, r: u8) {
    if r == 0 {
        dynasm!(a ; .arch x64 ; xor eax, eax);
    } else {
        let d = xd(l, r);
        dynasm!(a ; .arch x64 ; mov rax, QWORD [rdi + d]);
    }
}

/// rcx = x[r]
fn get_rcx(a: &mut Asm, l: &Layout, r: u8) {
    if r == 0 {
        dynasm!(a ; .arch x64 ; xor ecx, ecx);
    } else {
        let d = xd(l, r);
        dynasm!(a ; .arch x64 ; mov rcx, QWORD [rdi + d]);
    }
}

/// rsi = x[r]
fn get_rsi(a: &mut Asm, l: &Layout, r: u8) {
    if r == 0 {
        dynasm!(a ; .arch x64 ; xor esi, esi);
    } else {
        let d = xd(l, r);
        dynasm!(a ; .arch x64 ; mov rsi, QWORD [rdi + d]);
    }
}

/// x[rd] = rax
fn put_rax(a: &mut Asm, l: &Layout, rd: u8) {
    let d = xd(l, rd);
    dynasm!(a ; .arch x64 ; mov QWORD [rdi + d], rax);
}

/// pc = imm; return n
fn leave_at(a: &mut Asm, l: &Layout, pc: u64, n: u32) {
    let (p, n) = (l.pc, n as i32);
    dynasm!(a ; .arch x64
        ; mov rax, QWORD pc as i64
        ; mov QWORD [rdi + p], rax
        ; mov eax, n
        ; ret
    );
}

/// Whether the code generator handles `op` in the middle of a block.
pub(super) fn straight(op: Op) -> bool {
    use Op::*;
    matches!(
        op,
        Lui | Auipc
            | Addi
            | Slti
            | Sltiu
            | Xori
            | Ori
            | Andi
            | Slli
            | Srli
            | Srai
            | Addiw
            | Slliw
            | Srliw
            | Sraiw
            | Add
            | Sub
            | Sll
            | Slt
            | Sltu
            | Xor
            | Srl
            | Sra
            | Or
            | And
            | Addw
            | Subw
            | Sllw
            | Srlw
            | Sraw
            | Mul
            | Mulh
            | Mulhu
            | Mulw
            | Lb
            | Lh
            | Lw
            | Ld
            | Lbu
            | Lhu
            | Lwu
            | Sb
            | Sh
            | Sw
            | Sd
            | Fence
    )
}

/// Whether `op` ends a block (it sets pc itself).
pub(super) fn terminal(op: Op) -> bool {
    use Op::*;
    matches!(op, Jal | Jalr | Beq | Bne | Blt | Bge | Bltu | Bgeu)
}

/// Assemble `plan` for execution at address `base`.
pub(super) fn assemble(base: usize, plan: &Plan, l: &Layout) -> Option<Vec<u8>> {
    let mut a = Asm::new(base);
    let invalid = a.new_dynamic_label();
    // The code bytes the block was translated from must still be there.
    let host = plan.code_host as i64;
    dynasm!(a ; .arch x64 ; mov rdx, QWORD host);
    for &(o, size, v) in &plan.check {
        let o = o as i32;
        match size {
            8 => dynasm!(a ; .arch x64
                ; mov rax, QWORD v as i64
                ; cmp QWORD [rdx + o], rax
                ; jne =>invalid
            ),
            4 => dynasm!(a ; .arch x64
                ; cmp DWORD [rdx + o], v as u32 as i32
                ; jne =>invalid
            ),
            _ => dynasm!(a ; .arch x64
                ; cmp WORD [rdx + o], v as u16 as i16
                ; jne =>invalid
            ),
        }
    }
    let mut bails = Vec::new();
    let n = plan.insns.len() as u32;
    for (k, &(pc, ref i)) in plan.insns.iter().enumerate() {
        if terminal(i.op) {
            debug_assert_eq!(k + 1, plan.insns.len());
            emit_terminal(&mut a, l, pc, i, n);
        } else if matches!(
            i.op,
            Op::Lb | Op::Lh | Op::Lw | Op::Ld | Op::Lbu | Op::Lhu | Op::Lwu
        ) || matches!(i.op, Op::Sb | Op::Sh | Op::Sw | Op::Sd)
        {
            let bail = a.new_dynamic_label();
            bails.push((bail, pc, k as u32));
            emit_memory(&mut a, l, i, bail);
        } else {
            emit_straight(&mut a, l, pc, i);
        }
    }
    if !plan.insns.last().is_some_and(|(_, i)| terminal(i.op)) {
        leave_at(&mut a, l, plan.end_pc, n);
    }
    for (label, pc, k) in bails {
        dynasm!(a ; .arch x64 ; =>label);
        leave_at(&mut a, l, pc, k);
    }
    dynasm!(a ; .arch x64
        ; =>invalid
        ; mov rax, QWORD -1
        ; ret
    );
    a.finalize().ok()
}

fn emit_straight(a: &mut Asm, l: &Layout, pc: u64, i: &Insn) {
    use Op::*;
    if i.rd == X0_SINK || i.op == Fence {
        return; // no architectural effect (a hint or FENCE, a no-op on this hart)
    }
    let imm = i.imm;
    match i.op {
        Lui => {
            let v = imm as i64;
            dynasm!(a ; .arch x64 ; mov rax, QWORD v);
        }
        Auipc => {
            let v = pc.wrapping_add(imm as i64 as u64) as i64;
            dynasm!(a ; .arch x64 ; mov rax, QWORD v);
        }
        Addi | Xori | Ori | Andi | Slli | Srli | Srai | Addiw | Slliw | Srliw | Sraiw => {
            get_rax(a, l, i.rs1);
            let sh = (imm & 63) as i8;
            let shw = (imm & 31) as i8;
            match i.op {
                Addi => dynasm!(a ; .arch x64 ; add rax, imm),
                Xori => dynasm!(a ; .arch x64 ; xor rax, imm),
                Ori => dynasm!(a ; .arch x64 ; or rax, imm),
                Andi => dynasm!(a ; .arch x64 ; and rax, imm),
                Slli => dynasm!(a ; .arch x64 ; shl rax, sh),
                Srli => dynasm!(a ; .arch x64 ; shr rax, sh),
                Srai => dynasm!(a ; .arch x64 ; sar rax, sh),
                Addiw => dynasm!(a ; .arch x64 ; add eax, imm ; movsxd rax, eax),
                Slliw => dynasm!(a ; .arch x64 ; shl eax, shw ; movsxd rax, eax),
                Srliw => dynasm!(a ; .arch x64 ; shr eax, shw ; movsxd rax, eax),
                _ => dynasm!(a ; .arch x64 ; sar eax, shw ; movsxd rax, eax),
            }
        }
        Slti | Sltiu => {
            get_rax(a, l, i.rs1);
            dynasm!(a ; .arch x64 ; xor edx, edx ; cmp rax, imm);
            if i.op == Slti {
                dynasm!(a ; .arch x64 ; setl dl);
            } else {
                dynasm!(a ; .arch x64 ; setb dl);
            }
            dynasm!(a ; .arch x64 ; mov rax, rdx);
        }
        _ => {
            get_rax(a, l, i.rs1);
            get_rcx(a, l, i.rs2);
            match i.op {
                Add => dynasm!(a ; .arch x64 ; add rax, rcx),
                Sub => dynasm!(a ; .arch x64 ; sub rax, rcx),
                Xor => dynasm!(a ; .arch x64 ; xor rax, rcx),
                Or => dynasm!(a ; .arch x64 ; or rax, rcx),
                And => dynasm!(a ; .arch x64 ; and rax, rcx),
                Sll => dynasm!(a ; .arch x64 ; shl rax, cl),
                Srl => dynasm!(a ; .arch x64 ; shr rax, cl),
                Sra => dynasm!(a ; .arch x64 ; sar rax, cl),
                Slt => dynasm!(a ; .arch x64 ; xor edx, edx ; cmp rax, rcx ; setl dl ; mov rax, rdx),
                Sltu => dynasm!(a ; .arch x64 ; xor edx, edx ; cmp rax, rcx ; setb dl ; mov rax, rdx),
                Addw => dynasm!(a ; .arch x64 ; add eax, ecx ; movsxd rax, eax),
                Subw => dynasm!(a ; .arch x64 ; sub eax, ecx ; movsxd rax, eax),
                Sllw => dynasm!(a ; .arch x64 ; shl eax, cl ; movsxd rax, eax),
                Srlw => dynasm!(a ; .arch x64 ; shr eax, cl ; movsxd rax, eax),
                Sraw => dynasm!(a ; .arch x64 ; sar eax, cl ; movsxd rax, eax),
                Mul => dynasm!(a ; .arch x64 ; imul rax, rcx),
                Mulw => dynasm!(a ; .arch x64 ; imul eax, ecx ; movsxd rax, eax),
                Mulh => dynasm!(a ; .arch x64 ; imul rcx ; mov rax, rdx),
                Mulhu => dynasm!(a ; .arch x64 ; mul rcx ; mov rax, rdx),
                op => unreachable!("{op:?} is not a straight-line op"),
            }
        }
    }
    put_rax(a, l, i.rd);
}

/// A load or store through the TLB: on a miss (or an access that crosses its page) jump to
/// `bail`, which leaves the block with this instruction not executed.
fn emit_memory(a: &mut Asm, l: &Layout, i: &Insn, bail: dynasmrt::DynamicLabel) {
    use Op::*;
    let size: i32 = match i.op {
        Lb | Lbu | Sb => 1,
        Lh | Lhu | Sh => 2,
        Lw | Lwu | Sw => 4,
        _ => 8,
    };
    let store = matches!(i.op, Sb | Sh | Sw | Sd);
    let imm = i.imm;
    get_rsi(a, l, i.rs1);
    if imm != 0 {
        dynasm!(a ; .arch x64 ; add rsi, imm);
    }
    if size > 1 {
        let last = 0x1000 - size;
        dynasm!(a ; .arch x64
            ; mov eax, esi
            ; and eax, 0xfff
            ; cmp eax, last
            ; ja =>bail
        );
    }
    let ctx = l.data_ctx;
    let (tag, off) = if store {
        (l.store, l.store + 8)
    } else {
        (l.load, l.load + 8)
    };
    let ram = l.ram_host as i64;
    dynasm!(a ; .arch x64
        ; mov rax, rsi
        ; shr rax, 12
        ; movzx edx, al
        ; shl edx, 4
        ; or rax, QWORD [rdi + ctx]
        ; cmp rax, QWORD [rdi + rdx + tag]
        ; jne =>bail
        ; mov rax, QWORD [rdi + rdx + off]
        ; and esi, 0xfff
        ; add rax, rsi
        ; mov rdx, QWORD ram
    );
    if store {
        get_rcx(a, l, i.rs2);
        match size {
            1 => dynasm!(a ; .arch x64 ; mov BYTE [rdx + rax], cl),
            2 => dynasm!(a ; .arch x64 ; mov WORD [rdx + rax], cx),
            4 => dynasm!(a ; .arch x64 ; mov DWORD [rdx + rax], ecx),
            _ => dynasm!(a ; .arch x64 ; mov QWORD [rdx + rax], rcx),
        }
        return;
    }
    match i.op {
        Lb => dynasm!(a ; .arch x64 ; movsx rcx, BYTE [rdx + rax]),
        Lbu => dynasm!(a ; .arch x64 ; movzx ecx, BYTE [rdx + rax]),
        Lh => dynasm!(a ; .arch x64 ; movsx rcx, WORD [rdx + rax]),
        Lhu => dynasm!(a ; .arch x64 ; movzx ecx, WORD [rdx + rax]),
        Lw => dynasm!(a ; .arch x64 ; movsxd rcx, DWORD [rdx + rax]),
        Lwu => dynasm!(a ; .arch x64 ; mov ecx, DWORD [rdx + rax]),
        _ => dynasm!(a ; .arch x64 ; mov rcx, QWORD [rdx + rax]),
    }
    if i.rd != X0_SINK {
        let d = xd(l, i.rd);
        dynasm!(a ; .arch x64 ; mov QWORD [rdi + d], rcx);
    }
}

/// The jump or branch that ends a block.
fn emit_terminal(a: &mut Asm, l: &Layout, pc: u64, i: &Insn, n: u32) {
    use Op::*;
    let link = pc.wrapping_add(i.len as u64);
    let target = pc.wrapping_add(i.imm as i64 as u64);
    let (p, nn) = (l.pc, n as i32);
    match i.op {
        Jal => {
            if i.rd != X0_SINK {
                let d = xd(l, i.rd);
                dynasm!(a ; .arch x64 ; mov rax, QWORD link as i64 ; mov QWORD [rdi + d], rax);
            }
            leave_at(a, l, target, n);
        }
        Jalr => {
            get_rax(a, l, i.rs1);
            let imm = i.imm;
            dynasm!(a ; .arch x64 ; add rax, imm ; and rax, -2);
            if i.rd != X0_SINK {
                let d = xd(l, i.rd);
                dynasm!(a ; .arch x64 ; mov rcx, QWORD link as i64 ; mov QWORD [rdi + d], rcx);
            }
            dynasm!(a ; .arch x64
                ; mov QWORD [rdi + p], rax
                ; mov eax, nn
                ; ret
            );
        }
        _ => {
            get_rax(a, l, i.rs1);
            get_rcx(a, l, i.rs2);
            let taken = a.new_dynamic_label();
            dynasm!(a ; .arch x64 ; cmp rax, rcx);
            match i.op {
                Beq => dynasm!(a ; .arch x64 ; je =>taken),
                Bne => dynasm!(a ; .arch x64 ; jne =>taken),
                Blt => dynasm!(a ; .arch x64 ; jl =>taken),
                Bge => dynasm!(a ; .arch x64 ; jge =>taken),
                Bltu => dynasm!(a ; .arch x64 ; jb =>taken),
                _ => dynasm!(a ; .arch x64 ; jae =>taken),
            }
            leave_at(a, l, link, n);
            dynasm!(a ; .arch x64 ; =>taken);
            leave_at(a, l, target, n);
        }
    }
}
