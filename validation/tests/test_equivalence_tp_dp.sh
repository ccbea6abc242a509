#!/bin/sh
# Equivalence of tensor, sequence and data parallelism with one rank (issue 3, "Tests").
# A small model trained 20 iterations with dropout on, from the same seed, in every layout of
# {t=2; t=4; t=2 sequence-parallel; d=2; d=4; t=2 d=2; t=2 d=2 sequence-parallel + distributed
# optimizer}, must match t=d=1: the loss of every iteration within 1e-5 relative, every parameter
# after the last step within max|a-b|/max|b| <= 1e-4 (see Tolerances), and (where the dump holds them: not with the
# distributed optimizer) the gradients of the first step within 1e-5.
#
# The padded vocabulary is a multiple of make-vocab-size-divisible-by x t, so a t=2 run has more
# padding rows than a t=1 run (300 -> 512 instead of 384).  Each layout is therefore compared with
# a one-rank run whose make-vocab-size-divisible-by is 128 t, i.e. with the same padded vocabulary:
# this isolates the parallelism.  One more check compares t=2 with the plain t=1 run: padding
# rows do not change the numbers, since ptdp keeps them out of the softmax.
#
# PTDP_EQUIV_LOSS_TOL and PTDP_EQUIV_PARAM_TOL override the tolerances (defaults 1e-5 and 1e-4).
#
# Tolerances: see validation/tests/equivalence_lib.sh.
. "$top_srcdir/validation/tests/common.sh"

DECK="$TMPD/equiv.in"
cat > "$DECK" <<'EOF'
num-layers = 2
hidden-size = 64
num-attention-heads = 4
seq-length = 32
micro-batch-size = 2
global-batch-size = 8
vocab-size = 300
mock-data = true
train-iters = 20
hidden-dropout = 0.1
attention-dropout = 0.1
log-interval = 20
EOF

. "$top_srcdir/validation/tests/equivalence_lib.sh"

# one-rank references, padded vocabulary 384 (t=1), 512 (as t=2), 512 (as t=4)
train ref 1
train ref_v256 1 --make-vocab-size-divisible-by 256
train ref_v512 1 --make-vocab-size-divisible-by 512
# determinism: the same one-rank run with 2 threads must give the same bits (checked below)
train ref_2threads 1 --num-threads 2

# name ranks reference flags
while read -r name np ref flags; do
  [ -n "$name" ] || continue
  # shellcheck disable=SC2086
  train "$name" "$np" $flags || continue
  groups=final,init,step1/grads
  case "$flags" in *use-distributed-optimizer*) groups=final,init ;; esac # grads are sharded then
  compare "$name" "$ref" "$groups"
done <<'EOF'
t2        2 ref_v256 --tensor-model-parallel-size 2
t4        4 ref_v512 --tensor-model-parallel-size 4
t2_sp     2 ref_v256 --tensor-model-parallel-size 2 --sequence-parallel
d2        2 ref
d4        4 ref
t2_d2     4 ref_v256 --tensor-model-parallel-size 2
t2_d2_sp_do 4 ref_v256 --tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer
EOF

# The issue asks t=2 to match plain t=1 with the default padding (384 rows at t=1, 512 at t=2).
# That holds because ptdp keeps padded logits out of the softmax (src/model/head.c).
compare t2 ref final,init

# for the record: what thread count alone changes (not a pass/fail criterion of the layouts)
# the thread count changes nothing: every sum is split by columns or rows, never reordered
$PYTHON3 "$top_srcdir/validation/tests/compare_dumps.py" --loss-rtol 0 --grad-tol 0 --param-tol 0 \
  --groups final,step1/grads "$TMPD/ref_2threads.h5" "$TMPD/ref.h5" > "$TMPD/threads.cmp" 2>&1
ok $? "2 threads per rank give the same bits as 1 (losses, gradients, parameters)"

echo "worst relative differences (losses: per iteration; parameters and gradients: max|a-b|/max|b|):"
cat "$TMPD/worst"
finish
