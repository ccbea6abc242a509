#!/bin/sh
# The planted race (see test_emu_racecheck.c): the mutated kernels must fail with a
# write-after-read report on shared memory that names cuda_device.h and a line of block_sum.
. "$top_srcdir/validation/tests/common.sh"
"$top_builddir/validation/emu/tests/test_emu_racecheck_mutant" > "$TMPD/out" 2>&1
rc=$?
cat "$TMPD/out"
[ $rc -eq 77 ] && exit 77 # no hooks in this build (it says why)
ok $((rc == 0 ? 0 : 1)) "the mutated kernels end with the race reported (exit $rc)"
grep -q 'write-after-read hazard on shared memory' "$TMPD/out"; ok $? "the report names the hazard"
grep -q 'cuda_device.h:[0-9]*' "$TMPD/out"; ok $? "the report names the source file and line"
grep -q 'block_sum' "$TMPD/out"; ok $? "the report names the function (block_sum)"
finish
