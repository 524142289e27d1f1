//! The hart's IMSIC (AIA, chapter "Incoming MSI Controller (IMSIC)"): a machine-level and a
//! supervisor-level interrupt file and GEILEN guest interrupt files, reached through
//! `miselect`/`mireg`, `siselect`/`sireg` and `vsiselect`/`vsireg` (select 0x70-0xFF), the
//! `*topei` CSRs, and MSIs ([`Hart::imsic_send_msi`], the `seteipnum_le` register of
//! "Memory region for an interrupt file"), plus the H extension's `hgeie`/`hgeip`.
//!
//! Choices (all allowed by the AIA):
//! - The number of identities N and GEILEN are configuration ([`ImsicConfig`]); a hart
//!   without an IMSIC (`HartConfig::imsic` = `None`, the default) behaves as before: no
//!   `*topei`, select 0x70-0xFF raises illegal-instruction, GEILEN = 0.
//! - `eidelivery` holds 0 and 1 only (no PLIC/APLIC delivery, value 0x40000000 is not
//!   supported) and resets to 0 ("Reset and revealed state": an UNSPECIFIED valid value).
//!   Every other bit of the interrupt files also resets to 0.
//! - `eithreshold` (WLRL) keeps the low bits needed to hold 0..=N (8 bits for N = 255).
//! - `hstatus.VGEIN` (WLRL) holds any 6-bit value when GEILEN > 0 (read-only zero when
//!   GEILEN = 0); values above GEILEN select no guest interrupt file.
//! - `hstateen0.IMSIC` exists (is writable) whenever the IMSIC does.
//!
//! The interrupt signal of each file ("Interrupt delivery and handling") is `eidelivery` = 1
//! and `*topei` != 0; it is cached ([`Hart::imsic_refresh`], after every change of a file) as
//! `mip.MEIP`, `mip.SEIP` and the bits of `hgeip`. `mip.SGEIP` is `hgeip & hgeie` != 0 and
//! `hip.VSEIP` includes `hgeip` bit VGEIN (H extension, "Hypervisor Interrupt Registers").

use serde::{Deserialize, Serialize};

use super::desc::{CsrDesc, CsrFault};
use super::stateen::gate;
use crate::hart::Hart;
use vcpu_api::csr as num;
use vcpu_api::csr::{HSTATUS_VGEIN, STATEEN0_IMSIC};

/// `*iselect` value of `eidelivery`.
pub const EIDELIVERY: u64 = 0x70;
/// `*iselect` value of `eithreshold`.
pub const EITHRESHOLD: u64 = 0x72;
/// `*iselect` value of `eip0` (`eip0`-`eip63` at 0x80-0xBF).
pub const EIP0: u64 = 0x80;
/// `*iselect` value of `eie0` (`eie0`-`eie63` at 0xC0-0xFF).
pub const EIE0: u64 = 0xc0;

/// Offset of `seteipnum_le` in an interrupt file's page.
pub const SETEIPNUM_LE: u64 = 0x0;
/// Offset of `seteipnum_be` in an interrupt file's page.
pub const SETEIPNUM_BE: u64 = 0x4;

/// The most guest interrupt files a hart can have (GEILEN <= 63 on RV64).
pub const MAX_GEILEN: u32 = 63;

/// What a hart's IMSIC implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImsicConfig {
    /// Interrupt identities per file, N: one less than a multiple of 64, 63..=2047.
    pub ids: u32,
    /// Guest interrupt files, GEILEN: 0..=[`MAX_GEILEN`].
    pub geilen: u32,
}

impl Default for ImsicConfig {
    /// 255 identities (QEMU `virt`'s `riscv,num-ids`) and 7 guest files (the most QEMU
    /// `virt` allows with `aia-guests`).
    fn default() -> Self {
        ImsicConfig {
            ids: 255,
            geilen: 7,
        }
    }
}

/// Why an [`ImsicConfig`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImsicConfigError {
    /// N is not 63, 127, ... 2047.
    #[error("{0} IMSIC interrupt identities: must be one less than a multiple of 64, 63..=2047")]
    Ids(u32),
    /// GEILEN is too large.
    #[error("GEILEN = {0}: at most {MAX_GEILEN} guest interrupt files")]
    Geilen(u32),
}

impl ImsicConfig {
    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), ImsicConfigError> {
        if !(63..=2047).contains(&self.ids) || !(self.ids + 1).is_multiple_of(64) {
            return Err(ImsicConfigError::Ids(self.ids));
        }
        if self.geilen > MAX_GEILEN {
            return Err(ImsicConfigError::Geilen(self.geilen));
        }
        Ok(())
    }
}

