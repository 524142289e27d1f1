#!/bin/sh
# Regenerate the PMU golden files (tests/golden/pmu_*.out) from QEMU: see golden.sh.
exec "$(dirname "$0")/golden.sh" pmu
