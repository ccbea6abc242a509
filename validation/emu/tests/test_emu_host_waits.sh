#!/bin/sh
# The host waits for the GPU a fixed number of times per iteration, whatever the number of
# micro-batches (no host synchronisation inside an iteration).  The CUDA backend counts
# its waits by what they wait for when PTDP_CUDA_WAITS=1 and prints the counts at exit
# (ptdp-gpu(7), "Where the host waits"); this runs validation/emu/ptdp-train-emu (the backend's own
# sources on the CUDA emulation) with 2 and then 4 micro-batches per rank and iteration, and
# requires the same counts, reason by reason:
#   one rank, fp32, and its waits per iteration (iterations 3 against 2): at most 3, the losses'
#     copy and its synchronize at the end of the pipeline run and the gradient norm's sumsq_many;
#   t=2 with sequence parallelism, fp16 (the loss scaler's unscale_check once an iteration), and
#   d=2 with the distributed optimizer, bf16, both through the (emulated) NCCL transport;
#   p=2 (1F1B, fp32) and p=2 interleaved (bf16) through NCCL, whose pipeline messages go over
#   NCCL's ring links: the host waits for none of them.
# The check proves itself on a run known to wait per micro-batch: p=2 over the MPI transport,
# which stages every pipeline message through host memory (a to_host and a synchronize each;
# transport_mpi.c).  There the counts must differ.
. "$top_srcdir/validation/tests/common.sh"
TRAIN="$top_builddir/validation/emu/ptdp-train-emu"
DECK="$TMPD/waits.in"
write_deck "$DECK" num-layers=2 hidden-size=32 num-attention-heads=2 seq-length=16 max-position-embeddings=16 \
  micro-batch-size=1 vocab-size=128 train-iters=2 lr=1e-3 log-interval=1 run-file=none
# waits NAME NP GBS FLAGS...: a run with the waits counted; its "host waits" lines, sorted, in
# $TMPD/NAME.waits (both ranks' lines together when NP is 2)
waits() {
  waits_name=$1 waits_np=$2 waits_gbs=$3
  shift 3
  PTDP_CUDA_WAITS=1 PTDP_EMU_DEVICES=$waits_np train_log "$waits_name" "$waits_np" --backend cuda \
    --global-batch-size "$waits_gbs" "$@" || { cat "$TMPD/$waits_name.log"; return 1; }
  grep 'ptdp: cuda: host waits: ' "$TMPD/$waits_name.log" | sort > "$TMPD/$waits_name.waits"
  [ -s "$TMPD/$waits_name.waits" ]
}
# same A B: the two runs waited equally, reason by reason (else the difference is shown)
same() { diff "$TMPD/$1.waits" "$TMPD/$2.waits" > "$TMPD/$1-$2.diff" || { cat "$TMPD/$1-$2.diff"; return 1; }; }
total() { sed -n 's/^ptdp: cuda: host waits: \([0-9]*\)$/\1/p' "$TMPD/$1.waits" | awk '{ s += $1 } END { print s + 0 }'; }

waits r1_m2 1 2 && waits r1_m4 1 4 && waits r1_m2_i3 1 2 --train-iters 3
ok $? "one rank: three runs with the waits counted"
same r1_m2 r1_m4; ok $? "one rank, fp32: 2 and 4 micro-batches per iteration wait the same times"
per_iter=$(($(total r1_m2_i3) - $(total r1_m2)))
echo "one rank: $per_iter waits per iteration"
[ "$per_iter" -ge 1 ] && [ "$per_iter" -le 3 ]
ok $? "one rank: 1 to 3 waits per iteration (the losses, once; the gradient norm): $per_iter"

waits t2_m2 2 2 --tensor-model-parallel-size 2 --sequence-parallel --fp16 &&
  waits t2_m4 2 4 --tensor-model-parallel-size 2 --sequence-parallel --fp16
ok $? "t=2, sequence parallel, fp16, NCCL: two runs"
grep -q 'for unscale_check' "$TMPD/t2_m2.waits"; ok $? "fp16: the loss scaler's check is counted"
same t2_m2 t2_m4; ok $? "t=2 fp16: 2 and 4 micro-batches wait the same times"

waits d2_m2 2 4 --use-distributed-optimizer --bf16 && waits d2_m4 2 8 --use-distributed-optimizer --bf16
ok $? "d=2, distributed optimizer, bf16, NCCL: two runs"
same d2_m2 d2_m4; ok $? "d=2 bf16: 2 and 4 micro-batches per rank wait the same times"

waits p2_m2 2 2 --pipeline-model-parallel-size 2 && waits p2_m4 2 4 --pipeline-model-parallel-size 2
ok $? "p=2, fp32, NCCL: two runs"
grep -q 'pipeline messages through NCCL' "$TMPD/p2_m2.log"; ok $? "p=2: pipeline messages through NCCL"
same p2_m2 p2_m4; ok $? "p=2 over NCCL: 2 and 4 micro-batches wait the same times"
# (4 and 8 micro-batches: from 4 on, both hold 5 in flight on stage 0, so their plans, and the
# frees at exit, are the same)
waits p2i_m4 2 4 --pipeline-model-parallel-size 2 --num-layers 4 --num-layers-per-virtual-pipeline-stage 1 --bf16 &&
  waits p2i_m8 2 8 --pipeline-model-parallel-size 2 --num-layers 4 --num-layers-per-virtual-pipeline-stage 1 --bf16
ok $? "p=2 interleaved, bf16, NCCL: two runs"
same p2i_m4 p2i_m8; ok $? "p=2 interleaved over NCCL: 4 and 8 micro-batches wait the same times"

# the plant: pipeline messages staged through the host wait once each
waits p2mpi_m2 2 2 --pipeline-model-parallel-size 2 --comm-backend mpi &&
  waits p2mpi_m4 2 4 --pipeline-model-parallel-size 2 --comm-backend mpi
ok $? "p=2 over the MPI transport: two runs"
! same p2mpi_m2 p2mpi_m4 > /dev/null; ok $? "plant: p=2 staging each message through the host is caught waiting per micro-batch"
finish
