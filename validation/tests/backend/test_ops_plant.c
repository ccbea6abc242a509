/* Planted mistakes for the conformance suite (test_ops --plant): the suite proves it can fail.
 *
 * Each mistake is one a kernel writer makes, of a kind a different check of the suite must
 * catch: an unwritten last row (the NaN poison), a missing term of a sum and a wrong step (the
 * fp32 bounds), a mask key off by one column and a slice off by one token (the bit-for-bit
 * checks), a wrong index in one element, a sum of squares one element short (the scalar's
 * bound), a conversion one element short and an unscale that never reports an inf or NaN (the
 * exact checks of mixed precision), a strided A read with an ld one short (gemm_wgrad), an
 * in-place result never written back (bias_forward's y: a wrapper that treats it as an input
 * only), AdamW over many tensors with the clipping factor ignored (checked against the
reference's scale and adamw).  In bf16 and fp16 only, mistakes of the mixed-precision wrapper's rounding: add's result
 * rounded toward zero instead of to nearest even (what dropping the low 16 bits of a float does
 * for bf16), and embedding_backward's fp32 dwte rounded to the storage type (an fp32 gradient
 * taken for an (S) argument).  In the optional fused epilogues, where a backend has them: the
 * bias added twice, the bias gradient overwritten instead of accumulated; in the Llama family's,
 * RMSNorm's backward one row short (its dx row unwritten: the poison), RoPE turned the wrong way,
 * SwiGLU's rows one element short (read and written askew).  No planted operation reads
 * another's planted output in the suite, so the check that catches a mistake is that operation's
 * own.  Each calls the backend's own
 * operations with the wrong argument, or moves data with them (add, convert, copy, to_host,
 * to_device), so it works on memory the host cannot touch (guard, a GPU). */
#include "test_ops.h"

#include "ptdp/error.h"
#include "ptdp/half.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ALL TEST_OPS_ALL_TYPES
const test_ops_plant test_ops_plants[] = {
    {"gemm", "the last row of C not computed (M - 1 rows)", ALL},
    {"gemm_wgrad", "lda one short (a strided A read as shorter rows)", ALL},
    {"layernorm_forward", "the last row not written", ALL},
    {"bias_backward", "the last row of dy left out of db", ALL},
    {"dropout_forward", "the mask key's column off by one (col0 + 1)", ALL},
    {"attention_forward", "ctx[0] += ctx[1] (a wrong index in one element)", ALL},
    {"embedding_forward", "the vocabulary slice off by one (v0 + 1)", ALL},
    {"xent_sumexp", "the last row not written", ALL},
    {"xent_loss", "the last row left out (the mean of the others)", ALL},
    {"bias_dropout_add", "the bias left out", ALL},
    {"bias_dropout_add_layernorm", "the LayerNorm's weight and bias swapped", ALL},
    {"bias_dropout_add_rmsnorm", "the last row left out", ALL},
    {"xent_fused", "the gradient's scale ignored (taken as 1)", ALL},
    {"xent_stats_local", "the sum halved", ALL},
    {"dropout_backward_to", "the keep scale left out (p taken as 0: a copy)", ALL},
    {"layernorm_backward_add", "the residual's gradient left out", ALL},
    {"rmsnorm_backward_add", "the residual's gradient added twice", ALL},
    {"bias_forward", "y left as it was (the in-place result not written back)", ALL},
    {"adamw", "the bias corrections of the next step (step + 1)", ALL},
    {"adamw_many", "the clipping factor ignored (gscale taken as 1)", ALL},
    {"sumsq", "one element short (n - 1)", ALL},
    {"convert", "the last element not converted (n - 1)", ALL},
    {"unscale_check", "found always 0 (an inf or NaN never reported)", ALL},
    {"add", "y rounded toward zero instead of to nearest even", TEST_OPS_16BIT},
    {"embedding_backward", "the fp32 dwte rounded to the storage type", TEST_OPS_16BIT},
    {"gemm_bias", "the bias added twice (the fused and the unfused step both)", ALL},
    {"gemm_dgelu_bgrad", "db overwritten instead of accumulated into", ALL},
    {"rmsnorm_backward", "the last row left out of dw and dx", ALL},
    {"rope", "turned the other way (the inverse for the forward and back)", ALL},
    {"swiglu_forward", "each row's width one short (f - 1: the rows read and written askew)", ALL},
    {NULL, NULL, 0},
};

/* The patched backend's own table, before patching (one patched backend at a time). */
static ptdp_backend orig;

