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

/* One of adamw_many's range tables (ptdp_cuk_adamw_entry [count]): on the device, and the pinned
 * copy it was uploaded from, never rewritten (so no upload waits for an earlier launch). */
typedef struct {
  void *dev, *host;
  int count, blocks;
} ptdp_cu_aw_table;

/* One cached cuBLASLt plan: a GEMM shape (with the alignment of its pointers) and its algorithm. */
typedef struct {
  int ta, tb, M, N, K, lda, ldb, ldc, align, beta0;
  int ab_type, c_type; /* ptdp_dtype of A and B, of C (and D) */
  int epi, ealign;     /* the fused epilogue (cuda_gemm.c), the alignment of its bias and aux pointers */
  int declined;        /* the heuristic has no algorithm with this epilogue: gemm and kernels instead */
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulAlgo_t algo;
  int used;
} ptdp_cu_plan;

#define PTDP_CU_PLANS 128

typedef struct {
  int device;
  ptdp_dtype t;         /* the storage type of the (S) operands (ptdp/backend.h) */
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
  double *many, *many_host; /* sumsq_many's sums, device and pinned, many_cap of each (grow) */
  void *many_tab, *many_tab_host; /* its arrays' table (ptdp_cuk_sumsq_entry), device and pinned */
  int many_cap;
  double *many_part;            /* its partial sums, many_part_cap of them (grow) */
  int many_part_cap;
  ptdp_cu_aw_table *aw;         /* adamw_many's tables, aw_n of them (aw_cap room), each uploaded once */
  int aw_n, aw_cap;
  void *aw_plan;                /* host: the table being planned, aw_plan_bytes */
  size_t aw_plan_bytes;
} ptdp_cu_ctx;

/* Backend scratch of at least n floats (device memory; contents undefined). */
int ptdp_cu_scratch(ptdp_backend *be, size_t n, float **p);
int ptdp_cu_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc);
/* The table's gemm_wgrad of a 16-bit table: A, B of the storage type, C fp32, beta 1. */
int ptdp_cu_gemm_wgrad(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, float *C, int ldc);
/* The table's GEMMs with a fused epilogue (ptdp/backend.h); cuBLASLt's BIAS, GELU_AUX_BIAS and
 * DGELU, or gemm and the kernels where the heuristic declines. */
int ptdp_cu_gemm_bias(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B,
                      int ldb, const float *bias, float *C);
int ptdp_cu_gemm_bias_gelu(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda,
                           const float *B, int ldb, const float *bias, float *pre, float *C);
int ptdp_cu_gemm_dgelu_bgrad(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda,
                             const float *B, int ldb, const float *pre, float *C, float *db);
/* cudaDataType of a storage type: CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F. */
cudaDataType ptdp_cu_data_type(ptdp_dtype t);
void ptdp_cu_gemm_release(ptdp_cu_ctx *c);
int ptdp_cu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                              uint8_t *mask, float *probs_drop, float *ctx);
int ptdp_cu_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                               const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                               float *scratch);
#endif

/* ---- launchers (cuda_<concern>.cu: layernorm, colsum, elementwise, dropout, embedding, xent,
 * optimizer, convert; cuda_softmax.cu); shapes as in ptdp/backend.h ----
 * t is the storage type of the (S) operands, passed as void pointers; the others are fp32. */
/* Column sums (cuda_colsum.cu) in a fixed order: dw += sum over rows of dy (x - mean) rstd, or of
 * dy x rstd where mean is NULL, when x is given; db += sum over rows of dy when db is given.
 * part: 2 chunks cols floats with x, chunks cols without. */
cudaError_t ptdp_cuk_colsum(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x, const float *mean,
                            const float *rstd, long long rows, int cols, float *part, int chunks, float *dw, float *db);
cudaError_t ptdp_cuk_layernorm_forward(cudaStream_t st, ptdp_dtype t, const void *x, const void *w, const void *b,
                                       void *y, float *mean, float *rstd, long long rows, int h, float eps);
