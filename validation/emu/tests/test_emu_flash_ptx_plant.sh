#!/bin/sh
# The planted mistake of test_emu_flash_ptx (validation/emu/local.mk, EMU_PTX_PLANT): the test's
# kernels built on a copy of the emulation's mma.h whose mma.m16n8k16 reads A's registers 1 and
# 2 swapped (rows g+8 and columns 2t+8 confused).  The flash kernels would still pass on it (the
# mistake is the same in every product); this test must not: the fragment test and the products
# fail, the ldmatrix tests (which do not use mma) still pass.
. "$top_srcdir/validation/tests/common.sh"
"$top_builddir/validation/emu/tests/test_emu_flash_ptx_plant" > "$TMPD/out" 2>&1
rc=$?
cat "$TMPD/out"
ok $((rc == 1 ? 0 : 1)) "the planted A-register swap fails the test (exit $rc, want 1)"
grep -q 'FAIL.*mma.m16n8k16 bf16 on the ISA.s fragments' "$TMPD/out"; ok $? "the fragment test sees it (bf16)"
grep -q 'FAIL.*mma.m16n8k16 f16 on the ISA.s fragments' "$TMPD/out"; ok $? "the fragment test sees it (f16)"
grep -q 'FAIL.*K 48, B by ldmatrix.x4.trans of B' "$TMPD/out"; ok $? "the composed product sees it"
! grep -q 'FAIL.*ldmatrix[.]x[24][.a-z]*: ' "$TMPD/out"; ok $? "the ldmatrix layout tests still pass"
finish
