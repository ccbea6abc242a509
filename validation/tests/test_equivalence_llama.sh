#!/bin/sh
# Every layout equals one rank for the Llama family's architecture: RMSNorm, rotary
# positions, no linear biases, the output layer untied from the word embedding, grouped-query
# attention (4 heads in 2 key/value groups: at t = 2 each rank holds one group of two queries),
# the SwiGLU MLP (ffn-hidden-size by Megatron's default, int(8 h / 3 / 64) * 64 = 128: at t = 2
# each rank's linear_fc1 holds 64 gate rows and 64 up rows, two slices of the global [gate; up]).  The small model
# of the equivalence tests (2 layers; 4 for the pipeline rows), dropout on (the masks must agree across layouts), 20
# iterations, in the layouts that exercise what the architecture changes: tensor parallelism (each
# rank turns its own heads), sequence parallelism (RMSNorm on a sequence shard; the rotation
# needs every row's position), pipeline parallelism (the untied output layer lives on the last
# stage only: no embedding-group reduction), the interleaved schedule, data parallelism with the
# distributed optimizer, full and selective recomputation (the rotation runs again), and the
# fused attention.  bf16 on t2 + SP against one rank in bf16.
# Tolerances: those of test_equivalence_tp_dp.sh (equivalence_lib.sh; bf16: test_mixed_precision.sh).
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/equivalence_lib.sh"
LLAMA="--normalization RMSNorm --position-embedding-type rope --disable-bias-linear"
LLAMA="$LLAMA --untie-embeddings-and-output-weights --group-query-attention --num-query-groups 2 --swiglu"
equiv_deck

# shellcheck disable=SC2086
standard_layouts $LLAMA
# shellcheck disable=SC2086
layouts final,init $LLAMA <<'EOF'
t2_d2_sp_do   4 ref_v256 --tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer
EOF
# the fused attention with the architecture: one rank against the unfused one rank
# shellcheck disable=SC2086
train flash 1 $LLAMA --attention-backend flash
compare flash ref final,init,step1/grads

# the parameter table: no biases, no position table, output_layer.weight of its own, linear_qkv of
# (a + 2 g) hd = (4 + 4) 16 = 128 rows (h = 64, 4 heads of 16); SwiGLU's linear_fc1 of 2 f = 256
# rows and linear_fc2 of f = 128 columns
$PYTHON3 - "$TMPD/ref.h5" <<'PY'
import sys, h5py
names = set(h5py.File(sys.argv[1], "r")["init"].keys())
bad = [n for n in names if n.endswith(".bias") or "position_embeddings" in n]
f = h5py.File(sys.argv[1], "r")["init"]
qkv = f["decoder.layers.0.self_attention.linear_qkv.weight"].shape
fc1, fc2 = f["decoder.layers.0.mlp.linear_fc1.weight"].shape, f["decoder.layers.0.mlp.linear_fc2.weight"].shape
print("linear_qkv: %s, linear_fc1: %s, linear_fc2: %s" % (qkv, fc1, fc2))
ok = not bad and "output_layer.weight" in names and "embedding.word_embeddings.weight" in names and qkv == (128, 64)
ok = ok and fc1 == (256, 64) and fc2 == (64, 128)
print("tensors: %d; biases or position table: %s" % (len(names), bad or "none"))
sys.exit(0 if ok else 1)
PY
ok $? "the Llama table: no biases, no position table, an output layer of its own, GQA's linear_qkv rows, SwiGLU's fc1"

# bf16, with test_mixed_precision.sh's bounds
CMP="$PYTHON3 $top_srcdir/validation/tests/compare_dumps.py --loss-rtol ${PTDP_BF16_LOSS_TOL:-5e-4}"
CMP="$CMP --grad-tol ${PTDP_BF16_GRAD_TOL:-3e-2} --param-tol 0"
# shellcheck disable=SC2086
train ref_bf16_v256 1 $LLAMA --bf16 --make-vocab-size-divisible-by 256
# shellcheck disable=SC2086
train bf16_t2_sp 2 $LLAMA --bf16 --tensor-model-parallel-size 2 --sequence-parallel
compare bf16_t2_sp ref_bf16_v256 init,step1/grads

sed 's/^/  worst: /' "$TMPD/worst"
finish
