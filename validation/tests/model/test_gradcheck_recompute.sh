#!/bin/sh
# The gradient check with full and selective recomputation: the recomputed forward must give
# the same gradients as the stored one.
. "$top_srcdir/validation/tests/common.sh"
for rc in full selective; do
  $MPIRUN -n 1 "$top_builddir/validation/tests/model/test_gradcheck" $rc > "$TMPD/out" 2>&1
  ok $? "gradient check with $rc recomputation"
  tail -n 1 "$TMPD/out"
done
finish
