#!/bin/bash
# Tensor-parallel benchmark: the benchmark config at t=2 (2 ranks, 1 thread each)
# against t=1 d=1 (1 rank, 2 threads), both step times, their ratio, and the measured TP bytes
# per iteration (with the analytical value for the transformer layers).
#   validation/bench/bench_parallel.sh [BUILD_DIR] [ITERS]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
iters=${2:-6}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cfg="--num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512
     --micro-batch-size 4 --global-batch-size 4 --mock-data --vocab-size 50257 --hidden-dropout 0
     --attention-dropout 0 --train-iters $iters --log-interval 1 --lr 1e-4"
deck=$(mktemp); trap 'rm -f "$deck"' EXIT
echo "# benchmark deck: all keys on the command line" > "$deck"
mean_ms() { # mean step time of iterations 3.. from log lines
  sed -n 's/.*iteration *\([0-9]*\)\/.*elapsed time per iteration (ms): \([0-9.]*\).*/\1 \2/p' | awk '$1 >= 3 { s += $2; n++ } END { printf "%.1f", s / n }'
}
log1=$(OMP_NUM_THREADS=2 mpirun --bind-to none -n 1 "$build/ptdp-train" "$deck" $cfg --num-threads 2 2>&1)
log2=$(OMP_NUM_THREADS=1 mpirun --oversubscribe --bind-to none -n 2 "$build/ptdp-train" "$deck" $cfg \
       --tensor-model-parallel-size 2 --num-threads 1 2>&1)
t1=$(echo "$log1" | mean_ms); t2=$(echo "$log2" | mean_ms)
tp=$(echo "$log2" | sed -n 's/.*bytes sent per iteration: TP \([0-9]*\) (transformer layers \([0-9]*\)).*/\1 \2/p' | head -n 1)
# 8 b s h (t-1)/t elements x 4 bytes x l layers (one micro-batch)
want=$(( 8 * 4 * 512 * 512 / 2 * 4 * 6 ))
echo "uptime: $(uptime)"
echo "t=1 d=1, 1 rank x 2 threads : $t1 ms per iteration"
echo "t=2,     2 ranks x 1 thread : $t2 ms per iteration"
awk -v a="$t1" -v b="$t2" 'BEGIN { printf "ratio t=2 / t=1           : %.3f\n", b / a }'
echo "TP bytes per iteration (rank 0): ${tp% *} total, ${tp#* } in transformer layers (analytical 8 b s h (t-1)/t x 4 B x l = $want)"
