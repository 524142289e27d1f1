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
# Usage: scripts/bench-linux-boot.sh [RUNS]   (default 1; the best run of each is reported,
# and with more than one run also the median time to exit: on a noisy host the best of a
# few runs favours whichever boot varies more)
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

min() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a < b) ? a : b }'; }
# median VALUES...: the median of the numbers given.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

vmm_ready= vmm_total= int_ready= int_total= q_ready= q_total= m_ready= m_total=
one_ready= one_total=
# Every run's time to exit, for the medians.
vmm_all=() one_all=() q_all=()
for i in $(seq "$runs"); do
    echo "run $i/$runs: vmm run..." >&2
    measure vmm "$vmm" run --kernel "$KERNEL" --initrd "$INITRD" --memory 256 \
        --cmdline "$cmdline" --vcpus "$vcpus"
    vmm_ready=$(min "$m_ready" "$vmm_ready")
    vmm_total=$(min "$m_total" "$vmm_total")
    vmm_all+=("$m_total")
    if [ "$vcpus" -gt 1 ]; then
        echo "run $i/$runs: vmm run --vcpus 1..." >&2
        measure one "$vmm" run --kernel "$KERNEL" --initrd "$INITRD" --memory 256 \
            --cmdline "$cmdline" --vcpus 1
        one_ready=$(min "$m_ready" "$one_ready")
        one_total=$(min "$m_total" "$one_total")
        one_all+=("$m_total")
    fi
    echo "run $i/$runs: vmm run --jit off..." >&2
    measure interp "$vmm" run --kernel "$KERNEL" --initrd "$INITRD" --memory 256 \
        --cmdline "$cmdline" --vcpus "$vcpus" --jit off
    int_ready=$(min "$m_ready" "$int_ready")
    int_total=$(min "$m_total" "$int_total")
    echo "run $i/$runs: QEMU..." >&2
    measure qemu "$qemu" -M virt -m 256 -smp "$vcpus" -nographic -bios "$fw" \
        -kernel "$KERNEL" -initrd "$INITRD" -append "$cmdline"
    q_ready=$(min "$m_ready" "$q_ready")
    q_total=$(min "$m_total" "$q_total")
    q_all+=("$m_total")
done

kver=$(sed -n 's/^linux-image-[0-9].* \(.*\)$/\1/p' "$(dirname "$KERNEL")/versions" | head -n1)
qver=$("$qemu" --version | sed -n 1p | sed 's/QEMU emulator version //')
sbiver=$(dpkg-query -W -f '${Version}' opensbi)
ratio_ready=$(awk -v a="$vmm_ready" -v b="$q_ready" 'BEGIN { printf "%.2f", a / b }')
ratio_total=$(awk -v a="$vmm_total" -v b="$q_total" 'BEGIN { printf "%.2f", a / b }')

cat <<TABLE
Linux boot, Debian kernel ${kver:-?} + busybox initramfs, 256 MiB, $vcpus hart(s), best of $runs run(s),
$(nproc) host core(s), $(uname -m); command line: $cmdline

| machine | to $marker (s) | to exit after power-off (s) |
| --- | ---: | ---: |
| vmm run (block translator, release build; the VMM is the SBI) | $vmm_ready | $vmm_total |
| vmm run --jit off (interpreter only) | $int_ready | $int_total |
| QEMU $qver TCG, -M virt, OpenSBI $sbiver fw_dynamic | $q_ready | $q_total |
| ratio vmm (block translator) / QEMU | $ratio_ready | $ratio_total |
TABLE
if [ "$vcpus" -gt 1 ]; then
    cat <<TABLE
| vmm run --vcpus 1 (block translator) | $one_ready | $one_total |
| ratio vmm $vcpus vCPUs / 1 vCPU | $(awk -v a="$vmm_ready" -v b="$one_ready" 'BEGIN { printf "%.2f", a / b }') | $(awk -v a="$vmm_total" -v b="$one_total" 'BEGIN { printf "%.2f", a / b }') |
TABLE
fi
if [ "$runs" -gt 1 ]; then
    vmm_med=$(median "${vmm_all[@]}")
    q_med=$(median "${q_all[@]}")
    echo
    echo "Medians of $runs runs, to exit: vmm $vmm_med s, QEMU $q_med s, ratio $(awk -v a="$vmm_med" -v b="$q_med" 'BEGIN { printf "%.2f", a / b }')"
    if [ "$vcpus" -gt 1 ]; then
        one_med=$(median "${one_all[@]}")
        echo "  vmm --vcpus 1 $one_med s, ratio $vcpus vCPUs / 1 vCPU $(awk -v a="$vmm_med" -v b="$one_med" 'BEGIN { printf "%.2f", a / b }')"
    fi
fi
echo
