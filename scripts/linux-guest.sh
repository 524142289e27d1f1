#!/usr/bin/env bash
# linux-guest.sh: fetch Debian's unmodified riscv64 Linux kernel and build a busybox
# initramfs for `vmm run`.
#
# Usage:
#   scripts/linux-guest.sh [--suites "S1 S2 ..."] [--suite S] [--cache-dir DIR] [--force]
#                          [--quiet]
#
#   --suites LIST  the Debian suites to take linux-image-riscv64, busybox-static and
#                  linux-perf from, in order of preference (default "trixie forky sid":
#                  trixie has Linux 6.12, forky and sid newer kernels, 7.x). The first
#                  suite whose kit is complete in the cache is used, without any network
#                  access; with none cached, the first suite that can be fetched and built
#                  is (a suite whose package index or a package fails to download, after
#                  retries, or that lacks a package or a library, is given up with a
#                  message on stderr naming it and why, and the next one is tried). Any
#                  suite name is accepted as a candidate (a name Debian does not have just
#                  fails; "unstable" means sid). Env: LINUX_GUEST_SUITES.
#   --suite S      only suite S, no fallback (overrides --suites). Env: LINUX_GUEST_SUITE
#                  (which overrides LINUX_GUEST_SUITES; the command line overrides both).
#                  Env LINUX_GUEST_MIRROR: the Debian mirror.
#   --cache-dir D  where the results are kept. Env: LINUX_GUEST_DIR. Default:
#                  ${XDG_CACHE_HOME:-$HOME/.cache}/riscv-ctr-vmm/linux-guest
#   --force        refresh the package lists, download and rebuild even when cached (the
#                  initramfs is also rebuilt whenever this script is newer than it)
#   --quiet        print only the final SUITE=/KERNEL=/INITRD=/INITRD_PERF=/INITRD_CTR= lines, and the
#                  messages about suites given up (with the output of the failed apt
#                  command), on stderr
#
# Results, in $CACHE/$SUITE/:
#   Image            the kernel as a plain riscv64 Linux Image (header magic "RSC\x05").
#                    Debian's file (trixie /boot/vmlinux-*, sid
#                    /usr/lib/modules/*/vmlinuz) is already one: uncompressed, with an EFI
#                    stub ("MZ" at offset 0), text_offset 2 MiB. A gzip'd Image or an EFI
#                    zboot image would be decompressed.
#   initramfs.cpio.gz  cpio (newc) + gzip: /bin/busybox (static) and /init
#   initramfs-perf.cpio  the same files plus Debian's perf (linux-perf, the kernel's
#                    version) as /usr/bin/perf and the closure of its shared libraries
#                    (trixie: about 60 libraries, 43 MB; sid, Linux 7.2: 50 libraries from
#                    46 packages, 39 MB) in /usr/lib/riscv64-linux-gnu, the loader as
#                    /lib/ld-linux-riscv64-lp64d.so.1 (/lib -> usr/lib). The libraries are
#                    found by following DT_NEEDED (host `readelf`, binutils) from perf, in
#                    the loader's directories of the union of the extracted packages (a
#                    soname link may point into another package): a library missing from
#                    what is extracted is looked for in the dependencies of the package of
#                    the file that needs it, downloaded as needed; the script fails naming a
#                    soname no package provides. Before it declares success it reads the
#                    image back and checks that the program interpreter and every DT_NEEDED
#                    of every ELF file in it resolve inside the image. Not compressed:
#                    unpacking it costs the kernel about 0.3 billion guest instructions,
#                    gunzipping it 1.1 billion.
#   initramfs-ctr.cpio.gz  cpio (newc) + gzip: the plain initramfs's files plus the CTR
#                    kit of guest/linux/ctr (GPL-2.0): /lib/vmm-modules/ctr_rec.ko (which
#                    /init loads, printing VMM-MODULE-LOADED or VMM-MODULE-REFUSED), the
#                    recorder /usr/bin/ctrrec, the static test program /usr/bin/ctrtest and
#                    its symbols /usr/share/ctrtest.syms (ADDRESS SIZE NAME of main, work,
#                    leaf). The module is built out of tree against Debian's riscv64
#                    linux-headers-RELEASE and -common of the kit's kernel and the suite's
#                    amd64 linux-kbuild, with the host's gcc-riscv64-linux-gnu (see
#                    build_ctr_kit); rebuilt alone when a file of guest/linux/ctr changes.
#                    Needs --memory 256 (docs/linux-ctr.md).
#   ctr/             ctr_rec.ko, ctrtest and ctrtest.syms
#   versions         "suite $SUITE", then the package versions the files came from (the
#                    CTR kit's lines start with "ctr "); a cache is only used if its first
#                    line names its own suite
#   debs/            the downloaded .deb files
# The last five lines printed are `SUITE=<suite>`, `KERNEL=<path>`, `INITRD=<path>`,
# `INITRD_PERF=<path>` and `INITRD_CTR=<path>` (easy to `eval`). The plain initramfs stays small so boots that do
# not need perf stay fast.
#
# Guest memory (vmm run --memory, MiB): the plain initramfs needs 128 or more with
# trixie's Linux 6.12 (with 64 it panics in sparse_init); Linux 7.2 (sid) boots with 128
# to 160 and from 224, but not with 176 to 208 (Debian's 7.2 reserves 128 MiB for CMA
# once RAM allows, and then panics in memblocks_present): use 256. The perf initramfs is
# unpacked into RAM: 256 with 6.12; with 7.2 it fails to unpack with 288 ("Initramfs
# unpacking failed: write error", and perf then misses libraries such as libm.so.6) and
# works from 320: use 384. The script's last message says so.
#
# The /init of the initramfs mounts proc, sysfs and devtmpfs, prints the line
#   VMM-GUEST-READY
# then runs the shell command given as `vmmcmd=...` on the kernel command line (the kernel
# hands unknown `name=value` parameters to init as environment variables; quote a command
# with spaces: vmmcmd="cat /proc/cpuinfo"), prints `VMM-GUEST-EXIT <status>` and powers off
# (`poweroff -f`, i.e. SBI SRST). Without vmmcmd it starts an interactive shell on the
# console and powers off when the shell exits. Before powering off it waits until a
# polled UART (`--aia none`) has sent everything (/bin/drain-console). Example:
#
#   eval "$(scripts/linux-guest.sh --quiet)"
#   target/release/vmm run --kernel "$KERNEL" --initrd "$INITRD" --memory 256 \
#       --cmdline 'console=ttyS0 earlycon=sbi panic=-1 vmmcmd="cat /proc/cpuinfo"'
#
# With the perf initramfs, e.g. vmmcmd="perf stat -e cycles,instructions,branches busybox
# md5sum /bin/busybox" or "cd /tmp; perf record -e instructions -c 100000 busybox md5sum
# /bin/busybox; perf report --stdio" (tests/tests/linux_perf.rs).
#
# earlycon=sbi prints through SBI DBCN; earlycon=uart8250,mmio,0x10000000 works too.
# panic=-1 turns a later panic into an SBI reboot, which ends the VMM; success is the
# VMM-GUEST-EXIT line.
#
# Host requirements: Debian (bookworm or later) with apt, run as root the first time (or
# whenever the package lists must be refreshed): the script adds the foreign architecture
# riscv64 (`dpkg --add-architecture riscv64`), an apt source for the suite restricted to
# [arch=riscv64 amd64] (/etc/apt/sources.list.d/riscv-ctr-vmm-riscv64-$SUITE.sources; amd64
# for the suite's linux-kbuild and libc6, which build the CTR module on this host) and an
# APT pin of priority 1 for that suite (/etc/apt/preferences.d/riscv-ctr-vmm-riscv64-$SUITE),
# so nothing on the host is ever upgraded from it. A suite that fails has its source and
# pin removed again, so that the host's own `apt-get update` is not broken by a suite
# without riscv64 lists. Packages are fetched with
# `apt-get download` and unpacked with `dpkg-deb -x`; nothing is installed. The perf
# initramfs also needs `readelf` (binutils); the CTR kit needs gcc-riscv64-linux-gnu,
# libc6-dev-riscv64-cross and make.

