//! CSR numbers and fields, defined once for the whole project (Rust here, C through the
//! generated header `guest/sdk/include/csr.h`, see [`c_header`]).
//!
//! Numbers are the privileged and unprivileged specifications' ("CSR Listing" tables), the H
//! extension's, Smstateen's, Smcsrind's, Smaia's, Sstc's, Smctr's, Sdtrig's (debug spec) and the performance
//! extensions'. The draft extensions without assigned numbers (Sspesa, Smpdis) use the
//! project's provisional numbers (`crate::pmu::DraftNumbers::PROVISIONAL`); a hart may be
//! configured with others.
//!
//! Which of these a given hart implements is the hart's business (its CSR table); this module
//! only names them.

/// The CSR numbers: one `pub const NAME: u16` per CSR and [`ALL`], the table of every
/// (number, spec name), sorted by number.
macro_rules! csrs {
    ($($name:ident = $num:literal, $spec:literal;)*) => {
        $(
            #[doc = concat!("`", $spec, "`")]
            pub const $name: u16 = $num;
        )*
        /// Every CSR this project names: (number, name as the spec writes it), sorted by number.
        pub static ALL: &[(u16, &str)] = &[$(($num, $spec),)*];
    };
}

csrs! {
    FFLAGS = 0x001, "fflags";
    FRM = 0x002, "frm";
    FCSR = 0x003, "fcsr";
    SSTATUS = 0x100, "sstatus";
    SIE = 0x104, "sie";
    STVEC = 0x105, "stvec";
    SCOUNTEREN = 0x106, "scounteren";
    SENVCFG = 0x10a, "senvcfg";
    SSTATEEN0 = 0x10c, "sstateen0";
    SSTATEEN1 = 0x10d, "sstateen1";
    SSTATEEN2 = 0x10e, "sstateen2";
    SSTATEEN3 = 0x10f, "sstateen3";
    SCOUNTINHIBIT = 0x120, "scountinhibit";
    SSCRATCH = 0x140, "sscratch";
    SEPC = 0x141, "sepc";
    SCAUSE = 0x142, "scause";
    STVAL = 0x143, "stval";
    SIP = 0x144, "sip";
    STIMECMP = 0x14d, "stimecmp";
    SCTRCTL = 0x14e, "sctrctl";
    SCTRSTATUS = 0x14f, "sctrstatus";
    SISELECT = 0x150, "siselect";
    SIREG = 0x151, "sireg";
    SIREG2 = 0x152, "sireg2";
    SIREG3 = 0x153, "sireg3";
    SIREG4 = 0x155, "sireg4";
    SIREG5 = 0x156, "sireg5";
    SIREG6 = 0x157, "sireg6";
    STOPEI = 0x15c, "stopei";
    SCTRDEPTH = 0x15f, "sctrdepth";
    SATP = 0x180, "satp";
    VSSTATUS = 0x200, "vsstatus";
    VSIE = 0x204, "vsie";
    VSTVEC = 0x205, "vstvec";
    VSSCRATCH = 0x240, "vsscratch";
    VSEPC = 0x241, "vsepc";
    VSCAUSE = 0x242, "vscause";
    VSTVAL = 0x243, "vstval";
    VSIP = 0x244, "vsip";
    VSTIMECMP = 0x24d, "vstimecmp";
    VSCTRCTL = 0x24e, "vsctrctl";
    VSISELECT = 0x250, "vsiselect";
    VSIREG = 0x251, "vsireg";
    VSIREG2 = 0x252, "vsireg2";
    VSIREG3 = 0x253, "vsireg3";
    VSIREG4 = 0x255, "vsireg4";
    VSIREG5 = 0x256, "vsireg5";
    VSIREG6 = 0x257, "vsireg6";
    VSTOPEI = 0x25c, "vstopei";
    VSATP = 0x280, "vsatp";
    MSTATUS = 0x300, "mstatus";
    MISA = 0x301, "misa";
    MEDELEG = 0x302, "medeleg";
    MIDELEG = 0x303, "mideleg";
    MIE = 0x304, "mie";
    MTVEC = 0x305, "mtvec";
    MCOUNTEREN = 0x306, "mcounteren";
    MVIEN = 0x308, "mvien";
    MVIP = 0x309, "mvip";
    MENVCFG = 0x30a, "menvcfg";
    MSTATEEN0 = 0x30c, "mstateen0";
    MSTATEEN1 = 0x30d, "mstateen1";
    MSTATEEN2 = 0x30e, "mstateen2";
    MSTATEEN3 = 0x30f, "mstateen3";
    MCOUNTINHIBIT = 0x320, "mcountinhibit";
    MCYCLECFG = 0x321, "mcyclecfg";
    MINSTRETCFG = 0x322, "minstretcfg";
    MHPMEVENT3 = 0x323, "mhpmevent3";
    MHPMEVENT4 = 0x324, "mhpmevent4";
    MHPMEVENT5 = 0x325, "mhpmevent5";
    MHPMEVENT6 = 0x326, "mhpmevent6";
    MHPMEVENT7 = 0x327, "mhpmevent7";
    MHPMEVENT8 = 0x328, "mhpmevent8";
    MHPMEVENT9 = 0x329, "mhpmevent9";
    MHPMEVENT10 = 0x32a, "mhpmevent10";
    MHPMEVENT11 = 0x32b, "mhpmevent11";
    MHPMEVENT12 = 0x32c, "mhpmevent12";
    MHPMEVENT13 = 0x32d, "mhpmevent13";
    MHPMEVENT14 = 0x32e, "mhpmevent14";
    MHPMEVENT15 = 0x32f, "mhpmevent15";
    MHPMEVENT16 = 0x330, "mhpmevent16";
    MHPMEVENT17 = 0x331, "mhpmevent17";
    MHPMEVENT18 = 0x332, "mhpmevent18";
    MHPMEVENT19 = 0x333, "mhpmevent19";
    MHPMEVENT20 = 0x334, "mhpmevent20";
    MHPMEVENT21 = 0x335, "mhpmevent21";
    MHPMEVENT22 = 0x336, "mhpmevent22";
    MHPMEVENT23 = 0x337, "mhpmevent23";
    MHPMEVENT24 = 0x338, "mhpmevent24";
    MHPMEVENT25 = 0x339, "mhpmevent25";
    MHPMEVENT26 = 0x33a, "mhpmevent26";
    MHPMEVENT27 = 0x33b, "mhpmevent27";
    MHPMEVENT28 = 0x33c, "mhpmevent28";
    MHPMEVENT29 = 0x33d, "mhpmevent29";
    MHPMEVENT30 = 0x33e, "mhpmevent30";
    MHPMEVENT31 = 0x33f, "mhpmevent31";
    MSCRATCH = 0x340, "mscratch";
    MEPC = 0x341, "mepc";
    MCAUSE = 0x342, "mcause";
    MTVAL = 0x343, "mtval";
    MIP = 0x344, "mip";
    MTINST = 0x34a, "mtinst";
    MTVAL2 = 0x34b, "mtval2";
    MCTRCTL = 0x34e, "mctrctl";
    MISELECT = 0x350, "miselect";
    MIREG = 0x351, "mireg";
    MIREG2 = 0x352, "mireg2";
    MIREG3 = 0x353, "mireg3";
    MIREG4 = 0x355, "mireg4";
    MIREG5 = 0x356, "mireg5";
    MIREG6 = 0x357, "mireg6";
    MTOPEI = 0x35c, "mtopei";
    PMPCFG0 = 0x3a0, "pmpcfg0";
    PMPCFG2 = 0x3a2, "pmpcfg2";
    PMPCFG4 = 0x3a4, "pmpcfg4";
    PMPCFG6 = 0x3a6, "pmpcfg6";
    PMPCFG8 = 0x3a8, "pmpcfg8";
    PMPCFG10 = 0x3aa, "pmpcfg10";
    PMPCFG12 = 0x3ac, "pmpcfg12";
    PMPCFG14 = 0x3ae, "pmpcfg14";
    PMPADDR0 = 0x3b0, "pmpaddr0";
    PMPADDR1 = 0x3b1, "pmpaddr1";
    PMPADDR2 = 0x3b2, "pmpaddr2";
    PMPADDR3 = 0x3b3, "pmpaddr3";
    PMPADDR4 = 0x3b4, "pmpaddr4";
    PMPADDR5 = 0x3b5, "pmpaddr5";
    PMPADDR6 = 0x3b6, "pmpaddr6";
    PMPADDR7 = 0x3b7, "pmpaddr7";
    PMPADDR8 = 0x3b8, "pmpaddr8";
    PMPADDR9 = 0x3b9, "pmpaddr9";
    PMPADDR10 = 0x3ba, "pmpaddr10";
    PMPADDR11 = 0x3bb, "pmpaddr11";
    PMPADDR12 = 0x3bc, "pmpaddr12";
    PMPADDR13 = 0x3bd, "pmpaddr13";
    PMPADDR14 = 0x3be, "pmpaddr14";
    PMPADDR15 = 0x3bf, "pmpaddr15";
    PMPADDR16 = 0x3c0, "pmpaddr16";
    PMPADDR17 = 0x3c1, "pmpaddr17";
    PMPADDR18 = 0x3c2, "pmpaddr18";
    PMPADDR19 = 0x3c3, "pmpaddr19";
    PMPADDR20 = 0x3c4, "pmpaddr20";
    PMPADDR21 = 0x3c5, "pmpaddr21";
    PMPADDR22 = 0x3c6, "pmpaddr22";
    PMPADDR23 = 0x3c7, "pmpaddr23";
    PMPADDR24 = 0x3c8, "pmpaddr24";
    PMPADDR25 = 0x3c9, "pmpaddr25";
    PMPADDR26 = 0x3ca, "pmpaddr26";
    PMPADDR27 = 0x3cb, "pmpaddr27";
    PMPADDR28 = 0x3cc, "pmpaddr28";
    PMPADDR29 = 0x3cd, "pmpaddr29";
    PMPADDR30 = 0x3ce, "pmpaddr30";
    PMPADDR31 = 0x3cf, "pmpaddr31";
    PMPADDR32 = 0x3d0, "pmpaddr32";
    PMPADDR33 = 0x3d1, "pmpaddr33";
    PMPADDR34 = 0x3d2, "pmpaddr34";
    PMPADDR35 = 0x3d3, "pmpaddr35";
    PMPADDR36 = 0x3d4, "pmpaddr36";
    PMPADDR37 = 0x3d5, "pmpaddr37";
    PMPADDR38 = 0x3d6, "pmpaddr38";
    PMPADDR39 = 0x3d7, "pmpaddr39";
    PMPADDR40 = 0x3d8, "pmpaddr40";
    PMPADDR41 = 0x3d9, "pmpaddr41";
    PMPADDR42 = 0x3da, "pmpaddr42";
    PMPADDR43 = 0x3db, "pmpaddr43";
    PMPADDR44 = 0x3dc, "pmpaddr44";
    PMPADDR45 = 0x3dd, "pmpaddr45";
    PMPADDR46 = 0x3de, "pmpaddr46";
    PMPADDR47 = 0x3df, "pmpaddr47";
    PMPADDR48 = 0x3e0, "pmpaddr48";
    PMPADDR49 = 0x3e1, "pmpaddr49";
    PMPADDR50 = 0x3e2, "pmpaddr50";
    PMPADDR51 = 0x3e3, "pmpaddr51";
    PMPADDR52 = 0x3e4, "pmpaddr52";
    PMPADDR53 = 0x3e5, "pmpaddr53";
    PMPADDR54 = 0x3e6, "pmpaddr54";
    PMPADDR55 = 0x3e7, "pmpaddr55";
    PMPADDR56 = 0x3e8, "pmpaddr56";
    PMPADDR57 = 0x3e9, "pmpaddr57";
    PMPADDR58 = 0x3ea, "pmpaddr58";
    PMPADDR59 = 0x3eb, "pmpaddr59";
    PMPADDR60 = 0x3ec, "pmpaddr60";
    PMPADDR61 = 0x3ed, "pmpaddr61";
    PMPADDR62 = 0x3ee, "pmpaddr62";
    PMPADDR63 = 0x3ef, "pmpaddr63";
    SHPMSPC = 0x5c0, "shpmspc";
    SHPMSDATA = 0x5c1, "shpmsdata";
    SPDISCTL = 0x5c2, "spdisctl";
    SPDISCOUNTER = 0x5c3, "spdiscounter";
    SPDISEVMASK = 0x5c4, "spdisevmask";
    SPDISEVMATCH = 0x5c5, "spdisevmatch";
    SPDISFILTER = 0x5c6, "spdisfilter";
    HSTATUS = 0x600, "hstatus";
    HEDELEG = 0x602, "hedeleg";
    HIDELEG = 0x603, "hideleg";
    HIE = 0x604, "hie";
    HTIMEDELTA = 0x605, "htimedelta";
    HCOUNTEREN = 0x606, "hcounteren";
    HGEIE = 0x607, "hgeie";
    HVIEN = 0x608, "hvien";
    HVICTL = 0x609, "hvictl";
    HENVCFG = 0x60a, "henvcfg";
    HSTATEEN0 = 0x60c, "hstateen0";
    HSTATEEN1 = 0x60d, "hstateen1";
    HSTATEEN2 = 0x60e, "hstateen2";
    HSTATEEN3 = 0x60f, "hstateen3";
    HTVAL = 0x643, "htval";
    HIP = 0x644, "hip";
    HVIP = 0x645, "hvip";
    HVIPRIO1 = 0x646, "hviprio1";
    HVIPRIO2 = 0x647, "hviprio2";
    HTINST = 0x64a, "htinst";
    HGATP = 0x680, "hgatp";
    VSPDISCTL = 0x6c0, "vspdisctl";
    TSELECT = 0x7a0, "tselect";
    TDATA1 = 0x7a1, "tdata1";
    TDATA2 = 0x7a2, "tdata2";
    TDATA3 = 0x7a3, "tdata3";
    TINFO = 0x7a4, "tinfo";
    MPDISCTL = 0x7c0, "mpdisctl";
    MCYCLE = 0xb00, "mcycle";
    MINSTRET = 0xb02, "minstret";
    MHPMCOUNTER3 = 0xb03, "mhpmcounter3";
    MHPMCOUNTER4 = 0xb04, "mhpmcounter4";
    MHPMCOUNTER5 = 0xb05, "mhpmcounter5";
    MHPMCOUNTER6 = 0xb06, "mhpmcounter6";
    MHPMCOUNTER7 = 0xb07, "mhpmcounter7";
    MHPMCOUNTER8 = 0xb08, "mhpmcounter8";
    MHPMCOUNTER9 = 0xb09, "mhpmcounter9";
    MHPMCOUNTER10 = 0xb0a, "mhpmcounter10";
    MHPMCOUNTER11 = 0xb0b, "mhpmcounter11";
    MHPMCOUNTER12 = 0xb0c, "mhpmcounter12";
    MHPMCOUNTER13 = 0xb0d, "mhpmcounter13";
    MHPMCOUNTER14 = 0xb0e, "mhpmcounter14";
    MHPMCOUNTER15 = 0xb0f, "mhpmcounter15";
    MHPMCOUNTER16 = 0xb10, "mhpmcounter16";
    MHPMCOUNTER17 = 0xb11, "mhpmcounter17";
    MHPMCOUNTER18 = 0xb12, "mhpmcounter18";
    MHPMCOUNTER19 = 0xb13, "mhpmcounter19";
    MHPMCOUNTER20 = 0xb14, "mhpmcounter20";
    MHPMCOUNTER21 = 0xb15, "mhpmcounter21";
    MHPMCOUNTER22 = 0xb16, "mhpmcounter22";
    MHPMCOUNTER23 = 0xb17, "mhpmcounter23";
    MHPMCOUNTER24 = 0xb18, "mhpmcounter24";
    MHPMCOUNTER25 = 0xb19, "mhpmcounter25";
    MHPMCOUNTER26 = 0xb1a, "mhpmcounter26";
    MHPMCOUNTER27 = 0xb1b, "mhpmcounter27";
    MHPMCOUNTER28 = 0xb1c, "mhpmcounter28";
    MHPMCOUNTER29 = 0xb1d, "mhpmcounter29";
    MHPMCOUNTER30 = 0xb1e, "mhpmcounter30";
    MHPMCOUNTER31 = 0xb1f, "mhpmcounter31";
    CYCLE = 0xc00, "cycle";
    TIME = 0xc01, "time";
    INSTRET = 0xc02, "instret";
    HPMCOUNTER3 = 0xc03, "hpmcounter3";
    HPMCOUNTER4 = 0xc04, "hpmcounter4";
    HPMCOUNTER5 = 0xc05, "hpmcounter5";
    HPMCOUNTER6 = 0xc06, "hpmcounter6";
    HPMCOUNTER7 = 0xc07, "hpmcounter7";
    HPMCOUNTER8 = 0xc08, "hpmcounter8";
    HPMCOUNTER9 = 0xc09, "hpmcounter9";
    HPMCOUNTER10 = 0xc0a, "hpmcounter10";
    HPMCOUNTER11 = 0xc0b, "hpmcounter11";
    HPMCOUNTER12 = 0xc0c, "hpmcounter12";
    HPMCOUNTER13 = 0xc0d, "hpmcounter13";
    HPMCOUNTER14 = 0xc0e, "hpmcounter14";
    HPMCOUNTER15 = 0xc0f, "hpmcounter15";
    HPMCOUNTER16 = 0xc10, "hpmcounter16";
    HPMCOUNTER17 = 0xc11, "hpmcounter17";
    HPMCOUNTER18 = 0xc12, "hpmcounter18";
    HPMCOUNTER19 = 0xc13, "hpmcounter19";
    HPMCOUNTER20 = 0xc14, "hpmcounter20";
    HPMCOUNTER21 = 0xc15, "hpmcounter21";
    HPMCOUNTER22 = 0xc16, "hpmcounter22";
    HPMCOUNTER23 = 0xc17, "hpmcounter23";
    HPMCOUNTER24 = 0xc18, "hpmcounter24";
    HPMCOUNTER25 = 0xc19, "hpmcounter25";
    HPMCOUNTER26 = 0xc1a, "hpmcounter26";
    HPMCOUNTER27 = 0xc1b, "hpmcounter27";
    HPMCOUNTER28 = 0xc1c, "hpmcounter28";
    HPMCOUNTER29 = 0xc1d, "hpmcounter29";
    HPMCOUNTER30 = 0xc1e, "hpmcounter30";
    HPMCOUNTER31 = 0xc1f, "hpmcounter31";
    SCOUNTOVF = 0xda0, "scountovf";
    STOPI = 0xdb0, "stopi";
    HGEIP = 0xe12, "hgeip";
    VSTOPI = 0xeb0, "vstopi";
    MVENDORID = 0xf11, "mvendorid";
    MARCHID = 0xf12, "marchid";
    MIMPID = 0xf13, "mimpid";
    MHARTID = 0xf14, "mhartid";
    MCONFIGPTR = 0xf15, "mconfigptr";
    MTOPI = 0xfb0, "mtopi";
}

