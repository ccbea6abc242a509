/* "ref": the operations of ptdp/backend.h the plain way, for the conformance suite (test_ops.c).
 *
 * Every sum and every formula is evaluated in double, in the obvious loop order, and rounded to
 * float once when stored, so each output is the exact result of the operation on its (float)
 * inputs to about 1e-15 relative, far below fp32's unit roundoff u = 2^-24 = 6e-8: what the
 * CPU backend's fp32 results are compared with.  Nothing is shared with the backends' code but
 * the dropout keys (ptdp/rng.h), which are the definition of the masks, and the conversions of
 * ptdp/half.h, which are the definition of convert's rounding.  The formulas are
 * written from their definitions, not copied from cpu.c: GELU by its tanh form
 * 0.5 x (1 + tanh u) (the backends use the sigmoid form x sigma(2u)), LayerNorm's variance by two
 * passes, the attention by whole s x s matrices (no causal blocks), grouped queries by each
 * head's place in the row, SwiGLU's derivative as that of a product.
 *
 * Shapes as in ptdp/backend.h.  Memory is the host's (calloc), so the suite reaches it with the
 * same to_device / to_host as any backend.  Slow (no BLAS, no threads): meant for test shapes. */
#include "test_ops.h"

#include "ptdp/error.h"
#include "ptdp/half.h"
#include "ptdp/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ref_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  *p = NULL;
  if (!bytes) return 0;
  *p = calloc(1, bytes);
  if (!*p) return PTDP_FAIL(PTDP_ERR_MEM, "ref: out of memory (%zu bytes)", bytes);
  return 0;
}

static void ref_free(ptdp_backend *be, void *p) { free(p); }

static int ref_memset0(ptdp_backend *be, void *p, size_t bytes)
{
  memset(p, 0, bytes);
  return 0;
}

static int ref_copy(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  memmove(dst, src, bytes);
  return 0;
}

static int ref_synchronize(ptdp_backend *be) { return 0; }
static void ref_destroy(ptdp_backend *be) {}

/* A scratch array of n doubles; NULL after pushing the error. */
static double *dalloc(size_t n)
{
  double *p = calloc(n ? n : 1, sizeof *p);
  if (!p) PTDP_FAIL(PTDP_ERR_MEM, "ref: out of memory (%zu doubles)", n);
  return p;
}

/* C = alpha op(A) op(B) + beta C; beta 0 ignores C (it may hold NaN), as BLAS does. */
static int ref_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc)
{
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) {
        double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        s += a * b;
      }
      float *c = C + (size_t)i * ldc + j;
      *c = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * *c));
    }
  return 0;
}

static int ref_layernorm_forward(ptdp_backend *be, const float *x, const float *w, const float *b, float *y,
                                 float *mean, float *rstd, long long rows, int h, float eps)
{
  for (long long r = 0; r < rows; r++) {
    const float *xr = x + r * h;
    double m = 0, v = 0;
    for (int i = 0; i < h; i++) m += xr[i];
    m /= h;
    for (int i = 0; i < h; i++) v += (xr[i] - m) * (xr[i] - m);
    double rs = 1.0 / sqrt(v / h + eps);
    for (int i = 0; i < h; i++) y[r * h + i] = (float)((xr[i] - m) * rs * w[i] + b[i]);
    mean[r] = (float)m;
    rstd[r] = (float)rs;
  }
  return 0;
}

/* With xhat = (x - mean) rstd and g = dy w (mean and rstd as given, from the forward pass):
 * dx = rstd (g - mean(g) - xhat mean(g xhat)), dw += sum_r dy xhat, db += sum_r dy. */
