#!/usr/bin/env bash
# linux-guest.sh: fetch Debian's unmodified riscv64 Linux kernel and build a busybox
# initramfs for `vmm run`.
#
# Usage:
#   scripts/linux-guest.sh [--suite trixie|forky|sid] [--cache-dir DIR] [--force] [--quiet]
#
#   --suite S      Debian suite to take linux-image-riscv64 and busybox-static from:
#                  trixie (default; Linux 6.12), forky or sid (newest kernel, 7.x).
#                  Env: LINUX_GUEST_SUITE. Env LINUX_GUEST_MIRROR: the Debian mirror.
#   --cache-dir D  where the results are kept. Env: LINUX_GUEST_DIR. Default:
#                  ${XDG_CACHE_HOME:-$HOME/.cache}/riscv-ctr-vmm/linux-guest
#   --force        refresh the package lists, download and rebuild even when cached (the
#                  initramfs is also rebuilt whenever this script is newer than it)
#   --quiet        print only the final KERNEL=/INITRD= lines
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
#                    (about 60 libraries, 43 MB, from about 60 packages) in
#                    /usr/lib/riscv64-linux-gnu, the loader as /lib/ld-linux-riscv64-lp64d.so.1
#                    (/lib -> usr/lib). The libraries are found by following DT_NEEDED
#                    (host `readelf`, binutils) from perf: a library missing from what is
#                    extracted is looked for in the dependencies of the package of the file
#                    that needs it, downloaded as needed; the script fails naming a soname
#                    no package provides. Not compressed: unpacking it costs the kernel
#                    about 0.3 billion guest instructions, gunzipping it 1.1 billion.
#   versions         the package versions the files came from
#   debs/            the downloaded .deb files
# The last three lines printed are `KERNEL=<path>`, `INITRD=<path>` and
# `INITRD_PERF=<path>` (easy to `eval`). The plain initramfs stays small so boots that do
# not need perf stay fast.
#
# The /init of the initramfs mounts proc, sysfs and devtmpfs, prints the line
#   VMM-GUEST-READY
# then runs the shell command given as `vmmcmd=...` on the kernel command line (the kernel
# hands unknown `name=value` parameters to init as environment variables; quote a command
# with spaces: vmmcmd="cat /proc/cpuinfo"), prints `VMM-GUEST-EXIT <status>` and powers off
# (`poweroff -f`, i.e. SBI SRST). Without vmmcmd it starts an interactive shell on the
# console and powers off when the shell exits. Before powering off it waits until the
# polled UART has sent everything (/bin/drain-console). Example:
#
#   eval "$(scripts/linux-guest.sh --quiet)"
#   target/release/vmm run --kernel "$KERNEL" --initrd "$INITRD" --memory 256 \
#       --cmdline 'console=ttyS0 earlycon=sbi panic=-1 vmmcmd="cat /proc/cpuinfo"'
#
# With the perf initramfs, e.g. vmmcmd="perf stat -e cycles,instructions,branches busybox
# md5sum /bin/busybox" or "cd /tmp; perf record -e instructions -c 100000 busybox md5sum
# /bin/busybox; perf report --stdio" (tests/tests/linux_perf.rs).
#
# earlycon=sbi prints through SBI DBCN; earlycon=uart8250,mmio,0x10000000 works too. The
# kernel needs --memory 128 or more (with 64 it panics in sparse_init). panic=-1 turns a
# later panic into an SBI reboot, which ends the VMM; success is the VMM-GUEST-EXIT line.
#
# Host requirements: Debian (bookworm or later) with apt, run as root the first time (or
# whenever the package lists must be refreshed): the script adds the foreign architecture
# riscv64 (`dpkg --add-architecture riscv64`), an apt source for the suite restricted to
# [arch=riscv64] (/etc/apt/sources.list.d/riscv-ctr-vmm-riscv64-$SUITE.sources) and an
# APT pin of priority 1 for that suite (/etc/apt/preferences.d/riscv-ctr-vmm-riscv64-$SUITE),
# so nothing on the host is ever upgraded from it. Packages are fetched with
# `apt-get download` and unpacked with `dpkg-deb -x`; nothing is installed. The perf
# initramfs also needs `readelf` (binutils).

set -euo pipefail

