/* Mixed precision: a backend storing bf16 or fp16 on top of an fp32 one.
 *
 * Each operation with (S) arguments (ptdp/backend.h) is one call pattern:
 *   1. name its (S) operands: storage pointer, extent in elements, read and/or written;
 *   2. carve one fp32 region per distinct pointer out of the work space and widen the operands
 *      read (inner->convert: exact);
 *   3. run inner's fp32 operation on the regions, fp32 arguments passed through untouched;
 *   4. round the operands written back to storage (inner->convert: to nearest even).
 * So the arithmetic is inner's, bit for bit, and every stored value is a bf16/fp16 number.
 *
 * Aliasing: operands are keyed by pointer, so an output that is also an input (bias_forward's y,
 * xent_grad's logits, gelu_backward's dx = dy, attention's probs_drop = probs) has one region,
 * widened once, updated in place by inner and rounded once; two regions for one pointer would
 * write the storage twice, the last (perhaps stale) copy winning.
 *
 * Strided gemm operands (ld past the row, a slice of a wider matrix) are converted over their
 * whole extent, (rows - 1) ld + cols elements, and keep their ld in the work space.  C's extent
 * is written back whole, so C is also widened whenever ldc > N (even under beta 0): the elements
 * between its rows (the wider matrix's other columns) go round trip, which is exact for every
 * number (a NaN there comes back as the canonical NaN 0x7fff).
 *
 * The work space is one fp32 allocation from inner, kept across calls and grown (freed and
 * allocated again, larger) when an operation needs more, so after the first step it is the
 * largest operation's need (ptdp_backend_mixed_work_bytes).  On the CUDA backend every step is
 * queued on the one stream, so reusing the space for the next operation is ordered after the
 * last one's reads; inner->free waits for the stream to drain before cudaFree. */
#include "ptdp/backend.h"
#include "ptdp/error.h"

#include <assert.h>
#include <stdlib.h>

/* Most (S) operands of one operation (attention_backward: qkv, probs, probs_drop, dctx, dqkv). */
#define MIXED_MAX_OPERANDS 6
/* Regions start at multiples of 64 floats (256 bytes), the alignment of a fresh allocation. */
#define MIXED_ALIGN 64

typedef struct {
  ptdp_backend *inner; /* fp32, owned */
  ptdp_dtype t;        /* the storage type */
  float *work;         /* fp32 work space from inner->alloc */
  size_t cap;          /* its floats */
} mixed_ctx;

/* One (S) operand of a call: storage s of n elements, whether the operation reads and writes
 * it, and its fp32 region. */
typedef struct {
  const void *s;
  size_t n;
  int in, out;
  float *w;
} operand;

typedef struct {
  mixed_ctx *c;
  operand op[MIXED_MAX_OPERANDS];
  int count;
} call;

#define MX(be) ((mixed_ctx *)(be)->ctx)
#define INNER(be) (MX(be)->inner)
#define W(k, i) ((k).op[i].w)

/* Elements from a strided matrix's first to its last used one: rows of ld, the last `cols` long. */
static size_t extent(long long rows, long long cols, int ld)
{
  return rows > 0 && cols > 0 ? (size_t)(rows - 1) * (size_t)ld + (size_t)cols : 0;
}

/* Name an operand (step 1); returns its index, the same for a pointer named twice. */
static int use(call *k, const void *s, size_t n, int in, int out)
{
  int i = 0;
  while (i < k->count && k->op[i].s != s) i++;
  if (i == k->count) {
    assert(k->count < MIXED_MAX_OPERANDS);
    k->op[k->count++] = (operand){.s = s};
  }
  operand *o = &k->op[i];
  o->n = n > o->n ? n : o->n;
  o->in |= in;
  o->out |= out;
  return i;
}

/* Floats of an operand's region: at least one (a valid pointer for an empty operand), whole
 * multiples of MIXED_ALIGN so the next region stays aligned. */
static size_t region(size_t n) { return (n / MIXED_ALIGN + 1) * MIXED_ALIGN; }

/* A work space of at least n floats.  Growing frees the old space first (the CUDA backend's free
 * waits for queued work to finish), so the peak is the new size, not old plus new. */
