/* CPU backend: OpenBLAS for matrix products, OpenMP for everything else.  fp32 throughout,
 * reductions in double where their length grows with the problem (sums of squares). */
#include "ptdp/backend.h"

#include "ptdp/error.h"
#include "ptdp/half.h"
#include "ptdp/rng.h"

#include "cpu_math.h"

#include <cblas.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The backend's own state: a scratch buffer that grows to the largest request. */
typedef struct {
  float *scratch;
  size_t scratch_n;
} cpu_ctx;

float *ptdp_cpu_scratch(ptdp_backend *be, size_t n);
float *ptdp_cpu_scratch(ptdp_backend *be, size_t n)
{
  cpu_ctx *c = be->ctx;
  if (n > c->scratch_n) {
    free(c->scratch);
    c->scratch = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    c->scratch_n = c->scratch ? n : 0;
  }
  return c->scratch;
}

static int cpu_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  *p = NULL;
  if (!bytes) return 0;
  /* 64-byte alignment for vector loads; zeroed so unused tails are defined */
  size_t rounded = (bytes + 63) / 64 * 64;
  void *q = aligned_alloc(64, rounded);
  if (!q) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory allocating %zu bytes", bytes);
  memset(q, 0, rounded);
  *p = q;
  return 0;
}

static void cpu_free(ptdp_backend *be, void *p) { free(p); }

static int cpu_memset0(ptdp_backend *be, void *p, size_t bytes)
{
  if (bytes) memset(p, 0, bytes);
  return 0;
}

static int cpu_copy(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  if (bytes && dst != src) memmove(dst, src, bytes);
  return 0;
}

static int cpu_synchronize(ptdp_backend *be) { return 0; }

static void cpu_destroy(ptdp_backend *be)
{
  cpu_ctx *c = be->ctx;
  if (c) free(c->scratch);
  free(c);
  be->ctx = NULL;
}

/* One thread pool: OpenBLAS runs single-threaded (ptdp_cpu_threads_setup sets it) and a large
 * product is split here into one block of C per OpenMP thread, along C's longer side in
 * multiples of 64 (whole micro-kernel tiles).  Each element of C is still the same dot product
 * in the same K order, so the result does not depend on the thread count.  Two pools (OpenMP's
 * workers and OpenBLAS's pthreads) spin against each other when they share the cores, which made
 * 2 threads slower than 1.  Inside a parallel region (attention) the call runs as it is. */
#define GEMM_SPLIT_FLOPS 4.0e6 /* below this one thread is faster than waking the others */
#define GEMM_SPLIT_ALIGN 64
static void sgemm1(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc)
{
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, beta, C, ldc);
}

