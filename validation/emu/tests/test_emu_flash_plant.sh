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
# mutant KERNELS NAME OUT WHAT [ENV...]: test_emu_flash_NAME on the KERNELS set (with ENV), its
# output shown and kept in $TMPD/OUT, and a check that WHAT (the mutation) fails the test (exit 1)
mutant() {
  mutant_k=$1 mutant_name=$2 mutant_out=$TMPD/$3 mutant_what=$4
  shift 4
  env "$@" PTDP_FLASH_KERNEL="$mutant_k" "$top_builddir/validation/emu/tests/test_emu_flash_$mutant_name" \
    > "$mutant_out" 2>&1
  mutant_rc=$?
  cat "$mutant_out"
  ok $((mutant_rc == 1 ? 0 : 1)) "$mutant_k: $mutant_what: the test fails (exit $mutant_rc, want 1)"
}
for k in wmma mma; do
  mutant $k mutant out "the forward without its rescale"
  grep -q "FAIL.* $k s 1[03]0 hd \(64\|128\) .*ctx differs" "$TMPD/out"
  ok $? "$k: the failure is ctx at s 100 or 130 (several key tiles), hd 64 or 128 (the mma kernels' sizes)"
  ! grep -q 'FAIL.* s \(1\|17\|64\) .*ctx differs' "$TMPD/out"; ok $? "$k: no ctx failure where one key tile holds every key"
  mutant $k mutant_bwd out2 "the backward without the causal mask"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) .*dQ differs" "$TMPD/out2"; ok $? "$k: dQ is seen wrong (hd 64 or 128)"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) .*dK differs" "$TMPD/out2"; ok $? "$k: dK is seen wrong (hd 64 or 128)"
  ! grep -q 'FAIL.*ctx differs' "$TMPD/out2"; ok $? "$k: the forward still passes"
  mutant $k mutant_gqa out3 "the group's key and value at the [al][3] slots" PTDP_TEST_FLASH_GROUPED=1
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) p [0-9.]* g [12]: ctx differs" "$TMPD/out3"
  ok $? "$k: ctx is seen wrong in a grouped case (hd 64 or 128)"
  mutant $k mutant_gqa_sum out4 "dK, dV of the group's first head only" PTDP_TEST_FLASH_GROUPED=1
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) p [0-9.]* g [12]: dK differs" "$TMPD/out4"; ok $? "$k: dK is seen wrong (hd 64 or 128)"
  grep -q "FAIL.* $k s [0-9]* hd \(64\|128\) p [0-9.]* g [12]: dV differs" "$TMPD/out4"; ok $? "$k: dV is seen wrong (hd 64 or 128)"
  ! grep -q 'FAIL.*\(ctx\|dQ\) differs' "$TMPD/out4"; ok $? "$k: the forward and dQ still pass"
done
finish
