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
 * Grouped-query attention (d->groups: rows [groups][al/groups queries, key, value][hd]): the
 * products run once per query head of a group, batched over the groups (qkv_layout below), and
 * a group's dK and dV sum its heads' terms (in fp32: in 16-bit storage through fp32 sums stored
 * once, cuda_llama.cu's group store).  Without groups this is one batch of every head, the
 * products and their order as before groups.
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
 * Run on a GPU (NVIDIA H200, 2026-11-26): test_ops and test_cuda_model pass; see ptdp-gpu(7). */
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

/* Where a token row's parts lie (ptdp/backend.h): [groups][hpg queries, key, value][hd], hpg =
 * al / groups query heads per group (without grouped-query attention groups = al, hpg = 1: the
 * [al][3][hd] rows).  Query head h = g hpg + j of group g is at (g (hpg + 2) + j) hd, its key at
 * (g (hpg + 2) + hpg) hd, its value one hd further.  The products run as one batch of the groups
 * per j: heads j, hpg + j, 2 hpg + j... lie gs = (hpg + 2) hd apart in the rows, hpg s s apart in
 * probs and hpg hd apart in ctx, so hpg = 1 is one batch of every head, as before groups. */
typedef struct {
  int G, hpg, w;     /* groups, query heads per group, a token row's width (al + 2 G) hd */
  long long ld, gs;  /* the qkv row stride b w; the stride between groups in a row */
} qkv_layout;

static qkv_layout layout_of(const ptdp_attn_desc *d)
{
  qkv_layout l;
  l.G = d->groups > 0 ? d->groups : d->al;
  l.hpg = d->al / l.G;
  l.w = (d->al + 2 * l.G) * d->hd;
  l.ld = (long long)d->b * l.w;
  l.gs = (long long)(l.hpg + 2) * d->hd;
  return l;
}

int ptdp_cu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                              uint8_t *mask, float *probs_drop, float *ctx)
{
  ptdp_cu_ctx *c = be->ctx;
  const ptdp_dtype t = c->t;
  const size_t es = ptdp_dtype_size(t);
  const qkv_layout l = layout_of(d);
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, ld = (int)l.ld, gs = (int)l.gs;
  const long long ss = (long long)s * s;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
  float *scores = NULL; /* fp32 S of one sample: in probs (fp32), else the scratch */
  if (t != PTDP_F32) PTDP_CALL(ptdp_cu_scratch(be, (size_t)al * ss, &scores));
  for (int bi = 0; bi < b; bi++) {
    const void *row = at(qkv, (size_t)bi * l.w, es);
    const void *K = at(row, (size_t)l.hpg * hd, es), *V = at(row, (size_t)(l.hpg + 1) * hd, es);
    float *S = t == PTDP_F32 ? probs + (size_t)bi * al * ss : scores;
    for (int j = 0; j < l.hpg; j++)
      PTDP_CALL(gemm_batched(c, t, PTDP_F32, 0, 1, s, s, hd, scale, at(row, (size_t)j * hd, es), ld, gs, K, ld, gs,
                             0.0f, S + j * ss, s, l.hpg * ss, l.G));
    PTDP_CALL_CUDA(ptdp_cuk_softmax_forward(c->stream, t, d, bi, 1, S, probs, mask, probs_drop));
    const void *Pd = at(drop ? probs_drop : probs, (size_t)bi * al * ss, es);
    void *C = at_w(ctx, (size_t)bi * hl, es);
    for (int j = 0; j < l.hpg; j++)
      PTDP_CALL(gemm_batched(c, t, t, 0, 0, s, hd, s, 1.0f, at(Pd, (size_t)j * ss, es), s, l.hpg * ss, V, ld, gs,
                             0.0f, at_w(C, (size_t)j * hd, es), b * hl, (long long)l.hpg * hd, l.G));
  }
  return PTDP_OK;
}

/* dK and dV of one sample: dK_g = sum_j dS_j^T Q_j scale, dV_g = sum_j Pd_j^T dC_j over the
 * group's query heads j.  One head per group (hpg = 1) writes them at once; a group of several
 * adds its heads in order (j = 0 writes), into the fp32 rows in place, or in 16-bit storage into
 * fp32 sums kv32 [2][G][s][hd] stored once at the end (one rounding, as the wrapper's fp32 sum
 * then its store). */