static int cpu_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc)
{
  /* CBLAS reports argument errors through xerbla and returns nothing: check them here. */
  if (M < 0 || N < 0 || K < 0 || lda < (ta ? (M > 1 ? M : 1) : (K > 1 ? K : 1)) ||
      ldb < (tb ? (K > 1 ? K : 1) : (N > 1 ? N : 1)) || ldc < (N > 1 ? N : 1))
    return PTDP_FAIL(PTDP_ERR_LIB,
                           "invalid sgemm arguments M=%d N=%d K=%d lda=%d ldb=%d ldc=%d (ta=%d tb=%d)", M, N, K, lda,
                           ldb, ldc, ta, tb);
  if (M == 0 || N == 0) return 0;
  int nt = 1;
#ifdef _OPENMP
  if (!omp_in_parallel() && 2.0 * M * N * (double)K >= GEMM_SPLIT_FLOPS) nt = omp_get_max_threads();
#endif
  int split_rows = M >= N, len = split_rows ? M : N;
  int tiles = (len + GEMM_SPLIT_ALIGN - 1) / GEMM_SPLIT_ALIGN;
  if (nt > tiles) nt = tiles;
  if (nt <= 1) {
    sgemm1(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return 0;
  }
#pragma omp parallel num_threads(nt)
  {
#ifdef _OPENMP
    int me = omp_get_thread_num(), n = omp_get_num_threads();
#else
    int me = 0, n = 1;
#endif
    int i0 = (int)((long long)tiles * me / n) * GEMM_SPLIT_ALIGN, i1 = (int)((long long)tiles * (me + 1) / n) * GEMM_SPLIT_ALIGN;
    if (i1 > len) i1 = len;
    if (i1 > i0) {
      if (split_rows) /* rows i0..i1 of op(A) and C */
        sgemm1(ta, tb, i1 - i0, N, K, alpha, ta ? A + i0 : A + (size_t)i0 * lda, lda, B, ldb, beta, C + (size_t)i0 * ldc,
               ldc);
      else /* columns i0..i1 of op(B) and C */
        sgemm1(ta, tb, M, i1 - i0, K, alpha, A, lda, tb ? B + (size_t)i0 * ldb : B + i0, ldb, beta, C + i0, ldc);
    }
  }
  return 0;
}

static int cpu_layernorm_forward(ptdp_backend *be, const float *x, const float *w, const float *b, float *y,
                                 float *mean, float *rstd, long long rows, int h, float eps)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    const float *xr = x + r * h;
    float *yr = y + r * h;
    double s = 0, ss = 0;
    for (int i = 0; i < h; i++) s += xr[i];
    float m = (float)(s / h);
    for (int i = 0; i < h; i++) {
      float d = xr[i] - m;
      ss += (double)d * d;
    }
    float rs = 1.0f / sqrtf((float)(ss / h) + eps);
    for (int i = 0; i < h; i++) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
    mean[r] = m;
    rstd[r] = rs;
  }
  return 0;
}

/* dx_i = rstd (g_i - mean(g) - xhat_i mean(g xhat)), g = dy w; dw += dy xhat; db += dy. */
/* Columns [c0, c1) of cols for thread `me` of `nt`: column sums split by columns, each summed
 * over the rows in order, give the same bits for any thread count (and need no atomics). */
static void column_block(int cols, int *c0, int *c1)
{
  int nt = 1, me = 0;
#ifdef _OPENMP
  nt = omp_get_num_threads();
  me = omp_get_thread_num();
#endif
  *c0 = (int)((long long)cols * me / nt);
  *c1 = (int)((long long)cols * (me + 1) / nt);
}

static int cpu_layernorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *mean,
                                  const float *rstd, float *dx, float *dw, float *db, long long rows, int h)
{
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (long long r = 0; r < rows; r++) {
      const float *dyr = dy + r * h, *xr = x + r * h;
      float *dxr = dx + r * h;
      float m = mean[r], rs = rstd[r];
      double sg = 0, sgx = 0;
      for (int i = 0; i < h; i++) {
        float xh = (xr[i] - m) * rs, g = dyr[i] * w[i];
        sg += g;
        sgx += (double)g * xh;
      }
      float mg = (float)(sg / h), mgx = (float)(sgx / h);
      for (int i = 0; i < h; i++) {
        float xh = (xr[i] - m) * rs;
        dxr[i] = rs * (dyr[i] * w[i] - mg - xh * mgx);
      }
    }
    /* dw += sum_r dy xhat, db += sum_r dy: by columns, rows in order (deterministic) */
    int c0, c1;
    column_block(h, &c0, &c1);
    for (int i = c0; i < c1; i++) {
      float sw = 0.0f, sb = 0.0f;
      for (long long r = 0; r < rows; r++) {
        float d = dy[r * h + i];
        sw += d * ((x[r * h + i] - mean[r]) * rstd[r]);
        sb += d;
      }
      dw[i] += sw;
      db[i] += sb;
    }
  }
  return 0;
}

