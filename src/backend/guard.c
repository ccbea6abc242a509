/* The guard backend: the CPU backend's operations on memory the host cannot touch outside them.
 *
 * Its memory is mapped PROT_NONE and opened (PROT_READ | PROT_WRITE) only while one of its
 * operations runs, so host code that reads or writes backend memory directly, as it could
 * on the CPU backend and cannot on a GPU, dies of SIGSEGV at the faulty access.  A model that
 * trains under it moves data only through to_device / to_host, and so is ready for a device
 * whose memory the host cannot see.  Every operation is the CPU backend's own function on the
 * same pointers, so the results are bit-identical to the CPU backend's.
 *
 * Cost: two mprotect calls per operation (guard_arena.h), each over the range in use; meant for
 * tests, not for speed.  host_accessible is 0, so the MPI transport stages messages through
 * host buffers, as it will for a GPU. */
#include "guard.h"

#include "guard_arena.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  ptdp_backend *cpu; /* does the work */
  guard_arena arena; /* the memory it works on */
} guard_ctx;

/* Close the arena after an operation that returned err; the operation's error comes first. */
static int guard_closed(guard_ctx *g, int err)
{
  int c = guard_arena_close(&g->arena);
  return err ? err : c;
}

/* The body of every operation: the CPU backend's `op` with the arena open. */
#define GUARD_RUN(be, op, ...)                                      \
  do {                                                              \
    guard_ctx *g_ = (be)->ctx;                                      \
    PTDP_CALL(guard_arena_open(&g_->arena));                        \
    PTDP_CALL(guard_closed(g_, g_->cpu->op(g_->cpu, __VA_ARGS__))); \
    return 0;                                                       \
  } while (0)

static int guard_alloc(ptdp_backend *be, void **p, size_t bytes)
{
  guard_ctx *g = be->ctx;
  PTDP_CALL(guard_arena_alloc(&g->arena, p, bytes));
  return 0;
}

static void guard_free(ptdp_backend *be, void *p)
{
  guard_ctx *g = be->ctx;
  guard_arena_free(&g->arena, p);
}

static int guard_memset0(ptdp_backend *be, void *p, size_t bytes) { GUARD_RUN(be, memset0, p, bytes); }

static int guard_copy(ptdp_backend *be, void *dst, const void *src, size_t bytes)
{
  GUARD_RUN(be, copy, dst, src, bytes);
}

/* Host to device and back: the CPU backend's copy (a memmove) with the arena open. */
static int guard_to_device(ptdp_backend *be, void *dst, const void *src_host, size_t bytes)
{
  GUARD_RUN(be, to_device, dst, src_host, bytes);
}

static int guard_to_host(ptdp_backend *be, void *dst_host, const void *src, size_t bytes)
{
  GUARD_RUN(be, to_host, dst_host, src, bytes);
}

static int guard_synchronize(ptdp_backend *be)
{
  guard_ctx *g = be->ctx;
  PTDP_CALL(g->cpu->synchronize(g->cpu));
  return 0;
}

static void guard_destroy(ptdp_backend *be)
{
  guard_ctx *g = be->ctx;
  if (!g) return;
  ptdp_backend_destroy(&g->cpu);
  guard_arena_fini(&g->arena);
  free(g);
  be->ctx = NULL;
}

static int guard_gemm(ptdp_backend *be, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc)
{
  GUARD_RUN(be, gemm, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

static int guard_layernorm_forward(ptdp_backend *be, const float *x, const float *w, const float *b, float *y,
                                   float *mean, float *rstd, long long rows, int h, float eps)
{
  GUARD_RUN(be, layernorm_forward, x, w, b, y, mean, rstd, rows, h, eps);
}

static int guard_layernorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w,
                                    const float *mean, const float *rstd, float *dx, float *dw, float *db,
                                    long long rows, int h)
{
  GUARD_RUN(be, layernorm_backward, dy, x, w, mean, rstd, dx, dw, db, rows, h);
}

static int guard_gelu_forward(ptdp_backend *be, const float *x, float *y, size_t n)
{
  GUARD_RUN(be, gelu_forward, x, y, n);
}

static int guard_gelu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, size_t n)
{
  GUARD_RUN(be, gelu_backward, x, dy, dx, n);
}

static int guard_bias_forward(ptdp_backend *be, float *y, const float *b, long long rows, int cols)
{
  GUARD_RUN(be, bias_forward, y, b, rows, cols);
}

static int guard_bias_backward(ptdp_backend *be, const float *dy, float *db, long long rows, int cols)
{
  GUARD_RUN(be, bias_backward, dy, db, rows, cols);
}

static int guard_add(ptdp_backend *be, float *y, const float *x, size_t n) { GUARD_RUN(be, add, y, x, n); }

static int guard_scale(ptdp_backend *be, float *y, float a, size_t n) { GUARD_RUN(be, scale, y, a, n); }

static int guard_dropout_forward(ptdp_backend *be, float *x, uint8_t *mask, long long rows, int cols,
                                 const ptdp_dropout_key *k)
{
  GUARD_RUN(be, dropout_forward, x, mask, rows, cols, k);
}

static int guard_dropout_backward(ptdp_backend *be, float *dx, const uint8_t *mask, size_t n, float p)
{
  GUARD_RUN(be, dropout_backward, dx, mask, n, p);
}

static int guard_attention_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                                   uint8_t *mask, float *probs_drop, float *ctx)
{
  GUARD_RUN(be, attention_forward, d, qkv, probs, mask, probs_drop, ctx);
}

static int guard_rmsnorm_forward(ptdp_backend *be, const float *x, const float *w, float *y, float *rstd,
                                 long long rows, int h, float eps)
{
  GUARD_RUN(be, rmsnorm_forward, x, w, y, rstd, rows, h, eps);
}

