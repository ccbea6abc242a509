#!/bin/sh
# Log compiler for compiled tests: run one test program under the MPI launcher.
# PTDP_TEST_NP (default 1) ranks; MPIRUN is set by the harness (validation/local.mk).
exec ${MPIRUN:-mpirun --oversubscribe} -n "${PTDP_TEST_NP:-1}" "$@"
