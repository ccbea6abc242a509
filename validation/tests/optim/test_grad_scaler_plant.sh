#!/bin/sh
# test_grad_scaler must fail on a scaler that restores its hysteresis after every clean step
# (test_grad_scaler_mutant, src/optim/local.mk): Megatron restores it only when the scale grows.
. "$top_srcdir/validation/tests/common.sh"
"$top_builddir/validation/tests/optim/test_grad_scaler_mutant" > "$TMPD/out" 2>&1
rc=$?
grep -m 3 FAIL "$TMPD/out"
[ $rc -ne 0 ]; ok $? "the mutant fails (exit $rc)"
grep -q "dynamic step 5 (found 1): scale .* hysteresis 1, expected .* -2" "$TMPD/out"
ok $? "caught where a lone overflow after clean steps must halve the scale at once"
finish
