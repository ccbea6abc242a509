#!/bin/sh
# The inference forward pass and the sampler (test_generate.c says what is checked and why the
# tolerance) on t = 1, 2 and 4, and on t = 2 under the guard backend (the generator reaches
# device memory only through the backend and the communication layer); and the Llama family's
# architecture on t = 1 and 2 (rotary positions in the cache).
. "$top_srcdir/validation/tests/common.sh"
T="$top_builddir/validation/tests/generate/test_generate"
for run in "1 cpu" "2 cpu" "4 cpu" "2 guard" "1 cpu llama" "2 cpu llama"; do
  set -- $run
  launch "$1" "$T" "$2" ${3:-} > "$TMPD/out" 2>&1
  st=$?
  cat "$TMPD/out"
  ok $st "test_generate on $1 rank(s), backend $2 ${3:-}"
done
finish
