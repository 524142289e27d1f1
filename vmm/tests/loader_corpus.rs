//! The kernel loader's corpus (issue 18, item 7): every file in `tests/loader-corpus/`
//! (ELF executables and Linux `Image`s: well-formed seeds, targeted breakages and random
//! mutations of the seeds' headers kept a few per outcome) goes through
//! `vmm::run::kernel::load_kernel` for 8 MiB of RAM and must come to the outcome `EXPECTED`
//! records for it: `loaded:<format>` (the entry even and inside the loaded span, the span
//! inside RAM) or `refused:<KernelError
//! variant>[:<LoadError variant>]`. Deterministic and fast; regenerate with
//! `REGENERATE_CORPUS=1 cargo test --release -p vmm --test loader_corpus`.

use std::path::{Path, PathBuf};

use test_support::XorShift;
use vm_memory::{GuestAddress, GuestMemoryMmap};
use vmm::run::kernel::{load_kernel, KernelError};

mod common;

const RAM: u64 = 0x8000_0000;
const RAM_SIZE: u64 = 8 << 20;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/loader-corpus")
}

fn variant(debug: &str) -> String {
    debug
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_string()
}

/// What loading `data` comes to.
fn outcome(data: &[u8]) -> String {
    let mem =
        GuestMemoryMmap::<()>::from_ranges(&[(GuestAddress(RAM), RAM_SIZE as usize)]).unwrap();
    match load_kernel(data, &mem, RAM..RAM + RAM_SIZE) {
        Ok(k) => {
            // Whatever the header says, the entry is an instruction address in the kernel.
            assert!(k.entry % 2 == 0, "odd entry {:#x}", k.entry);
            assert!(
                k.span.contains(&k.entry),
                "entry {:#x} outside {:x?}",
                k.entry,
                k.span
            );
            assert!(
                k.span.start >= RAM && k.span.end <= RAM + RAM_SIZE,
                "{:x?}",
                k.span
            );
            format!("loaded:{:?}", k.format)
        }
        Err(e) => {
            assert!(!e.to_string().trim().is_empty(), "{e:?}");
            match e {
                KernelError::Elf(l) => format!("refused:Elf:{}", variant(&format!("{l:?}"))),
                other => format!("refused:{}", variant(&format!("{other:?}"))),
            }
        }
    }
}

#[test]
fn loader_corpus_ends_as_recorded() {
    let expected = std::fs::read_to_string(dir().join("EXPECTED")).unwrap();
    let mut n = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for line in expected.lines().filter(|l| !l.trim().is_empty()) {
        let (name, want) = line.split_once(' ').expect("NAME OUTCOME");
        let data = std::fs::read(dir().join(name)).unwrap();
        let got = outcome(&data);
        assert_eq!(got, want, "{name}");
        kinds.insert(got);
        n += 1;
    }
    assert!(n >= 20, "the corpus lost files: {n}");
    assert!(kinds.len() >= 15, "too few distinct outcomes: {kinds:?}");
    assert!(
        kinds.iter().any(|k| k.starts_with("loaded:Elf")),
        "{kinds:?}"
    );
    assert!(
        kinds.iter().any(|k| k.starts_with("loaded:Image")),
        "{kinds:?}"
    );
}

/// A riscv64 `Image` header (64 bytes: `text_offset` at 8, `image_size` at 16, "RSC\x05"
/// at 56) followed by `code`.
fn image(text_offset: u64, image_size: u64, code: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[0..4].copy_from_slice(&0x0000_006fu32.to_le_bytes()); // j .
    f[8..16].copy_from_slice(&text_offset.to_le_bytes());
    f[16..24].copy_from_slice(&image_size.to_le_bytes());
    f[48..56].copy_from_slice(b"RISCV\0\0\0");
    f[56..60].copy_from_slice(b"RSC\x05");
    f.extend_from_slice(code);
    f
}

/// An ELF with two `PT_LOAD` segments of `words` words each at `a` and `b`.
fn two_segments(a: u64, b: u64) -> Vec<u8> {
    let mut f = common::elf(&[0x0000_006f; 4]);
    f[56..58].copy_from_slice(&2u16.to_le_bytes()); // e_phnum
    let data_off = 64u64 + 2 * 56;
    let ph = |vaddr: u64| {
        let mut p = Vec::new();
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(&7u32.to_le_bytes());
        for w in [data_off, vaddr, vaddr, 16, 16, 8] {
            p.extend_from_slice(&w.to_le_bytes());
        }
        p
    };
    let mut out = f[..64].to_vec();
    out.extend(ph(a));
    out.extend(ph(b));
    out.extend_from_slice(&[0x6f, 0, 0, 0].repeat(4));
    out
}

/// The committed corpus is exactly what [`write_corpus`] writes (see
/// `common::check_generated`; `REGENERATE_CORPUS=1` rewrites it).
#[test]
fn corpus_is_what_its_generator_writes() {
    common::check_generated(&dir(), write_corpus);
}

