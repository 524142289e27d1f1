//! Interrupt and exception injection (the control socket's `inject` request), for testing a
//! guest's handlers: what KVM's `KVM_INTERRUPT` (set and unset) gives for interrupts, and an
//! exception taken at the vCPU's current pc as if its instruction there had raised it.
//!
//! An interrupt that becomes pending is posted to the vCPU's mailbox like an IPI, so it
//! reaches the vCPU at its next run and wakes it from WFI. Everything else (an interrupt
//! cleared, an exception) is queued here and applied by the vCPU's own thread between two
//! runs ([`super::GuestVm::apply_injections`]); the queue is checked with one relaxed
//! atomic load per run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use vcpu_api::trap::{cause, irq};
use vcpu_api::HartMailbox;

/// A VS-level interrupt the VMM can raise (`hvip`; priv. spec 21.2.3 "Hypervisor Interrupt
/// Registers"), by the name of the supervisor interrupt the guest sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestIrq {
    /// `ssi`: supervisor software interrupt (`hvip.VSSIP`; the guest clears it in `sip`).
    Ssi,
    /// `sei`: supervisor external interrupt (`hvip.VSEIP`, pending until cleared again
    /// with `"pending":false`: a level, as a device would hold it).
    Sei,
}

impl GuestIrq {
    /// By name (`ssi`, `sei`) or by the guest's interrupt number (1, 9).
    pub fn parse(v: &serde_json::Value) -> Result<GuestIrq, String> {
        match (v.as_str(), v.as_u64()) {
            (Some("ssi"), _) | (_, Some(1)) => Ok(GuestIrq::Ssi),
            (Some("sei"), _) | (_, Some(9)) => Ok(GuestIrq::Sei),
            _ => Err(format!(
                "\"irq\" is \"ssi\" (1) or \"sei\" (9), got {v} (the supervisor timer is the \
                 guest's own, through SBI set_timer)"
            )),
        }
    }

    /// Its bit in `hvip`.
    pub fn hvip_bit(self) -> u64 {
        match self {
            GuestIrq::Ssi => 1 << irq::VSSI,
            GuestIrq::Sei => 1 << irq::VSEI,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            GuestIrq::Ssi => "ssi",
            GuestIrq::Sei => "sei",
        }
    }
}

/// The exceptions a guest's own instructions can raise into VS-mode, which may be injected.
pub const INJECTABLE_EXCEPTIONS: [u64; 11] = [
    cause::INSN_MISALIGNED,
    cause::INSN_ACCESS,
    cause::ILLEGAL_INSN,
    cause::BREAKPOINT,
    cause::LOAD_MISALIGNED,
    cause::LOAD_ACCESS,
    cause::STORE_MISALIGNED,
    cause::STORE_ACCESS,
    cause::INSN_PAGE_FAULT,
    cause::LOAD_PAGE_FAULT,
    cause::STORE_PAGE_FAULT,
];

/// What a vCPU's thread applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injection {
    /// Clear a pending interrupt.
    ClearIrq(GuestIrq),
    /// Take exception `cause` with `stval` = `tval` at the current pc.
    Exception {
        /// The exception code ([`INJECTABLE_EXCEPTIONS`]).
        cause: u64,
        /// Its `stval`.
        tval: u64,
    },
}

/// One queued injection and where to say at which pc it happened.
struct Queued {
    vcpu: u64,
    injection: Injection,
    done: SyncSender<u64>,
}

/// The VM's queue of injections (shared by its vCPUs and its control socket) and its
/// vCPUs' mailboxes.
pub struct Injections {
    pending: AtomicBool,
    queue: Mutex<Vec<Queued>>,
    mailboxes: Vec<Arc<HartMailbox>>,
}

impl std::fmt::Debug for Injections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Injections")
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl Injections {
    /// For the vCPUs with these mailboxes (by vCPU id).
    pub fn new(mailboxes: Vec<Arc<HartMailbox>>) -> Injections {
        Injections {
            pending: AtomicBool::new(false),
            queue: Mutex::new(Vec::new()),
            mailboxes,
        }
    }

    /// Makes `irq` pending for vCPU `vcpu` (through its mailbox, as an IPI); `false` if
    /// there is no such vCPU.
    pub fn raise(&self, vcpu: u64, irq: GuestIrq) -> bool {
        match self.mailboxes.get(vcpu as usize) {
            Some(m) => {
                m.post_interrupts(irq.hvip_bit());
                true
            }
            None => false,
        }
    }

    /// Queues `injection` for vCPU `vcpu`; the receiver gets the pc where it was applied.
    pub fn push(&self, vcpu: u64, injection: Injection) -> Receiver<u64> {
        let (done, rx) = sync_channel(1);
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.push(Queued {
            vcpu,
            injection,
            done,
        });
        self.pending.store(true, Ordering::Release);
        rx
    }

    /// Whether any injection is queued (for any vCPU).
    pub(crate) fn any_queued(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// The injections queued for vCPU `vcpu` (removed from the queue), each with its
    /// receiver's sender.
    pub(crate) fn take(&self, vcpu: u64) -> Vec<(Injection, SyncSender<u64>)> {
        if !self.pending.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let (mine, others): (Vec<Queued>, Vec<Queued>) = q.drain(..).partition(|x| x.vcpu == vcpu);
        *q = others;
        self.pending.store(!q.is_empty(), Ordering::Release);
        mine.into_iter().map(|x| (x.injection, x.done)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn irq_names_and_queue() {
        assert_eq!(GuestIrq::parse(&json!("ssi")), Ok(GuestIrq::Ssi));
        assert_eq!(GuestIrq::parse(&json!(9)), Ok(GuestIrq::Sei));
        assert!(GuestIrq::parse(&json!("sti"))
            .unwrap_err()
            .contains("set_timer"));
        assert!(GuestIrq::parse(&json!(5)).is_err());
        let inj = Injections::new(vec![Arc::new(HartMailbox::default())]);
        assert!(inj.raise(0, GuestIrq::Sei));
        assert!(!inj.raise(1, GuestIrq::Sei));
        assert!(inj.take(0).is_empty());
        let rx = inj.push(1, Injection::ClearIrq(GuestIrq::Sei));
        let _rx0 = inj.push(0, Injection::Exception { cause: 2, tval: 7 });
        let zero = inj.take(0);
        assert_eq!(zero.len(), 1);
        assert_eq!(zero[0].0, Injection::Exception { cause: 2, tval: 7 });
        let one = inj.take(1);
        assert_eq!(one.len(), 1);
        one[0].1.send(0x8020_0000).unwrap();
        assert_eq!(rx.recv().unwrap(), 0x8020_0000);
        assert!(inj.take(1).is_empty());
    }
}
