#!/bin/sh
# The whole model on the CUDA backend, fp32, against the CPU backend (the reference):
#   one rank: 20 iterations with dropout; every loss, the first step's gradients and the initial
#     weights within 1e-5 relative (equivalence_lib.sh's tolerances), final parameters 1e-4;
#   layouts t=2, p=2, d=2 (and t2 p2 sp) with several ranks on the one GPU, messages through MPI
#     staged in host memory (NCCL refuses two ranks of a communicator on one GPU): the same
#     losses and gradients as one CUDA rank;
#   with 2 GPUs or more: t=2 and d=2 with comm-backend = nccl against the same reference.
#   the Llama family (rmsnorm, rope, GQA, swiglu, no bias, untied) on one rank and t=2 against the CPU;
# Skips (77) without a GPU.  First run on an NVIDIA H200, 2026-11-26: 16 checks passed (validation/bench/README.md).
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/gpu/gpu_lib.sh"
gpu_or_skip

. "$top_srcdir/validation/tests/equivalence_lib.sh"
DECK="$TMPD/gpu.in"
equiv_deck num-layers=4 hidden-size=128 seq-length=128 vocab-size=1000 lr-warmup-iters=2 run-file=none

train cpu 1 --backend cpu
train cuda 1 --backend cuda
compare cuda cpu final,init,step1/grads
train cuda_v256 1 --backend cuda --make-vocab-size-divisible-by 256
train cpu_v256 1 --backend cpu --make-vocab-size-divisible-by 256
compare cuda_v256 cpu_v256 final,init,step1/grads

# name ranks reference flags (--backend cuda --device 0 --comm-backend mpi added)
layouts final,init,step1/grads --backend cuda --device 0 --comm-backend mpi <<'LAYOUTS'
cuda_t2       2 cuda_v256 --tensor-model-parallel-size 2
cuda_p2       2 cuda      --pipeline-model-parallel-size 2
cuda_d2       2 cuda     
cuda_t2_p2_sp 4 cuda_v256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel
cuda_t2_p2_d2 8 cuda_v256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
LAYOUTS

# The Llama family: RMSNorm, rotary positions, 4 heads in 2 query groups, SwiGLU, no linear
# biases, the output layer untied (the CUDA backend's cuda_llama.cu and grouped unfused
# attention), one rank and t=2 against the CPU backend, the same tolerances.
LLAMA="--normalization RMSNorm --position-embedding-type rope --group-query-attention true --num-query-groups 2
       --disable-bias-linear true --untie-embeddings-and-output-weights true --num-attention-heads 4
       --swiglu true --make-vocab-size-divisible-by 256"
# shellcheck disable=SC2086
train cpu_llama 1 --backend cpu $LLAMA
# shellcheck disable=SC2086
train cuda_llama 1 --backend cuda $LLAMA && compare cuda_llama cpu_llama final,init,step1/grads
# shellcheck disable=SC2086
train cuda_llama_t2 2 --backend cuda --device 0 --comm-backend mpi --tensor-model-parallel-size 2 $LLAMA &&
  compare cuda_llama_t2 cpu_llama final,init,step1/grads

if [ "$(gpu_count)" -ge 2 ]; then
  train nccl_t2 2 --backend cuda --comm-backend nccl --tensor-model-parallel-size 2 && compare nccl_t2 cuda_v256 final,init,step1/grads
  train nccl_d2 2 --backend cuda --comm-backend nccl && compare nccl_d2 cuda final,init,step1/grads
else
  echo "note: fewer than 2 GPUs: the NCCL transport is not exercised here"
fi
cat "$TMPD/worst"
finish
