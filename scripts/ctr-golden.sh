#!/bin/sh
# Regenerate the CTR golden files (tests/golden/ctr_*.out) from QEMU: see golden.sh.
exec "$(dirname "$0")/golden.sh" ctr
