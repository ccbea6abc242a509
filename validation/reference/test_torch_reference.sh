#!/bin/sh
# Reference check against PyTorch (validation/reference/gpt_torch.py): a tiny GPT trained for 10
# iterations by ptdp, its debug dump replayed in float64 by the same model written from torch.nn
# primitives.  Logits, loss and every gradient of iteration 1 and the loss of every iteration
# must agree to 1e-5 relative (per tensor, max|diff| / max|ref|); the final parameters to
# 2e-3 of the summed learning rates (see the docstring of gpt_torch.py for why).
#
# Runs: one rank; t = 2 on two ranks; t = 2 with sequence parallelism.  The vocabulary is padded
# to a multiple of 192 x t (Megatron's rule), 300 -> 384 for both t = 1 and t = 2 (84 padding
# rows in each rank's buffer, left out of the softmax); the three runs hold the same initial
# weights, which is checked too: the dump does not depend on the layout.
# The mixture of experts (its router's three score rules, SwiGLU experts, a layer pattern, t2
# with SP): the reference's own MoE block in float64.
# Then the reference takes its weights from a ptdp checkpoint: a t = 2 run saves at iteration 3,
# one rank starts from it with finetune (weights only) and its 10 iterations are checked against
# PyTorch starting from the checkpoint's /model datasets, read by h5py.
# The Llama family's architecture (RMSNorm, rotary positions, no linear biases, untied output
# layer) on one rank and t2 with sequence parallelism, and with interleaved, partial rotations at
# Llama 3's base; grouped-query attention (2 groups on t2 + SP; 1 group with kv-channels 24, with
# GPT-2's biases): the reference reads the architecture from the dump's attributes.
# SKIP (77) when $PYTHON3 has no torch or h5py.
. "$top_srcdir/validation/tests/common.sh"
: "${PYTHON3:=python3}"
if ! "$PYTHON3" -c 'import torch, h5py' >/dev/null 2>&1; then
  echo "SKIP: $PYTHON3 cannot import torch and h5py"
  exit 77
fi
REF="$top_srcdir/validation/reference/gpt_torch.py"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

cat > "$TMPD/tiny.in" <<'EOF'
# tiny GPT for the PyTorch reference check: no dropout (torch cannot replay ptdp's masks)
num-layers = 2
hidden-size = 64
num-attention-heads = 4
seq-length = 32
micro-batch-size = 2
global-batch-size = 4
vocab-size = 300
make-vocab-size-divisible-by = 192
mock-data = true
train-iters = 10
hidden-dropout = 0
attention-dropout = 0
lr = 1e-3
min-lr = 1e-4
lr-warmup-iters = 2
lr-decay-style = cosine
weight-decay = 0.1
clip-grad = 1.0
eval-iters = 0
log-interval = 5
EOF

run_case() { # NAME NP [ptdp flags...]
  name=$1 np=$2
  shift 2
  $MPIRUN -n "$np" "$TRAIN" "$TMPD/tiny.in" --debug-dump "$TMPD/$name.h5" "$@" > "$TMPD/$name.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || cat "$TMPD/$name.log"
  ok $rc "ptdp-train $name: $np rank(s) $*"
  [ $rc -eq 0 ] || return
  "$PYTHON3" "$REF" "$TMPD/$name.h5"
  ok $? "PyTorch reference agrees with the $name run"
}

run_case t1 1
run_case t2 2 --tensor-model-parallel-size 2
run_case t2sp 2 --tensor-model-parallel-size 2 --sequence-parallel

# same model whatever the layout: identical tokens and initial weights in every dump
if [ -f "$TMPD/t1.h5" ]; then
  for other in t2 t2sp; do
    [ -f "$TMPD/$other.h5" ] || continue
    "$PYTHON3" - "$TMPD/t1.h5" "$TMPD/$other.h5" <<'EOF'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
bad = [n for n in ["tokens"] + ["init/" + k for k in a["init"]]
       if n not in b or not np.array_equal(np.asarray(a[n]), np.asarray(b[n]))]
print("datasets that differ: %s" % (bad or "none"))
sys.exit(1 if bad else 0)
EOF
    ok $? "t1 and $other dumps hold the same tokens and initial weights"
  done
fi
# the Llama family's architecture: RMSNorm, rotary positions, no linear biases, the
# output layer untied; rotate-half and interleaved rotations, a partial rotary dimension and
# Llama 3's base; one rank, and t2 with sequence parallelism (the rotation of each rank's heads)
LLAMA="--normalization RMSNorm --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights"
# shellcheck disable=SC2086
run_case llama_t1 1 $LLAMA
# shellcheck disable=SC2086
run_case llama_t2sp 2 $LLAMA --tensor-model-parallel-size 2 --sequence-parallel
# shellcheck disable=SC2086
run_case llama_interleaved 1 $LLAMA --rotary-interleaved --rotary-percent 0.5 --rotary-base 500000
# grouped-query attention: 2 groups of 2 query heads (t2: one group per rank), and 1 group of 4
# with a head size (kv-channels 24) that is not h / a
# shellcheck disable=SC2086
run_case llama_gqa_t2sp 2 $LLAMA --group-query-attention --num-query-groups 2 --tensor-model-parallel-size 2 \
  --sequence-parallel