/* RMSNorm (Zhang and Sennrich 2019): the sums in double, as LayerNorm's. */
static int cpu_rmsnorm_forward(ptdp_backend *be, const float *x, const float *w, float *y, float *rstd, long long rows,
                               int h, float eps)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    const float *xr = x + r * h;
    float *yr = y + r * h;
    double ss = 0;
    for (int i = 0; i < h; i++) ss += (double)xr[i] * xr[i];
    const float rs = 1.0f / sqrtf((float)(ss / h) + eps);
    for (int i = 0; i < h; i++) yr[i] = xr[i] * rs * w[i];
    rstd[r] = rs;
  }
  return 0;
}

/* dx_i = rstd (g_i - xhat_i mean(g xhat)), g = dy w, xhat = x rstd; dw += sum_r dy xhat (by
 * columns, rows in order: the same bits for any thread count). */
static int cpu_rmsnorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                                float *dx, float *dw, long long rows, int h)
{
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (long long r = 0; r < rows; r++) {
      const float *dyr = dy + r * h, *xr = x + r * h;
      float *dxr = dx + r * h;
      const float rs = rstd[r];
      double sgx = 0;
      for (int i = 0; i < h; i++) sgx += (double)(dyr[i] * w[i]) * (xr[i] * rs);
      const float mgx = (float)(sgx / h);
      for (int i = 0; i < h; i++) dxr[i] = rs * (dyr[i] * w[i] - xr[i] * rs * mgx);
    }
    int c0, c1;
    column_block(h, &c0, &c1);
    for (int i = c0; i < c1; i++) {
      float sw = 0.0f;
      for (long long r = 0; r < rows; r++) sw += dy[r * h + i] * (x[r * h + i] * rstd[r]);
      dw[i] += sw;
    }
  }
  return 0;
}

/* One head's first rd entries turned by the angles of its position (cs: [rd/2][cos, sin]). */
static void rope_head(float *x, const float *cs, int rd, int interleaved, float sign)
{
  const int half = rd / 2;
  for (int i = 0; i < half; i++) {
    const int a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
    const float c = cs[2 * i], sn = sign * cs[2 * i + 1], x1 = x[a], x2 = x[b];
    x[a] = x1 * c - x2 * sn;
    x[b] = x2 * c + x1 * sn;
  }
}

static int cpu_rope(ptdp_backend *be, float *qkv, const ptdp_rope_desc *d, const float *table, int inverse)
{
  const int turned = d->heads_per_group + 1; /* the queries and the key of a group */
  const float sign = inverse ? -1.0f : 1.0f;
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < d->rows; r++) {
    const float *cs = table + (d->pos0 + r / d->b) * d->rd;
    for (int g = 0; g < d->groups; g++)
      for (int j = 0; j < turned; j++)
        rope_head(qkv + r * d->ld + ((long long)g * (d->heads_per_group + 2) + j) * d->hd, cs, d->rd, d->interleaved,
                  sign);
  }
  return 0;
}

/* GELU, tanh form (Megatron's gelu_impl / openai_gelu):
 * gelu(x) = x (1 + tanh u) / 2 = x sigma(2u), u = k (x + 0.044715 x^3), since (1 + tanh u) / 2 =
 * 1 / (1 + e^-2u).  The sigmoid form is accurate for all x (no 1 + tanh cancellation) and uses
 * the vectorised exponential; gelu'(x) = sigma + 2 x sigma (1 - sigma) du/dx. */
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
static int cpu_gelu_forward(ptdp_backend *be, const float *x, float *y, size_t n)
{
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    float u = GELU_K * (v + 0.044715f * v * v * v);
    y[i] = v / (1.0f + ptdp_cpu_expf(-2.0f * u));
  }
  return 0;
}

static int cpu_gelu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, size_t n)
{
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    float u = GELU_K * (v + 0.044715f * v * v * v);
    float sg = 1.0f / (1.0f + ptdp_cpu_expf(-2.0f * u));
    float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
    dx[i] = dy[i] * (sg + 2.0f * v * sg * (1.0f - sg) * du);
  }
  return 0;
}

