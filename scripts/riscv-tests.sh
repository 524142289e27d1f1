#!/bin/bash
# Fetch, build and run the public riscv-tests suite's rv64 p-env programs (and the v-env
# ones of rv64ui/um/ua/uc/uf/ud) on `vmm machine`, and print a pass/fail table per group
# (docs/riscv-tests.md has the results and the reasons for the failures). Not part of
# `cargo test`: it needs the network (or a local checkout) and the RISC-V cross compiler.
#
# Usage: scripts/riscv-tests.sh [WORKDIR]       (default WORKDIR: ${TMPDIR:-/tmp}/riscv-tests)
#
# Environment:
#   RISCV_TESTS_SRC     an existing checkout of riscv-tests with its `env` submodule filled
#                       in: used as is, nothing fetched
#   RISCV_TESTS_REPO    the repository to clone (default: GitHub's riscv-software-src/riscv-tests)
#   RISCV_TEST_ENV_REPO the env submodule's repository (default: the one .gitmodules names,
#                       GitHub's riscv/riscv-test-env)
#   RISCV_TESTS_COMMIT  the suite's commit (default: the one docs/riscv-tests.md reports)
#   RISCV_PREFIX        the cross compiler's prefix (default riscv64-unknown-elf-)
#   VMM                 the vmm binary (default: built with `cargo build --release -p vmm`)
#   V_ENV=0             build and run the p-env programs only
#   MAX_INSNS, TIMEOUT  each program's instruction budget and wall-clock limit in seconds
#                       (default 50000000 and 20)
#
# Exit status: 0 when every failure is one of the expected ones listed below (extensions
# the hart does not implement), 1 otherwise, 2 when the sources cannot be fetched or built.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/riscv-tests}
repo=${RISCV_TESTS_REPO:-https://github.com/riscv-software-src/riscv-tests.git}
commit=${RISCV_TESTS_COMMIT:-34e6b6d1e7936b526075432fb730d89148623484}
prefix=${RISCV_PREFIX:-riscv64-unknown-elf-}
max_insns=${MAX_INSNS:-50000000}
limit=${TIMEOUT:-20}

die() {
    echo "riscv-tests.sh: $*" >&2
    exit 2
}

# A command, up to 4 times with growing pauses (GitHub is not always reachable).
retry() {
    local n
    for n in 1 2 3 4; do
        "$@" && return 0
        [ "$n" = 4 ] && break
        echo "riscv-tests.sh: '$*' failed (attempt $n of 4), retrying in $((n * 10)) s" >&2
        sleep $((n * 10))
    done
    return 1
}

# Expected failures: the reason, for the table.
expected() {
    case $1 in
    rv64uzba-*) echo "Zba not implemented" ;;
    rv64uzbb-*) echo "Zbb not implemented" ;;
    rv64uzbc-*) echo "Zbc not implemented" ;;
    rv64uzbs-*) echo "Zbs not implemented" ;;
    rv64uzbkb-*) echo "Zbkb not implemented" ;;
    rv64uzbkx-*) echo "Zbkx not implemented" ;;
    rv64uzfh-*) echo "Zfh not implemented" ;;
    rv64mzicbo-*) echo "Zicboz not implemented" ;;
    *) return 1 ;;
    esac
}

command -v "${prefix}gcc" >/dev/null || die "${prefix}gcc not found (Debian: apt-get install gcc-riscv64-unknown-elf)"
command -v make >/dev/null || die "make not found"

# --- sources ---------------------------------------------------------------------------
if [ -n "${RISCV_TESTS_SRC:-}" ]; then
    src=$RISCV_TESTS_SRC
    [ -f "$src/isa/Makefile" ] && [ -f "$src/env/p/riscv_test.h" ] ||
        die "RISCV_TESTS_SRC=$src is not a riscv-tests checkout with its env submodule"
else
    src=$work/src
    mkdir -p "$work" || die "cannot create $work"
    if [ ! -d "$src/.git" ]; then
        rm -rf "$src"
        GIT_TERMINAL_PROMPT=0 retry git clone -q "$repo" "$src" ||
            die "cannot clone $repo (network down or GitHub unreachable?). Clone it and its 'env'
submodule elsewhere and set RISCV_TESTS_SRC to the checkout."
    fi
    if ! git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null; then
        GIT_TERMINAL_PROMPT=0 retry git -C "$src" fetch -q origin ||
            die "cannot fetch $repo (network down or GitHub unreachable?)"
    fi
    git -C "$src" -c advice.detachedHead=false checkout -q "$commit" ||
        die "commit $commit not found in $repo"
    git -C "$src" submodule -q init env || die "no env submodule in $repo"
    [ -n "${RISCV_TEST_ENV_REPO:-}" ] && git -C "$src" config submodule.env.url "$RISCV_TEST_ENV_REPO"
    GIT_TERMINAL_PROMPT=0 retry git -C "$src" submodule -q update env ||
        die "cannot fetch the env submodule (riscv/riscv-test-env; network down or GitHub unreachable?)"
fi
suite=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)")
envc=$(git -C "$src/env" rev-parse HEAD 2>/dev/null || echo "unknown")

# --- build -----------------------------------------------------------------------------
out=$work/build
rm -rf "$out"
mkdir -p "$out" || die "cannot create $out"
cp -r "$src/isa" "$src/env" "$out/" || die "cannot copy the sources to $out"
cat >"$out/isa/select.mk" <<'EOF'
# The p-env programs the compiler can build (the Makefile's own `tests` list), and the
# v-env ones of the groups in VGROUPS.
ptests: $(foreach t,$(tests),$(if $(findstring -p-,$(t)),$(t)))
vtests: $(foreach g,$(VGROUPS),$($(g)_v_tests))
plist:
	@echo $(foreach v,$(filter %_p_tests,$(.VARIABLES)),$($(v)))
