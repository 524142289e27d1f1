//! The platform-level interrupt controller (PLIC) of `vmm machine`, following the RISC-V
//! Platform-Level Interrupt Controller Specification 1.0.0 with QEMU `virt`'s parameters for
//! one hart: interrupt sources 1 to 95 ([`SOURCES`] identifiers, 0 meaning "no interrupt"),
//! priorities 0 to 7 ([`PRIORITY_MAX`]), and two hart contexts, context 0 for the hart's
//! M-mode (its output drives `mip.MEIP`) and context 1 for its S-mode (`mip.SEIP`); in general
//! context `2 * hart` is M-mode and `2 * hart + 1` S-mode.
//!
//! Memory map (spec, "Memory Map"), every register 32 bits wide:
//!
//! | offset                     | register                                         |
//! |----------------------------|--------------------------------------------------|
//! | `0x00_0000 + 4 * id`       | priority of source `id` ("Interrupt Priorities") |
//! | `0x00_1000 + 4 * w`        | pending bits of sources `32w..32w+31` ("Interrupt Pending Bits") |
//! | `0x00_2000 + 0x80 * ctx + 4 * w` | enable bits of context `ctx` ("Interrupt Enables") |
//! | `0x20_0000 + 0x1000 * ctx` | priority threshold of `ctx` ("Priority Thresholds") |
//! | `0x20_0004 + 0x1000 * ctx` | claim (read) / complete (write) of `ctx` ("Interrupt Claim Process", "Interrupt Completion") |
//!
//! The priority and threshold registers are WARL and keep their low three bits; enable bits
//! of source 0 and of sources that do not exist read 0. Pending bits are read-only.
//! Everything else in the window (other contexts, reserved offsets) reads 0 and ignores
//! writes, and so does any access that is not an aligned 32-bit one (the specification's
//! registers "are accessed atomically with LW and SW instructions").
//!
//! Sources are level-sensitive, each behind a gateway ("Interrupt Gateways"): the first
//! assertion of its level becomes a request (the source's pending bit), and the gateway
//! forwards no other request until the request's completion, after which a still-asserted
//! level is forwarded again. A claim returns the enabled pending source of the highest
//! priority (ties to the lowest id; priority 0 never interrupts) and clears its pending
//! bit; the threshold does not affect claims ("Interrupt Claim Process"). A completion for
//! an id not enabled in the context is ignored ("Interrupt Completion"). A context's
//! output ("Interrupt Notifications") is set while an enabled source is pending with a
//! priority above the context's threshold.
//!
//! QEMU 10.0's PLIC departs from the specification in three ways that the compared guest
//! (`tests/guests/plic.c`) therefore avoids: its claims skip sources whose priority does not
//! exceed the threshold, a completion does not forward a level that is still asserted, and a
//! source asserted again while its request is claimed shows its pending bit (without
//! interrupting). The unit tests below check the specification's behaviour.

/// Interrupt identifiers: sources 1 to `SOURCES - 1` exist (QEMU `virt`: 96).
pub const SOURCES: u32 = 96;
/// Highest priority (three priority bits, as QEMU `virt`).
pub const PRIORITY_MAX: u32 = 7;
/// Hart contexts: M-mode and S-mode of the one hart.
pub const CONTEXTS: usize = 2;
/// The UART's source id on QEMU `virt`.
pub const UART_SOURCE: u32 = 10;

/// Offset of the priority registers.
pub const PRIORITY: u64 = 0x0;
/// Offset of the pending bits.
pub const PENDING: u64 = 0x1000;
/// Offset of context 0's enable bits.
pub const ENABLE: u64 = 0x2000;
/// Bytes of enable bits per context.
pub const ENABLE_STRIDE: u64 = 0x80;
/// Offset of context 0's threshold register.
pub const CONTEXT: u64 = 0x20_0000;
/// Bytes per context in the threshold/claim block.
pub const CONTEXT_STRIDE: u64 = 0x1000;
/// Offset of the claim/complete register in a context's block.
pub const CLAIM_COMPLETE: u64 = 4;

