//! AIA interrupt controllers for `vmm run` guests (`--aia aplic-imsic`, the default): each
//! vCPU's hart has an IMSIC, and the VMM, the guest's HS-level hypervisor, gives the guest
//! guest interrupt file 1 of every hart (`hstatus.VGEIN` = 1; AIA "Virtual interrupts for
//! VS level", "Hypervisor and VS CSRs") as its S-level interrupt file, plus an APLIC
//! domain in MSI delivery mode (`devices/aplic.rs`) whose only wired source is the UART.
//!
//! Guest-physical layout (QEMU `virt,aia=aplic-imsic`'s for the S level):
//!
//! | base | size | what |
//! | --- | --- | --- |
//! | [`APLIC_BASE`] (`0x0d00_0000`) | [`APLIC_SIZE`] | the guest's APLIC domain |
//! | [`IMSIC_BASE`] (`0x2800_0000`) | one page per vCPU, rounded up to a power of two | the guest's IMSIC: vCPU `n`'s interrupt file at `IMSIC_BASE + n * 0x1000` |
//!
//! An MSI (an aligned 32-bit store of an identity to a page's `seteipnum_le`, AIA "Memory
//! region for an interrupt file", or an APLIC forward or `genmsi`) is posted to the target
//! vCPU's mailbox ([`vcpu_api::HartMailbox::post_msi`]) and the vCPU is woken if it waits
//! in WFI; its hart sets the pending bit in its guest interrupt file before its next
//! instruction chunk, from whichever thread sent it. Claims (`stopei` from VS, i.e.
//! `vstopei`) and the file's registers (`siselect`/`sireg` 0x70-0xFF) are CSR accesses in
//! the hart: they never exit to the VMM. Every other access to the IMSIC pages is ignored
//! and reads 0.
//!
//! The UART's interrupt (its 16550 IIR logic, `devices/uart.rs`) is APLIC source
//! [`UART_SOURCE`] (10, as on QEMU `virt`): its level is brought up to date after every
//! UART access and after console input is moved into it.
//!
//! Lock order: the UART, then the APLIC, then the SMP state (`Smp::notify`).
//!
//! Snapshots and migration keep the APLIC and the MSIs posted but not yet taken in by a
//! hart ([`AiaState`]); the interrupt files are in each hart's state.

use std::sync::{Arc, Mutex, MutexGuard};

use vcpu_api::HartMailbox;

pub use crate::snapshot::AiaState;

use crate::devices::aplic::Aplic;
pub use crate::devices::aplic::{APLIC_SIZE, NUM_SOURCES};

use super::smp::Smp;

/// The guest's APLIC domain (QEMU `virt`'s supervisor-level APLIC).
pub const APLIC_BASE: u64 = 0x0d00_0000;
/// The guest's IMSIC: one 4 KiB interrupt file page per vCPU (QEMU `virt`'s S-level IMSIC).
pub const IMSIC_BASE: u64 = crate::devices::imsic::IMSIC_S_BASE;
/// Bytes of an interrupt file's page.
pub const IMSIC_PAGE: u64 = crate::devices::imsic::PAGE;
/// Interrupt identities of each interrupt file (`riscv,num-ids`).
pub const IMSIC_IDS: u32 = 255;
/// Guest interrupt files of each hart (GEILEN): the guest gets file 1.
pub const GEILEN: u32 = 1;
/// `hstatus.VGEIN` of every vCPU: the guest interrupt file that is the guest's.
pub const VGEIN: u64 = 1;
/// The APLIC source of the UART.
pub const UART_SOURCE: u32 = 10;

/// The IMSIC of each vCPU's hart: [`IMSIC_IDS`] identities, [`GEILEN`] guest files.
pub(crate) fn imsic_config() -> crate::backend::ImsicConfig {
    crate::backend::ImsicConfig {
        ids: IMSIC_IDS,
        geilen: GEILEN,
    }
}

/// `--aia`: the interrupt controllers of a `vmm run` guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AiaMode {
    /// None: the UART is polled, IPIs go through SBI.
    None,
    /// An IMSIC per vCPU and an APLIC in MSI delivery mode.
    AplicImsic,
}

/// Bytes of the IMSIC window for `vcpus` vCPUs (a power of two pages, so the device tree's
/// hart index bits cover it).
pub fn imsic_window(vcpus: u64) -> u64 {
    vcpus.max(1).next_power_of_two() * IMSIC_PAGE
}

/// The AIA devices of a VM, shared by its hart instances.
pub(crate) struct Aia {
    aplic: Mutex<Aplic>,
    /// Each vCPU's mailbox (vCPU `i`'s at `i`; it follows the vCPU between hart instances).
    mailboxes: Vec<Arc<HartMailbox>>,
    /// With several vCPUs: what wakes one waiting in WFI.
    smp: Option<Arc<Smp>>,
    vcpus: u64,
}

impl std::fmt::Debug for Aia {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aia")
            .field("vcpus", &self.vcpus)
            .finish_non_exhaustive()
    }
}

/// Why a saved [`AiaState`] cannot be restored.
#[derive(Debug, thiserror::Error)]
pub enum AiaRestoreError {
    /// The APLIC's registers are not ones it can hold.
    #[error("the APLIC state: {0}")]
    Aplic(String),
    /// The posted MSIs do not match the vCPUs.
    #[error("posted MSIs for {found} vCPUs of {words} words, the VM has {vcpus} vCPUs of {MAILBOX_WORDS} words")]
    Msis {
        /// vCPUs in the state.
        found: usize,
        /// The largest number of words of one of them.
        words: usize,
        /// vCPUs of the VM.
        vcpus: u64,
    },
}

