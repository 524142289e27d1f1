#!/bin/sh
# Regenerate the golden files of one differential suite from QEMU: `scripts/golden.sh ctr`
# (tests/golden/ctr_*.out: the CTR guests with Smctr/Ssctr) or `scripts/golden.sh pmu`
# (tests/golden/pmu_*.out: the PMU guests with Sscofpmf, Smcntrpmf and Smcdeleg/Ssccfg, under
# `-icount shift=0`). Each guest runs under `qemu-system-riscv64 -M virt -bios none` (QEMU >=
# 10.0, Debian's qemu-system-misc from bookworm-backports) and its console output is stored.
# Run it after editing a guest of the suite; `cargo test --release -p vmm-tests --test SUITE`
# then compares vmm with the files (tests/tests/SUITE.rs lists where QEMU departs from the
# spec). `ctr-golden.sh` and `pmu-golden.sh` run it for their suite.
set -eu
case "${1:-}" in
ctr) var=CTR_GOLDEN_UPDATE ;;
pmu) var=PMU_GOLDEN_UPDATE ;;
*)
	echo "usage: $0 ctr|pmu" >&2
	exit 2
	;;
esac
suite=$1
cd "$(dirname "$0")/.."
command -v qemu-system-riscv64 >/dev/null 2>&1 || {
	echo "$suite-golden: qemu-system-riscv64 not found (install qemu-system-misc >= 10.0)" >&2
	exit 1
}
env "$var=1" cargo test --release -p vmm-tests --test "$suite" golden_files_are_qemu_output -- --nocapture
