#!/bin/sh
# GPU benchmark, unattended, on one GPU, in one run:
#   1. the GEMM ceiling: n^3 cuBLASLt products in bf16 and fp32 on random inputs, the median of
#      GEMM_REPS calls, the result checked (gemm_gpu_bench.c, built here with the build's flags);
#   2. the GPT configs (gpt_configs.sh) on the CUDA backend, 1 rank, mock data, no dropout, in each
#      precision of PRECISIONS (fp32 bf16 fp16):
#        125M: l 12, h 768, a 12, s 1024;   1.3B: l 24, h 2048, a 16, s 2048;   V 50304
#        tiny: l 2, h 64, a 4, s 128, V 1024 (a smoke test of this script, not a benchmark)
#      RUNS lists CONFIG:RECOMPUTE:MB,MB,... ; the first micro-batch size that fits runs (a run
#      out of GPU memory tries the next), ITERS iterations, the mean of iterations 3..ITERS;
#   3. per run: step ms, tokens/s, model TFLOP/s (ptdp-train's own figure, Narayanan et al.
#      eq. 3), MFU against PEAK (the card's dense bf16 peak, from its name; fp32 runs too, as MFU
#      is quoted), and the ratio to the GEMM ceiling measured for the run's own precision; a bf16
#      or fp16 run's note says how the CUDA backend stored the type ("16-bit storage native": its
#      own 16-bit kernels and cuBLASLt bf16/fp16 GEMMs, the path ptdp-train takes on cuda).
# A precision the trainer refuses (bf16 until mixed precision is built) is a SKIP whose reason is
# the trainer's own message, found by a one-iteration probe of a small model; the same script
# measures it once the trainer takes it.
#
#   validation/bench/bench_gpu.sh [BUILD_DIR]          (default: .)
# environment: OUT (logs and bench.tsv; default ./bench-gpu-out), ITERS (10), PRECISIONS
#   ("fp32 bf16"), RUNS (below), PEAK (TFLOP/s; default from the GPU's name), RUN_TIMEOUT (s per
#   training run, 300), GEMM_N (8192; 0 skips the probe), GEMM_REPS (20), TRAIN (ptdp-train to
#   run: default BUILD_DIR/ptdp-train), MPIEXEC ("mpirun --bind-to none").
# OUT/bench.tsv: one row per measurement, tab-separated:
#   what precision recompute mb result step_ms tokens_per_s tflops mfu_pct gemm_pct why
# (what: gemm or a config name; "-" where a figure does not apply).
# Exit: 0 nothing failed (skips allowed); 1 something failed; 77 no usable GPU (nothing measured).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-.}" && pwd) || exit 1
train=${TRAIN:-$build/ptdp-train}
[ -x "$train" ] || { echo "bench_gpu.sh: no ptdp-train at $train" >&2; exit 1; }
iters=${ITERS:-10}
[ "$iters" -ge 3 ] 2>/dev/null || { echo "bench_gpu.sh: ITERS must be 3 or more (the mean starts at 3)" >&2; exit 1; }
runs=${RUNS:-125M:none:16,8,4 125M:selective:16,8,4 1.3B:none:4,2,1 1.3B:selective:8,4,2,1}
out=${OUT:-$PWD/bench-gpu-out}
mkdir -p "$out" || exit 1
tsv=$out/bench.tsv
printf 'what\tprecision\trecompute\tmb\tresult\tstep_ms\ttokens_per_s\ttflops\tmfu_pct\tgemm_pct\twhy\n' > "$tsv"
mpiexec=${MPIEXEC:-mpirun --bind-to none}
[ "$(id -u)" = 0 ] && mpiexec="$mpiexec --allow-run-as-root"
mk() { sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1; }
failed=0
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$tsv"; [ "$5" = FAIL ] && failed=1; return 0; }
# the first error line of a log, else its last line (one line, tabs removed: it goes in the TSV)
why_of() { { grep -m 1 'error' "$1" || tail -n 1 "$1"; } | tr '\t' ' ' | cut -c 1-300; }

gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu \
        --format=csv,noheader 2>/dev/null | head -n 1)
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) ${gpu:-nvidia-smi: no GPU listed}" | tee "$out/gpu.txt"

