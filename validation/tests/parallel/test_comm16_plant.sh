#!/bin/sh
# test_comm16 must fail on a comm layer with planted mistakes (test_comm16_mutant, local.mk):
# a bf16 sum that truncates instead of rounding to nearest even (caught bit for bit on 2 ranks)
# and bytes counted as 4 per 16-bit element (caught by the ring-convention counts).
. "$top_srcdir/validation/tests/common.sh"
launch 2 "$top_builddir/validation/tests/parallel/test_comm16_mutant" cpu > "$TMPD/out" 2>&1
rc=$?
grep -m 4 "FAIL" "$TMPD/out"
[ $rc -ne 0 ] && [ $rc -ne 124 ]
ok $? "the mutant fails (exit $rc)"
grep -q "cpu bf16 g=2 allreduce_sum_t: .* differ from the fp32 sum rounded once" "$TMPD/out"
ok $? "truncating bf16 sum caught"
grep -q "cpu fp16 g=2 allreduce_sum_t: .* differ from the fp32 sum" "$TMPD/out"
[ $? -ne 0 ]
ok $? "fp16 sums (not planted) still pass: the catch is the rounding, not the harness"
grep -q "cpu bf16 g=2 allreduce_sum_t: 4000.0 bytes in 1 calls, expected 2000.0 in 1" "$TMPD/out"
ok $? "bytes counted 4 per element caught"
finish
