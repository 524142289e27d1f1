#!/usr/bin/env bash
# Guest speed on the floating-point and division benchmark `bench_fp`
# (tests/guests/bench_fp.c: a double-precision matrix multiply, square roots, floating-point
# divisions, integer division and remainder; about 200 million instructions): `vmm machine`
# with block translation on and off, and the same ELF under QEMU's TCG
# (qemu-system-riscv64 -M virt -bios none), all measured in this one run.
#
# Times are wall-clock seconds of the whole process (start-up included for both), the best
# of RUNS runs each; QEMU's MIPS use vmm's instruction count (the same ELF retires the same
# instructions on both). The ratios are QEMU's time over vmm's: above 1, vmm is faster.
#
# Usage: scripts/bench-fp.sh [RUNS]   (default 3)
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${1:-3}

echo "building vmm and the guest programs (release)..." >&2
cargo build -q --release -p vmm
cargo build -q --release -p vmm-tests --bin guest-path
elf=$(target/release/guest-path bench_fp)
vmm=target/release/vmm
# Deterministic time, as the tests use (`vmm machine` defaults to host time).
export VMM_CLOCK=virtual

now() { date +%s.%N; }
# The smaller of two decimals.
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a < b) ? a : b }'; }

statsfile=$(mktemp)
trap 'rm -f "$statsfile"' EXIT
# vmm with `--jit on|off`: the best wall-clock time (its --stats line goes to $statsfile).
vmm_best() {
    local best="" stats t0 t1
    for _ in $(seq "$runs"); do
        t0=$(now)
        stats=$("$vmm" machine --jit "$1" --stats "$elf" 2>&1 >/dev/null) || {
            echo "vmm machine --jit $1 $elf failed: $stats" >&2
            exit 1
        }
        t1=$(now)
        best=$(min "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" "$best")
    done
    echo "$stats" >"$statsfile"
    echo "$best"
}

on=$(vmm_best on)
off=$(vmm_best off)
# "vmm: N instructions retired in S s (M MIPS), B blocks translated"
insns=$(sed -n 's/^vmm: \([0-9]*\) instructions retired.*/\1/p' "$statsfile")
if [ -z "$insns" ]; then
    echo "cannot parse vmm --stats output: $(cat "$statsfile")" >&2
    exit 1
fi
mips() { awk -v n="$insns" -v s="$1" 'BEGIN { printf "%.1f", n / s / 1e6 }'; }

qemu_row=""
ratio_q=""
if command -v qemu-system-riscv64 >/dev/null 2>&1; then
    q=""
    for _ in $(seq "$runs"); do
        t0=$(now)
        timeout 300 qemu-system-riscv64 -M virt -m 128M -smp 1 -bios none -nographic \
            -monitor none -kernel "$elf" </dev/null >/dev/null
        t1=$(now)
        q=$(min "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" "$q")
    done
    qver=$(qemu-system-riscv64 --version | sed -n 1p | sed 's/QEMU emulator version //')
    qemu_row="| QEMU $qver TCG | $q | $(mips "$q") |"
    ratio_q="QEMU time / vmm (jit on) time: **$(awk -v a="$q" -v b="$on" 'BEGIN { printf "%.2f", a / b }')**; "
else
    qemu_row="| QEMU: qemu-system-riscv64 is not installed (Debian package qemu-system-misc) | | |"
fi
ratio_off=$(awk -v a="$off" -v b="$on" 'BEGIN { printf "%.2f", a / b }')

cat <<TABLE
Guest \`bench_fp\` ($(basename "$elf"), $insns instructions), best of $runs run(s),
$(nproc) host core(s), $(uname -m), wall clock with start-up:

| machine | seconds | MIPS |
| --- | ---: | ---: |
| vmm machine, --jit on | $on | $(mips "$on") |
| vmm machine, --jit off | $off | $(mips "$off") |
$qemu_row

${ratio_q}vmm jit off / jit on time: **$ratio_off**.

TABLE
