#!/bin/sh
# ptdp-sim's memory against ptdp-train's own memory plan, on this machine's CPU backend: for small
# layouts in bf16, fp16 and fp32, ptdp-sim modelling ptdp-train (--fusion none: the plan's classes
# as they are, bytes by type) predicts stage 0's bytes exactly as ptdp-train's [memory] lines
# report rank 0's plan (weights, main gradients, optimizer state, held activations at peak, the
# total at peak).  Exact, no tolerance: both are byte counts of the same plan (ptdp/plan.h), so
# any difference is a layout key or a storage type the simulator passes differently.
# Megatron's accounting (--fusion megatron, the default) against the same plan, by hand (p 1,
# d 1, bf16): weights and gradients as the plan's, optimizer 12 bytes per parameter (= the
# plan's: moments and master weights), and the logits in fp32: 2 more bytes for each of the
# b s v_padded / t logits of the one micro-batch in flight, and none where the stage holds no
# head (p 2 v 2, stage 0).
# The Llama family's architecture and flash attention (the trainer's keys) too.
# Planted: the sim in fp32 against ptdp-train in bf16 must be caught by the same comparison.
. "$top_srcdir/validation/tests/common.sh"
SIM="$top_builddir/ptdp-sim"
HW="$top_srcdir/inputs/hw/dgx-a100-80gb.hw"
DECK="$TMPD/deck.in"
write_deck "$DECK" num-layers=4 num-attention-heads=8 seq-length=64 global-batch-size=8 \
  train-iters=1 log-interval=1 run-file=none
# train NP FLAGS... -> "weights grads optimizer activations total" of rank 0's plan
train() {
  train_log train "$@" || { cat "$TMPD/train.log"; return 1; }
  n='\([0-9]*\)'
  wg=$(sed -n "s/^\[memory\] peak held activations:.* parameters $n bytes, gradients $n bytes.*/\1 \2/p" \
       "$TMPD/train.log")
  plan="^\[memory\] rank 0 plan: activations held at peak $n bytes"
  oat=$(sed -n "s/$plan.* optimizer $n; at peak $n bytes.*/\2 \1 \3/p" "$TMPD/train.log")
  echo $wg $oat
}
# sim NP FLAGS... -> the same five numbers for stage 0
sim() {
  np=$1; shift
  "$SIM" "$DECK" --hardware "$HW" --world-size "$np" "$@" > "$TMPD/sim.log" 2>&1 || { cat "$TMPD/sim.log"; return 1; }
  n='\([0-9]*\)'
  line="^memory stage 0 (bytes): weights $n, gradients $n, optimizer $n, activations $n, total $n\$"
  sed -n "s/$line/\1 \2 \3 \4 \5/p" "$TMPD/sim.log"
}
# same NAME NP FLAGS...: five numbers each, all equal
same() {
  name=$1; np=$2; shift 2
  t=$(train "$np" "$@"); s=$(sim "$np" --fusion none "$@")
  set -- $t
  [ $# -eq 5 ] && [ "$t" = "$s" ]; ok $? "$name: ptdp-train's plan [$t] = ptdp-sim --fusion none [$s]"
}
same "bf16, 1 rank" 1 --bf16
same "bf16, p 2" 2 --bf16 --pipeline-model-parallel-size 2
same "bf16, p 2 v 2" 2 --bf16 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
same "bf16, d 2, distributed optimizer" 2 --bf16 --use-distributed-optimizer
same "fp16, t 2, SP, selective recomputation" 2 --fp16 --tensor-model-parallel-size 2 --sequence-parallel \
  --recompute-granularity selective
same "fp32, 1 rank" 1
same "fp32, p 2, full recomputation" 2 --pipeline-model-parallel-size 2 --recompute-granularity full
# the Llama family's architecture (no biases, RMSNorm, rotary positions, an untied output layer
# on the last stage) and the fused attention: the plan's parameters and activations follow it
same "bf16, p 2, Llama-like, flash attention" 2 --bf16 --pipeline-model-parallel-size 2 --normalization RMSNorm \
  --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights --attention-backend flash

# Megatron's accounting against the plan of the same layout (bf16, 1 rank)
set -- $(train 1 --bf16); tw=$1 tg=$2 to=$3 ta=$4
set -- $(sim 1 --bf16); mw=$1 mg=$2 mo=$3 ma=$4
[ "$mw" = "$tw" ] && [ "$mg" = "$tg" ] && [ "$mg" = $((2 * tw)) ]
ok $? "megatron, bf16: weights $mw and main gradients $mg bytes are the plan's, 2 and 4 per parameter"
[ "$mo" = "$to" ] && [ "$mo" = $((6 * tw)) ]; ok $? "megatron, bf16: optimizer $mo bytes, 12 per parameter"
# b 2, s 64, vocab 300 padded to 384 (make-vocab-size-divisible-by 128), t 1: 2 bytes more per logit
[ "$ma" = $((ta + 2 * 2 * 64 * 384)) ]; ok $? "megatron, bf16: activations $ma = the plan's $ta + fp32 logits 2 b s v"
set -- $(sim 1 --fp16); [ "$2" = "$tw" ]; ok $? "megatron, fp16: 16-bit main gradients, $2 bytes = the weights'"
set -- $(sim 2 --bf16 --use-distributed-optimizer); mo2=$3
# d 2: moments and master weights sharded, 12 / 2 bytes per parameter (the layout pads to whole shards)
awk -v o="$mo2" -v w="$tw" 'BEGIN { exit !(o >= 3 * w && o < 3 * w + 64) }'
ok $? "megatron, bf16, distributed optimizer over d 2: optimizer $mo2 bytes, 6 per parameter (weights $tw)"

# p 2 v 2: stage 0 holds no head chunk, so no logits: Megatron's held activations are the plan's
set -- $(train 2 --bf16 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1); ta=$4
set -- $(sim 2 --bf16 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1)
[ "$4" = "$ta" ]; ok $? "megatron, bf16, p 2 v 2: stage 0's activations $4 bytes = the plan's $ta (logits elsewhere)"

# planted: the sim in fp32 against ptdp-train in bf16 must differ
t=$(train 1 --bf16); s=$(sim 1 --fusion none)
[ -n "$s" ] && [ "$t" != "$s" ]; ok $? "planted: ptdp-sim in fp32 [$s] is caught against the bf16 plan [$t]"
finish
