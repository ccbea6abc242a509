#!/bin/sh
# The planted kernel mistake of the Llama family (validation/emu/ops.mk, EMU_LLAMA_MUTATION): the
# conformance suite on a copy of cuda_llama.cu whose RoPE turns by the opposite angle (the sine's
# sign flipped, so the forward computes the inverse and the inverse the forward).  The suite must
# fail on both rope rows in every storage type, and only there: RMSNorm and SwiGLU (the same
# file) and the grouped attention (its dK/dV store is there too) still pass.
. "$top_srcdir/validation/tests/common.sh"
MUTANT="$top_builddir/validation/emu/test_ops_emu_llama_mutant"
timeout 600 $MPIRUN -n 1 "$MUTANT" --ops rope > "$TMPD/rope.log" 2>&1
rc=$?
grep '^  cuda' "$TMPD/rope.log" || tail -20 "$TMPD/rope.log"
ok $((rc == 1 ? 0 : 1)) "the suite fails on the mutant's rope (exit $rc, want 1)"
for t in fp32 bf16 fp16; do
  grep -q "rope (forward) *$t *FAIL" "$TMPD/rope.log"; ok $? "rope (forward) fails in $t"
  grep -q "rope (inverse) *$t *FAIL" "$TMPD/rope.log"; ok $? "rope (inverse) fails in $t"
done
timeout 600 $MPIRUN -n 1 "$MUTANT" --ops rmsnorm,swiglu,attention > "$TMPD/rms.log" 2>&1
rc=$?
grep '^  cuda' "$TMPD/rms.log" || tail -20 "$TMPD/rms.log"
ok $rc "the mutant's RMSNorm, SwiGLU and grouped attention still pass (exit $rc): the failure is the planted one"
finish
