//! Differential tests against QEMU through golden files (`tests/golden/<guest>.out`), shared
//! by `tests/ctr.rs` and `tests/pmu.rs`.
//!
//! A [`GoldenSuite`] names the guests, the QEMU CPU and arguments that print the golden files,
//! and the [`Departure`]s: lines where QEMU departs from the specification, where the golden
//! file keeps QEMU's line and vmm must print the spec's. Its three checks are the tests:
//!
//! - [`GoldenSuite::check_vmm`]: each guest on `vmm machine` prints its golden file, line for
//!   line, with each departure's spec line in place of its QEMU line (which must stand in the
//!   golden file exactly once, so the list cannot go stale). Lines starting with `info `
//!   hold implementation choices and are not compared.
//! - [`GoldenSuite::check_qemu`]: QEMU still prints the golden files; with the suite's
//!   update variable set in the environment, it rewrites them instead.
//! - [`GoldenSuite::check_departures`]: every departure names a compared guest and changes
//!   its line.
//!
//! [`golden_tests!`](crate::golden_tests) makes the three the `#[test]` functions of a test
//! file.
//!
//! ```no_run
//! use vmm_tests::golden::{Departure, GoldenSuite};
//!
//! const SUITE: GoldenSuite = GoldenSuite {
//!     guests: &["ctr_m"],
//!     departures: &[Departure {
//!         guest: "ctr_m",
//!         qemu: "what QEMU prints",
//!         spec: "what the spec asks for",
//!         why: "the spec's rule, and how QEMU departs from it",
//!     }],
//!     qemu_cpu: "rv64,smctr=true",
//!     qemu_args: &[],
//!     qemu_needs: "QEMU >= 10.0",
//!     update_var: "CTR_GOLDEN_UPDATE",
//!     script: "scripts/ctr-golden.sh",
//!     departures_file: file!(),
//! };
//! SUITE.check_vmm();
//! ```

use std::path::PathBuf;
use std::time::Duration;

use vmm::machine::MachineExit;

use crate::{comparable, first_difference, guest, qemu, run_vmm, BUDGET};

/// How long QEMU may run one golden guest.
const QEMU_TIMEOUT: Duration = Duration::from_secs(30);

/// A line where QEMU departs from the specification: the golden file has `qemu`, vmm prints
/// `spec`.
#[derive(Clone, Copy, Debug)]
pub struct Departure {
    /// The guest that prints the line.
    pub guest: &'static str,
    /// QEMU's line, as it stands in the golden file.
    pub qemu: &'static str,
    /// The line the specification asks for, which vmm prints.
    pub spec: &'static str,
    /// The rule (with its reference) and how QEMU departs from it.
    pub why: &'static str,
}

/// A set of guests compared with QEMU through golden files.
#[derive(Clone, Copy, Debug)]
pub struct GoldenSuite {
    /// The guests compared.
    pub guests: &'static [&'static str],
    /// Where QEMU departs from the specification.
    pub departures: &'static [Departure],
    /// QEMU's `-cpu` for these guests.
    pub qemu_cpu: &'static str,
    /// More QEMU arguments (e.g. `-icount shift=0`).
    pub qemu_args: &'static [&'static str],
    /// What QEMU the guests need, for the message when QEMU fails them (e.g. `QEMU >= 10.0
    /// for Smctr`).
    pub qemu_needs: &'static str,
    /// The environment variable that makes [`GoldenSuite::check_qemu`] rewrite the files.
    pub update_var: &'static str,
    /// The script that regenerates the golden files, named in failure messages.
    pub script: &'static str,
    /// The source file that lists the departures, named in failure messages.
    pub departures_file: &'static str,
}

