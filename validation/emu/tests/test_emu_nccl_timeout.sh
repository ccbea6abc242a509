#!/bin/sh
# distributed-timeout-minutes in training runs on the emulation (NCCL over MPI, each rank its
# own emulated GPU): rank 1 stalls forever in its K-th NCCL call (the emulation's injected fault
# PTDP_EMU_NCCL_FAULT=stall:1:K, a hung or dead peer); rank 0 must fail once the timeout
# (0.05 minutes = 3 s) has passed, naming the group and the operation it waited for, with a
# non-zero exit and no hang (`timeout` turns one into a failure):
#   t=2      an all-reduce of the tp group
#   d=2      a reduce-scatter of the dp group (distributed optimizer)
#   p=2      an all-reduce of the embedding group (tied embedding gradients; rank 1's ninth NCCL
#            call, after the first iteration's four activations received and four gradients sent)
#   p=2      rank 1's first pipeline message (a receive on the ring link 0 -> 1): rank 0 names
#            its send on that link (src/parallel/transport_nccl.c, ring links)
# (the group column: what follows "on the", underscores for spaces)
. "$top_srcdir/validation/tests/common.sh"
TRAIN="$top_builddir/validation/emu/ptdp-train-emu"
cat > "$TMPD/emu.in" <<'DECK_EOF'
num-layers = 4
hidden-size = 64
num-attention-heads = 4
seq-length = 32
micro-batch-size = 2
global-batch-size = 8
vocab-size = 256
mock-data = true
train-iters = 6
run-file = none
DECK_EOF
while read -r name k op group flags; do
  [ -n "$name" ] || continue
  t0=$(date +%s)
  # shellcheck disable=SC2086
  PTDP_EMU_DEVICES=2 PTDP_EMU_NCCL_FAULT=stall:1:$k timeout 120 $MPIRUN -n 2 "$TRAIN" "$TMPD/emu.in" --backend cuda \
    --comm-backend nccl --num-threads 1 --distributed-timeout-minutes 0.05 $flags < /dev/null > "$TMPD/$name.log" 2>&1
  rc=$?
  t1=$(date +%s)
  grep -a "ptdp: error\|PTDP_EMU_NCCL_FAULT" "$TMPD/$name.log"
  [ $rc -ne 0 ] && [ $rc -ne 124 ]
  ok $? "$name: a peer stalled in NCCL: non-zero exit, no hang (exit $rc, $((t1 - t0)) s)"
  group=$(echo "$group" | tr _ ' ')
  grep -aq "ptdp: error \[rank 0\]: NCCL: the $op of [0-9]* floats on the $group group (world ranks 0 1) has not completed after 3\(\.[0-9]*\)\{0,1\} s (distributed-timeout-minutes 0.05)" "$TMPD/$name.log"
  ok $? "$name: rank 0's message names the $op on the $group group, after 3 s"
done <<'LAYOUTS'
t2 20 all-reduce     tp  --tensor-model-parallel-size 2
d2 2  reduce-scatter dp  --use-distributed-optimizer
p2 9  all-reduce     emb --pipeline-model-parallel-size 2
p2_ring 1 send       ring_link_0_->_1_(to_rank_+_1)_of_the_pp --pipeline-model-parallel-size 2
LAYOUTS
finish