static int bad_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc)
{
  return orig.gemm(be, ta, tb, M > 1 ? M - 1 : M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static int bad_gemm_wgrad(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                          int lda, const float *B, int ldb, float *C, int ldc)
{
  const int short_lda = lda > 1 ? lda - 1 : lda;
  if (orig.gemm_wgrad) return orig.gemm_wgrad(be, ta, tb, M, N, K, alpha, A, short_lda, B, ldb, C, ldc);
  return orig.gemm(be, ta, tb, M, N, K, alpha, A, short_lda, B, ldb, 1.0f, C, ldc);
}

static int bad_layernorm_forward(ptdp_backend *be, const float *x, const float *w, const float *b, float *y,
                                 float *mean, float *rstd, long long rows, int h, float eps)
{
  return orig.layernorm_forward(be, x, w, b, y, mean, rstd, rows > 1 ? rows - 1 : rows, h, eps);
}

static int bad_bias_backward(ptdp_backend *be, const float *dy, float *db, long long rows, int cols)
{
  return orig.bias_backward(be, dy, db, rows > 1 ? rows - 1 : rows, cols);
}

static int bad_dropout_forward(ptdp_backend *be, float *x, uint8_t *mask, long long rows, int cols,
                               const ptdp_dropout_key *k)
{
  ptdp_dropout_key shifted = *k;
  shifted.col0++;
  return orig.dropout_forward(be, x, mask, rows, cols, &shifted);
}

static int bad_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                                 uint8_t *mask, float *probs_drop, float *ctx)
{
  int err = orig.attention_forward(be, d, qkv, probs, mask, probs_drop, ctx);
  return err ? err : orig.add(be, ctx, ctx + 1, 1);
}

static int bad_embedding_forward(ptdp_backend *be, const float *wte, const int32_t *tok, long long v0, long long vl,
                                 float *out, long long rows, int h)
{
  return orig.embedding_forward(be, wte, tok, v0 + 1, vl, out, rows, h);
}

static int bad_xent_sumexp(ptdp_backend *be, const float *logits, const float *gmax, long long rows, int vl, float *se)
{
  return orig.xent_sumexp(be, logits, gmax, rows > 1 ? rows - 1 : rows, vl, se);
}

static int bad_xent_loss(ptdp_backend *be, const float *gmax, const float *se, const float *tgt, long long rows,
                         float *loss)
{
  return orig.xent_loss(be, gmax, se, tgt, rows > 1 ? rows - 1 : rows, loss);
}

static int bad_bias_dropout_add(ptdp_backend *be, float *y, const float *bias, uint8_t *mask,
                                const ptdp_dropout_key *k, const float *res, long long rows, int cols)
{
  (void)bias;
  return orig.bias_dropout_add(be, y, NULL, mask, k, res, rows, cols);
}

static int bad_bias_dropout_add_layernorm(ptdp_backend *be, float *y, const float *bias, uint8_t *mask,
                                          const ptdp_dropout_key *k, const float *res, long long rows, int h,
                                          const float *w, const float *nb, float *out, float *mean, float *rstd,
                                          float eps)
{
  return orig.bias_dropout_add_layernorm(be, y, bias, mask, k, res, rows, h, nb, w, out, mean, rstd, eps);
}

static int bad_bias_dropout_add_rmsnorm(ptdp_backend *be, float *y, const float *bias, uint8_t *mask,
                                        const ptdp_dropout_key *k, const float *res, long long rows, int h,
                                        const float *w, float *out, float *rstd, float eps)
{
  return orig.bias_dropout_add_rmsnorm(be, y, bias, mask, k, res, rows > 1 ? rows - 1 : rows, h, w, out, rstd, eps);
}

static int bad_xent_fused(ptdp_backend *be, float *logits, const int32_t *target, long long v0, long long rows, int vl,
                          float *rowmax, float *se, float *tgt, float scale)
{
  (void)scale;
  return orig.xent_fused(be, logits, target, v0, rows, vl, rowmax, se, tgt, 1.0f);
}

static int bad_dropout_backward_to(ptdp_backend *be, float *dst, const float *src, const uint8_t *mask, size_t n,
                                   float p)
{
  (void)p;
  return orig.dropout_backward_to(be, dst, src, mask, n, 0.0f);
}

static int bad_layernorm_backward_add(ptdp_backend *be, const float *dy, const float *x, const float *w,
                                      const float *mean, const float *rstd, float *dx, float *dw, float *db,
                                      long long rows, int h, const float *res)
{
  (void)res;
  return orig.layernorm_backward_add(be, dy, x, w, mean, rstd, dx, dw, db, rows, h, NULL);
}

static int bad_rmsnorm_backward_add(ptdp_backend *be, const float *dy, const float *x, const float *w,
                                    const float *rstd, float *dx, float *dw, long long rows, int h, const float *res)
{
  PTDP_CALL(orig.rmsnorm_backward_add(be, dy, x, w, rstd, dx, dw, rows, h, res));
  return be->add(be, dx, res, (size_t)rows * h);
}

static int bad_xent_stats_local(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                                long long rows, int vl, float *lmax, float *lsum, float *tgt)
{
  PTDP_CALL(orig.xent_stats_local(be, logits, target, v0, rows, vl, lmax, lsum, tgt));
  return orig.scale(be, lsum, 0.5f, (size_t)rows);
}

static int bad_adamw_many(ptdp_backend *be, const ptdp_adamw_range *r, int count, ptdp_dtype t16, float gscale,
                          float lr, float beta1, float beta2, float eps, long long step)
{
  (void)gscale;
  return orig.adamw_many(be, r, count, t16, 1.0f, lr, beta1, beta2, eps, step);
}

static int bad_adamw(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                     float beta2, float eps, float wd, long long step)
{
  return orig.adamw(be, p, g, m, v, n, lr, beta1, beta2, eps, wd, step + 1);
}

/* The result computed on a copy, the copy dropped. */
static int bad_bias_forward(ptdp_backend *be, float *y, const float *bias, long long rows, int cols)
{
  const size_t bytes = (size_t)rows * (size_t)cols * ptdp_dtype_size(be->dtype);
  void *copy = NULL;
  int err = be->alloc(be, &copy, bytes) || be->copy(be, copy, y, bytes) ||
            orig.bias_forward(be, copy, bias, rows, cols);
  be->free(be, copy);
  return err;
}

/* v in type t rounded toward zero: to nearest, then one step back toward zero if that went past v. */
static void store_truncated(void *p, ptdp_dtype t, size_t i, float v)
{
  ptdp_half_store(p, t, i, v);
  if (fabsf(ptdp_half_load(p, t, i)) > fabsf(v)) ((uint16_t *)p)[i]--; /* sign and magnitude: one ulp less */
}

/* y + x in fp32 on the host (what the inner add computes), stored truncated. */
static int bad_add(ptdp_backend *be, float *y, const float *x, size_t n)
{
  const ptdp_dtype t = be->dtype;
  const size_t bytes = n * ptdp_dtype_size(t);
  char *hy = malloc(bytes + 1), *hx = malloc(bytes + 1);
  int err = !hy || !hx ? PTDP_FAIL(PTDP_ERR_MEM, "out of memory") : 0;
  err = err || be->to_host(be, hy, y, bytes) || be->to_host(be, hx, x, bytes) || be->synchronize(be);
  for (size_t i = 0; !err && i < n; i++)
    store_truncated(hy, t, i, ptdp_half_load(hy, t, i) + ptdp_half_load(hx, t, i));
  err = err || be->to_device(be, y, hy, bytes) || be->synchronize(be);
  free(hy);
  free(hx);
  return err;
}

/* dwte through the storage type and back (a round trip that rounds it). */
static int bad_embedding_backward(ptdp_backend *be, const float *dout, const int32_t *tok, long long v0, long long vl,
                                  float *dwte, long long rows, int h)
{
  const size_t n = (size_t)vl * (size_t)h;
  void *tmp = NULL;
  int err = orig.embedding_backward(be, dout, tok, v0, vl, dwte, rows, h) ||
            be->alloc(be, &tmp, n * ptdp_dtype_size(be->dtype)) || be->convert(be, tmp, be->dtype, dwte, PTDP_F32, n) ||
            be->convert(be, dwte, PTDP_F32, tmp, be->dtype, n);
  be->free(be, tmp);
  return err;
}

/* Optional operations: planted only in a backend that has them. */
static int bad_gemm_bias(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda,
                         const float *B, int ldb, const float *bias, float *C)
{
  int err = orig.gemm_bias(be, ta, tb, M, N, K, A, lda, B, ldb, bias, C);
  return err ? err : orig.bias_forward(be, C, bias, M, N);
}

static int bad_gemm_dgelu_bgrad(ptdp_backend *be, int ta, int tb, int M, int N, int K, const float *A, int lda,
                                const float *B, int ldb, const float *pre, float *C, float *db)
{
  int err = orig.memset0(be, db, (size_t)N * sizeof(float));
  return err ? err : orig.gemm_dgelu_bgrad(be, ta, tb, M, N, K, A, lda, B, ldb, pre, C, db);
}

static int bad_rmsnorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                                float *dx, float *dw, long long rows, int h)
{
  return orig.rmsnorm_backward(be, dy, x, w, rstd, dx, dw, rows > 1 ? rows - 1 : rows, h);
}