prog=${0##*/}
suite=${LINUX_GUEST_SUITE:-trixie}
cache_root=${LINUX_GUEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/riscv-ctr-vmm/linux-guest}
force=0
quiet=0
mirror=${LINUX_GUEST_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() {
    echo "$prog: error: $*" >&2
    exit 1
}
say() {
    if [ "$quiet" = 0 ]; then echo "$prog: $*" >&2; fi
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
    --suite) [ $# -ge 2 ] || die "--suite needs a value"; suite=$2; shift 2 ;;
    --suite=*) suite=${1#*=}; shift ;;
    --cache-dir) [ $# -ge 2 ] || die "--cache-dir needs a value"; cache_root=$2; shift 2 ;;
    --cache-dir=*) cache_root=${1#*=}; shift ;;
    --force) force=1; shift ;;
    --quiet | -q) quiet=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
    esac
done

# Code names only: the APT pin matches the release's code name (n=...).
case $suite in
unstable) suite=sid ;;
trixie | forky | sid) ;;
*) die "unsupported suite '$suite': riscv64 is an official Debian architecture from trixie on \
(use trixie, forky or sid)" ;;
esac

out=$cache_root/$suite
image=$out/Image
initrd=$out/initramfs.cpio.gz
perf_initrd=$out/initramfs-perf.cpio
debs=$out/debs

for tool in apt-get dpkg dpkg-deb gzip od; do
    command -v "$tool" >/dev/null || die "'$tool' not found: this script needs a Debian host with apt"
done

# ---------------------------------------------------------------------------------------
# apt: the riscv64 architecture, a source for the suite, a pin that keeps the host safe.

sources=/etc/apt/sources.list.d/riscv-ctr-vmm-riscv64-$suite.sources
pin=/etc/apt/preferences.d/riscv-ctr-vmm-riscv64-$suite

