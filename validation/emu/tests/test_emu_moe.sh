#!/bin/sh
# A mixture-of-experts model on the emulated CUDA backend (validation/emu/ptdp-train-emu) against
# the CPU backend: 4 experts of width 64, top 2, the load-balancing and z losses, SwiGLU experts
# without biases, dropout on.  The mixture needs no operation of its own: its router and expert
# GEMMs are the backend's GEMM, its routing and permutations go through the backend's copies to
# and from the host, so the CUDA backend runs it as it is.  fp32, one rank, and t=2 with sequence
# parallelism through NCCL, against the CPU's one-rank run within the equivalence tests'
# tolerances (equivalence_lib.sh).  Small (2 layers, 4 iterations): the emulation is slow.
. "$top_srcdir/validation/tests/common.sh"
TRAIN="$top_builddir/validation/emu/ptdp-train-emu"
if grep -q __asan_init "$TRAIN" 2>/dev/null; then
  LAUNCH_TIMEOUT=$((${LAUNCH_TIMEOUT:-120} * 5))
  echo "sanitized build: each run may take up to $LAUNCH_TIMEOUT s"
fi
DECK="$TMPD/moe.in"
cat > "$DECK" <<'DECK_EOF'
num-layers = 2
hidden-size = 64
num-attention-heads = 4
normalization = RMSNorm
position-embedding-type = rope
swiglu = true
disable-bias-linear = true
seq-length = 32
micro-batch-size = 2
global-batch-size = 8
vocab-size = 256
mock-data = true
train-iters = 4
lr = 1e-3
lr-warmup-iters = 2
hidden-dropout = 0.1
attention-dropout = 0.1
log-interval = 4
run-file = none
num-experts = 4
moe-router-topk = 2
moe-ffn-hidden-size = 64
moe-aux-loss-coeff = 0.01
moe-z-loss-coeff = 0.001
DECK_EOF
. "$top_srcdir/validation/tests/equivalence_lib.sh"

train cpu 1 --backend cpu
train cuda 1 --backend cuda && compare cuda cpu final,init,step1/grads
PTDP_EMU_DEVICES=2 train nccl_t2_sp 2 --backend cuda --tensor-model-parallel-size 2 --sequence-parallel &&
  compare nccl_t2_sp cpu final,init,step1/grads
cat "$TMPD/worst"
finish
