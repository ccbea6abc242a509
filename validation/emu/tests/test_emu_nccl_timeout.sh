#!/bin/sh
# distributed-timeout-minutes in training runs on the emulation (NCCL over MPI, each rank its
# own emulated GPU): one rank stalls forever in its K-th NCCL call (the emulation's injected fault
# PTDP_EMU_NCCL_FAULT=stall:R:K, a hung or dead peer); the other must fail once the timeout
# (0.05 minutes = 3 s) has passed, naming the group and the operation it waited for, with a
# non-zero exit and no hang (`timeout` turns one into a failure):
#   t=2      rank 1 stalls in an all-reduce of the tp group
#   d=2      rank 1 stalls in a reduce-scatter of the dp group (distributed optimizer)
#   p=2      rank 1 stalls in an all-reduce of the embedding group (tied embedding gradients; its
#            13th NCCL call: the first messages of its four ring links, then the first
#            iteration's four activations received and four gradients sent)
#   p=2      rank 0 stalls in its first pipeline message (its fifth call, after the ring links'
#            first messages): rank 1, which waits for the losses, names its receive on the ring
#            link 0 -> 1 (src/parallel/transport_nccl.c, ring links)
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
while read -r name stall k op group flags; do
  [ -n "$name" ] || continue
  t0=$(date +%s)
  # shellcheck disable=SC2086
  PTDP_EMU_DEVICES=2 PTDP_EMU_NCCL_FAULT=stall:$stall:$k timeout 120 $MPIRUN -n 2 "$TRAIN" "$TMPD/emu.in" --backend cuda \
    --comm-backend nccl --num-threads 1 --distributed-timeout-minutes 0.05 $flags < /dev/null > "$TMPD/$name.log" 2>&1
  rc=$?
  t1=$(date +%s)
  grep -a "ptdp: error\|PTDP_EMU_NCCL_FAULT" "$TMPD/$name.log"
  [ $rc -ne 0 ] && [ $rc -ne 124 ]
  ok $? "$name: a peer stalled in NCCL: non-zero exit, no hang (exit $rc, $((t1 - t0)) s)"
  group=$(echo "$group" | tr _ ' ') other=$((1 - stall))
  grep -aq "ptdp: error \[rank $other\]: NCCL: the $op of [0-9]* floats on the $group group (world ranks 0 1) has not completed after 3\(\.[0-9]*\)\{0,1\} s (distributed-timeout-minutes 0.05)" "$TMPD/$name.log"
  ok $? "$name: rank $other's message names the $op on the $group group, after 3 s"
done <<'LAYOUTS'
t2      1 20 all-reduce     tp  --tensor-model-parallel-size 2
d2      1 2  reduce-scatter dp  --use-distributed-optimizer
p2      1 13 all-reduce     emb --pipeline-model-parallel-size 2
p2_ring 0 5  receive        ring_link_0_->_1_(to_rank_+_1)_of_the_pp --pipeline-model-parallel-size 2
LAYOUTS
finish
