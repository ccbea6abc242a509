/* Unfused attention of the CUDA backend (the reference path; see cpu_attention.c for the
 * formulas).  Per sample bi, the al local heads are one strided-batched cuBLAS product each
 * (fp32, no TF32): a head's Q, K, V sit at stride 3 hd in the fused qkv rows [N, al, 3, hd]
 * (row stride ld = b 3 hl), its S, P, Pd at stride s s in [b, al, s, s], its ctx at stride hd
 * in [N, hl] (row stride b hl).  Softmax and dropout are kernels (cuda_softmax.cu).
 *     forward:  S = Q K^T / sqrt(hd);  P, Pd = softmax, dropout;  ctx = Pd V
 *     backward: dPd = dC V^T;  dS (kernel);  dQ = dS K / sqrt(hd);  dK = dS^T Q / sqrt(hd);
 *               dV = Pd^T dC
 * The whole s x s product is computed (the upper triangle is zero in P and dS), so this path
 * does twice the necessary work: the fused kernel is what skips it.  dS of one sample, al s s
 * floats, lives in the backend's scratch, reused sample after sample (stream order).
 * NOT YET RUN ON A GPU: see README, "GPUs". */
#include "cuda_gemm_map.h"
#include "cuda_internal.h"

#include "ptdp/error.h"
#include "ptdp/error_gpu.h"

#include <math.h>

/* Row-major C_i = alpha op(A_i) op(B_i) + beta C_i for i < batch, X_i = X + i strideX. */
static int gemm_batched(ptdp_cu_ctx *c, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                        long long sa, const float *B, int ldb, long long sb, float beta, float *C, int ldc,
                        long long sc, int batch)
{
  ptdp_cu_gemm_cm g = ptdp_cu_gemm_map(ta, tb, M, N, K, lda, ldb, ldc);
  PTDP_CALL_CUBLAS(cublasSgemmStridedBatched(c->blas, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                             g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha, B, g.lda,
                                             sb, A, g.ldb, sa, &beta, C, g.ldc, sc, batch));
  return PTDP_OK;
}

int ptdp_cu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                              uint8_t *mask, float *probs_drop, float *ctx)
{
  ptdp_cu_ctx *c = be->ctx;
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, ld = b * 3 * hl;
  const long long ss = (long long)s * s;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
  for (int bi = 0; bi < b; bi++) {
    const float *Q = qkv + (size_t)bi * 3 * hl, *K = Q + hd;
    float *S = probs + (size_t)bi * al * ss;
    PTDP_CALL(gemm_batched(c, 0, 1, s, s, hd, scale, Q, ld, 3 * hd, K, ld, 3 * hd, 0.0f, S, s, ss, al));
  }
  PTDP_CALL_CUDA(ptdp_cuk_softmax_forward(c->stream, d, probs, mask, probs_drop));
  for (int bi = 0; bi < b; bi++) {
    const float *V = qkv + (size_t)bi * 3 * hl + 2 * hd;
    const float *Pd = (drop ? probs_drop : probs) + (size_t)bi * al * ss;
    float *C = ctx + (size_t)bi * hl;
    PTDP_CALL(gemm_batched(c, 0, 0, s, hd, s, 1.0f, Pd, s, ss, V, ld, 3 * hd, 0.0f, C, b * hl, hd, al));
  }
  return PTDP_OK;
}

int ptdp_cu_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                               const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                               float *scratch)
{
  ptdp_cu_ctx *c = be->ctx;
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, ld = b * 3 * hl;
  const long long ss = (long long)s * s;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
  float *dS = NULL;
  PTDP_CALL(ptdp_cu_scratch(be, (size_t)al * ss, &dS)); /* the caller's scratch holds one pair only */
  for (int bi = 0; bi < b; bi++) {
    const size_t q0 = (size_t)bi * 3 * hl;
    const float *Q = qkv + q0, *K = Q + hd, *V = Q + 2 * hd;
    float *dQ = dqkv + q0, *dK = dQ + hd, *dV = dQ + 2 * hd;
    const float *Pd = (drop ? probs_drop : probs) + (size_t)bi * al * ss;
    const float *dC = dctx + (size_t)bi * hl;
    /* dPd = dC V^T  [s, s] per head */
    PTDP_CALL(gemm_batched(c, 0, 1, s, s, hd, 1.0f, dC, b * hl, hd, V, ld, 3 * hd, 0.0f, dS, s, ss, al));
    PTDP_CALL_CUDA(ptdp_cuk_softmax_backward(c->stream, d, bi, probs, mask, dS));
    PTDP_CALL(gemm_batched(c, 0, 0, s, hd, s, scale, dS, s, ss, K, ld, 3 * hd, 0.0f, dQ, ld, 3 * hd, al));
    PTDP_CALL(gemm_batched(c, 1, 0, s, hd, s, scale, dS, s, ss, Q, ld, 3 * hd, 0.0f, dK, ld, 3 * hd, al));
    PTDP_CALL(gemm_batched(c, 1, 0, s, hd, s, 1.0f, Pd, s, ss, dC, b * hl, hd, 0.0f, dV, ld, 3 * hd, al));
  }
  return PTDP_OK;
}
