/* CPU attention core: for each (sample, local head), S = Q K^T / sqrt(hd) with a causal mask,
 * P = softmax(S), Pd = dropout(P), ctx = Pd V; and the backward pass.  Q, K, V are read in place
 * from the fused qkv rows ([N, al, 3, hd]; with grouped-query attention [N, groups, al/groups + 2,
 * hd], the group's key and value after its queries) with row stride b (al + 2 groups) hd, so no
 * copies are made.
 *
 * Parallel over the b al (sample, head) pairs, one pair per OpenMP thread with single-threaded
 * BLAS inside: each pair's products are small (s x s x hd), too small to split well.  The
 * backward passes go by (sample, group): a group's heads add into its key and value gradients.  Causality
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

static void gemm_beta(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                      int ldb, float beta, float *C, int ldc)
{
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, beta, C, ldc);
}

/* Grouped-query attention: a token's qkv row is [groups][the group's query heads, key, value][hd]
 * (groups = al without it: [al][3][hd]).  The offset in the row of query head hh's part:
 * 0 its query, 1 its group's key, 2 its group's value. */
/* The OpenMP thread running, and how many may run (1 and 0 without OpenMP). */
static int thread_id(void)
{
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}
static int max_threads(void)
{
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static int groups_of(const ptdp_attn_desc *d) { return d->groups > 0 ? d->groups : d->al; }
static size_t part_off(const ptdp_attn_desc *d, int hh, int part)
{
  const int hpg = d->al / groups_of(d), j = hh / hpg;
  const int slot = part == 0 ? hh % hpg : hpg + part - 1;
  return ((size_t)j * (hpg + 2) + (size_t)slot) * d->hd;
}
static int qkv_width(const ptdp_attn_desc *d) { return (d->al + 2 * groups_of(d)) * d->hd; }

/* Softmax of the causal row q of S (columns 0..q), zeros after; dropout with keys of row q.
 * Returns the row's log-sum-exp, max + log(sum of exp(x - max)). */
static float softmax_dropout_row(const ptdp_attn_desc *d, int bi, int head, int q, float *row, uint8_t *mr, float *pr)
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
  return m + logf(sum);
}