static int guard_rmsnorm_backward(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                                  float *dx, float *dw, long long rows, int h)
{
  GUARD_RUN(be, rmsnorm_backward, dy, x, w, rstd, dx, dw, rows, h);
}

static int guard_rope(ptdp_backend *be, float *qkv, const ptdp_rope_desc *d, const float *table, int inverse)
{
  GUARD_RUN(be, rope, qkv, d, table, inverse);
}

static int guard_swiglu_forward(ptdp_backend *be, const float *x, float *y, long long rows, int f)
{
  GUARD_RUN(be, swiglu_forward, x, y, rows, f);
}

static int guard_swiglu_backward(ptdp_backend *be, const float *x, const float *dy, float *dx, long long rows, int f)
{
  GUARD_RUN(be, swiglu_backward, x, dy, dx, rows, f);
}

static int guard_flash_forward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *ctx, float *lse)
{
  GUARD_RUN(be, flash_forward, d, qkv, ctx, lse);
}

static int guard_flash_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *ctx,
                                const float *lse, const float *dctx, float *dqkv)
{
  GUARD_RUN(be, flash_backward, d, qkv, ctx, lse, dctx, dqkv);
}

static int guard_attention_backward(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                                    const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                                    float *scratch)
{
  GUARD_RUN(be, attention_backward, d, qkv, probs, mask, probs_drop, dctx, dqkv, scratch);
}

static int guard_embedding_forward(ptdp_backend *be, const float *wte, const int32_t *tok, long long v0, long long vl,
                                   float *out, long long rows, int h)
{
  GUARD_RUN(be, embedding_forward, wte, tok, v0, vl, out, rows, h);
}

static int guard_embedding_backward(ptdp_backend *be, const float *dout, const int32_t *tok, long long v0,
                                    long long vl, float *dwte, long long rows, int h)
{
  GUARD_RUN(be, embedding_backward, dout, tok, v0, vl, dwte, rows, h);
}

static int guard_xent_stats(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                            long long rows, int vl, float *rowmax, float *tgt)
{
  GUARD_RUN(be, xent_stats, logits, target, v0, rows, vl, rowmax, tgt);
}

static int guard_xent_sumexp(ptdp_backend *be, const float *logits, const float *gmax, long long rows, int vl,
                             float *se)
{
  GUARD_RUN(be, xent_sumexp, logits, gmax, rows, vl, se);
}

static int guard_xent_grad(ptdp_backend *be, float *logits, const int32_t *target, long long v0, const float *gmax,
                           const float *se, long long rows, int vl, float scale)
{
  GUARD_RUN(be, xent_grad, logits, target, v0, gmax, se, rows, vl, scale);
}

static int guard_adamw(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                       float b2, float eps, float wd, long long step)
{
  GUARD_RUN(be, adamw, p, g, m, v, n, lr, b1, b2, eps, wd, step);
}

/* sumsq has no error return: a failure to open or close is reported and the sum is NaN. */
static double guard_sumsq(ptdp_backend *be, const float *x, size_t n)
{
  guard_ctx *g = be->ctx;
  if (guard_arena_open(&g->arena)) return NAN;
  double s = g->cpu->sumsq(g->cpu, x, n);
  return guard_arena_close(&g->arena) ? NAN : s;
}

static int guard_convert(ptdp_backend *be, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype st, size_t n)
{
  GUARD_RUN(be, convert, dst, dt, src, st, n);
}

/* found is the caller's host int, outside the arena */
static int guard_unscale_check(ptdp_backend *be, float *x, size_t n, float inv_scale, int *found)
{
  GUARD_RUN(be, unscale_check, x, n, inv_scale, found);
}

static int guard_xent_stats_local(ptdp_backend *be, const float *logits, const int32_t *target, long long v0,
                                  long long rows, int vl, float *lmax, float *lsum, float *tgt)
{
  GUARD_RUN(be, xent_stats_local, logits, target, v0, rows, vl, lmax, lsum, tgt);
}

static int guard_xent_rescale(ptdp_backend *be, float *lsum, const float *lmax, const float *gmax, long long rows)
{
  GUARD_RUN(be, xent_rescale, lsum, lmax, gmax, rows);
}

static int guard_xent_loss(ptdp_backend *be, const float *gmax, const float *se, const float *tgt, long long rows,
                           float *loss)
{
  GUARD_RUN(be, xent_loss, gmax, se, tgt, rows, loss);
}

static void guard_fill_table(ptdp_backend *be)
{
  be->name = "guard";
  be->host_accessible = 0;
  PTDP_BACKEND_FILL(be, guard);
  be->grouped_attention = 1; /* the CPU backend's operations */
  PTDP_BACKEND_FILL_LLAMA(be, guard); /* the optional operations: the CPU backend has them */
  be->flash_forward = guard_flash_forward;
  be->flash_backward = guard_flash_backward;
  be->xent_loss = guard_xent_loss;
  be->xent_stats_local = guard_xent_stats_local;
  be->xent_rescale = guard_xent_rescale;
}

int ptdp_backend_guard_create(size_t reserve, ptdp_backend **out)
{
  *out = NULL;
  ptdp_backend *be;
  PTDP_CALLOC(be, 1, sizeof *be);
  guard_ctx *g = calloc(1, sizeof *g);
  int err = g ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory for the guard backend");
  if (!err) {
    be->ctx = g;
    guard_fill_table(be);
    err = guard_arena_init(&g->arena, reserve);
  }
  if (!err) err = ptdp_backend_cpu_create(&g->cpu);
  if (err) {
    ptdp_backend_destroy(&be);
    return ptdp_error_trace(err, __FILE__, __LINE__, __func__);
  }
  *out = be;
  return 0;
}