/// Which interrupt file of a hart's IMSIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterruptFileId {
    /// The machine-level file.
    Machine,
    /// The supervisor-level file.
    Supervisor,
    /// Guest interrupt file 1..=GEILEN.
    Guest(u32),
}

impl InterruptFileId {
    /// Index into [`ImsicState::files`].
    fn index(self) -> usize {
        match self {
            InterruptFileId::Machine => 0,
            InterruptFileId::Supervisor => 1,
            InterruptFileId::Guest(g) => 1 + g as usize,
        }
    }
}

/// Why an MSI was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MsiError {
    /// The hart has no IMSIC.
    #[error("the hart has no IMSIC")]
    NoImsic,
    /// The guest interrupt file does not exist (0 or above GEILEN).
    #[error("guest interrupt file {0} does not exist")]
    NoFile(u32),
}

/// One interrupt file ("Indirectly accessed interrupt-file registers").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptFile {
    /// `eidelivery` (0 or 1).
    pub eidelivery: u64,
    /// `eithreshold`.
    pub eithreshold: u64,
    /// The `eip` array, 64 identities per word (`eip0`, `eip2`, ... on RV64).
    pub eip: Vec<u64>,
    /// The `eie` array, like `eip`.
    pub eie: Vec<u64>,
}

impl InterruptFile {
    fn new(ids: u32) -> Self {
        let words = (ids as usize + 1) / 64;
        InterruptFile {
            eidelivery: 0,
            eithreshold: 0,
            eip: vec![0; words],
            eie: vec![0; words],
        }
    }

    /// `*topei`: the lowest pending-and-enabled identity below a nonzero `eithreshold`, in
    /// bits 26:16 and 10:0; 0 if none.
    pub fn topei(&self) -> u64 {
        for (w, (p, e)) in self.eip.iter().zip(&self.eie).enumerate() {
            let m = p & e;
            if m != 0 {
                let id = w as u64 * 64 + u64::from(m.trailing_zeros());
                if self.eithreshold != 0 && id >= self.eithreshold {
                    return 0;
                }
                return (id << 16) | id;
            }
        }
        0
    }

    /// The interrupt signal to the hart.
    fn signal(&self) -> bool {
        self.eidelivery == 1 && self.topei() != 0
    }

    /// Sets the pending bit of `id` if it is implemented (`seteipnum_le`).
    fn set_pending(&mut self, id: u64) {
        let w = (id / 64) as usize;
        if id != 0 && w < self.eip.len() {
            self.eip[w] |= 1 << (id % 64);
        }
    }

    /// A `*topei` write: clears the pending bit `*topei` reports.
    fn claim(&mut self) {
        let id = self.topei() >> 16;
        if id != 0 {
            self.eip[(id / 64) as usize] &= !(1 << (id % 64));
        }
    }

    /// The register at select `sel` (0x70-0xFF, even eip/eie numbers); reserved numbers
    /// read 0.
    fn read(&self, sel: u64) -> u64 {
        let word = |a: &[u64], k: u64| a.get((k / 2) as usize).copied().unwrap_or(0);
        match sel {
            EIDELIVERY => self.eidelivery,
            EITHRESHOLD => self.eithreshold,
            0x80..=0xbf => word(&self.eip, sel - EIP0),
            0xc0..=0xff => word(&self.eie, sel - EIE0),
            _ => 0,
        }
    }

    /// Writes the register at select `sel`; reserved numbers ignore writes. Bit 0 of `eip0`
    /// and `eie0` (identity 0) is read-only zero.
    fn write(&mut self, sel: u64, v: u64, ids: u32) {
        let set = |a: &mut [u64], k: u64| {
            let k = (k / 2) as usize;
            if let Some(w) = a.get_mut(k) {
                *w = if k == 0 { v & !1 } else { v };
            }
        };
        match sel {
            EIDELIVERY => self.eidelivery = v & 1,
            EITHRESHOLD => self.eithreshold = v & ((u64::from(ids) + 1).next_power_of_two() - 1),
            0x80..=0xbf => set(&mut self.eip, sel - EIP0),
            0xc0..=0xff => set(&mut self.eie, sel - EIE0),
            _ => {}
        }
    }
}