/* SwiGLU (Shazeer 2020): rows [gate (f) | up (f)] to silu(gate) up, silu(g) = g sigma(g); the
 * backward from silu'(g) = sigma (1 + g (1 - sigma)).  The same vectorised exponential as GELU. */
static int cpu_swiglu_forward(ptdp_backend *be, const float *x, float *y, long long rows, int f)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    const float *g = x + r * 2 * f, *u = g + f;
    float *yr = y + r * f;
#pragma omp simd
    for (int i = 0; i < f; i++) yr[i] = g[i] / (1.0f + ptdp_cpu_expf(-g[i])) * u[i];
  }
  return 0;
}

static int cpu_swiglu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, long long rows, int f)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    const float *g = x + r * 2 * f, *u = g + f, *dyr = dy + r * f;
    float *dg = dx + r * 2 * f, *du = dg + f;
#pragma omp simd
    for (int i = 0; i < f; i++) {
      const float sg = 1.0f / (1.0f + ptdp_cpu_expf(-g[i]));
      dg[i] = dyr[i] * u[i] * sg * (1.0f + g[i] * (1.0f - sg));
      du[i] = dyr[i] * g[i] * sg;
    }
  }
  return 0;
}

static int cpu_bias_forward(ptdp_backend *be, float *y, const float *b, long long rows, int cols)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) y[r * cols + c] += b[c];
  return 0;
}

static int cpu_bias_backward(ptdp_backend *be, const float *dy, float *db, long long rows, int cols)
{
#pragma omp parallel
  {
    /* by columns, rows in order: the same bits for any thread count */
    int c0, c1;
    column_block(cols, &c0, &c1);
    for (int c = c0; c < c1; c++) {
      float acc = 0.0f;
      for (long long r = 0; r < rows; r++) acc += dy[r * cols + c];
      db[c] += acc;
    }
  }
  return 0;
}

static int cpu_add(ptdp_backend *be, float *y, const float *x, size_t n)
{
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) y[i] += x[i];
  return 0;
}

static int cpu_scale(ptdp_backend *be, float *y, float a, size_t n)
{
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) y[i] *= a;
  return 0;
}

static int cpu_dropout_forward(ptdp_backend *be, float *x, uint8_t *mask, long long rows, int cols,
                               const ptdp_dropout_key *k)
{
  if (k->p <= 0.0f) return 0;
  float keep_scale = 1.0f / (1.0f - k->p);
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    long long R = k->row0 + r;
    uint64_t rh = ptdp_rng_row(k->seed, k->site, k->layer, (uint64_t)(k->sample0 + R % k->b), (uint64_t)(R / k->b));
    for (int c = 0; c < cols; c++) {
      uint8_t keep = ptdp_rng_uniform(ptdp_rng_at(rh, (uint64_t)(k->col0 + c))) >= k->p;
      mask[r * cols + c] = keep;
      x[r * cols + c] = keep ? x[r * cols + c] * keep_scale : 0.0f;
    }
  }
  return 0;
}

static int cpu_dropout_backward(ptdp_backend *be, float *dx, const uint8_t *mask, size_t n, float p)
{
  if (p <= 0.0f) return 0;
  float keep_scale = 1.0f / (1.0f - p);
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) dx[i] = mask[i] ? dx[i] * keep_scale : 0.0f;
  return 0;
}

static int cpu_embedding_forward(ptdp_backend *be, const float *wte, const int32_t *tok, long long v0, long long vl,
                                 float *out, long long rows, int h)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    long long id = (long long)tok[r] - v0;
    if (id >= 0 && id < vl)
      memcpy(out + r * h, wte + id * h, sizeof(float) * (size_t)h);
    else
      memset(out + r * h, 0, sizeof(float) * (size_t)h);
  }
  return 0;
}

