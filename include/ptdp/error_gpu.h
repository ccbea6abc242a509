/* Checking macros for the GPU libraries; include only from sources built with CUDA. */
#ifndef PTDP_ERROR_GPU_H
#define PTDP_ERROR_GPU_H
#include "ptdp/config.h"
#include "ptdp/error.h"
#include <cublas_v2.h>
#include <cuda_runtime.h>
#if PTDP_HAVE_NCCL
#include <nccl.h>
#endif

#define PTDP_CALL_CUDA(x)                                                                  \
  do {                                                                                     \
    cudaError_t ptdp_c_ = (x);                                                             \
    if (ptdp_c_ != cudaSuccess)                                                            \
      return PTDP_FAIL(PTDP_ERR_LIB, "CUDA error %s: %s (in %s)", \
                             cudaGetErrorName(ptdp_c_), cudaGetErrorString(ptdp_c_), #x); \
  } while (0)

#define PTDP_CALL_CUBLAS(x)                                                               \
  do {                                                                                    \
    cublasStatus_t ptdp_b_ = (x);                                                         \
    if (ptdp_b_ != CUBLAS_STATUS_SUCCESS)                                                 \
      return PTDP_FAIL(PTDP_ERR_LIB, "cuBLAS error %s: %s (in %s)", \
                             cublasGetStatusName(ptdp_b_), cublasGetStatusString(ptdp_b_), #x); \
  } while (0)

#if PTDP_HAVE_NCCL
#define PTDP_CALL_NCCL(x)                                                                     \
  do {                                                                                        \
    ncclResult_t ptdp_n_ = (x);                                                               \
    if (ptdp_n_ != ncclSuccess)                                                               \
      return PTDP_FAIL(PTDP_ERR_LIB, "NCCL error: %s (in %s)", \
                             ncclGetErrorString(ptdp_n_), #x);                               \
  } while (0)
#endif /* PTDP_HAVE_NCCL */
#endif