/// The IMSIC state of a hart: its interrupt files and `hgeie`. Empty on a hart without an
/// IMSIC.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImsicState {
    /// Identities per file, N (0 without an IMSIC).
    pub ids: u32,
    /// The machine-level file, the supervisor-level file, then guest files 1..=GEILEN.
    pub files: Vec<InterruptFile>,
    /// `hgeie` (bits 1..=GEILEN).
    pub hgeie: u64,
}

impl ImsicState {
    /// The reset state of an IMSIC configured as `config` (`None`: no IMSIC).
    pub fn new(config: Option<ImsicConfig>) -> Self {
        match config {
            None => ImsicState::default(),
            Some(c) => ImsicState {
                ids: c.ids,
                files: (0..c.geilen + 2)
                    .map(|_| InterruptFile::new(c.ids))
                    .collect(),
                hgeie: 0,
            },
        }
    }

    /// This IMSIC at reset.
    pub fn reset(&self) -> ImsicState {
        let files = self.files.len();
        ImsicState {
            ids: self.ids,
            files: (0..files).map(|_| InterruptFile::new(self.ids)).collect(),
            hgeie: 0,
        }
    }

    /// Whether the hart has an IMSIC.
    #[inline]
    pub fn present(&self) -> bool {
        !self.files.is_empty()
    }

    /// GEILEN.
    #[inline]
    pub fn geilen(&self) -> u32 {
        self.files.len().saturating_sub(2) as u32
    }

    /// Whether `other` fits an IMSIC of this shape (same N and GEILEN, arrays of the right
    /// length); `Some(reason)` if not.
    pub fn check_shape(&self, other: &ImsicState) -> Option<String> {
        if other.ids != self.ids || other.files.len() != self.files.len() {
            return Some(format!(
                "the state has an IMSIC of {} identities and {} interrupt files, this hart {} \
                 and {}",
                other.ids,
                other.files.len(),
                self.ids,
                self.files.len()
            ));
        }
        let words = (self.ids as usize + 1) / 64;
        // Identity 0 does not exist: bit 0 of eip0/eie0 is read-only zero.
        let bad = |f: &InterruptFile| {
            f.eip.len() != words
                || f.eie.len() != words
                || f.eidelivery > 1
                || (f.eip[0] | f.eie[0]) & 1 != 0
        };
        if other.files.iter().any(bad) {
            return Some(
                "an IMSIC interrupt file has the wrong size, eidelivery or identity 0".into(),
            );
        }
        if other.hgeie & !self.hgeie_writable() != 0 {
            return Some(format!("hgeie = {:#x} has bits above GEILEN", other.hgeie));
        }
        None
    }

    /// Writable bits of `hgeie`: 1..=GEILEN.
    fn hgeie_writable(&self) -> u64 {
        let g = self.geilen();
        ((1u64 << g) - 1) << 1
    }

    /// The guest file `vgein` names, if it exists.
    fn guest(&self, vgein: u64) -> Option<usize> {
        (vgein != 0 && vgein <= u64::from(self.geilen())).then_some(1 + vgein as usize)
    }
}

const MEIP: u64 = 1 << vcpu_api::trap::irq::MEI;
const SEIP: u64 = 1 << vcpu_api::trap::irq::SEI;

impl Hart {
    /// `hstatus.VGEIN`.
    #[inline]
    fn vgein(&self) -> u64 {
        (self.csr.h.hstatus & HSTATUS_VGEIN) >> 12
    }

    /// The index of the guest file `hstatus.VGEIN` selects, if it exists.
    fn vs_file(&self) -> Option<usize> {
        self.imsic.guest(self.vgein())
    }

    /// Recomputes the cached interrupt signals (`imsic_mip`, `hgeip`) from the files.
    pub(crate) fn imsic_refresh(&mut self) {
        let f = &self.imsic.files;
        let mut mip = 0;
        let mut hgeip = 0;
        for (i, file) in f.iter().enumerate() {
            if file.signal() {
                match i {
                    0 => mip |= MEIP,
                    1 => mip |= SEIP,
                    g => hgeip |= 1 << (g - 1),
                }
            }
        }
        self.imsic_mip = mip;
        self.hgeip = hgeip;
    }

    /// `mip` bits the IMSIC drives: MEIP, SEIP, SGEIP (`hgeip & hgeie`), and VSEIP (guest
    /// file VGEIN). Zero without an IMSIC.
    #[inline]
    pub(crate) fn imsic_lines(&self) -> u64 {
        use vcpu_api::trap::irq;
        let sgei = u64::from(self.hgeip & self.imsic.hgeie != 0) << irq::SGEI;
        let vsei = ((self.hgeip >> self.vgein()) & 1) << irq::VSEI;
        self.imsic_mip | sgei | vsei
    }

