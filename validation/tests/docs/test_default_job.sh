#!/bin/sh
# The quick start's default job starts on the real data: inputs/gpt-tiny.in for 2 iterations and
# one evaluation on 2 ranks, with the data of jobs/prepare-data.sh ($PTDP_DATA_DIR or <src>/data).
# SKIP (77) when the data has not been prepared.
. "$top_srcdir/validation/tests/common.sh"
data=${PTDP_DATA_DIR:-$top_srcdir/data}
prefix="$data/sotu_shuffled_text_document"
[ -f "$prefix.idx" ] && [ -f "$data/gpt2-vocab.json" ] || { echo "no prepared data in $data: SKIP"; exit 77; }
$MPIRUN -n 2 "$TRAIN" "$top_srcdir/inputs/gpt-tiny.in" --data-path "$prefix" --vocab-file "$data/gpt2-vocab.json" \
  --merge-file "$data/gpt2-merges.txt" --data-cache-path "$TMPD" --train-iters 2 --lr-decay-iters 300 --log-interval 1 \
  --eval-interval 2 --eval-iters 1 < /dev/null > "$TMPD/out" 2>&1
ok $? "gpt-tiny.in runs 2 iterations on the prepared corpus"
grep -q "^ iteration        2/       2 |" "$TMPD/out"; ok $? "Megatron log line of iteration 2"
loss=$(sed -n 's/.*iteration        1\/.*lm loss: \([0-9.E+-]*\).*/\1/p' "$TMPD/out")
awk -v l="$loss" 'BEGIN { exit !(l > 10.0 && l < 11.5) }'; ok $? "first loss $loss is about ln(50257) = 10.82"
grep -q "validation loss at iteration 2 | lm loss value: " "$TMPD/out"; ok $? "validation loss line"
[ $ptdp_fail -eq 0 ] || tail -n 30 "$TMPD/out"
finish
