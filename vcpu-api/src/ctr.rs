//! Control Transfer Records (Smctr/Ssctr v1.0) as a VMM sees them: what a hart implements
//! ([`CtrConfig`], the optional parts of chapters 2, 3 and 6), one buffer entry
//! ([`CtrEntry`], chapter 3 "Entry Registers"), the transfer types (section 6.2
//! "Transfer Type Filtering": table 9 "Control Transfer Type Definitions", and table 10 for
//! jumps) and the cycle-count encoding (section 6.3 "Cycle Counting"). The CSR fields are
//! in [`crate::csr`] and re-exported here.

pub use crate::csr::{
    CTRCTL_BPFRZ, CTRCTL_FILTERS, CTRCTL_LCOFIFRZ, CTRCTL_M, CTRCTL_MTE, CTRCTL_NTBREN,
    CTRCTL_RASEMU, CTRCTL_S, CTRCTL_STE, CTRCTL_U, CTRDATA_CCV, CTRSOURCE_V, SCTRSTATUS_FROZEN,
};

/// Fields every implementation has (Smctr 2.1
/// "Machine Control Transfer Records Control Register (mctrctl)": "All fields are optional
/// except for M, S, U, and BPFRZ").
const MANDATORY: u64 = CTRCTL_U | CTRCTL_S | CTRCTL_M | CTRCTL_BPFRZ;
/// Optional `mctrctl` fields a configuration may implement. The Custom[3:0] bits (Smctr 7
/// "Custom Extensions") are not among them: they are read-only 0.
pub const CTRCTL_OPTIONAL: u64 =
    CTRCTL_RASEMU | CTRCTL_STE | CTRCTL_MTE | CTRCTL_LCOFIFRZ | CTRCTL_FILTERS;
/// `mctrctl` fields not visible in `sctrctl` and absent from `vsctrctl` (Smctr 2.2
/// "Supervisor Control Transfer Records Control Register (sctrctl)").
pub const CTRCTL_M_ONLY: u64 = CTRCTL_M | CTRCTL_MTE;

/// Transfer types (Smctr 6.2 "Transfer Type Filtering", table 9 "Control Transfer Type
/// Definitions"; the E-trace itype encodings).
pub mod ty {
    #![allow(missing_docs)]
    pub const EXCEPTION: u8 = 1;
    pub const INTERRUPT: u8 = 2;
    pub const TRAP_RETURN: u8 = 3;
    pub const NOT_TAKEN_BRANCH: u8 = 4;
    pub const TAKEN_BRANCH: u8 = 5;
    pub const INDIRECT_CALL: u8 = 8;
    pub const DIRECT_CALL: u8 = 9;
    pub const INDIRECT_JUMP: u8 = 10;
    pub const DIRECT_JUMP: u8 = 11;
    pub const CO_ROUTINE_SWAP: u8 = 12;
    pub const FUNCTION_RETURN: u8 = 13;
    pub const OTHER_INDIRECT_JUMP: u8 = 14;
    pub const OTHER_DIRECT_JUMP: u8 = 15;
}

/// Transfer type of a jump (Smctr 6.2 "Transfer Type Filtering", table 10). `rd` and `rs1`
/// are architectural register numbers (x0 = 0); `indirect` is JALR (and C.JR/C.JALR, which
/// expand to JALR), otherwise JAL (and C.J). Only x1 and x5 are link registers.
pub fn jump_type(indirect: bool, rd: u8, rs1: u8) -> u8 {
    let link = |r: u8| r == 1 || r == 5;
    if !indirect {
        return match rd {
            0 => ty::DIRECT_JUMP,
            r if link(r) => ty::DIRECT_CALL,
            _ => ty::OTHER_DIRECT_JUMP,
        };
    }
    match (link(rd), link(rs1)) {
        (true, true) if rd != rs1 => ty::CO_ROUTINE_SWAP,
        (true, _) => ty::INDIRECT_CALL,
        (false, true) => ty::FUNCTION_RETURN,
        (false, false) if rd == 0 => ty::INDIRECT_JUMP,
        (false, false) => ty::OTHER_INDIRECT_JUMP,
    }
}

