#!/usr/bin/env bash
# CTR recording cost: the branch-heavy guest (tests/guests/bench_ctr.h: recursive calls and an
# insertion sort, about 105 million instructions with one recorded transfer per ~4
# instructions) on `vmm machine` with CTR off (bench_ctr_off) and with M-mode recording on
# (bench_ctr_on), the best of RUNS wall-clock runs each, and the slowdown.
#
# With --callgrind, both run once under valgrind's callgrind instead and the figure is the
# host instruction count, which does not depend on the machine's load.
#
# Usage: scripts/bench-ctr.sh [--callgrind] [RUNS]   (default 5 runs)
set -euo pipefail
cd "$(dirname "$0")/.."

callgrind=0
if [ "${1:-}" = "--callgrind" ]; then
    callgrind=1
    shift
fi
runs=${1:-5}

echo "building vmm and the guest programs (release)..." >&2
cargo build -q --release -p vmm
cargo build -q --release -p vmm-tests --bin guest-path
vmm=target/release/vmm

measure() { # ELF -> figure (seconds, or host instructions)
    local elf=$1
    if [ "$callgrind" = 1 ]; then
        command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 1; }
        local out
        out=$(mktemp)
        valgrind --tool=callgrind --callgrind-out-file="$out" "$vmm" machine "$elf" >/dev/null 2>&1
        sed -n 's/^summary: \([0-9]*\)/\1/p' "$out"
        rm -f "$out"
        return
    fi
    local best=""
    for _ in $(seq "$runs"); do
        local stats s
        stats=$("$vmm" machine --stats "$elf" 2>&1 >/dev/null) || { echo "vmm failed: $stats" >&2; exit 1; }
        s=$(sed -n 's/^vmm: [0-9]* instructions retired in \([0-9.]*\) s.*/\1/p' <<<"$stats")
        if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$s
        fi
    done
    echo "$best"
}

off=$(measure "$(target/release/guest-path bench_ctr_off)")
on=$(measure "$(target/release/guest-path bench_ctr_on)")
unit=$([ "$callgrind" = 1 ] && echo "host instructions" || echo "s (best of $runs)")
echo "CTR off: $off $unit"
echo "CTR on:  $on $unit"
awk -v a="$off" -v b="$on" 'BEGIN { printf "slowdown with CTR recording on: %.1f%%\n", (b / a - 1) * 100 }'