/* dx per row; dw, db partial column sums into part [2, chunks, h], then added to dw, db */
cudaError_t ptdp_cuk_layernorm_backward(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x, const void *w,
                                        const float *mean, const float *rstd, void *dx, float *dw, float *db,
                                        long long rows, int h, float *part, int chunks, const void *res);
cudaError_t ptdp_cuk_gelu_forward(cudaStream_t st, ptdp_dtype t, const void *x, void *y, size_t n);
cudaError_t ptdp_cuk_gelu_backward(cudaStream_t st, ptdp_dtype t, const void *x, const void *dy, void *dx, size_t n);
cudaError_t ptdp_cuk_bias_forward(cudaStream_t st, ptdp_dtype t, void *y, const void *b, long long rows, int cols);
cudaError_t ptdp_cuk_bias_backward(cudaStream_t st, ptdp_dtype t, const void *dy, float *db, long long rows, int cols,
                                   float *part, int chunks);
cudaError_t ptdp_cuk_add(cudaStream_t st, ptdp_dtype t, void *y, const void *x, size_t n);
/* y = dropout(y + b) + res (b may be NULL; k.p 0: no dropout, mask untouched) in one pass */
cudaError_t ptdp_cuk_bias_dropout_add(cudaStream_t st, ptdp_dtype t, void *y, const void *b, uint8_t *mask,
                                      const void *res, long long rows, int cols, ptdp_dropout_key k);
/* ptdp_cuk_bias_dropout_add, then ptdp_cuk_layernorm_forward of y into out: one warp-per-row pass
 * where rows fit a warp (h <= 4096, 16-byte units), the two kernels otherwise; the same bits */
cudaError_t ptdp_cuk_bias_dropout_add_layernorm(cudaStream_t st, ptdp_dtype t, void *y, const void *b, uint8_t *mask,
                                                const void *res, long long rows, int h, ptdp_dropout_key k,
                                                const void *w, const void *nb, void *out, float *mean, float *rstd,
                                                float eps);
cudaError_t ptdp_cuk_scale(cudaStream_t st, float *y, float a, size_t n); /* fp32 (the table's scale) */
cudaError_t ptdp_cuk_scale_s(cudaStream_t st, ptdp_dtype t, void *y, float a, size_t n); /* (S): gemm's beta C */
cudaError_t ptdp_cuk_dropout_forward(cudaStream_t st, ptdp_dtype t, void *x, uint8_t *mask, long long rows, int cols,
                                     ptdp_dropout_key k);
cudaError_t ptdp_cuk_dropout_backward(cudaStream_t st, ptdp_dtype t, void *dx, const uint8_t *mask, size_t n, float p);
/* dst = dropout_backward of src (src left as it is; p 0: a copy) */
cudaError_t ptdp_cuk_dropout_backward_to(cudaStream_t st, ptdp_dtype t, void *dst, const void *src, const uint8_t *mask,
                                         size_t n, float p);
cudaError_t ptdp_cuk_embedding_forward(cudaStream_t st, ptdp_dtype t, const void *wte, const int32_t *tok, long long v0,
                                       long long vl, void *out, long long rows, int h);
cudaError_t ptdp_cuk_embedding_backward(cudaStream_t st, ptdp_dtype t, const void *dout, const int32_t *tok,
                                        long long v0, long long vl, float *dwte, long long rows, int h);
cudaError_t ptdp_cuk_xent_stats(cudaStream_t st, ptdp_dtype t, const void *logits, const int32_t *target, long long v0,
                                long long rows, int vl, float *rowmax, float *tgt);
cudaError_t ptdp_cuk_xent_sumexp(cudaStream_t st, ptdp_dtype t, const void *logits, const float *gmax, long long rows,
                                 int vl, float *se);
cudaError_t ptdp_cuk_xent_grad(cudaStream_t st, ptdp_dtype t, void *logits, const int32_t *target, long long v0,
                               const float *gmax, const float *se, long long rows, int vl, float scale);
/* t > 1: the slice's max and the sum against it in one read; then the sum rescaled to the global max */
cudaError_t ptdp_cuk_xent_stats_local(cudaStream_t st, ptdp_dtype t, const void *logits, const int32_t *target,
                                      long long v0, long long rows, int vl, float *lmax, float *lsum, float *tgt);