/// Why a [`CtrConfig`] is not one a hart can have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CtrConfigError {
    /// `depths` names no depth, or one beyond 256.
    #[error("CTR depth set {0:#x} must name at least one of the depths 16-256 (bits 0-4)")]
    Depths(u8),
    /// `ctl_fields` holds bits that are not optional `xctrctl` fields.
    #[error("CTR control fields {0:#x} are not optional xctrctl fields")]
    NotOptional(u64),
    /// MTE without STE or the reverse.
    #[error("CTR external trap recording needs both MTE and STE (Smctr 6.1.2)")]
    ExternalTraps,
    /// More than 4 CCE bits.
    #[error("CTR cycle count exponent has at most 4 bits (Smctr 6.3), not {0}")]
    CceBits(u8),
}

/// What a hart implements of Smctr/Ssctr: the optional parts of chapters 2, 3 and 6 (the
/// depths of 2.4 "Supervisor Control Transfer Records Depth Register (sctrdepth)", the
/// optional fields of 2.1 and 3.3, and 6.3 "Cycle Counting").
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CtrConfig {
    /// Supported `sctrdepth.DEPTH` encodings as a bit set: bit n means depth 2^(n+4)
    /// (0x1f: 16 to 256). The buffer has as many physical entries as the largest depth.
    pub depths: u8,
    /// Optional `xctrctl` fields implemented, within [`CTRCTL_OPTIONAL`]. External trap
    /// recording is MTE and STE together (section 6.1.2 requires both or neither).
    pub ctl_fields: u64,
    /// Whether `ctrdata.TYPE` is implemented.
    pub type_field: bool,
    /// Cycle counting (section 6.3): `None`, or `Some(n)` with n = 0..=4 CCE bits.
    pub cce_bits: Option<u8>,
}

impl CtrConfig {
    /// Everything: depths 16-256, every optional field, TYPE, cycle counting with 4 CCE bits.
    pub fn full() -> CtrConfig {
        CtrConfig {
            depths: 0x1f,
            ctl_fields: CTRCTL_OPTIONAL,
            type_field: true,
            cce_bits: Some(4),
        }
    }

    /// The least the spec allows: depth 16 only, no optional field, no TYPE, no cycle count.
    pub fn minimal() -> CtrConfig {
        CtrConfig {
            depths: 1,
            ctl_fields: 0,
            type_field: false,
            cce_bits: None,
        }
    }

    /// Check the configuration; the error names what is wrong (depths of Smctr 2.4, MTE
    /// with STE as 6.1.2 "External Traps" requires, CCE width of 6.3 "Cycle Counting").
    pub fn validate(&self) -> Result<(), CtrConfigError> {
        if self.depths == 0 || self.depths > 0x1f {
            return Err(CtrConfigError::Depths(self.depths));
        }
        if self.ctl_fields & !CTRCTL_OPTIONAL != 0 {
            return Err(CtrConfigError::NotOptional(
                self.ctl_fields & !CTRCTL_OPTIONAL,
            ));
        }
        if (self.ctl_fields & CTRCTL_MTE == 0) != (self.ctl_fields & CTRCTL_STE == 0) {
            return Err(CtrConfigError::ExternalTraps);
        }
        if let Some(n) = self.cce_bits.filter(|&n| n > 4) {
            return Err(CtrConfigError::CceBits(n));
        }
        Ok(())
    }

    /// Number of physical buffer entries: the largest supported depth.
    pub fn max_depth(&self) -> usize {
        16 << (7 - self.depths.leading_zeros())
    }

    /// Writable bits of `mctrctl` (Smctr 2.1
    /// "Machine Control Transfer Records Control Register (mctrctl)").
    pub fn mctrctl_mask(&self) -> u64 {
        MANDATORY | self.ctl_fields
    }