fn write_corpus(d: &Path) {
    let _ = std::fs::remove_dir_all(d);
    std::fs::create_dir_all(d).unwrap();
    let elf = common::elf(&[0x0000_006f, 0x0000_0013]);
    let img = image(2 << 20, 0, &[0x13, 0, 0, 0]);
    let set =
        |f: &mut Vec<u8>, at: usize, bytes: &[u8]| f[at..at + bytes.len()].copy_from_slice(bytes);
    let mut seeds: Vec<(&str, Vec<u8>)> =
        vec![("elf.elf", elf.clone()), ("image.img", img.clone())];
    let mut e = |name: &'static str, change: &dyn Fn(&mut Vec<u8>)| {
        let mut f = elf.clone();
        change(&mut f);
        seeds.push((name, f));
    };
    e("elf-truncated-header.elf", &|f| f.truncate(40));
    e("elf-32bit.elf", &|f| f[4] = 1);
    e("elf-big-endian.elf", &|f| f[5] = 2);
    e("elf-relocatable.elf", &|f| set(f, 16, &1u16.to_le_bytes()));
    e("elf-x86-64.elf", &|f| set(f, 18, &62u16.to_le_bytes()));
    e("elf-phnum-huge.elf", &|f| {
        set(f, 56, &0xffffu16.to_le_bytes())
    });
    e("elf-phoff-past-end.elf", &|f| {
        set(f, 32, &u64::MAX.to_le_bytes())
    });
    e("elf-no-load-segment.elf", &|f| {
        set(f, 64, &4u32.to_le_bytes())
    });
    e("elf-filesz-over-memsz.elf", &|f| {
        set(f, 64 + 40, &1u64.to_le_bytes())
    });
    e("elf-offset-past-file.elf", &|f| {
        set(f, 64 + 8, &0xffff_0000u64.to_le_bytes())
    });
    e("elf-below-ram.elf", &|f| {
        set(f, 64 + 24, &0x1000u64.to_le_bytes());
        set(f, 64 + 16, &0x1000u64.to_le_bytes());
    });
    e("elf-wraps-address-space.elf", &|f| {
        set(f, 64 + 24, &(u64::MAX - 4).to_le_bytes());
    });
    e("elf-past-ram-end.elf", &|f| {
        set(f, 64 + 24, &(RAM + RAM_SIZE - 4).to_le_bytes())
    });
    e("elf-entry-outside.elf", &|f| {
        set(f, 24, &(RAM + 0x10_0000).to_le_bytes())
    });
    e("elf-entry-odd.elf", &|f| {
        set(f, 24, &(RAM + 1).to_le_bytes())
    });
    seeds.push(("elf-overlapping.elf", two_segments(RAM, RAM + 8)));
    seeds.push(("elf-two-segments.elf", two_segments(RAM, RAM + 0x1000)));
    for (name, text_offset, size) in [
        ("image-below-ram.img", 0xffff_ffff_8000_0000u64, 0u64),
        ("image-misaligned.img", 0x1000, 0),
        ("image-past-ram.img", RAM_SIZE, 0),
        ("image-too-big.img", 2 << 20, RAM_SIZE),
        ("image-size-huge.img", 2 << 20, u64::MAX),
    ] {
        seeds.push((name, image(text_offset, size, &[0x13, 0, 0, 0])));
    }
    seeds.push(("image-truncated.img", img[..60].to_vec()));
    seeds.push((
        "not-a-kernel.bin",
        b"#!/bin/sh\necho not a kernel\n".to_vec(),
    ));
    seeds.push(("empty.bin", Vec::new()));
    let mut per = std::collections::BTreeMap::<String, usize>::new();
    let mut lines = Vec::new();
    for (name, data) in &seeds {
        let got = outcome(data);
        std::fs::write(d.join(name), data).unwrap();
        lines.push(format!("{name} {got}"));
        *per.entry(got).or_default() += 1;
    }
    // Random mutations of the seeds' headers (ELF header and program header; Image header).
    let mut rng = XorShift(0x0010_ade4);
    let mut next = move || rng.next();
    for i in 0..3000 {
        let (mut f, ext, head) = if i % 3 == 0 {
            (img.clone(), "img", 64)
        } else {
            (elf.clone(), "elf", 120)
        };
        for _ in 0..1 + next() % 3 {
            let at = (next() % head) as usize;
            match next() % 3 {
                0 => f[at] ^= 1 << (next() % 8),
                1 => f[at] = next() as u8,
                _ => {
                    let at = at & !7;
                    let v = [0, u64::MAX, 1 << 63, next(), RAM, 2 << 20][(next() % 6) as usize];
                    if at + 8 <= f.len() {
                        f[at..at + 8].copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        let got = outcome(&f);
        let n = per.entry(got.clone()).or_default();
        if *n >= 2 {
            continue;
        }
        *n += 1;
        let name = format!("mutant-{i:04}.{ext}");
        std::fs::write(d.join(&name), &f).unwrap();
        lines.push(format!("{name} {got}"));
    }
    lines.push(String::new());
    std::fs::write(d.join("EXPECTED"), lines.join("\n")).unwrap();
    eprintln!("{} inputs: {per:?}", lines.len() - 1);
}
