//! Bit-exactness of `vcpu::fpu` against Berkeley SoftFloat 3e with its RISC-V
//! specialization, which the hart used before its floating point became integer Rust: for
//! each operation, format and rounding mode, 4096 operands from a fixed generator (special
//! values, random bits, values near 1, near the subnormal boundary and near overflow, short
//! significands that make ties, small integers; for the fused multiply-add also addends that
//! cancel the product) give results and flags whose hash must be the one SoftFloat gave.
//! (The hashes were recorded with softfloat-sys 0.1.4 on the same generator; a 92-million
//! case differential run of the two found no difference.)

use test_support::XorShift;
use vcpu::fpu::{self, ArithOp, CmpOp, FmaOp, Fmt, IntFmt};

/// Cases per category.
const CASES: u64 = 4096;

fn special(r: &mut XorShift, d: bool) -> u64 {
    const D: [u64; 14] = [
        0,
        1 << 63,
        0x7ff0_0000_0000_0000,
        0x7ff8_0000_0000_0000,
        0x7ff0_0000_0000_0001,
        1,
        0x000f_ffff_ffff_ffff,
        0x0010_0000_0000_0000,
        0x7fef_ffff_ffff_ffff,
        0x3ff0_0000_0000_0000,
        0x43e0_0000_0000_0000,
        0x41e0_0000_0000_0000,
        0x3fe0_0000_0000_0000,
        0x4330_0000_0000_0000,
    ];
    const S: [u32; 14] = [
        0,
        1 << 31,
        0x7f80_0000,
        0x7fc0_0000,
        0x7f80_0001,
        1,
        0x007f_ffff,
        0x0080_0000,
        0x7f7f_ffff,
        0x3f80_0000,
        0x5f00_0000,
        0x4f00_0000,
        0x3f00_0000,
        0x4b00_0000,
    ];
    let i = (r.next() % 14) as usize;
    let neg = r.next() & 1;
    if d {
        D[i] | neg << 63
    } else {
        (S[i] | (neg as u32) << 31) as u64
    }
}

/// A value with a random sign and fraction and an exponent field from `exps`.
fn with_exp(r: &mut XorShift, d: bool, exp: u64) -> u64 {
    if d {
        (r.next() & (1 << 63)) | exp << 52 | (r.next() & ((1 << 52) - 1))
    } else {
        (r.next() & (1 << 31)) | exp << 23 | (r.next() & ((1 << 23) - 1))
    }
}

/// An operand register value (singles NaN-boxed, now and then improperly).
fn operand(r: &mut XorShift, d: bool) -> u64 {
    let v = match r.next() % 8 {
        0 => special(r, d),
        1 | 2 => r.next(),
        3 | 4 => {
            let e = if d { 1023 - 8 } else { 127 - 8 } + r.next() % 16;
            with_exp(r, d, e)
        }
        5 => {
            let low = r.next() & 1 == 0;
            let e = match (d, low) {
                (true, true) => r.next() % 60,
                (true, false) => 2046 - r.next() % 60,
                (false, true) => r.next() % 30,
                (false, false) => 254 - r.next() % 30,
            };
            with_exp(r, d, e)
        }
        6 => {
            let sh = r.next() % 4;
            if d {
                let e = 1023 - 60 + r.next() % 120;
                (r.next() & (1 << 63)) | e << 52 | ((r.next() & 0xff) << 44 >> sh)
            } else {
                let e = 127 - 30 + r.next() % 60;
                (r.next() & (1 << 31)) | e << 23 | ((r.next() & 0xff) << 15 >> sh)
            }
        }
        _ => {
            let i = (r.next() % 2000) as f64 - 1000.0;
            if d {
                i.to_bits()
            } else {
                (i as f32).to_bits() as u64
            }
        }
    };
    if d {
        v
    } else if r.next().is_multiple_of(64) {
        v & 0xffff_ffff
    } else {
        fpu::box_s(v as u32)
    }
}

