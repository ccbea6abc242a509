#!/bin/sh
# The model touches device memory only through the backend: under the guard backend (memory the
# host cannot read or write outside an operation: any host access is a SIGSEGV) a small model
# trains, and every loss and gradient norm equals the CPU backend's, bit for bit (the guard runs
# the CPU operations themselves).  Two layouts on 4 ranks: t=2 p=2 with sequence parallelism, and
# p=2 interleaved (v=2) d=2 with the distributed optimizer; messages are staged through host
# buffers by the MPI transport (the guard backend is not host accessible).  And a mixture of
# experts (4 experts, top 2, its routing and permutations through the backend's copies) on t=2
# p=2 with sequence parallelism.
. "$top_srcdir/validation/tests/common.sh"
LAUNCH_TIMEOUT=300
losses() { # backend flags... -> loss and grad-norm lines
  be=$1; shift
  launch 4 "$TRAIN" "$top_srcdir/inputs/gpt-mock.in" --train-iters 4 --lr-warmup-iters 1 \
    --log-interval 1 --num-threads 1 --backend "$be" "$@" > "$TMPD/$be.log" 2>&1 || { echo "exit $? ($be)"; tail -5 "$TMPD/$be.log"; }
  grep -o "lm loss: [0-9.E+-]* .*grad norm: [0-9.]*" "$TMPD/$be.log"
}
compare() { # name flags...
  name=$1; shift
  losses cpu "$@" > "$TMPD/cpu.txt"
  losses guard "$@" > "$TMPD/guard.txt"
  n=$(wc -l < "$TMPD/cpu.txt")
  [ "$n" -eq 4 ] && cmp -s "$TMPD/cpu.txt" "$TMPD/guard.txt"
  ok $? "$name: guard backend trains and its $n losses and grad norms equal the CPU backend's"
  cat "$TMPD/guard.txt"
}
compare "t2 p2 sp" --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel
compare "p2 v2 d2 distributed optimizer" --pipeline-model-parallel-size 2 --num-layers 4 \
  --num-layers-per-virtual-pipeline-stage 1 --use-distributed-optimizer --ddp-bucket-size 5000
compare "mixture of experts, t2 p2 sp" --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
  --sequence-parallel --num-experts 4 --moe-router-topk 2 --moe-aux-loss-coeff 0.01
finish
