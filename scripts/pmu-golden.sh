#!/bin/sh
# Regenerate the PMU golden files (tests/golden/pmu_*.out) from QEMU: runs each PMU guest
# under `qemu-system-riscv64 -M virt -bios none -icount shift=0` with Sscofpmf, Smcntrpmf and
# Smcdeleg/Ssccfg (QEMU >= 10.0, Debian's qemu-system-misc from bookworm-backports) and
# stores its console output. Run it after editing a PMU guest; `cargo test --release -p
# vmm-tests --test pmu` then compares vmm with the files (tests/tests/pmu.rs lists where QEMU
# departs from the spec).
set -eu
cd "$(dirname "$0")/.."
command -v qemu-system-riscv64 >/dev/null 2>&1 || {
	echo "pmu-golden: qemu-system-riscv64 not found (install qemu-system-misc >= 10.0)" >&2
	exit 1
}
PMU_GOLDEN_UPDATE=1 cargo test --release -p vmm-tests --test pmu golden_files_are_qemu_output -- --nocapture