set -euo pipefail

prog=${0##*/}
default_suites="trixie forky sid"
suites=${LINUX_GUEST_SUITE:-${LINUX_GUEST_SUITES:-$default_suites}}
cache_root=${LINUX_GUEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/riscv-ctr-vmm/linux-guest}
force=0
quiet=0
mirror=${LINUX_GUEST_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# Guest RAM (vmm run --memory, MiB) the kits need, with a margin (see the header).
mem_plain=256
mem_perf=384
# While one suite is tried (in a subshell): the file its failure reason goes to.
reason_file=

die() {
    echo "$prog: error: $*" >&2
    if [ -n "$reason_file" ]; then printf '%s\n' "$*" >"$reason_file"; fi
    exit 1
}
say() {
    if [ "$quiet" = 0 ]; then echo "$prog: $*" >&2; fi
}
# Said even with --quiet: suites given up, and which one is used instead.
warn() {
    echo "$prog: $*" >&2
}
# Runs a command with its output on stderr, or discarded with --quiet (shown on failure).
run() {
    if [ "$quiet" = 0 ]; then
        "$@" >&2
    else
        local log rc=0
        log=$(mktemp)
        "$@" >"$log" 2>&1 || rc=$?
        if [ "$rc" != 0 ]; then cat "$log" >&2; fi
        rm -f "$log"
        return "$rc"
    fi
}
usage() {
    sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"
}

while [ $# -gt 0 ]; do
    case $1 in
    --suite) [ $# -ge 2 ] || die "--suite needs a value"; suites=$2; shift 2 ;;
    --suite=*) suites=${1#*=}; shift ;;
    --suites) [ $# -ge 2 ] || die "--suites needs a value"; suites=$2; shift 2 ;;
    --suites=*) suites=${1#*=}; shift ;;
    --cache-dir) [ $# -ge 2 ] || die "--cache-dir needs a value"; cache_root=$2; shift 2 ;;
    --cache-dir=*) cache_root=${1#*=}; shift ;;
    --force) force=1; shift ;;
    --quiet | -q) quiet=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
    esac
done

# The candidates, in order, each once ("unstable" is sid: the cache directory and the pin
# use the code name). Any name that could be a Debian suite is accepted: riscv64 is an
# official architecture from trixie on, so older suites fail like unknown ones.
suite_list=()
for s in ${suites//,/ }; do
    case $s in unstable) s=sid ;; esac
    [[ $s =~ ^[a-z][a-z0-9-]*$ ]] || die "'$s' is not a Debian suite name"
    case " ${suite_list[*]} " in *" $s "*) ;; *) suite_list+=("$s") ;; esac