    /// Whether the hart has guest interrupt files (SGEI exists: `mideleg`/`mie` bit 12).
    #[inline]
    pub(crate) fn has_sgei(&self) -> bool {
        self.imsic.geilen() > 0
    }

    /// `1 << SGEI` when GEILEN > 0 (then `mideleg` bit 12 is read-only one and `mie`/`hie`
    /// bit 12 writable, H extension), else 0.
    #[inline]
    pub(crate) fn sgei_bit(&self) -> u64 {
        u64::from(self.has_sgei()) << vcpu_api::trap::irq::SGEI
    }

    /// `hgeip`.
    pub fn hgeip(&self) -> u64 {
        self.hgeip
    }

    /// Writable bits of `hstatus` beyond the fixed ones: VGEIN when GEILEN > 0.
    pub(crate) fn hstatus_vgein_writable(&self) -> u64 {
        if self.has_sgei() {
            HSTATUS_VGEIN
        } else {
            0
        }
    }

    /// Delivers an MSI: writes identity `id` to `seteipnum_le` of interrupt file `file`
    /// ("Memory region for an interrupt file"). An identity that is not implemented is
    /// ignored, as the register ignores it.
    pub fn imsic_send_msi(&mut self, file: InterruptFileId, id: u64) -> Result<(), MsiError> {
        if !self.imsic.present() {
            return Err(MsiError::NoImsic);
        }
        if let InterruptFileId::Guest(g) = file {
            if g == 0 || g > self.imsic.geilen() {
                return Err(MsiError::NoFile(g));
            }
        }
        self.imsic.files[file.index()].set_pending(id);
        self.imsic_refresh();
        Ok(())
    }

    /// MSIs posted to the mailbox for the vCPU's guest interrupt file (bit `i` of word
    /// `i / 64` is identity `i`): set pending in the file `hstatus.VGEIN` selects; dropped
    /// when it selects none (as writes to a page no file answers would be).
    #[cold]
    pub(crate) fn take_posted_msis(&mut self, msis: &[u64]) {
        let Some(i) = self.vs_file() else {
            return;
        };
        let ids = self.imsic.ids;
        for (w, &bits) in msis.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let id = (w * 64) as u64 + u64::from(bits.trailing_zeros());
                bits &= bits - 1;
                if id <= u64::from(ids) {
                    self.imsic.files[i].set_pending(id);
                }
            }
        }
        self.imsic_refresh();
    }

    /// The IMSIC's state (empty without an IMSIC).
    pub fn imsic_state(&self) -> &ImsicState {
        &self.imsic
    }
}

/// `mireg` at 0x70-0xFF: the machine-level file. Odd `eip`/`eie` numbers do not exist on
/// RV64 ("External interrupt-pending registers").
pub(super) fn check_m(h: &Hart, sel: u64, _: bool) -> Result<(), CsrFault> {
    if !h.imsic.present() || (sel >= EIP0 && sel & 1 != 0) {
        return Err(CsrFault::Illegal);
    }
    Ok(())
}

/// `sireg` at 0x70-0xFF (V = 0): `mstateen0.IMSIC`, then as at M level.
pub(super) fn check_s(h: &Hart, sel: u64, w: bool) -> Result<(), CsrFault> {
    if h.imsic.present() {
        gate(h, 0, STATEEN0_IMSIC)?;
    }
    check_m(h, sel, w)
}

/// `vsireg` (and `sireg` with V = 1) at 0x70-0xFF: `mstateen0.IMSIC` and `hstateen0.IMSIC`
/// first (AIA "Access control by the state-enable CSRs"), then the register is accessible
/// only while VGEIN names a guest file (AIA "Hypervisor and VS CSRs"); an inaccessible or
/// odd-numbered register raises virtual-instruction from VS-mode, else illegal-instruction.
pub(super) fn check_vs(h: &Hart, sel: u64, _: bool) -> Result<(), CsrFault> {
    let fault = if h.virt {
        CsrFault::Virtual
    } else {
        CsrFault::Illegal
    };
    if h.imsic.present() {
        gate(h, 0, STATEEN0_IMSIC)?;
    }
    if h.vs_file().is_none() || (sel >= EIP0 && sel & 1 != 0) {
        return Err(fault);
    }
    Ok(())
}

