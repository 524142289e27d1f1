#!/usr/bin/env bash
# Linux boot time on `vmm run` and on QEMU's TCG, side by side: Debian's riscv64 kernel and
# the busybox initramfs of scripts/linux-guest.sh, wall-clock time from the start of the
# process to the `VMM-GUEST-READY` line of the initramfs's /init (userspace is up), and to
# the end of the process (the workload `true`, then power-off through SBI SRST).
#
#   vmm:  target/release/vmm run --kernel Image --initrd initramfs.cpio.gz --memory 256 \
#             --cmdline CMDLINE            (and again with --jit off: the interpreter alone)
#   QEMU: qemu-system-riscv64 -M virt -m 256 -nographic -bios fw_dynamic.bin \
#             -kernel Image -initrd initramfs.cpio.gz -append CMDLINE
#
# QEMU runs Debian's OpenSBI (package opensbi, installed with apt-get when missing, which
# needs root) as M-mode firmware; vmm is the SBI itself. Both get the same kernel, initramfs
# and command line.
#
# vmm boots twice in each run: on virtual time (`--clock virtual`, deterministic: time counts
# instructions, as the tests use it) and on host time (`--clock host`, `vmm run`'s default,
# and the clock QEMU's TCG runs on). Both are compared with QEMU.
#
# Usage: scripts/bench-linux-boot.sh [RUNS]   (default 1; the best run of each is reported,
# and with more than one run also the median time to exit and the median of each run's
# ratios: on a noisy host the best of a few runs favours whichever boot varies more, and the
# host's load drifts less within a run than across runs)
# Env: LINUX_GUEST_DIR, LINUX_GUEST_SUITE (see scripts/linux-guest.sh), QEMU_SYSTEM_RISCV64,
# LINUX_BOOT_VCPUS (harts, default 1: vmm run --vcpus N, QEMU -smp N; with more than one,
# vmm also boots with one vCPU in each run, and the table gives N vCPUs against one).
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${1:-1}
case $runs in '' | *[!0-9]* | 0) echo "usage: $0 [RUNS]" >&2; exit 2 ;; esac
vcpus=${LINUX_BOOT_VCPUS:-1}
case $vcpus in '' | *[!0-9]* | 0) echo "LINUX_BOOT_VCPUS must be a number of harts, not '$vcpus'" >&2; exit 2 ;; esac
qemu=${QEMU_SYSTEM_RISCV64:-qemu-system-riscv64}
cmdline='console=ttyS0 earlycon=sbi panic=-1 vmmcmd="true"'
marker=VMM-GUEST-READY
limit=600 # seconds, per boot

. scripts/lib/linux-bench.sh

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

now() { date +%s.%N; }

# measure NAME COMMAND...: runs COMMAND with its console output on a pipe; sets m_ready and
# m_total (seconds to the marker and to the end); fails (showing the end of the log) if the
# marker never comes or the command fails.
measure() {
    local name=$1 t0 t_ready= t_end line rc=0 pid
    shift
    : >"$log/$name"
    t0=$(now)
    while IFS= read -r line; do
        printf '%s\n' "$line" >>"$log/$name"
        if [ -z "$t_ready" ]; then
            case $line in *"$marker"*) t_ready=$(now) ;; esac
        fi
    done < <(timeout "$limit" "$@" </dev/null 2>&1)
    pid=$!
    t_end=$(now)
    wait "$pid" || rc=$?
    if [ -z "$t_ready" ] || [ "$rc" != 0 ]; then
        tail -n 30 "$log/$name" >&2
        die "$name: no $marker line or exit status $rc (124: more than $limit s)"
    fi
    m_ready=$(awk -v a="$t0" -v r="$t_ready" 'BEGIN { printf "%.2f", r - a }')
    m_total=$(awk -v a="$t0" -v e="$t_end" 'BEGIN { printf "%.2f", e - a }')
}

