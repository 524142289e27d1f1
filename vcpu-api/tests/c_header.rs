//! The C guests' CSR header is generated from `vcpu_api::csr` (the one definition of every
//! CSR number and field), and no guest source defines a CSR number of its own.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn committed_header_is_what_vcpu_api_generates() {
    let path = repo().join("guest/sdk/include/csr.h");
    let want = vcpu_api::csr::c_header();
    if std::env::var_os("REGENERATE_CSR_HEADER").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let got = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (REGENERATE_CSR_HEADER=1 writes it)",
            path.display()
        )
    });
    assert!(
        got == want,
        "{} differs from vcpu_api::csr::c_header(); regenerate it with \
         REGENERATE_CSR_HEADER=1 cargo test -p vcpu-api --test c_header",
        path.display()
    );
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("c" | "h" | "S")
        ) {
            out.push(p);
        }
    }
}

#[test]
fn guests_take_csr_numbers_from_the_header() {
    let mut files = Vec::new();
    for dir in ["tests/guests", "guest"] {
        sources(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 20, "guest sources not found");
    let header = repo().join("guest/sdk/include/csr.h");
    let mut own = Vec::new();
    for f in files.iter().filter(|f| **f != header) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let mut words = line.split_whitespace();
            if words.next() == Some("#define")
                && words
                    .next()
                    .is_some_and(|w| w.starts_with("CSR_") && !w.contains('('))
            {
                own.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(
        own.is_empty(),
        "guest sources define CSR numbers instead of including csr.h:\n{}",
        own.join("\n")
    );
}
