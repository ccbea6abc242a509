#!/bin/sh
# The whole model on the emulated CUDA backend (validation/emu/ptdp-train-emu, the CUDA
# backend's own sources on the CUDA emulation) against the CPU backend, fp32, dropout on:
#   one rank; t=2 with sequence parallelism; p=2 interleaved; d=2 with the distributed
#   optimizer; full and selective recomputation; t=2, d=2, p=2 (the embedding group) and p=2
#   interleaved again with the NCCL transport (emulated over MPI; PTDP_EMU_DEVICES gives each rank
#   its own GPU), whose p=2 runs send the pipeline's messages through NCCL ring links.
# Each equals the CPU backend's one-rank run: every loss and the first step's gradients within
# 1e-5 relative, parameters after the last step within 1e-4 (equivalence_lib.sh says why).
# The vocabulary (256) pads to the same size for t = 1 and 2, so one reference serves all.
# Then bf16 and fp16, natively stored on the CUDA backend (below).
. "$top_srcdir/validation/tests/common.sh"
TRAIN="$top_builddir/validation/emu/ptdp-train-emu"
# Each run is killed after LAUNCH_TIMEOUT s (common.sh: 120 s, which the normal build's runs, 6 to
# 30 s, keep).  A build with AddressSanitizer (--enable-sanitizers or --enable-fuzzing: the binary
# holds __asan_init) runs the emulation several times slower (cuda_bf16 took over 120 s there),
# so its runs get five times the limit.
if grep -q __asan_init "$TRAIN" 2>/dev/null; then
  LAUNCH_TIMEOUT=$((${LAUNCH_TIMEOUT:-120} * 5))
  echo "sanitized build: each run may take up to $LAUNCH_TIMEOUT s"
fi
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
  case $flags in *--pipeline-model-parallel-size*)
    [ "$devices" -gt 1 ]; want=$?
    grep -q 'pipeline messages through NCCL' "$TMPD/$name.log"; [ $? -eq $want ]
    ok $? "$name: pipeline messages went through $([ $want -eq 0 ] && echo NCCL || echo MPI)" ;;
  esac
done <<'LAYOUTS'
t2_sp         2 1 final,init,step1/grads --tensor-model-parallel-size 2 --sequence-parallel
p2_interleave 2 1 final,init,step1/grads --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
d2_distopt    2 1 final,init             --use-distributed-optimizer
full          1 1 final,init,step1/grads --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
selective     1 1 final,init,step1/grads --recompute-granularity selective
nccl_t2_sp    2 2 final,init,step1/grads --tensor-model-parallel-size 2 --sequence-parallel
nccl_d2       2 2 final,init             --use-distributed-optimizer
nccl_p2       2 2 final,init,step1/grads --pipeline-model-parallel-size 2
nccl_p2_inter 2 2 final,init,step1/grads --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
LAYOUTS
# bf16 and fp16: the CUDA backend storing the 16-bit type natively (its own 16-bit kernels and
# cuBLAS(Lt) products with fp32 accumulation; the trainer says so on its [backend] line) against
# the CPU backend under the mixed-precision wrapper: one rank, t=2 + SP over NCCL (16-bit
# collectives) and, in bf16, d=2 with the distributed optimizer.  Tolerances of bf16 and fp16 runs
# (validation/tests/test_mixed_precision.sh says why): losses 5e-4 relative and first-step
# gradients 3e-2 of the tensor's largest entry: the CUDA and CPU fp32 arithmetic differ at 1e-6,
# a value near a rounding boundary of the 16-bit type then lands one ulp (2^-8 in bf16) apart,
# and the native unfused attention rounds twice more (its probabilities before ctx = P V, dS
# before dQ, dK: src/backend/cuda_attention.c), each at most one ulp of a term of those sums;
# the initial weights exactly.  (Measured: losses within 3e-5 in bf16 on one rank.)
# The fused attention (src/backend/cuda_flash.cu, the default of 16-bit tables) rounds at the
# same places (P before P V, dS before dQ and dK) with other orders of sums: flash runs are held
# to the same bounds against the CPU's runs and against the unfused CUDA run of their type
# (measured in bf16 on one rank: losses within 2.4e-5 of the CPU's and 2.1e-5 of the unfused
# run, first-step gradients 1.7e-2 and 9.5e-3 of their tensors' largest entries; in fp16 2e-6 and
# 6e-6, 1.9e-3 and 1.4e-3).  cuda_* runs the unfused attention,
# flash_* and the layouts below the fused one: one rank, t=2 + SP over NCCL, p=2 interleaved (bf16)
# and d=2 with the distributed optimizer (bf16), a layout of each kind of parallelism.
CMP="$PYTHON3 $top_srcdir/validation/tests/compare_dumps.py --loss-rtol 5e-4 --grad-tol 3e-2 --param-tol 0"
native() {
  grep -q "^\[backend\] cuda stores $2 natively" "$TMPD/$1.log"
  ok $? "$1: the cuda backend stored $2 natively"
}
# fp16 starts from a loss scale of 4096 (not 2^32), so that its first step does not overflow and
# the first step's gradients are finite numbers to compare (they are the scaled gradients).
for prec in "bf16" "fp16 --initial-loss-scale 4096"; do
  pn=${prec%% *}
  # shellcheck disable=SC2086
  train "cpu_$pn" 1 --backend cpu --$prec || continue
  # shellcheck disable=SC2086
  train "cuda_$pn" 1 --backend cuda --$prec --attention-backend unfused &&
    compare "cuda_$pn" "cpu_$pn" init,step1/grads && native "cuda_$pn" "$pn"
  # shellcheck disable=SC2086
  train "flash_$pn" 1 --backend cuda --$prec --attention-backend flash &&
    compare "flash_$pn" "cpu_$pn" init,step1/grads && compare "flash_$pn" "cuda_$pn" init,step1/grads
  # shellcheck disable=SC2086
  PTDP_EMU_DEVICES=2 train "nccl_t2_sp_$pn" 2 --backend cuda --$prec --tensor-model-parallel-size 2 \
    --sequence-parallel --attention-backend flash && compare "nccl_t2_sp_$pn" "cpu_$pn" init,step1/grads
done
train p2_interleave_bf16 2 --backend cuda --bf16 --attention-backend flash --pipeline-model-parallel-size 2 \
  --num-layers-per-virtual-pipeline-stage 1 && compare p2_interleave_bf16 cpu_bf16 init,step1/grads
# the distributed optimizer's dump has no whole step-1 gradients: losses and initial weights
train d2_distopt_bf16 2 --backend cuda --bf16 --use-distributed-optimizer --attention-backend flash &&
  compare d2_distopt_bf16 cpu_bf16 init && native d2_distopt_bf16 bf16
# heads of 64 (hidden 128, 2 heads; s 96: a tile wholly below the diagonal, the diagonal's and a
# tail): the mma flash kernels (cuda_flash.cu's default for heads of 64 and 128; the runs above,
# heads of 16, take the wmma ones) through the model, bf16, one rank, the same bounds
HD64="--bf16 --hidden-size 128 --num-attention-heads 2 --seq-length 96 --max-position-embeddings 96"
# shellcheck disable=SC2086
train cpu_hd64 1 --backend cpu $HD64 &&
  train flash_hd64 1 --backend cuda $HD64 --attention-backend flash && compare flash_hd64 cpu_hd64 init,step1/grads
cat "$TMPD/worst"
finish
