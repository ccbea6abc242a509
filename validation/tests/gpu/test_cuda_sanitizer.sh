#!/bin/sh
# compute-sanitizer on a small model trained on the CUDA backend: memcheck (out-of-bounds and
# misaligned accesses, leaks of device memory at exit) and racecheck (shared-memory races in our
# kernels) must report no error.  Skips (77) with the reason without a GPU, without
# compute-sanitizer, or where the sanitizer refuses the device: "Device not supported" is what
# it answers under gVisor (seen on this workplace's H200 machines of that runtime, 2026-11-04),
# a limit of the machine and not an error of ours.
# Two cases: fp32 (memcheck and racecheck of a training run), and bf16 with heads of 64 (added
# after the H200's second run, whose sanitizer step ran fp32 alone): memcheck of a training run
# (the 16-bit kernels and the mma flash kernels), racecheck of test_cuda_flash with the mma
# kernels (every case of the fused attention's test: tails, dropout, grouped heads; heads other
# than 64 and 128 run the wmma kernels), not of a training run: under racecheck cuBLASLt's bf16
# kernels kept a 2-layer run from finishing its first iteration in 17 s, twice (H200,
# 2026-11-26), while our kernels with shared memory are all in the fp32 run or in the test.
# PTDP_SANITIZER_TIMEOUT: seconds per tool and case (default 900; run_gpu.sh gives each a quarter
# of its step); PTDP_SANITIZER_CASES: the cases to run (default "fp32 bf16").
# First run on an NVIDIA H200 (Firecracker), 2026-11-26: both tools clean (validation/bench/README.md).
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/gpu/gpu_lib.sh"
gpu_or_skip
CS=$(command -v compute-sanitizer || echo "${CUDA_BIN:-/usr/local/cuda/bin}/compute-sanitizer")
[ -x "$CS" ] || { echo "SKIP: compute-sanitizer not found (PATH, or CUDA_BIN=$CUDA_BIN)"; exit 77; }
small="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --micro-batch-size 2
       --global-batch-size 4 --train-iters 2 --lr-warmup-iters 0 --run-file none --backend cuda"
# two cases: fp32 (the unfused attention and the fp32 kernels) and bf16 with heads of 64 over two
# 64-row tiles (the 16-bit kernels and the mma flash kernels, which take hd 64 and 128 only)
for case in ${PTDP_SANITIZER_CASES:-fp32 bf16}; do
  case $case in fp32 | bf16) ;; *) echo "FAIL: PTDP_SANITIZER_CASES: no case $case (fp32, bf16)"; exit 1 ;; esac
  flags=$small
  [ "$case" = bf16 ] && flags="$small --bf16 true --hidden-size 128 --num-attention-heads 2 --seq-length 128
                               --max-position-embeddings 128 --attention-backend flash"
  for tool in memcheck racecheck; do
    extra=""
    [ "$tool" = memcheck ] && extra="--leak-check full"
    log=$TMPD/$case-$tool.log
    if [ "$case:$tool" = bf16:racecheck ]; then
      FLASH=$top_builddir/validation/tests/gpu/test_cuda_flash
      [ -x "$FLASH" ] || { ok 1 "racecheck (bf16): $FLASH not built (make check builds it)"; continue; }
      PTDP_FLASH_KERNEL=mma timeout -k 10 "${PTDP_SANITIZER_TIMEOUT:-900}" "$CS" --tool racecheck --error-exitcode 3 \
        "$FLASH" > "$log" 2>&1
      rc=$?
      grep -q "checks passed, 0 failed" "$log" || { [ $rc -eq 0 ] && rc=1; }
    else
      # shellcheck disable=SC2086
      timeout -k 10 "${PTDP_SANITIZER_TIMEOUT:-900}" $MPIRUN -n 1 "$CS" --tool "$tool" $extra --error-exitcode 3 "$TRAIN" \
        "$top_srcdir/inputs/gpt-mock.in" $flags > "$log" 2>&1
      rc=$?
    fi
    # the sanitizer refusing this device (before the program ran) is a SKIP of the whole test
    if grep -qi "device not supported" "$log"; then
      echo "SKIP: compute-sanitizer --tool $tool refuses this GPU: $(grep -i -m 1 'device not supported' "$log" |
        sed 's/^=* *//')"
      exit 77
    fi
    case $rc in
      124 | 137) ok 1 "compute-sanitizer --tool $tool: timed out after ${PTDP_SANITIZER_TIMEOUT:-900} s ($case)" ;;
      *) ok $rc "compute-sanitizer --tool $tool: no errors (exit $rc; $case)" ;;
    esac
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log"
    [ $rc -eq 0 ] || tail -n 40 "$log"
  done
done
finish
