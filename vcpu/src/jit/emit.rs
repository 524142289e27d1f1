//! The assembler a block is emitted into: dynasm's `VecAssembler` plus a cache of guest
//! integer registers in the host registers r8-r11.
//!
//! Every guest register lives in the hart (`[rdi + x]`). The cache remembers which host
//! register holds a value an instruction of the block computed, so that later instructions
//! read it there instead of loading it again (which also takes the store-to-load
//! forwarding latency off chains of dependent instructions). The straight-line integer
//! instructions leave their results in it only (dirty); [`Emitter::flush`] writes them to
//! the hart before any instruction of another kind (load, store, F/D, CSR, atomic, jump or
//! branch) and at the block's end, and [`Emitter::assign`] before it reuses their register.
//! So a bail, a slow path, a helper or the next block always finds the architectural state
//! in the hart, with no write-back protocol beyond that.
//!
//! What the cache knows is a property of the straight-line code being emitted, so it is
//! forgotten wherever paths meet or host registers are clobbered: at every label (any jump
//! may land there with other contents) and at every call (r8-r11 are caller-saved), where
//! nothing may be unwritten (checked in debug builds, as at every jump).

use dynasmrt::x64::X64Relocation;
use dynasmrt::VecAssembler;
use dynasmrt::{dynasm, AssemblyOffset, DynamicLabel, DynasmApi, DynasmError, DynasmLabelApi};

/// Host registers (x86-64 numbers) that cache guest registers.
const HOSTS: [u8; 4] = [8, 9, 10, 11];

/// Which guest register each of [`HOSTS`] holds (0: none; x0 is never cached), and whether
/// its value is still to be written to the hart.
#[derive(Default, Clone)]
pub(super) struct RegCache {
    held: [u8; HOSTS.len()],
    /// The held value is newer than the hart's copy (written by an integer instruction,
    /// to be written to the hart by [`Emitter::flush`] or when the register is reused).
    dirty: [bool; HOSTS.len()],
    /// The next host register to reuse (round robin).
    next: usize,
}

impl RegCache {
    /// The host register holding guest register `r`, if any.
    pub(super) fn find(&self, r: u8) -> Option<u8> {
        (r != 0)
            .then(|| self.held.iter().position(|&g| g == r))
            .flatten()
            .map(|k| HOSTS[k])
    }

    /// The host register [`RegCache::assign`] would give guest register `r`, without
    /// assigning it.
    pub(super) fn peek(&self, r: u8) -> u8 {
        match self.held.iter().position(|&g| g == r) {
            Some(k) => HOSTS[k],
            None => HOSTS[self.next],
        }
    }

    /// A host register to hold guest register `r` from now on (the one already holding it,
    /// or the next one in turn), and the guest register it held with a value still to be
    /// written to the hart, if any (the caller writes it before reusing the register).
    fn assign(&mut self, r: u8) -> (u8, Option<u8>) {
        if let Some(k) = self.held.iter().position(|&g| g == r) {
            return (HOSTS[k], None);
        }
        let k = self.next;
        self.next = (k + 1) % HOSTS.len();
        let victim = self.dirty[k].then_some(self.held[k]);
        self.held[k] = r;
        self.dirty[k] = false;
        (HOSTS[k], victim)
    }

    /// Host register `h` holds a value the hart does not have yet (`dirty`) or has.
    fn set_dirty(&mut self, h: u8, dirty: bool) {
        if let Some(k) = HOSTS.iter().position(|&x| x == h) {
            self.dirty[k] = dirty;
        }
    }

    /// Guest register `r` was written without the cache: its old copy is stale.
    pub(super) fn forget(&mut self, r: u8) {
        for (g, d) in self.held.iter_mut().zip(&self.dirty) {
            if *g == r {
                debug_assert!(!d, "x{r} written around its unwritten cached value");
                *g = 0;
            }
        }
    }

    /// The guest registers held with the hart's value, as `(host, guest)`.
    pub(super) fn clean(&self) -> Vec<(u8, u8)> {
        (0..HOSTS.len())
            .filter(|&k| self.held[k] != 0 && !self.dirty[k])
            .map(|k| (HOSTS[k], self.held[k]))
            .collect()
    }

