#!/bin/sh
# Regenerate the CTR golden files (tests/golden/ctr_*.out) from QEMU: runs each CTR guest
# under `qemu-system-riscv64 -M virt -bios none` with Smctr/Ssctr (QEMU >= 10.0, Debian's
# qemu-system-misc from bookworm-backports) and stores its console output. Run it after
# editing a CTR guest; `cargo test --release -p vmm-tests --test ctr` then compares vmm with
# the files (tests/tests/ctr.rs lists where QEMU departs from the spec).
set -eu
cd "$(dirname "$0")/.."
command -v qemu-system-riscv64 >/dev/null 2>&1 || {
	echo "ctr-golden: qemu-system-riscv64 not found (install qemu-system-misc >= 10.0)" >&2
	exit 1
}
CTR_GOLDEN_UPDATE=1 cargo test --release -p vmm-tests --test ctr golden_files_are_qemu_output -- --nocapture
