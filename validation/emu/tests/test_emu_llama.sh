#!/bin/sh
# A Llama-style model on the emulated CUDA backend (validation/emu/ptdp-train-emu) against the CPU
# backend: RMSNorm, rotary positions, grouped-query attention (4 heads in 2 groups),
# SwiGLU, no linear biases, the output layer untied, dropout on.  The CUDA backend's own RMSNorm,
# RoPE, SwiGLU (cuda_llama.cu) and grouped unfused attention (cuda_attention.c) run, and the fused
# attention with grouped queries (cuda_flash.cu).
#   fp32: one rank, and t=2 with sequence parallelism through NCCL (each rank its own emulated GPU,
#     one group per rank), against the CPU's one-rank run: every loss and the first step's
#     gradients within 1e-5 relative, parameters after the last step 1e-4 (equivalence_lib.sh's
#     tolerances and reasons; test_emu_model.sh holds the GPT model to the same);
#   bf16 and fp16 stored natively, one rank, against the CPU backend under the mixed-precision
#     wrapper: losses 5e-4 relative, first-step gradients 3e-2 of each tensor's largest entry,
#     initial weights exactly (test_emu_model.sh's 16-bit bounds and reasons: the unfused
#     attention's two extra roundings, one ulp of a value near a rounding boundary); the unfused
#     attention named (auto would run the fused one);
#   the fused attention with grouped queries: bf16, heads of 64 (hidden 256, 4 heads in 2 groups;
#     s 96: a tile wholly below the diagonal, the diagonal's and a tail), so the mma kernels
#     (cuda_flash.cu's default for heads of 64), against the CPU's run of the same shape within the
#     same 16-bit bounds (test_emu_model.sh holds its GPT flash runs to them); 2 iterations of 2
#     micro-batches, as its emulation is the slowest run here.
# Small (2 layers, 4 iterations): the emulation is slow.
. "$top_srcdir/validation/tests/common.sh"
TRAIN="$top_builddir/validation/emu/ptdp-train-emu"
if grep -q __asan_init "$TRAIN" 2>/dev/null; then
  LAUNCH_TIMEOUT=$((${LAUNCH_TIMEOUT:-120} * 5))
  echo "sanitized build: each run may take up to $LAUNCH_TIMEOUT s"
fi
DECK="$TMPD/llama.in"
cat > "$DECK" <<'DECK_EOF'
num-layers = 2
hidden-size = 64
num-attention-heads = 4
group-query-attention = true
num-query-groups = 2
normalization = RMSNorm
position-embedding-type = rope
swiglu = true
disable-bias-linear = true
untie-embeddings-and-output-weights = true
seq-length = 32
max-position-embeddings = 32
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
DECK_EOF
. "$top_srcdir/validation/tests/equivalence_lib.sh"

train cpu 1 --backend cpu
train cuda 1 --backend cuda && compare cuda cpu final,init,step1/grads
PTDP_EMU_DEVICES=2 train nccl_t2_sp 2 --backend cuda --tensor-model-parallel-size 2 --sequence-parallel &&
  compare nccl_t2_sp cpu final,init,step1/grads &&
  { grep -q 'collectives through NCCL' "$TMPD/nccl_t2_sp.log"; ok $? "nccl_t2_sp: collectives went through NCCL"; }

CMP="$PYTHON3 $top_srcdir/validation/tests/compare_dumps.py --loss-rtol 5e-4 --grad-tol 3e-2 --param-tol 0"
for prec in "bf16" "fp16 --initial-loss-scale 4096"; do
  pn=${prec%% *}
  # shellcheck disable=SC2086
  train "cpu_$pn" 1 --backend cpu --$prec || continue
  # shellcheck disable=SC2086
  train "cuda_$pn" 1 --backend cuda --$prec --attention-backend unfused &&
    compare "cuda_$pn" "cpu_$pn" init,step1/grads
  grep -q "^\[backend\] cuda stores $pn natively" "$TMPD/cuda_$pn.log"
  ok $? "cuda_$pn: the cuda backend stored $pn natively"
done
# the fused attention with grouped queries, heads of 64 (the mma kernels)
GQA64="--bf16 --hidden-size 256 --num-attention-heads 4 --num-query-groups 2 --seq-length 96 --max-position-embeddings 96
  --global-batch-size 4 --train-iters 2"
# shellcheck disable=SC2086
train cpu_gqa64 1 --backend cpu $GQA64 &&
  train flash_gqa64 1 --backend cuda $GQA64 --attention-backend flash && compare flash_gqa64 cpu_gqa64 init,step1/grads
cat "$TMPD/worst"
finish