pub(super) fn read_m(h: &Hart, sel: u64) -> u64 {
    h.imsic.files.first().map_or(0, |f| f.read(sel))
}

pub(super) fn read_s(h: &Hart, sel: u64) -> u64 {
    h.imsic.files.get(1).map_or(0, |f| f.read(sel))
}

pub(super) fn read_vs(h: &Hart, sel: u64) -> u64 {
    h.vs_file().map_or(0, |i| h.imsic.files[i].read(sel))
}

fn write_file(h: &mut Hart, i: Option<usize>, sel: u64, v: u64) {
    let ids = h.imsic.ids;
    if let Some(f) = i.and_then(|i| h.imsic.files.get_mut(i)) {
        f.write(sel, v, ids);
        h.imsic_refresh();
    }
}

pub(super) fn write_m(h: &mut Hart, sel: u64, v: u64) {
    write_file(h, Some(0), sel, v);
}

pub(super) fn write_s(h: &mut Hart, sel: u64, v: u64) {
    write_file(h, Some(1), sel, v);
}

pub(super) fn write_vs(h: &mut Hart, sel: u64, v: u64) {
    let i = h.vs_file();
    write_file(h, i, sel, v);
}

fn claim(h: &mut Hart, i: Option<usize>) {
    if let Some(f) = i.and_then(|i| h.imsic.files.get_mut(i)) {
        f.claim();
        h.imsic_refresh();
    }
}

fn topei_of(h: &Hart, i: Option<usize>) -> u64 {
    i.and_then(|i| h.imsic.files.get(i))
        .map_or(0, InterruptFile::topei)
}

impl Hart {
    /// `vstopei` of the guest file VGEIN selects (0 if none): for `vstopi`.
    pub(crate) fn vstopei(&self) -> u64 {
        topei_of(self, self.vs_file())
    }
}

/// `mtopei`: only with an IMSIC.
fn mtopei_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.imsic.present() {
        Ok(())
    } else {
        Err(CsrFault::Illegal)
    }
}

/// `stopei`: with V = 0, only with an IMSIC and `mstateen0.IMSIC`; with V = 1 it is
/// `vstopei`: the stateen bits, then virtual-instruction unless VGEIN names a guest file
/// (with or without an IMSIC, AIA "Access control by the state-enable CSRs").
fn stopei_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.imsic.present() {
        gate(h, 0, STATEEN0_IMSIC)?;
    }
    if h.virt {
        if h.vs_file().is_none() {
            return Err(CsrFault::Virtual);
        }
        Ok(())
    } else {
        mtopei_check(h, false)
    }
}

/// `vstopei` from M/HS: `mstateen0.IMSIC`, then illegal-instruction unless VGEIN names a
/// guest file (AIA "Hypervisor and VS CSRs").
fn vstopei_check(h: &Hart, _: bool) -> Result<(), CsrFault> {
    if h.imsic.present() {
        gate(h, 0, STATEEN0_IMSIC)?;
    }
    if h.vs_file().is_none() {
        return Err(CsrFault::Illegal);
    }
    Ok(())
}

/// Whether HS-mode could access `stopei`/`vstopei` (VS/VU then get virtual-instruction).
pub(crate) fn hs_could_access(h: &Hart) -> bool {
    !h.imsic.present() || super::stateen::hs_allowed(h, 0, STATEEN0_IMSIC)
}

/// `hgeie` writes: bits 1..=GEILEN.
pub(crate) fn write_hgeie(h: &mut Hart, v: u64) {
    h.imsic.hgeie = v & h.imsic.hgeie_writable();
}

/// `hgeie`.
pub(crate) fn read_hgeie(h: &Hart) -> u64 {
    h.imsic.hgeie
}

/// The `*topei` CSRs, sorted by number. A write claims (the value written is ignored).
pub(super) static TABLE: &[CsrDesc] = &[
    csr!(
        num::STOPEI,
        stopei_check,
        |h| topei_of(h, Some(1)),
        Some(|h, _| claim(h, Some(1)))
    ),
    csr!(
        num::VSTOPEI,
        vstopei_check,
        |h| h.vstopei(),
        Some(|h, _| {
            let i = h.vs_file();
            claim(h, i)
        })
    ),
    csr!(
        num::MTOPEI,
        mtopei_check,
        |h| topei_of(h, Some(0)),
        Some(|h, _| claim(h, Some(0)))
    ),
];
