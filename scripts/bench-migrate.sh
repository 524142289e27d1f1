#!/usr/bin/env bash
# Live migration between two vmm processes on this host, over a UNIX socket: a guest under
# `vmm run --api-sock` moves to a `vmm receive` with `vmm ctl migrate`, and the answer's
# figures are printed: rounds, total time, the guest's pause (downtime), bytes sent. Two
# guests at two RAM sizes: sbi_ctr_spin (records CTR forever, writes almost nothing) and
# sbi_dirty (rewrites every page of 16 MiB pass after pass, CTR recording on), with
# 256 MiB and 1 GiB of guest RAM; the downtime budget is the VMM's default (30 ms) unless
# MAX_DOWNTIME_MS is set. Where the host cannot track writes the moves are stop-and-copy
# (the figures say so).
#
# Usage: scripts/bench-migrate.sh        (MAX_DOWNTIME_MS=N to change the budget)
set -euo pipefail
cd "$(dirname "$0")/.."

echo "building vmm and the guest programs (release)..." >&2
cargo build -q --release -p vmm
cargo build -q --release -p vmm-tests --bin guest-path
# Virtual time, as the README's figures (`vmm run` defaults to host time).
export VMM_CLOCK=virtual
vmm=target/release/vmm
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT

budget=()
[ -n "${MAX_DOWNTIME_MS:-}" ] && budget=(--max-downtime-ms "$MAX_DOWNTIME_MS")

# move GUEST MIB: one migration; prints its figures.
move() {
    local guest=$1 mib=$2
    local api=$dir/api.sock dst=$dir/dst.sock
    rm -f "$api" "$dst"
    "$vmm" run --kernel "$(target/release/guest-path "$guest")" --memory "$mib" \
        --api-sock "$api" >/dev/null 2>"$dir/src.err" &
    local src=$!
    # The destination runs the guest on for 50 M instructions, then ends.
    "$vmm" receive --listen "unix:$dst" --max-insns 50000000 >/dev/null 2>"$dir/dst.err" &
    local dstp=$!
    for _ in $(seq 100); do [ -S "$api" ] && [ -S "$dst" ] && break; sleep 0.05; done
    sleep 0.5 # the guest at work
    local answer
    if ! answer=$("$vmm" ctl --api-sock "$api" --json migrate "unix:$dst" "${budget[@]}"); then
        echo "migration of $guest ($mib MiB) failed: $answer" >&2
        cat "$dir/src.err" "$dir/dst.err" >&2
        exit 1
    fi
    wait "$src" || { echo "the source did not exit 0" >&2; cat "$dir/src.err" >&2; exit 1; }
    wait "$dstp" || true
    python3 - "$guest" "$mib" "$answer" <<'PY'
import json, sys
guest, mib, a = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
note = "" if a["precopy"] else "  (stop-and-copy)"
print("%-13s %5s MiB  rounds %2d  total %7.1f ms  downtime %6.1f ms  sent %7.1f MB%s"
      % (guest, mib, a["rounds"], a["total_ms"], a["downtime_ms"], a["bytes"] / 1e6, note))
PY
}

for mib in 256 1024; do
    move sbi_ctr_spin "$mib"
    move sbi_dirty "$mib"
done
