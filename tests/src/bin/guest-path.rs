//! Prints the path of a guest program's ELF file (built by `build.rs`), or of all of them.
//!
//! `cargo run -q --release -p vmm-tests --bin guest-path -- bench` prints the path of
//! `bench.elf`; without an argument it prints `name path` for every guest.

use std::process::ExitCode;

use vmm_tests::guests::GUESTS;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        for (name, path) in GUESTS {
            println!("{name} {path}");
        }
        return ExitCode::SUCCESS;
    }
    let mut status = ExitCode::SUCCESS;
    for arg in &args {
        match GUESTS.iter().find(|(name, _)| name == arg) {
            Some((_, path)) => println!("{path}"),
            None => {
                let names: Vec<&str> = GUESTS.iter().map(|(n, _)| *n).collect();
                eprintln!(
                    "guest-path: no guest {arg:?}; the guests are: {}",
                    names.join(" ")
                );
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}
