#!/bin/sh
# Rebuild the CTR self-test guest that `vmm run` embeds (vmm/guest/ctr-demo.elf) from
# tests/guests/sbi_ctr_demo.c. Needs the guest cross-compiler (gcc-riscv64-unknown-elf);
# `cargo test -p vmm-tests --test demo` checks the committed file is this build.
set -eu
cd "$(dirname "$0")/.."
cargo build -q --release -p vmm-tests --bin guest-path
cp "$(target/release/guest-path sbi_ctr_demo)" vmm/guest/ctr-demo.elf
echo "updated vmm/guest/ctr-demo.elf"