/// The spec name of CSR `num`, if this project names it.
pub fn name(num: u16) -> Option<&'static str> {
    ALL.binary_search_by_key(&num, |&(n, _)| n)
        .ok()
        .map(|i| ALL[i].1)
}

/// The number of the CSR named `name` (as the spec writes it, lower case).
pub fn by_name(name: &str) -> Option<u16> {
    ALL.iter().find(|&&(_, s)| s == name).map(|&(n, _)| n)
}

/// Field masks: one `pub const REG_FIELD: u64` per field and [`FIELDS`], the table of every
/// (name, mask) for the C header.
macro_rules! fields {
    ($($(#[$doc:meta])* $name:ident = $value:expr;)*) => {
        $(
            $(#[$doc])*
            pub const $name: u64 = $value;
        )*
        /// Every field mask of this module: (name, value), in declaration order.
        pub static FIELDS: &[(&str, u64)] = &[$((stringify!($name), $name),)*];
    };
}

fields! {
    // mstatus (privileged spec 3.1.6, "Machine Status Register").
    /// `mstatus.SIE`
    MSTATUS_SIE = 1 << 1;
    /// `mstatus.MIE`
    MSTATUS_MIE = 1 << 3;
    /// `mstatus.SPIE`
    MSTATUS_SPIE = 1 << 5;
    /// `mstatus.MPIE`
    MSTATUS_MPIE = 1 << 7;
    /// `mstatus.SPP`
    MSTATUS_SPP = 1 << 8;
    /// `mstatus.MPP`
    MSTATUS_MPP = 3 << 11;
    /// `mstatus.FS`
    MSTATUS_FS = 3 << 13;
    /// `mstatus.MPRV`
    MSTATUS_MPRV = 1 << 17;
    /// `mstatus.SUM`
    MSTATUS_SUM = 1 << 18;
    /// `mstatus.MXR`
    MSTATUS_MXR = 1 << 19;
    /// `mstatus.TVM`
    MSTATUS_TVM = 1 << 20;
    /// `mstatus.TW`
    MSTATUS_TW = 1 << 21;
    /// `mstatus.TSR`
    MSTATUS_TSR = 1 << 22;
    /// `mstatus.UXL` (the hart's is read-only [`XL_64`]).
    MSTATUS_UXL = 3 << 32;
    /// `mstatus.SXL` (the hart's is read-only [`XL_64`]).
    MSTATUS_SXL = 3 << 34;
    /// `mstatus.GVA` (H extension).
    MSTATUS_GVA = 1 << 38;
    /// `mstatus.MPV` (H extension).
    MSTATUS_MPV = 1 << 39;
    /// `mstatus.SD`
    MSTATUS_SD = 1 << 63;
    /// The value of an XLEN field (`MXL`, `SXL`, `UXL`, `VSXL`) for 64 bits.
    XL_64 = 2;

    // menvcfg (privileged spec 3.1.18) with Smcdeleg's and Sstc's bits.
    /// `menvcfg.CDE` (Smcdeleg 2 "Counter Delegation Enable (`menvcfg.CDE`)").
    MENVCFG_CDE = 1 << 60;
    /// `menvcfg.STCE` (Sstc).
    MENVCFG_STCE = 1 << 63;

    // hstatus (H extension, "Hypervisor Status Register").
    /// `hstatus.GVA`
    HSTATUS_GVA = 1 << 6;
    /// `hstatus.SPV`
    HSTATUS_SPV = 1 << 7;
    /// `hstatus.SPVP`
    HSTATUS_SPVP = 1 << 8;
    /// `hstatus.HU`
    HSTATUS_HU = 1 << 9;
    /// `hstatus.VGEIN` (bits 17:12): the guest interrupt file of the VS-level CSRs.
    HSTATUS_VGEIN = 0x3f << 12;
    /// `hstatus.VTVM`
    HSTATUS_VTVM = 1 << 20;
    /// `hstatus.VTW`
    HSTATUS_VTW = 1 << 21;
    /// `hstatus.VTSR`
    HSTATUS_VTSR = 1 << 22;
    /// `hstatus.VSXL` (the hart's is read-only [`XL_64`]).
    HSTATUS_VSXL = 3 << 32;

    // mstateen0/hstateen0/sstateen0 (Smstateen, "State Enable Register Formats").
    /// `xstateen0.SE0` (and bit 63 of every `mstateen`/`hstateen`).
    STATEEN_SE0 = 1 << 63;
    /// `mstateen0.ENVCFG`
    STATEEN0_ENVCFG = 1 << 62;
    /// `mstateen0.CSRIND` (Smcsrind).
    STATEEN0_CSRIND = 1 << 60;
    /// `mstateen0.AIA`
    STATEEN0_AIA = 1 << 59;
    /// `mstateen0.IMSIC`
    STATEEN0_IMSIC = 1 << 58;
    /// `mstateen0.CONTEXT`
    STATEEN0_CONTEXT = 1 << 57;
    /// `mstateen0.P1P13`
    STATEEN0_P1P13 = 1 << 56;
    /// `mstateen0.P1P14`
    STATEEN0_P1P14 = 1 << 55;
    /// `mstateen0.CTR` (Smctr chapter 5 "State Enable Access Control").
    STATEEN0_CTR = 1 << 54;
    /// `mstateen0.JVT`
    STATEEN0_JVT = 1 << 2;
    /// `mstateen0.FCSR`
    STATEEN0_FCSR = 1 << 1;
    /// `mstateen0.C`
    STATEEN0_C = 1 << 0;

    // xctrctl, sctrstatus and the entry registers (Smctr/Ssctr chapters 2 and 3).
    /// `xctrctl.U`: recording in U-mode (VU-mode for `vsctrctl`).
    CTRCTL_U = 1 << 0;
    /// `xctrctl.S`: recording in S-mode (VS-mode for `vsctrctl`).
    CTRCTL_S = 1 << 1;
    /// `mctrctl.M`: recording in M-mode.
    CTRCTL_M = 1 << 2;
    /// `xctrctl.RASEMU`: Smctr 6.4 "RAS (Return Address Stack) Emulation Mode".
    CTRCTL_RASEMU = 1 << 7;
    /// `xctrctl.STE`: record external traps into S-mode (VS-mode for `vsctrctl`; Smctr 6.1.2
    /// "External Traps").
    CTRCTL_STE = 1 << 8;
    /// `mctrctl.MTE`: record external traps into M-mode (Smctr 6.1.2 "External Traps").
    CTRCTL_MTE = 1 << 9;
    /// `xctrctl.BPFRZ`: freeze on a breakpoint exception (Smctr 6.5 "Freeze").
    CTRCTL_BPFRZ = 1 << 11;
    /// `xctrctl.LCOFIFRZ`: freeze on a local counter overflow interrupt (Smctr 6.5 "Freeze").
    CTRCTL_LCOFIFRZ = 1 << 12;
    /// `xctrctl.EXCINH` (bit 33) to `DIRLJMPINH` (bit 47): the transfer type filter bits of
    /// Smctr 6.2 "Transfer Type Filtering". Bit 32 + t belongs to transfer type t of table 9
    /// (NTBREN, bit 36, enables type 4).
    CTRCTL_FILTERS = 0xfffe << 32 & !(0x3 << 38);
    /// `xctrctl.EXCINH`: inhibit recording of exceptions (transfer type 1).
    CTRCTL_EXCINH = 1 << 33;
    /// `xctrctl.INTRINH`: inhibit recording of interrupts (transfer type 2).
    CTRCTL_INTRINH = 1 << 34;
    /// `xctrctl.TRETINH`: inhibit recording of trap returns (transfer type 3).
    CTRCTL_TRETINH = 1 << 35;
    /// `xctrctl.NTBREN`: record not-taken branches (transfer type 4; Smctr 6.2 "Transfer Type
    /// Filtering").
    CTRCTL_NTBREN = 1 << 36;
    /// `xctrctl.TKBRINH`: inhibit recording of taken branches (transfer type 5).
    CTRCTL_TKBRINH = 1 << 37;
    /// `xctrctl.INDCALLINH`: inhibit recording of indirect calls (transfer type 8).
    CTRCTL_INDCALLINH = 1 << 40;
    /// `xctrctl.DIRCALLINH`: inhibit recording of direct calls (transfer type 9).
    CTRCTL_DIRCALLINH = 1 << 41;
    /// `xctrctl.INDJMPINH`: inhibit recording of indirect jumps (transfer type 10).
    CTRCTL_INDJMPINH = 1 << 42;
    /// `xctrctl.DIRJMPINH`: inhibit recording of direct jumps (transfer type 11).
    CTRCTL_DIRJMPINH = 1 << 43;
    /// `xctrctl.CORSWAPINH`: inhibit recording of co-routine swaps (transfer type 12).
    CTRCTL_CORSWAPINH = 1 << 44;
    /// `xctrctl.RETINH`: inhibit recording of function returns (transfer type 13).
    CTRCTL_RETINH = 1 << 45;
    /// `xctrctl.INDLJMPINH`: inhibit recording of other indirect jumps (with linkage; type 14).
    CTRCTL_INDLJMPINH = 1 << 46;
    /// `xctrctl.DIRLJMPINH`: inhibit recording of other direct jumps (with linkage; type 15).
    CTRCTL_DIRLJMPINH = 1 << 47;
    /// `sctrstatus.WRPTR` (the widest: depth 256).
    SCTRSTATUS_WRPTR = 0xff;
    /// `sctrstatus.FROZEN`.
    SCTRSTATUS_FROZEN = 1 << 31;
    /// `sctrdepth.DEPTH`.
    SCTRDEPTH_DEPTH = 7;
    /// `ctrsource.V`.
    CTRSOURCE_V = 1;
    /// `ctrtarget.MISP`.
    CTRTARGET_MISP = 1;
    /// `ctrdata.TYPE`.
    CTRDATA_TYPE = 0xf;
    /// `ctrdata.CCV`.
    CTRDATA_CCV = 1 << 15;
    /// `ctrdata.CC` (CCM in bits 27:16, CCE in bits 31:28).
    CTRDATA_CC = 0xffff << 16;
    /// `ctrdata.CC`'s mantissa `CCM`.
    CTRDATA_CCM = 0xfff << 16;
    /// `ctrdata.CC`'s exponent `CCE`.
    CTRDATA_CCE = 0xf << 28;

    // mhpmevent (Sscofpmf, "Count Overflow Control"; Smcntrpmf for xcyclecfg/xinstretcfg).
    /// `mhpmevent.OF`: overflowed.
    MHPMEVENT_OF = 1 << 63;
    /// `mhpmevent.MINH`, `mcyclecfg.MINH`, `minstretcfg.MINH`: inhibit in M-mode.
    MHPMEVENT_MINH = 1 << 62;
    /// `mhpmevent.SINH`: inhibit in S/HS-mode.
    MHPMEVENT_SINH = 1 << 61;
    /// `mhpmevent.UINH`: inhibit in U-mode.
    MHPMEVENT_UINH = 1 << 60;
    /// `mhpmevent.VSINH`: inhibit in VS-mode.
    MHPMEVENT_VSINH = 1 << 59;
    /// `mhpmevent.VUINH`: inhibit in VU-mode.
    MHPMEVENT_VUINH = 1 << 58;
    /// `mhpmevent[55:0]`: the event selector.
    MHPMEVENT_EVENT = (1 << 56) - 1;

    // mpdisctl/spdisctl (Smpdis/Sspdis draft, "Machine PDIS Control Register (`mpdisctl`)";
    // provisional CSR numbers).
    /// `xpdisctl.SEL`
    PDISCTL_SEL = 7;
    /// `xpdisctl.HPM`
    PDISCTL_HPM = 0xffff_fff8;
    /// `xpdisctl.MEM`
    PDISCTL_MEM = 1 << 32;
    /// `xpdisctl.ACC`
    PDISCTL_ACC = 1 << 33;
    /// `xpdisctl.TS`
    PDISCTL_TS = 1 << 34;
    /// `xpdisctl.PA`
    PDISCTL_PA = 1 << 35;
    /// `xpdisctl.EPT`
    PDISCTL_EPT = 1 << 36;
    /// `xpdisctl.U`
    PDISCTL_U = 1 << 60;
    /// `xpdisctl.S`
    PDISCTL_S = 1 << 61;
    /// `mpdisctl.M`
    PDISCTL_M = 1 << 62;
    /// `xpdisctl.OF`
    PDISCTL_OF = 1 << 63;

    // Interrupt-pending bits of mip/sip/hip/hvip (privileged spec 3.1.9; H; Sscofpmf).
    /// `xip.SSIP`
    MIP_SSIP = 1 << 1;
    /// `hip.VSSIP`
    MIP_VSSIP = 1 << 2;
    /// `mip.MSIP`
    MIP_MSIP = 1 << 3;
    /// `xip.STIP`
    MIP_STIP = 1 << 5;
    /// `hip.VSTIP`
    MIP_VSTIP = 1 << 6;
    /// `mip.MTIP`
    MIP_MTIP = 1 << 7;
    /// `xip.SEIP`
    MIP_SEIP = 1 << 9;
    /// `hip.VSEIP`
    MIP_VSEIP = 1 << 10;
    /// `mip.MEIP`
    MIP_MEIP = 1 << 11;
    /// `hip.SGEIP`
    MIP_SGEIP = 1 << 12;
    /// `xip.LCOFIP` (Sscofpmf).
    MIP_LCOFIP = 1 << 13;

    // Sdtrig (debug spec 5.7, "Trigger Module Registers"): tdata1 and its mcontrol6 layout.
    /// `tdata1.type` (63:60).
    TDATA1_TYPE = 0xf << 60;
    /// `tdata1.type` = 6: an mcontrol6 trigger.
    TDATA1_TYPE_MCONTROL6 = 6 << 60;
    /// `tdata1.type` = 15: a disabled trigger.
    TDATA1_TYPE_DISABLED = 15 << 60;
    /// `tdata1.dmode` (59).
    TDATA1_DMODE = 1 << 59;
    /// `mcontrol6.uncertain`
    MCONTROL6_UNCERTAIN = 1 << 26;
    /// `mcontrol6.hit1`
    MCONTROL6_HIT1 = 1 << 25;
    /// `mcontrol6.vs`
    MCONTROL6_VS = 1 << 24;
    /// `mcontrol6.vu`
    MCONTROL6_VU = 1 << 23;
    /// `mcontrol6.hit0`
    MCONTROL6_HIT0 = 1 << 22;
    /// `mcontrol6.select`
    MCONTROL6_SELECT = 1 << 21;
    /// `mcontrol6.size` (18:16).
    MCONTROL6_SIZE = 7 << 16;
    /// `mcontrol6.action` (15:12).
    MCONTROL6_ACTION = 0xf << 12;
    /// `mcontrol6.chain`
    MCONTROL6_CHAIN = 1 << 11;
    /// `mcontrol6.match` (10:7).
    MCONTROL6_MATCH = 0xf << 7;
    /// `mcontrol6.m`
    MCONTROL6_M = 1 << 6;
    /// `mcontrol6.uncertainen`
    MCONTROL6_UNCERTAINEN = 1 << 5;
    /// `mcontrol6.s`
    MCONTROL6_S = 1 << 4;
    /// `mcontrol6.u`
    MCONTROL6_U = 1 << 3;
    /// `mcontrol6.execute`
    MCONTROL6_EXECUTE = 1 << 2;
    /// `mcontrol6.store`
    MCONTROL6_STORE = 1 << 1;
    /// `mcontrol6.load`
    MCONTROL6_LOAD = 1 << 0;
    /// `tinfo.version` (31:24).
    TINFO_VERSION = 0xff << 24;
    /// `tinfo.info` (15:0): bit N set when the selected trigger supports type N.
    TINFO_INFO = 0xffff;
}

/// The C header for guest programs: `#define CSR_<NAME>` for every number of [`ALL`] and
/// `#define <FIELD>` for every mask of [`FIELDS`]. Committed as `guest/sdk/include/csr.h`;
/// a test checks that the file is exactly this.
pub fn c_header() -> String {
    use std::fmt::Write;
    let mut s = String::from(
        "/* CSR numbers and fields for guest programs.\n \
         * Generated from vcpu-api/src/csr.rs (the one definition): do not edit. Regenerate with\n \
         * REGENERATE_CSR_HEADER=1 cargo test -p vcpu-api --test c_header\n */\n\
         #ifndef VCPU_API_CSR_H\n#define VCPU_API_CSR_H\n\n\
         /* Field masks are unsigned long in C and plain numbers in assembly. */\n\
         #ifdef __ASSEMBLER__\n#define CSR_UL(x) x\n#else\n#define CSR_UL(x) (x##UL)\n#endif\n\n",
    );
    for &(num, name) in ALL {
        let _ = writeln!(s, "#define CSR_{} {num:#05x}", name.to_ascii_uppercase());
    }
    s.push('\n');
    for &(name, value) in FIELDS {
        let _ = writeln!(s, "#define {name} CSR_UL({value:#x})");
    }
    s.push_str("\n#endif\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_sorted_unique_and_named_as_constants() {
        for w in ALL.windows(2) {
            assert!(w[0].0 < w[1].0, "{:?} before {:?}", w[0], w[1]);
        }
        assert_eq!(name(VSISELECT), Some("vsiselect"));
        assert_eq!(by_name("hstateen0"), Some(HSTATEEN0));
        assert_eq!(name(0x7ff), None);
        assert_eq!(MHPMCOUNTER3 + 28, MHPMCOUNTER31);
    }

    #[test]
    fn field_names_are_unique() {
        for (i, a) in FIELDS.iter().enumerate() {
            assert!(FIELDS[i + 1..].iter().all(|b| b.0 != a.0), "{}", a.0);
            assert_ne!(a.1, 0, "{}", a.0);
        }
    }
}