/// Words of a mailbox's MSI bitmap.
const MAILBOX_WORDS: usize = vcpu_api::MAILBOX_MSI_IDS / 64;

impl Aia {
    /// The devices of a VM whose vCPU `i` has mailbox `mailboxes[i]`; with several vCPUs
    /// `smp` wakes one waiting in WFI.
    pub(crate) fn new(mailboxes: Vec<Arc<HartMailbox>>, smp: Option<Arc<Smp>>) -> Aia {
        Aia {
            aplic: Mutex::new(Aplic::new()),
            vcpus: mailboxes.len() as u64,
            mailboxes,
            smp,
        }
    }

    /// The devices as `saved` has them (checked first: the state is untrusted input), the
    /// MSIs in flight posted again.
    pub(crate) fn restore(
        saved: &AiaState,
        mailboxes: Vec<Arc<HartMailbox>>,
        smp: Option<Arc<Smp>>,
    ) -> Result<Aia, AiaRestoreError> {
        saved.aplic.check().map_err(AiaRestoreError::Aplic)?;
        let words = saved.msis.iter().map(Vec::len).max().unwrap_or(0);
        if saved.msis.len() != mailboxes.len()
            || saved.msis.iter().any(|m| m.len() != MAILBOX_WORDS)
        {
            return Err(AiaRestoreError::Msis {
                found: saved.msis.len(),
                words,
                vcpus: mailboxes.len() as u64,
            });
        }
        for (mailbox, msis) in mailboxes.iter().zip(&saved.msis) {
            for (w, &bits) in msis.iter().enumerate() {
                let mut b = bits;
                while b != 0 {
                    mailbox.post_msi((w * 64) as u32 + b.trailing_zeros());
                    b &= b - 1;
                }
            }
        }
        let aia = Aia::new(mailboxes, smp);
        *aia.aplic() = saved.aplic.clone();
        Ok(aia)
    }

    /// What a snapshot keeps (while no vCPU runs).
    pub(crate) fn save(&self) -> AiaState {
        AiaState {
            aplic: self.aplic().clone(),
            msis: self
                .mailboxes
                .iter()
                .map(|m| m.peek_msis().to_vec())
                .collect(),
        }
    }

    /// The number of vCPUs.
    pub(crate) fn vcpus(&self) -> u64 {
        self.vcpus
    }

    fn aplic(&self) -> MutexGuard<'_, Aplic> {
        self.aplic.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends an MSI of identity `id` to vCPU `hart`'s interrupt file; an MSI to a hart that
    /// does not exist goes nowhere.
    fn send(&self, hart: u32, id: u32) {
        if u64::from(hart) >= self.vcpus {
            return;
        }
        self.mailboxes[hart as usize].post_msi(id);
        if let Some(smp) = &self.smp {
            smp.notify();
        }
    }

    /// A write at `offset` of the IMSIC window: an aligned 32-bit write to a page's
    /// `seteipnum_le` is an MSI to that vCPU; everything else is ignored (reads are 0).
    pub(crate) fn imsic_write(&self, offset: u64, size: u8, value: u64) {
        if size == 4 && offset.is_multiple_of(IMSIC_PAGE) {
            self.send((offset / IMSIC_PAGE) as u32, value as u32);
        }
    }

    /// A read of the APLIC.
    pub(crate) fn aplic_read(&self, offset: u64, size: u8) -> u64 {
        self.aplic().read(offset, size)
    }

    /// A write to the APLIC.
    pub(crate) fn aplic_write(&self, offset: u64, size: u8, value: u64) {
        self.aplic()
            .write(offset, size, value, &mut |h, id| self.send(h, id));
    }

    /// The UART's interrupt line is now `level`.
    pub(crate) fn uart_level(&self, level: bool) {
        self.aplic()
            .set_wire(UART_SOURCE, level, &mut |h, id| self.send(h, id));
    }
}

/// Gives a vCPU's hart to the guest with its interrupt file (after `ctr-virt`'s and
/// `pmu-virt`'s `prepare`, which set `hstateen0` bits of their own): `hstatus.VGEIN` =
/// [`VGEIN`], and the state-enable bits of AIA "Access control by the state-enable CSRs"
/// in `mstateen0` and `hstateen0`: IMSIC (`stopei` and `sireg` at 0x70-0xFF from VS reach
/// the guest file), AIA (`stopi`, which Linux's interrupt controller driver reads with
/// Ssaia) and CSRIND (`siselect`/`sireg`).
pub(crate) fn prepare(hart: &mut impl vcpu_api::Vcpu) {
    use vcpu_api::csr;
    let bits = csr::STATEEN0_IMSIC | csr::STATEEN0_AIA | csr::STATEEN0_CSRIND;
    for num in [csr::MSTATEEN0, csr::HSTATEEN0] {
        let v = hart.host_csr(num).unwrap_or(0);
        hart.set_known_csr(num, v | bits);
    }
    let hstatus = hart.host_csr(csr::HSTATUS).unwrap_or(0) & !csr::HSTATUS_VGEIN;
    hart.set_known_csr(
        csr::HSTATUS,
        hstatus | (VGEIN << csr::HSTATUS_VGEIN.trailing_zeros()),
    );
}
