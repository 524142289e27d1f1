#!/usr/bin/env bash
# CTR recording cost: the branch-heavy guest (tests/guests/bench_ctr.h: recursive calls and an
# insertion sort, about 105 million instructions with one recorded transfer per ~4
# instructions) on `vmm machine` with CTR off (bench_ctr_off) and with M-mode recording on
# (bench_ctr_on), the best of RUNS wall-clock runs each, and the slowdown.
#
# With --callgrind, both run once under valgrind's callgrind instead and the figure is the
# host instruction count, which does not depend on the machine's load.
#
# Usage: scripts/bench-ctr.sh [--jit on|off] [--callgrind] [RUNS]   (default: --jit on, 5 runs)
exec "$(dirname "$0")/bench-compare.sh" "CTR recording" bench_ctr_off bench_ctr_on "$@"