static int cpu_embedding_backward(ptdp_backend *be, const float *dout, const int32_t *tok, long long v0, long long vl,
                                  float *dwte, long long rows, int h)
{
  /* Rows sharing a token add into one row of dwte: parallel over columns keeps it race-free
   * and the summation order (row order) fixed. */
#pragma omp parallel
  {
    int nt = 1, me = 0;
#ifdef _OPENMP
    nt = omp_get_num_threads();
    me = omp_get_thread_num();
#endif
    int c0 = (int)((long long)h * me / nt), c1 = (int)((long long)h * (me + 1) / nt);
    for (long long r = 0; r < rows; r++) {
      long long id = (long long)tok[r] - v0;
      if (id < 0 || id >= vl) continue;
      for (int c = c0; c < c1; c++) dwte[id * h + c] += dout[r * h + c];
    }
  }
  return 0;
}

static int cpu_xent_stats(ptdp_backend *be, const float *logits, const int32_t *target, long long v0, long long rows,
                          int vl, float *rowmax, float *tgt)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    const float *l = logits + r * vl;
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int j = 0; j < vl; j++) m = l[j] > m ? l[j] : m;
    rowmax[r] = m;
    long long id = (long long)target[r] - v0;
    tgt[r] = (id >= 0 && id < vl) ? l[id] : 0.0f;
  }
  return 0;
}

static int cpu_xent_sumexp(ptdp_backend *be, const float *logits, const float *gmax, long long rows, int vl, float *se)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    const float *l = logits + r * vl;
    float m = gmax[r], s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int j = 0; j < vl; j++) s += ptdp_cpu_expf(l[j] - m);
    se[r] = s;
  }
  return 0;
}

/* Two passes over each row (it stays in cache): the max, then the sum against it. */
static int cpu_xent_stats_local(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                                long long rows, int vl, float *lmax, float *lsum, float *tgt)
{
  PTDP_CALL(cpu_xent_stats(be, logits, target, v0, rows, vl, lmax, tgt));
  return cpu_xent_sumexp(be, logits, lmax, rows, vl, lsum);
}

static int cpu_xent_rescale(ptdp_backend *be, float *lsum, const float *lmax, const float *gmax, long long rows)
{
  (void)be;
  /* a slice of padding columns only has no max (-inf) and nothing to move: ptdp_cpu_expf is not
   * defined at -inf */
  for (long long r = 0; r < rows; r++) lsum[r] = lmax[r] == -INFINITY ? 0.0f : lsum[r] * ptdp_cpu_expf(lmax[r] - gmax[r]);
  return 0;
}

/* In row order, in double: the sum the model's host path made before this operation existed. */
static int cpu_xent_loss(ptdp_backend *be, const float *gmax, const float *se, const float *tgt, long long rows,
                         float *loss)
{
  (void)be;
  double s = 0;
  for (long long r = 0; r < rows; r++) s += log((double)se[r]) + gmax[r] - tgt[r];
  *loss = (float)(s / (double)rows);
  return 0;
}

static int cpu_xent_grad(ptdp_backend *be, float *logits, const int32_t *target, long long v0, const float *gmax,
                         const float *se, long long rows, int vl, float scale)
{
#pragma omp parallel for schedule(static)
  for (long long r = 0; r < rows; r++) {
    float *l = logits + r * vl;
    float m = gmax[r], inv = scale / se[r];
#pragma omp simd
    for (int j = 0; j < vl; j++) l[j] = ptdp_cpu_expf(l[j] - m) * inv;
    long long id = (long long)target[r] - v0;
    if (id >= 0 && id < vl) l[id] -= scale;
  }
  return 0;
}

