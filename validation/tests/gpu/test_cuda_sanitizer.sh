#!/bin/sh
# compute-sanitizer on a small model trained on the CUDA backend: memcheck (out-of-bounds and
# misaligned accesses, leaks of device memory at exit) and racecheck (shared-memory races in our
# kernels) must report no error.  Skips (77) with the reason without a GPU, without
# compute-sanitizer, or where the sanitizer refuses the device: "Device not supported" is what
# it answers under gVisor (seen on this workplace's H200 machines of that runtime, 2026-11-04),
# a limit of the machine and not an error of ours.
# Two cases: fp32, and bf16 with heads of 64 (the mma flash kernels; added after the H200's
# second run, whose sanitizer step ran fp32 alone).
# PTDP_SANITIZER_TIMEOUT: seconds per tool (default 900; run_gpu.sh gives each half its step).
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
for case in fp32 bf16; do
  flags=$small
  [ "$case" = bf16 ] && flags="$small --bf16 true --hidden-size 128 --num-attention-heads 2 --seq-length 128
                               --max-position-embeddings 128 --attention-backend flash"
  for tool in memcheck racecheck; do
    extra=""
    [ "$tool" = memcheck ] && extra="--leak-check full"
    log=$TMPD/$case-$tool.log
    # shellcheck disable=SC2086
    timeout -k 10 "${PTDP_SANITIZER_TIMEOUT:-900}" $MPIRUN -n 1 "$CS" --tool "$tool" $extra --error-exitcode 3 "$TRAIN" \
      "$top_srcdir/inputs/gpt-mock.in" $flags > "$log" 2>&1
    rc=$?
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
