#!/usr/bin/env bash
# Sampling cost: the `bench` guest (483 million instructions, nothing sampled) against
# `bench_sample` (the same workload with mhpmcounter3 overflowing every 100 000 cycles of the
# cost model and an M-mode LCOFI handler re-arming it: about 6 500 samples, a profiler's
# pattern), on `vmm machine`, the best of RUNS wall-clock runs each, and the slowdown.
#
# With --callgrind, both run once under valgrind's callgrind instead and the figure is the
# host instruction count, which does not depend on the machine's load.
#
# Usage: scripts/bench-sample.sh [--jit on|off] [--callgrind] [RUNS]   (default: --jit on, 5 runs)
exec "$(dirname "$0")/bench-compare.sh" "sampling" bench bench_sample "$@"
