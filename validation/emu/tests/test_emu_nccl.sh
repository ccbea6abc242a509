#!/bin/sh
# The emulated NCCL on 2 and 4 ranks (test_emu_nccl.c says what is checked).  A hang (a group
# whose calls do not progress together, a lost wake-up) fails through timeout's exit status.
. "$top_srcdir/validation/tests/common.sh"
for np in 2 4; do
  timeout 300 $MPIRUN -n $np "$top_builddir/validation/emu/tests/test_emu_nccl" > "$TMPD/out" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then tail -1 "$TMPD/out"; else cat "$TMPD/out"; fi
  ok $rc "emulated NCCL on $np ranks (exit $rc)"
done
finish