static int work_reserve(mixed_ctx *c, size_t n)
{
  if (n <= c->cap) return 0;
  c->inner->free(c->inner, c->work);
  c->work = NULL;
  c->cap = 0;
  PTDP_CALL(c->inner->alloc(c->inner, (void **)&c->work, n * sizeof(float)));
  c->cap = n;
  return 0;
}

/* Step 2: regions carved, operands read widened to fp32. */
static int call_begin(call *k)
{
  size_t need = 0;
  for (int i = 0; i < k->count; i++) need += region(k->op[i].n);
  PTDP_CALL(work_reserve(k->c, need));
  ptdp_backend *in = k->c->inner;
  float *at = k->c->work;
  for (int i = 0; i < k->count; i++) {
    operand *o = &k->op[i];
    o->w = at;
    at += region(o->n);
    if (o->in && o->n) PTDP_CALL(in->convert(in, o->w, PTDP_F32, o->s, k->c->t, o->n));
  }
  return 0;
}

/* Step 4: operands written rounded back to storage. */
static int call_end(call *k)
{
  ptdp_backend *in = k->c->inner;
  for (int i = 0; i < k->count; i++) {
    operand *o = &k->op[i];
    if (o->out && o->n) PTDP_CALL(in->convert(in, (void *)o->s, k->c->t, o->w, PTDP_F32, o->n));
  }
  return 0;
}

/* ---- memory and fp32-only operations: inner's ---- */

static int mx_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  PTDP_CALL(INNER(be)->alloc(INNER(be), p, bytes));
  return 0;
}

static void mx_free(ptdp_backend *be, void *p) { INNER(be)->free(INNER(be), p); }

static int mx_memset0(ptdp_backend *be, void *p, size_t bytes)
{
  PTDP_CALL(INNER(be)->memset0(INNER(be), p, bytes));
  return 0;
}

static int mx_copy(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  PTDP_CALL(INNER(be)->copy(INNER(be), dst, src, bytes));
  return 0;
}

static int mx_to_device(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  PTDP_CALL(INNER(be)->to_device(INNER(be), dst, src, bytes));
  return 0;
}

static int mx_to_host(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  PTDP_CALL(INNER(be)->to_host(INNER(be), dst, src, bytes));
  return 0;
}

static int mx_synchronize(ptdp_backend *be)
{
  PTDP_CALL(INNER(be)->synchronize(INNER(be)));
  return 0;
}

static int mx_scale(ptdp_backend *be, float *y, float a, size_t n)
{
  PTDP_CALL(INNER(be)->scale(INNER(be), y, a, n));
  return 0;
}

static int mx_adamw(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                    float beta2, float eps, float wd, long long step)
{
  PTDP_CALL(INNER(be)->adamw(INNER(be), p, g, m, v, n, lr, beta1, beta2, eps, wd, step));
  return 0;
}

static int mx_adamw_many(ptdp_backend *be, const ptdp_adamw_range *r, int count, ptdp_dtype t16, float gscale,
                         float lr, float beta1, float beta2, float eps, long long step)
{
  return INNER(be)->adamw_many(INNER(be), r, count, t16, gscale, lr, beta1, beta2, eps, step);
}

static int mx_xent_rescale(ptdp_backend *be, float *lsum, const float *lmax, const float *gmax, long long rows)
{
  return INNER(be)->xent_rescale(INNER(be), lsum, lmax, gmax, rows); /* all fp32 */
}

static int mx_xent_loss(ptdp_backend *be, const float *gmax, const float *se, const float *tgt, long long rows,
                        float *loss)
{
  return INNER(be)->xent_loss(INNER(be), gmax, se, tgt, rows, loss); /* all fp32 */
}

static double mx_sumsq(ptdp_backend *be, const float *x, size_t n) { return INNER(be)->sumsq(INNER(be), x, n); }
static int mx_sumsq_many(ptdp_backend *be, const float *const *x, const size_t *n, int count, double *out)
{
  return INNER(be)->sumsq_many(INNER(be), x, n, count, out);
}

static int mx_convert(ptdp_backend *be, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype st, size_t n)
{
  PTDP_CALL(INNER(be)->convert(INNER(be), dst, dt, src, st, n));
  return 0;
}

