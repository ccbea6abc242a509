#!/bin/sh
# The conformance suite on the emulated CUDA backend can fail: test_ops_emu --plant patches the
# emulated backend with the planted mistakes of validation/tests/backend/test_ops_plant.c and
# exits 0 only if each is caught by a failing check of its own operation, within the bounds of a
# device against the CPU backend (twice the fp32 bounds; masks and copies bit for bit).
. "$top_srcdir/validation/tests/common.sh"
OPS="$top_builddir/validation/emu/test_ops_emu"
timeout 600 $MPIRUN -n 1 "$OPS" --plant > "$TMPD/plant.log" 2>&1
rc=$?
grep "^planted" "$TMPD/plant.log" || tail -20 "$TMPD/plant.log"
ok $rc "test_ops_emu --plant: every planted mistake caught on the emulated cuda (exit $rc)"
finish
