#!/bin/sh
# Checkpoints resume a run: on the same layout every later loss, grad norm and final parameter is
# bit-identical to an uninterrupted run's; on another layout the losses agree within the
# equivalence tolerance (1e-5 relative: float32 sums in another order, see equivalence_lib.sh).
# A 4-layer model with dropout on and a vocabulary of 300 (so the word embedding has padding rows
# that must not reach the file), saved at iteration 10 of 20 (exit-interval) and resumed:
#   saved at t2 p2            -> t2 p2 (exact), d2, t4 + sequence parallel, p2 v2 d2 + distributed optimizer
#   t2 p2 resumed at t4 + SP, saved at 15 in runs of 112 elements -> 1 rank
#   saved at t2 d2 + dist opt -> t2 d2 + dist opt (exact), 1 rank, t2 + full recomputation + micro-batch 1,
#                                d2 + selective recomputation + micro-batch 4
. "$top_srcdir/validation/tests/common.sh"
DECK="$TMPD/deck.in"
write_deck "$DECK" num-layers=4 global-batch-size=8 train-iters=20 lr=1e-3 lr-warmup-iters=5 \
  log-interval=1 hidden-dropout=0.1 attention-dropout=0.1
# train NAME NP FLAGS...: a run with a debug dump, $TMPD/NAME.h5 (equivalence_lib.sh)
. "$top_srcdir/validation/tests/equivalence_lib.sh"
CMP="$PYTHON3 $top_srcdir/validation/tests/io/compare_resume.py"
TP2PP2="--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
train straight 4 $TP2PP2
train saved 4 $TP2PP2 --save "$TMPD/ck" --exit-interval 10
grep -q "^exiting program at iteration 10" "$TMPD/saved.log" && [ "$(cat "$TMPD/ck/latest_checkpointed_iteration.txt")" = 10 ]
ok $? "exit-interval 10 saved iteration 10 and exited; the tracker names it"
grep -Eq '^\[checkpoint\] saved iteration 10 to .*/ck/iter_0000010: [0-9]+\.[0-9]{3} GB in [0-9]+\.[0-9]{3} s \([0-9]+\.[0-9]{3} GB/s\)$' "$TMPD/saved.log"
ok $? "the save's log line: $(grep -m1 '^\[checkpoint\] saved' "$TMPD/saved.log")"
train resumed 4 $TP2PP2 --load "$TMPD/ck"
grep -q "loaded iteration 10 from" "$TMPD/resumed.log"; ok $? "the resumed run logs the load"
$CMP "$TMPD/straight.h5" "$TMPD/resumed.h5" 11 20 --exact; ok $? "t2 p2 -> t2 p2: iterations 11..20 and final parameters bit-identical"
# loads read with O_DIRECT where the file system takes it (ext4, xfs, Lustre, GPFS; $TMPD here)
# every run that is contiguous in the file, a column slice spanning at most twice its bytes, or
# whole rows of a row-parallel weight's column slice (the TP group reads them together, each rank
# a t-th of the rows at full width, and they exchange slices; a wrong exchange fails the
# checksums): at t2 and t4 all of it (PTDP_CHECKPOINT_DIRECT=0: everything through HDF5)
share() { sed -n 's/^\[checkpoint\] loaded .*, \([0-9]*\)% by direct I\/O.*/\1/p' "$TMPD/$1.log"; }
fs=$(df -T "$TMPD" | awk 'NR == 2 { print $2 }')
case $fs in
  ext[34]|xfs|btrfs) [ "$(share resumed)" = 100 ]
    ok $? "t2 p2 load: $(share resumed)% of the bytes by direct I/O on $fs (expected: all)" ;;
  *) [ -n "$(share resumed)" ]; ok $? "t2 p2 load: $(share resumed)% by direct I/O on $fs (any share: the file system decides)" ;;
esac
PTDP_CHECKPOINT_DIRECT=0 train resumed_h5 4 $TP2PP2 --load "$TMPD/ck"
grep -q ", 0% by direct I/O" "$TMPD/resumed_h5.log" &&
  $CMP "$TMPD/straight.h5" "$TMPD/resumed_h5.h5" 11 20 --exact
ok $? "t2 p2 -> t2 p2 read through HDF5 only (PTDP_CHECKPOINT_DIRECT=0): bit-identical as well"

train to_d2 2 --load "$TMPD/ck"
$CMP "$TMPD/straight.h5" "$TMPD/to_d2.h5" 11 20 --rtol 1e-5; ok $? "t2 p2 -> d2: losses within 1e-5"
train to_t4sp 4 --load "$TMPD/ck" --tensor-model-parallel-size 4 --sequence-parallel
$CMP "$TMPD/straight.h5" "$TMPD/to_t4sp.h5" 11 20 --rtol 1e-5; ok $? "t2 p2 -> t4 sequence parallel: losses within 1e-5"
case $fs in
  ext[34]|xfs|btrfs) [ "$(share to_t4sp)" = 100 ]
    ok $? "t4 load: $(share to_t4sp)% of the bytes by direct I/O on $fs (expected: all)" ;;