done
[ ${#suite_list[@]} -gt 0 ] || die "no suite to try (--suites/--suite/LINUX_GUEST_SUITES is empty)"

for tool in apt-get dpkg dpkg-deb gzip od; do
    command -v "$tool" >/dev/null || die "'$tool' not found: this script needs a Debian host with apt"
done

# Sets the per-suite paths for suite $1.
suite=
select_suite() {
    suite=$1
    out=$cache_root/$suite
    image=$out/Image
    initrd=$out/initramfs.cpio.gz
    perf_initrd=$out/initramfs-perf.cpio
    ctr_initrd=$out/initramfs-ctr.cpio.gz
    ctr_dir=$out/ctr
    debs=$out/debs
    sources=/etc/apt/sources.list.d/riscv-ctr-vmm-riscv64-$suite.sources
    pin=/etc/apt/preferences.d/riscv-ctr-vmm-riscv64-$suite
}

# ---------------------------------------------------------------------------------------
# apt: the riscv64 architecture, a source for the suite, a pin that keeps the host safe.

# Writes $2 to file $1 if its content differs; returns 0 when it changed.
write_if_changed() {
    if [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; then
        return 1
    fi
    [ "$(id -u)" = 0 ] || die "$1 must be created or updated, which needs root (run once as root)"
    printf '%s\n' "$2" >"$1"
    say "wrote $1"
}

mirror_host=${mirror#*://}
mirror_host=${mirror_host%%/*}
# True if apt has a package list of $suite for architecture $1 (default riscv64).
have_list() {
    compgen -G "/var/lib/apt/lists/${mirror_host}_*dists_${suite}_main_binary-${1:-riscv64}_Packages*" >/dev/null
}

# apt-get update of this suite's source only, with retries (apt's own, then once more
# after a pause). apt-get update may report a failed index only as "E: Failed to fetch"
# or "W: ..." and leave no list: success needs exit status 0, no error line and the
# riscv64 list of the suite present. Dies with the reason otherwise.
apt_update() {
    local attempt log rc reason='' note=''
    for attempt in 1 2; do
        [ "$attempt" = 1 ] || note=", second attempt"
        say "apt-get update ($suite, riscv64 and amd64)$note"
        log=$(mktemp)
        rc=0
        apt-get update -q -o Acquire::Retries=3 \
            -o Dir::Etc::sourcelist="$sources" -o Dir::Etc::sourceparts=- \
            -o APT::Get::List-Cleanup=0 >"$log" 2>&1 || rc=$?
        if [ "$quiet" = 0 ]; then cat "$log" >&2; fi
        reason=
        if [ "$rc" != 0 ] || grep -Eq '^(E: |W: Failed to fetch|Err:)' "$log" || ! have_list ||
            ! have_list amd64; then
            reason=$(grep -E '^(E|W): ' "$log" | head -n1 | cut -c1-240 || true)
            [ -n "$reason" ] || reason="exit status $rc but no riscv64 or amd64 package list of \
$suite (does the suite have riscv64?)"
            if [ "$quiet" = 1 ]; then cat "$log" >&2; fi
        fi
        rm -f "$log"
        [ -n "$reason" ] || return 0
        if [ "$attempt" = 1 ]; then
            warn "apt-get update of $suite failed ($reason); trying again in 10 s"
            sleep 10
        fi
    done
    die "apt-get update failed for $mirror $suite (riscv64, amd64): $reason"
}

setup_apt() {
    local changed=0
    if ! dpkg --print-foreign-architectures | grep -qx riscv64; then
        [ "$(id -u)" = 0 ] || die "the riscv64 architecture must be added to dpkg, which needs root (run once as root)"
        say "dpkg --add-architecture riscv64"
        dpkg --add-architecture riscv64
        changed=1
    fi
    [ -r "$keyring" ] || die "$keyring missing: install debian-archive-keyring"
    # amd64 too: the CTR module's build tools run on this host (the suite's linux-kbuild
    # and the C library its programs need; the pin below keeps the host from upgrading to
    # any of them).
    if write_if_changed "$sources" "# Added by riscv-ctr-vmm scripts/linux-guest.sh: riscv64 guest packages and the amd64 linux-kbuild only.
Types: deb
URIs: $mirror
Suites: $suite
Components: main
Architectures: riscv64 amd64
Signed-By: $keyring"; then
        changed=1
    fi
    # Priority 1: a package from this suite is never chosen over an installed or host
    # version (apt-get download names the suite explicitly). By code name (n=) and by
    # archive name (a=), so that a name such as "testing" is pinned too.
    if write_if_changed "$pin" "# Added by riscv-ctr-vmm scripts/linux-guest.sh: never upgrade the host from $suite.
Package: *
Pin: release n=$suite
Pin-Priority: 1

Package: *
Pin: release a=$suite
Pin-Priority: 1"; then
        changed=1
    fi
    # Refresh the lists of this one source when it is new or its lists are missing.
    if [ "$changed" = 1 ] || [ "$force" = 1 ] || ! have_list || ! have_list amd64; then
        [ "$(id -u)" = 0 ] || die "apt-get update needs root (run once as root)"
        apt_update
    fi
}

# Removes the apt source and pin of a suite that failed, so that they cannot break or
# slow down the host's own apt-get update (a source of a suite without riscv64 lists,
# or whose index is broken, makes it fail or warn).
remove_apt_source() {
    local f
    for f in "$sources" "$pin"; do
        if [ -e "$f" ]; then
            if rm -f "$f" 2>/dev/null; then
                warn "removed $f (suite $suite failed)"
            else
                warn "cannot remove $f (suite $suite failed): remove it by hand"
            fi
        fi
    done
}

# Versions looked up already (apt-cache is slow); filled by the main shell, read by
# subshells too.
declare -A candidates=()

# Prints the newest version of riscv64 package $1 in $suite, or nothing.
candidate() {
    if [ -n "${candidates[$1]+set}" ]; then
        echo "${candidates[$1]}"
        return
    fi
    apt-cache madison "$1:riscv64" 2>/dev/null |
        awk -F'|' -v s="$suite" '$3 ~ ("[ /]" s "[/ ]") { gsub(/ /, "", $2); print $2; exit }'
}

# Looks up the versions of several packages with one apt-cache call (into $candidates;
# empty for a package $suite does not have for riscv64). Runs in the main shell.
prefetch_candidates() {
    local -a names=()
    local n pkg ver
    for n in "$@"; do
        if [ -z "${candidates[$n]+set}" ]; then
            names+=("$n:riscv64")
            candidates[$n]=
        fi
    done
    [ ${#names[@]} -gt 0 ] || return 0
    while read -r pkg ver; do
        if [ -n "${candidates[$pkg]+set}" ] && [ -z "${candidates[$pkg]}" ]; then
            candidates[$pkg]=$ver
        fi
    done < <(apt-cache madison "${names[@]}" 2>/dev/null |
        awk -F'|' -v s="$suite" '$3 ~ ("[ /]" s "[/ ]") {
            gsub(/ /, "", $1); gsub(/ /, "", $2); sub(/:riscv64$/, "", $1); print $1, $2 }')
}

# Downloads package $1 from $suite into $debs; prints the .deb path. $2 is its
# architecture: riscv64 (the default), all (an architecture-independent package) or amd64
# (a build tool for this host).
download() {
    local pkg=$1 arch=${2:-riscv64} ver deb spec
    case $arch in
    riscv64) ver=$(candidate "$pkg") ;;
    *)
        # (an Architecture: all package has no "$pkg:riscv64" for apt-cache)
        spec=$pkg
        [ "$arch" = all ] || spec=$pkg:$arch
        ver=$(apt-cache madison "$spec" 2>/dev/null |
            awk -F'|' -v s="$suite" '$3 ~ ("[ /]" s "[/ ]") { gsub(/ /, "", $2); print $2; exit }')
        ;;
    esac
    [ -n "$ver" ] || die "package $pkg:$arch is not available from Debian $suite ($mirror); \
check 'apt-cache policy $pkg:$arch' and that the suite has $arch"
    deb=$debs/${pkg}_${ver//:/%3a}_$arch.deb
    case $arch in all) spec="$pkg=$ver" ;; *) spec="$pkg:$arch=$ver" ;; esac
    if [ ! -s "$deb" ] || [ "$force" = 1 ]; then
        # apt retries by itself; after a failure, once more after a pause.
        local attempt ok=0
        for attempt in 1 2; do
            say "apt-get download $spec"
            # As root, apt drops privileges to _apt, which cannot write into a private cache.
            if (cd "$debs" && run apt-get download -q -o Acquire::Retries=3 \
                -o APT::Sandbox::User="$(id -un)" "$spec"); then
                ok=1
                break
            fi
            if [ "$attempt" = 1 ]; then
                warn "apt-get download $spec ($suite, $mirror) failed; trying again in 10 s"
                sleep 10
            fi
        done
        [ "$ok" = 1 ] || die "apt-get download $spec ($suite, $mirror) failed twice"
    fi
    [ -f "$deb" ] || die "downloaded $spec but cannot find its .deb ($deb) in $debs"
    echo "$deb"
}

# ---------------------------------------------------------------------------------------
# The kernel: linux-image-riscv64 is a metapackage that depends on the real image package.

le32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
magic_at() { od -An -c -j "$2" -N "$3" "$1" | tr -d ' \n'; }

is_image() { [ "$(magic_at "$1" 56 4)" = 'RSC005' ]; }

# Writes a plain riscv64 Image to $2 from the kernel file $1 (Image, gzip'd Image, or an
# EFI zboot image whose payload is compressed).
make_image() {
    local src=$1 dst=$2 tmp=$2.tmp
    if is_image "$src"; then
        cp "$src" "$tmp"
    elif [ "$(magic_at "$src" 0 2)" = '037213' ]; then
        say "kernel is gzip-compressed: decompressing"
        gzip -dc "$src" >"$tmp"
    elif [ "$(magic_at "$src" 0 2)" = 'MZ' ] && [ "$(magic_at "$src" 4 4)" = 'zimg' ]; then
        # EFI zboot (drivers/firmware/efi/libstub/zboot-header.S): payload offset and size
        # at 8 and 12, compression type name at 24.
        local off size comp
        off=$(le32 "$src" 8)
        size=$(le32 "$src" 12)
        comp=$(od -An -c -j 24 -N 8 "$src" | tr -d ' \n' | sed 's/\\0//g')
        say "kernel is an EFI zboot image ($comp payload): extracting"
        local decomp
        case $comp in
        gzip) decomp="gzip -dc" ;;
        zstd | zstd22) decomp="zstd -dc" ;;
        xzkern | xz) decomp="xz -dc" ;;
        lz4) decomp="lz4 -dc" ;;
        *) die "EFI zboot kernel with unsupported compression '$comp'" ;;
        esac
        tail -c +"$((off + 1))" "$src" | head -c "$size" | $decomp >"$tmp"
    else
        die "$src is neither a riscv64 Image, a gzip'd Image nor an EFI zboot image"
    fi
    is_image "$tmp" || die "the kernel extracted from $src has no riscv64 Image header"
    mv "$tmp" "$dst"
}

# The image package's name and layout change between releases: trixie's
# linux-image-riscv64 depends on linux-image-VERSION-riscv64, which holds /boot/vmlinux-*;
# sid's linux-image-VERSION-riscv64 (7.x) depends on linux-binary-VERSION-riscv64,
# which holds /usr/lib/modules/VERSION/vmlinuz.
# Follow linux-image-*/linux-binary-* dependencies until a package holds the kernel.
kernel_path_re=' \./(boot/vmlinu[xz]-[^/]+|usr/lib/modules/[^/]+/vmlinu[xz])$'
fetch_kernel() {
    local queue=(linux-image-riscv64) seen=" " pkg deb kdeb='' kdir kfile f dep
    local -a used=()
    while [ ${#queue[@]} -gt 0 ] && [ -z "$kdeb" ]; do
        pkg=${queue[0]}
        queue=("${queue[@]:1}")
        case $seen in *" $pkg "*) continue ;; esac
        seen="$seen$pkg "
        deb=$(download "$pkg")
        used+=("$pkg $(dpkg-deb -f "$deb" Version)")
        # (grep without -q reads all of the listing: no SIGPIPE for dpkg-deb under pipefail)
        if dpkg-deb -c "$deb" | grep -E "$kernel_path_re" >/dev/null; then
            kdeb=$deb
            break
        fi
        for dep in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/^ *//;s/[ |].*//' |
            grep -E '^linux-(image|binary)-' || true); do
            queue+=("$dep")
        done
        [ ${#used[@]} -lt 6 ] || break
    done
    [ -n "$kdeb" ] || die "no package reached from linux-image-riscv64 ($suite) holds a kernel \
(looked in: ${used[*]})"
    kdir=$out/kernel-pkg
    rm -rf "$kdir"
    mkdir -p "$kdir"
    dpkg-deb -x "$kdeb" "$kdir"
    kfile=
    for f in "$kdir"/boot/vmlinu[xz]-* "$kdir"/usr/lib/modules/*/vmlinu[xz]; do
        if [ -f "$f" ]; then kfile=$f; break; fi
    done
    [ -n "$kfile" ] || die "no kernel file (/boot/vmlinu[xz]-*, /usr/lib/modules/*/vmlinu[xz]) in $kdeb"
    say "kernel file: ${kfile#"$kdir"} ($(file -b "$kfile" 2>/dev/null | cut -c1-60))"
    make_image "$kfile" "$image"
    printf '%s\n' "${used[@]}" >>"$versions_file"
    echo "kernel-file ${kfile#"$kdir"}" >>"$versions_file"
    rm -rf "$kdir"
}

# ---------------------------------------------------------------------------------------
# The initramfs: written as cpio "newc" by hand (no cpio tool, no root needed for the
# /dev/console node).

cpio_ino=1000
# cpio_entry NAME MODE(octal) [FILE|-] [RDEVMAJOR RDEVMINOR] [LINKTARGET]
cpio_entry() {
    local name=$1 mode=$((8#$2)) file=${3:--} rmaj=${4:-0} rmin=${5:-0} target=${6:-}
    local size=0 namesize=$((${#1} + 1))
    if [ -n "$target" ]; then
        size=${#target}
    elif [ "$file" != - ]; then
        size=$(stat -c %s "$file")
    fi
    cpio_ino=$((cpio_ino + 1))
    printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
        "$cpio_ino" "$mode" 0 0 1 0 "$size" 0 0 "$rmaj" "$rmin" "$namesize" 0
    printf '%s\0' "$name"
    # The 110-byte header plus the name is padded to 4 bytes; so is the data.
    head -c $(((4 - (110 + namesize) % 4) % 4)) /dev/zero
    if [ -n "$target" ]; then
        printf '%s' "$target"
    elif [ "$file" != - ]; then
        cat "$file"
    fi
    head -c $(((4 - size % 4) % 4)) /dev/zero
}

write_init() {
    cat >"$1" <<'EOF'
#!/bin/busybox sh
# /init of the riscv-ctr-vmm Linux guest (scripts/linux-guest.sh).
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin /root
/bin/busybox --install -s
export PATH=/sbin:/usr/sbin:/bin:/usr/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
# Kernel modules of the image (the CTR initramfs has ctr_rec.ko): one that refuses to load
# says why in the kernel log, and the guest goes on.
for m in /lib/vmm-modules/*.ko; do
    [ -e "$m" ] || continue
    if insmod "$m"; then echo "VMM-MODULE-LOADED ${m##*/}"; else echo "VMM-MODULE-REFUSED ${m##*/}"; fi
done
echo "VMM-GUEST-READY"
if [ -n "${vmmcmd:-}" ]; then
    sh -c "$vmmcmd"
    echo "VMM-GUEST-EXIT $?"
else
    echo "vmm guest shell; 'exit' powers off"
    # The session leader drains the console before it exits: its exit hangs up the tty,
    # which throws away output not yet sent.
    setsid cttyhack sh -c 'sh -l; /bin/drain-console' || sh -l
fi
sync
/bin/drain-console
poweroff -f
EOF
}

# Without an interrupt line (`vmm run --aia none`) the 8250 driver sends its transmit buffer
# from a timer, and neither poweroff -f nor a hangup of the tty waits for it. drain-console
# sets the console's terminal attributes to what they are: busybox stty uses
# tcsetattr(TCSADRAIN), which waits until the output has been sent. Where
# /proc/tty/driver/serial exists (Linux 6.x, not 7.x) it then also waits until the UARTs'
# transmit counts stop moving (at most 30 s). With an interrupt line (`--aia aplic-imsic`,
# vmm run's default: ttyS0's irq is not 0) the driver sends as the UART asks, and nothing
# needs draining: it returns at once (tests/tests/linux.rs, linux_aia_boot, checks that no
# output is lost).
write_drain() {
    cat >"$1" <<'EOF'
#!/bin/sh
irq=$(cat /sys/class/tty/ttyS0/irq 2>/dev/null)
[ "${irq:-0}" = 0 ] || exit 0
stty -F /dev/console "$(stty -F /dev/console -g)" 2>/dev/null
prev=
i=0
while [ $i -lt 300 ]; do
    cur=$(cat /proc/tty/driver/serial 2>/dev/null) || break
    [ "$cur" != "$prev" ] || break
    prev=$cur
    i=$((i + 1))
    sleep 0.1
done
EOF
}

# Scratch files of a build: busybox extracted, /init, /bin/drain-console (the CTR-only
# build uses its own, so that it never disturbs another build of the same cache).
scratch=
versions_file=
# Extracts busybox-static into $scratch/busybox-pkg; sets $busybox to its binary.
busybox=
fetch_busybox() {
    local bdeb bdir f
    bdeb=$(download busybox-static)
    bdir=$scratch/busybox-pkg
    rm -rf "$bdir"
    mkdir -p "$bdir"
    dpkg-deb -x "$bdeb" "$bdir"
    busybox=
    for f in "$bdir"/usr/bin/busybox "$bdir"/bin/busybox; do
        if [ -f "$f" ]; then busybox=$f; break; fi
    done
    [ -n "$busybox" ] || die "no busybox binary in $bdeb"
    echo "busybox-static $(dpkg-deb -f "$bdeb" Version)" >>"$versions_file"
}

# The cpio entries both initramfs images share (no trailer): the directories, the two
# device nodes, busybox, /init and /bin/drain-console.
base_entries() {
    cpio_entry . 040755
    for d in bin dev proc sys tmp root sbin usr usr/bin usr/sbin; do
        cpio_entry "$d" 040755
    done
    cpio_entry dev/console 020600 - 5 1
    cpio_entry dev/null 020666 - 1 3
    cpio_entry bin/busybox 0100755 "$busybox"
    cpio_entry bin/sh 0120777 - 0 0 busybox
    cpio_entry init 0100755 "$scratch/init.tmp"
    cpio_entry bin/drain-console 0100755 "$scratch/drain.tmp"
}

build_initramfs() {
    {
        base_entries
        cpio_entry TRAILER!!! 0
    } | gzip -n -9 >"$initrd.tmp"
    mv "$initrd.tmp" "$initrd"
}

# ---------------------------------------------------------------------------------------
# The perf initramfs: the same files plus Debian's perf (linux-perf) and the closure of its
# shared libraries, found by following DT_NEEDED (host readelf reads riscv64 ELF) through
# the packages linux-perf depends on, downloaded as needed: a library's package is looked
# for among the dependencies of the package of the file that needs it.

perf_root=                    # one directory per extracted package ($out/perf-pkgs)
perf_pkgs=()                  # the packages extracted, in order
declare -A perf_expanded=()   # packages whose dependencies were added
declare -A perf_lib=()        # soname -> file in $perf_root
declare -A perf_owner=()      # file -> package

# Prints the regular file that path $1 (relative to /) names in the union of the extracted
# packages, following symbolic links across them (a library's soname link may point to a
# file another package holds); fails if there is none.
resolve_union() {
    local rel=$1 hops=0 p link t
    while :; do
        link=
        for p in "${perf_pkgs[@]}"; do
            if [ -L "$perf_root/$p/$rel" ]; then
                link=$perf_root/$p/$rel
                break
            fi
            if [ -f "$perf_root/$p/$rel" ]; then
                echo "$perf_root/$p/$rel"
                return 0
            fi
        done
        [ -n "$link" ] || return 1
        t=$(readlink "$link")
        case $t in
        /*) rel=${t#/} ;;
        *) rel=$(dirname "$rel")/$t ;;
        esac
        hops=$((hops + 1))
        [ "$hops" -lt 16 ] || return 1
    done
}

perf_add_pkg() {
    local pkg=$1 deb
    deb=$(download "$pkg")
    mkdir -p "$perf_root/$pkg"
    dpkg-deb -x "$deb" "$perf_root/$pkg"
    perf_pkgs+=("$pkg")
    echo "$pkg $(dpkg-deb -f "$deb" Version)" >>"$versions_file"
}

# Adds the riscv64 packages package $1 depends on (Pre-Depends, Depends; the first
# alternative that $suite has for riscv64; ":any" dependencies are interpreters, not
# libraries) that are not extracted yet; adds their number to $perf_added.
perf_added=0
perf_expand() {
    local pkg=$1 deb group alt name p found
    perf_expanded[$pkg]=1
    deb=$(find "$debs" -maxdepth 1 -name "${pkg}_*_riscv64.deb" | head -n1)
    [ -n "$deb" ] || die "internal: no .deb for $pkg in $debs"
    local -a groups=()
    mapfile -t groups < <({
        dpkg-deb -f "$deb" Pre-Depends
        dpkg-deb -f "$deb" Depends
    } | tr ',' '\n' | sed 's/([^)]*)//g; s/\[[^]]*\]//g; s/ //g')
    local -a names=()
    for group in "${groups[@]}"; do
        for alt in ${group//|/ }; do
            case $alt in *:any) ;; *) names+=("${alt%%:*}") ;; esac
        done
    done
    prefetch_candidates "${names[@]}"
    for group in "${groups[@]}"; do
        [ -n "$group" ] || continue
        found=
        for alt in ${group//|/ }; do
            case $alt in *:any) continue ;; esac
            name=${alt%%:*}
            for p in "${perf_pkgs[@]}"; do
                if [ "$p" = "$name" ]; then found=$name; break 2; fi
            done
        done
        [ -z "$found" ] || continue
        for alt in ${group//|/ }; do
            case $alt in *:any) continue ;; esac
            name=${alt%%:*}
            if [ -n "${candidates[$name]}" ]; then
                perf_add_pkg "$name"
                perf_added=$((perf_added + 1))
                break
            fi
        done
    done
}

# Looks soname $1 up in the extracted packages, in the directories Debian's loader
# searches: sets perf_lib[$1] and perf_owner of the file (the package that holds it).
perf_find_lib() {
    local so=$1 d f p
    for d in usr/lib/riscv64-linux-gnu lib/riscv64-linux-gnu usr/lib lib; do
        f=$(resolve_union "$d/$so") || continue
        p=${f#"$perf_root"/}
        perf_lib[$so]=$f
        perf_owner[$f]=${p%%/*}
        return 0
    done
    return 1
}

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'; }
interp() { readelf -l "$1" | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]$/\1/p'; }

build_perf_initramfs() {
    local perf interp_path loader f so p i round=0
    local -a files missing
    local -A seen needers
    command -v readelf >/dev/null ||
        die "'readelf' not found: the perf initramfs needs it (Debian package binutils)"
    perf_root=$out/perf-pkgs
    rm -rf "$perf_root"
    mkdir -p "$perf_root"
    perf_pkgs=()
    perf_expanded=()
    perf_lib=()
    perf_owner=()
    perf_add_pkg linux-perf
    perf=$perf_root/linux-perf/usr/bin/perf
    [ -f "$perf" ] || die "no /usr/bin/perf in linux-perf ($suite)"
    perf_owner[$perf]=linux-perf
    interp_path=$(interp "$perf")
    case $interp_path in
    /lib/*/* | /usr/lib/*/*) die "perf's program interpreter $interp_path is not directly in /lib or /usr/lib" ;;
    /lib/* | /usr/lib/*) ;;
    *) die "perf has no usable program interpreter (PT_INTERP '$interp_path')" ;;
    esac
    loader=${interp_path##*/}
    while :; do
        round=$((round + 1))
        # The closure of DT_NEEDED from perf (and its interpreter) over what is extracted.
        files=("$perf")
        missing=()
        seen=()
        needers=()
        if perf_find_lib "$loader"; then
            seen[$loader]=1
            files+=("${perf_lib[$loader]}")
        else
            missing+=("$loader (perf's program interpreter $interp_path)")
            needers[linux-perf]=1
        fi
        i=0
        while [ "$i" -lt "${#files[@]}" ]; do
            f=${files[$i]}
            i=$((i + 1))
            for so in $(needed "$f"); do
                [ -z "${seen[$so]:-}" ] || continue
                if [ -n "${perf_lib[$so]:-}" ] || perf_find_lib "$so"; then
                    seen[$so]=1
                    files+=("${perf_lib[$so]}")
                else
                    missing+=("$so (needed by ${f##*/} from ${perf_owner[$f]})")
                    needers[${perf_owner[$f]}]=1
                fi
            done
        done
        [ "${#missing[@]}" -gt 0 ] || break
        perf_added=0
        for p in "${!needers[@]}"; do
            [ -z "${perf_expanded[$p]:-}" ] || continue
            say "perf initramfs: ${#missing[@]} libraries missing; adding the dependencies of $p"
            perf_expand "$p"
        done
        [ "$perf_added" -gt 0 ] || die "perf initramfs ($suite): no package provides \
${missing[*]}; looked in the riscv64 packages ${perf_pkgs[*]}"
        [ "$round" -lt 20 ] || die "perf initramfs: the library closure did not settle"
    done
    # Every library once, under its soname, in the multiarch directory (in the default
    # search path of Debian's loader); the interpreter path /lib/<loader> works through the
    # symbolic links /lib -> usr/lib and /usr/lib/<loader> -> riscv64-linux-gnu/<loader>.
    local -a sonames
    mapfile -t sonames < <(printf '%s\n' "${!seen[@]}" | LC_ALL=C sort)
    {
        base_entries
        cpio_entry usr/lib 040755
        cpio_entry usr/lib/riscv64-linux-gnu 040755
        cpio_entry lib 0120777 - 0 0 usr/lib
        cpio_entry "usr/lib/$loader" 0120777 - 0 0 "riscv64-linux-gnu/$loader"
        cpio_entry usr/bin/perf 0100755 "$perf"
        for so in "${sonames[@]}"; do
            cpio_entry "usr/lib/riscv64-linux-gnu/$so" 0100755 "${perf_lib[$so]}"
        done
        cpio_entry TRAILER!!! 0
    } >"$perf_initrd.tmp"
    verify_image_libs "$perf_initrd.tmp" "${perf_initrd##*/}"
    mv "$perf_initrd.tmp" "$perf_initrd"
    say "perf initramfs: perf and ${#sonames[@]} libraries from ${#perf_pkgs[@]} packages, \
$(stat -c %s "$perf_initrd") bytes"
    rm -rf "$perf_root"
}

# ---------------------------------------------------------------------------------------
# The CTR kit (guest/linux/ctr/, GPL-2.0): the ctr_rec kernel module built out of tree for
# the kit's kernel, the ctrrec recorder and the ctrtest program, in initramfs-ctr.cpio.gz.
# The module is built with Debian's riscv64 linux-headers-RELEASE (+ -common) of the kit's
# kernel, the suite's amd64 linux-kbuild-VERSION (fixdep, modpost) and this host's
# gcc-riscv64-linux-gnu. The suite's amd64 programs may need a newer C library than the
# host's (forky's modpost needs glibc 2.38, bookworm has 2.36): they run with the suite's
# amd64 libc6 and its loader (wrappers in the kbuild tree). The host compiler is older than
# the one that built the kernel: a wrapper drops the options and -march extensions it does
# not know (-fmin-function-alignment=N becomes -falign-functions=N); BTF of the module is
# not generated (no pahole needed).

ctr_src=$(cd "$(dirname "$0")/.." && pwd)/guest/linux/ctr

# The host tools of the CTR kit, checked before anything is fetched (a missing tool is not
# a suite's fault).
check_ctr_tools() {
    local t
    [ -f "$ctr_src/ctr_rec.c" ] || die "no $ctr_src/ctr_rec.c (the CTR module's source)"
    command -v riscv64-linux-gnu-gcc >/dev/null || die "'riscv64-linux-gnu-gcc' not found: \
the CTR module and ctrtest need Debian's cross compiler: apt-get install \
gcc-riscv64-linux-gnu libc6-dev-riscv64-cross"
    [ -n "$(riscv64-linux-gnu-gcc -print-file-name=libc.a | grep /)" ] || die "the static C \
library of riscv64-linux-gnu-gcc is missing (ctrtest is static): apt-get install \
libc6-dev-riscv64-cross"
    command -v riscv64-linux-gnu-nm >/dev/null ||
        die "'riscv64-linux-gnu-nm' not found: apt-get install binutils-riscv64-linux-gnu"
    for t in make tar; do
        command -v "$t" >/dev/null || die "'$t' not found: building the CTR module needs it (Debian package $t)"
    done
}

build_ctr_kit() {
    local release hdeb cdeb kdeb ldeb common kbuild deps build root hdir kb libdir loader f
    local gcc=riscv64-linux-gnu-gcc nm=riscv64-linux-gnu-nm ext drop='' log rc
    release=$(sed -n 's#^kernel-file /usr/lib/modules/\([^/]*\)/.*#\1#p; s#^kernel-file /boot/vmlinu[xz]-##p' \
        "$versions_file" | head -n1)
    [ -n "$release" ] || die "CTR module: no kernel release in $versions_file"
    build=$ctr_dir/build
    rm -rf "$ctr_dir"
    mkdir -p "$build/root" "$build/libc" "$build/mod"
    root=$build/root
    hdeb=$(download "linux-headers-$release")
    deps=$(dpkg-deb -f "$hdeb" Depends | tr ',' '\n' | sed 's/([^)]*)//g; s/[[:space:]]//g; s/:.*//')
    common=$(grep -E '^linux-headers-.*-common$' <<<"$deps" | head -n1 || true)
    kbuild=$(grep -E '^linux-kbuild-' <<<"$deps" | head -n1 || true)
    [ -n "$common" ] && [ -n "$kbuild" ] || die "linux-headers-$release ($suite) depends on no \
linux-headers-*-common or linux-kbuild-* (Depends: $(dpkg-deb -f "$hdeb" Depends))"
    cdeb=$(download "$common" all)
    kdeb=$(download "$kbuild" amd64)
    ldeb=$(download libc6 amd64)
    for f in "$hdeb" "$cdeb" "$kdeb"; do dpkg-deb -x "$f" "$root"; done
    dpkg-deb -x "$ldeb" "$build/libc"
    {
        echo "ctr linux-headers-$release $(dpkg-deb -f "$hdeb" Version)"
        echo "ctr $common $(dpkg-deb -f "$cdeb" Version)"
        echo "ctr $kbuild:amd64 $(dpkg-deb -f "$kdeb" Version)"
        echo "ctr libc6:amd64 $(dpkg-deb -f "$ldeb" Version)"
    } >>"$versions_file"
    hdir=$root/usr/src/linux-headers-$release
    [ -f "$hdir/Makefile" ] || die "no /usr/src/linux-headers-$release/Makefile in $hdeb"
    # The Makefile names the trees by their installed (absolute) paths.
    sed -i "s#/usr/src/#$root/usr/src/#g" "$hdir/Makefile"
    kb=$(find "$root/usr/lib" -maxdepth 1 -name 'linux-kbuild-*' | head -n1)
    [ -n "$kb" ] || die "no /usr/lib/linux-kbuild-* in $kdeb"
    libdir=$build/libc/usr/lib/x86_64-linux-gnu
    loader=$libdir/ld-linux-x86-64.so.2
    [ -f "$loader" ] || die "no ld-linux-x86-64.so.2 in $ldeb (libc6:amd64, $suite)"
    for f in "$kb"/scripts/basic/fixdep "$kb"/scripts/mod/modpost.real-*; do
        [ -f "$f" ] || continue
        mv "$f" "$f.bin"
        printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$loader" "$libdir" "$f.bin" >"$f"
        chmod +x "$f"
    done
    # The compiler wrapper: -march extensions this assembler lacks are dropped.
    for ext in zabha zacas zawrs zbb zbc zbkb zba zbs zicbom zicboz zicbop zihintpause zfh zvfh; do
        echo 'void f(void){}' | "$gcc" -march="rv64imac_zicsr_zifencei_$ext" -mabi=lp64 -x c -c \
            -o /dev/null - 2>/dev/null || drop="$drop $ext"
    done
    {
        echo '#!/bin/bash'
        echo "# $prog: $gcc for Linux's kbuild; drops:$drop"
        echo 'args=()'
        echo 'for a in "$@"; do'
        echo '    case $a in'
        if ! echo 'void f(void){}' | "$gcc" -fmin-function-alignment=8 -x c -c -o /dev/null - 2>/dev/null; then
            echo '    -fmin-function-alignment=*) a=-falign-functions=${a#*=} ;;'
        fi
        echo '    -march=*)'
        for ext in $drop; do echo "        a=\${a//_$ext/}"; done
        echo '        ;;'
        echo '    esac'
        echo '    args+=("$a")'
        echo 'done'
        echo "exec $gcc \"\${args[@]}\""
    } >"$build/cc"
    chmod +x "$build/cc"
    cp "$ctr_src/ctr_rec.c" "$ctr_src/Kbuild" "$build/mod/"
    say "building ctr_rec.ko for Linux $release (compiler wrapper drops:${drop:- nothing})"
    log=$(mktemp)
    rc=0
    make -C "$hdir" M="$build/mod" CC="$build/cc" CONFIG_DEBUG_INFO_BTF_MODULES= modules >"$log" 2>&1 || rc=$?
    if [ "$quiet" = 0 ] || [ "$rc" != 0 ]; then grep -v 'counted_by\|^ *[0-9]* |\|^ *|' "$log" >&2 || true; fi
    rm -f "$log"
    [ "$rc" = 0 ] && [ -f "$build/mod/ctr_rec.ko" ] || die "building the CTR module (guest/linux/ctr) \
against linux-headers-$release ($suite) failed (make exit status $rc; its output is above)"
    grep -aq "vermagic=$release " "$build/mod/ctr_rec.ko" ||
        die "ctr_rec.ko has no vermagic for $release: it would not load into the kit's kernel"
    cp "$build/mod/ctr_rec.ko" "$ctr_dir/ctr_rec.ko"
    "$gcc" -O2 -static -o "$ctr_dir/ctrtest" "$ctr_src/ctrtest.c" ||
        die "$gcc -static failed on guest/linux/ctr/ctrtest.c (needs libc6-dev-riscv64-cross)"
    # ADDRESS SIZE NAME of the functions the tests look for.
    "$nm" -S "$ctr_dir/ctrtest" | awk '$3 ~ /^[Tt]$/ && ($4 == "main" || $4 == "work" || $4 == "leaf") { print $1, $2, $4 }' \
        >"$ctr_dir/ctrtest.syms"
    [ "$(wc -l <"$ctr_dir/ctrtest.syms")" = 3 ] || die "ctrtest lacks main, work or leaf: $(cat "$ctr_dir/ctrtest.syms")"
    echo "ctr module-for $release gcc $("$gcc" -dumpversion)" >>"$versions_file"
    {
        base_entries
        cpio_entry lib 040755
        cpio_entry lib/vmm-modules 040755
        cpio_entry lib/vmm-modules/ctr_rec.ko 0100644 "$ctr_dir/ctr_rec.ko"
        cpio_entry usr/bin/ctrrec 0100755 "$ctr_src/ctrrec"
        cpio_entry usr/bin/ctrtest 0100755 "$ctr_dir/ctrtest"
        cpio_entry usr/share 040755
        cpio_entry usr/share/ctrtest.syms 0100644 "$ctr_dir/ctrtest.syms"
        cpio_entry TRAILER!!! 0
    } | gzip -n -9 >"$ctr_initrd.tmp"
    mv "$ctr_initrd.tmp" "$ctr_initrd"
    rm -rf "$build"
    say "CTR initramfs: ctr_rec.ko (Linux $release), ctrrec, ctrtest: $(stat -c %s "$ctr_initrd") bytes"
}

# ---------------------------------------------------------------------------------------
# Checking an initramfs image as the guest will see it: every ELF file's program
# interpreter and DT_NEEDED libraries must resolve inside the image.

# Prints $3 bytes of file $1 from byte offset $2.
bytes_at() { dd if="$1" bs=65536 iflag=skip_bytes,count_bytes skip="$2" count="$3" 2>/dev/null; }

# Reads cpio (newc) archive $1 into img_kind (path -> dir/file/symlink/other),
# img_target (symlink -> target), img_data (file -> "OFFSET SIZE"). Fails on a malformed
# archive.
declare -A img_kind=() img_target=() img_data=()
read_cpio() {
    local f=$1 off=0 total hdr mode size namesize name data
    total=$(stat -c %s "$f")
    img_kind=()
    img_target=()
    img_data=()
    while [ $((off + 110)) -le "$total" ]; do
        hdr=$(bytes_at "$f" "$off" 110)
        [ "${hdr:0:6}" = 070701 ] || return 1
        mode=$((16#${hdr:14:8}))
        size=$((16#${hdr:54:8}))
        namesize=$((16#${hdr:94:8}))
        name=$(bytes_at "$f" $((off + 110)) $((namesize - 1)))
        [ "$name" != 'TRAILER!!!' ] || return 0
        data=$(((off + 110 + namesize + 3) / 4 * 4))
        case $((mode & 8#170000)) in
        $((8#040000))) img_kind[$name]=dir ;;
        $((8#100000))) img_kind[$name]='file'; img_data[$name]="$data $size" ;;
        $((8#120000))) img_kind[$name]=symlink; img_target[$name]=$(bytes_at "$f" "$data" "$size") ;;
        *) img_kind[$name]=other ;;
        esac
        off=$(((data + size + 3) / 4 * 4))
    done
    return 1
}

# Prints the path (relative, as in the archive) of the regular file that absolute path $1
# names in the image read by read_cpio, following symbolic links in every component as
# the kernel would; fails if there is none.
img_resolve() {
    local cur='' c next t hops=0
    local -a rest parts
    IFS=/ read -ra rest <<<"$1"
    while [ ${#rest[@]} -gt 0 ]; do
        c=${rest[0]}
        rest=("${rest[@]:1}")
        case $c in
        '' | .) continue ;;
        ..)
            if [[ $cur == */* ]]; then cur=${cur%/*}; else cur=; fi
            continue
            ;;
        esac
        next=${cur:+$cur/}$c
        case ${img_kind[$next]:-} in
        symlink)
            hops=$((hops + 1))
            [ "$hops" -le 40 ] || return 1
            t=${img_target[$next]}
            IFS=/ read -ra parts <<<"$t"
            rest=("${parts[@]}" "${rest[@]}")
            case $t in /*) cur= ;; esac
            ;;
        dir | file) cur=$next ;;
        *) return 1 ;;
        esac
    done
    [ "${img_kind[$cur]:-}" = file ] || return 1
    echo "$cur"
}

# Checks initramfs image $1 (uncompressed cpio; $2 names it in messages): every ELF file in it has its program
# interpreter and every DT_NEEDED library, looked up as Debian's loader does without
# ld.so.cache (DT_RUNPATH, or DT_RPATH, then the multiarch and plain library
# directories), present in the image. Dies naming what is missing.
verify_image_libs() {
    local img=$1 label=$2 tmp name off size so found interp_path rpath d
    local -a problems=() dirs
    local nelf=0
    read_cpio "$img" || die "$label is not a well-formed cpio (newc) archive"
    tmp=$(mktemp)
    for name in "${!img_data[@]}"; do
        read -r off size <<<"${img_data[$name]}"
        if [ "$size" -lt 64 ] || [ "$(bytes_at "$img" "$off" 4 | od -An -c | tr -d ' ')" != '177ELF' ]; then
            continue
        fi
        nelf=$((nelf + 1))
        bytes_at "$img" "$off" "$size" >"$tmp"
        interp_path=$(interp "$tmp")
        if [ -n "$interp_path" ] && ! img_resolve "$interp_path" >/dev/null; then
            problems+=("/$name: program interpreter $interp_path")
        fi
        rpath=$(readelf -d "$tmp" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p')
        [ -n "$rpath" ] || rpath=$(readelf -d "$tmp" | sed -n 's/.*(RPATH).*\[\(.*\)\]$/\1/p')
        rpath=${rpath//\$\{ORIGIN\}/\/${name%/*}}
        rpath=${rpath//\$ORIGIN/\/${name%/*}}
        IFS=: read -ra dirs <<<"$rpath"
        dirs+=(/lib/riscv64-linux-gnu /usr/lib/riscv64-linux-gnu /lib /usr/lib)
        for so in $(needed "$tmp"); do
            found=
            for d in "${dirs[@]}"; do
                [ -n "$d" ] || continue
                if img_resolve "$d/$so" >/dev/null; then found=1; break; fi
            done
            [ -n "$found" ] || problems+=("/$name: $so")
        done
    done
    rm -f "$tmp"
    [ "${#problems[@]}" = 0 ] || die "$label ($suite) lacks what its ELF files need: ${problems[*]}"
    say "$label: the program interpreter and every DT_NEEDED of its $nelf ELF files are in it"
}

# ---------------------------------------------------------------------------------------

# True if the cache of $suite holds a complete kit of that suite, built by this version of
# the script.
cached() {
    cached_base && [ -s "$ctr_initrd" ] && [ "$ctr_initrd" -nt "$0" ] && ctr_newer_than_sources
}

# The same without the CTR kit.
cached_base() {
    [ -s "$image" ] && [ -s "$initrd" ] && [ -s "$perf_initrd" ] && [ -s "$out/versions" ] &&
        [ "$initrd" -nt "$0" ] && [ "$perf_initrd" -nt "$0" ] &&
        [ "$(head -n1 "$out/versions")" = "suite $suite" ] && is_image "$image"
}

# True if the CTR initramfs is newer than every file of guest/linux/ctr.
ctr_newer_than_sources() {
    local f
    for f in "$ctr_src"/*; do
        [ "$ctr_initrd" -nt "$f" ] || return 1
    done
}

# Fetches and builds the kit of $suite (run in a subshell: dies on failure). When only the
# CTR kit is missing or older than guest/linux/ctr, only it is built.
build_suite() {
    setup_apt
    mkdir -p "$debs"
    if [ "$force" = 0 ] && cached_base; then
        # Only the CTR files and (atomically) the versions file change: a run of the script
        # that finds the rest cached meanwhile still finds it complete.
        say "kernel and initramfs cached; building the CTR kit"
        scratch=$(mktemp -d "$out/ctr-scratch.XXXXXX")
        versions_file=$scratch/versions
        grep -v '^ctr \|^busybox-static ' "$out/versions" >"$versions_file"
        fetch_busybox
        write_init "$scratch/init.tmp"
        write_drain "$scratch/drain.tmp"
        build_ctr_kit
        mv "$versions_file" "$out/versions"
        rm -rf "$scratch"
        return
    fi
    scratch=$out
    versions_file=$out/versions.tmp
    # Until the new versions file is in place the cache of this suite is incomplete.
    rm -f "$out/versions" "$out/versions.tmp"
    echo "suite $suite" >"$out/versions.tmp"
    fetch_kernel
    fetch_busybox
    write_init "$out/init.tmp"
    write_drain "$out/drain.tmp"
    build_initramfs
    build_perf_initramfs
    build_ctr_kit
    rm -rf "$out/busybox-pkg" "$out/init.tmp" "$out/drain.tmp"
    mv "$out/versions.tmp" "$out/versions"
}

served=
if [ "$force" = 0 ]; then
    for s in "${suite_list[@]}"; do
        select_suite "$s"
        if cached; then
            served=$s
            say "cached in $out (use --force to refresh):"
            if [ "$quiet" = 0 ]; then sed 's/^/  /' "$out/versions" >&2; fi
            break
        fi
    done
fi
# One build at a time per cache (another run of this script, e.g. the tests of another
# checkout, may be building the same suite): wait for it, then look at the cache again.
if [ -z "$served" ] && command -v flock >/dev/null; then
    mkdir -p "$cache_root"
    exec 9>"$cache_root/.lock"
    if ! flock -n 9; then
        warn "waiting for another run of $prog to finish building in $cache_root"
        flock 9
        if [ "$force" = 0 ]; then
            for s in "${suite_list[@]}"; do
                select_suite "$s"
                if cached; then served=$s; break; fi
            done
        fi
    fi
fi
if [ -z "$served" ]; then
    check_ctr_tools
    failed=()
    reason_file=$(mktemp)
    for s in "${suite_list[@]}"; do
        select_suite "$s"
        say "trying suite $suite (of: ${suite_list[*]})"
        : >"$reason_file"
        set +e
        (
            set -e
            build_suite
        )
        rc=$?
        set -e
        if [ "$rc" = 0 ]; then
            served=$s
            say "built in $out:"
            if [ "$quiet" = 0 ]; then sed 's/^/  /' "$out/versions" >&2; fi
            break
        fi
        reason=$(cat "$reason_file")
        [ -n "$reason" ] || reason="exit status $rc"
        failed+=("$suite: $reason")
        remove_apt_source
        warn "suite $suite failed: $reason"
    done
    rm -f "$reason_file"
    reason_file=
    if [ -z "$served" ]; then
        warn "no suite worked; tried, in order:"
        for f in "${failed[@]}"; do warn "  $f"; done
        die "cannot build the Linux guest kit from any of: ${suite_list[*]}"
    fi
    if [ ${#failed[@]} -gt 0 ]; then
        warn "using suite $served after ${#failed[@]} failed:"
        for f in "${failed[@]}"; do warn "  $f"; done
    fi
fi
select_suite "$served"
if [ "$quiet" = 0 ]; then
    say "Debian $suite kit in $out: $(grep -E '^linux-(image|binary)-[0-9]' "$out/versions" | tail -n1 || true)"
    say "guest memory needed: --memory $mem_plain or more with $initrd," \
        "--memory $mem_perf or more with $perf_initrd"
fi
echo "SUITE=$suite"
echo "KERNEL=$image"
echo "INITRD=$initrd"
echo "INITRD_PERF=$perf_initrd"
echo "INITRD_CTR=$ctr_initrd"
