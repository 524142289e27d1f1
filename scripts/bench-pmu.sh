#!/usr/bin/env bash
# Performance-monitor cost: the `bench` guest (483 million instructions; every hpm counter
# idle) against `bench_pmu` (the same workload with mhpmcounter3-31 counting all 28 events
# of the catalog, docs/pmu.md), on `vmm machine`, the best of RUNS wall-clock runs each, and
# the slowdown. The target is 15% or less.
#
# With --callgrind, both run once under valgrind's callgrind instead and the figure is the
# host instruction count, which does not depend on the machine's load.
#
# Usage: scripts/bench-pmu.sh [--jit on|off] [--callgrind] [RUNS]   (default: --jit on, 5 runs)
exec "$(dirname "$0")/bench-compare.sh" "counting" bench bench_pmu "$@"