run_case gqa_kv24 1 --group-query-attention --num-query-groups 1 --kv-channels 24
# the check must see a rotation that is not ptdp's: the same dump told it was rotate-half, or at
# Llama 2's base, is refused (the planted mistakes)
for plant in rotary_interleaved=0 rotary_base=10000; do
  cp "$TMPD/llama_interleaved.h5" "$TMPD/plant.h5"
  "$PYTHON3" -c 'import sys, h5py; k, v = sys.argv[2].split("="); h5py.File(sys.argv[1], "r+").attrs[k] = float(v)' \
    "$TMPD/plant.h5" "$plant"
  "$PYTHON3" "$REF" --quiet "$TMPD/plant.h5" > "$TMPD/plant.log" 2>&1
  [ $? -eq 1 ]
  ok $? "the reference fails on the interleaved run's dump planted with $plant ($(tail -1 "$TMPD/plant.log"))"
done
# SwiGLU (the MLP of a Llama block): one rank, and t2 with sequence parallelism (each rank's
# linear_fc1 holds its slices of the gate and of the up projection); ffn-hidden-size by
# Megatron's default for SwiGLU, int(8 h / 3 / 64) * 64 = 128
# shellcheck disable=SC2086
run_case swiglu_t1 1 $LLAMA --swiglu --group-query-attention --num-query-groups 2
# shellcheck disable=SC2086
run_case swiglu_t2sp 2 $LLAMA --swiglu --tensor-model-parallel-size 2 --sequence-parallel
run_case swiglu_bias 1 --swiglu --ffn-hidden-size 96
# the check must see the convention: gate and up exchanged in the dump's initial fc1 (its two halves
# of rows swapped, silu taken of the up projection) is refused (the planted mistake)
cp "$TMPD/swiglu_t1.h5" "$TMPD/plant.h5"
"$PYTHON3" - "$TMPD/plant.h5" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+")
for L in range(int(f.attrs["num_layers"])):
    d = f["init/decoder.layers.%d.mlp.linear_fc1.weight" % L]
    w = np.asarray(d)
    n = w.shape[0] // 2
    d[...] = np.concatenate([w[n:], w[:n]])
PY
"$PYTHON3" "$REF" --quiet "$TMPD/plant.h5" > "$TMPD/plant.log" 2>&1
[ $? -eq 1 ]
ok $? "the reference fails on the SwiGLU dump planted with gate and up exchanged ($(tail -1 "$TMPD/plant.log"))"
# the mixture of experts (4 experts of width 96, top 2, the load-balancing and z losses in the
# training loss, weighted as ptdp weights them): softmax of the top-k logits on one rank and on t2
# with SP, a dense layer then a mixture, pre-softmax with a scaling factor, sigmoid scores with the
# Llama family's SwiGLU experts on t2 (the reference reads the router's choices from the dump's
# attributes and writes its own MoE block from the formulas)
MOE="--num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 96 --moe-aux-loss-coeff 0.01 --moe-z-loss-coeff 0.001"
# shellcheck disable=SC2086
run_case moe_t1 1 $MOE
# shellcheck disable=SC2086
run_case moe_t2sp 2 $MOE --tensor-model-parallel-size 2 --sequence-parallel
# shellcheck disable=SC2086
run_case moe_pattern 1 $MOE --moe-layer-freq '([0]*1+[1]*1)'
# shellcheck disable=SC2086
run_case moe_pre 1 $MOE --moe-router-pre-softmax --moe-router-topk-scaling-factor 2.5
# shellcheck disable=SC2086
run_case moe_sigmoid_t2 2 $MOE $LLAMA --swiglu --moe-router-score-function sigmoid --tensor-model-parallel-size 2
# the check must see the router's convention: the pre-softmax run's dump told it was softmax of the
# top-k logits, or the aux-loss coefficient doubled, is refused
for plant in moe_router_pre_softmax=0 moe_aux_loss_coeff=0.02; do
  cp "$TMPD/moe_pre.h5" "$TMPD/plant.h5"
  "$PYTHON3" -c 'import sys, h5py; k, v = sys.argv[2].split("="); h5py.File(sys.argv[1], "r+").attrs[k] = float(v)' \
    "$TMPD/plant.h5" "$plant"
  "$PYTHON3" "$REF" --quiet "$TMPD/plant.h5" > "$TMPD/plant.log" 2>&1
  [ $? -eq 1 ]
  ok $? "the reference fails on the pre-softmax run's dump planted with $plant ($(tail -1 "$TMPD/plant.log"))"
done
$MPIRUN -n 2 "$TRAIN" "$TMPD/tiny.in" --tensor-model-parallel-size 2 --save "$TMPD/ck" --exit-interval 3 \
  > "$TMPD/ck.log" 2>&1
ok $? "ptdp-train t2: saved a checkpoint at iteration 3"
run_case finetune 1 --load "$TMPD/ck" --finetune
"$PYTHON3" "$REF" --quiet --weights "$TMPD/ck/iter_0000003/checkpoint.h5" "$TMPD/finetune.h5"
ok $? "PyTorch reference with its initial weights read from the checkpoint agrees with the run started from it"
finish
