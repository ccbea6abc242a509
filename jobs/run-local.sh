#!/bin/bash
# Run ptdp-train on this machine with mpirun.
#   jobs/run-local.sh [-n RANKS] DECK [--key value ...]
# Environment: BUILD_DIR (default <repo>/build), MPIEXEC_FLAGS (extra mpirun options).
# Works as root (sets Open MPI's run-as-root variables) and oversubscribes small machines.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
np=2
if [ "${1:-}" = -n ]; then np=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: jobs/run-local.sh [-n RANKS] DECK [--key value ...]" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( cores / np > 0 ? cores / np : 1 ))}
exec mpirun --oversubscribe --bind-to none ${MPIEXEC_FLAGS:-} -n "$np" "$build/ptdp-train" "$@"
