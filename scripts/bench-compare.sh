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
    if [ "$callgrind" = 1 ]; then
        command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 1; }
        local out
        out=$(mktemp)
        valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$out" "$vmm" machine --jit "$jit" "$elf" >/dev/null 2>&1
        sed -n 's/^summary: \([0-9]*\)/\1/p' "$out"
        rm -f "$out"
        return
    fi
    local best=""
    for _ in $(seq "$runs"); do
        local stats s
        stats=$("$vmm" machine --jit "$jit" --stats "$elf" 2>&1 >/dev/null) || { echo "vmm failed: $stats" >&2; exit 1; }
        s=$(sed -n 's/^vmm: [0-9]* instructions retired in \([0-9.]*\) s.*/\1/p' <<<"$stats")
        if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$s
        fi
    done
    echo "$best"
}

off=$(measure "$(target/release/guest-path "$guest_off")")
on=$(measure "$(target/release/guest-path "$guest_on")")
unit=$([ "$callgrind" = 1 ] && echo "host instructions" || echo "s (best of $runs)")
echo "$label off: $off $unit (--jit $jit)"
echo "$label on:  $on $unit (--jit $jit)"
awk -v a="$off" -v b="$on" -v l="$label" 'BEGIN { printf "slowdown with %s on: %.1f%% (ratio %.2f)\n", l, (b / a - 1) * 100, b / a }'
