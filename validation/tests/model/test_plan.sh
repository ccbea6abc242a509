#!/bin/sh
# The memory plan equals the allocations and the measured activation peak, 7 layouts on 4 ranks.
. "$top_srcdir/validation/tests/common.sh"
$MPIRUN -n 4 "$top_builddir/validation/tests/model/test_plan"