static int ref_layernorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w,
                                  const float *mean, const float *rstd, float *dx, float *dw, float *db, long long rows,
                                  int h)
{
  double *sw = dalloc((size_t)h), *sb = dalloc((size_t)h);
  if (!sw || !sb) {
    free(sw);
    free(sb);
    return PTDP_ERR_MEM;
  }
  for (long long r = 0; r < rows; r++) {
    const double m = mean[r], rs = rstd[r];
    double mg = 0, mgx = 0;
    for (int i = 0; i < h; i++) {
      double xh = (x[r * h + i] - m) * rs, g = (double)dy[r * h + i] * w[i];
      mg += g / h;
      mgx += g * xh / h;
      sw[i] += dy[r * h + i] * xh;
      sb[i] += dy[r * h + i];
    }
    for (int i = 0; i < h; i++) {
      double xh = (x[r * h + i] - m) * rs;
      dx[r * h + i] = (float)(rs * ((double)dy[r * h + i] * w[i] - mg - xh * mgx));
    }
  }
  for (int i = 0; i < h; i++) {
    dw[i] = (float)(dw[i] + sw[i]);
    db[i] = (float)(db[i] + sb[i]);
  }
  free(sw);
  free(sb);
  return 0;
}

/* RMSNorm: rstd = 1 / sqrt(mean(x^2) + eps), y = x rstd w; with xhat = x rstd and g = dy w
 * (rstd as given): dx = rstd (g - xhat mean(g xhat)), dw += sum_r dy xhat. */
static int ref_rmsnorm_forward(ptdp_backend *be, const float *x, const float *w, float *y, float *rstd, long long rows,
                               int h, float eps)
{
  for (long long r = 0; r < rows; r++) {
    const float *xr = x + r * h;
    double ms = 0;
    for (int i = 0; i < h; i++) ms += (double)xr[i] * xr[i];
    const double rs = 1.0 / sqrt(ms / h + eps);
    for (int i = 0; i < h; i++) y[r * h + i] = (float)(xr[i] * rs * w[i]);
    rstd[r] = (float)rs;
  }
  return 0;
}

static int ref_rmsnorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                                float *dx, float *dw, long long rows, int h)
{
  double *sw = dalloc((size_t)h);
  if (!sw) return PTDP_ERR_MEM;
  for (long long r = 0; r < rows; r++) {
    const double rs = rstd[r];
    double mgx = 0;
    for (int i = 0; i < h; i++) mgx += (double)dy[r * h + i] * w[i] * (x[r * h + i] * rs) / h;
    for (int i = 0; i < h; i++) {
      const double xh = x[r * h + i] * rs;
      dx[r * h + i] = (float)(rs * ((double)dy[r * h + i] * w[i] - xh * mgx));
      sw[i] += dy[r * h + i] * xh;
    }
  }
  for (int i = 0; i < h; i++) dw[i] = (float)(dw[i] + sw[i]);
  free(sw);
  return 0;
}

/* SwiGLU from its definition: rows [g (f) | u (f)], y = silu(g) u with silu(g) = g / (1 + e^-g);
 * dg = dy u silu'(g), silu'(g) = sigma(g) + g sigma(g) (1 - sigma(g)) (the derivative of the
 * product, not the backends' factored form), du = dy silu(g). */
static int ref_swiglu_forward(ptdp_backend *be, const float *x, float *y, long long rows, int f)
{
  for (long long r = 0; r < rows; r++)
    for (int i = 0; i < f; i++) {
      const double g = x[r * 2 * f + i], u = x[r * 2 * f + f + i];
      y[r * f + i] = (float)(g / (1.0 + exp(-g)) * u);
    }
  return 0;
}

static int ref_swiglu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, long long rows, int f)
{
  for (long long r = 0; r < rows; r++)
    for (int i = 0; i < f; i++) {
      const double g = x[r * 2 * f + i], u = x[r * 2 * f + f + i], d = dy[r * f + i];
      const double sg = 1.0 / (1.0 + exp(-g));
      dx[r * 2 * f + i] = (float)(d * u * (sg + g * sg * (1.0 - sg)));
      dx[r * 2 * f + f + i] = (float)(d * g * sg);
    }
  return 0;
}