static int bad_rope(ptdp_backend *be, float *qkv, const ptdp_rope_desc *d, const float *table, int inverse)
{
  return orig.rope(be, qkv, d, table, !inverse);
}

static int bad_swiglu_forward(ptdp_backend *be, const float *x, float *y, long long rows, int f)
{
  return orig.swiglu_forward(be, x, y, rows, f > 1 ? f - 1 : f);
}

static double bad_sumsq(ptdp_backend *be, const float *x, size_t n) { return orig.sumsq(be, x, n > 1 ? n - 1 : n); }

static int bad_convert(ptdp_backend *be, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype st, size_t n)
{
  return orig.convert(be, dst, dt, src, st, n > 1 ? n - 1 : n);
}

static int bad_unscale_check(ptdp_backend *be, float *x, size_t n, float inv_scale, int *found)
{
  int err = orig.unscale_check(be, x, n, inv_scale, found);
  *found = 0;
  return err;
}

/* The backends' operations reach their state through be->ctx only, so the patched table, with
 * the same ctx, still drives them. */
/* Operation op is planted in a backend storing t. */
static int planted(const char *op, ptdp_dtype t)
{
  for (const test_ops_plant *p = test_ops_plants; p->op; p++)
    if (!strcmp(p->op, op)) return p->types >> t & 1;
  return 0;
}

