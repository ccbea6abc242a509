#!/bin/sh
# The gradient check with full and selective recomputation: the recomputed forward must give
# the same gradients as the stored one; and with the SwiGLU MLP, stored and recomputed; and with a
# mixture-of-experts layer (the router, every expert, the load-balancing and z losses): softmax of
# the top-k logits stored and fully recomputed, with SwiGLU experts, pre-softmax with a scaling
# factor, sigmoid scores.
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
for v in "none moe" "full moe" "none moe swiglu" "none moe_pre" "none moe_sigmoid" "selective moe_sigmoid swiglu"; do
  # shellcheck disable=SC2086
  $MPIRUN -n 1 "$top_builddir/validation/tests/model/test_gradcheck" $v > "$TMPD/out" 2>&1
  ok $? "gradient check with a mixture of experts: $v"
  grep -E "router|local_experts.0.linear_fc1.weight" "$TMPD/out"
  tail -n 1 "$TMPD/out"
done
finish
