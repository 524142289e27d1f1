#!/usr/bin/env bash
# Guest speed of `vmm machine` on the `bench` guest (tests/guests/bench.c: CRC-32, a sieve
# and a matrix multiply, about 480 million instructions), and the same ELF under QEMU's TCG
# (qemu-system-riscv64 -M virt -bios none) when QEMU is installed.
#
# QEMU's MIPS use vmm's instruction count (the same ELF retires the same instructions on
# both; QEMU's own minstret counts host ticks unless -icount is on). QEMU's wall-clock time
# includes its start-up (a few hundredths of a second), also shown subtracted, as measured
# on a run of the `hello` guest.
#
# Usage: scripts/bench-machine.sh [RUNS]   (default 3; the best run of each is reported)
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${1:-3}

echo "building vmm and the guest programs (release)..." >&2
cargo build -q --release -p vmm
cargo build -q --release -p vmm-tests --bin guest-path
elf=$(target/release/guest-path bench)
hello=$(target/release/guest-path hello)
vmm=target/release/vmm
# Deterministic time, as the tests use (`vmm machine` defaults to host time).
export VMM_CLOCK=virtual

now() { date +%s.%N; }

best_vmm_secs=""
insns=""
for _ in $(seq "$runs"); do
    stats=$("$vmm" machine --stats "$elf" 2>&1 >/dev/null) || {
        echo "vmm machine $elf failed: $stats" >&2
        exit 1
    }
    # "vmm: N instructions retired in S s (M MIPS)"
    n=$(sed -n 's/^vmm: \([0-9]*\) instructions retired in \([0-9.]*\) s.*/\1/p' <<<"$stats")
    s=$(sed -n 's/^vmm: \([0-9]*\) instructions retired in \([0-9.]*\) s.*/\2/p' <<<"$stats")
    if [ -z "$n" ] || [ -z "$s" ]; then
        echo "cannot parse vmm --stats output: $stats" >&2
        exit 1
    fi
    insns=$n
    if [ -z "$best_vmm_secs" ] || awk -v a="$s" -v b="$best_vmm_secs" 'BEGIN { exit !(a < b) }'; then
        best_vmm_secs=$s
    fi
done
vmm_mips=$(awk -v n="$insns" -v s="$best_vmm_secs" 'BEGIN { printf "%.1f", n / s / 1e6 }')

qemu_row=""
ratio_row=""
if command -v qemu-system-riscv64 >/dev/null 2>&1; then
    qemu_run() {
        timeout 300 qemu-system-riscv64 -M virt -m 128M -smp 1 -bios none -nographic \
            -monitor none -kernel "$1" </dev/null >/dev/null
    }
    best_q=""
    best_startup=""
    for _ in $(seq "$runs"); do
        t0=$(now)
        qemu_run "$hello"
        t1=$(now)
        qemu_run "$elf"
        t2=$(now)
        startup=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        total=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", b - a }')
        if [ -z "$best_q" ] || awk -v a="$total" -v b="$best_q" 'BEGIN { exit !(a < b) }'; then
            best_q=$total
        fi
        if [ -z "$best_startup" ] || awk -v a="$startup" -v b="$best_startup" 'BEGIN { exit !(a < b) }'; then
            best_startup=$startup
        fi
    done
    q_mips=$(awk -v n="$insns" -v s="$best_q" 'BEGIN { printf "%.1f", n / s / 1e6 }')
    q_net=$(awk -v a="$best_q" -v b="$best_startup" 'BEGIN { d = a - b; if (d < 0.001) d = 0.001; printf "%.3f", d }')
    q_net_mips=$(awk -v n="$insns" -v s="$q_net" 'BEGIN { printf "%.1f", n / s / 1e6 }')
    ratio=$(awk -v a="$vmm_mips" -v b="$q_mips" 'BEGIN { printf "%.2f", a / b }')
    ratio_net=$(awk -v a="$vmm_mips" -v b="$q_net_mips" 'BEGIN { printf "%.2f", a / b }')
    qver=$(qemu-system-riscv64 --version | sed -n 1p | sed 's/QEMU emulator version //')
    qemu_row="| QEMU $qver TCG (wall clock, start-up included) | $insns | $best_q | $q_mips |
| QEMU TCG, less start-up ($best_startup s, from a run of \`hello\`) | $insns | $q_net | $q_net_mips |"
    ratio_row="
vmm / QEMU: **$ratio** (with QEMU's start-up), **$ratio_net** (without)."
else
    ratio_row="
qemu-system-riscv64 is not installed (Debian package qemu-system-misc): no comparison."
fi

cat <<TABLE
Guest \`bench\` ($(basename "$elf")), best of $runs run(s), $(nproc) host core(s), $(uname -m):

| machine | guest instructions | seconds | MIPS |
| --- | ---: | ---: | ---: |
| vmm machine (block translator, release build) | $insns | $best_vmm_secs | $vmm_mips |
${qemu_row}
${ratio_row}

TABLE