/* RoPE from ptdp/backend.h's words: of row r (position pos0 + r / b), group g's first
 * heads_per_group + 1 heads (its queries and its key), pair k of the first rd entries, (k, k + rd/2)
 * or (2k, 2k + 1) when interleaved, turns by the angle whose cosine and sine are the table's
 * [position][k][0, 1]; the inverse by minus that angle. */
static int ref_rope(ptdp_backend *be, float *qkv, const ptdp_rope_desc *d, const float *table, int inverse)
{
  const int half = d->rd / 2;
  for (long long r = 0; r < d->rows; r++)
    for (int g = 0; g < d->groups; g++)
      for (int j = 0; j <= d->heads_per_group; j++) {
        float *x = qkv + r * d->ld + ((long long)g * (d->heads_per_group + 2) + j) * d->hd;
        for (int k = 0; k < half; k++) {
          const float *cs = table + ((d->pos0 + r / d->b) * half + k) * 2;
          const double c = cs[0], sn = inverse ? -(double)cs[1] : cs[1];
          float *a = x + (d->interleaved ? 2 * k : k), *b = x + (d->interleaved ? 2 * k + 1 : k + half);
          const double xa = *a, xb = *b;
          *a = (float)(xa * c - xb * sn);
          *b = (float)(xb * c + xa * sn);
        }
      }
  return 0;
}

/* GELU's tanh form: gelu(x) = x (1 + tanh u) / 2, u = sqrt(2/pi) (x + 0.044715 x^3);
 * gelu'(x) = (1 + tanh u) / 2 + x (1 - tanh^2 u) / 2 du/dx. */
static int ref_gelu_forward(ptdp_backend *be, const float *x, float *y, size_t n)
{
  const double k = sqrt(2.0 / M_PI);
  for (size_t i = 0; i < n; i++) {
    double v = x[i];
    y[i] = (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
  }
  return 0;
}

static int ref_gelu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, size_t n)
{
  const double k = sqrt(2.0 / M_PI);
  for (size_t i = 0; i < n; i++) {
    double v = x[i], t = tanh(k * (v + 0.044715 * v * v * v));
    double d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * v * v);
    dx[i] = (float)(dy[i] * d);
  }
  return 0;
}

static int ref_bias_forward(ptdp_backend *be, float *y, const float *b, long long rows, int cols)
{
  for (long long r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) y[r * cols + c] = (float)((double)y[r * cols + c] + b[c]);
  return 0;
}

static int ref_bias_backward(ptdp_backend *be, const float *dy, float *db, long long rows, int cols)
{
  for (int c = 0; c < cols; c++) {
    double s = db[c];
    for (long long r = 0; r < rows; r++) s += dy[r * cols + c];
    db[c] = (float)s;
  }
  return 0;
}

static int ref_add(ptdp_backend *be, float *y, const float *x, size_t n)
{
  for (size_t i = 0; i < n; i++) y[i] = (float)((double)y[i] + x[i]);
  return 0;
}

static int ref_scale(ptdp_backend *be, float *y, float a, size_t n)
{
  for (size_t i = 0; i < n; i++) y[i] = (float)((double)y[i] * a);
  return 0;
}

/* The mask bit of element (r, c), from the key's definition in ptdp/backend.h. */
static int keep_bit(const ptdp_dropout_key *k, long long r, int c)
{
  long long R = k->row0 + r, sample = k->sample0 + R % k->b, pos = R / k->b;
  uint64_t rh = ptdp_rng_row(k->seed, k->site, k->layer, (uint64_t)sample, (uint64_t)pos);
  return ptdp_rng_uniform(ptdp_rng_at(rh, (uint64_t)(k->col0 + c))) >= k->p;
}

static int ref_dropout_forward(ptdp_backend *be, float *x, uint8_t *mask, long long rows, int cols,
                               const ptdp_dropout_key *k)
{
  if (k->p <= 0.0f) return 0;
  for (long long r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      int keep = keep_bit(k, r, c);
      mask[r * cols + c] = (uint8_t)keep;
      x[r * cols + c] = keep ? (float)(x[r * cols + c] / (1.0 - k->p)) : 0.0f;
    }
  return 0;
}

