#!/bin/sh
# The planted mistakes of test_emu_flash (validation/emu/local.mk): copies of cuda_flash.cu
#   EMU_FLASH_MUTATION      the forward without the rescale of its output accumulator by
#                           exp(m_old - m_new), in the wmma and in the mma kernels: rows whose
#                           running maximum grows after the first key tile (s > 64) keep stale
#                           terms, so ctx fails at s 100 and 130 only;
#   EMU_FLASH_MUTATION_BWD  the backward's dS without the causal mask inside the diagonal tiles
#                           (wmma: fl_ds; mma: f2_sees): the gradients fail (dQ, dK) while the
#                           forward still passes;
#   EMU_FLASH_MUTATION_GQA  grouped-query attention's key and value read at the [al][3][hd] slots
#                           (fl_part: right without groups, wrong with them): ctx fails in the
#                           grouped cases;
#   EMU_FLASH_MUTATION_GQA_SUM  dK, dV of a group summed over its first query head only (wmma: the
#                           loop over heads; mma: the pipeline's steps): dK and dV fail, the
#                           forward and dQ still pass.
# The grouped mutants run the grouped cases alone (PTDP_TEST_FLASH_GROUPED=1).
# Each mutant runs once per set of kernels (PTDP_FLASH_KERNEL), so each set is seen to fail; the
# failures looked for are at hd 64 or 128, where the mma set runs its own kernels.
. "$top_srcdir/validation/tests/common.sh"
for k in wmma mma; do
  PTDP_FLASH_KERNEL=$k "$top_builddir/validation/emu/tests/test_emu_flash_mutant" > "$TMPD/out" 2>&1
  rc=$?
  cat "$TMPD/out"
  ok $((rc == 1 ? 0 : 1)) "$k: the forward without its rescale fails the test (exit $rc, want 1)"
  grep -q "FAIL.* $k s 1[03]0 hd \(64\|128\) .*ctx differs" "$TMPD/out"
  ok $? "$k: the failure is ctx at s 100 or 130 (several key tiles), hd 64 or 128 (the mma kernels' sizes)"
  ! grep -q 'FAIL.* s \(1\|17\|64\) .*ctx differs' "$TMPD/out"; ok $? "$k: no ctx failure where one key tile holds every key"
  PTDP_FLASH_KERNEL=$k "$top_builddir/validation/emu/tests/test_emu_flash_mutant_bwd" > "$TMPD/out2" 2>&1
  rc=$?
  cat "$TMPD/out2"
  ok $((rc == 1 ? 0 : 1)) "$k: the backward without the causal mask fails the test (exit $rc, want 1)"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) .*dQ differs" "$TMPD/out2"; ok $? "$k: dQ is seen wrong (hd 64 or 128)"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) .*dK differs" "$TMPD/out2"; ok $? "$k: dK is seen wrong (hd 64 or 128)"
  ! grep -q 'FAIL.*ctx differs' "$TMPD/out2"; ok $? "$k: the forward still passes"
  PTDP_TEST_FLASH_GROUPED=1 PTDP_FLASH_KERNEL=$k "$top_builddir/validation/emu/tests/test_emu_flash_mutant_gqa" \
    > "$TMPD/out3" 2>&1
  rc=$?
  cat "$TMPD/out3"
  ok $((rc == 1 ? 0 : 1)) "$k: the group's key and value at the [al][3] slots fail the test (exit $rc, want 1)"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) p [0-9.]* g [12]: ctx differs" "$TMPD/out3"
  ok $? "$k: ctx is seen wrong in a grouped case (hd 64 or 128)"
  PTDP_TEST_FLASH_GROUPED=1 PTDP_FLASH_KERNEL=$k "$top_builddir/validation/emu/tests/test_emu_flash_mutant_gqa_sum" \
    > "$TMPD/out4" 2>&1
  rc=$?
  cat "$TMPD/out4"
  ok $((rc == 1 ? 0 : 1)) "$k: dK, dV of the group's first head only fail the test (exit $rc, want 1)"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) p [0-9.]* g [12]: dK differs" "$TMPD/out4"; ok $? "$k: dK is seen wrong (hd 64 or 128)"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) p [0-9.]* g [12]: dV differs" "$TMPD/out4"; ok $? "$k: dV is seen wrong (hd 64 or 128)"
  ! grep -q 'FAIL.*\(ctx\|dQ\) differs' "$TMPD/out4"; ok $? "$k: the forward and dQ still pass"
done
finish
