#!/bin/sh
# GPU benchmark of issue 12, unattended: on one GPU, in the same run,
#   1. the GEMM ceiling: a large cuBLASLt GEMM in bf16 and in fp32 (gemm_gpu_bench.c);
#   2. training the issue's GPT configs on the CUDA backend, 1 rank:
#        125M: l 12, h 768, a 12, s 1024;   1.3B: l 24, h 2048, a 16, s 2048;  V 50304 (GPT-2 padded)
#      with and without selective recomputation, micro-batch the largest of MB_LIST that fits
#      (the first that runs), for ITERS iterations; mean time of the last ITERS - 2;
#   3. per run: tokens/s, model TFLOP/s (ptdp-train's own figure: Narayanan et al. eq. 3),
#      MFU against PEAK (989 TFLOP/s: H100 SXM dense bf16) and the ratio to the bf16 GEMM measured.
# Precision: PRECISION (default bf16); the CUDA backend refuses bf16 until mixed precision is
# built, and the script then says so and measures fp32 instead (MFU still against PEAK).
# Prints a table; the raw logs stay in OUT (default ./bench-gpu-out).
#   validation/bench/bench_gpu.sh [BUILD_DIR]
# environment: ITERS (10), MB_LIST ("16 8 4 2 1"), PEAK (989), PRECISION (bf16), CONFIGS ("125M 1.3B")
# NOT YET RUN ON A GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-.}" && pwd)
train="$build/ptdp-train"
[ -x "$train" ] || { echo "bench_gpu.sh: no ptdp-train in $build" >&2; exit 1; }
iters=${ITERS:-10}
peak=${PEAK:-989}
out=${OUT:-$PWD/bench-gpu-out}
mkdir -p "$out"
mpiexec=${MPIEXEC:-mpirun --bind-to none}
[ "$(id -u)" = 0 ] && mpiexec="$mpiexec --allow-run-as-root"
mk() { sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1; }

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)"
probe="$build/gemm_gpu_bench"
$(mk CC) -O2 $(mk CUDA_CFLAGS) "$here/gemm_gpu_bench.c" -o "$probe" $(mk CUDA_LIBS) ||
  { echo "bench_gpu.sh: cannot build the GEMM probe (configured without CUDA?)" >&2; exit 1; }
"$probe" 8192 20 | tee "$out/gemm.txt"
gemm_bf16=$(sed -n 's/^gemm bf16 .*TFLOP\/s=//p' "$out/gemm.txt")

prec_flag=""
case "${PRECISION:-bf16}" in
  bf16) prec_flag="--bf16 true" ;;
  fp16) prec_flag="--fp16 true" ;;
esac
if [ -n "$prec_flag" ] && ! $mpiexec -np 1 "$train" "$here/bench.in" --backend cuda $prec_flag --train-iters 1 \
     --run-file none > "$out/precision-probe.log" 2>&1; then
  echo "note: ${PRECISION:-bf16} refused: $(grep -o 'error.*' "$out/precision-probe.log" | head -n 1); measuring fp32"
  prec_flag=""
fi

config() { # name -> model flags
  case $1 in
    125M) echo "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --max-position-embeddings 1024 --seq-length 1024" ;;
    1.3B) echo "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --max-position-embeddings 2048 --seq-length 2048" ;;
  esac
}
printf '%-6s %-10s %3s %10s %12s %10s %7s %8s\n' config recompute mb "step ms" "tokens/s" "TFLOP/s" MFU "/gemm"
for name in ${CONFIGS:-125M 1.3B}; do
  for rc in none selective; do
    for mb in ${MB_LIST:-16 8 4 2 1}; do
      log="$out/$name-$rc-mb$mb.log"
      # shellcheck disable=SC2046,SC2086
      $mpiexec -np 1 "$train" "$here/bench.in" --backend cuda $prec_flag $(config "$name") --vocab-size 50304 \
        --micro-batch-size "$mb" --global-batch-size "$mb" --train-iters "$iters" --log-interval 1 \
        --recompute-granularity "$rc" --hidden-dropout 0 --attention-dropout 0 --lr-warmup-iters 0 \
        --run-file none > "$log" 2>&1 || continue
      seq=$(config "$name" | sed 's/.*--seq-length //')
      # mean of iterations 3..ITERS: elapsed ms and TFLOP/s columns of the log lines
      awk -v mb="$mb" -v seq="$seq" -v peak="$peak" -v g="${gemm_bf16:-0}" -v n="$name" -v r="$rc" '
        /^ iteration/ { it++; if (it <= 2) next
          for (i = 1; i <= NF; i++) { if ($i == "(ms):") ms += $(i+1); if ($i == "(TFLOP/s/GPU):") tf += $(i+1) }
          k++ }
        END { if (!k) exit 1; ms /= k; tf /= k
          printf "%-6s %-10s %3d %10.1f %12.0f %10.1f %6.1f%% %7.1f%%\n", n, r, mb, ms, mb * seq / (ms / 1000), tf,
                 100 * tf / peak, g > 0 ? 100 * tf / g : 0 }' "$log" && break
    done
  done
done
echo "logs: $out"
