#!/bin/sh
# The gradient check with full and selective recomputation: the recomputed forward must give
# the same gradients as the stored one; and with the SwiGLU MLP, stored and recomputed.
. "$top_srcdir/validation/tests/common.sh"
for rc in full selective; do
  $MPIRUN -n 1 "$top_builddir/validation/tests/model/test_gradcheck" $rc > "$TMPD/out" 2>&1
  ok $? "gradient check with $rc recomputation"
  tail -n 1 "$TMPD/out"
done
for rc in none full; do
  $MPIRUN -n 1 "$top_builddir/validation/tests/model/test_gradcheck" $rc swiglu > "$TMPD/out" 2>&1
  ok $? "gradient check with SwiGLU, recomputation $rc"
  grep linear_fc1 "$TMPD/out"
  tail -n 1 "$TMPD/out"
done
finish
