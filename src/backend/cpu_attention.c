/* CPU attention core: for each (sample, local head), S = Q K^T / sqrt(hd) with a causal mask,
 * P = softmax(S), Pd = dropout(P), ctx = Pd V; and the backward pass.  Q, K, V are read in place
 * from the fused qkv rows [N, al, 3, hd] with row stride b 3 hl, so no copies are made.
 *
 * Parallel over the b al (sample, head) pairs, one pair per OpenMP thread with single-threaded
 * BLAS inside: each pair's products are small (s x s x hd), too small to split well.  Causality
 * is used to skip work: rows are taken in blocks of ATTN_BLOCK, and block [q0, q1) of queries
 * only meets keys [0, q1), so about half of each s x s product is never computed (entries above
 * the diagonal are zero in P and dS; probs are still written in full, zeros included). */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/rng.h"

#include "cpu_math.h"

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_BLOCK 128

float *ptdp_cpu_scratch(ptdp_backend *be, size_t n);

static void gemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float *C, int ldc)
{
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, 0.0f, C, ldc);
}

/* Softmax of the causal row q of S (columns 0..q), zeros after; dropout with keys of row q. */
static void softmax_dropout_row(const ptdp_attn_desc *d, int bi, int head, int q, float *row, uint8_t *mr, float *pr)
{
  const int s = d->s;
  const float p = d->drop.p, keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
  float m = -INFINITY, sum = 0.0f;
  for (int k = 0; k <= q; k++) m = row[k] > m ? row[k] : m;
#pragma omp simd reduction(+ : sum)
  for (int k = 0; k <= q; k++) {
    row[k] = ptdp_cpu_expf(row[k] - m);
    sum += row[k];
  }
  float inv = 1.0f / sum;
#pragma omp simd
  for (int k = 0; k <= q; k++) row[k] *= inv;
  for (int k = q + 1; k < s; k++) row[k] = 0.0f;
  if (p > 0) {
    uint64_t rh = ptdp_rng_row(d->drop.seed, d->drop.site, d->drop.layer, (uint64_t)(d->drop.sample0 + bi),
                               (uint64_t)((d->head0 + head) * s + q));
    for (int k = 0; k < s; k++) {
      uint8_t keep = k <= q && ptdp_rng_uniform(ptdp_rng_at(rh, (uint64_t)k)) >= p;
      mr[k] = keep;
      pr[k] = keep ? row[k] * keep_scale : 0.0f;
    }
  }
}

int ptdp_cpu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                               uint8_t *mask, float *probs_drop, float *ctx)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd;
  const int ld = b * 3 * hl;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (int t = 0; t < b * al; t++) {
    const int bi = t / al, hh = t % al;
    const float *Q = qkv + (size_t)bi * 3 * hl + (size_t)hh * 3 * hd, *K = Q + hd, *V = Q + 2 * hd;
    size_t off = ((size_t)bi * al + hh) * (size_t)s * s;
    float *S = probs + off, *Pd = drop ? probs_drop + off : S;
    float *C = ctx + (size_t)bi * hl + (size_t)hh * hd;
    for (int q0 = 0; q0 < s; q0 += ATTN_BLOCK) {
      const int q1 = q0 + ATTN_BLOCK < s ? q0 + ATTN_BLOCK : s;
      /* S[q0:q1, 0:q1] = Q[q0:q1] K[0:q1]^T scale */
      gemm1(0, 1, q1 - q0, q1, hd, scale, Q + (size_t)q0 * ld, ld, K, ld, S + (size_t)q0 * s, s);
      for (int q = q0; q < q1; q++)
        softmax_dropout_row(d, bi, hh, q, S + (size_t)q * s, drop ? mask + off + (size_t)q * s : NULL,
                            drop ? Pd + (size_t)q * s : NULL);
      /* ctx[q0:q1] = Pd[q0:q1, 0:q1] V[0:q1] */
      gemm1(0, 0, q1 - q0, hd, q1, 1.0f, Pd + (size_t)q0 * s, s, V, ld, C + (size_t)q0 * b * hl, b * hl);
    }
  }
  return 0;
}