static int ref_dropout_backward(ptdp_backend *be, float *dx, const uint8_t *mask, size_t n, float p)
{
  if (p <= 0.0f) return 0;
  for (size_t i = 0; i < n; i++) dx[i] = mask[i] ? (float)(dx[i] / (1.0 - p)) : 0.0f;
  return 0;
}

/* Where column j of query head `head`'s Q (part 0), K (1) or V (2) lies in token row t of the
 * fused qkv rows, N = s b rows ordered (pos, sample).  A row is [G][al/G queries, key, value][hd]
 * with G = groups (grouped-query attention: the al/G query heads of a group share its key and
 * value), G = al without it: [al][3][hd]. */
static size_t qkv_index(const ptdp_attn_desc *d, int bi, int head, int part, int t, int j)
{
  const int G = d->groups > 0 ? d->groups : d->al, per = d->al / G, g = head / per;
  const size_t width = (size_t)(d->al + 2 * G) * d->hd, row = (size_t)t * d->b + bi;
  const size_t slot = (size_t)g * (per + 2) + (part == 0 ? (size_t)(head % per) : (size_t)per + part - 1);
  return row * width + slot * d->hd + j;
}

static double qkv_at(const ptdp_attn_desc *d, const float *qkv, int bi, int head, int part, int t, int j)
{
  return qkv[qkv_index(d, bi, head, part, t, j)];
}

/* The attention-dropout mask bit of (sample bi, head, query q, key k): key as in
 * cpu_attention.c's documented layout (row (head0 + head) s + q of the sample's stream). */
static int attn_keep(const ptdp_attn_desc *d, int bi, int head, int q, int k)
{
  uint64_t rh = ptdp_rng_row(d->drop.seed, d->drop.site, d->drop.layer, (uint64_t)(d->drop.sample0 + bi),
                             (uint64_t)((d->head0 + head) * d->s + q));
  return k <= q && ptdp_rng_uniform(ptdp_rng_at(rh, (uint64_t)k)) >= d->drop.p;
}

/* One (sample, head): P = softmax(Q K^T / sqrt(hd)) over keys k <= q, zeros above; dropout. */
static void attn_probs(const ptdp_attn_desc *d, const float *qkv, int bi, int hh, double *P, double *Pd,
                       uint8_t *mask)
{
  const int s = d->s, hd = d->hd;
  const double p = d->drop.p, scale = 1.0 / sqrt((double)hd);
  for (int q = 0; q < s; q++) {
    double mx = -INFINITY, sum = 0;
    for (int k = 0; k < s; k++) {
      double dot = 0;
      for (int j = 0; j < hd && k <= q; j++) dot += qkv_at(d, qkv, bi, hh, 0, q, j) * qkv_at(d, qkv, bi, hh, 1, k, j);
      P[(size_t)q * s + k] = dot * scale;
      if (k <= q && dot * scale > mx) mx = dot * scale;
    }
    for (int k = 0; k <= q; k++) sum += exp(P[(size_t)q * s + k] - mx);
    for (int k = 0; k < s; k++) {
      double v = k <= q ? exp(P[(size_t)q * s + k] - mx) / sum : 0.0;
      int keep = p > 0 ? attn_keep(d, bi, hh, q, k) : 1;
      P[(size_t)q * s + k] = v;
      Pd[(size_t)q * s + k] = keep ? v / (1.0 - p) : 0.0;
      if (p > 0) mask[(size_t)q * s + k] = (uint8_t)keep;
    }
  }
}