esac
# runs of 112 elements = 7 rows of a t4 slice of linear_proj (64 x 16): each exchange splits 7
# rows 1, 2, 2, 2 over the four ranks; the other tensors' runs start inside rows
PTDP_CHECKPOINT_CHUNK=112 train to_t4sp_runs 4 --load "$TMPD/ck" --tensor-model-parallel-size 4 --sequence-parallel
$CMP "$TMPD/to_t4sp.h5" "$TMPD/to_t4sp_runs.h5" 11 20 --exact
ok $? "t2 p2 -> t4 loaded in runs of 112 elements: bit-identical to the load in one run per tensor"
# saving at t4 in runs of 112 elements: the TP group writes each run of a row-parallel weight's
# column slice as full rows, 1, 2, 2, 2 of 7 per rank; loaded on one rank, the run goes on
PTDP_CHECKPOINT_CHUNK=112 train t4_saved_runs 4 --load "$TMPD/ck" --tensor-model-parallel-size 4 --sequence-parallel \
  --save "$TMPD/ck4" --exit-interval 15
train from_t4_runs 1 --load "$TMPD/ck4"
$CMP "$TMPD/straight.h5" "$TMPD/from_t4_runs.h5" 16 20 --rtol 1e-5
ok $? "saved at t4 in runs of 112 elements (iteration 15) -> 1 rank: losses within 1e-5"
train to_p2v2d2 4 --load "$TMPD/ck" --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 \
  --use-distributed-optimizer
$CMP "$TMPD/straight.h5" "$TMPD/to_p2v2d2.h5" 11 20 --rtol 1e-5; ok $? "t2 p2 -> p2 v2 d2 distributed optimizer: losses within 1e-5"

DIST="--tensor-model-parallel-size 2 --use-distributed-optimizer"
train straight_dist 4 $DIST
train saved_dist 4 $DIST --save "$TMPD/ckd" --save-interval 10 --exit-interval 10
train resumed_dist 4 $DIST --load "$TMPD/ckd"
$CMP "$TMPD/straight_dist.h5" "$TMPD/resumed_dist.h5" 11 20 --exact
ok $? "t2 d2 distributed optimizer -> same: iterations 11..20 and final parameters bit-identical"
train to_one 1 --load "$TMPD/ckd"
$CMP "$TMPD/straight_dist.h5" "$TMPD/to_one.h5" 11 20 --rtol 1e-5; ok $? "t2 d2 distributed optimizer -> 1 rank: losses within 1e-5"
# buckets of 3000 elements put distributed-optimizer shard boundaries inside rows of linear_fc2's
# column slices: a part's run up to the row's end is written and read strided, the whole rows
# after it by the TP group (ckpt_run_end); resumed on the same layout and on one rank
train saved_mid 4 $DIST --ddp-bucket-size 3000 --save "$TMPD/ckm" --exit-interval 10
train from_mid 4 $DIST --ddp-bucket-size 3000 --load "$TMPD/ckm"
$CMP "$TMPD/straight_dist.h5" "$TMPD/from_mid.h5" 11 20 --rtol 1e-5
ok $? "t2 d2 distributed optimizer, shards starting inside rows -> same: losses within 1e-5"
train from_mid_one 1 --load "$TMPD/ckm"
$CMP "$TMPD/straight_dist.h5" "$TMPD/from_mid_one.h5" 11 20 --rtol 1e-5
ok $? "... -> 1 rank: losses within 1e-5"
# recomputation and micro-batch size are not part of a checkpoint: full recomputation with
# micro-batches of 1 (8 per step, not 2 on each of 2 replicas) and selective recomputation with
# one micro-batch of 4 per replica continue the run (dropout masks keyed by global indices)
train to_full_mb1 2 --load "$TMPD/ckd" --tensor-model-parallel-size 2 --recompute-granularity full --micro-batch-size 1
$CMP "$TMPD/straight_dist.h5" "$TMPD/to_full_mb1.h5" 11 20 --rtol 1e-5
ok $? "t2 d2 distributed optimizer -> t2, full recomputation, micro-batch 1: losses within 1e-5"
train to_sel_mb4 2 --load "$TMPD/ckd" --recompute-granularity selective --micro-batch-size 4
$CMP "$TMPD/straight_dist.h5" "$TMPD/to_sel_mb4.h5" 11 20 --rtol 1e-5
ok $? "t2 d2 distributed optimizer -> d2, selective recomputation, micro-batch 4: losses within 1e-5"
# tensors moved in runs of 333 and 1000 elements (the default is 4 Mi, more than any tensor here):
# runs that start and end inside rows, several runs per tensor and per shard; the same checkpoint
PTDP_CHECKPOINT_CHUNK=1000 train saved_runs 4 $DIST --save "$TMPD/ckr" --save-interval 10 --exit-interval 10
$PYTHON3 - "$TMPD/ckd/iter_0000010/checkpoint.h5" "$TMPD/ckr/iter_0000010/checkpoint.h5" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
bad = [n for n in names if n not in b or not np.array_equal(a[n][...], b[n][...]) or a[n].attrs["checksum"] != b[n].attrs["checksum"]]
print("%d datasets, %d differ %s" % (len(names), len(bad), bad[:3]))
sys.exit(1 if bad or len(names) < 10 else 0)
PY
ok $? "saved in runs of 1000 elements: every dataset and checksum equal to one run per tensor's"
PTDP_CHECKPOINT_CHUNK=333 train resumed_runs 4 $DIST --load "$TMPD/ckr"
$CMP "$TMPD/straight_dist.h5" "$TMPD/resumed_runs.h5" 11 20 --exact
ok $? "loaded in runs of 333 elements: iterations 11..20 and final parameters bit-identical"
finish