int ptdp_cpu_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                                const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                                float *scratch)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd;
  const int ld = b * 3 * hl;
  const float scale = 1.0f / sqrtf((float)hd);
  const float p = d->drop.p, keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
  /* dS of one pair is s x s; the caller's scratch holds one, so each thread takes its own */
  int nt = 1;
#ifdef _OPENMP
  nt = omp_get_max_threads();
#endif
  float *work = nt > 1 ? ptdp_cpu_scratch(be, (size_t)nt * s * s) : scratch;
  if (!work) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for attention scratch");
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (int t = 0; t < b * al; t++) {
    const int bi = t / al, hh = t % al;
    int me = 0;
#ifdef _OPENMP
    me = omp_get_thread_num();
#endif
    size_t qoff = (size_t)bi * 3 * hl + (size_t)hh * 3 * hd;
    const float *Q = qkv + qoff, *K = Q + hd, *V = Q + 2 * hd;
    float *dQ = dqkv + qoff, *dK = dQ + hd, *dV = dQ + 2 * hd;
    size_t off = ((size_t)bi * al + hh) * (size_t)s * s;
    const float *P = probs + off, *Pd = p > 0 ? probs_drop + off : P;
    const float *dC = dctx + (size_t)bi * hl + (size_t)hh * hd;
    float *dP = work + (size_t)me * s * s;
    for (int q0 = 0; q0 < s; q0 += ATTN_BLOCK) {
      const int q1 = q0 + ATTN_BLOCK < s ? q0 + ATTN_BLOCK : s;
      /* dPd[q0:q1, 0:q1] = dC[q0:q1] V[0:q1]^T */
      gemm1(0, 1, q1 - q0, q1, hd, 1.0f, dC + (size_t)q0 * b * hl, b * hl, V, ld, dP + (size_t)q0 * s, s);
      /* through dropout and softmax: dS = P (dP - sum_k dP P) */
      for (int q = q0; q < q1; q++) {
        float *dr = dP + (size_t)q * s;
        const float *pr = P + (size_t)q * s;
        if (p > 0) {
          const uint8_t *mr = mask + off + (size_t)q * s;
          for (int k = 0; k <= q; k++) dr[k] = mr[k] ? dr[k] * keep_scale : 0.0f;
        }
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int k = 0; k <= q; k++) dot += dr[k] * pr[k];
#pragma omp simd
        for (int k = 0; k <= q; k++) dr[k] = pr[k] * (dr[k] - dot);
        for (int k = q + 1; k < q1; k++) dr[k] = 0.0f;
      }
      /* dQ[q0:q1] = dS[q0:q1, 0:q1] K[0:q1] scale */
      gemm1(0, 0, q1 - q0, hd, q1, scale, dP + (size_t)q0 * s, s, K, ld, dQ + (size_t)q0 * ld, ld);
    }
    for (int k0 = 0; k0 < s; k0 += ATTN_BLOCK) {
      const int k1 = k0 + ATTN_BLOCK < s ? k0 + ATTN_BLOCK : s;
      /* keys [k0, k1) meet queries [k0, s): dV = Pd^T dC ; dK = dS^T Q scale */
      gemm1(1, 0, k1 - k0, hd, s - k0, 1.0f, Pd + (size_t)k0 * s + k0, s, dC + (size_t)k0 * b * hl, b * hl,
            dV + (size_t)k0 * ld, ld);
      gemm1(1, 0, k1 - k0, hd, s - k0, scale, dP + (size_t)k0 * s + k0, s, Q + (size_t)k0 * ld, ld,
            dK + (size_t)k0 * ld, ld);
    }
  }
  return 0;
}
