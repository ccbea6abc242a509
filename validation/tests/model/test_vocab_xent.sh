#!/bin/sh
# Vocab-parallel embedding and cross entropy on 4 ranks (t = 1, 2, 4) against one rank.
. "$top_srcdir/validation/tests/common.sh"
$MPIRUN -n 4 "$top_builddir/validation/tests/model/test_vocab_xent"
