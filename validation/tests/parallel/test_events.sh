#!/bin/sh
# Named events (ptdp/events.h) on 3 ranks (oversubscribed): reductions over ranks, the timer
# line, the ring of sampled iterations, internal errors.
. "$top_srcdir/validation/tests/common.sh"
$MPIRUN -n 3 "$top_builddir/validation/tests/parallel/test_events"