int ptdp_cpu_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                               uint8_t *mask, float *probs_drop, float *ctx)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, w = qkv_width(d);
  const int ld = b * w;
  const float scale = 1.0f / sqrtf((float)hd);
  const int drop = d->drop.p > 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (int t = 0; t < b * al; t++) {
    const int bi = t / al, hh = t % al;
    const float *row = qkv + (size_t)bi * w;
    const float *Q = row + part_off(d, hh, 0), *K = row + part_off(d, hh, 1), *V = row + part_off(d, hh, 2);
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
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, w = qkv_width(d);
  const int G = groups_of(d), hpg = al / G;
  const int ld = b * w;
  const float scale = 1.0f / sqrtf((float)hd);
  const float p = d->drop.p, keep_scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
  /* dS of one pair is s x s; the caller's scratch holds one, so each thread takes its own */
  const int nt = max_threads();
  float *work = nt > 1 ? ptdp_cpu_scratch(be, (size_t)nt * s * s) : scratch;
  if (!work) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for attention scratch");
  /* one (sample, group) per task: the group's heads add into its key and value gradients */
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (int t = 0; t < b * G; t++) {
    const int me = thread_id();
    for (int j = 0; j < hpg; j++) {
      const int bi = t / G, hh = (t % G) * hpg + j;
      const float *row = qkv + (size_t)bi * w;
      const float *Q = row + part_off(d, hh, 0), *K = row + part_off(d, hh, 1), *V = row + part_off(d, hh, 2);
      float *drow = dqkv + (size_t)bi * w;
      float *dQ = drow + part_off(d, hh, 0), *dK = drow + part_off(d, hh, 1), *dV = drow + part_off(d, hh, 2);
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
      /* keys [k0, k1) meet queries [k0, s): dV (+)= Pd^T dC ; dK (+)= dS^T Q scale; the group's
       * first head writes, the others add */
      const float beta = j == 0 ? 0.0f : 1.0f;
      for (int k0 = 0; k0 < s; k0 += ATTN_BLOCK) {
        const int k1 = k0 + ATTN_BLOCK < s ? k0 + ATTN_BLOCK : s;
        gemm_beta(1, 0, k1 - k0, hd, s - k0, 1.0f, Pd + (size_t)k0 * s + k0, s, dC + (size_t)k0 * b * hl, b * hl, beta,
                  dV + (size_t)k0 * ld, ld);
        gemm_beta(1, 0, k1 - k0, hd, s - k0, scale, dP + (size_t)k0 * s + k0, s, Q + (size_t)k0 * ld, ld, beta,
                  dK + (size_t)k0 * ld, ld);
      }
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- fused (flash) attention
 * The same function as above without the s x s tensors: each thread works on one (sample, head)
 * pair at a time and holds only the scores of one block of ATTN_BLOCK queries against the keys
 * they see ([ATTN_BLOCK, s] floats, a few of them), so the memory is O(s) per thread instead of
 * O(s^2) per pair.  The forward is the unfused forward's arithmetic, block by block (the same
 * products and the same softmax: its ctx is the unfused ctx bit for bit) plus each query row's
 * log-sum-exp; the backward recomputes P = exp(S - lse), takes D = dctx . ctx per query row, and
 * accumulates dK and dV over the query blocks (the unfused backward sums over all queries at
 * once: equal to rounding). */

/* One thread's part of the flash scratch: S (the backward's P), Pd (dropout output) and dP blocks
 * of ATTN_BLOCK x s floats, and a mask row of s bytes (s floats of room). */
typedef struct {
  float *S, *Pd, *dP;
  uint8_t *mr;
} flash_work;

/* The scratch of a flash call: one part per thread. */
typedef struct {
  float *work; /* nt parts of 3 ATTN_BLOCK s + s floats */
  int nt;      /* threads (max_threads()) */
} flash_scratch;

static int flash_scratch_get(ptdp_backend *be, int s, flash_scratch *sc)
{
  sc->nt = max_threads();
  sc->work = ptdp_cpu_scratch(be, (size_t)sc->nt * (3 * (size_t)ATTN_BLOCK * s + (size_t)s));
  if (!sc->work) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for attention scratch");
  return 0;
}

/* Thread me's part of the scratch. */
static flash_work flash_part(const flash_scratch *sc, int me, int s)
{
  const size_t blk = (size_t)ATTN_BLOCK * s;
  float *S = sc->work + (size_t)me * (3 * blk + (size_t)s);
  return (flash_work){S, S + blk, S + 2 * blk, (uint8_t *)(S + 3 * blk)};
}

int ptdp_cpu_flash_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *ctx, float *lse)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, w = qkv_width(d);
  const int ld = b * w, drop = d->drop.p > 0;
  const float scale = 1.0f / sqrtf((float)hd);
  flash_scratch sc;
  PTDP_CALL(flash_scratch_get(be, s, &sc));
#pragma omp parallel for schedule(dynamic, 1) num_threads(sc.nt)
  for (int t = 0; t < b * al; t++) {
    const int bi = t / al, hh = t % al;
    const flash_work wk = flash_part(&sc, thread_id(), s);
    float *S = wk.S, *Pd = wk.Pd;
    uint8_t *mr = wk.mr;
    const float *row = qkv + (size_t)bi * w;
    const float *Q = row + part_off(d, hh, 0), *K = row + part_off(d, hh, 1), *V = row + part_off(d, hh, 2);
    float *C = ctx + (size_t)bi * hl + (size_t)hh * hd, *L = lse + ((size_t)bi * al + hh) * s;
    for (int q0 = 0; q0 < s; q0 += ATTN_BLOCK) {
      const int q1 = q0 + ATTN_BLOCK < s ? q0 + ATTN_BLOCK : s;
      gemm1(0, 1, q1 - q0, q1, hd, scale, Q + (size_t)q0 * ld, ld, K, ld, S, s);
      for (int q = q0; q < q1; q++) {
        L[q] = softmax_dropout_row(d, bi, hh, q, S + (size_t)(q - q0) * s, mr, drop ? Pd + (size_t)(q - q0) * s : NULL);
      }
      gemm1(0, 0, q1 - q0, hd, q1, 1.0f, drop ? Pd : S, s, V, ld, C + (size_t)q0 * b * hl, b * hl);
    }
  }
  return 0;
}

static void gemm_acc(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc)
{
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B,
              ldb, 1.0f, C, ldc);
}

/* One query block [q0, q1) of one pair: P = exp(S - lse) over the causal keys [0, q1) (zeros
 * above the diagonal), Pd its dropout (the forward's mask bits), dP = dropout'(dC V^T), then
 * dS = P (dP - D) in place of dP with D = dC . C per row. */
