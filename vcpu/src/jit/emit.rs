//! The assembler a block is emitted into: dynasm's `VecAssembler` plus a cache of guest
//! integer registers in the host registers r8-r11, r14 and r15.
//!
//! Every guest register lives in the hart (`[rdi + x]`). The cache remembers which host
//! register holds a value an instruction of the block computed, so that later instructions
//! read it there instead of loading it again (which also takes the store-to-load
//! forwarding latency off chains of dependent instructions). The straight-line integer
//! instructions and loads leave their results in it only (dirty); [`Emitter::flush`] writes
//! them to the hart before any instruction of another kind (F/D, CSR, atomic, jump or
//! branch but a side exit) and at the block's end, and [`Emitter::assign`] before it reuses
//! their register. A side exit (`super::x64::side_exit`) keeps them: its taken path writes
//! the values it found unwritten before it leaves. An integer load or store keeps them (in
//! a monitored block too: the monitor's model probes after it keep the caching registers):
//! its way out before it retires (a bail to the interpreter: a fault or a device) writes
//! the values it found unwritten ([`RegCache::pending`], [`Emitter::write_back`]) before
//! leaving, and its slow path keeps every caching register. So a bail, a helper or the next block always finds the
//! architectural state in the hart.
//!
//! What the cache knows is a property of the straight-line code being emitted, so it is
//! forgotten wherever paths meet or host registers are clobbered: at every label (any jump
//! may land there with other contents) and at every call (r8-r11 are caller-saved, and helpers may write guest registers), where
//! nothing may be unwritten (checked in debug builds, as at every jump but a load's or
//! store's way out: [`Emitter::side_exits`]).

use dynasmrt::x64::X64Relocation;
use dynasmrt::VecAssembler;
use dynasmrt::{dynasm, AssemblyOffset, DynamicLabel, DynasmApi, DynasmError, DynasmLabelApi};

/// Host registers (x86-64 numbers) that cache guest registers: r8-r11 (caller-saved:
/// pushed around a slow path's call) and r14, r15 (callee-saved: `super::vcpu_jit_enter`
/// keeps them for its caller, and helpers keep them for the block).
const HOSTS: [u8; 6] = [8, 9, 10, 11, 14, 15];

/// The cached values not yet written to the hart at some point of a block, as
/// `(host, guest)` pairs ([`RegCache::pending`]).
#[derive(Clone, Copy, Default)]
pub(super) struct Pending {
    pairs: [(u8, u8); HOSTS.len()],
    len: usize,
}

impl Pending {
    pub(super) fn iter(&self) -> impl Iterator<Item = (u8, u8)> + '_ {
        self.pairs[..self.len].iter().copied()
    }
}

/// Which guest register each of [`HOSTS`] holds (0: none; x0 is never cached), and whether
/// its value is still to be written to the hart.
#[derive(Clone)]
pub(super) struct RegCache {
    held: [u8; HOSTS.len()],
    /// The held value is newer than the hart's copy (written by an integer instruction,
    /// to be written to the hart by [`Emitter::flush`] or when the register is reused).
    dirty: [bool; HOSTS.len()],
    /// For each guest register, the index in the block of the next instruction reading it,
    /// from the instruction being emitted on ([`NOT_READ`]: none): the register to reuse
    /// is the one read furthest ahead ([`RegCache::victim`]).
    ahead: [u8; 32],
}

/// [`RegCache::ahead`] for a register the rest of the block does not read.
pub(super) const NOT_READ: u8 = u8::MAX;

