#!/bin/sh
# test_comm16 on the emulated CUDA backend: messages staged by the MPI transport (cuda) and the
# NCCL transport on the emulated NCCL (cuda+nccl), whose bf16/fp16 sums round each partial sum
# as the MPI transport's do; on 2 ranks (bit for bit) and 3 (within 2 roundings).
. "$top_srcdir/validation/tests/common.sh"
LAUNCH_TIMEOUT=300 # the emulated GPU is slow
for np in 2 3; do
  launch $np "$top_builddir/validation/tests/parallel/test_comm16_emu" cuda cuda+nccl > "$TMPD/out" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then tail -1 "$TMPD/out"; else cat "$TMPD/out"; fi
  ok $rc "bf16/fp16 on the emulated GPU, MPI and NCCL transports, $np ranks (exit $rc)"
done
finish
