#!/usr/bin/env bash
# Compare two guests on `vmm machine`: the same workload without and with a hart feature
# switched on (used by bench-ctr.sh and bench-pmu.sh). Prints the best of RUNS wall-clock
# runs of each and the slowdown; with --callgrind, one run of each under valgrind's callgrind
# and the host instruction counts, which do not depend on the machine's load.
# Both run with block translation (`--jit on`, the default: translated blocks record CTR and
# report the monitor's events themselves), or both interpreted with `--jit off`: the
# feature's cost in each.
#
# Usage: scripts/bench-compare.sh LABEL GUEST_OFF GUEST_ON [--jit on|off] [--callgrind] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."

label=$1 guest_off=$2 guest_on=$3
shift 3
. scripts/lib/bench-runs.sh

off=$(measure machine "$(target/release/guest-path "$guest_off")")
on=$(measure machine "$(target/release/guest-path "$guest_on")")
echo "$label off: $off $unit (--jit $jit)"
echo "$label on:  $on $unit (--jit $jit)"
awk -v a="$off" -v b="$on" -v l="$label" 'BEGIN { printf "slowdown with %s on: %.1f%% (ratio %.2f)\n", l, (b / a - 1) * 100, b / a }'
