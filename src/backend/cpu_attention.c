/* CPU attention core: for each (sample, local head), S = Q K^T / sqrt(hd) with a causal mask,
 * P = softmax(S), Pd = dropout(P), ctx = Pd V; and the backward pass.  Q, K, V are read in place
 * from the fused qkv rows [N, al, 3, hd] with row stride b 3 hl, so no copies are made. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Softmax of the causal row q (columns 0..q), zeros after; dropout with keys of row q. */
static void softmax_dropout_rows(const ptdp_attn_desc *d, int bi, int head, float *S, uint8_t *mask, float *Pd)
{
  const int s = d->s;
  const float p = d->drop.p, keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
#pragma omp parallel for schedule(static)
  for (int q = 0; q < s; q++) {
    float *row = S + (size_t)q * s;
    float m = -INFINITY, sum = 0.0f;
    for (int k = 0; k <= q; k++) m = row[k] > m ? row[k] : m;
    for (int k = 0; k <= q; k++) {
      row[k] = expf(row[k] - m);
      sum += row[k];
    }
    float inv = 1.0f / sum;
    for (int k = 0; k <= q; k++) row[k] *= inv;
    for (int k = q + 1; k < s; k++) row[k] = 0.0f;
    if (p > 0) {
      uint64_t rh = ptdp_rng_row(d->drop.seed, d->drop.site, d->drop.layer, (uint64_t)(d->drop.sample0 + bi),
                                 (uint64_t)((d->head0 + head) * s + q));
      uint8_t *mr = mask + (size_t)q * s;
      float *pr = Pd + (size_t)q * s;
      for (int k = 0; k < s; k++) {
        uint8_t keep = k <= q && ptdp_rng_uniform(ptdp_rng_at(rh, (uint64_t)k)) >= p;
        mr[k] = keep;
        pr[k] = keep ? row[k] * keep_scale : 0.0f;
      }
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
  for (int bi = 0; bi < b; bi++)
    for (int hh = 0; hh < al; hh++) {
      const float *Q = qkv + (size_t)bi * 3 * hl + (size_t)hh * 3 * hd, *K = Q + hd, *V = Q + 2 * hd;
      size_t off = ((size_t)bi * al + hh) * (size_t)s * s;
      float *S = probs + off, *Pd = drop ? probs_drop + off : S;
      PTDP_CALL(be->gemm(be, 0, 1, s, s, hd, scale, Q, ld, K, ld, 0.0f, S, s));
      softmax_dropout_rows(d, bi, hh, S, drop ? mask + off : NULL, Pd);
      PTDP_CALL(be->gemm(be, 0, 0, s, hd, s, 1.0f, Pd, s, V, ld, 0.0f, ctx + (size_t)bi * hl + (size_t)hh * hd, b * hl));
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
  for (int bi = 0; bi < b; bi++)
    for (int hh = 0; hh < al; hh++) {
      size_t qoff = (size_t)bi * 3 * hl + (size_t)hh * 3 * hd;
      const float *Q = qkv + qoff, *K = Q + hd, *V = Q + 2 * hd;
      float *dQ = dqkv + qoff, *dK = dQ + hd, *dV = dQ + 2 * hd;
      size_t off = ((size_t)bi * al + hh) * (size_t)s * s;
      const float *P = probs + off, *Pd = p > 0 ? probs_drop + off : P;
      const float *dC = dctx + (size_t)bi * hl + (size_t)hh * hd;
      float *dP = scratch;
      /* dPd = dC V^T ; dV = Pd^T dC */
      PTDP_CALL(be->gemm(be, 0, 1, s, s, hd, 1.0f, dC, b * hl, V, ld, 0.0f, dP, s));
      PTDP_CALL(be->gemm(be, 1, 0, s, hd, s, 1.0f, Pd, s, dC, b * hl, 0.0f, dV, ld));
      /* through dropout and softmax: dS = P (dP - sum_k dP P) */
#pragma omp parallel for schedule(static)
      for (int q = 0; q < s; q++) {
        float *dr = dP + (size_t)q * s;
        const float *pr = P + (size_t)q * s;
        if (p > 0) {
          const uint8_t *mr = mask + off + (size_t)q * s;
          for (int k = 0; k <= q; k++) dr[k] = mr[k] ? dr[k] * keep_scale : 0.0f;
        }
        float dot = 0.0f;
        for (int k = 0; k <= q; k++) dot += dr[k] * pr[k];
        for (int k = 0; k <= q; k++) dr[k] = pr[k] * (dr[k] - dot);
        for (int k = q + 1; k < s; k++) dr[k] = 0.0f;
      }
      /* dQ = dS K scale ; dK = dS^T Q scale */
      PTDP_CALL(be->gemm(be, 0, 0, s, hd, s, scale, dP, s, K, ld, 0.0f, dQ, ld));
      PTDP_CALL(be->gemm(be, 1, 0, s, hd, s, scale, dP, s, Q, ld, 0.0f, dK, ld));
    }
  return 0;
}
