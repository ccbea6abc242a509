#!/bin/sh
# Communication accounting: the TP bytes measured in transformer layers per iteration equal the
# analytical volume exactly (Narayanan et al. 2021 Sec. 3.2): per layer and micro-batch, one rank
# sends 8 b s h (t-1)/t elements with tensor parallelism (two all-reduces forward, two backward,
# each 2 (t-1)/t of b s h under the ring convention); sequence parallelism: 10 b s h (t-1)/t
# (all-gather + reduce-scatter for each of the four, plus Megatron's re-gather of the two stored
# LayerNorm outputs in the backward pass); full recomputation repeats the forward's two: 12;
# selective recomputation adds none.  Elements are 4 bytes; rank 0 holds L / p layers; m
# micro-batches per iteration.
. "$top_srcdir/validation/tests/common.sh"
DECK="$TMPD/deck.in"
write_deck "$DECK" num-layers=4 train-iters=1 log-interval=1
b=2; s=32; h=64; L=4
# np t p sp recompute factor
while read np t p sp rc factor; do
  flags="--tensor-model-parallel-size $t --pipeline-model-parallel-size $p --recompute-granularity $rc"
  [ "$sp" = 1 ] && flags="$flags --sequence-parallel"
  got=$(launch "$np" "$TRAIN" "$DECK" $flags 2>&1 | sed -n 's/.*(transformer layers \([0-9]*\)).*/\1/p' | head -n 1)
  d=$((np / (t * p))); m=$((4 / (b * d)))
  want=$(( factor * b * s * h * (t - 1) / t * 4 * (L / p) * m ))
  [ "$got" = "$want" ]; ok $? "t=$t p=$p sp=$sp recompute=$rc: TP layer bytes/iteration $got = $factor b s h (t-1)/t x 4 x L/p x m = $want"
done <<EOT
2 2 1 0 none 8
4 4 1 0 none 8
2 2 1 1 none 10
4 4 1 1 none 10
2 2 1 0 full 12
2 2 1 1 full 14
2 2 1 0 selective 8
4 2 1 0 none 8
4 2 2 0 none 8
4 2 2 1 none 10
EOT
finish
