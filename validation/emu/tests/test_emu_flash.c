/* The fused attention kernels (src/backend/cuda_flash.cu) in the CUDA emulation against the CPU
 * backend's flash attention (ptdp_cpu_flash_forward/backward, fp32) on the same inputs: random
 * qkv and dctx rounded to the 16-bit type, given to the CPU widened to fp32 (exactly the same
 * values).  Outputs on the emulated GPU are poisoned with NaN before each call, so an element a
 * kernel fails to write fails the comparison.  Shapes with tails: s 1, 17, 64, 100, 130, 300 (not
 * multiples of the 64-row tiles; 300 spans five), hd 16 to 128 (64 and 128 have kernels of their own), b 1-2,
 * al 1-3, head0 > 0, dropout p 0 and 0.1, and buffers 2 bytes off the kernels' 16-byte loads.
 * Grouped-query attention (rows [groups][al/groups queries, key, value][hd]): 2 and 4 query heads
 * a group and one group for all heads, hd 64 and 128 (the mma kernels) and 32, tails, dropout.
 *
 * Forward.  ctx: the kernel rounds P to the 16-bit type before P V (unit roundoff u: 2^-8 bf16,
 * 2^-11 fp16) and rounds ctx; the CPU keeps fp32.  With sum_k P = 1 and dropout's factor
 * 1/(1-p), |ctx - ctx_cpu| <= u max|V| / (1-p) + u |ctx| + fp32 noise; bound used:
 * 2 u max|V| / (1-p) + 1e-5.  lse: fp32 on both sides, sums in another order: 1e-4 (values up
 * to ~10).  The dropout masks: p = 0.1 within that bound means the masks agree (one dropped
 * entry more or less moves ctx by ~ P V / (1-p), far above it); and, to show that the
 * comparison sees a mask, a run with another seed must differ by more than the bound.
 * Backward, from the CPU's lse and its ctx rounded to the type (both sides the same inputs):
 * the kernels round Pd and dS to the type for the tensor-core products (and their outputs),
 * so per element, with P, Pd and dS from a double reference,
 *     dV[k] : u (sum_q Pd[q,k]) max|dO| + u |dV|
 *     dK[k] : u scale (sum_q |dS[q,k]|) max|Q| + u |dK|
 *     dQ[q] : u scale (sum_k |dS[q,k]|) max|K| + u |dQ|
 * times 1.5 for the fp32 differences in the dS they round (and 1e-5 absolute).  The worst
 * ratio of difference to bound is printed per case.
 * Each case runs on both sets of kernels (cuda_flash.h: the mma kernels, hd 64 and 128, and
 * the wmma kernels), or on PTDP_FLASH_KERNEL's alone when it is set; a backward with dropout
 * runs twice and must give the same bits (no atomics: reproducible run to run).
 * A group's dK and dV sum its query heads' terms: the bounds above summed over those heads.
 * test_emu_flash_mutant, _mutant_bwd, _mutant_gqa and _mutant_gqa_sum are this program linked
 * with planted mistakes (validation/emu/local.mk; test_emu_flash_plant.sh): they must fail
 * (PTDP_TEST_FLASH_GROUPED=1 runs the grouped cases alone, for the last two).
 * The same program built against the CUDA runtime is validation/tests/gpu/test_cuda_flash: the
 * kernels on a GPU against the CPU backend, with the same cases and bounds (exit 77 without one). */
#include <cuda_runtime.h>

#include "../../tests/expect.h"
#include "cuda_flash.h"
#include "cuda_internal.h"
#include "emu_test.h"
#include "ptdp/backend.h"
#include "ptdp/half.h"
#include "ptdp/rng.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PTDP_TEST_ON_GPU /* validation/tests/gpu/local.mk */
#define TEST_NAME "test_cuda_flash"
#else
#define TEST_NAME "test_emu_flash"
#endif

/* off: the 16-bit buffers start that many elements into their allocations (1: 2 bytes off the
 * 16-byte alignment of the kernels' vector loads, which must then load element by element) */
typedef struct {
  ptdp_dtype t;
  int b, s, al, hd;
  float p;
  int off;
  int groups; /* key/value groups (0: al, no grouped-query attention) */
} flash_case;

