# Shared by scripts/bench-linux-boot.sh and scripts/bench-linux-perf.sh (sourced, from the
# repository's top directory, with `qemu` set): die, QEMU and Debian's OpenSBI (installed
# with apt-get when missing, which needs root), the release vmm and the Linux guest kit.
# Sets fw (OpenSBI's fw_dynamic.bin), vmm, and the kit's KERNEL/INITRD/INITRD_PERF.

die() {
    echo "${0##*/}: error: $*" >&2
    exit 1
}
if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi

command -v "$qemu" >/dev/null 2>&1 ||
    die "$qemu not found (Debian package qemu-system-misc)"

# Debian's OpenSBI.
if ! dpkg -s opensbi >/dev/null 2>&1; then
    echo "installing opensbi (apt-get)..." >&2
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q opensbi >&2 ||
        die "apt-get install opensbi failed"
fi
# The riscv64 build (newer packages also ship riscv32 firmware).
fw=$(dpkg -L opensbi | grep -E '/riscv64-linux-gnu/opensbi/generic/fw_dynamic\.bin$' | head -n1 || true)
[ -n "$fw" ] && [ -f "$fw" ] || die "no generic/fw_dynamic.bin in package opensbi (dpkg -L opensbi)"

echo "building vmm (release)..." >&2
cargo build -q --release -p vmm
vmm=${CARGO_TARGET_DIR:-target}/release/vmm

eval "$(scripts/linux-guest.sh -q)"
[ -f "$KERNEL" ] && [ -f "$INITRD" ] && [ -f "$INITRD_PERF" ] ||
    die "scripts/linux-guest.sh gave no kernel/initrd"

# Virtual time (deterministic) for every `vmm run` measured, as the README's figures;
# `vmm run` itself defaults to host time.
export VMM_CLOCK=virtual