# dense bf16 peak (TFLOP/s, datasheet, without sparsity) from the card's name; PEAK overrides
peak_of() {
  case $1 in
    *H100*PCIe*) echo 756 ;;
    *H100*NVL*) echo 835 ;;
    *H100* | *H200* | *H800*) echo 989 ;;
    *B200*) echo 2250 ;;
    *A100*) echo 312 ;;
    *) echo "" ;;
  esac
}
peak=${PEAK:-$(peak_of "$gpu")}

# ---- 1. the GEMM ceiling
# shellcheck disable=SC2034 # read through eval in measure()
gemm_bf16="" gemm_fp32=""
if [ "${GEMM_N:-8192}" != 0 ]; then
  probe=$out/gemm_gpu_bench
  # shellcheck disable=SC2046
  if ! $(mk CC) -std=c11 -O2 $(mk CUDA_CFLAGS) "$here/gemm_gpu_bench.c" -o "$probe" $(mk CUDA_LIBS) -lm \
       > "$out/gemm-build.log" 2>&1; then
    row gemm - - - FAIL - - - - - "cannot build gemm_gpu_bench (configured without CUDA?): $(why_of "$out/gemm-build.log")"
  else
    timeout -k 10 "${RUN_TIMEOUT:-300}" "$probe" "${GEMM_N:-8192}" "${GEMM_REPS:-20}" > "$out/gemm.txt" 2>&1
    rc=$?
    cat "$out/gemm.txt"
    if [ $rc = 77 ]; then
      row gemm - - - SKIP - - - - - "$(tail -n 1 "$out/gemm.txt")"
      echo "bench_gpu.sh: SKIP: $(tail -n 1 "$out/gemm.txt")"
      exit 77
    fi
    for t in bf16 fp32; do
      line=$(grep "^gemm $t " "$out/gemm.txt")
      tf=$(echo "$line" | sed -n 's/.*TFLOP\/s=\([0-9.]*\).*/\1/p')
      ms=$(echo "$line" | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')
      if [ -n "$tf" ] && ! echo "$line" | grep -q 'CHECK FAILED'; then
        eval "gemm_$t=$tf"
        mfu=$([ -n "$peak" ] && awk -v a="$tf" -v p="$peak" 'BEGIN { printf "%.1f", 100 * a / p }' || echo -)
        row gemm "$t" - - PASS "$ms" - "$tf" "$mfu" - "n=${GEMM_N:-8192}, random inputs, $(echo "$line" | sed -n 's/.*\(max_err=[^ ]*\).*/\1/p')"
      elif [ -n "$line" ]; then
        row gemm "$t" - - FAIL - - - - - "$(echo "$line" | tr '\t' ' ')"
      else
        row gemm "$t" - - FAIL - - - - - "exit $rc: $(why_of "$out/gemm.txt")"
      fi
    done
  fi
fi

# ---- 2. training runs
. "$here/gpt_configs.sh"
config() { gpt_config "$@"; } # name -> model flags
prec_flags() {
  case $1 in
    fp32) echo "" ;;
    bf16) echo "--bf16 true" ;;
    fp16) echo "--fp16 true" ;;
    *) return 1 ;;
  esac
}
# train LOG FLAGS...: one rank on the CUDA backend; returns the launcher's exit status
train() {
  log=$1
  shift
  # shellcheck disable=SC2086
  timeout -k 10 "${RUN_TIMEOUT:-300}" $mpiexec -np 1 "$train" "$here/bench.in" --backend cuda \
    --hidden-dropout 0 --attention-dropout 0 --lr-warmup-iters 0 --log-interval 1 --run-file none "$@" \
    < /dev/null > "$log" 2>&1
}
# path_of LOG: how a 16-bit run stored its type (the trainer's [backend] line: the CUDA backend's
# own 16-bit kernels and GEMMs, "native", or fp32 operations under the mixed-precision wrapper)
path_of() {
  grep -q '^\[backend\] .* natively' "$1" && echo "; 16-bit storage native"
  grep -q '^\[backend\] .* through the mixed-precision wrapper' "$1" && echo "; 16-bit storage wrapped"
  return 0
}
# measure LOG MB SEQ PRECISION: "step_ms tokens_per_s tflops mfu_pct gemm_pct" from the log lines
measure() {
  g=$(eval echo "\${gemm_$4:-}")
  awk -v mb="$2" -v seq="$3" -v peak="${peak:-0}" -v g="${g:-0}" '
    /^ *iteration/ { it++; if (it <= 2) next
      for (i = 1; i < NF; i++) { if ($i == "(ms):") ms += $(i + 1); if ($i == "(TFLOP/s/GPU):") tf += $(i + 1) }
      k++ }
    END { if (!k) exit 1; ms /= k; tf /= k
      printf "%.1f %.0f %.1f %s %s\n", ms, mb * seq / (ms / 1000), tf,
        (peak > 0 ? sprintf("%.1f", 100 * tf / peak) : "-"), (g > 0 ? sprintf("%.1f", 100 * tf / g) : "-") }' "$1"
}

