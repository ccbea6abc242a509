#!/bin/sh
# compute-sanitizer on a small model trained on the CUDA backend: memcheck (out-of-bounds and
# misaligned accesses, leaks of device memory at exit) and racecheck (shared-memory races in our
# kernels) must report no error.  Skips (77) with the reason without a GPU, without
# compute-sanitizer, or where the sanitizer refuses the device: "Device not supported" is what
# it answers under gVisor (seen on this workplace's H200 machines of that runtime, 2026-11-04),
# a limit of the machine and not an error of ours.
# PTDP_SANITIZER_TIMEOUT: seconds per tool (default 900; run_gpu.sh gives each half its step).
# First run on an NVIDIA H200 (Firecracker), 2026-11-26: both tools clean (validation/bench/README.md).
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/gpu/gpu_lib.sh"
gpu_or_skip
CS=$(command -v compute-sanitizer || echo "${CUDA_BIN:-/usr/local/cuda/bin}/compute-sanitizer")
[ -x "$CS" ] || { echo "SKIP: compute-sanitizer not found (PATH, or CUDA_BIN=$CUDA_BIN)"; exit 77; }
small="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --micro-batch-size 2
       --global-batch-size 4 --train-iters 2 --lr-warmup-iters 0 --run-file none --backend cuda"
for tool in memcheck racecheck; do
  extra=""
  [ "$tool" = memcheck ] && extra="--leak-check full"
  # shellcheck disable=SC2086
  timeout -k 10 "${PTDP_SANITIZER_TIMEOUT:-900}" $MPIRUN -n 1 "$CS" --tool "$tool" $extra --error-exitcode 3 "$TRAIN" \
    "$top_srcdir/inputs/gpt-mock.in" $small > "$TMPD/$tool.log" 2>&1
  rc=$?
  # the sanitizer refusing this device (before the program ran) is a SKIP of the whole test
  if grep -qi "device not supported" "$TMPD/$tool.log"; then
    echo "SKIP: compute-sanitizer --tool $tool refuses this GPU: $(grep -i -m 1 'device not supported' "$TMPD/$tool.log" |
      sed 's/^=* *//')"
    exit 77
  fi
  case $rc in
    124 | 137) ok 1 "compute-sanitizer --tool $tool: timed out after ${PTDP_SANITIZER_TIMEOUT:-900} s" ;;
    *) ok $rc "compute-sanitizer --tool $tool: no errors (exit $rc)" ;;
  esac
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$TMPD/$tool.log"
  [ $rc -eq 0 ] || tail -n 40 "$TMPD/$tool.log"
done
finish