vlist:
	@echo $(foreach g,$(VGROUPS),$($(g)_v_tests))
EOF
vgroups="rv64ui rv64um rv64ua rv64uc rv64uf rv64ud"
[ "${V_ENV:-1}" = 0 ] && vgroups=""
# The v-env's C files include <string.h>, <ctype.h> and <stdio.h> for the functions its own
# string.c defines; a bare cross compiler (no C library) lacks them: declare those here.
mkdir -p "$out/shim"
cat >"$out/shim/string.h" <<'EOF'
#include <stddef.h>
void *memcpy(void *, const void *, size_t);
void *memset(void *, int, size_t);
size_t strlen(const char *);
int strcmp(const char *, const char *);
int memcmp(const void *, const void *, size_t);
char *strcpy(char *, const char *);
EOF
printf '#define isspace(c) ((c) == 32 || ((c) >= 9 && (c) <= 13))\n#define isdigit(c) ((c) >= 48 && (c) <= 57)\n' >"$out/shim/ctype.h"
printf '#include <stddef.h>\n' >"$out/shim/stdio.h"
mk() {
    make -C "$out/isa" -f Makefile -f select.mk XLEN=64 RISCV_PREFIX="$prefix" \
        VGROUPS="$vgroups" "$@"
}
jobs=$(nproc 2>/dev/null || echo 2)
echo "building the p-env programs in $out/isa ..." >&2
mk -k -j"$jobs" ptests >"$out/build.log" 2>&1
if [ -n "$vgroups" ]; then
    echo "building the v-env programs of $vgroups ..." >&2
    mk -k -j"$jobs" RISCV_GCC_OPTS="-static -mcmodel=medany -fvisibility=hidden -nostdlib \
-nostartfiles -ffreestanding -I$out/shim" vtests >>"$out/build.log" 2>&1
fi
# GCC before 13 rejects -march=rv64gh (the Makefile skips the hypervisor groups); its
# assembler knows H, so build those with the assembler's -march.
for g in hypervisor hypervisor-svadu; do
    for s in "$out/isa/$g"/*.S; do
        t=$g-p-$(basename "$s" .S)
        [ -e "$out/isa/$t" ] && continue
        "${prefix}gcc" -march=rv64g -mabi=lp64d -Wa,-march=rv64gh -static -mcmodel=medany \
            -fvisibility=hidden -nostdlib -nostartfiles -I"$out/env/p" \
            -I"$out/isa/macros/scalar" -T"$out/env/p/link.ld" "$s" -o "$out/isa/$t" \
            >>"$out/build.log" 2>&1
    done
done
all=$( (mk -s plist && mk -s vlist) 2>/dev/null | tr " " "\n" | sort)
[ -n "$all" ] || die "cannot list the suite's programs (see $out/build.log)"

# --- vmm -------------------------------------------------------------------------------
if [ -z "${VMM:-}" ]; then
    (cd "$here" && cargo build -q --release -p vmm) || die "cargo build --release -p vmm failed"
    VMM=${CARGO_TARGET_DIR:-$here/target}/release/vmm
fi
[ -x "$VMM" ] || die "no vmm binary at $VMM"
# Deterministic time, as the tests use (`vmm machine` defaults to host time).
export VMM_CLOCK=virtual

# --- run -------------------------------------------------------------------------------
unexpected=0
declare -A built passed failed notbuilt exp expwhy
groups=()
details=""
for t in $all; do
    case $t in
    *-v-*) g=${t%%-v-*}-v ;;
    *) g=${t%%-p-*}-p ;;
    esac
    [[ " ${groups[*]} " == *" $g "* ]] || groups+=("$g")
    if [ ! -e "$out/isa/$t" ]; then
        notbuilt[$g]=$((${notbuilt[$g]:-0} + 1))
        continue
    fi
    built[$g]=$((${built[$g]:-0} + 1))
    timeout $((limit + 10)) "$VMM" machine --max-insns "$max_insns" --timeout "$limit" \
        "$out/isa/$t" >"$out/isa/$t.out" 2>&1
    st=$?
    if [ "$st" = 0 ]; then
        passed[$g]=$((${passed[$g]:-0} + 1))
        continue
    fi
    failed[$g]=$((${failed[$g]:-0} + 1))
    case $st in
    124) why="timeout / budget" ;;
    255) why="status 255 (an unexpected trap: TESTNUM|1337, or a code >= 255)" ;;
    *) why="status $st (test $st failed)" ;;
    esac
    if reason=$(expected "$t"); then
        exp[$g]="${exp[$g]:+${exp[$g]}, }${t#*-[pv]-}"
        expwhy[$g]=$reason
    else
        details+="  $t: $why; UNEXPECTED"$'\n'
        unexpected=1
    fi
done

echo "riscv-tests $suite (env $envc), rv64, on $VMM"
printf '%-20s %6s %6s %6s %10s\n' group built passed failed "not built"
for g in "${groups[@]}"; do
    printf '%-20s %6s %6s %6s %10s\n' "$g" "${built[$g]:-0}" "${passed[$g]:-0}" \
        "${failed[$g]:-0}" "${notbuilt[$g]:-0}"
done
echo "expected failures (legitimate differences: docs/riscv-tests.md):"
for g in "${groups[@]}"; do
    [ -n "${exp[$g]:-}" ] && echo "  $g (${expwhy[$g]}): ${exp[$g]}"
done
[ -n "$details" ] && printf 'UNEXPECTED failures:\n%s' "$details"
echo "(programs not built: the compiler does not know the extension; see $out/build.log)"
exit $unexpected