static void flash_block_grads(const ptdp_attn_desc *d, int bi, int hh, int q0, int q1, const float *L, const float *dC,
                              const float *C, int ldc, float *P, float *Pd, float *dP, uint8_t *mr)
{
  const int s = d->s, hd = d->hd, drop = d->drop.p > 0;
  const float keep_scale = drop ? 1.0f / (1.0f - d->drop.p) : 1.0f;
  for (int q = q0; q < q1; q++) {
    float *pr = P + (size_t)(q - q0) * s, *dr = dP + (size_t)(q - q0) * s, *pd = Pd + (size_t)(q - q0) * s;
    const float l = L[q];
#pragma omp simd
    for (int k = 0; k <= q; k++) pr[k] = ptdp_cpu_expf(pr[k] - l);
    for (int k = q + 1; k < q1; k++) pr[k] = 0.0f;
    if (drop) {
      uint64_t rh = ptdp_rng_row(d->drop.seed, d->drop.site, d->drop.layer, (uint64_t)(d->drop.sample0 + bi),
                                 (uint64_t)((d->head0 + hh) * s + q));
      for (int k = 0; k < q1; k++) {
        mr[k] = k <= q && ptdp_rng_uniform(ptdp_rng_at(rh, (uint64_t)k)) >= d->drop.p;
        pd[k] = mr[k] ? pr[k] * keep_scale : 0.0f;
        dr[k] = mr[k] ? dr[k] * keep_scale : 0.0f;
      }
    }
    float D = 0.0f;
    const float *cr = C + (size_t)q * ldc, *dcr = dC + (size_t)q * ldc;
    for (int j = 0; j < hd; j++) D += dcr[j] * cr[j];
#pragma omp simd
    for (int k = 0; k <= q; k++) dr[k] = pr[k] * (dr[k] - D);
    for (int k = q + 1; k < q1; k++) dr[k] = 0.0f;
  }
}

int ptdp_cpu_flash_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *ctx,
                            const float *lse, const float *dctx, float *dqkv)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, w = qkv_width(d);
  const int G = groups_of(d), hpg = al / G;
  const int ld = b * w, ldc = b * hl, drop = d->drop.p > 0;
  const float scale = 1.0f / sqrtf((float)hd);
  flash_scratch sc;
  PTDP_CALL(flash_scratch_get(be, s, &sc));
  /* one (sample, group) per task: the group's heads add into its key and value gradients */
#pragma omp parallel for schedule(dynamic, 1) num_threads(sc.nt)
  for (int t = 0; t < b * G; t++) {
    const flash_work wk = flash_part(&sc, thread_id(), s);
    float *P = wk.S, *Pd = wk.Pd, *dP = wk.dP;
    uint8_t *mr = wk.mr;
    const int bi = t / G;
    const float *row = qkv + (size_t)bi * w;
    float *drow = dqkv + (size_t)bi * w;
    float *dK = drow + part_off(d, (t % G) * hpg, 1), *dV = drow + part_off(d, (t % G) * hpg, 2);
    for (int k = 0; k < s; k++) {
      memset(dK + (size_t)k * ld, 0, sizeof(float) * (size_t)hd);
      memset(dV + (size_t)k * ld, 0, sizeof(float) * (size_t)hd);
    }
    for (int j = 0; j < hpg; j++) {
      const int hh = (t % G) * hpg + j;
      const float *Q = row + part_off(d, hh, 0), *K = row + part_off(d, hh, 1), *V = row + part_off(d, hh, 2);
      const float *L = lse + ((size_t)bi * al + hh) * s;
      const float *C = ctx + (size_t)bi * hl + (size_t)hh * hd, *dC = dctx + (size_t)bi * hl + (size_t)hh * hd;
      float *dQ = drow + part_off(d, hh, 0);
      for (int q0 = 0; q0 < s; q0 += ATTN_BLOCK) {
        const int q1 = q0 + ATTN_BLOCK < s ? q0 + ATTN_BLOCK : s, nq = q1 - q0;
        gemm1(0, 1, nq, q1, hd, scale, Q + (size_t)q0 * ld, ld, K, ld, P, s);             /* S */
        gemm1(0, 1, nq, q1, hd, 1.0f, dC + (size_t)q0 * ldc, ldc, V, ld, dP, s);          /* dPd */
        flash_block_grads(d, bi, hh, q0, q1, L, dC, C, ldc, P, Pd, dP, mr);
        gemm1(0, 0, nq, hd, q1, scale, dP, s, K, ld, dQ + (size_t)q0 * ld, ld);           /* dQ = dS K */
        gemm_acc(1, 0, q1, hd, nq, 1.0f, drop ? Pd : P, s, dC + (size_t)q0 * ldc, ldc, dV, ld); /* dV += Pd^T dC */
        gemm_acc(1, 0, q1, hd, nq, scale, dP, s, Q + (size_t)q0 * ld, ld, dK, ld);        /* dK += dS^T Q */
      }
    }
  }
  return 0;
}