impl GoldenSuite {
    /// Asserts that each guest on vmm prints its golden file, with the departures' spec lines
    /// in place of their QEMU lines and without `info ` lines.
    pub fn check_vmm(&self) {
        let mut problems = Vec::new();
        for name in self.guests {
            let golden = self.read_golden(name);
            let want = match self.expected(name, &golden) {
                Ok(w) => comparable(&w),
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            };
            let v = run_vmm(&guest(name), BUDGET).unwrap_or_else(|e| panic!("{name}: {e}"));
            if v.exit != (MachineExit::Finished { code: 0 }) {
                problems.push(format!("{name}: on vmm: {:?}\n{}", v.exit, v.text()));
                continue;
            }
            if let Some(diff) = first_difference(&want, &comparable(&v.text()), "golden", "vmm") {
                problems.push(format!("{name}: {diff}"));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    }

    /// Asserts that QEMU still prints the golden files; with [`GoldenSuite::update_var`] set,
    /// writes QEMU's output to them instead.
    pub fn check_qemu(&self) {
        if let Err(e) = qemu::check_available() {
            panic!("{e}");
        }
        let update = std::env::var_os(self.update_var).is_some();
        let mut problems = Vec::new();
        for name in self.guests {
            let q = qemu::run_with_args(
                &guest(name),
                QEMU_TIMEOUT,
                Some(self.qemu_cpu),
                self.qemu_args,
            )
            .unwrap_or_else(|e| panic!("cannot start QEMU: {e}"));
            let text = String::from_utf8_lossy(&q.output).into_owned();
            if q.timed_out || q.status != Some(0) {
                problems.push(format!(
                    "{name}: under QEMU (needs {}: Debian's qemu-system-misc from \
                     bookworm-backports): status {:?}, timed out {}\nstderr: {}\n{text}",
                    self.qemu_needs, q.status, q.timed_out, q.stderr
                ));
                continue;
            }
            let path = golden_path(name);
            if update {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &text).unwrap();
                eprintln!("wrote {}", path.display());
                continue;
            }
            let golden = self.read_golden(name);
            if let Some(diff) = first_difference(&golden, &text, "golden file", "QEMU now") {
                problems.push(format!(
                    "{name}: the golden file is not QEMU's output (edited guest? run {}): {diff}",
                    self.script
                ));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    }

    /// Asserts that every departure names a compared guest and changes its line.
    pub fn check_departures(&self) {
        for d in self.departures {
            assert!(self.guests.contains(&d.guest), "{}", d.guest);
            assert_ne!(d.qemu, d.spec, "{}", d.why);
        }
    }

    fn read_golden(&self, name: &str) -> String {
        let path = golden_path(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the golden file {}: {e}; run {}",
                path.display(),
                self.script
            )
        })
    }

    /// The golden file with the spec's line substituted for each departure of guest `name`.
    fn expected(&self, name: &str, golden: &str) -> Result<String, String> {
        let mut lines: Vec<String> = golden.lines().map(str::to_string).collect();
        for d in self.departures.iter().filter(|d| d.guest == name) {
            let n = lines.iter().filter(|l| *l == d.qemu).count();
            if n != 1 {
                return Err(format!(
                    "{name}: the departure line {:?} occurs {n} times in the golden file \
                     (expected once); update DEPARTURES in {} ({})",
                    d.qemu, self.departures_file, d.why
                ));
            }
            for l in lines.iter_mut().filter(|l| *l == d.qemu) {
                *l = d.spec.to_string();
            }
        }
        Ok(lines.iter().map(|l| format!("{l}\n")).collect())
    }
}

/// The three tests of a [`GoldenSuite`], as `#[test]` functions of the calling test file:
/// `vmm_matches_golden_files` ([`GoldenSuite::check_vmm`]), `golden_files_are_qemu_output`
/// ([`GoldenSuite::check_qemu`]) and `departures_name_known_guests`
/// ([`GoldenSuite::check_departures`]).
#[macro_export]
macro_rules! golden_tests {
    ($suite:expr) => {
        #[test]
        fn vmm_matches_golden_files() {
            $suite.check_vmm();
        }

        #[test]
        fn golden_files_are_qemu_output() {
            $suite.check_qemu();
        }

        #[test]
        fn departures_name_known_guests() {
            $suite.check_departures();
        }
    };
}

/// The golden file of guest `name`: `tests/golden/<name>.out`.
pub fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(format!("{name}.out"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUITE: GoldenSuite = GoldenSuite {
        guests: &["g"],
        departures: &[Departure {
            guest: "g",
            qemu: "x: 0",
            spec: "x: 1",
            why: "because",
        }],
        qemu_cpu: "rv64",
        qemu_args: &[],
        qemu_needs: "QEMU >= 10.0",
        update_var: "NO_SUCH_GOLDEN_UPDATE",
        script: "scripts/none.sh",
        departures_file: file!(),
    };

    #[test]
    fn expected_substitutes_each_departure_once() {
        assert_eq!(SUITE.expected("g", "a\nx: 0\nb\n").unwrap(), "a\nx: 1\nb\n");
        assert_eq!(SUITE.expected("h", "x: 0\n").unwrap(), "x: 0\n");
        let e = SUITE.expected("g", "a\n").unwrap_err();
        assert!(e.contains("occurs 0 times") && e.contains("because"), "{e}");
        let e = SUITE.expected("g", "x: 0\nx: 0\n").unwrap_err();
        assert!(e.contains("occurs 2 times"), "{e}");
    }

    #[test]
    fn departures_are_checked() {
        SUITE.check_departures();
    }
}
