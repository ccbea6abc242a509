/* Private to the CUDA backend: its context, shared by the host files (cuda.c, cuda_gemm.c,
 * cuda_attention.c), and the kernel launchers of the .cu files.
 *
 * Launchers are plain C functions (extern "C") that enqueue on the given stream and return
 * cudaGetLastError(), so a bad launch is caught at once (the host side wraps them in
 * PTDP_CALL_CUDA); faults inside kernels surface at the next synchronisation.  The .cu files
 * see only CUDA and this header: no MPI, no ptdp error machinery. */
#ifndef PTDP_CUDA_INTERNAL_H
#define PTDP_CUDA_INTERNAL_H

#include "ptdp/backend.h"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef __CUDACC__
#include <cublasLt.h>
#include <cublas_v2.h>

/* One cached cuBLASLt plan: a GEMM shape (with the alignment of its pointers) and its algorithm. */
typedef struct {
  int ta, tb, M, N, K, lda, ldb, ldc, align, beta0;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulAlgo_t algo;
  int used;
} ptdp_cu_plan;

#define PTDP_CU_PLANS 128

typedef struct {
  int device;
  cudaStream_t stream;
  cublasHandle_t blas;  /* batched GEMMs of the unfused attention */
  cublasLtHandle_t lt;  /* every other GEMM */
  void *lt_work;        /* cuBLASLt workspace */
  size_t lt_work_bytes;
  ptdp_cu_plan plans[PTDP_CU_PLANS];
  int nplans, next_evict;
  float *scratch;       /* grows: attention dP, column-sum partials */
  size_t scratch_n;
  double *red;          /* device partial sums of sumsq; its first slot is unscale_check's flag */
  double *red_host;     /* pinned: the sum (or unscale_check's flag) read back */
} ptdp_cu_ctx;

/* Backend scratch of at least n floats (device memory; contents undefined). */
int ptdp_cu_scratch(ptdp_backend *be, size_t n, float **p);
int ptdp_cu_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc);
void ptdp_cu_gemm_release(ptdp_cu_ctx *c);
int ptdp_cu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                              uint8_t *mask, float *probs_drop, float *ctx);
int ptdp_cu_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                               const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                               float *scratch);
#endif

/* ---- launchers (cuda_kernels.cu, cuda_softmax.cu); shapes as in ptdp/backend.h ---- */
cudaError_t ptdp_cuk_layernorm_forward(cudaStream_t st, const float *x, const float *w, const float *b, float *y,
                                       float *mean, float *rstd, long long rows, int h, float eps);
/* dx per row; dw, db partial column sums into part [2, chunks, h], then added to dw, db */
cudaError_t ptdp_cuk_layernorm_backward(cudaStream_t st, const float *dy, const float *x, const float *w,
                                        const float *mean, const float *rstd, float *dx, float *dw, float *db,
                                        long long rows, int h, float *part, int chunks);
cudaError_t ptdp_cuk_gelu_forward(cudaStream_t st, const float *x, float *y, size_t n);
cudaError_t ptdp_cuk_gelu_backward(cudaStream_t st, const float *x, const float *dy, float *dx, size_t n);
cudaError_t ptdp_cuk_bias_forward(cudaStream_t st, float *y, const float *b, long long rows, int cols);
cudaError_t ptdp_cuk_bias_backward(cudaStream_t st, const float *dy, float *db, long long rows, int cols, float *part,
                                   int chunks);
cudaError_t ptdp_cuk_add(cudaStream_t st, float *y, const float *x, size_t n);
cudaError_t ptdp_cuk_scale(cudaStream_t st, float *y, float a, size_t n);
cudaError_t ptdp_cuk_dropout_forward(cudaStream_t st, float *x, uint8_t *mask, long long rows, int cols,
                                     ptdp_dropout_key k);
cudaError_t ptdp_cuk_dropout_backward(cudaStream_t st, float *dx, const uint8_t *mask, size_t n, float p);
cudaError_t ptdp_cuk_embedding_forward(cudaStream_t st, const float *wte, const int32_t *tok, long long v0,
                                       long long vl, float *out, long long rows, int h);
cudaError_t ptdp_cuk_embedding_backward(cudaStream_t st, const float *dout, const int32_t *tok, long long v0,
                                        long long vl, float *dwte, long long rows, int h);
cudaError_t ptdp_cuk_xent_stats(cudaStream_t st, const float *logits, const int32_t *target, long long v0,
                                long long rows, int vl, float *rowmax, float *tgt);
cudaError_t ptdp_cuk_xent_sumexp(cudaStream_t st, const float *logits, const float *gmax, long long rows, int vl,
                                 float *se);
cudaError_t ptdp_cuk_xent_grad(cudaStream_t st, float *logits, const int32_t *target, long long v0,
                               const float *gmax, const float *se, long long rows, int vl, float scale);
/* bc1 = 1 - beta1^step, bc2 = 1 - beta2^step, computed by the host as the CPU backend does */
cudaError_t ptdp_cuk_adamw(cudaStream_t st, float *p, const float *g, float *m, float *v, size_t n, float lr,
                           float b1, float b2, float eps, float wd, float bc1, float bc2);
/* Blocks of partial sums of squares in part [PTDP_CUK_RED_BLOCKS], then their sum in *out. */
#define PTDP_CUK_RED_BLOCKS 1024
cudaError_t ptdp_cuk_sumsq(cudaStream_t st, const float *x, size_t n, double *part, double *out);
/* Used by mixed precision (issue 20 section 3), not yet by the model.  convert: a same-type
 * convert is a cudaMemcpyAsync; unscale_check: *found (device) set to 0, then to 1 by any
 * non-finite x, as x *= inv_scale. */
cudaError_t ptdp_cuk_convert(cudaStream_t st, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype sty, size_t n);
cudaError_t ptdp_cuk_unscale_check(cudaStream_t st, float *x, size_t n, float inv_scale, int *found);
/* Causal softmax + dropout of rows [b al s] of S [b, al, s, s] in place (probs), mask and Pd
 * when d->drop.p > 0. */
cudaError_t ptdp_cuk_softmax_forward(cudaStream_t st, const ptdp_attn_desc *d, float *probs, uint8_t *mask,
                                     float *probs_drop);
/* dP [al, s, s] of sample bi (in place) to dS through dropout and softmax. */
cudaError_t ptdp_cuk_softmax_backward(cudaStream_t st, const ptdp_attn_desc *d, int bi, const float *probs,
                                      const uint8_t *mask, float *dp);
/* A buffer filled with one float value (tests poison outputs with NaN). */
cudaError_t ptdp_cuk_fill(cudaStream_t st, float *x, float v, size_t n);

#ifdef __cplusplus
}
#endif

#endif
