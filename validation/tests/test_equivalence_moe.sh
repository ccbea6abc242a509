#!/bin/sh
# Every layout equals one rank for a model whose MLPs are mixtures of experts (every expert on
# every rank): 4 experts of width 64, each token routed to its top 2 (softmax of the top-k
# logits), the load-balancing loss (coefficient 0.01, its counts over each micro-batch's tokens
# whatever the layout) and the z-loss (0.001) in the training loss.  The small model of the
# equivalence tests (2 layers; 4 for the pipeline rows), dropout on, 20 iterations, in the layouts
# that change what the mixture computes on a rank: tensor parallelism (each expert's fc1 and fc2
# split like the dense MLP, the router replicated, the probabilities' gradient summed over the
# ranks), sequence parallelism (the router reads the gathered rows), pipeline parallelism and the
# interleaved schedule (mixture layers on every stage), data parallelism with the distributed
# optimizer (the experts' state sharded like the rest), full and selective recomputation (the
# routing computed again from the same logits), and a layer pattern with one dense layer and
# one mixture (moe-layer-freq "([0]*1+[1]*1)"); the Llama family's experts (SwiGLU, no biases,
# sigmoid scores) on t2 with sequence parallelism; pre-softmax with a top-k scaling factor on t2.
# Tolerances: those of test_equivalence_tp_dp.sh (equivalence_lib.sh): losses and the first step's
# gradients 1e-5 relative; the parameters after 20 AdamW steps 2e-3 of the tensor's largest entry
# instead of 1e-4.  Why: with tensor parallelism decoder.layers.1.input_layernorm.bias has an entry
# whose gradient is 7.5e-9, 5e-6 of the tensor's largest (1.35e-3): its rounding (7.25e-9 at t2,
# 7.52e-9 on one rank) decides Adam's steps of up to lr, and after 20 steps the entry differs by
# 2.7e-6, 8.7e-4 of the summed learning rates (3.15e-3) and, the tensor being that young, 1.1e-3
# of its largest entry (2.5e-3).  The first step's gradients agree to 4.6e-7 and the losses to
# 2e-8, and the float64 reference (test_torch_reference.sh) bounds the same displacement by
# 2e-3 of the summed rates, as here.
PTDP_EQUIV_PARAM_TOL=${PTDP_EQUIV_PARAM_TOL:-2e-3}
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/equivalence_lib.sh"
LAUNCH_TIMEOUT=${LAUNCH_TIMEOUT:-300} # the 4-layer one-rank run takes a minute on an idle machine
MOE="--num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 64 --moe-aux-loss-coeff 0.01 --moe-z-loss-coeff 0.001"
equiv_deck

# shellcheck disable=SC2086
standard_layouts $MOE
# shellcheck disable=SC2086
layouts final,init $MOE <<'EOF2'
d2_distopt    2 ref      --use-distributed-optimizer
EOF2
# one dense layer, then a mixture
# shellcheck disable=SC2086
train ref_pattern 1 $MOE --moe-layer-freq '([0]*1+[1]*1)' --make-vocab-size-divisible-by 256
# shellcheck disable=SC2086
layouts final,init,step1/grads $MOE --moe-layer-freq '([0]*1+[1]*1)' <<'EOF2'
pattern_t2_sp 2 ref_pattern --tensor-model-parallel-size 2 --sequence-parallel
EOF2
# the Llama family's experts, sigmoid scores
LL="--normalization RMSNorm --position-embedding-type rope --disable-bias-linear --swiglu --untie-embeddings-and-output-weights"
LL="$LL --moe-router-score-function sigmoid"
# shellcheck disable=SC2086
train ref_llama 1 $MOE $LL --make-vocab-size-divisible-by 256
# shellcheck disable=SC2086
layouts final,init,step1/grads $MOE $LL <<'EOF2'
llama_t2_sp   2 ref_llama --tensor-model-parallel-size 2 --sequence-parallel
EOF2
# pre-softmax, scaled
PRE="--moe-router-pre-softmax --moe-router-topk-scaling-factor 2.5"
# shellcheck disable=SC2086
train ref_pre 1 $MOE $PRE --make-vocab-size-divisible-by 256
# shellcheck disable=SC2086
layouts final,init,step1/grads $MOE $PRE <<'EOF2'
pre_t2        2 ref_pre --tensor-model-parallel-size 2
EOF2

# the parameter table: Megatron-core's names for the router and each expert, no dense MLP
$PYTHON3 - "$TMPD/ref.h5" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")["init"]
names = set(f.keys())
want = {"decoder.layers.%d.mlp.router.weight" % L: (4, 64) for L in range(2)}
for L in range(2):
    for e in range(4):
        q = "decoder.layers.%d.mlp.experts.local_experts.%d." % (L, e)
        want.update({q + "linear_fc1.weight": (64, 64), q + "linear_fc1.bias": (64,),
                     q + "linear_fc2.weight": (64, 64), q + "linear_fc2.bias": (64,)})
bad = [n for n, s in want.items() if n not in names or f[n].shape != s]
dense = [n for n in names if ".mlp.linear_fc" in n]
print("mixture tensors missing or misshapen: %s; dense MLP tensors: %s" % (bad or "none", dense or "none"))
sys.exit(0 if not bad and not dense else 1)
PY
ok $? "the mixture's parameter table: router [E, h] and each expert's linear_fc1 and linear_fc2"
sed 's/^/  /' "$TMPD/worst"
finish
