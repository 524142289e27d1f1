#!/usr/bin/env bash
# `perf record` in the Debian Linux guest, on `vmm run` and on QEMU's TCG, side by side: the
# same kernel and perf initramfs (scripts/linux-guest.sh), the same command line. Each
# machine boots three times: with the workload `true` (the boot and power-off alone), with
# a workload (`busybox md5sum /usr/bin/perf`, COUNT times; about 0.3 G instructions each),
# and with that workload under `perf record -e cycles -c PERIOD` (sampling on
# counter-overflow interrupts: Sscofpmf and the SBI PMU extension; on vmm through
# pmu-virt, on QEMU through OpenSBI). The workload's time is the whole process's wall time
# less the `true` boot's (console markers would not do: QEMU's guest writes its console
# through an interrupt-driven UART, in bursts). Both boot with `cryptomgr.notests` (below).
#
#   vmm:  target/release/vmm run --kernel Image --initrd initramfs-perf.cpio --memory 384 \
#             --cmdline CMDLINE
#   QEMU: qemu-system-riscv64 -M virt -cpu rv64,sscofpmf=true -m 384 -nographic \
#             -bios fw_dynamic.bin -kernel Image -initrd initramfs-perf.cpio -append CMDLINE
#
# Usage: scripts/bench-linux-perf.sh [RUNS]   (default 1; the best run of each is reported)
# Env: LINUX_GUEST_DIR, LINUX_GUEST_SUITE(S) (see scripts/linux-guest.sh), QEMU_SYSTEM_RISCV64,
#      EVENT (default cycles), PERIOD (default 100000), COUNT (default 3).
set -euo pipefail

cd "$(dirname "$0")/.."
runs=${1:-1}
case $runs in '' | *[!0-9]* | 0) echo "usage: $0 [RUNS]" >&2; exit 2 ;; esac
qemu=${QEMU_SYSTEM_RISCV64:-qemu-system-riscv64}
period=${PERIOD:-100000}
event=${EVENT:-cycles}
count=${COUNT:-3}
work="busybox md5sum$(for _ in $(seq "$count"); do printf ' /usr/bin/perf'; done)"
cmd_true="true"
cmd_plain="cd /tmp; $work >/dev/null"
cmd_perf="cd /tmp; perf record -o /tmp/c.data -e $event -c $period $work 2>&1 >/dev/null"
# cryptomgr.notests: the kernel's crypto self-tests (RSA and other bignum work in
# `cryptomgr_test` threads) are still running when init starts and share the CPU with the
# workload for a while; how long depends on each machine's notion of time (vmm's guest
# time is virtual, 10 instructions a tick), which would measure the scheduler, not the
# machines.
cmdline() { echo "console=ttyS0 earlycon=sbi panic=-1 loglevel=4 cryptomgr.notests vmmcmd=\"$1\""; }
limit=900 # seconds, per boot

. scripts/lib/linux-bench.sh

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
now() { date +%s.%N; }

# measure NAME COMMAND...: sets m_time (the process's wall time, seconds) and m_samples
# (perf record's sample count, if any); fails with the end of the log unless the guest's
# workload ended with status 0.
measure() {
    local name=$1 rc=0 t0 t1
    shift
    t0=$(now)
    timeout "$limit" "$@" </dev/null >"$log/$name" 2>&1 || rc=$?
    t1=$(now)
    if [ "$rc" != 0 ] || ! grep -q 'VMM-GUEST-EXIT 0' "$log/$name"; then
        tail -n 30 "$log/$name" >&2
        die "$name: the guest's workload did not end well (exit status $rc; 124: more than $limit s)"
    fi
    m_samples=$(sed -n 's/.*perf record: Captured and wrote .* (\([0-9]*\) samples) ].*/\1/p' "$log/$name" | head -n1)
    m_time=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a < b) ? a : b }'; }
vmm_boot() { measure "vmm-$1" "$vmm" run --kernel "$KERNEL" --initrd "$INITRD_PERF" --memory 384 --cmdline "$(cmdline "$2")"; }
qemu_boot() {
    measure "qemu-$1" "$qemu" -M virt -cpu rv64,sscofpmf=true -m 384 -nographic -bios "$fw" \
        -kernel "$KERNEL" -initrd "$INITRD_PERF" -append "$(cmdline "$2")"
}

declare -A best samples
for i in $(seq "$runs"); do
    for m in vmm qemu; do
        for w in true plain perf; do
            echo "run $i/$runs: $m, workload $w..." >&2
            var=cmd_$w
            "${m}_boot" "$w" "${!var}"
            best[$m-$w]=$(min "$m_time" "${best[$m-$w]:-}")
            samples[$m-$w]=$m_samples
        done
    done
done
for m in vmm qemu; do
    [ -n "${samples[$m-perf]}" ] || die "$m: perf record printed no sample count (log: $(tail -n 5 "$log/$m-perf"))"
done
less() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
v_plain=$(less "${best[vmm-plain]}" "${best[vmm-true]}")
v_perf=$(less "${best[vmm-perf]}" "${best[vmm-true]}")
q_plain=$(less "${best[qemu-plain]}" "${best[qemu-true]}")
q_perf=$(less "${best[qemu-perf]}" "${best[qemu-true]}")
v_samples=${samples[vmm-perf]} q_samples=${samples[qemu-perf]}

qver=$("$qemu" --version | sed -n 1p | sed 's/QEMU emulator version //')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cat <<TABLE
perf record in the Linux guest (kernel $(basename "$(dirname "$KERNEL")") kit), 384 MiB, 1 hart,
best of $runs run(s), $(nproc) host core(s); workload: $work; perf record -e $event -c $period

| machine | boot with \`true\` (s) | workload alone (s, boot less) | under perf record (s, boot less) | samples |
| --- | ---: | ---: | ---: | ---: |
| vmm run (block translation; pmu-virt) | ${best[vmm-true]} | $v_plain | $v_perf | $v_samples |
| QEMU $qver TCG, -cpu rv64,sscofpmf=true, OpenSBI | ${best[qemu-true]} | $q_plain | $q_perf | $q_samples |
| ratio vmm / QEMU | $(ratio "${best[vmm-true]}" "${best[qemu-true]}") | $(ratio "$v_plain" "$q_plain") | $(ratio "$v_perf" "$q_perf") | |

TABLE
