#!/bin/sh
# compute-sanitizer on a small model trained on the CUDA backend: memcheck (out-of-bounds and
# misaligned accesses, leaks of device memory at exit) and racecheck (shared-memory races in our
# kernels) must report no error.  Skips (77) without a GPU or without compute-sanitizer.
# NOT YET RUN ON A GPU (written to run unattended on one).
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
  timeout 900 $MPIRUN -n 1 "$CS" --tool "$tool" $extra --error-exitcode 3 "$TRAIN" \
    "$top_srcdir/inputs/gpt-mock.in" $small > "$TMPD/$tool.log" 2>&1
  rc=$?
  ok $rc "compute-sanitizer --tool $tool: no errors (exit $rc)"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$TMPD/$tool.log"
  [ $rc -eq 0 ] || tail -n 40 "$TMPD/$tool.log"
done
finish