static int ref_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                                 uint8_t *mask, float *probs_drop, float *ctx)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd;
  const size_t ss = (size_t)s * s;
  double *P = dalloc(ss), *Pd = dalloc(ss);
  if (!P || !Pd) {
    free(P);
    free(Pd);
    return PTDP_ERR_MEM;
  }
  for (int bi = 0; bi < b; bi++)
    for (int hh = 0; hh < al; hh++) {
      const size_t off = ((size_t)bi * al + hh) * ss;
      attn_probs(d, qkv, bi, hh, P, Pd, mask + off);
      for (size_t i = 0; i < ss; i++) {
        probs[off + i] = (float)P[i];
        if (d->drop.p > 0) probs_drop[off + i] = (float)Pd[i];
      }
      for (int q = 0; q < s; q++)
        for (int j = 0; j < hd; j++) {
          double c = 0;
          for (int k = 0; k < s; k++) c += Pd[(size_t)q * s + k] * qkv_at(d, qkv, bi, hh, 2, k, j);
          ctx[((size_t)q * b + bi) * al * hd + (size_t)hh * hd + j] = (float)c;
        }
    }
  free(P);
  free(Pd);
  return 0;
}

/* One (sample, head) of the backward pass from the stored (float) probs, mask and probs_drop:
 * dPd = dC V^T; dP = mask dPd / (1 - p); dS = P (dP - sum_k dP P); dQ = dS K / sqrt(hd);
 * dK = dS^T Q / sqrt(hd); dV = Pd^T dC. */
static void attn_backward_pair(const ptdp_attn_desc *d, const float *qkv, const float *P, const uint8_t *mask,
                               const float *Pd, const float *dctx, double *dqkv, int bi, int hh, double *dS)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd;
  const size_t hl = (size_t)al * hd;
  const double p = d->drop.p, scale = 1.0 / sqrt((double)hd);
#define DC(t, j) ((double)dctx[((size_t)(t) * b + bi) * hl + (size_t)hh * hd + (j)])
#define DQKV(t, part, j) dqkv[qkv_index(d, bi, hh, part, t, j)]
  for (int q = 0; q < s; q++) {
    double dot = 0;
    for (int k = 0; k <= q; k++) {
      double g = 0;
      for (int j = 0; j < hd; j++) g += DC(q, j) * qkv_at(d, qkv, bi, hh, 2, k, j);
      if (p > 0) g = mask[(size_t)q * s + k] ? g / (1.0 - p) : 0.0;
      dS[(size_t)q * s + k] = g;
      dot += g * P[(size_t)q * s + k];
    }
    for (int k = 0; k < s; k++) {
      double *ds = dS + (size_t)q * s + k;
      *ds = k <= q ? P[(size_t)q * s + k] * (*ds - dot) : 0.0;
    }
  }
  for (int t = 0; t < s; t++)
    for (int j = 0; j < hd; j++) {
      double dq = 0, dk = 0, dv = 0;
      for (int u = 0; u < s; u++) {
        dq += dS[(size_t)t * s + u] * qkv_at(d, qkv, bi, hh, 1, u, j);
        dk += dS[(size_t)u * s + t] * qkv_at(d, qkv, bi, hh, 0, u, j);
        dv += (p > 0 ? Pd[(size_t)u * s + t] : P[(size_t)u * s + t]) * DC(u, j);
      }
      DQKV(t, 0, j) += dq * scale; /* a group's key and value gather every head of the group */
      DQKV(t, 1, j) += dk * scale;
      DQKV(t, 2, j) += dv;
    }
#undef DC
#undef DQKV
}

static int ref_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                                  const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                                  float *scratch)
{
  const size_t ss = (size_t)d->s * d->s;
  const int G = d->groups > 0 ? d->groups : d->al;
  const size_t n = (size_t)d->s * d->b * (d->al + 2 * G) * d->hd;
  double *dS = dalloc(ss), *acc = dalloc(n); /* dqkv summed in double, rounded once */
  if (!dS || !acc) {
    free(dS);
    free(acc);
    return PTDP_ERR_MEM;
  }
  for (int bi = 0; bi < d->b; bi++)
    for (int hh = 0; hh < d->al; hh++) {
      const size_t off = ((size_t)bi * d->al + hh) * ss;
      attn_backward_pair(d, qkv, probs + off, mask + off, d->drop.p > 0 ? probs_drop + off : NULL, dctx, acc, bi,
                         hh, dS);
    }
  for (size_t i = 0; i < n; i++) dqkv[i] = (float)acc[i];
  free(dS);
  free(acc);
  return 0;
}

