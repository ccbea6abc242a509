#!/bin/sh
# ptdp_grid_create on 8 ranks (oversubscribed): communicators equal the pure layout.
. "$top_srcdir/validation/tests/common.sh"
$MPIRUN -n 8 "$top_builddir/validation/tests/parallel/test_grid_mpi"