# Writes $2 to file $1 if its content differs; returns 0 when it changed.
write_if_changed() {
    if [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; then
        return 1
    fi
    [ "$(id -u)" = 0 ] || die "$1 must be created or updated, which needs root (run once as root)"
    printf '%s\n' "$2" >"$1"
    say "wrote $1"
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
    if write_if_changed "$sources" "# Added by riscv-ctr-vmm scripts/linux-guest.sh: riscv64 guest packages only.
Types: deb
URIs: $mirror
Suites: $suite
Components: main
Architectures: riscv64
Signed-By: $keyring"; then
        changed=1
    fi
    # Priority 1: a package from this suite is never chosen over an installed or host
    # version (apt-get download names the suite explicitly).
    if write_if_changed "$pin" "# Added by riscv-ctr-vmm scripts/linux-guest.sh: never upgrade the host from $suite.
Package: *
Pin: release n=$suite
Pin-Priority: 1"; then
        changed=1
    fi
    # Refresh the lists of this one source when it is new or its lists are missing.
    local host=${mirror#*://}
    host=${host%%/*}
    if [ "$changed" = 1 ] || [ "$force" = 1 ] ||
        ! compgen -G "/var/lib/apt/lists/${host}_*dists_${suite}_main_binary-riscv64_Packages*" >/dev/null; then
        [ "$(id -u)" = 0 ] || die "apt-get update needs root (run once as root)"
        say "apt-get update ($suite, riscv64)"
        run apt-get update -q \
            -o Dir::Etc::sourcelist="$sources" -o Dir::Etc::sourceparts=- \
            -o APT::Get::List-Cleanup=0 ||
            die "apt-get update failed for $mirror $suite (riscv64): network or mirror problem?"
    fi
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

# Downloads riscv64 package $1 from $suite into $debs; prints the .deb path.
download() {
    local pkg=$1 ver deb
    ver=$(candidate "$pkg")
    [ -n "$ver" ] || die "package $pkg:riscv64 is not available from Debian $suite ($mirror); \
check 'apt-cache policy $pkg:riscv64' and that the suite has riscv64"
    deb=$debs/${pkg}_${ver//:/%3a}_riscv64.deb
    if [ ! -s "$deb" ] || [ "$force" = 1 ]; then
        say "apt-get download $pkg:riscv64=$ver"
        # As root, apt drops privileges to _apt, which cannot write into a private cache.
        (cd "$debs" && run apt-get download -q -o APT::Sandbox::User="$(id -un)" "$pkg:riscv64=$ver") ||
            die "apt-get download $pkg:riscv64=$ver failed"
    fi
    [ -f "$deb" ] || die "downloaded $pkg but cannot find its .deb in $debs"
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
    local queue=(linux-image-riscv64) seen=" " pkg deb kdeb= kdir kfile f dep
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
    printf '%s\n' "${used[@]}" >>"$out/versions.tmp"
    echo "kernel-file ${kfile#"$kdir"}" >>"$out/versions.tmp"
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

# Without an interrupt line the 8250 driver sends its transmit buffer from a timer, and
# neither poweroff -f nor a hangup of the tty waits for it. drain-console sets the console's
# terminal attributes to what they are: busybox stty uses tcsetattr(TCSADRAIN), which waits
# until the output has been sent. Where /proc/tty/driver/serial exists (Linux 6.x, not 7.x)
# it then also waits until the UARTs' transmit counts stop moving (at most 30 s).
write_drain() {
    cat >"$1" <<'EOF'
#!/bin/sh
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

# Extracts busybox-static into $out/busybox-pkg; sets $busybox to its binary.
busybox=
fetch_busybox() {
    local bdeb bdir f
    bdeb=$(download busybox-static)
    bdir=$out/busybox-pkg
    rm -rf "$bdir"
    mkdir -p "$bdir"
    dpkg-deb -x "$bdeb" "$bdir"
    busybox=
    for f in "$bdir"/usr/bin/busybox "$bdir"/bin/busybox; do
        if [ -f "$f" ]; then busybox=$f; break; fi
    done
    [ -n "$busybox" ] || die "no busybox binary in $bdeb"
    echo "busybox-static $(dpkg-deb -f "$bdeb" Version)" >>"$out/versions.tmp"
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
    cpio_entry init 0100755 "$out/init.tmp"
    cpio_entry bin/drain-console 0100755 "$out/drain.tmp"
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

perf_root=$out/perf-pkgs      # one directory per extracted package
perf_pkgs=()                  # the packages extracted, in order
declare -A perf_expanded=()   # packages whose dependencies were added
declare -A perf_lib=()        # soname -> file in $perf_root
declare -A perf_owner=()      # file -> package

# Prints the regular file that $2 (a path relative to tree $1) names, following symbolic
# links inside the tree; fails if there is none.
resolve_in() {
    local root=$1 rel=$2 hops=0 t
    while [ -L "$root/$rel" ]; do
        t=$(readlink "$root/$rel")
        case $t in
        /*) rel=${t#/} ;;
        *) rel=$(dirname "$rel")/$t ;;
        esac
        hops=$((hops + 1))
        [ "$hops" -lt 16 ] || return 1
    done
    [ -f "$root/$rel" ] || return 1
    echo "$root/$rel"
}

perf_add_pkg() {
    local pkg=$1 deb
    deb=$(download "$pkg")
    mkdir -p "$perf_root/$pkg"
    dpkg-deb -x "$deb" "$perf_root/$pkg"
    perf_pkgs+=("$pkg")
    echo "$pkg $(dpkg-deb -f "$deb" Version)" >>"$out/versions.tmp"
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

# Looks soname $1 up in the extracted packages: sets perf_lib[$1] and perf_owner of the file.
perf_find_lib() {
    local so=$1 p d f
    for p in "${perf_pkgs[@]}"; do
        for d in usr/lib/riscv64-linux-gnu lib/riscv64-linux-gnu usr/lib lib; do
            if [ -e "$perf_root/$p/$d/$so" ] || [ -L "$perf_root/$p/$d/$so" ]; then
                f=$(resolve_in "$perf_root/$p" "$d/$so") || continue
                perf_lib[$so]=$f
                perf_owner[$f]=$p
                return 0
            fi
        done
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
    mv "$perf_initrd.tmp" "$perf_initrd"
    say "perf initramfs: perf and ${#sonames[@]} libraries from ${#perf_pkgs[@]} packages, \
$(stat -c %s "$perf_initrd") bytes"
    rm -rf "$perf_root"
}

# ---------------------------------------------------------------------------------------

if [ "$force" = 0 ] && [ -s "$image" ] && [ -s "$initrd" ] && [ -s "$perf_initrd" ] &&
    [ -s "$out/versions" ] && [ "$initrd" -nt "$0" ] && [ "$perf_initrd" -nt "$0" ]; then
    say "cached in $out (use --force to refresh):"
    if [ "$quiet" = 0 ]; then sed 's/^/  /' "$out/versions" >&2; fi
else
    setup_apt
    mkdir -p "$debs"
    rm -f "$out/versions.tmp"
    fetch_kernel
    fetch_busybox
    write_init "$out/init.tmp"
    write_drain "$out/drain.tmp"
    build_initramfs
    build_perf_initramfs
    rm -rf "$out/busybox-pkg" "$out/init.tmp" "$out/drain.tmp"
    mv "$out/versions.tmp" "$out/versions"
    say "built in $out:"
    if [ "$quiet" = 0 ]; then sed 's/^/  /' "$out/versions" >&2; fi
fi
echo "KERNEL=$image"
echo "INITRD=$initrd"
echo "INITRD_PERF=$perf_initrd"