    /// Writable bits of `ctrdata` (Smctr 3.3
    /// "Control Transfer Record Metadata Register (ctrdata)").
    pub fn ctrdata_mask(&self) -> u64 {
        let t = if self.type_field { 0xf } else { 0 };
        let cc = self
            .cce_bits
            .map_or(0, |n| CTRDATA_CCV | (0xfff << 16) | (((1 << n) - 1) << 28));
        t | cc
    }
}

/// One CTR buffer entry (Smctr chapter 3 "Entry Registers": 3.1 `ctrsource`, 3.2
/// `ctrtarget`, 3.3 `ctrdata`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CtrEntry {
    /// `ctrsource`: PC[63:1] and V.
    pub source: u64,
    /// `ctrtarget`: PC[63:1] and MISP.
    pub target: u64,
    /// `ctrdata`: TYPE, CCV, CC.
    pub data: u64,
}

/// The names of the transfer types (`ctrdata.TYPE`, Smctr chapter 4 "Transfer Type
/// Filtering", table 9), indexed by the type.
pub const TRANSFER_TYPE_NAMES: [&str; 16] = [
    "none",
    "exception",
    "interrupt",
    "trap return",
    "not-taken branch",
    "taken branch",
    "reserved",
    "reserved",
    "indirect call",
    "direct call",
    "indirect jump",
    "direct jump",
    "co-routine swap",
    "function return",
    "other indirect jump",
    "other direct jump",
];

/// One CTR entry decoded for people: what the control socket's `ctr-dump` and the gdb
/// stub's `monitor ctr` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtrRecord {
    /// The source pc (`ctrsource` without V).
    pub source: u64,
    /// The target pc (`ctrtarget` without MISP).
    pub target: u64,
    /// The transfer type's name ([`TRANSFER_TYPE_NAMES`]).
    pub kind: &'static str,
    /// The elapsed cycles (`ctrdata.CC` decoded), `None` when CCV is clear.
    pub cycles: Option<u64>,
}

impl CtrEntry {
    /// The entry decoded, `None` when it is not valid (`ctrsource.V` clear).
    pub fn record(&self) -> Option<CtrRecord> {
        (self.source & 1 != 0).then(|| CtrRecord {
            source: self.source & !1,
            target: self.target & !1,
            kind: TRANSFER_TYPE_NAMES[(self.data & 0xf) as usize],
            cycles: (self.data & (1 << 15) != 0).then(|| decode_cc((self.data >> 16) as u16)),
        })
    }
}

/// The CC field for a CtrCycleCounter value `c` with `cce_bits` exponent bits (Smctr 6.3
/// "Cycle Counting", table 11 "Cycle Counter Size Options"):
/// CCE = 0 below 4096, otherwise the index of the most significant one minus 11, with CCM
/// the 12 bits below that one, so that the value is (2^12 + CCM) << (CCE - 1); all ones when
/// the count does not fit.
pub fn encode_cc(c: u64, cce_bits: u8) -> u16 {
    if c < 4096 {
        return c as u16;
    }
    encode_cc_slow(c, cce_bits)
}

/// [`encode_cc`] for counts of 4096 and more (kept out of line for the hot paths; Smctr 6.3
/// "Cycle Counting").
#[cold]
#[inline(never)]
pub fn encode_cc_slow(c: u64, cce_bits: u8) -> u16 {
    let max_e = (1u64 << cce_bits) - 1;
    let e = (63 - c.leading_zeros() as u64) - 11;
    if e > max_e {
        return (0xfff | (max_e << 12)) as u16;
    }
    (((c >> (e - 1)) & 0xfff) | (e << 12)) as u16
}

/// The elapsed cycles a CC field stands for (the decoding formula of Smctr 6.3
/// "Cycle Counting").
pub fn decode_cc(cc: u16) -> u64 {
    let (m, e) = ((cc & 0xfff) as u64, (cc >> 12) as u64);
    if e == 0 {
        m
    } else {
        (4096 + m) << (e - 1)
    }
}
