//! The H extension's virtual-machine loads and stores: HLV, HLVX and HSV access memory as
//! though V=1 at the privilege in `hstatus.SPVP`, through both translation stages, whatever
//! MPRV says (H extension, "Hypervisor Virtual-Machine Load and Store Instructions"). Their
//! faults report guest virtual addresses (GVA = 1). They bypass the software TLB.

use crate::decode::{Insn, Op};
use crate::hart::{Ctl, Hart, PrivilegeMode};
use crate::hypervisor::HSTATUS_SPVP;
use crate::mmu::{Access, AccessMode, Phys};
use vcpu_api::MmioAccess;

impl Hart {
    /// Execute an HLV/HLVX/HSV whose privilege checks have passed.
    pub(super) fn exec_hlv_hsv(&mut self, i: &Insn) -> Result<(), Ctl> {
        let prv = if self.csr.h.hstatus & HSTATUS_SPVP != 0 {
            PrivilegeMode::Supervisor
        } else {
            PrivilegeMode::User
        };
        let hlvx = matches!(i.op, Op::HlvxHu | Op::HlvxWu);
        let mode = AccessMode {
            prv,
            virt: true,
            hlvx,
        };
        let va = self.rs1(i);
        let (size, store) = match i.op {
            Op::HlvB | Op::HlvBu => (1, false),
            Op::HlvH | Op::HlvHu | Op::HlvxHu => (2, false),
            Op::HlvW | Op::HlvWu | Op::HlvxWu => (4, false),
            Op::HlvD => (8, false),
            Op::HsvB => (1, true),
            Op::HsvH => (2, true),
            Op::HsvW => (4, true),
            _ => (8, true),
        };
        if store {
            let val = self.rs2(i);
            return self
                .hyp_access(va, size, Access::Store, mode, val)
                .map(|_| ());
        }
        let v = self.hyp_access(va, size, Access::Load, mode, 0)?;
        let v = match i.op {
            Op::HlvB => v as i8 as u64,
            Op::HlvH => v as i16 as u64,
            Op::HlvW => v as i32 as u64,
            _ => v,
        };
        self.set_rd(i, v);
        Ok(())
    }

    /// One access of `size` bytes at guest virtual address `va`, byte by byte when it
    /// crosses a page (each page translated and checked first).
    fn hyp_access(
        &mut self,
        va: u64,
        size: u32,
        kind: Access,
        mode: AccessMode,
        val: u64,
    ) -> Result<u64, Ctl> {
        let len = size as u64;
        if self.trig.armed {
            // A guest virtual address in tval: GVA (H extension, "Hypervisor Status
            // Register").
            self.trigger_data(va, len, kind == Access::Store)
                .map_err(|e| e.with_gva())?;
        }
        let first = (0x1000 - (va & 0xfff)).min(len);
        let pa0 = self.translate(va, kind, mode)?;
        let va1 = va.wrapping_add(first);
        let pa1 = if first < len {
            self.translate(va1, kind, mode)?
        } else {
            pa0
        };
        // The PMP in the access's own privilege (VS or VU), each page's part.
        self.pmp_check(va, pa0, first, kind, mode)?;
        if first < len {
            self.pmp_check(va1, pa1, len - first, kind, mode)?;
        }
        if first == len {
            return match self.classify(pa0, len) {
                Phys::Ram(off) => {
                    if kind == Access::Store {
                        self.ram.store(off, size, val);
                        self.jit_code_write(off, len);
                        Ok(0)
                    } else {
                        Ok(self.ram.load(off, size))
                    }
                }
                Phys::Device if pa0 & (len - 1) == 0 => {
                    let write = (kind == Access::Store).then_some(val);
                    Err(Ctl::Mmio(MmioAccess {
                        addr: pa0,
                        size: size as u8,
                        write,
                    }))
                }
                _ => Err(kind.access_fault(va).with_gva().into()),
            };
        }
        let (o0, o1) = match (self.classify(pa0, first), self.classify(pa1, len - first)) {
            (Phys::Ram(o0), Phys::Ram(o1)) => (o0, o1),
            (Phys::Ram(_), _) => return Err(kind.access_fault(va1).with_gva().into()),
            _ => return Err(kind.access_fault(va).with_gva().into()),
        };
        let mut v = 0;
        for b in 0..len {
            let off = if b < first { o0 + b } else { o1 + (b - first) };
            if kind == Access::Store {
                self.ram.store(off, 1, val >> (8 * b));
            } else {
                v |= self.ram.load(off, 1) << (8 * b);
            }
        }
        if kind == Access::Store {
            self.jit_code_write(o0, first);
            self.jit_code_write(o1, len - first);
        }
        Ok(v)
    }
}
