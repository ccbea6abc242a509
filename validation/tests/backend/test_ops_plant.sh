#!/bin/sh
# The conformance suite can fail: test_ops --plant patches the backend under test with the
# planted mistakes of test_ops_plant.c (an unwritten last row, a missing term of a sum, a mask
# key off by one column, a vocabulary slice off by one, a wrong element, a wrong step, a sum of
# squares one element short, ...; in bf16 and fp16 also a result truncated instead of rounded and
# an fp32 gradient rounded to the storage type) and exits 0 only if each is caught by a failing
# check of its own operation, in every data type it is planted in.  Run on cpu (checked against
# the double-precision reference, within bounds) and on guard (checked against cpu bit for bit):
# both kinds of comparison must catch every mistake.
. "$top_srcdir/validation/tests/common.sh"
OPS="$top_builddir/validation/tests/backend/test_ops"
LAUNCH_TIMEOUT=600
launch 1 "$OPS" --plant --backends cpu,guard > "$TMPD/plant.log" 2>&1
rc=$?
grep "^planted" "$TMPD/plant.log" || tail -20 "$TMPD/plant.log"
ok $rc "test_ops --plant: every planted mistake caught on cpu and on guard (exit $rc)"
finish