    /// Nothing is known any more (a label or a call). Nothing may be unwritten here.
    pub(super) fn clear(&mut self) {
        debug_assert!(
            !self.dirty.contains(&true),
            "unwritten cached registers at a label or call"
        );
        self.held = [0; HOSTS.len()];
        self.dirty = [false; HOSTS.len()];
    }
}

/// What translation reuses from one block to the next (a hart's, allocated once): the
/// assembler and the buffer a block's code is finished into.
pub(crate) struct Scratch {
    pub(super) asm: Emitter,
    pub(super) code: Vec<u8>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            // Room for the largest blocks, and the labels of a block of the most
            // instructions (exits and slow paths).
            asm: Emitter::new(4096, 8 * super::MAX_INSNS),
            code: Vec::with_capacity(4096),
        }
    }
}

/// A block's assembler (see the module documentation).
pub(super) struct Emitter {
    asm: VecAssembler<X64Relocation>,
    pub(super) cache: RegCache,
    /// Displacement of x0 in the hart (x\[r\] is at `x + 8 * r` from rdi).
    x: i32,
}

impl Emitter {
    /// An empty assembler with room for `ops` bytes and `labels` dynamic labels and
    /// relocations. Its code may be placed anywhere: blocks refer to their labels only
    /// relatively, and to everything else by absolute addresses they hold themselves.
    pub(super) fn new(ops: usize, labels: usize) -> Emitter {
        Emitter {
            asm: VecAssembler::new_with_capacity(0, ops, 0, 0, labels, 0, labels),
            cache: RegCache::default(),
            x: 0,
        }
    }

    /// Begin a block, with x0 at displacement `x` in the hart and nothing cached. The
    /// assembler is empty: new, or emptied by [`Emitter::finish`].
    pub(super) fn begin(&mut self, x: i32) {
        self.cache = RegCache::default();
        self.x = x;
    }

    /// Resolve the block's labels and move its code to `code` (emptied first), leaving the
    /// assembler empty for the next block, its buffers kept. After an error the assembler
    /// must not be used again.
    pub(super) fn finish(&mut self, code: &mut Vec<u8>) -> Result<(), DynasmError> {
        code.clear();
        code.extend(self.asm.drain()?);
        Ok(())
    }

    /// The host register to hold guest register `r` from now on ([`RegCache::assign`]),
    /// writing the value it held to the hart first when that was still unwritten.
    #[allow(clippy::useless_conversion)]
    pub(super) fn assign(&mut self, r: u8) -> u8 {
        let (h, victim) = self.cache.assign(r);
        if let Some(g) = victim {
            let d = self.x + 8 * g as i32;
            dynasm!(self ; .arch x64 ; mov QWORD [rdi + d], Rq(h));
        }
        h
    }

    /// Host register `h`, which caches a guest register, holds a newer value than the
    /// hart's (`dirty`) or the same.
    pub(super) fn set_dirty(&mut self, h: u8, dirty: bool) {
        self.cache.set_dirty(h, dirty);
    }

    /// Write every cached value the hart does not have yet: the hart is then up to date.
    #[allow(clippy::useless_conversion)]
    pub(super) fn flush(&mut self) {
        for (k, &h) in HOSTS.iter().enumerate() {
            if std::mem::take(&mut self.cache.dirty[k]) {
                let d = self.x + 8 * self.cache.held[k] as i32;
                dynasm!(self ; .arch x64 ; mov QWORD [rdi + d], Rq(h));
            }
        }
    }

    /// Make host register `h` hold guest register `g` for each `(h, g)` of `carried` (from
    /// [`RegCache::clean`]), loading from the hart those that are not there already; the
    /// cache then knows exactly these (a loop's head, where both the way in and the jump
    /// back arrive with them). Nothing may be unwritten here: the hart has every value.
    #[allow(clippy::useless_conversion)]
    pub(super) fn carry(&mut self, carried: &[(u8, u8)]) {
        let now = self.cache.clone();
        self.cache.clear();
        for &(h, g) in carried {
            if now.find(g) != Some(h) {
                let d = self.x + 8 * g as i32;
                dynasm!(self ; .arch x64 ; mov Rq(h), QWORD [rdi + d]);
            }
            if let Some(k) = HOSTS.iter().position(|&x| x == h) {
                self.cache.held[k] = g;
            }
        }
    }

