#!/bin/sh
# Calibrate a hardware file to this machine (or cluster): run the few short ptdp-train runs the
# fit needs, then ptdp-sim --calibrate on their run files (ptdp-sim(1), CALIBRATION).
#   jobs/calibrate.sh BASE.hw MINE.hw DECK [--key value ...]
# DECK and the keys are the model to calibrate on (the model you will predict: the rates are
# those of its shapes); the script sets the layout, iterations and run files itself.
# Environment: ITERS (default 6), THREADS per rank (default 1, as jobs/measure_cpu_hw.sh measures),
# BUILD_DIR (default <repo>/build), OUT_DIR (default ./calibration), LAUNCH (mpirun or srun;
# default srun inside a Slurm allocation, else mpirun), MPIEXEC_FLAGS (extra launcher options).
#
# Which runs, from what the fit must separate (each a group of hardware values it scales):
#   t1        1 rank, no communication: the forward and backward timers give GEMMs and the other
#             operators in two proportions (a backward runs two GEMMs per forward one, and its
#             LayerNorm, softmax and dropout cost other multiples of their forwards), and the
#             optimizer timer the optimizer alone;
#   t1 full recompute  1 rank: the backward with a third forward in it, a third proportion;
#   t2        2 ranks, tensor parallel: the tp-comm timer gives the collectives within a node,
#             and its GEMMs halve while its LayerNorms and dropouts do not (a fourth proportion);
#   d2        2 ranks, data parallel: the gradient all-reduce, one large message where TP's are
#             many small ones;
#   dN        only inside a Slurm allocation of several nodes: data parallel over every task,
#             for the collectives between nodes.
# Iterations: ITERS, one log interval each; the fit drops the first (warm-up: allocation, page
# faults) and takes the median of the rest, so 6 gives 5 samples of every timer (the median
# rejects up to 2 disturbed ones).
set -eu
[ $# -ge 3 ] || { echo "usage: jobs/calibrate.sh BASE.hw MINE.hw DECK [--key value ...]" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
base=$1; mine=$2; deck=$3; shift 3
build=${BUILD_DIR:-$top/build}; out=${OUT_DIR:-calibration}; iters=${ITERS:-6}
export OMP_NUM_THREADS=${THREADS:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ -z "${LAUNCH:-}" ]; then
  if [ -n "${SLURM_JOB_ID:-}" ] && command -v srun > /dev/null; then LAUNCH=srun; else LAUNCH=mpirun; fi
fi
mkdir -p "$out"
# launch NAME NP KEYS...: one short run, its run file $out/NAME.h5, its log $out/NAME.log
launch() {
  name=$1 np=$2; shift 2
  layout="$*"
  rm -f "$out/$name.h5"
  case $LAUNCH in
    srun) set -- srun --ntasks="$np" --cpus-per-task="$OMP_NUM_THREADS" ${MPIEXEC_FLAGS:-} "$build/ptdp-train" "$deck" "$@" ;;
    *) set -- mpirun --oversubscribe --bind-to none ${MPIEXEC_FLAGS:-} -np "$np" "$build/ptdp-train" "$deck" "$@" ;;
  esac
  # shellcheck disable=SC2086
  "$@" $keys $layout --train-iters "$iters" --log-interval 1 --run-file "$out/$name.h5" < /dev/null > "$out/$name.log" 2>&1 ||
    { echo "jobs/calibrate.sh: the $name run failed ($*): its log:" >&2; tail -20 "$out/$name.log" >&2; exit 1; }
  runs="$runs $out/$name.h5"
}
keys="$*"
runs=""
launch t1 1
launch t1-recompute 1 --recompute-granularity full
launch t2 2 --tensor-model-parallel-size 2
launch d2 2
if [ "$LAUNCH" = srun ] && [ "${SLURM_NNODES:-1}" -gt 1 ]; then
  launch "d${SLURM_NTASKS}" "$SLURM_NTASKS"
fi
# shellcheck disable=SC2086
"$build/ptdp-sim" --calibrate $runs --hardware "$base" --out "$mine"