/// 32-bit words of a bit array over every source id.
const WORDS: usize = SOURCES.div_ceil(32) as usize;
/// Bits of a word that name existing sources (id 0 never exists).
const VALID: [u32; WORDS] = {
    let mut v = [u32::MAX; WORDS];
    v[0] &= !1;
    let spare = WORDS as u32 * 32 - SOURCES;
    if spare > 0 {
        v[WORDS - 1] &= u32::MAX >> spare;
    }
    v
};

type Bits = [u32; WORDS];

fn bit(bits: &Bits, id: u32) -> bool {
    bits[(id / 32) as usize] & (1 << (id % 32)) != 0
}

fn set_bit(bits: &mut Bits, id: u32, on: bool) {
    let word = &mut bits[(id / 32) as usize];
    if on {
        *word |= 1 << (id % 32);
    } else {
        *word &= !(1 << (id % 32));
    }
}

/// The PLIC: the core's registers and each source's gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plic {
    /// Each source's priority (index 0 unused).
    priority: [u32; SOURCES as usize],
    /// The core's interrupt pending (IP) bits.
    pending: Bits,
    /// Each context's enable (IE) bits.
    enable: [Bits; CONTEXTS],
    /// Each context's priority threshold.
    threshold: [u32; CONTEXTS],
    /// The sources' input levels.
    level: Bits,
    /// Gateways that have forwarded a request and wait for its completion.
    in_flight: Bits,
}

impl Default for Plic {
    fn default() -> Self {
        Plic {
            priority: [0; SOURCES as usize],
            pending: [0; WORDS],
            enable: [[0; WORDS]; CONTEXTS],
            threshold: [0; CONTEXTS],
            level: [0; WORDS],
            in_flight: [0; WORDS],
        }
    }
}

/// The register an access falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reg {
    Priority(u32),
    Pending(usize),
    Enable(usize, usize),
    Threshold(usize),
    ClaimComplete(usize),
    /// Reserved, another context's, or not an aligned 32-bit access.
    None,
}

fn locate(offset: u64, size: u8) -> Reg {
    if size != 4 || !offset.is_multiple_of(4) {
        return Reg::None;
    }
    match offset {
        PRIORITY..PENDING => {
            let id = (offset / 4) as u32;
            if id != 0 && id < SOURCES {
                Reg::Priority(id)
            } else {
                Reg::None
            }
        }
        PENDING..ENABLE => match ((offset - PENDING) / 4) as usize {
            w if w < WORDS => Reg::Pending(w),
            _ => Reg::None,
        },
        ENABLE..CONTEXT => {
            let ctx = ((offset - ENABLE) / ENABLE_STRIDE) as usize;
            let w = ((offset - ENABLE) % ENABLE_STRIDE / 4) as usize;
            if ctx < CONTEXTS && w < WORDS {
                Reg::Enable(ctx, w)
            } else {
                Reg::None
            }
        }
        _ => {
            let ctx = (offset - CONTEXT) / CONTEXT_STRIDE;
            if ctx >= CONTEXTS as u64 {
                return Reg::None;
            }
            match (offset - CONTEXT) % CONTEXT_STRIDE {
                0 => Reg::Threshold(ctx as usize),
                CLAIM_COMPLETE => Reg::ClaimComplete(ctx as usize),
                _ => Reg::None,
            }
        }
    }
}

impl Plic {
    /// Drives source `id`'s input level (ids outside 1..[`SOURCES`] are ignored). The
    /// gateway turns an asserted level into a request unless one is in flight.
    pub fn set_level(&mut self, id: u32, level: bool) {
        if id == 0 || id >= SOURCES {
            return;
        }
        set_bit(&mut self.level, id, level);
        self.forward(id);
    }