static int ref_embedding_forward(ptdp_backend *be, const float *wte, const int32_t *tok, long long v0, long long vl,
                                 float *out, long long rows, int h)
{
  for (long long r = 0; r < rows; r++) {
    int in = tok[r] >= v0 && tok[r] < v0 + vl;
    for (int c = 0; c < h; c++) out[r * h + c] = in ? wte[(tok[r] - v0) * h + c] : 0.0f;
  }
  return 0;
}

/* dwte[t] += sum of the rows of dout whose token is t: the sums in double, rounded once. */
static int ref_embedding_backward(ptdp_backend *be, const float *dout, const int32_t *tok, long long v0,
                                  long long vl, float *dwte, long long rows, int h)
{
  double *acc = dalloc((size_t)(vl * h));
  if (!acc) return PTDP_ERR_MEM;
  for (long long i = 0; i < vl * h; i++) acc[i] = dwte[i];
  for (long long r = 0; r < rows; r++)
    if (tok[r] >= v0 && tok[r] < v0 + vl)
      for (int c = 0; c < h; c++) acc[(tok[r] - v0) * h + c] += dout[r * h + c];
  for (long long i = 0; i < vl * h; i++) dwte[i] = (float)acc[i];
  free(acc);
  return 0;
}

static int ref_xent_stats(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                          long long rows, int vl, float *rowmax, float *tgt)
{
  for (long long r = 0; r < rows; r++) {
    float m = logits[r * vl];
    for (int j = 1; j < vl; j++)
      if (logits[r * vl + j] > m) m = logits[r * vl + j];
    rowmax[r] = m;
    tgt[r] = target[r] >= v0 && target[r] < v0 + vl ? logits[r * vl + (target[r] - v0)] : 0.0f;
  }
  return 0;
}

static int ref_xent_sumexp(ptdp_backend *be, const float *logits, const float *gmax, long long rows, int vl,
                           float *se)
{
  for (long long r = 0; r < rows; r++) {
    double s = 0;
    for (int j = 0; j < vl; j++) s += exp((double)logits[r * vl + j] - gmax[r]);
    se[r] = (float)s;
  }
  return 0;
}

/* the slice's max and the sum against it, then that sum moved to another max */
static int ref_xent_stats_local(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                                long long rows, int vl, float *lmax, float *lsum, float *tgt)
{
  PTDP_CALL(ref_xent_stats(be, logits, target, v0, rows, vl, lmax, tgt));
  for (long long r = 0; r < rows; r++) {
    double s = 0;
    for (int j = 0; j < vl; j++) s += exp((double)logits[r * vl + j] - lmax[r]);
    lsum[r] = (float)s;
  }
  return 0;
}

static int ref_xent_rescale(ptdp_backend *be, float *lsum, const float *lmax, const float *gmax, long long rows)
{
  for (long long r = 0; r < rows; r++) lsum[r] = (float)((double)lsum[r] * exp((double)lmax[r] - gmax[r]));
  return 0;
}

/* cross entropy of row r: log sum_j exp(l_j) - l_target = log(se) + max - l_target */
static int ref_xent_loss(ptdp_backend *be, const float *gmax, const float *se, const float *tgt, long long rows,
                         float *loss)
{
  double total = 0;
  for (long long r = 0; r < rows; r++) total += (double)gmax[r] - (double)tgt[r] + log((double)se[r]);
  *loss = (float)(total / (double)rows);
  return 0;
}