static int cpu_adamw(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                     float b2, float eps, float wd, long long step)
{
  float bc1 = 1.0f - powf(b1, (float)step), bc2 = 1.0f - powf(b2, (float)step);
#pragma omp parallel for simd schedule(static)
  for (size_t i = 0; i < n; i++) {
    float gi = g[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    float mh = m[i] / bc1, vh = v[i] / bc2;
    p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
  }
  return 0;
}

static double cpu_sumsq(ptdp_backend *be, const float *x, size_t n)
{
  double s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
  for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
  return s;
}

/* convert, with ptdp/half.h's rounding: the mixed-precision wrapper widens and narrows its (S)
 * operands with it, and the model copies its fp32 master weights into the 16-bit stored weights
 * (src/model/gpt.c).  One loop per pair that mixed precision uses every step (the conversions inline: they
 * vectorise), the general load/store loop for the others. */
#define CONVERT_LOOP(DT, ST, EXPR)                                  \
  do {                                                              \
    DT *restrict d_ = dst;                                          \
    const ST *restrict s_ = src;                                    \
    _Pragma("omp parallel for simd schedule(static)")               \
    for (size_t i = 0; i < n; i++) d_[i] = EXPR(s_[i]);             \
  } while (0)

static int cpu_convert(ptdp_backend *be, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype st, size_t n)
{
  if (dt == st) return cpu_copy(be, dst, src, n * ptdp_dtype_size(st));
  if (dt == PTDP_F32 && st == PTDP_BF16) CONVERT_LOOP(float, uint16_t, ptdp_bf16_to_float);
  else if (dt == PTDP_BF16 && st == PTDP_F32) CONVERT_LOOP(uint16_t, float, ptdp_float_to_bf16);
  else if (dt == PTDP_F32 && st == PTDP_F16) CONVERT_LOOP(float, uint16_t, ptdp_f16_to_float);
  else if (dt == PTDP_F16 && st == PTDP_F32) CONVERT_LOOP(uint16_t, float, ptdp_float_to_f16);
  else {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) ptdp_half_store(dst, dt, i, ptdp_half_load(src, st, i));
  }
  return 0;
}
#undef CONVERT_LOOP

/* x *= inv_scale; *found = any x was inf or NaN (tested before the multiply, which could
 * overflow a finite x to inf: that is not the gradients' overflow). */
static int cpu_unscale_check(ptdp_backend *be, float *x, size_t n, float inv_scale, int *found)
{
  int bad = 0;
#pragma omp parallel for simd reduction(| : bad) schedule(static)
  for (size_t i = 0; i < n; i++) {
    bad |= !isfinite(x[i]);
    x[i] *= inv_scale;
  }
  *found = bad;
  return 0;
}

int ptdp_cpu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                               uint8_t *mask, float *probs_drop, float *ctx);
int ptdp_cpu_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                                const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                                float *scratch);

/* Operations of the table under other names (PTDP_BACKEND_FILL pastes prefix_op). */
#define cpu_to_device cpu_copy
#define cpu_to_host cpu_copy
#define cpu_attention_forward ptdp_cpu_attention_forward
#define cpu_attention_backward ptdp_cpu_attention_backward

int ptdp_cpu_flash_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *ctx, float *lse);
int ptdp_cpu_flash_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *ctx,
                            const float *lse, const float *dctx, float *dqkv);

int ptdp_backend_cpu_create(ptdp_backend **out)
{
  ptdp_backend *be;
  PTDP_CALLOC(be, 1, sizeof *be);
  be->name = "cpu";
  cpu_ctx *c;
  PTDP_CALLOC(c, 1, sizeof *c);
  be->ctx = c;
  PTDP_BACKEND_FILL(be, cpu);
  be->grouped_attention = 1;
  be->rmsnorm_forward = cpu_rmsnorm_forward;
  be->rmsnorm_backward = cpu_rmsnorm_backward;
  be->rope = cpu_rope;
  be->swiglu_forward = cpu_swiglu_forward;
  be->swiglu_backward = cpu_swiglu_backward;
  be->flash_forward = ptdp_cpu_flash_forward;
  be->flash_backward = ptdp_cpu_flash_backward;
  be->xent_loss = cpu_xent_loss;
  be->xent_stats_local = cpu_xent_stats_local;
  be->xent_rescale = cpu_xent_rescale;
  be->host_accessible = 1;
  *out = be;
  return 0;
}