for prec in ${PRECISIONS:-fp32 bf16}; do
  pf=$(prec_flags "$prec") || { row - "$prec" - - FAIL - - - - - "unknown precision (fp32, bf16, fp16)"; continue; }
  # one iteration of a small model: a refusal of the precision is a SKIP of its runs, with the reason
  probe_log=$out/probe-$prec.log
  # shellcheck disable=SC2086,SC2046
  if ! train "$probe_log" $pf $(config tiny) --micro-batch-size 1 --global-batch-size 1 --train-iters 1; then
    if grep -q "no usable GPU\|built without CUDA" "$probe_log"; then
      row - "$prec" - - SKIP - - - - - "$(why_of "$probe_log")"
      echo "bench_gpu.sh: SKIP: $(why_of "$probe_log")"
      exit 77
    fi
    reason=$(why_of "$probe_log")
    result=FAIL
    # the trainer refuses this precision: an error naming it before any iteration ran
    grep "error" "$probe_log" | grep -q -- "$prec" && ! grep -q '^ *iteration' "$probe_log" && result=SKIP
    for spec in $runs; do
      row "${spec%%:*}" "$prec" "$(echo "$spec" | cut -d: -f2)" - "$result" - - - - - "$reason"
    done
    continue
  fi
  for spec in $runs; do
    name=${spec%%:*} rc_mode=$(echo "$spec" | cut -d: -f2) mbs=$(echo "$spec" | cut -d: -f3 | tr ',' ' ')
    flags=$(config "$name") || { row "$name" "$prec" "$rc_mode" - FAIL - - - - - "unknown config (125M, 1.3B, tiny)"; continue; }
    seq=$(echo "$flags" | sed 's/.*--seq-length \([0-9]*\).*/\1/')
    result=FAIL reason="no micro-batch size given" used=-
    for mb in $mbs; do
      log=$out/$name-$prec-$rc_mode-mb$mb.log
      # shellcheck disable=SC2086
      train "$log" $pf $flags --micro-batch-size "$mb" --global-batch-size "$mb" --train-iters "$iters" \
        --recompute-granularity "$rc_mode"
      rc=$?
      used=$mb
      if [ $rc = 0 ] && m=$(measure "$log" "$mb" "$seq" "$prec"); then
        result=PASS
        break
      fi
      case $rc in
        0) reason="no iteration lines to measure in $log" ;;
        124 | 137) reason="timed out after ${RUN_TIMEOUT:-300} s" ;;
        *) reason=$(why_of "$log") ;;
      esac
      grep -qi "out of memory" "$log" || break # only a run out of memory tries a smaller micro-batch
    done
    if [ $result = PASS ]; then
      # shellcheck disable=SC2086
      set -- $m
      note="$iters iterations, mean of 3..$iters$(path_of "$log")"
      row "$name" "$prec" "$rc_mode" "$used" PASS "$1" "$2" "$3" "$4" "$5" "$note"
    else
      row "$name" "$prec" "$rc_mode" "$used" FAIL - - - - - "$reason"
    fi
  done
done

# ---- 3. the table
echo "peak ${peak:-unknown (set PEAK)} TFLOP/s dense bf16; MFU = model TFLOP/s / peak; /gemm = model TFLOP/s / the GEMM ceiling of the run's precision"
awk -F '\t' 'NR == 1 { printf "%-6s %-5s %-10s %3s %-5s %10s %10s %8s %6s %6s  %s\n", "what", "prec", "recompute", "mb",
                         "", "step ms", "tokens/s", "TFLOP/s", "MFU%", "/gemm%", "note"; next }
             { printf "%-6s %-5s %-10s %3s %-5s %10s %10s %8s %6s %6s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$tsv"
echo "logs: $out"
exit $failed