cudaError_t ptdp_cuk_xent_rescale(cudaStream_t st, float *lsum, const float *lmax, const float *gmax, long long rows);
/* The three above in one pass over the logits (t = 1: gmax is the row max found), their bits */
cudaError_t ptdp_cuk_xent_fused(cudaStream_t st, ptdp_dtype t, void *logits, const int32_t *target, long long v0,
                                long long rows, int vl, float *rowmax, float *se, float *tgt, float scale);
/* *loss (device) = (float)(sum over rows of log(se) + gmax - tgt, in double) / rows: one block */
cudaError_t ptdp_cuk_xent_loss(cudaStream_t st, const float *gmax, const float *se, const float *tgt, long long rows,
                               float *loss);
/* bc1 = 1 - beta1^step, bc2 = 1 - beta2^step, computed by the host as the CPU backend does */
cudaError_t ptdp_cuk_adamw(cudaStream_t st, float *p, const float *g, float *m, float *v, size_t n, float lr,
                           float b1, float b2, float eps, float wd, float bc1, float bc2);
/* Blocks of partial sums of squares in part [PTDP_CUK_RED_BLOCKS], then their sum in *out. */
#define PTDP_CUK_RED_BLOCKS 1024
cudaError_t ptdp_cuk_sumsq(cudaStream_t st, const float *x, size_t n, double *part, double *out);
/* sumsq of count arrays in two launches: tab (device) holds each array's pointer, size and first
 * partial-sum block (ptdp_cuk_sumsq_plan fills a host copy; the caller copies it over), part the
 * partial sums of every block (ptdp_cuk_sumsq_plan's total), out[i] the sum of array i: the bits
 * ptdp_cuk_sumsq gives, the same blocks summing the same elements in the same order. */
typedef struct {
  const float *x;
  size_t n;
  int b0, nb; /* its blocks: part[b0, b0 + nb) */
} ptdp_cuk_sumsq_entry;
/* Fill tab[i] for x[i], n[i]; returns the total number of partial-sum blocks. */
int ptdp_cuk_sumsq_plan(const float *const *x, const size_t *n, int count, ptdp_cuk_sumsq_entry *tab);
cudaError_t ptdp_cuk_sumsq_many(cudaStream_t st, const ptdp_cuk_sumsq_entry *tab, int count, int blocks, double *part,
                                double *out);
/* adamw over count ranges in one launch: tab (device) holds each range and its first block
 * (ptdp_cuk_adamw_plan fills a host copy, returning the blocks in all); a block updates elements
 * of its range only, each with adamw_k's arithmetic on g times gscale, and writes the range's w16
 * copy (type t16) when it has one, rounded as convert_k rounds. */
typedef struct { /* no padding (64 bytes, every byte set): cu_adamw_many compares tables with memcmp */
  float *p;
  const float *g;
  float *m, *v;
  void *w16;
  size_t n;
  float wd;
  int b0, nb; /* its blocks: [b0, b0 + nb) */
  int zero;   /* 0 */
} ptdp_cuk_adamw_entry;
int ptdp_cuk_adamw_plan(const ptdp_adamw_range *r, int count, ptdp_cuk_adamw_entry *tab);
cudaError_t ptdp_cuk_adamw_many(cudaStream_t st, const ptdp_cuk_adamw_entry *tab, int count, int blocks, ptdp_dtype t16,
                                float gscale, float lr, float b1, float b2, float eps, float bc1, float bc2);
/* Mixed precision.  convert: a same-type convert is a cudaMemcpyAsync; unscale_check: *found
 * (device) set to 0, then to 1 by any non-finite x, as x *= inv_scale. */
cudaError_t ptdp_cuk_convert(cudaStream_t st, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype sty, size_t n);
cudaError_t ptdp_cuk_unscale_check(cudaStream_t st, float *x, size_t n, float inv_scale, int *found);
/* Causal softmax + dropout of samples [bi0, bi0 + nb): scores S [nb, al, s, s] (fp32; S may be
 * the samples' rows of probs when t is fp32: in place) to probs, mask and Pd (when
 * d->drop.p > 0) [b, al, s, s]. */
