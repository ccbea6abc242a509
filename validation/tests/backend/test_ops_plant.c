/* Planted mistakes for the conformance suite (test_ops --plant): the suite proves it can fail.
 *
 * Each mistake is one a kernel writer makes, of a kind a different check of the suite must
 * catch: an unwritten last row (the NaN poison), a missing term of a sum and a wrong step (the
 * fp32 bounds), a mask key off by one column and a slice off by one token (the bit-for-bit
 * checks), a wrong index in one element, a sum of squares one element short (the scalar's
 * bound), a conversion one element short and an unscale that never reports an inf or NaN (the
 * exact checks of mixed precision).  Each calls the backend's own operation with the wrong
 * argument, or moves an element with the backend's own add, so it works on memory the host
 * cannot touch (guard, a GPU). */
#include "test_ops.h"

#include <stddef.h>

const test_ops_plant test_ops_plants[] = {
    {"gemm", "the last row of C not computed (M - 1 rows)"},
    {"layernorm_forward", "the last row not written"},
    {"bias_backward", "the last row of dy left out of db"},
    {"dropout_forward", "the mask key's column off by one (col0 + 1)"},
    {"attention_forward", "ctx[0] += ctx[1] (a wrong index in one element)"},
    {"embedding_forward", "the vocabulary slice off by one (v0 + 1)"},
    {"xent_sumexp", "the last row not written"},
    {"adamw", "the bias corrections of the next step (step + 1)"},
    {"sumsq", "one element short (n - 1)"},
    {"convert", "the last element not converted (n - 1)"},
    {"unscale_check", "found always 0 (an inf or NaN never reported)"},
    {NULL, NULL},
};

/* The patched backend's own table, before patching (one patched backend at a time). */
static ptdp_backend orig;

static int bad_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc)
{
  return orig.gemm(be, ta, tb, M > 1 ? M - 1 : M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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

static int bad_adamw(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                     float beta2, float eps, float wd, long long step)
{
  return orig.adamw(be, p, g, m, v, n, lr, beta1, beta2, eps, wd, step + 1);
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
void test_ops_plant_apply(ptdp_backend *be)
{
  orig = *be;
  be->gemm = bad_gemm;
  be->layernorm_forward = bad_layernorm_forward;
  be->bias_backward = bad_bias_backward;
  be->dropout_forward = bad_dropout_forward;
  be->attention_forward = bad_attention_forward;
  be->embedding_forward = bad_embedding_forward;
  be->xent_sumexp = bad_xent_sumexp;
  be->adamw = bad_adamw;
  be->sumsq = bad_sumsq;
  be->convert = bad_convert;
  be->unscale_check = bad_unscale_check;
}

void test_ops_plant_remove(ptdp_backend *be) { *be = orig; }
