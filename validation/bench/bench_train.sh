#!/bin/sh
# The training benchmark: train the bench.in config (GPT, l 6, h 512, a 8, s 512, V 50304, b = B = 4,
# fp32, no dropout) on 1 rank with 2 threads for 10 iterations; report the mean step time of
# iterations 3..10 as tokens/s and GFLOP/s (model FLOPs 72 B s l h^2 (1 + s/(6h) + V/(12 l h)),
# Narayanan et al. eq. 3 without recomputation) next to a large sgemm's rate measured here, with
# the same compiler, flags and BLAS, and their ratio; then the sgemm rate per OpenBLAS kernel set.
#
# usage: validation/bench/bench_train.sh [BUILD_DIR]   (default: the current directory)
# environment: MPIEXEC (default mpirun), THREADS (2), ITERS (10), SGEMM_N (4096)
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-.}" && pwd)
train="$build/ptdp-train"
[ -x "$train" ] || { echo "bench_train.sh: no ptdp-train in $build (build it: make ptdp-train)" >&2; exit 1; }
threads=${THREADS:-2}
iters=${ITERS:-10}
n=${SGEMM_N:-4096}
mpiexec=${MPIEXEC:-mpirun --bind-to none}  # Open MPI binds 1-2 ranks to one core each by default: the threads need both
[ "$(id -u)" = 0 ] && mpiexec="$mpiexec --allow-run-as-root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the sgemm probe: same compiler, flags and BLAS as ptdp-train (read from the build's Makefile)
mk() { sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1; }
srcdir=$(cd "$build" && cd "$(mk abs_top_srcdir)" && pwd)
sgemm="$build/sgemm_bench"
if [ ! -x "$sgemm" ] || [ "$here/sgemm_bench.c" -nt "$sgemm" ]; then
  $(mk CC) $(mk PTDP_OPT_CFLAGS) $(mk OPENMP_CFLAGS) -I"$build/include" -I"$srcdir/include" $(mk BLAS_CFLAGS) \
    "$here/sgemm_bench.c" -o "$sgemm" $(mk BLAS_LIBS) $(mk LIBS)
fi

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load: $(uptime | sed 's/.*load average: //')"
echo "== OPENBLAS_CORETYPE in the environment: ${OPENBLAS_CORETYPE:-(unset)}"

# the machine may be shared: measure sgemm before and after training and keep the better
echo "== sgemm ${n}^3, $threads thread(s), before training"
OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$sgemm" "$n" 5 | tee "$tmp/sgemm.txt"

echo "== training: $mpiexec -np 1 $train $here/bench.in --num-threads $threads --train-iters $iters"
$mpiexec -np 1 "$train" "$here/bench.in" --num-threads "$threads" --train-iters "$iters" > "$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; echo "bench_train.sh: training failed" >&2; exit 1; }
grep -E '^ptdp-train|OpenBLAS' "$tmp/train.log" | head -n 2
grep -E '^ iteration' "$tmp/train.log" | sed -E 's/\| throughput.*lm loss: ([^ ]*).*/| lm loss: \1/'

echo "== sgemm ${n}^3, $threads thread(s), after training"
OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$sgemm" "$n" 5 | tee -a "$tmp/sgemm.txt"

# model FLOPs and the mean step time of iterations 3..iters
awk -v B=4 -v s=512 -v l=6 -v h=512 -v V=50304 -v first=3 -v sgemm_file="$tmp/sgemm.txt" '
  /^ iteration/ {
    split($2, it, "/"); i = it[1] + 0
    if (match($0, /elapsed time per iteration \(ms\): [0-9.]+/)) {
      ms = substr($0, RSTART, RLENGTH); sub(/.*: /, "", ms)
      if (i >= first) { sum += ms; cnt++ }
    }
  }
  END {
    while ((getline line < sgemm_file) > 0)
      if (match(line, /[0-9.]+ GFLOP\/s/) && substr(line, RSTART, RLENGTH) + 0 > g) g = substr(line, RSTART, RLENGTH) + 0
    if (cnt == 0) { print "bench_train.sh: no iterations to average" > "/dev/stderr"; exit 1 }
    flops = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))
    t = sum / cnt / 1000
    printf "== result: step %.3f s (mean of iterations %d..%d), %.0f tokens/s, %.1f GFLOP/s (%.4g model FLOPs/iteration)\n", t, first, first + cnt - 1, B * s / t, flops / t / 1e9, flops
    printf "== sgemm %.1f GFLOP/s (better of before/after); training step / sgemm = %.1f%%\n", g, 100 * flops / t / 1e9 / g
  }' "$tmp/train.log"

echo "== sgemm rate by OpenBLAS kernel set (OPENBLAS_CORETYPE), $threads thread(s)"
for core in default Haswell SkylakeX; do
  if [ "$core" = SkylakeX ] && ! grep -q -m1 avx512f /proc/cpuinfo; then
    echo "SkylakeX: not run, this CPU has no AVX-512 (the kernels would stop on an illegal instruction)"
    continue
  fi
  if [ "$core" = default ]; then
    printf 'auto-detected: '
    env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=$threads "$sgemm" "$n" 3
  else
    printf '%s: ' "$core"
    OPENBLAS_CORETYPE=$core OPENBLAS_NUM_THREADS=$threads "$sgemm" "$n" 3
  fi
done
echo "== load after: $(uptime | sed 's/.*load average: //')"