fn int_operand(r: &mut XorShift) -> u64 {
    const EDGES: [u64; 10] = [
        0,
        1,
        u64::MAX,
        1 << 63,
        (1 << 63) - 1,
        1 << 31,
        (1 << 31) - 1,
        0xffff_ffff,
        1 << 53,
        (1 << 53) + 1,
    ];
    match r.next() % 4 {
        0 => r.next(),
        1 => r.next() >> (r.next() % 64),
        2 => (r.next() >> (r.next() % 64)).wrapping_neg(),
        _ => EDGES[(r.next() % 10) as usize],
    }
}

/// FNV-1a over 64-bit words.
struct Hash(u64);

impl Hash {
    fn add(&mut self, v: u64) {
        for b in v.to_le_bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// Hashes `CASES` results of `op` (given a generator, returning result and flags).
fn category(seed: u64, mut op: impl FnMut(&mut XorShift) -> (u64, u8)) -> u64 {
    let mut r = XorShift(seed | 1);
    let mut h = Hash(0xcbf2_9ce4_8422_2325);
    for _ in 0..CASES {
        let (v, fl) = op(&mut r);
        h.add(v);
        h.add(fl as u64);
    }
    h.0
}

/// (category name, hash) for every category.
fn hashes() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut push = |name: String, f: &mut dyn FnMut(&mut XorShift) -> (u64, u8)| {
        seed = seed.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(1);
        out.push((name, category(seed, f)));
    };
    for (fmt, d) in [(Fmt::S, false), (Fmt::D, true)] {
        for rm in 0..5u8 {
            for op in [
                ArithOp::Add,
                ArithOp::Sub,
                ArithOp::Mul,
                ArithOp::Div,
                ArithOp::Min,
                ArithOp::Max,
            ] {
                push(format!("{op:?}.{fmt:?} rm {rm}"), &mut |r| {
                    let (a, b) = (operand(r, d), operand(r, d));
                    let mut fl = 0;
                    (fpu::arith(fmt, op, a, b, rm, &mut fl), fl)
                });
            }
            push(format!("Sqrt.{fmt:?} rm {rm}"), &mut |r| {
                let a = operand(r, d);
                let mut fl = 0;
                (fpu::sqrt(fmt, a, rm, &mut fl), fl)
            });
            for op in [FmaOp::Madd, FmaOp::Msub, FmaOp::Nmsub, FmaOp::Nmadd] {
                push(format!("{op:?}.{fmt:?} rm {rm}"), &mut |r| {
                    let (a, b) = (operand(r, d), operand(r, d));
                    let mut c = operand(r, d);
                    if r.next().is_multiple_of(4) {
                        // An addend next to the product: cancellation.
                        let mut fl = 0;
                        let p = fpu::arith(fmt, ArithOp::Mul, a, b, rm, &mut fl);
                        let sign = if d { 1 << 63 } else { 1 << 31 };
                        let minus = if matches!(op, FmaOp::Madd | FmaOp::Nmadd) {
                            sign
                        } else {
                            0
                        };
                        c = (p ^ minus).wrapping_add(r.next() % 3).wrapping_sub(1);
                        if !d {
                            c = fpu::box_s(c as u32);
                        }
                    }
                    let mut fl = 0;
                    (fpu::fma(fmt, op, a, b, c, rm, &mut fl), fl)
                });
            }
            for it in [IntFmt::W, IntFmt::Wu, IntFmt::L, IntFmt::Lu] {
                push(format!("ToInt{it:?}.{fmt:?} rm {rm}"), &mut |r| {
                    let a = operand(r, d);
                    let mut fl = 0;
                    (fpu::to_int(fmt, a, it, rm, &mut fl), fl)
                });
                push(format!("FromInt{it:?}.{fmt:?} rm {rm}"), &mut |r| {
                    let x = int_operand(r);
                    let mut fl = 0;
                    (fpu::from_int(fmt, x, it, rm, &mut fl), fl)
                });
            }
            let to = if d { Fmt::S } else { Fmt::D };
            push(format!("Convert.{fmt:?}->{to:?} rm {rm}"), &mut |r| {
                let a = operand(r, d);
                let mut fl = 0;
                (fpu::convert(fmt, to, a, rm, &mut fl), fl)
            });
        }
        for op in [CmpOp::Eq, CmpOp::Lt, CmpOp::Le] {
            push(format!("{op:?}.{fmt:?}"), &mut |r| {
                let a = operand(r, d);
                let b = if r.next().is_multiple_of(4) {
                    a
                } else {
                    operand(r, d)
                };
                let mut fl = 0;
                (fpu::cmp(fmt, op, a, b, &mut fl), fl)
            });
        }
    }
    out
}

#[test]
fn results_and_flags_match_softfloat() {
    let got = hashes();
    let want = EXPECTED;
    assert_eq!(got.len(), want.len(), "number of categories");
    let wrong: Vec<String> = got
        .iter()
        .zip(want)
        .filter(|((name, h), (wname, wh))| name != wname || h != wh)
        .map(|((name, h), (_, wh))| format!("{name}: {h:#018x}, SoftFloat {wh:#018x}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} categories differ from SoftFloat:\n{}",
        wrong.len(),
        got.len(),
        wrong.join("\n")
    );
}

/// `hashes()` of SoftFloat 3e (RISC-V specialization, softfloat-sys 0.1.4).
const EXPECTED: &[(&str, u64)] = &[
    ("Add.S rm 0", 0xdd98addc90e75b30),
    ("Sub.S rm 0", 0xbd38a4cbfc58955e),
    ("Mul.S rm 0", 0xe99f4dcdaf1b38e3),
    ("Div.S rm 0", 0xe9236f98333fe945),
    ("Min.S rm 0", 0x950c474cdfe1e595),
    ("Max.S rm 0", 0xb26e084cf7fdd478),
    ("Sqrt.S rm 0", 0xa83c0607540ff2d7),
    ("Madd.S rm 0", 0xaa17b86c4eeb5551),
    ("Msub.S rm 0", 0xbeb107f5c2631ac3),
    ("Nmsub.S rm 0", 0x870496aceb6238f7),
    ("Nmadd.S rm 0", 0xa450eb9454714608),
    ("ToIntW.S rm 0", 0xf5485b37bdbe560d),
    ("FromIntW.S rm 0", 0x6163923bd110065e),
    ("ToIntWu.S rm 0", 0xb92ec6e88a90cee9),
    ("FromIntWu.S rm 0", 0xe41302e5fe4900b8),
    ("ToIntL.S rm 0", 0x05b9f8944311c7fe),
    ("FromIntL.S rm 0", 0xd7b47eaa00c51870),
    ("ToIntLu.S rm 0", 0xefe5edf77414b269),
    ("FromIntLu.S rm 0", 0x7e6fd7c1444c36ab),
    ("Convert.S->D rm 0", 0x00b312f978be4287),
    ("Add.S rm 1", 0x1be113a758336180),
    ("Sub.S rm 1", 0x724e8d2643ac2df2),
    ("Mul.S rm 1", 0xa6dd9abba2f46daf),
    ("Div.S rm 1", 0x1af61036a9373242),
    ("Min.S rm 1", 0x5bb0c68532d25ee2),
    ("Max.S rm 1", 0x3ecdb808308f191c),
    ("Sqrt.S rm 1", 0xbde5975272869c18),
    ("Madd.S rm 1", 0xa8d0e8df7137ab5c),
    ("Msub.S rm 1", 0x0ccaf4558102fadf),
    ("Nmsub.S rm 1", 0x5969083c808b699f),
    ("Nmadd.S rm 1", 0x00a4eaf1b4ffd8b9),
    ("ToIntW.S rm 1", 0x8ffa34c302deb348),
    ("FromIntW.S rm 1", 0xcd2f066d73fc4601),
    ("ToIntWu.S rm 1", 0x70b9fe9eda9c37db),
    ("FromIntWu.S rm 1", 0x779fa38cd0dc4c0b),
    ("ToIntL.S rm 1", 0xc42192fc6b674780),
    ("FromIntL.S rm 1", 0xd0938364a1163b61),
    ("ToIntLu.S rm 1", 0x6bf86f4accc86769),
    ("FromIntLu.S rm 1", 0xe747092329ff278a),
    ("Convert.S->D rm 1", 0x02bd7a768b70ad4a),
    ("Add.S rm 2", 0xc5f085a08551b337),
    ("Sub.S rm 2", 0x8f016fc4728b4507),
    ("Mul.S rm 2", 0x493b79f9ebdeeabc),
    ("Div.S rm 2", 0xb17b41f3d21929cc),
    ("Min.S rm 2", 0xa2f1b02ad2f65631),
    ("Max.S rm 2", 0x844b6e7162c0da73),
    ("Sqrt.S rm 2", 0x62fbe1995097c056),
    ("Madd.S rm 2", 0x92a08221298f5310),
    ("Msub.S rm 2", 0xa71dee2ebfe333e2),
    ("Nmsub.S rm 2", 0xd6d1bbac856ebad7),
    ("Nmadd.S rm 2", 0x084ba089bc8811f6),
    ("ToIntW.S rm 2", 0xd9102957cd9a540f),
    ("FromIntW.S rm 2", 0x0a017b31e7b13d98),
    ("ToIntWu.S rm 2", 0xfce3d3271439e508),
    ("FromIntWu.S rm 2", 0xbfb596862c7848c0),
    ("ToIntL.S rm 2", 0x1f152ed9959e05bb),
    ("FromIntL.S rm 2", 0xd987c71158817ae0),
    ("ToIntLu.S rm 2", 0xd29b23ee3f7f0db6),
    ("FromIntLu.S rm 2", 0x1dec9eb901fce2ae),
    ("Convert.S->D rm 2", 0xf1ee3d7b730e2ae6),
    ("Add.S rm 3", 0x895b0e362f669d55),
    ("Sub.S rm 3", 0x0707b124d17f8227),
    ("Mul.S rm 3", 0xed70225279f8a834),
    ("Div.S rm 3", 0xd7549b9c06b9bca2),
    ("Min.S rm 3", 0x5819bba0e90217b4),
    ("Max.S rm 3", 0xb45977b6e035f270),
    ("Sqrt.S rm 3", 0x3946cdc4d9e7ecad),
    ("Madd.S rm 3", 0x6141e0907825bf8d),
    ("Msub.S rm 3", 0xa88dfc0314daeaa0),
    ("Nmsub.S rm 3", 0x12b0d54f6b3f0a4a),
    ("Nmadd.S rm 3", 0x5da438aea5ac2fe9),
    ("ToIntW.S rm 3", 0x56f52e33fe7d62f0),
    ("FromIntW.S rm 3", 0xbf7526659a08051a),
    ("ToIntWu.S rm 3", 0xdf9112001e98373e),
    ("FromIntWu.S rm 3", 0xf732e8c3a288fb8c),
    ("ToIntL.S rm 3", 0xbc9cc4ce38f75abb),
    ("FromIntL.S rm 3", 0x74a527f901532302),
    ("ToIntLu.S rm 3", 0xbe29a8b0628a2a23),
    ("FromIntLu.S rm 3", 0x91e1672bcd2529e1),
    ("Convert.S->D rm 3", 0xa2a5855892d24442),
    ("Add.S rm 4", 0x972a6598621682c6),
    ("Sub.S rm 4", 0x0763ef735ee1459c),
    ("Mul.S rm 4", 0xd3fbd9921bdc57a2),
    ("Div.S rm 4", 0x591001728d1499e7),
    ("Min.S rm 4", 0xae878882eb953d2c),
    ("Max.S rm 4", 0x6f51a5a51a9281b7),
    ("Sqrt.S rm 4", 0x8c7f086c739697f0),
    ("Madd.S rm 4", 0xf00e4f39abb58c19),
    ("Msub.S rm 4", 0x00d22d3c29944da7),
    ("Nmsub.S rm 4", 0x1baef45d49b574de),
    ("Nmadd.S rm 4", 0x2e43b4c1eb18ad6e),
    ("ToIntW.S rm 4", 0xfb588c013aa265fa),
    ("FromIntW.S rm 4", 0x7c2ab0b8e0ffa87d),
    ("ToIntWu.S rm 4", 0x8b91d70c8803201e),
    ("FromIntWu.S rm 4", 0xd1edfc1bee437595),
    ("ToIntL.S rm 4", 0x119f3f9b2c5e8530),
    ("FromIntL.S rm 4", 0x64aab40d8807f87a),
    ("ToIntLu.S rm 4", 0xd371b5c979ae2ee0),
    ("FromIntLu.S rm 4", 0x0cd43d824087baa7),
    ("Convert.S->D rm 4", 0xa10b3dc12e8a7033),
    ("Eq.S", 0xe0fccccaec85eb24),
    ("Lt.S", 0xe35d6021870b9235),
    ("Le.S", 0xbdd81c265f7ea6b5),
    ("Add.D rm 0", 0x687acdc8b7d8f3a8),
    ("Sub.D rm 0", 0xeef2fb2d218c4018),
    ("Mul.D rm 0", 0x31cb4ba2239a568a),
    ("Div.D rm 0", 0xb29b37e1c0e5b5ae),
    ("Min.D rm 0", 0x62e13d81c57e2c17),
    ("Max.D rm 0", 0x2d9e0d9ba106fa9b),
    ("Sqrt.D rm 0", 0xf7f9ac8f8ff1f60f),
    ("Madd.D rm 0", 0x2d3e4f9e53b10b9b),
    ("Msub.D rm 0", 0xaf292610d59edbe7),
    ("Nmsub.D rm 0", 0xd307cbc1b2b42543),
    ("Nmadd.D rm 0", 0xa2ce867fe8cf5df0),
    ("ToIntW.D rm 0", 0x0e611d83bf053e97),
    ("FromIntW.D rm 0", 0x8dd0cdafa7028831),
    ("ToIntWu.D rm 0", 0x0921ce902debe574),
    ("FromIntWu.D rm 0", 0xd0f610f75c04b399),
    ("ToIntL.D rm 0", 0xa2bfffe7c7937ef2),
    ("FromIntL.D rm 0", 0x24c99f585944da0f),
    ("ToIntLu.D rm 0", 0x257bcebd43718c81),
    ("FromIntLu.D rm 0", 0x70dfe6df26d1401e),
    ("Convert.D->S rm 0", 0x5834dc5de8d82071),
    ("Add.D rm 1", 0x3679a1b1e6564d39),
    ("Sub.D rm 1", 0xffc69d5bc56c3062),
    ("Mul.D rm 1", 0xc1a5f624ebd70d21),
    ("Div.D rm 1", 0x54212e0941c72e2b),
    ("Min.D rm 1", 0xe68938409abdc2d5),
    ("Max.D rm 1", 0x7515b6d7bf069352),
    ("Sqrt.D rm 1", 0x49b0c9c7d9b69dfa),
    ("Madd.D rm 1", 0x8f22aa9b53f3acd2),
    ("Msub.D rm 1", 0x89c96039d39cd453),
    ("Nmsub.D rm 1", 0x37482fa02c8905f2),
    ("Nmadd.D rm 1", 0xe4bb5e0dbff36894),
    ("ToIntW.D rm 1", 0xa63ffdd961b05447),
    ("FromIntW.D rm 1", 0x74ef2ed6010bc3ce),
    ("ToIntWu.D rm 1", 0xb4523cdb3a3afd33),
    ("FromIntWu.D rm 1", 0x35af3d47b3ce3ae5),
    ("ToIntL.D rm 1", 0x62aa747b7c47b0cb),
    ("FromIntL.D rm 1", 0x4f705a1a2abd9899),
    ("ToIntLu.D rm 1", 0x0bdc55f8c693bf97),
    ("FromIntLu.D rm 1", 0x1211ca09b8ed0787),
    ("Convert.D->S rm 1", 0xb715565c37127be4),
    ("Add.D rm 2", 0x642abc95783d2946),
    ("Sub.D rm 2", 0x3d785b43e4c18e4c),
    ("Mul.D rm 2", 0xf09fd8f2964c6f1d),
    ("Div.D rm 2", 0x5ffa2df85ee46996),
    ("Min.D rm 2", 0x9537dc571d2d9053),
    ("Max.D rm 2", 0x409531900d28b7bc),
    ("Sqrt.D rm 2", 0xd40aa7d5734d99dc),
    ("Madd.D rm 2", 0x3f5fe8192352ffda),
    ("Msub.D rm 2", 0x5e017e453a984e46),
    ("Nmsub.D rm 2", 0x35cba449ebee2d35),
    ("Nmadd.D rm 2", 0x4f1bd0b405aa25df),
    ("ToIntW.D rm 2", 0xd3a50e9dce6dbd55),
    ("FromIntW.D rm 2", 0x097f9ae41adbb0c9),
    ("ToIntWu.D rm 2", 0x89d5a0ddc561a35b),
    ("FromIntWu.D rm 2", 0xb1eccacb48d07dc1),
    ("ToIntL.D rm 2", 0x53c38226778f8921),
    ("FromIntL.D rm 2", 0xffa1b25b622afd1b),
    ("ToIntLu.D rm 2", 0xf544ccb6570cf0d9),
    ("FromIntLu.D rm 2", 0xc9e921c846112b81),
    ("Convert.D->S rm 2", 0x91610beab08f61ed),
    ("Add.D rm 3", 0xb177dea4d8c12fc2),
    ("Sub.D rm 3", 0x1ff7dbbbd031c8c1),
    ("Mul.D rm 3", 0xa4a1b9883585d0ea),
    ("Div.D rm 3", 0x1884aa1900bfe656),
    ("Min.D rm 3", 0xe8930e3a4ac7f836),
    ("Max.D rm 3", 0xb72ad5a03764268c),
    ("Sqrt.D rm 3", 0x0febab6dc93c1813),
    ("Madd.D rm 3", 0xdf15fb886d27e06b),
    ("Msub.D rm 3", 0x480ee1e7e71271a5),
    ("Nmsub.D rm 3", 0x9f5ad2a0579682c3),
    ("Nmadd.D rm 3", 0x23bb751e77e3e66a),
    ("ToIntW.D rm 3", 0x3f58ee16e0100d3e),
    ("FromIntW.D rm 3", 0x67dfcf91fc5871fc),
    ("ToIntWu.D rm 3", 0xeda0eca6aa3f4880),
    ("FromIntWu.D rm 3", 0x504e7428e6b3fcb4),
    ("ToIntL.D rm 3", 0x1e44cd287065db53),
    ("FromIntL.D rm 3", 0xa8f81293b917538c),
    ("ToIntLu.D rm 3", 0xf3f29cd41f3e6641),
    ("FromIntLu.D rm 3", 0x00d5b927f000159e),
    ("Convert.D->S rm 3", 0x5c5bf5793c55499a),
    ("Add.D rm 4", 0xbeadc468b706d4e6),
    ("Sub.D rm 4", 0xd17fcf15f9f5efa1),
    ("Mul.D rm 4", 0xa63bb3537f37aa93),
    ("Div.D rm 4", 0x9632d45408d386a0),
    ("Min.D rm 4", 0x898a9e5017aea329),
    ("Max.D rm 4", 0x07ac01adcc49b036),
    ("Sqrt.D rm 4", 0x5e48be40991391f6),
    ("Madd.D rm 4", 0xfb5a74e97266215b),
    ("Msub.D rm 4", 0x84b05ee5662d20e6),
    ("Nmsub.D rm 4", 0xed7480e49b704a02),
    ("Nmadd.D rm 4", 0xd1915d70af3e0b32),
    ("ToIntW.D rm 4", 0x6390510a65706aed),
    ("FromIntW.D rm 4", 0x855f59de50765797),
    ("ToIntWu.D rm 4", 0x2d531896a97ff411),
    ("FromIntWu.D rm 4", 0x41fca9c84f429b0f),
    ("ToIntL.D rm 4", 0xe5da0e6221d34f90),
    ("FromIntL.D rm 4", 0xa1a5584b7c0b8c2a),
    ("ToIntLu.D rm 4", 0x289f81125b38c1f6),
    ("FromIntLu.D rm 4", 0xe9d1315781862b6b),
    ("Convert.D->S rm 4", 0x85bad1bd3053cdf3),
    ("Eq.D", 0x06408689e5bb72b4),
    ("Lt.D", 0x0593d90fb94fc5a4),
    ("Le.D", 0x745a8424de395f35),
];
