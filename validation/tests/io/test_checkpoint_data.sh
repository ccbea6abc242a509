#!/bin/sh
# On the real corpus, a resumed run continues the data exactly where it stopped: the training
# samples (consumed samples, losses) and the validation stream (each evaluation walks on from
# the last) of iterations 5..8 equal the uninterrupted run's, line for line, after a save at
# iteration 4 on t 2 and a resume on the same layout.  SKIP (77) without the prepared data.
. "$top_srcdir/validation/tests/common.sh"
data=${PTDP_DATA_DIR:-$top_srcdir/data}
prefix="$data/sotu_shuffled_text_document"
[ -f "$prefix.idx" ] && [ -f "$data/gpt2-vocab.json" ] || { echo "no prepared data in $data: SKIP"; exit 77; }
run() { # NAME FLAGS...
  name=$1
  shift
  timeout 120 $MPIRUN -n 2 "$TRAIN" "$top_srcdir/inputs/gpt-tiny.in" --data-path "$prefix" \
    --vocab-file "$data/gpt2-vocab.json" --merge-file "$data/gpt2-merges.txt" --data-cache-path "$TMPD/cache" \
    --train-iters 8 --lr-decay-iters 300 --log-interval 1 --eval-interval 2 --eval-iters 1 --micro-batch-size 4 \
    --tensor-model-parallel-size 2 "$@" < /dev/null > "$TMPD/$name.log" 2>&1
  ok $? "$name: $*"
}
run straight
run first --save "$TMPD/ck" --exit-interval 4
run resumed --load "$TMPD/ck"
lines() { grep -E "^ iteration +[5-8]/|validation loss at iteration [5-8] " "$1" | sed 's/elapsed time per iteration.*learning rate/... learning rate/'; }
lines "$TMPD/straight.log" > "$TMPD/a"
lines "$TMPD/resumed.log" > "$TMPD/b"
[ "$(wc -l < "$TMPD/a")" -eq 6 ] && cmp -s "$TMPD/a" "$TMPD/b"
ok $? "iterations 5..8 and the validation losses at 6 and 8: the same log text ($(wc -l < "$TMPD/b") lines)"
[ $ptdp_fail -eq 0 ] || diff "$TMPD/a" "$TMPD/b"
finish