# ratio A B: A / B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a < b) ? a : b }'; }
# median VALUES...: the median of the numbers given.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Per kind of boot: the best time to VMM-GUEST-READY and to exit, and every run's time to
# exit (for the medians). Kinds: virt and host (vmm, N vCPUs, each clock), virt1 and host1
# (one vCPU, when N > 1), interp (--jit off, virtual time), qemu.
declare -A best_ready best_total all_total last_total
# Each run's ratios of times to exit (`pair A B` at the end of a run): the kinds of one run
# boot minutes apart at most, so their ratio drifts less with the host's load than ratios of
# best or median times taken over runs far apart; the table gives their median.
declare -A pairs
pair() { pairs[$1/$2]="${pairs[$1/$2]:-} $(ratio "${last_total[$1]}" "${last_total[$2]}")"; }
# boot KIND COMMAND...: measures COMMAND and records it under KIND.
boot() {
    local kind=$1
    shift
    echo "run $i/$runs: $kind..." >&2
    measure "$kind" "$@"
    best_ready[$kind]=$(min "$m_ready" "${best_ready[$kind]:-}")
    best_total[$kind]=$(min "$m_total" "${best_total[$kind]:-}")
    all_total[$kind]="${all_total[$kind]:-} $m_total"
    last_total[$kind]=$m_total
}
vmm_boot() {
    local kind=$1
    shift
    boot "$kind" "$vmm" run --kernel "$KERNEL" --initrd "$INITRD" --memory 256 \
        --cmdline "$cmdline" "$@"
}
kinds=(virt host)
[ "$vcpus" -gt 1 ] && kinds+=(virt1 host1)
for i in $(seq "$runs"); do
    vmm_boot virt --vcpus "$vcpus" --clock virtual
    vmm_boot host --vcpus "$vcpus" --clock host
    if [ "$vcpus" -gt 1 ]; then
        vmm_boot virt1 --vcpus 1 --clock virtual
        vmm_boot host1 --vcpus 1 --clock host
    fi
    vmm_boot interp --vcpus "$vcpus" --clock virtual --jit off
    boot qemu "$qemu" -M virt -m 256 -smp "$vcpus" -nographic -bios "$fw" \
        -kernel "$KERNEL" -initrd "$INITRD" -append "$cmdline"
    pair virt qemu
    pair host qemu
    if [ "$vcpus" -gt 1 ]; then
        pair virt virt1
        pair host host1
    fi
done
# row LABEL KIND: a table row with the kind's best times.
row() { echo "| $1 | ${best_ready[$2]} | ${best_total[$2]} |"; }
# ratio_row LABEL A B: a table row with A's best times over B's.
ratio_row() {
    echo "| $1 | $(ratio "${best_ready[$2]}" "${best_ready[$3]}") | $(ratio "${best_total[$2]}" "${best_total[$3]}") |"
}

kver=$(sed -n 's/^linux-image-[0-9].* \(.*\)$/\1/p' "$(dirname "$KERNEL")/versions" | head -n1)
qver=$("$qemu" --version | sed -n 1p | sed 's/QEMU emulator version //')
sbiver=$(dpkg-query -W -f '${Version}' opensbi)

cat <<TABLE
Linux boot, Debian kernel ${kver:-?} + busybox initramfs, 256 MiB, $vcpus hart(s), best of $runs run(s),
$(nproc) host core(s), $(uname -m); command line: $cmdline

| machine | to $marker (s) | to exit after power-off (s) |
| --- | ---: | ---: |
TABLE
row "vmm run --clock virtual (block translator, release build; the VMM is the SBI)" virt
row "vmm run --clock host (the default clock)" host
row "vmm run --jit off (interpreter only, virtual time)" interp
row "QEMU $qver TCG, -M virt, OpenSBI $sbiver fw_dynamic" qemu
ratio_row "ratio vmm virtual time / QEMU" virt qemu
ratio_row "ratio vmm host time / QEMU" host qemu
if [ "$vcpus" -gt 1 ]; then
    row "vmm run --vcpus 1 --clock virtual" virt1
    row "vmm run --vcpus 1 --clock host" host1
    ratio_row "ratio $vcpus vCPUs / 1 vCPU, virtual time" virt virt1
    ratio_row "ratio $vcpus vCPUs / 1 vCPU, host time" host host1
fi
if [ "$runs" -gt 1 ]; then
    declare -A med
    for k in "${kinds[@]}" qemu; do
        # shellcheck disable=SC2086 # the list of times, one word each
        med[$k]=$(median ${all_total[$k]})
    done
    echo
    echo "Medians of $runs runs, to exit: QEMU ${med[qemu]} s;" \
        "vmm virtual time ${med[virt]} s (ratio $(ratio "${med[virt]}" "${med[qemu]}")), host time ${med[host]} s ($(ratio "${med[host]}" "${med[qemu]}"))"
    if [ "$vcpus" -gt 1 ]; then
        echo "  1 vCPU: virtual time ${med[virt1]} s, host time ${med[host1]} s;" \
            "$vcpus vCPUs / 1 vCPU: virtual time $(ratio "${med[virt]}" "${med[virt1]}"), host time $(ratio "${med[host]}" "${med[host1]}")"
    fi
    # shellcheck disable=SC2086 # the lists of ratios, one word each
    echo "Medians of each run's ratios, to exit: vmm virtual time / QEMU $(median ${pairs[virt/qemu]})," \
        "host time / QEMU $(median ${pairs[host/qemu]})"
    if [ "$vcpus" -gt 1 ]; then
        # shellcheck disable=SC2086
        echo "  $vcpus vCPUs / 1 vCPU: virtual time $(median ${pairs[virt/virt1]}), host time $(median ${pairs[host/host1]})"
    fi
    for k in "${!pairs[@]}"; do
        echo "  each run's $k:${pairs[$k]}"
    done | sort
fi
echo
