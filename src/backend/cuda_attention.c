/* Unfused attention of the CUDA backend (the reference path; see cpu_attention.c for the
 * formulas).  Per sample bi, the al local heads are one strided-batched cuBLAS product each
 * (fp32 accumulation, no TF32): a head's Q, K, V sit at stride 3 hd in the fused qkv rows
 * [N, al, 3, hd] (row stride ld = b 3 hl), its S, P, Pd at stride s s in [b, al, s, s], its ctx
 * at stride hd in [N, hl] (row stride b hl).  Softmax and dropout are kernels (cuda_softmax.cu).
 *     forward:  S = Q K^T / sqrt(hd);  P, Pd = softmax, dropout;  ctx = Pd V
 *     backward: dPd = dC V^T;  dS (kernel);  dQ = dS K / sqrt(hd);  dK = dS^T Q / sqrt(hd);
 *               dV = Pd^T dC
 * The whole s x s product is computed (the upper triangle is zero in P and dS), so this path
 * does twice the necessary work: the fused kernel is what skips it.
 *
 * Storage types.  In fp32 S is computed in place in probs, and dS in place of dPd in the
 * backend's scratch (al s s floats, one sample at a time, reused in stream order).  In bf16 and
 * fp16 (S) tensors are of the storage type and the products take 16-bit A and B with fp32
 * accumulation (cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F): the scores S and dPd come out
 * in fp32 into the scratch, so the softmax reads them unrounded, as the mixed-precision
 * wrapper's fp32 path does; P and Pd are rounded once when stored.  Two roundings the wrapper
 * does not have: ctx = Pd V reads the stored (rounded) Pd, where the wrapper multiplies its fp32
 * Pd before rounding it; and dS is stored in the storage type (the 16-bit A of dQ and dK's
 * products; cuBLAS takes A and B of one type), al s s elements after dPd in the scratch.  Each
 * adds at most one rounding of the 16-bit type to each term of those sums (Megatron's unfused
 * bf16 attention has the same two, and rounds S too).
 * NOT YET RUN ON A GPU: see README, "GPUs". */
#include "cuda_gemm_map.h"
#include "cuda_internal.h"

#include "ptdp/error.h"
#include "ptdp/error_gpu.h"

#include <math.h>

/* Element i of an array of elements of es bytes. */
static const void *at(const void *p, size_t i, size_t es) { return (const char *)p + i * es; }
static void *at_w(void *p, size_t i, size_t es) { return (char *)p + i * es; }

/* Row-major C_i = alpha op(A_i) op(B_i) + beta C_i for i < batch, X_i = X + i strideX; A and B of
 * type tab, C of type tc (fp32 throughout: cublasSgemmStridedBatched, as before 16-bit storage). */
static int gemm_batched(ptdp_cu_ctx *c, ptdp_dtype tab, ptdp_dtype tc, int ta, int tb, int M, int N, int K,
                        float alpha, const void *A, int lda, long long sa, const void *B, int ldb, long long sb,
                        float beta, void *C, int ldc, long long sc, int batch)
{
  ptdp_cu_gemm_cm g = ptdp_cu_gemm_map(ta, tb, M, N, K, lda, ldb, ldc);
  const cublasOperation_t oa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, ob = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (tab == PTDP_F32 && tc == PTDP_F32) {
    PTDP_CALL_CUBLAS(cublasSgemmStridedBatched(c->blas, oa, ob, g.m, g.n, g.k, &alpha, B, g.lda, sb, A, g.ldb, sa,
                                               &beta, C, g.ldc, sc, batch));
    return PTDP_OK;
  }
  const cudaDataType dab = ptdp_cu_data_type(tab), dc = ptdp_cu_data_type(tc);
  PTDP_CALL_CUBLAS(cublasGemmStridedBatchedEx(c->blas, oa, ob, g.m, g.n, g.k, &alpha, B, dab, g.lda, sb, A, dab,
                                              g.ldb, sa, &beta, C, dc, g.ldc, sc, batch, CUBLAS_COMPUTE_32F,
                                              CUBLAS_GEMM_DEFAULT));
  return PTDP_OK;
}