static const flash_case cases[] = {
    {PTDP_BF16, 1, 1, 1, 64, 0.0f, 0, 0},   {PTDP_BF16, 2, 17, 2, 32, 0.1f, 0, 0},
    {PTDP_BF16, 1, 64, 1, 128, 0.0f, 0, 0}, {PTDP_BF16, 2, 100, 3, 64, 0.1f, 1, 0},
    {PTDP_BF16, 1, 130, 2, 128, 0.1f, 0, 0}, {PTDP_BF16, 1, 130, 1, 48, 0.0f, 0, 0},
    {PTDP_F16, 2, 17, 1, 64, 0.1f, 0, 0},   {PTDP_F16, 1, 100, 2, 32, 0.0f, 1, 0},
    {PTDP_F16, 1, 130, 1, 128, 0.1f, 0, 0}, {PTDP_F16, 2, 64, 1, 80, 0.0f, 0, 0},
    {PTDP_F16, 1, 1, 3, 16, 0.1f, 0, 0},    {PTDP_BF16, 1, 300, 1, 64, 0.1f, 0, 0},
    /* grouped: 2 heads a group; one group of 4 (2 bytes off); 4 heads a group in 2 groups; one group of 3 */
    {PTDP_BF16, 1, 100, 4, 64, 0.1f, 0, 2},  {PTDP_F16, 2, 130, 4, 128, 0.0f, 1, 1},
    {PTDP_BF16, 1, 70, 8, 128, 0.1f, 0, 2},  {PTDP_F16, 1, 130, 8, 64, 0.0f, 0, 2},
    {PTDP_BF16, 1, 17, 3, 32, 0.1f, 0, 1},
};

/* The row layout (ptdp/backend.h; the CPU's part_off): a token's row is [groups][hpg queries, key,
 * value][hd]; the offset in it of head hh's part (0 query, 1 its group's key, 2 its group's value). */
static int groups_of(const flash_case *c) { return c->groups > 0 ? c->groups : c->al; }
static int hpg_of(const flash_case *c) { return c->al / groups_of(c); }
static int width_of(const flash_case *c) { return (c->al + 2 * groups_of(c)) * c->hd; }
static size_t part_of(const flash_case *c, int hh, int part)
{
  const int hpg = hpg_of(c), slot = part == 0 ? hh % hpg : hpg + part - 1;
  return ((size_t)(hh / hpg) * (hpg + 2) + slot) * c->hd;
}
/* The first column of unit u of an output: part -1 ctx (units heads), 0 dQ (heads), 1 dK and 2 dV
 * (units groups). */
static size_t col_of(const flash_case *c, int part, int u)
{
  if (part < 0) return (size_t)u * c->hd;
  return part == 0 ? part_of(c, u, 0) : part_of(c, u * hpg_of(c), part);
}

static const char *kernel_name(void);

static float round_to(ptdp_dtype t, float v)
{
  return t == PTDP_BF16 ? ptdp_bf16_to_float(ptdp_float_to_bf16(v)) : ptdp_f16_to_float(ptdp_float_to_f16(v));
}
static uint16_t bits_of(ptdp_dtype t, float v) { return t == PTDP_BF16 ? ptdp_float_to_bf16(v) : ptdp_float_to_f16(v); }
static float float_of(ptdp_dtype t, uint16_t h)
{
  return t == PTDP_BF16 ? ptdp_bf16_to_float(h) : ptdp_f16_to_float(h);
}
static float urand(void) { return 2.0f * (float)rand() / (float)RAND_MAX - 1.0f; }

/* Device buffers of n 16-bit elements or floats, poisoned with all-ones bytes (NaN in bf16,
 * fp16 and fp32), starting dev_off bytes into their allocation (dev_base: the allocations). */
