#!/bin/sh
# Equivalence of pipeline parallelism, its schedules and activation recomputation with one rank
# (the layout must not change the numbers).  An 8-layer model trained 20 iterations with dropout on, from the same seed,
# must match t=p=d=1 in every layout below: the loss of every iteration within 1e-5 relative,
# every parameter after the last step within max|a-b|/max|b| <= 1e-4 (see Tolerances), and the gradients of the
# first step within 1e-5.  Layouts: p=2; p=4; p=2 v=2; p=4 v=2; t=2 p=2; t=2 p=2 d=2 with
# sequence parallel; each schedule (gpipe, 1f1b, interleaved); full recomputation (uniform and
# block) and selective recomputation, with and without pipelining.  At most 8 ranks.
#
# As in test_equivalence_tp_dp.sh, layouts with t > 1 are compared with a one-rank run of the same
# padded vocabulary (make-vocab-size-divisible-by 128 t), which isolates the parallelism.
#
# PTDP_EQUIV_LOSS_TOL and PTDP_EQUIV_PARAM_TOL override the tolerances (defaults 1e-5 and 1e-4).
#
# Tolerances: see validation/tests/equivalence_lib.sh.
. "$top_srcdir/validation/tests/common.sh"

. "$top_srcdir/validation/tests/equivalence_lib.sh"
equiv_deck num-layers=8 hidden-size=32 seq-length=16 micro-batch-size=1

# one-rank references, padded vocabulary 384 (t=1) and 512 (as t=2)
train ref 1
train ref_v256 1 --make-vocab-size-divisible-by 256
# determinism: the same one-rank run with 2 threads must give the same bits (checked below)
train ref_2threads 1 --num-threads 2

# name ranks reference flags (m = 8 micro-batches per pipeline, 4 with d=2)
layouts final,init,step1/grads <<'EOF'
p2              2 ref      --pipeline-model-parallel-size 2
p4              4 ref      --pipeline-model-parallel-size 4
p2_v2           2 ref      --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2
p4_v2           4 ref      --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1
t2_p2           4 ref_v256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
t2_p2_d2_sp     8 ref_v256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel
p2_gpipe        2 ref      --pipeline-model-parallel-size 2 --pipeline-schedule gpipe
p4_gpipe        4 ref      --pipeline-model-parallel-size 4 --pipeline-schedule gpipe
p4_1f1b         4 ref      --pipeline-model-parallel-size 4 --pipeline-schedule 1f1b
p2_interleaved  2 ref      --pipeline-model-parallel-size 2 --pipeline-schedule interleaved --num-layers-per-virtual-pipeline-stage 1
full_uniform    1 ref      --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
full_uniform2   1 ref      --recompute-granularity full --recompute-method uniform --recompute-num-layers 2
full_block      1 ref      --recompute-granularity full --recompute-method block --recompute-num-layers 3
selective       1 ref      --recompute-granularity selective
p2_full_uniform 2 ref      --pipeline-model-parallel-size 2 --recompute-granularity full --recompute-method uniform --recompute-num-layers 2
p2_full_block   2 ref      --pipeline-model-parallel-size 2 --recompute-granularity full --recompute-method block --recompute-num-layers 1
p2_selective    2 ref      --pipeline-model-parallel-size 2 --recompute-granularity selective
p4_v2_full      4 ref      --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 1 --recompute-granularity full
p2_v2_selective 2 ref      --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2 --recompute-granularity selective
t2_p2_d2_sp_full 8 ref_v256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel --recompute-granularity full --recompute-method block --recompute-num-layers 2
EOF

threads_and_worst
finish
