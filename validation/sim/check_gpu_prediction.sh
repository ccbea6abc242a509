#!/bin/sh
# ptdp-sim against ptdp's own step times on the GPU at hand: measure the GPU
# (jobs/measure_gpu_hw.sh writes OUT/gpu.hw), train the 125M and 1.3B configs of
# validation/bench/bench_gpu.sh on one rank of the CUDA backend (bf16, mock data, no dropout, no
# recomputation; the mean step of iterations 3..ITERS), predict each with ptdp-sim on that file
# as ptdp-train runs it (--fusion none: ptdp's own kernels, which overlap nothing at d 1;
# --implementation megatron-core: the fused attention and the GEMMs' bias/GeLU epilogues its
# CUDA backend has), and check that the prediction is within TOL percent (10) of the measurement.
#   validation/sim/check_gpu_prediction.sh BUILD_DIR
# environment: OUT (./gpu-prediction-out), ITERS (10), TOL (10), RUNS ("125M:8 1.3B:2":
#   CONFIG:MICRO_BATCH), MPIEXEC ("mpirun --bind-to none"), NVIDIA_SMI.
# Exit: 0 every run within TOL; 1 one is not, or a run failed; 77 no usable GPU (nothing run).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: check_gpu_prediction.sh BUILD_DIR}" && pwd) || exit 1
out=${OUT:-$PWD/gpu-prediction-out}
iters=${ITERS:-10} tol=${TOL:-10}
mkdir -p "$out" || exit 1
sh "$top/jobs/measure_gpu_hw.sh" --build "$build" --out "$out/gpu.hw"
st=$?
[ $st -eq 77 ] && { echo "check_gpu_prediction.sh: SKIP: no usable GPU"; exit 77; }
[ $st -eq 0 ] || { echo "check_gpu_prediction.sh: measure_gpu_hw.sh failed ($st)" >&2; exit 1; }
mpiexec=${MPIEXEC:-mpirun --bind-to none}
[ "$(id -u)" = 0 ] && mpiexec="$mpiexec --allow-run-as-root"
. "$top/validation/bench/gpt_configs.sh"
config() { gpt_config "$@"; }
status=0
printf '%-6s %4s %12s %12s %8s\n' config mb measured_ms predicted_ms error_%
for spec in ${RUNS:-125M:8 1.3B:2}; do
  name=${spec%%:*} mb=${spec##*:}
  flags="$(config "$name") --bf16 true --micro-batch-size $mb --global-batch-size $mb"
  log=$out/$name.log
  # shellcheck disable=SC2086
  timeout -k 10 600 $mpiexec -np 1 "$build/ptdp-train" "$top/validation/bench/bench.in" --backend cuda \
    --hidden-dropout 0 --attention-dropout 0 --lr-warmup-iters 0 --log-interval 1 --run-file none \
    --train-iters "$iters" $flags < /dev/null > "$log" 2>&1 ||
    { echo "$name: ptdp-train failed: $log"; status=1; continue; }
  ms=$(awk '/^ *iteration/ { it++; if (it <= 2) next
              for (i = 1; i < NF; i++) if ($i == "(ms):") { s += $(i + 1); k++ } }
            END { if (k) printf "%.3f", s / k }' "$log")
  # shellcheck disable=SC2086
  pred=$("$build/ptdp-sim" "$top/validation/bench/bench.in" --hardware "$out/gpu.hw" --fusion none \
    --implementation megatron-core --hidden-dropout 0 --attention-dropout 0 $flags 2> "$out/$name.sim.err" |
    sed -n 's/^iteration time (s): //p')
  [ -n "$ms" ] && [ -n "$pred" ] || { echo "$name: no step time or prediction ($log)"; status=1; continue; }
  awk -v n="$name" -v mb="$mb" -v m="$ms" -v p="$pred" -v tol="$tol" 'BEGIN {
    e = 100 * (1000 * p - m) / m; printf "%-6s %4d %12.1f %12.1f %+8.1f%s\n", n, mb, m, 1000 * p, e,
    (e > tol || e < -tol) ? "  OUTSIDE" : ""; exit (e > tol || e < -tol) }' || status=1
done
exit $status
