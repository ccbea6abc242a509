#!/bin/sh
# The planted mistakes of test_emu_flash (validation/emu/local.mk): copies of cuda_flash.cu
#   EMU_FLASH_MUTATION      the forward without the rescale of its output accumulator by
#                           exp(m_old - m_new): rows whose running maximum grows after the first
#                           key tile (s > 64) keep stale terms, so ctx fails at s 100 and 130 only;
#   EMU_FLASH_MUTATION_BWD  the backward's dS without the causal mask inside the diagonal tiles:
#                           the gradients fail (dQ, dK) while the forward still passes.
. "$top_srcdir/validation/tests/common.sh"
"$top_builddir/validation/emu/tests/test_emu_flash_mutant" > "$TMPD/out" 2>&1
rc=$?
cat "$TMPD/out"
ok $((rc == 1 ? 0 : 1)) "the forward without its rescale fails the test (exit $rc, want 1)"
grep -q 'FAIL.*s 1[03]0 .*ctx differs' "$TMPD/out"; ok $? "the failure is ctx at s 100 or 130 (several key tiles)"
! grep -q 'FAIL.*s \(1\|17\|64\) .*ctx differs' "$TMPD/out"; ok $? "no ctx failure where one key tile holds every key"
"$top_builddir/validation/emu/tests/test_emu_flash_mutant_bwd" > "$TMPD/out2" 2>&1
rc=$?
cat "$TMPD/out2"
ok $((rc == 1 ? 0 : 1)) "the backward without the causal mask fails the test (exit $rc, want 1)"
grep -q 'FAIL.*dQ differs' "$TMPD/out2"; ok $? "dQ is seen wrong"
grep -q 'FAIL.*dK differs' "$TMPD/out2"; ok $? "dK is seen wrong"
! grep -q 'FAIL.*ctx differs' "$TMPD/out2"; ok $? "the forward still passes"
finish