cudaError_t ptdp_cuk_softmax_forward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, int bi0, int nb,
                                     const float *S, void *probs, uint8_t *mask, void *probs_drop);
/* dP [al, s, s] (fp32) of sample bi to dS [al, s, s] (type t; dS may be dP in fp32) through
 * dropout and softmax. */
cudaError_t ptdp_cuk_softmax_backward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, int bi, const void *probs,
                                      const uint8_t *mask, const float *dp, void *ds);
/* The Llama family's operations (cuda_llama.cu), the table's contracts (ptdp/backend.h).
 * rmsnorm_backward: dx per row; dw through partial column sums in part [chunks, h], then added. */
cudaError_t ptdp_cuk_rmsnorm_forward(cudaStream_t st, ptdp_dtype t, const void *x, const void *w, void *y,
                                     float *rstd, long long rows, int h, float eps);
/* ptdp_cuk_bias_dropout_add, then ptdp_cuk_rmsnorm_forward of y into out, as
 * ptdp_cuk_bias_dropout_add_layernorm (one pass where rows fit a warp; the same bits) */
cudaError_t ptdp_cuk_bias_dropout_add_rmsnorm(cudaStream_t st, ptdp_dtype t, void *y, const void *b, uint8_t *mask,
                                              const void *res, long long rows, int h, ptdp_dropout_key k, const void *w,
                                              void *out, float *rstd, float eps);
cudaError_t ptdp_cuk_rmsnorm_backward(cudaStream_t st, ptdp_dtype t, const void *dy, const void *x, const void *w,
                                      const float *rstd, void *dx, float *dw, long long rows, int h, float *part,
                                      int chunks, const void *res);
cudaError_t ptdp_cuk_rope(cudaStream_t st, ptdp_dtype t, void *qkv, const ptdp_rope_desc *d, const float *table,
                          int inverse);
/* rows [gate (f) | up (f)] of x [rows, 2 f] to y [rows, f]; the backward overwrites dx [rows, 2 f] */
cudaError_t ptdp_cuk_swiglu_forward(cudaStream_t st, ptdp_dtype t, const void *x, void *y, long long rows, int f);
cudaError_t ptdp_cuk_swiglu_backward(cudaStream_t st, ptdp_dtype t, const void *x, const void *dy, void *dx,
                                     long long rows, int f);
/* Grouped-query attention's key or value gradients: src [groups, s, hd] fp32 stored (rounded to
 * t) at dst + q ld + g gs + c, dst of type t (one sample's dK or dV in the qkv rows). */
cudaError_t ptdp_cuk_group_store(cudaStream_t st, ptdp_dtype t, const float *src, void *dst, int groups, int s,
                                 int hd, long long ld, long long gs);
/* A buffer filled with one float value (tests poison outputs with NaN). */
cudaError_t ptdp_cuk_fill(cudaStream_t st, float *x, float v, size_t n);
/* Fused causal attention (cuda_flash.cu) in the 16-bit storage type t (PTDP_BF16 or PTDP_F16;
 * FlashAttention has no fp32 path), the contract of the table's flash_forward/backward: qkv, ctx,
 * dctx, dqkv of type t; lse [b, al, s] and drow [b, al, s] (the backward's scratch:
 * D = rowsum(dctx * ctx)) fp32.  cudaErrorInvalidValue for a shape the kernels do not cover:
 * ptdp_cuk_flash_supported says 1 for hd a multiple of 16 up to 128 and b al <= 65535. */
int ptdp_cuk_flash_supported(const ptdp_attn_desc *d);
cudaError_t ptdp_cuk_flash_forward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, const void *qkv, void *ctx,
                                   float *lse);
cudaError_t ptdp_cuk_flash_backward(cudaStream_t st, ptdp_dtype t, const ptdp_attn_desc *d, const void *qkv,
                                    const void *ctx, const float *lse, const void *dctx, void *dqkv, float *drow);

#ifdef __cplusplus
}
#endif

#endif
