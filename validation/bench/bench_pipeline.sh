#!/bin/bash
# Pipeline bubble benchmark: measured bubble (time a rank waits for its neighbours /
# its compute time, Narayanan et al.'s t_pb / t_id) against (p-1)/m for 1F1B and (p-1)/(v m) for interleaved,
# at p = 2 and p = 4 for m in {4, 8, 16}.  p = 2 fits a 2-core machine; 4 ranks on 2 cores
# are oversubscribed: waiting ranks sleep between tests of their receives (ptdp does so by
# itself when ranks x threads exceed the cores), but compute still runs at about half speed
# whenever more than two ranks are busy, which inflates the wall-clock bubble and makes the
# compute times uneven; the replayed column removes the first effect, not the second.
#   validation/bench/bench_pipeline.sh [BUILD_DIR]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
deck=$(mktemp); trap 'rm -f "$deck"' EXIT
cat > "$deck" <<EOD
num-layers = 8
hidden-size = 128
num-attention-heads = 4
seq-length = 128
micro-batch-size = 1
mock-data = true
vocab-size = 512
hidden-dropout = 0
attention-dropout = 0
train-iters = 3
log-interval = 3
EOD
echo "uptime: $(uptime)"
printf "%3s %-12s %4s %10s %10s %10s\n" p schedule m measured replayed formula
for p in 2 4; do
for m in 4 8 16; do
  for sched in 1f1b interleaved; do
    extra=""; [ $sched = interleaved ] && extra="--num-layers-per-virtual-pipeline-stage $((8 / (2 * p)))"
    line=$(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 -n $p "$build/ptdp-train" "$deck" \
           --pipeline-model-parallel-size $p --global-batch-size $m $extra 2>&1 | grep '^\[pipeline\]' | tail -n 1)
    meas=$(echo "$line" | sed -n 's/.*max \([0-9.]*\), min.*/\1/p')
    repl=$(echo "$line" | sed -n 's/.*compute times \([0-9.]*\);.*/\1/p')
    form=$(echo "$line" | sed -n 's/.*= \([0-9.]*\)$/\1/p')
    printf "%3d %-12s %4d %10s %10s %10s\n" $p $sched $m "$meas" "$repl" "$form"
  done
done
done
echo "(measured: largest over ranks of time blocked in receives / compute time, wall clock;"
echo " replayed: the schedule replayed with the measured compute times, no message time;"
echo " formula: (p-1)/(v m), v = 1 for 1F1B, 2 interleaved)"
