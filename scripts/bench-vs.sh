#!/usr/bin/env bash
# Observation cost for a VS-mode guest under `vmm run`: the branchy workload of
# tests/guests/sbi_bench.h (quicksort, recursion, hashing; about 190 million instructions)
# observing nothing (sbi_bench_off), recording its S-mode transfers in CTR (sbi_bench_ctr)
# and with four SBI PMU counters counting (sbi_bench_pmu: cycles, instructions, branches,
# branch misses). Prints the best of RUNS wall-clock runs of each (the run's own time from
# `--stats`) and the two slowdowns, measured in one run; with --callgrind, one run of each
# under valgrind's callgrind and the host instruction counts instead.
#
# Usage: scripts/bench-vs.sh [--jit on|off] [--callgrind] [RUNS]   (default: --jit on, 5 runs)
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib/bench-runs.sh
run() { measure run --kernel "$(target/release/guest-path "$1")" --max-insns 2000000000; }

off=$(run sbi_bench_off)
ctr=$(run sbi_bench_ctr)
pmu=$(run sbi_bench_pmu)
echo "VS-mode guest, nothing observed:  $off $unit (--jit $jit)"
echo "VS-mode guest, CTR recording:     $ctr $unit"
echo "VS-mode guest, 4 SBI PMU counters: $pmu $unit"
awk -v a="$off" -v b="$ctr" -v c="$pmu" 'BEGIN { printf "ratio CTR/off %.2f, PMU/off %.2f\n", b / a, c / a }'
