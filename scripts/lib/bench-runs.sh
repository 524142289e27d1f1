# Shared by scripts/bench-compare.sh and scripts/bench-vs.sh (sourced, from the repository's
# top directory, with the script's arguments in "$@"): the options [--jit on|off]
# [--callgrind] [RUNS], the release build of vmm and the guest programs, and `measure`.
# Sets jit, callgrind, runs, vmm and unit.

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
unit=$([ "$callgrind" = 1 ] && echo "host instructions" || echo "s (best of $runs)")

echo "building vmm and the guest programs (release)..." >&2
cargo build -q --release -p vmm
cargo build -q --release -p vmm-tests --bin guest-path
vmm=target/release/vmm

# measure VMM-ARGS...: the figure of `vmm VMM-ARGS... --jit $jit`: the best of RUNS run times
# that `--stats` reports, or with --callgrind the host instructions of one run.
measure() {
    local args=("$@" --jit "$jit")
    if [ "$callgrind" = 1 ]; then
        command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 1; }
        local out
        out=$(mktemp)
        valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$out" "$vmm" "${args[@]}" >/dev/null 2>&1 ||
            { echo "vmm failed under callgrind: vmm ${args[*]}" >&2; exit 1; }
        sed -n 's/^summary: \([0-9]*\)/\1/p' "$out"
        rm -f "$out"
        return
    fi
    local best=""
    for _ in $(seq "$runs"); do
        local stats s
        stats=$("$vmm" "${args[@]}" --stats 2>&1 >/dev/null) || { echo "vmm ${args[*]} failed: $stats" >&2; exit 1; }
        s=$(sed -n 's/^vmm: [0-9]* instructions[a-z ]* in \([0-9.]*\) s.*/\1/p' <<<"$stats" | head -n1)
        [ -n "$s" ] || { echo "no --stats line from vmm: $stats" >&2; exit 1; }
        if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$s
        fi
    done
    echo "$best"
}

# Virtual time (deterministic) for every `vmm run` measured, as the README's figures;
# `vmm run` itself defaults to host time.
export VMM_CLOCK=virtual