static int mx_unscale_check(ptdp_backend *be, float *x, size_t n, float inv_scale, int *found)
{
  PTDP_CALL(INNER(be)->unscale_check(INNER(be), x, n, inv_scale, found));
  return 0;
}

/* ---- operations on (S) arguments: steps 1 to 4 ---- */

/* C's extent is read when beta uses it, and when rows are strided: it is written back whole. */
static int mx_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                   const float *B, int ldb, float beta, float *C, int ldc)
{
  call k = {.c = MX(be)};
  const int a = use(&k, A, extent(ta ? K : M, ta ? M : K, lda), 1, 0);
  const int b = use(&k, B, extent(tb ? N : K, tb ? K : N, ldb), 1, 0);
  const int c = use(&k, C, extent(M, N, ldc), beta != 0.0f || ldc > N, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->gemm(INNER(be), ta, tb, M, N, K, alpha, W(k, a), lda, W(k, b), ldb, beta, W(k, c), ldc));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* C (fp32, the main gradient) is accumulated into by inner directly. */
static int mx_gemm_wgrad(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                         const float *B, int ldb, float *C, int ldc)
{
  call k = {.c = MX(be)};
  const int a = use(&k, A, extent(ta ? K : M, ta ? M : K, lda), 1, 0);
  const int b = use(&k, B, extent(tb ? N : K, tb ? K : N, ldb), 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->gemm(INNER(be), ta, tb, M, N, K, alpha, W(k, a), lda, W(k, b), ldb, 1.0f, C, ldc));
  return 0;
}

static int mx_layernorm_forward(ptdp_backend *be, const float *x, const float *w, const float *bias, float *y,
                                float *mean, float *rstd, long long rows, int h, float eps)
{
  call k = {.c = MX(be)};
  const size_t n = (size_t)rows * (size_t)h;
  const int ix = use(&k, x, n, 1, 0), iw = use(&k, w, (size_t)h, 1, 0), ib = use(&k, bias, (size_t)h, 1, 0);
  const int iy = use(&k, y, n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->layernorm_forward(INNER(be), W(k, ix), W(k, iw), W(k, ib), W(k, iy), mean, rstd, rows, h, eps));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* dw, db (fp32) accumulated by inner directly; mean, rstd are fp32. */
static int mx_layernorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *mean,
                                 const float *rstd, float *dx, float *dw, float *db, long long rows, int h)
{
  call k = {.c = MX(be)};
  const size_t n = (size_t)rows * (size_t)h;
  const int idy = use(&k, dy, n, 1, 0), ix = use(&k, x, n, 1, 0), iw = use(&k, w, (size_t)h, 1, 0);
  const int idx = use(&k, dx, n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->layernorm_backward(INNER(be), W(k, idy), W(k, ix), W(k, iw), mean, rstd, W(k, idx), dw, db, rows,
                                          h));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_gelu_forward(ptdp_backend *be, const float *x, float *y, size_t n)
{
  call k = {.c = MX(be)};
  const int ix = use(&k, x, n, 1, 0), iy = use(&k, y, n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->gelu_forward(INNER(be), W(k, ix), W(k, iy), n));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_gelu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, size_t n)
{
  call k = {.c = MX(be)};
  const int ix = use(&k, x, n, 1, 0), idy = use(&k, dy, n, 1, 0), idx = use(&k, dx, n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->gelu_backward(INNER(be), W(k, ix), W(k, idy), W(k, idx), n));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_bias_forward(ptdp_backend *be, float *y, const float *bias, long long rows, int cols)
{
  call k = {.c = MX(be)};
  const int iy = use(&k, y, (size_t)rows * (size_t)cols, 1, 1), ib = use(&k, bias, (size_t)cols, 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->bias_forward(INNER(be), W(k, iy), W(k, ib), rows, cols));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_bias_backward(ptdp_backend *be, const float *dy, float *db, long long rows, int cols)
{
  call k = {.c = MX(be)};
  const int idy = use(&k, dy, (size_t)rows * (size_t)cols, 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->bias_backward(INNER(be), W(k, idy), db, rows, cols));
  return 0;
}

static int mx_add(ptdp_backend *be, float *y, const float *x, size_t n)
{
  call k = {.c = MX(be)};
  const int iy = use(&k, y, n, 1, 1), ix = use(&k, x, n, 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->add(INNER(be), W(k, iy), W(k, ix), n));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* p == 0 is a no-op by the interface: nothing is converted (the mask is left as it was too). */
static int mx_dropout_forward(ptdp_backend *be, float *x, uint8_t *mask, long long rows, int cols,
                              const ptdp_dropout_key *key)
{
  if (!(key->p > 0.0f)) return 0;
  call k = {.c = MX(be)};
  const int ix = use(&k, x, (size_t)rows * (size_t)cols, 1, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->dropout_forward(INNER(be), W(k, ix), mask, rows, cols, key));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_dropout_backward(ptdp_backend *be, float *dx, const uint8_t *mask, size_t n, float p)
{
  if (!(p > 0.0f)) return 0;
  call k = {.c = MX(be)};
  const int idx = use(&k, dx, n, 1, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->dropout_backward(INNER(be), W(k, idx), mask, n, p));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* Sizes of the attention's (S) tensors: qkv [N, (al + 2 groups) hd], probs [b, al, s, s], ctx [N, hl]. */
static size_t attn_qkv(const ptdp_attn_desc *d)
{
  const int g = d->groups > 0 ? d->groups : d->al;
  return (size_t)d->s * d->b * (size_t)(d->al + 2 * g) * d->hd;
}
static size_t attn_probs(const ptdp_attn_desc *d) { return (size_t)d->b * d->al * d->s * d->s; }
static size_t attn_ctx(const ptdp_attn_desc *d) { return (size_t)d->s * d->b * d->al * d->hd; }

/* Without dropout (p == 0) inner reads and writes probs only: probs_drop shares its region, as
 * it shares its storage when the caller aliases them, and is neither widened nor rounded. */
static int mx_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                                uint8_t *mask, float *probs_drop, float *ctx)
{
  call k = {.c = MX(be)};
  const int drop = d->drop.p > 0.0f;
  const int iq = use(&k, qkv, attn_qkv(d), 1, 0), ip = use(&k, probs, attn_probs(d), 0, 1);
  const int ipd = drop ? use(&k, probs_drop, attn_probs(d), 0, 1) : ip;
  const int ic = use(&k, ctx, attn_ctx(d), 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->attention_forward(INNER(be), d, W(k, iq), W(k, ip), mask, W(k, ipd), W(k, ic)));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* scratch is fp32, inner's own. */
static int mx_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                                 const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                                 float *scratch)
{
  call k = {.c = MX(be)};
  const int drop = d->drop.p > 0.0f;
  const int iq = use(&k, qkv, attn_qkv(d), 1, 0), ip = use(&k, probs, attn_probs(d), 1, 0);
  const int ipd = drop ? use(&k, probs_drop, attn_probs(d), 1, 0) : ip;
  const int ic = use(&k, dctx, attn_ctx(d), 1, 0), idq = use(&k, dqkv, attn_qkv(d), 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->attention_backward(INNER(be), d, W(k, iq), W(k, ip), mask, W(k, ipd), W(k, ic), W(k, idq),
                                          scratch));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* rstd and dw are fp32, passed through. */
static int mx_rmsnorm_forward(ptdp_backend *be, const float *x, const float *w, float *y, float *rstd, long long rows,
                              int h, float eps)
{
  call k = {.c = MX(be)};
  const size_t n = (size_t)rows * (size_t)h;
  const int ix = use(&k, x, n, 1, 0), iw = use(&k, w, (size_t)h, 1, 0), iy = use(&k, y, n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->rmsnorm_forward(INNER(be), W(k, ix), W(k, iw), W(k, iy), rstd, rows, h, eps));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_rmsnorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                               float *dx, float *dw, long long rows, int h)
{
  call k = {.c = MX(be)};
  const size_t n = (size_t)rows * (size_t)h;
  const int idy = use(&k, dy, n, 1, 0), ix = use(&k, x, n, 1, 0), iw = use(&k, w, (size_t)h, 1, 0);
  const int idx = use(&k, dx, n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->rmsnorm_backward(INNER(be), W(k, idy), W(k, ix), W(k, iw), rstd, W(k, idx), dw, rows, h));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* The whole rows of qkv, ld floats each; the table is fp32. */
static int mx_rope(ptdp_backend *be, float *qkv, const ptdp_rope_desc *d, const float *table, int inverse)
{
  call k = {.c = MX(be)};
  const int iq = use(&k, qkv, (size_t)d->rows * (size_t)d->ld, 1, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->rope(INNER(be), W(k, iq), d, table, inverse));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* x [rows, 2 f], y and dy [rows, f]. */
static int mx_swiglu_forward(ptdp_backend *be, const float *x, float *y, long long rows, int f)
{
  call k = {.c = MX(be)};
  const size_t n = (size_t)rows * (size_t)f;
  const int ix = use(&k, x, 2 * n, 1, 0), iy = use(&k, y, n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->swiglu_forward(INNER(be), W(k, ix), W(k, iy), rows, f));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_swiglu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, long long rows, int f)
{
  call k = {.c = MX(be)};
  const size_t n = (size_t)rows * (size_t)f;
  const int ix = use(&k, x, 2 * n, 1, 0), idy = use(&k, dy, n, 1, 0), idx = use(&k, dx, 2 * n, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->swiglu_backward(INNER(be), W(k, ix), W(k, idy), W(k, idx), rows, f));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_flash_supports(const ptdp_backend *be, const ptdp_attn_desc *d)
{
  return INNER(be)->flash_supports(INNER(be), d);
}

/* lse is fp32, passed through. */
static int mx_flash_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *ctx, float *lse)
{
  call k = {.c = MX(be)};
  const int iq = use(&k, qkv, attn_qkv(d), 1, 0), ic = use(&k, ctx, attn_ctx(d), 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->flash_forward(INNER(be), d, W(k, iq), W(k, ic), lse));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_flash_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *ctx,
                             const float *lse, const float *dctx, float *dqkv)
{
  call k = {.c = MX(be)};
  const int iq = use(&k, qkv, attn_qkv(d), 1, 0), ic = use(&k, ctx, attn_ctx(d), 1, 0);
  const int idc = use(&k, dctx, attn_ctx(d), 1, 0), idq = use(&k, dqkv, attn_qkv(d), 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->flash_backward(INNER(be), d, W(k, iq), W(k, ic), lse, W(k, idc), W(k, idq)));
  PTDP_CALL(call_end(&k));
  return 0;
}

static int mx_embedding_forward(ptdp_backend *be, const float *wte, const int32_t *tok, long long v0, long long vl,
                                float *out, long long rows, int h)
{
  call k = {.c = MX(be)};
  const int iw = use(&k, wte, (size_t)vl * (size_t)h, 1, 0), io = use(&k, out, (size_t)rows * (size_t)h, 0, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->embedding_forward(INNER(be), W(k, iw), tok, v0, vl, W(k, io), rows, h));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* dwte is fp32 (the main gradient). */
static int mx_embedding_backward(ptdp_backend *be, const float *dout, const int32_t *tok, long long v0, long long vl,
                                 float *dwte, long long rows, int h)
{
  call k = {.c = MX(be)};
  const int io = use(&k, dout, (size_t)rows * (size_t)h, 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->embedding_backward(INNER(be), W(k, io), tok, v0, vl, dwte, rows, h));
  return 0;
}

static int mx_xent_stats(ptdp_backend *be, const float *logits, const int32_t *target, long long v0, long long rows,
                         int vl, float *rowmax, float *tgt)
{
  call k = {.c = MX(be)};
  const int il = use(&k, logits, (size_t)rows * (size_t)vl, 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->xent_stats(INNER(be), W(k, il), target, v0, rows, vl, rowmax, tgt));
  return 0;
}

static int mx_xent_stats_local(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                               long long rows, int vl, float *lmax, float *lsum, float *tgt)
{
  call k = {.c = MX(be)};
  const int il = use(&k, logits, (size_t)rows * (size_t)vl, 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->xent_stats_local(INNER(be), W(k, il), target, v0, rows, vl, lmax, lsum, tgt));
  return 0;
}

static int mx_xent_sumexp(ptdp_backend *be, const float *logits, const float *gmax, long long rows, int vl, float *se)
{
  call k = {.c = MX(be)};
  const int il = use(&k, logits, (size_t)rows * (size_t)vl, 1, 0);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->xent_sumexp(INNER(be), W(k, il), gmax, rows, vl, se));
  return 0;
}

static int mx_xent_grad(ptdp_backend *be, float *logits, const int32_t *target, long long v0, const float *gmax,
                        const float *se, long long rows, int vl, float scale)
{
  call k = {.c = MX(be)};
  const int il = use(&k, logits, (size_t)rows * (size_t)vl, 1, 1);
  PTDP_CALL(call_begin(&k));
  PTDP_CALL(INNER(be)->xent_grad(INNER(be), W(k, il), target, v0, gmax, se, rows, vl, scale));
  PTDP_CALL(call_end(&k));
  return 0;
}

/* ---- life cycle ---- */

/* The work space back to inner, then inner itself. */
static void mx_destroy(ptdp_backend *be)
{
  mixed_ctx *c = be->ctx;
  if (!c) return;
  if (c->work) c->inner->free(c->inner, c->work);
  ptdp_backend_destroy(&c->inner);
  free(c);
  be->ctx = NULL;
}

static void fill_table(ptdp_backend *be)
{
  PTDP_BACKEND_FILL(be, mx);
  be->gemm_wgrad = mx_gemm_wgrad;
}

/* The optional operations where inner has them. */
static void fill_optional(ptdp_backend *be, const ptdp_backend *inner)
{
  be->grouped_attention = inner->grouped_attention;
  be->rmsnorm_forward = inner->rmsnorm_forward ? mx_rmsnorm_forward : NULL;
  be->rmsnorm_backward = inner->rmsnorm_backward ? mx_rmsnorm_backward : NULL;
  be->rope = inner->rope ? mx_rope : NULL;
  be->swiglu_forward = inner->swiglu_forward ? mx_swiglu_forward : NULL;
  be->swiglu_backward = inner->swiglu_backward ? mx_swiglu_backward : NULL;
  be->flash_forward = inner->flash_forward ? mx_flash_forward : NULL;
  be->flash_supports = inner->flash_supports ? mx_flash_supports : NULL;
  be->flash_backward = inner->flash_backward ? mx_flash_backward : NULL;
  be->sumsq_many = inner->sumsq_many ? mx_sumsq_many : NULL;
  be->adamw_many = inner->adamw_many ? mx_adamw_many : NULL;
  be->xent_loss = inner->xent_loss ? mx_xent_loss : NULL;
  be->xent_stats_local = inner->xent_stats_local ? mx_xent_stats_local : NULL;
  be->xent_rescale = inner->xent_rescale ? mx_xent_rescale : NULL;
}

/* The wrapper's table around inner (not yet owned: the caller destroys inner on failure). */
static int wrap(ptdp_backend *inner, ptdp_dtype t, ptdp_backend **out)
{
  PTDP_CHECK(t == PTDP_BF16 || t == PTDP_F16, "mixed precision stores bf16 or fp16, not type %d", (int)t);
  PTDP_CHECK(inner->dtype == PTDP_F32, "mixed precision wraps a backend storing fp32; '%s' stores %s", inner->name,
             ptdp_dtype_name(inner->dtype));
  ptdp_backend *be = NULL;
  mixed_ctx *c = NULL;
  PTDP_CALLOC(be, 1, sizeof *be);
  c = calloc(1, sizeof *c);
  if (!c) {
    free(be);
    return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for the mixed-precision table");
  }
  *c = (mixed_ctx){.inner = inner, .t = t};
  *be = (ptdp_backend){.name = inner->name, .ctx = c, .dtype = t, .host_accessible = inner->host_accessible,
                       .stream = inner->stream};
  fill_table(be);
  fill_optional(be, inner);
  *out = be;
  return 0;
}

int ptdp_backend_mixed_create(ptdp_backend *inner, ptdp_dtype t, ptdp_backend **out)
{
  *out = NULL;
  PTDP_CHECK(inner, "mixed precision needs a backend to wrap");
  if (t == PTDP_F32) {
    *out = inner;
    return 0;
  }
  int err = wrap(inner, t, out);
  if (err) {
    ptdp_backend_destroy(&inner);
    return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  }
  return 0;
}

size_t ptdp_backend_mixed_work_bytes(const ptdp_backend *be)
{
  if (!be || be->destroy != mx_destroy || !be->ctx) return 0;
  return MX(be)->cap * sizeof(float);
}