int ptdp_cu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                              uint8_t *mask, float *probs_drop, float *ctx)
{
  ptdp_cu_ctx *c = be->ctx;
  const ptdp_dtype t = c->t;
  const size_t es = ptdp_dtype_size(t);
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, ld = b * 3 * hl;
  const long long ss = (long long)s * s;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
  float *scores = NULL; /* fp32 S of one sample: in probs (fp32), else the scratch */
  if (t != PTDP_F32) PTDP_CALL(ptdp_cu_scratch(be, (size_t)al * ss, &scores));
  for (int bi = 0; bi < b; bi++) {
    const void *Q = at(qkv, (size_t)bi * 3 * hl, es), *K = at(Q, (size_t)hd, es), *V = at(Q, 2 * (size_t)hd, es);
    float *S = t == PTDP_F32 ? probs + (size_t)bi * al * ss : scores;
    PTDP_CALL(gemm_batched(c, t, PTDP_F32, 0, 1, s, s, hd, scale, Q, ld, 3 * hd, K, ld, 3 * hd, 0.0f, S, s, ss, al));
    PTDP_CALL_CUDA(ptdp_cuk_softmax_forward(c->stream, t, d, bi, 1, S, probs, mask, probs_drop));
    const void *Pd = at(drop ? probs_drop : probs, (size_t)bi * al * ss, es);
    void *C = at_w(ctx, (size_t)bi * hl, es);
    PTDP_CALL(gemm_batched(c, t, t, 0, 0, s, hd, s, 1.0f, Pd, s, ss, V, ld, 3 * hd, 0.0f, C, b * hl, hd, al));
  }
  return PTDP_OK;
}

int ptdp_cu_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                               const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                               float *scratch)
{
  ptdp_cu_ctx *c = be->ctx;
  const ptdp_dtype t = c->t;
  const size_t es = ptdp_dtype_size(t);
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, ld = b * 3 * hl;
  const long long ss = (long long)s * s;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
  /* dPd (fp32) then, in 16-bit storage, dS (al s s elements of es bytes: al s s es / 4 floats) */
  const size_t n_dp = (size_t)al * ss, n_ds = t == PTDP_F32 ? 0 : (n_dp * es + 3) / 4;
  float *dP = NULL;
  (void)scratch; /* the caller's scratch holds one pair only */
  PTDP_CALL(ptdp_cu_scratch(be, n_dp + n_ds, &dP));
  void *dS = t == PTDP_F32 ? (void *)dP : (void *)(dP + n_dp);
  for (int bi = 0; bi < b; bi++) {
    const size_t q0 = (size_t)bi * 3 * hl;
    const void *Q = at(qkv, q0, es), *K = at(Q, (size_t)hd, es), *V = at(Q, 2 * (size_t)hd, es);
    void *dQ = at_w(dqkv, q0, es), *dK = at_w(dQ, (size_t)hd, es), *dV = at_w(dQ, 2 * (size_t)hd, es);
    const void *Pd = at(drop ? probs_drop : probs, (size_t)bi * al * ss, es);
    const void *dC = at(dctx, (size_t)bi * hl, es);
    /* dPd = dC V^T  [s, s] per head, fp32 */
    PTDP_CALL(gemm_batched(c, t, PTDP_F32, 0, 1, s, s, hd, 1.0f, dC, b * hl, hd, V, ld, 3 * hd, 0.0f, dP, s, ss, al));
    PTDP_CALL_CUDA(ptdp_cuk_softmax_backward(c->stream, t, d, bi, probs, mask, dP, dS));
    PTDP_CALL(gemm_batched(c, t, t, 0, 0, s, hd, s, scale, dS, s, ss, K, ld, 3 * hd, 0.0f, dQ, ld, 3 * hd, al));
    PTDP_CALL(gemm_batched(c, t, t, 1, 0, s, hd, s, scale, dS, s, ss, Q, ld, 3 * hd, 0.0f, dK, ld, 3 * hd, al));
    PTDP_CALL(gemm_batched(c, t, t, 1, 0, s, hd, s, 1.0f, Pd, s, ss, dC, b * hl, hd, 0.0f, dV, ld, 3 * hd, al));
  }
  return PTDP_OK;
}
