#!/bin/sh
# The whole model on the emulated CUDA backend (validation/emu/ptdp-train-emu, the CUDA
# backend's own sources on the CUDA emulation) against the CPU backend, fp32, dropout on:
#   one rank; t=2 with sequence parallelism; p=2 interleaved; d=2 with the distributed
#   optimizer; full and selective recomputation; t=2, d=2 and p=2 (the embedding group) again
#   with the NCCL transport (emulated over MPI; PTDP_EMU_DEVICES gives each rank its own GPU).
# Each equals the CPU backend's one-rank run: every loss and the first step's gradients within
# 1e-5 relative, parameters after the last step within 1e-4 (equivalence_lib.sh says why).
# The vocabulary (256) pads to the same size for t = 1 and 2, so one reference serves all.
. "$top_srcdir/validation/tests/common.sh"
TRAIN="$top_builddir/validation/emu/ptdp-train-emu"
DECK="$TMPD/emu.in"
cat > "$DECK" <<'DECK_EOF'
num-layers = 4
hidden-size = 64
num-attention-heads = 4
seq-length = 32
max-position-embeddings = 32
micro-batch-size = 2
global-batch-size = 8
vocab-size = 256
mock-data = true
train-iters = 6
lr = 1e-3
lr-warmup-iters = 2
hidden-dropout = 0.1
attention-dropout = 0.1
log-interval = 6
run-file = none
DECK_EOF
. "$top_srcdir/validation/tests/equivalence_lib.sh"

train cpu 1 --backend cpu
train cuda 1 --backend cuda && compare cuda cpu final,init,step1/grads
# groups: the distributed optimizer's dump has no whole step-1 gradients (each rank holds a shard)
while read -r name np devices groups flags; do
  [ -n "$name" ] || continue
  # shellcheck disable=SC2086
  PTDP_EMU_DEVICES=$devices train "$name" "$np" --backend cuda $flags || continue
  compare "$name" cpu "$groups"
  if [ "$devices" -gt 1 ]; then
    grep -q 'collectives through NCCL' "$TMPD/$name.log"; ok $? "$name: collectives went through NCCL"
  fi
done <<'LAYOUTS'
t2_sp         2 1 final,init,step1/grads --tensor-model-parallel-size 2 --sequence-parallel
p2_interleave 2 1 final,init,step1/grads --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
d2_distopt    2 1 final,init             --use-distributed-optimizer
full          1 1 final,init,step1/grads --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
selective     1 1 final,init,step1/grads --recompute-granularity selective
nccl_t2_sp    2 2 final,init,step1/grads --tensor-model-parallel-size 2 --sequence-parallel
nccl_d2       2 2 final,init             --use-distributed-optimizer
nccl_p2       2 2 final,init,step1/grads --pipeline-model-parallel-size 2
LAYOUTS
cat "$TMPD/worst"
finish
