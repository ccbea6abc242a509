#!/bin/sh
# Log compiler for compiled tests: run one test program under the MPI launcher.
# PTDP_TEST_NP (default 1) ranks; MPIRUN is set by the harness (validation/local.mk).
# Each run gets its own TMPDIR: Open MPI keeps its session directory there, and tests running
# at once (make -j) would race creating the same one.
dir=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-launch.XXXXXX") || exit 99
TMPDIR=$dir ${MPIRUN:-mpirun --oversubscribe} -n "${PTDP_TEST_NP:-1}" "$@"
rc=$?
rm -rf "$dir"
exit $rc