impl Default for RegCache {
    fn default() -> Self {
        RegCache {
            held: [0; HOSTS.len()],
            dirty: [false; HOSTS.len()],
            ahead: [NOT_READ; 32],
        }
    }
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
            None => HOSTS[self.victim()],
        }
    }

    /// The register to reuse for another guest register: a free one, or the one whose
    /// guest register is read furthest ahead (Belady's choice: the block's instructions
    /// are all known), among those a clean one (no write to the hart first).
    fn victim(&self) -> usize {
        if let Some(k) = self.held.iter().position(|&g| g == 0) {
            return k;
        }
        (0..HOSTS.len())
            .max_by_key(|&k| (self.ahead[self.held[k] as usize & 31], !self.dirty[k]))
            .unwrap_or(0)
    }

    /// Where each guest register is read next (see [`RegCache::ahead`]).
    pub(super) fn set_ahead(&mut self, ahead: &[u8; 32]) {
        self.ahead = *ahead;
    }

    /// A host register to hold guest register `r` from now on (the one already holding it,
    /// or the next one in turn), and the guest register it held with a value still to be
    /// written to the hart, if any (the caller writes it before reusing the register).
    fn assign(&mut self, r: u8) -> (u8, Option<u8>) {
        if let Some(k) = self.held.iter().position(|&g| g == r) {
            return (HOSTS[k], None);
        }
        let k = self.victim();
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

    /// The values held that the hart does not have yet.
    pub(super) fn pending(&self) -> Pending {
        let mut p = Pending::default();
        for ((&h, &g), _) in HOSTS
            .iter()
            .zip(&self.held)
            .zip(&self.dirty)
            .filter(|(_, &d)| d)
        {
            p.pairs[p.len] = (h, g);
            p.len += 1;
        }
        p
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

    #[cfg(test)]
    fn held(&self) -> &[u8] {
        &self.held
    }
}

/// A block's assembler (see the module documentation).
pub(super) struct Emitter {
    asm: VecAssembler<X64Relocation>,
    pub(super) cache: RegCache,
    /// Displacement of x0 in the hart (x\[r\] is at `x + 8 * r` from rdi).
    x: i32,
    /// Jumps may leave values unwritten: they go to a load's or store's slow path (which
    /// keeps the caching registers and comes back) or to its way out (which writes them:
    /// [`Emitter::write_back`]). Set while such an access is emitted.
    side_exits: bool,
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
            side_exits: false,
        }
    }

    /// Begin a block, with x0 at displacement `x` in the hart and nothing cached. The
    /// assembler is empty: new, or emptied by [`Emitter::finish`].
    pub(super) fn begin(&mut self, x: i32) {
        self.cache = RegCache::default();
        self.x = x;
        self.side_exits = false;
    }

    /// See [`Emitter::side_exits`].
    pub(super) fn side_exits(&mut self, on: bool) {
        self.side_exits = on;
    }

    /// Write the values `pending` lists (taken where a way out of the block left them
    /// unwritten) to the hart.
    #[allow(clippy::useless_conversion)]
    pub(super) fn write_back(&mut self, pending: &Pending) {
        for (h, g) in pending.iter() {
            let d = self.x + 8 * g as i32;
            dynasm!(self ; .arch x64 ; mov QWORD [rdi + d], Rq(h));
        }
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

    /// Define `label` where the only jumps to it come from code that keeps the caching registers and
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
            self.side_exits || !self.cache.dirty.contains(&true),
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
        // x5 is the only one read again: the others go first, clean before unwritten.
        let mut ahead = [NOT_READ; 32];
        ahead[5] = 3;
        c.set_ahead(&ahead);
        for r in 6..6 + HOSTS.len() as u8 {
            assert_eq!(c.assign(r).1, None, "x{r} takes a free or clean register");
        }
        assert!(c.find(5).is_some(), "x5, read next, is kept");
        let n = HOSTS.len() as u8;
        assert_eq!(
            (6..6 + n).filter(|&r| c.find(r).is_some()).count(),
            HOSTS.len() - 1,
            "a clean register not read again is reused"
        );
        for r in 6..6 + HOSTS.len() as u8 {
            if let Some(h) = c.find(r) {
                c.set_dirty(h, true);
            }
        }
        let pending: Vec<(u8, u8)> = c.pending().iter().collect();
        assert_eq!(pending.len(), HOSTS.len(), "every held value is unwritten");
        assert!(pending.iter().all(|&(h, g)| c.find(g) == Some(h)));
        assert!(pending.contains(&(h, 5)));
        // Now x5 is read furthest ahead of all: it goes, and is handed back to be written.
        for r in 6..6 + HOSTS.len() as u8 {
            ahead[r as usize] = 1;
        }
        ahead[5] = 9;
        c.set_ahead(&ahead);
        assert_eq!(
            c.assign(20),
            (h, Some(5)),
            "the unwritten x5 is handed back"
        );
        assert_eq!(c.find(5), None);
        assert_eq!(c.held().iter().filter(|&&g| g == 20).count(), 1);
        c.forget(7);
        assert_eq!(c.find(7), None);
        for k in 0..HOSTS.len() {
            c.dirty[k] = false;
        }
        c.clear();
        assert!((1..32).all(|r| c.find(r).is_none()));
        assert_eq!(c.find(0), None);
        assert_eq!(c.pending().iter().count(), 0);
    }
}
