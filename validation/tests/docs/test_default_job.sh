#!/bin/sh
# The quick start's default job starts on the real data: inputs/gpt-tiny.in for 2 iterations and
# one evaluation on 2 ranks, with the data of jobs/prepare-data.sh ($PTDP_DATA_DIR or <src>/data),
# saved, and ptdp-generate continuing a prompt from the checkpoint on 1 and 2 ranks.
# SKIP (77) when the data has not been prepared.
. "$top_srcdir/validation/tests/common.sh"
data=${PTDP_DATA_DIR:-$top_srcdir/data}
prefix="$data/sotu_shuffled_text_document"
[ -f "$prefix.idx" ] && [ -f "$data/gpt2-vocab.json" ] || { echo "no prepared data in $data: SKIP"; exit 77; }
$MPIRUN -n 2 "$TRAIN" "$top_srcdir/inputs/gpt-tiny.in" --data-path "$prefix" --vocab-file "$data/gpt2-vocab.json" \
  --merge-file "$data/gpt2-merges.txt" --data-cache-path "$TMPD" --train-iters 2 --lr-decay-iters 300 --log-interval 1 \
  --eval-interval 2 --eval-iters 1 --save "$TMPD/ck" < /dev/null > "$TMPD/out" 2>&1
ok $? "gpt-tiny.in runs 2 iterations on the prepared corpus and saves"
grep -q "^ iteration        2/       2 |" "$TMPD/out"; ok $? "Megatron log line of iteration 2"
loss=$(sed -n 's/.*iteration        1\/.*lm loss: \([0-9.E+-]*\).*/\1/p' "$TMPD/out")
awk -v l="$loss" 'BEGIN { exit !(l > 10.0 && l < 11.5) }'; ok $? "first loss $loss is about ln(50257) = 10.82"
grep -q "validation loss at iteration 2 | lm loss value: " "$TMPD/out"; ok $? "validation loss line"
# as the quick start ends: ptdp-generate on the saved model, the GPT-2 tokenizer taken from the
# checkpoint's keys; greedy, so 1 and 2 ranks print the same text
for np in 1 2; do
  $MPIRUN -n $np "$top_builddir/ptdp-generate" --load "$TMPD/ck" --prompt "The state of the Union is" \
    --num-tokens-to-generate 12 --top-k 1 < /dev/null > "$TMPD/gen$np" 2> "$TMPD/gen$np.err"
  ok $? "ptdp-generate on $np rank(s) continues the prompt: '$(tr '\n' ' ' < "$TMPD/gen$np")'"
done
grep -q "t = 2, kv-cache on" "$TMPD/gen2.err" && [ -s "$TMPD/gen1" ] && cmp -s "$TMPD/gen1" "$TMPD/gen2"
ok $? "the same greedy continuation on 1 and 2 ranks"
[ $ptdp_fail -eq 0 ] || { tail -n 30 "$TMPD/out"; cat "$TMPD"/gen*.err; }
finish