    /// Define `label` where the only jumps to it come from code that keeps r8-r11 and
    /// writes no guest register (a load's or store's slow path, and the performance
    /// monitor's model probes in [`super::x64`]): what the cache knows holds on both paths,
    /// so it is kept.
    pub(super) fn join(&mut self, label: DynamicLabel) {
        self.asm.dynamic_label(label)
    }

    pub(super) fn new_dynamic_label(&mut self) -> DynamicLabel {
        self.asm.new_dynamic_label()
    }
}

impl Extend<u8> for Emitter {
    fn extend<T: IntoIterator<Item = u8>>(&mut self, iter: T) {
        self.asm.extend(iter)
    }
}

impl<'a> Extend<&'a u8> for Emitter {
    fn extend<T: IntoIterator<Item = &'a u8>>(&mut self, iter: T) {
        self.asm.extend(iter)
    }
}

impl DynasmApi for Emitter {
    fn offset(&self) -> AssemblyOffset {
        self.asm.offset()
    }

    fn push(&mut self, byte: u8) {
        self.asm.push(byte)
    }

    fn align(&mut self, alignment: usize, with: u8) {
        self.asm.align(alignment, with)
    }
}

impl DynasmLabelApi for Emitter {
    type Relocation = X64Relocation;

    fn local_label(&mut self, name: &'static str) {
        self.cache.clear();
        self.asm.local_label(name)
    }

    fn global_label(&mut self, name: &'static str) {
        self.cache.clear();
        self.asm.global_label(name)
    }

    fn dynamic_label(&mut self, id: DynamicLabel) {
        self.cache.clear();
        self.asm.dynamic_label(id)
    }

    fn forward_relocation(
        &mut self,
        name: &'static str,
        target_offset: isize,
        field_offset: u8,
        ref_offset: u8,
        kind: X64Relocation,
    ) {
        self.asm
            .forward_relocation(name, target_offset, field_offset, ref_offset, kind)
    }

    fn backward_relocation(
        &mut self,
        name: &'static str,
        target_offset: isize,
        field_offset: u8,
        ref_offset: u8,
        kind: X64Relocation,
    ) {
        self.asm
            .backward_relocation(name, target_offset, field_offset, ref_offset, kind)
    }

    fn global_relocation(
        &mut self,
        name: &'static str,
        target_offset: isize,
        field_offset: u8,
        ref_offset: u8,
        kind: X64Relocation,
    ) {
        self.asm
            .global_relocation(name, target_offset, field_offset, ref_offset, kind)
    }

    fn dynamic_relocation(
        &mut self,
        id: DynamicLabel,
        target_offset: isize,
        field_offset: u8,
        ref_offset: u8,
        kind: X64Relocation,
    ) {
        debug_assert!(
            !self.cache.dirty.contains(&true),
            "a jump with unwritten cached registers"
        );
        self.asm
            .dynamic_relocation(id, target_offset, field_offset, ref_offset, kind)
    }

    fn value_relocation(
        &mut self,
        value: usize,
        field_offset: u8,
        ref_offset: u8,
        kind: X64Relocation,
    ) {
        self.asm
            .value_relocation(value, field_offset, ref_offset, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_reuses_a_guest_registers_host_register_and_forgets() {
        let mut c = RegCache::default();
        assert_eq!(c.find(5), None);
        let h = c.peek(5);
        assert_eq!(c.assign(5), (h, None));
        assert_eq!(c.find(5), Some(h));
        assert_eq!(c.peek(5), h);
        assert_eq!(
            c.assign(5),
            (h, None),
            "one host register per guest register"
        );
        c.set_dirty(h, true);
        for r in 6..6 + HOSTS.len() as u8 {
            let victim = c.assign(r).1;
            assert_eq!(
                victim,
                (r == 5 + HOSTS.len() as u8).then_some(5),
                "the unwritten x5 is handed back"
            );
        }
        assert_eq!(c.find(5), None, "the oldest is reused");
        c.forget(7);
        assert_eq!(c.find(7), None);
        c.clear();
        assert!((1..32).all(|r| c.find(r).is_none()));
        assert_eq!(c.find(0), None);
    }
}