static size_t dev_off;
static void *dev_base[16];
static int ndev;
static void *dev_poisoned(size_t bytes)
{
  void *p;
  CK(cudaMalloc(&p, bytes + dev_off));
  CK(cudaMemset(p, 0xff, bytes + dev_off));
  dev_base[ndev++] = p;
  return (char *)p + dev_off;
}
static void *dev_of16(ptdp_dtype t, const float *x, size_t n)
{
  uint16_t *h = malloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++) h[i] = bits_of(t, x[i]);
  void *p = dev_poisoned(n * sizeof *h);
  CK(cudaMemcpy(p, h, n * sizeof *h, cudaMemcpyHostToDevice));
  free(h);
  return p;
}
static float *host_of16(ptdp_dtype t, const void *dev, size_t n)
{
  uint16_t *h = malloc(n * sizeof *h);
  float *f = malloc(n * sizeof *f);
  CK(cudaMemcpy(h, dev, n * sizeof *h, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i++) f[i] = float_of(t, h[i]);
  free(h);
  return f;
}

/* The double reference's per-element sums for the backward bounds (see the top). */
typedef struct {
  double *colsum_pd; /* [b, al, s]: sum_q Pd[q, k] */
  double *colsum_ds; /* [b, al, s]: sum_q |dS[q, k]| */
  double *rowsum_ds; /* [b, al, s]: sum_k |dS[q, k]| */
} ref_sums;

static void reference_sums(const flash_case *c, const ptdp_attn_desc *d, const float *qkv, const float *dctx,
                           const float *ctx, ref_sums *r)
{
  const int b = d->b, s = d->s, al = d->al, hd = d->hd, hl = al * hd, w = width_of(c);
  const long long ld = (long long)b * w, ldc = (long long)b * hl;
  const double scale = 1.0 / sqrt((double)hd), p = d->drop.p, ks = p > 0 ? 1.0 / (1.0 - p) : 1.0;
  double *P = malloc(sizeof(double) * s), *dP = malloc(sizeof(double) * s);
  size_t n = (size_t)b * al * s;
  r->colsum_pd = calloc(n, sizeof(double));
  r->colsum_ds = calloc(n, sizeof(double));
  r->rowsum_ds = calloc(n, sizeof(double));
  for (int bi = 0; bi < b; bi++)
    for (int hh = 0; hh < al; hh++) {
      const float *row = qkv + (size_t)bi * w;
      const float *Q = row + part_of(c, hh, 0), *K = row + part_of(c, hh, 1), *V = row + part_of(c, hh, 2);
      const float *dO = dctx + (size_t)bi * hl + (size_t)hh * hd, *O = ctx + (size_t)bi * hl + (size_t)hh * hd;
      size_t base = ((size_t)bi * al + hh) * s;
      for (int q = 0; q < s; q++) {
        double m = -INFINITY, sum = 0, D = 0;
        for (int k = 0; k <= q; k++) {
          double acc = 0;
          for (int j = 0; j < hd; j++) acc += (double)Q[q * ld + j] * K[k * ld + j];
          P[k] = acc * scale;
          m = fmax(m, P[k]);
        }
        for (int k = 0; k <= q; k++) sum += (P[k] = exp(P[k] - m));
        for (int j = 0; j < hd; j++) D += (double)dO[q * ldc + j] * O[q * ldc + j];
        uint64_t rh = ptdp_rng_row(d->drop.seed, d->drop.site, d->drop.layer, (uint64_t)(d->drop.sample0 + bi),
                                   (uint64_t)((d->head0 + hh) * s + q));
        for (int k = 0; k <= q; k++) {
          P[k] /= sum;
          int keep = p == 0 || ptdp_rng_uniform(ptdp_rng_at(rh, (uint64_t)k)) >= p;
          double acc = 0;
          for (int j = 0; j < hd; j++) acc += (double)dO[q * ldc + j] * V[k * ld + j];
          dP[k] = keep ? acc * ks : 0;
          double ds = fabs(P[k] * (dP[k] - D));
          r->colsum_pd[base + k] += keep ? P[k] * ks : 0;
          r->colsum_ds[base + k] += ds;
          r->rowsum_ds[base + q] += ds;
        }
      }
    }
  free(P);
  free(dP);
}

static float max_abs(const float *x, size_t n)
{
  float m = 0;
  for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
  return m;
}

/* Worst |got - want| / bound over a [N, width] block's elements that belong to (bi, u) pairs, u
 * the units of part (col_of); NaN (an unwritten element) counts as infinitely bad. */
typedef double (*bound_fn)(const void *ctx, int bi, int u, int pos, int j);

static double worst_ratio(const flash_case *c, const float *got, const float *want, long long row_stride, int part,
                          bound_fn bound, const void *bctx, double *worst_abs)
{
  double worst = 0;
  const int nu = part > 0 ? groups_of(c) : c->al;
  for (int pos = 0; pos < c->s; pos++)
    for (int bi = 0; bi < c->b; bi++)
      for (int u = 0; u < nu; u++)
        for (int j = 0; j < c->hd; j++) {
          size_t i = (size_t)(pos * c->b + bi) * row_stride + col_of(c, part, u) + j;
          double diff = fabs((double)got[i] - want[i]), bd = bound(bctx, bi, u, pos, j);
          if (!(diff <= 1e30)) diff = INFINITY;
          worst = fmax(worst, diff / bd);
          *worst_abs = fmax(*worst_abs, diff);
        }
  return worst;
}

typedef struct {
  const flash_case *c;
  double u, vmax, qmax, kmax, domax, scale;
  const ref_sums *r;
  const float *want; /* the reference output, for the u |x| term */
  long long row_stride;
  int part; /* as col_of's */
} bound_ctx;

static double ref_at(const bound_ctx *b, int bi, int u, int pos, int j)
{
  return fabs(b->want[(size_t)(pos * b->c->b + bi) * b->row_stride + col_of(b->c, b->part, u) + j]);
}
static double bound_ctx_fwd(const void *p, int bi, int hh, int pos, int j)
{
  const bound_ctx *b = p;
  (void)bi, (void)hh, (void)pos, (void)j;
  return 2 * b->u * b->vmax / (1.0 - b->c->p) + 1e-5;
}
static size_t pair_row(const bound_ctx *b, int bi, int hh, int pos)
{
  return ((size_t)bi * b->c->al + hh) * b->c->s + pos;
}
/* A reference column sum over group g's query heads (key pos): what the group's dK, dV sum. */
static double group_sum(const bound_ctx *b, const double *colsum, int bi, int g, int pos)
{
  const int hpg = hpg_of(b->c);
  double sum = 0;
  for (int hh = g * hpg; hh < (g + 1) * hpg; hh++) sum += colsum[pair_row(b, bi, hh, pos)];
  return sum;
}
static double bound_dq(const void *p, int bi, int hh, int pos, int j)
{
  const bound_ctx *b = p;
  const double sum = b->r->rowsum_ds[pair_row(b, bi, hh, pos)];
  return 1.5 * (b->u * b->scale * sum * b->kmax + b->u * ref_at(b, bi, hh, pos, j)) + 1e-5;
}
static double bound_dk(const void *p, int bi, int hh, int pos, int j)
{
  const bound_ctx *b = p;
  const double sum = group_sum(b, b->r->colsum_ds, bi, hh, pos);
  return 1.5 * (b->u * b->scale * sum * b->qmax + b->u * ref_at(b, bi, hh, pos, j)) + 1e-5;
}
static double bound_dv(const void *p, int bi, int hh, int pos, int j)
{
  const bound_ctx *b = p;
  return 1.5 * (b->u * group_sum(b, b->r->colsum_pd, bi, hh, pos) * b->domax + b->u * ref_at(b, bi, hh, pos, j)) + 1e-5;
}

static void run_case(ptdp_backend *cpu, const flash_case *c, double *worst_fwd, double *worst_bwd)
{
  const int b = c->b, s = c->s, al = c->al, hd = c->hd, hl = al * hd, w = width_of(c);
  const size_t N = (size_t)s * b, nqkv = N * w, nctx = N * hl, nl = (size_t)b * al * s;
  ptdp_attn_desc d = {.b = b, .s = s, .al = al, .hd = hd, .head0 = 2, .groups = c->groups};
  d.drop = (ptdp_dropout_key){.seed = 1234, .site = 5, .layer = 3, .sample0 = 7, .b = b, .p = c->p};
  float *qkv = malloc(nqkv * sizeof *qkv), *dctx = malloc(nctx * sizeof *dctx);
  float *ctx = malloc(nctx * sizeof *ctx), *lse = malloc(nl * sizeof *lse), *dqkv = malloc(nqkv * sizeof *dqkv);
  for (size_t i = 0; i < nqkv; i++) qkv[i] = round_to(c->t, 2.0f * urand());
  for (size_t i = 0; i < nctx; i++) dctx[i] = round_to(c->t, urand());
  /* the CPU reference: forward, then backward from its lse and its ctx as stored in the type */
  EXPECT(cpu->flash_forward(cpu, &d, qkv, ctx, lse) == 0, "cpu flash_forward failed");
  float *ctx16 = malloc(nctx * sizeof *ctx16);
  for (size_t i = 0; i < nctx; i++) ctx16[i] = round_to(c->t, ctx[i]);
  EXPECT(cpu->flash_backward(cpu, &d, qkv, ctx16, lse, dctx, dqkv) == 0, "cpu flash_backward failed");

  /* the kernels */
  dev_off = 2 * (size_t)c->off, ndev = 0;
  void *g_qkv = dev_of16(c->t, qkv, nqkv), *g_dctx = dev_of16(c->t, dctx, nctx), *g_ctx16 = dev_of16(c->t, ctx16, nctx);
  void *g_ctx = dev_poisoned(nctx * 2), *g_dqkv = dev_poisoned(nqkv * 2);
  dev_off = 0; /* the fp32 buffers aligned */
  float *g_lse = dev_poisoned(nl * 4), *g_lse_cpu = dev_poisoned(nl * 4), *g_drow = dev_poisoned(nl * 4);
  CK(cudaMemcpy(g_lse_cpu, lse, nl * 4, cudaMemcpyHostToDevice));
  CK(ptdp_cuk_flash_forward(0, c->t, &d, g_qkv, g_ctx, g_lse));
  CK(ptdp_cuk_flash_backward(0, c->t, &d, g_qkv, g_ctx16, g_lse_cpu, g_dctx, g_dqkv, g_drow));
  CK(cudaDeviceSynchronize());
  float *k_ctx = host_of16(c->t, g_ctx, nctx), *k_dqkv = host_of16(c->t, g_dqkv, nqkv), *k_lse = malloc(nl * 4);
  CK(cudaMemcpy(k_lse, g_lse, nl * 4, cudaMemcpyDeviceToHost));

  ref_sums r;
  reference_sums(c, &d, qkv, dctx, ctx16, &r);
  float vmax = 0, qmax = 0, kmax = 0;
  for (size_t n = 0; n < N; n++)
    for (int hh = 0; hh < al; hh++)
      for (int j = 0; j < hd; j++) {
        const float *row = qkv + n * w;
        qmax = fmaxf(qmax, fabsf(row[part_of(c, hh, 0) + j])), kmax = fmaxf(kmax, fabsf(row[part_of(c, hh, 1) + j]));
        vmax = fmaxf(vmax, fabsf(row[part_of(c, hh, 2) + j]));
      }
  bound_ctx bc = {.c = c, .u = c->t == PTDP_BF16 ? 1.0 / 256 : 1.0 / 2048, .vmax = vmax, .qmax = qmax, .kmax = kmax,
                  .domax = max_abs(dctx, nctx), .scale = 1.0 / sqrt((double)hd), .r = &r, .want = ctx,
                  .row_stride = hl, .part = -1};
  double abs_ctx = 0, abs_lse = 0, abs_dq = 0, abs_dk = 0, abs_dv = 0;
  double rc = worst_ratio(c, k_ctx, ctx, hl, -1, bound_ctx_fwd, &bc, &abs_ctx);
  for (size_t i = 0; i < nl; i++) {
    double diff = fabs((double)k_lse[i] - lse[i]);
    abs_lse = diff <= 1e30 ? fmax(abs_lse, diff) : INFINITY;
  }
  bc.want = dqkv, bc.row_stride = w;
  bc.part = 0;
  double rq = worst_ratio(c, k_dqkv, dqkv, w, 0, bound_dq, &bc, &abs_dq);
  bc.part = 1;
  double rk = worst_ratio(c, k_dqkv, dqkv, w, 1, bound_dk, &bc, &abs_dk);
  bc.part = 2;
  double rv = worst_ratio(c, k_dqkv, dqkv, w, 2, bound_dv, &bc, &abs_dv);
  const char *tn = c->t == PTDP_BF16 ? "bf16" : "fp16", *kn = kernel_name();
  printf("%s %s b %d s %3d al %d g %d hd %3d p %.1f%s: worst |diff| (and / bound): ctx %.2e (%.2f) lse %.2e "
         "dQ %.2e (%.2f) dK %.2e (%.2f) dV %.2e (%.2f)\n",
         tn, kn, b, s, al, groups_of(c), hd, c->p, c->off ? " (2 bytes off)" : "", abs_ctx, rc, abs_lse, abs_dq, rq,
         abs_dk, rk, abs_dv, rv);
  EXPECT(rc <= 1, "%s %s s %d hd %d p %.1f g %d: ctx differs from the CPU's by %.3g, %.2f times the bound", tn, kn, s,
         hd, c->p, groups_of(c), abs_ctx, rc);
  EXPECT(abs_lse <= 1e-4, "%s %s s %d hd %d: lse differs by %.3g (bound 1e-4)", tn, kn, s, hd, abs_lse);
  const int g = groups_of(c);
  EXPECT(rq <= 1, "%s %s s %d hd %d p %.1f g %d: dQ differs by %.3g, %.2f times the bound", tn, kn, s, hd, c->p, g,
         abs_dq, rq);
  EXPECT(rk <= 1, "%s %s s %d hd %d p %.1f g %d: dK differs by %.3g, %.2f times the bound", tn, kn, s, hd, c->p, g,
         abs_dk, rk);
  EXPECT(rv <= 1, "%s %s s %d hd %d p %.1f g %d: dV differs by %.3g, %.2f times the bound", tn, kn, s, hd, c->p, g,
         abs_dv, rv);
  /* bit-reproducible: the backward again (no atomics, sums in a fixed order) gives the same bits */
  if (c->p > 0 && s > 64) {
    void *g_dqkv2 = dev_poisoned(nqkv * 2);
    CK(ptdp_cuk_flash_backward(0, c->t, &d, g_qkv, g_ctx16, g_lse_cpu, g_dctx, g_dqkv2, g_drow));
    uint16_t *h1 = malloc(nqkv * 2), *h2 = malloc(nqkv * 2);
    CK(cudaMemcpy(h1, g_dqkv, nqkv * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h2, g_dqkv2, nqkv * 2, cudaMemcpyDeviceToHost));
    EXPECT(!memcmp(h1, h2, nqkv * 2), "%s %s s %d: a second backward gives other bits", tn, kn, s);
    free(h1), free(h2);
  }
  worst_fwd[c->t == PTDP_F16] = fmax(worst_fwd[c->t == PTDP_F16], abs_ctx);
  worst_bwd[c->t == PTDP_F16] = fmax(worst_bwd[c->t == PTDP_F16], fmax(abs_dq, fmax(abs_dk, abs_dv)));

  /* a mask the comparison would see: another seed moves ctx beyond the bound */
  if (c->p > 0 && s >= 17) {
    ptdp_attn_desc d2 = d;
    d2.drop.seed++;
    CK(ptdp_cuk_flash_forward(0, c->t, &d2, g_qkv, g_ctx, g_lse));
    float *k2 = host_of16(c->t, g_ctx, nctx);
    bc.want = ctx, bc.row_stride = hl, bc.part = -1;
    double abs2 = 0, r2 = worst_ratio(c, k2, ctx, hl, -1, bound_ctx_fwd, &bc, &abs2);
    EXPECT(r2 > 1, "%s %s s %d: another dropout seed stays within the bound (%.2f): the test would not see a mask", tn, kn,
           s, r2);
    free(k2);
  }
  free(r.colsum_pd), free(r.colsum_ds), free(r.rowsum_ds);
  free(qkv), free(dctx), free(ctx), free(lse), free(dqkv), free(ctx16), free(k_ctx), free(k_dqkv), free(k_lse);
  for (int i = 0; i < ndev; i++) CK(cudaFree(dev_base[i]));
}

static const char *kernel_name(void) { return ptdp_cuk_flash_kernel() == PTDP_FLASH_KERNEL_MMA ? "mma" : "wmma"; }

int main(void)
{
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) { /* test_cuda_flash on a node without a GPU */
    printf("SKIP: %s: no GPU (cudaGetDeviceCount)\n", TEST_NAME);
    return 77;
  }
  ptdp_backend *cpu = NULL;
  if (ptdp_backend_cpu_create(&cpu) || !cpu->flash_forward) {
    fprintf(stderr, "%s: no CPU backend with flash attention\n", TEST_NAME);
    return 2;
  }
  /* the default is PTDP_FLASH_KERNEL's (unset: mma) */
  const char *ev = getenv("PTDP_FLASH_KERNEL");
  const ptdp_flash_kernel want = ev && !strcmp(ev, "wmma") ? PTDP_FLASH_KERNEL_WMMA : PTDP_FLASH_KERNEL_MMA;
  EXPECT(ptdp_cuk_flash_kernel() == want, "PTDP_FLASH_KERNEL=%s: the kernels in use are not the variable's", ev ? ev : "");
  /* both sets of kernels on every case (the mma kernels cover hd 64 and 128; the other cases
   * run the wmma kernels in both passes); with PTDP_FLASH_KERNEL set, only the variable's (the
   * plant runs each so, and its failures are not crowded out of EXPECT's first 20 by the other's) */
  const ptdp_flash_kernel kinds[2] = {PTDP_FLASH_KERNEL_WMMA, PTDP_FLASH_KERNEL_MMA};
  const int only = ev && *ev;
  const char *gv = getenv("PTDP_TEST_FLASH_GROUPED");
  const int grouped_only = gv && !strcmp(gv, "1");
  for (int v = 0; v < 2; v++) {
    if (only && kinds[v] != want) continue;
    ptdp_cuk_flash_set_kernel(only ? PTDP_FLASH_KERNEL_ENV : kinds[v]);
    srand(11);
    double worst_fwd[2] = {0, 0}, worst_bwd[2] = {0, 0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      if (!grouped_only || groups_of(&cases[i]) != cases[i].al) run_case(cpu, &cases[i], worst_fwd, worst_bwd);
    printf("%s kernels: worst |diff| over all cases: bf16 ctx %.2e, gradients %.2e; fp16 ctx %.2e, gradients %.2e\n",
           kernel_name(), worst_fwd[0], worst_bwd[0], worst_fwd[1], worst_bwd[1]);
  }
  ptdp_cuk_flash_set_kernel(PTDP_FLASH_KERNEL_ENV);
  /* shapes the kernels do not cover are refused, not run */
  ptdp_attn_desc bad = {.b = 1, .s = 8, .al = 1, .hd = 40};
  EXPECT(ptdp_cuk_flash_forward(0, PTDP_BF16, &bad, NULL, NULL, NULL) == cudaErrorInvalidValue, "hd 40 not refused");
  bad.hd = 144;
  EXPECT(!ptdp_cuk_flash_supported(&bad), "hd 144 said to be supported");
  bad.hd = 64, bad.al = 4, bad.groups = 3;
  EXPECT(!ptdp_cuk_flash_supported(&bad), "4 heads in 3 groups said to be supported");
  bad.groups = 2;
  EXPECT(ptdp_cuk_flash_supported(&bad), "4 heads in 2 groups said not to be supported");
  bad.al = 1, bad.groups = 0;
  bad.hd = 64;
  EXPECT(ptdp_cuk_flash_forward(0, PTDP_F32, &bad, NULL, NULL, NULL) == cudaErrorInvalidValue, "fp32 not refused");
  cpu->destroy(cpu); /* not ptdp_backend_destroy: backend.c would link the whole CUDA backend */
  free(cpu);
  return expect_summary(TEST_NAME);
}