/* The operations patched by the last test_ops_plant_apply. */
static const char *applied[32];
static int napplied;

#define PLANT_IF(be, op, cond)                                                        \
  do {                                                                                \
    if (planted(#op, (be)->dtype) && (cond) && napplied < 32) {                       \
      (be)->op = bad_##op;                                                            \
      applied[napplied++] = #op;                                                      \
    }                                                                                 \
  } while (0)
#define PLANT(be, op) PLANT_IF(be, op, 1)
/* an optional operation (NULL where the backend, or the reference it is checked against, has none) */
#define PLANT_OPTIONAL(be, op) PLANT_IF(be, op, (be)->op != NULL && ref->op != NULL)

int test_ops_plant_applied(const char *op)
{
  for (int i = 0; i < napplied; i++)
    if (!strcmp(applied[i], op)) return 1;
  return 0;
}

void test_ops_plant_apply(ptdp_backend *be, const ptdp_backend *ref)
{
  orig = *be;
  napplied = 0;
  PLANT(be, gemm);
  PLANT(be, gemm_wgrad);
  PLANT(be, layernorm_forward);
  PLANT(be, bias_forward);
  PLANT(be, bias_backward);
  PLANT(be, add);
  PLANT(be, dropout_forward);
  PLANT(be, attention_forward);
  PLANT(be, embedding_forward);
  PLANT(be, embedding_backward);
  PLANT(be, xent_sumexp);
  PLANT(be, adamw);
  PLANT(be, sumsq);
  PLANT(be, convert);
  PLANT(be, unscale_check);
  PLANT_OPTIONAL(be, gemm_bias);
  PLANT_OPTIONAL(be, gemm_dgelu_bgrad);
  PLANT_OPTIONAL(be, rmsnorm_backward);
  PLANT_OPTIONAL(be, rope);
  PLANT_OPTIONAL(be, swiglu_forward);
  PLANT_OPTIONAL(be, xent_loss);
  PLANT_OPTIONAL(be, xent_stats_local);
  PLANT_IF(be, bias_dropout_add, (be)->bias_dropout_add != NULL); /* against the reference's sequence */
  PLANT_IF(be, xent_fused, (be)->xent_fused != NULL);             /* against its own three */
  PLANT_IF(be, bias_dropout_add_layernorm, (be)->bias_dropout_add_layernorm != NULL);
  PLANT_IF(be, bias_dropout_add_rmsnorm, (be)->bias_dropout_add_rmsnorm != NULL);
  PLANT_IF(be, dropout_backward_to, (be)->dropout_backward_to != NULL);
  PLANT_IF(be, layernorm_backward_add, (be)->layernorm_backward_add != NULL);
  PLANT_IF(be, rmsnorm_backward_add, (be)->rmsnorm_backward_add != NULL);
  PLANT_IF(be, adamw_many, (be)->adamw_many != NULL); /* checked against the reference's adamw: it needs no twin */
}

void test_ops_plant_remove(ptdp_backend *be) { *be = orig; }
