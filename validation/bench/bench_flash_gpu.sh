#!/bin/sh
# The fused attention's kernels on one GPU: the wmma set (the first) and the mma set
# (the default; PTDP_FLASH_KERNEL in ptdp-gpu(7)) timed side by side in one process by
# flash_gpu_bench.c (built here against the build's libptdp.a), bf16, causal, no dropout, for
#   b 8 h 12 s 1024 hd 64      (GPT 125M's attention at micro-batch 8)
#   b 2 h 16 s 2048 hd 128     (GPT 1.3B's at micro-batch 2)
# (SHAPES overrides: "B:H:S:HD ...").  Per set and shape: forward and backward ms (median of REPS
# timed calls after 3 warm-up calls, CUDA events), TFLOP/s from the causal FLOPs (forward
# 4 b h s^2 hd / 2, backward 2.5 times that), the speed-up of mma over wmma, and the difference
# between the sets' outputs on the same inputs (max |wmma - mma| / max |wmma| for ctx and dqkv;
# max |diff| of lse), which must stay within DIFF_MAX (default 0.02: two bf16 roundings of P and
# dS apart, u = 2^-8 each; a wrong kernel differs by O(1)).
#
#   validation/bench/bench_flash_gpu.sh BUILD_DIR
# environment: OUT (the probe and bench_flash.tsv; default ./bench-flash-out), REPS (20),
#   SHAPES, DIFF_MAX, NVIDIA_SMI (the nvidia-smi to ask), PROBE (a probe to run instead of
#   building one; the tests give the probe linked with the CUDA emulation).
# OUT/bench_flash.tsv: set b h s hd fwd_ms bwd_ms fwd_tflops bwd_tflops (sets wmma, mma), and
#   diff b h s hd ctx_rel lse_abs dqkv_rel.
# Exit: 0 measured, outputs agree; 1 a failure (the probe, or the sets disagree); 2 a bad
# argument; 77 no usable GPU (nothing measured).
set -u
me=bench_flash_gpu.sh
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || { echo "$me: usage: $me BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { echo "$me: no directory $1" >&2; exit 2; }
[ -f "$build/Makefile" ] && [ -f "$build/libptdp.a" ] || { echo "$me: no build in $build (make there first)" >&2; exit 2; }
reps=${REPS:-20}
shapes=${SHAPES:-8:12:1024:64 2:16:2048:128}
diff_max=${DIFF_MAX:-0.02}
[ "$reps" -ge 10 ] 2>/dev/null || { echo "$me: REPS must be 10 or more" >&2; exit 2; }

smi=${NVIDIA_SMI:-nvidia-smi}
gpu=$("$smi" --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null | head -n 1)
if [ -z "$gpu" ]; then
  echo "$me: no GPU: '$smi' lists none; nothing measured" >&2
  exit 77
fi

out=${OUT:-$PWD/bench-flash-out}
mkdir -p "$out" || exit 1
mk() { sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1; }
probe=${PROBE:-$out/flash_gpu_bench}
# shellcheck disable=SC2046
if [ -z "${PROBE:-}" ] && ! $(mk CC) -std=c11 -O2 $(mk OPENMP_CFLAGS) -D_DEFAULT_SOURCE -I"$top/include" -I"$build/include" \
  -I"$top/src/backend" $(mk CUDA_CFLAGS) "$here/flash_gpu_bench.c" -o "$probe" "$build/libptdp.a" $(mk HDF5_LIBS) \
  $(mk BLAS_LIBS) $(mk CUDA_LIBS) -lm > "$out/build.log" 2>&1; then
  echo "$me: cannot build the probe against $build (configured without CUDA?):" >&2
  head -n 5 "$out/build.log" >&2
  exit 1
fi

echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $gpu; bf16, causal, no dropout, median of $reps"
tsv=$out/bench_flash.tsv
: > "$tsv"
failed=0
for sh in $shapes; do
  set -- $(echo "$sh" | tr ':' ' ')
  [ $# -eq 4 ] || { echo "$me: bad shape '$sh' (B:H:S:HD)" >&2; exit 2; }
  "$probe" "$1" "$2" "$3" "$4" "$reps" > "$out/probe.out" 2> "$out/probe.err"
  st=$?
  cat "$out/probe.out" >> "$tsv"
  [ $st -eq 77 ] && { cat "$out/probe.err" >&2; echo "$me: no usable GPU through the CUDA runtime" >&2; exit 77; }
  if [ $st -ne 0 ]; then
    echo "$me: b $1 h $2 s $3 hd $4: the probe failed (status $st):" >&2
    cat "$out/probe.err" >&2
    failed=1
    continue
  fi
  awk -v dmax="$diff_max" '
    $1 == "wmma" || $1 == "mma" { f[$1] = $6; b[$1] = $7;
      printf "%-5s b %d h %2d s %5d hd %3d: forward %8.3f ms %6.1f TFLOP/s   backward %8.3f ms %6.1f TFLOP/s\n",
             $1, $2, $3, $4, $5, $6, $8, $7, $9 }
    $1 == "diff" { bad = !($6 <= dmax && $8 <= dmax)
      printf "      speed-up of mma over wmma: forward %.2fx, backward %.2fx\n", f["wmma"] / f["mma"], b["wmma"] / b["mma"]
      printf "      mma against wmma: ctx %.2e, lse %.2e (abs), dqkv %.2e (max |diff| / max |wmma|): %s\n",
             $6, $7, $8, bad ? "DIFFER (above " dmax ")" : "agree"
      exit bad }' "$out/probe.out" || failed=1
done
echo "(rows in $tsv)"
exit $failed