    /// The gateway of `id`: forwards a request when the level is asserted and no request
    /// is in flight.
    fn forward(&mut self, id: u32) {
        if bit(&self.level, id) && !bit(&self.in_flight, id) {
            set_bit(&mut self.in_flight, id, true);
            set_bit(&mut self.pending, id, true);
        }
    }

    /// The notification of context `ctx` (its EIP bit): an enabled source is pending with
    /// a priority above the threshold. False for contexts that do not exist.
    pub fn notification(&self, ctx: usize) -> bool {
        let Some(enable) = self.enable.get(ctx) else {
            return false;
        };
        let threshold = self.threshold[ctx];
        self.pending_enabled(enable)
            .any(|id| self.priority[id as usize] > threshold)
    }

    /// Ids pending and enabled in `enable`, in increasing order.
    fn pending_enabled<'a>(&'a self, enable: &'a Bits) -> impl Iterator<Item = u32> + 'a {
        (0..WORDS).flat_map(move |w| {
            let mut bits = self.pending[w] & enable[w];
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                Some(w as u32 * 32 + b)
            })
        })
    }

    /// A claim by context `ctx`: the enabled pending source of the highest nonzero priority
    /// (the lowest id among equals), whose pending bit is cleared; 0 when there is none.
    pub fn claim(&mut self, ctx: usize) -> u32 {
        let Some(enable) = self.enable.get(ctx) else {
            return 0;
        };
        let mut best = 0;
        let mut best_priority = 0;
        for id in self.pending_enabled(enable) {
            // Strictly greater: the lowest id wins a tie.
            if self.priority[id as usize] > best_priority {
                best = id;
                best_priority = self.priority[id as usize];
            }
        }
        if best != 0 {
            set_bit(&mut self.pending, best, false);
        }
        best
    }

    /// A completion of `id` by context `ctx`: ignored unless `id` is enabled in `ctx`;
    /// otherwise `id`'s gateway may forward its next request.
    pub fn complete(&mut self, ctx: usize, id: u32) {
        let enabled = id < SOURCES && self.enable.get(ctx).is_some_and(|e| bit(e, id));
        if !enabled {
            return;
        }
        set_bit(&mut self.in_flight, id, false);
        self.forward(id);
    }

    /// A load of `size` bytes at `offset` in the window (a claim when it is one).
    pub fn read(&mut self, offset: u64, size: u8) -> u64 {
        let value = match locate(offset, size) {
            Reg::Priority(id) => self.priority[id as usize],
            Reg::Pending(w) => self.pending[w],
            Reg::Enable(ctx, w) => self.enable[ctx][w],
            Reg::Threshold(ctx) => self.threshold[ctx],
            Reg::ClaimComplete(ctx) => self.claim(ctx),
            Reg::None => 0,
        };
        u64::from(value)
    }

    /// A store of `size` bytes at `offset` in the window.
    pub fn write(&mut self, offset: u64, size: u8, value: u64) {
        let value = value as u32;
        match locate(offset, size) {
            Reg::Priority(id) => self.priority[id as usize] = value & PRIORITY_MAX,
            Reg::Enable(ctx, w) => self.enable[ctx][w] = value & VALID[w],
            Reg::Threshold(ctx) => self.threshold[ctx] = value & PRIORITY_MAX,
            Reg::ClaimComplete(ctx) => self.complete(ctx, value),
            Reg::Pending(_) | Reg::None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn priority(id: u32) -> u64 {
        PRIORITY + 4 * u64::from(id)
    }
    fn enable(ctx: u64) -> u64 {
        ENABLE + ENABLE_STRIDE * ctx
    }
    fn threshold(ctx: u64) -> u64 {
        CONTEXT + CONTEXT_STRIDE * ctx
    }
    fn claim(ctx: u64) -> u64 {
        threshold(ctx) + CLAIM_COMPLETE
    }

    /// A PLIC with sources `ids` at priority `prio`, enabled in context 0.
    fn plic_with(ids: &[(u32, u32)]) -> Plic {
        let mut p = Plic::default();
        for &(id, prio) in ids {
            p.write(priority(id), 4, u64::from(prio));
            let w = enable(0) + 4 * u64::from(id / 32);
            let old = p.read(w, 4);
            p.write(w, 4, old | 1 << (id % 32));
        }
        p
    }

    #[test]
    fn claim_takes_the_highest_priority_then_the_lowest_id() {
        let mut p = plic_with(&[(3, 2), (5, 6), (7, 6), (40, 1), (94, 7)]);
        for id in [3, 5, 7, 40] {
            p.set_level(id, true);
        }
        assert!(p.notification(0));
        assert!(!p.notification(1), "nothing enabled in the S-mode context");
        assert_eq!(p.read(PENDING, 4), 1 << 3 | 1 << 5 | 1 << 7);
        assert_eq!(p.read(PENDING + 4, 4), 1 << 8);
        assert_eq!(p.read(claim(0), 4), 5, "priority 6, lower id than 7");
        assert_eq!(p.read(claim(0), 4), 7);
        assert_eq!(p.read(claim(0), 4), 3);
        assert_eq!(p.read(claim(0), 4), 40);
        assert_eq!(p.read(claim(0), 4), 0, "nothing left");
        assert!(!p.notification(0));
        assert_eq!(p.read(PENDING, 4), 0);
    }

    #[test]
    fn threshold_masks_notifications_but_not_claims() {
        let mut p = plic_with(&[(10, 3)]);
        p.set_level(10, true);
        p.write(threshold(0), 4, 3);
        assert!(!p.notification(0), "priority 3 does not exceed threshold 3");
        p.write(threshold(0), 4, 2);
        assert!(p.notification(0));
        p.write(threshold(0), 4, 7);
        assert!(!p.notification(0));
        assert_eq!(p.read(claim(0), 4), 10, "claims ignore the threshold");
        // Priority 0 never interrupts and is never claimed.
        p.write(priority(10), 4, 0);
        p.write(threshold(0), 4, 0);
        p.complete(0, 10);
        assert_eq!(p.read(PENDING, 4), 1 << 10);
        assert!(!p.notification(0));
        assert_eq!(p.read(claim(0), 4), 0);
    }

    #[test]
    fn completion_of_an_id_not_enabled_is_ignored() {
        let mut p = plic_with(&[(10, 1)]);
        p.set_level(10, true);
        assert_eq!(p.read(claim(0), 4), 10);
        // Disabled in context 0, and never enabled in context 1: both completions ignored,
        // so the gateway still waits and the asserted level is not forwarded.
        p.write(enable(0), 4, 0);
        p.write(claim(0), 4, 10);
        p.write(claim(1), 4, 10);
        p.write(enable(0), 4, 1 << 10);
        assert_eq!(p.read(PENDING, 4), 0);
        assert!(!p.notification(0));
        // Ids that do not exist: ignored too.
        p.write(claim(0), 4, 0);
        p.write(claim(0), 4, u64::from(SOURCES));
        p.write(claim(0), 4, u64::MAX);
        assert_eq!(p.read(PENDING, 4), 0);
        p.write(claim(0), 4, 10);
        assert_eq!(p.read(PENDING, 4), 1 << 10, "the real completion forwards");
    }

    #[test]
    fn gateway_forwards_a_level_still_asserted_after_completion() {
        let mut p = plic_with(&[(10, 1)]);
        p.set_level(10, true);
        assert_eq!(p.read(claim(0), 4), 10);
        // Asserted again while the request is in service: not forwarded.
        p.set_level(10, false);
        p.set_level(10, true);
        assert_eq!(p.read(PENDING, 4), 0);
        assert_eq!(p.read(claim(0), 4), 0);
        p.write(claim(0), 4, 10);
        assert_eq!(
            p.read(PENDING, 4),
            1 << 10,
            "level still asserted: a new request"
        );
        assert!(p.notification(0));
        assert_eq!(p.read(claim(0), 4), 10);
        // Deasserted during service: nothing after the completion.
        p.set_level(10, false);
        p.write(claim(0), 4, 10);
        assert_eq!(p.read(PENDING, 4), 0);
        assert!(!p.notification(0));
    }

    #[test]
    fn pending_bit_stays_when_the_level_drops_before_the_claim() {
        let mut p = plic_with(&[(10, 1)]);
        p.set_level(10, true);
        p.set_level(10, false);
        assert_eq!(p.read(PENDING, 4), 1 << 10);
        assert!(p.notification(0));
        assert_eq!(p.read(claim(0), 4), 10);
        p.write(claim(0), 4, 10);
        assert_eq!(p.read(PENDING, 4), 0);
    }

    #[test]
    fn contexts_are_independent() {
        let mut p = Plic::default();
        p.write(priority(10), 4, 1);
        p.write(enable(1), 4, 1 << 10);
        p.set_level(10, true);
        assert!(!p.notification(0));
        assert!(p.notification(1));
        assert_eq!(p.read(claim(0), 4), 0, "not enabled in context 0");
        assert_eq!(p.read(claim(1), 4), 10);
        assert!(!p.notification(1));
        assert!(!p.notification(2), "no third context");
    }

    #[test]
    fn registers_are_warl() {
        let mut p = Plic::default();
        p.write(priority(10), 4, u64::MAX);
        assert_eq!(p.read(priority(10), 4), u64::from(PRIORITY_MAX));
        p.write(priority(95), 4, 0x1234_5678);
        assert_eq!(p.read(priority(95), 4), 0);
        p.write(threshold(1), 4, 0xffff_fff9);
        assert_eq!(p.read(threshold(1), 4), 1);
        for w in 0..3 {
            p.write(enable(0) + 4 * w, 4, 0xffff_ffff);
        }
        assert_eq!(p.read(enable(0), 4), 0xffff_fffe, "source 0 does not exist");
        assert_eq!(p.read(enable(0) + 8, 4), 0xffff_ffff, "sources 64-95");
        // Pending bits are read-only.
        p.write(PENDING, 4, 0xffff_ffff);
        assert_eq!(p.read(PENDING, 4), 0);
        // Sources that do not exist: no level, no registers.
        p.set_level(0, true);
        p.set_level(SOURCES, true);
        p.set_level(u32::MAX, true);
        assert_eq!(p.read(PENDING, 4), 0);
        assert_eq!(p.read(PENDING + 12, 4), 0);
    }

    /// No offset, size or value panics; reserved offsets, other contexts and accesses that
    /// are not aligned 32-bit ones read 0 and change nothing.
    #[test]
    fn hostile_accesses_are_ignored() {
        let mut p = plic_with(&[(10, 5)]);
        p.write(threshold(0), 4, 2);
        p.set_level(10, true);
        let before = p.clone();
        let offsets = [
            0,
            priority(SOURCES),
            0xffc,
            PENDING + 12,
            0x1ffc,
            enable(0) + 12,
            enable(2),
            0x1f_fffc,
            threshold(0) + 8,
            threshold(0) + 0xffc,
            threshold(2),
            claim(2),
            0x5f_fffc,
            0x60_0000,
            u64::MAX - 3,
        ];
        for off in offsets {
            assert_eq!(p.read(off, 4), 0, "{off:#x}");
            p.write(off, 4, u64::MAX);
        }
        for off in [priority(10), threshold(0), claim(0), enable(0), PENDING] {
            for (delta, size) in [(0, 1), (0, 2), (0, 8), (1, 4), (2, 4), (3, 1), (4, 8)] {
                let at = off + delta;
                assert_eq!(p.read(at, size), 0, "{at:#x}/{size}");
                p.write(at, size, u64::MAX);
            }
        }
        for size in [0, 3, 16, 255] {
            assert_eq!(p.read(claim(0), size), 0);
            p.write(claim(0), size, 10);
        }
        assert_eq!(p, before);
    }
}