static int ref_xent_grad(ptdp_backend *be, float *logits, const int32_t *target, long long v0, const float *gmax,
                         const float *se, long long rows, int vl, float scale)
{
  for (long long r = 0; r < rows; r++)
    for (int j = 0; j < vl; j++) {
      double g = exp((double)logits[r * vl + j] - gmax[r]) / se[r];
      if (target[r] - v0 == j) g -= 1.0;
      logits[r * vl + j] = (float)(g * scale);
    }
  return 0;
}

/* AdamW with bias corrections: m, v the moments; p -= lr (mhat / (sqrt(vhat) + eps) + wd p). */
static int ref_adamw(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                     float beta2, float eps, float wd, long long step)
{
  const double bc1 = 1.0 - pow(beta1, (double)step), bc2 = 1.0 - pow(beta2, (double)step);
  for (size_t i = 0; i < n; i++) {
    double mi = (double)beta1 * m[i] + (1.0 - beta1) * g[i];
    double vi = (double)beta2 * v[i] + (1.0 - beta2) * (double)g[i] * g[i];
    p[i] = (float)(p[i] - (double)lr * (mi / bc1 / (sqrt(vi / bc2) + eps) + (double)wd * p[i]));
    m[i] = (float)mi;
    v[i] = (float)vi;
  }
  return 0;
}

static double ref_sumsq(ptdp_backend *be, const float *x, size_t n)
{
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
  return s;
}

/* The conversions are ptdp/half.h's host functions, element by element (validation/tests/core/
 * test_half proves them against ldexp values): the definition every backend must meet bit for bit. */
static int ref_convert(ptdp_backend *be, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype st, size_t n)
{
  if (dt == st) memcpy(dst, src, n * ptdp_dtype_size(st));
  else
    for (size_t i = 0; i < n; i++) ptdp_half_store(dst, dt, i, ptdp_half_load(src, st, i));
  return 0;
}

/* x inv_scale in double is exact (24 x 24 bits), so the float cast rounds once: the fp32 product. */
static int ref_unscale_check(ptdp_backend *be, float *x, size_t n, float inv_scale, int *found)
{
  *found = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(x[i]) || isinf(x[i])) *found = 1;
    x[i] = (float)((double)x[i] * inv_scale);
  }
  return 0;
}

int test_ops_ref_create(ptdp_backend **out)
{
  ptdp_backend *be;
  PTDP_CALLOC(be, 1, sizeof *be);
  *be = (ptdp_backend){.name = "ref", .host_accessible = 1, .alloc = ref_alloc, .free = ref_free,
                       .memset0 = ref_memset0, .copy = ref_copy, .to_device = ref_copy, .to_host = ref_copy,
                       .synchronize = ref_synchronize, .destroy = ref_destroy, .gemm = ref_gemm,
                       .layernorm_forward = ref_layernorm_forward, .layernorm_backward = ref_layernorm_backward,
                       .grouped_attention = 1, .rmsnorm_forward = ref_rmsnorm_forward,
                       .rmsnorm_backward = ref_rmsnorm_backward, .rope = ref_rope,
                       .swiglu_forward = ref_swiglu_forward, .swiglu_backward = ref_swiglu_backward,
                       .gelu_forward = ref_gelu_forward, .gelu_backward = ref_gelu_backward,
                       .bias_forward = ref_bias_forward, .bias_backward = ref_bias_backward, .add = ref_add,
                       .scale = ref_scale, .dropout_forward = ref_dropout_forward,
                       .dropout_backward = ref_dropout_backward, .attention_forward = ref_attention_forward,
                       .attention_backward = ref_attention_backward, .embedding_forward = ref_embedding_forward,
                       .embedding_backward = ref_embedding_backward, .xent_stats = ref_xent_stats,
                       .xent_sumexp = ref_xent_sumexp, .xent_grad = ref_xent_grad, .xent_loss = ref_xent_loss,
                       .xent_stats_local = ref_xent_stats_local, .xent_rescale = ref_xent_rescale, .adamw = ref_adamw,
                       .sumsq = ref_sumsq, .convert = ref_convert, .unscale_check = ref_unscale_check};
  *out = be;
  return 0;
}
