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

jit=on
if [ "${1:-}" = "--jit" ]; then
    case ${2:-} in
    on | off) jit=$2 ;;
    *) echo "--jit takes on or off" >&2; exit 2 ;;
    esac
    shift 2
fi
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
    local args=(run --jit "$jit" --kernel "$elf" --max-insns 2000000000)
    if [ "$callgrind" = 1 ]; then
        command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 1; }
        local out
        out=$(mktemp)
        valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$out" "$vmm" "${args[@]}" >/dev/null 2>&1 ||
            { echo "vmm failed under callgrind on $elf" >&2; exit 1; }
        sed -n 's/^summary: \([0-9]*\)/\1/p' "$out"
        rm -f "$out"
        return
    fi
    local best=""
    for _ in $(seq "$runs"); do
        local stats s
        stats=$("$vmm" "${args[@]}" --stats 2>&1 >/dev/null) || { echo "vmm failed on $elf: $stats" >&2; exit 1; }
        s=$(sed -n 's/^vmm: [0-9]* instructions in \([0-9.]*\) s.*/\1/p' <<<"$stats")
        [ -n "$s" ] || { echo "no --stats line from vmm: $stats" >&2; exit 1; }
        if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$s
        fi
    done
    echo "$best"
}

off=$(measure "$(target/release/guest-path sbi_bench_off)")
ctr=$(measure "$(target/release/guest-path sbi_bench_ctr)")
pmu=$(measure "$(target/release/guest-path sbi_bench_pmu)")
unit=$([ "$callgrind" = 1 ] && echo "host instructions" || echo "s (best of $runs)")
echo "VS-mode guest, nothing observed:  $off $unit (--jit $jit)"
echo "VS-mode guest, CTR recording:     $ctr $unit"
echo "VS-mode guest, 4 SBI PMU counters: $pmu $unit"
awk -v a="$off" -v b="$ctr" -v c="$pmu" 'BEGIN { printf "ratio CTR/off %.2f, PMU/off %.2f\n", b / a, c / a }'
