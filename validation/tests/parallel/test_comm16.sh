#!/bin/sh
# bf16 and fp16 through the comm layer on 2, 3 and 4 ranks (oversubscribed), cpu and guard
# backends (test_comm16.c says what is checked: bit for bit on 2 ranks, within g-1 roundings on
# more, the same bits on every rank, bytes at 2 an element).
. "$top_srcdir/validation/tests/common.sh"
for np in 2 3 4; do
  launch $np "$top_builddir/validation/tests/parallel/test_comm16" cpu guard > "$TMPD/out" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then tail -1 "$TMPD/out"; else cat "$TMPD/out"; fi
  ok $rc "bf16/fp16 collectives and messages on $np ranks, cpu and guard (exit $rc)"
done
finish