static int kv_grads(ptdp_cu_ctx *c, const ptdp_attn_desc *d, const qkv_layout *l, const void *row, const void *dS,
                    const void *Pd, const void *dC, void *drow, float *kv32)
{
  const ptdp_dtype t = c->t;
  const size_t es = ptdp_dtype_size(t);
  const int s = d->s, hd = d->hd, hl = d->al * hd, ldc = d->b * hl, ld = (int)l->ld, gs = (int)l->gs;
  const long long ss = (long long)s * s, sh = (long long)s * hd;
  const float scale = 1.0f / sqrtf((float)hd);
  void *dK = at_w(drow, (size_t)l->hpg * hd, es), *dV = at_w(drow, (size_t)(l->hpg + 1) * hd, es);
  const int sum32 = l->hpg > 1 && t != PTDP_F32;
  for (int j = 0; j < l->hpg; j++) {
    const float beta = j == 0 ? 0.0f : 1.0f;
    const void *dSj = at(dS, (size_t)j * ss, es), *Pdj = at(Pd, (size_t)j * ss, es);
    const void *Qj = at(row, (size_t)j * hd, es), *dCj = at(dC, (size_t)j * hd, es);
    if (sum32) {
      PTDP_CALL(gemm_batched(c, t, PTDP_F32, 1, 0, s, hd, s, scale, dSj, s, l->hpg * ss, Qj, ld, gs, beta, kv32, hd,
                             sh, l->G));
      PTDP_CALL(gemm_batched(c, t, PTDP_F32, 1, 0, s, hd, s, 1.0f, Pdj, s, l->hpg * ss, dCj, ldc,
                             (long long)l->hpg * hd, beta, kv32 + l->G * sh, hd, sh, l->G));
    } else {
      PTDP_CALL(gemm_batched(c, t, t, 1, 0, s, hd, s, scale, dSj, s, l->hpg * ss, Qj, ld, gs, beta, dK, ld, gs, l->G));
      PTDP_CALL(gemm_batched(c, t, t, 1, 0, s, hd, s, 1.0f, Pdj, s, l->hpg * ss, dCj, ldc, (long long)l->hpg * hd,
                             beta, dV, ld, gs, l->G));
    }
  }
  if (sum32) {
    PTDP_CALL_CUDA(ptdp_cuk_group_store(c->stream, t, kv32, dK, l->G, s, hd, l->ld, l->gs));
    PTDP_CALL_CUDA(ptdp_cuk_group_store(c->stream, t, kv32 + l->G * sh, dV, l->G, s, hd, l->ld, l->gs));
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
  const qkv_layout l = layout_of(d);
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, ld = (int)l.ld, gs = (int)l.gs;
  const long long ss = (long long)s * s;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
  /* dPd (fp32) then, in 16-bit storage, dS (al s s elements of es bytes: al s s es / 4 floats)
   * and, with grouped queries, the fp32 sums of dK and dV (2 G s hd) */
  const size_t n_dp = (size_t)al * ss, n_ds = t == PTDP_F32 ? 0 : (n_dp * es + 3) / 4;
  const size_t n_kv = t != PTDP_F32 && l.hpg > 1 ? 2 * (size_t)l.G * s * hd : 0;
  float *dP = NULL;
  (void)scratch; /* the caller's scratch holds one pair only */
  PTDP_CALL(ptdp_cu_scratch(be, n_dp + n_ds + n_kv, &dP));
  void *dS = t == PTDP_F32 ? (void *)dP : (void *)(dP + n_dp);
  float *kv32 = n_kv ? dP + n_dp + n_ds : NULL;
  for (int bi = 0; bi < b; bi++) {
    const void *row = at(qkv, (size_t)bi * l.w, es);
    const void *K = at(row, (size_t)l.hpg * hd, es), *V = at(row, (size_t)(l.hpg + 1) * hd, es);
    void *drow = at_w(dqkv, (size_t)bi * l.w, es);
    const void *Pd = at(drop ? probs_drop : probs, (size_t)bi * al * ss, es);
    const void *dC = at(dctx, (size_t)bi * hl, es);
    /* dPd = dC V^T  [s, s] per head, fp32 */
    for (int j = 0; j < l.hpg; j++)
      PTDP_CALL(gemm_batched(c, t, PTDP_F32, 0, 1, s, s, hd, 1.0f, at(dC, (size_t)j * hd, es), b * hl,
                             (long long)l.hpg * hd, V, ld, gs, 0.0f, dP + j * ss, s, l.hpg * ss, l.G));
    PTDP_CALL_CUDA(ptdp_cuk_softmax_backward(c->stream, t, d, bi, probs, mask, dP, dS));
    /* dQ = dS K scale, each query head from its group's key */
    for (int j = 0; j < l.hpg; j++)
      PTDP_CALL(gemm_batched(c, t, t, 0, 0, s, hd, s, scale, at(dS, (size_t)j * ss, es), s, l.hpg * ss, K, ld, gs,
                             0.0f, at_w(drow, (size_t)j * hd, es), ld, gs, l.G));
    PTDP_CALL(kv_grads(c, d, &l, row, dS, Pd, dC, drow, kv32));
  }
  return PTDP_OK;
}
