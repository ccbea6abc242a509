#!/bin/sh
# The counting comm layer on 4 ranks (oversubscribed): values and ring-convention bytes.
. "$top_srcdir/validation/tests/common.sh"
$MPIRUN -n 4 "$top_builddir/validation/tests/parallel/test_comm"
