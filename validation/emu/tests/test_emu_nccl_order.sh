#!/bin/sh
# The NCCL transport's stream ordering on the emulation, 2 ranks (test_emu_nccl_transport.c):
# the real transport gives exact sums; the planted mutation (begin() without the comm stream's
# wait for the compute stream, nccl.mk) must give wrong ones, or the emulation would not catch
# a missing dependency between streams.
. "$top_srcdir/validation/tests/common.sh"
T="$top_builddir/validation/emu/tests/test_emu_nccl_transport"
timeout 300 $MPIRUN -n 2 "$T" order > "$TMPD/real" 2>&1
rc=$?
if [ $rc -eq 0 ]; then tail -1 "$TMPD/real"; else cat "$TMPD/real"; fi
ok $rc "real transport: every collective exact after its producer kernel (exit $rc)"
timeout 300 $MPIRUN -n 2 "${T}_mutant" order > "$TMPD/mutant" 2>&1
rc=$?
grep -m 3 "FAIL\|failures" "$TMPD/mutant"
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "all-reduce: .* sums wrong" "$TMPD/mutant"
ok $? "planted mutation (no cudaStreamWaitEvent in begin()): the all-reduce's sums are wrong (exit $rc)"
finish
