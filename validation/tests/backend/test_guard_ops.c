/* The guard backend computes the same bits as the CPU backend, operation by operation.
 *
 * Each operation runs on random inputs on both backends: inputs go in with to_device, results
 * come out with to_host and are compared with memcmp (bit for bit, NaN payloads and signed
 * zeros included).  Two OpenMP threads, and sizes past the CPU backend's thresholds (a split
 * gemm, attention past one 128-row block), so the threaded paths run too.  Outputs that an
 * operation accumulates into (+=) start random, not zero. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/rng.h"

#include "../expect.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static ptdp_backend *be[2]; /* [0] cpu, [1] guard */

/* One buffer on both backends. */
typedef struct {
  void *p[2];
  size_t bytes;
} twin;

#define F(t, k) ((float *)(t).p[k])
#define I32(t, k) ((int32_t *)(t).p[k])
#define U8(t, k) ((uint8_t *)(t).p[k])

static uint64_t seq = 1;
static float urand(float lo, float hi) { return lo + (hi - lo) * ptdp_rng_uniform(ptdp_rng_mix(seq++)); }

/* n floats uniform in [lo, hi) (lo == hi: all that value) on both backends. */
static twin floats(size_t n, float lo, float hi)
{
  twin t = {.bytes = n * sizeof(float)};
  float *h = malloc(t.bytes);
  for (size_t i = 0; i < n; i++) h[i] = urand(lo, hi);
  for (int k = 0; k < 2; k++)
    if (be[k]->alloc(be[k], &t.p[k], t.bytes) || be[k]->to_device(be[k], t.p[k], h, t.bytes)) exit(2);
  free(h);
  return t;
}

/* n values of `bytes_each` bytes, each uniform in [0, mod) (int32 tokens or uint8 masks). */
static twin ints(size_t n, int bytes_each, int mod)
{
  twin t = {.bytes = n * (size_t)bytes_each};
  char *h = malloc(t.bytes);
  for (size_t i = 0; i < n; i++) {
    int v = (int)(ptdp_rng_mix(seq++) % (uint64_t)mod);
    if (bytes_each == 4)
      ((int32_t *)h)[i] = v;
    else
      ((uint8_t *)h)[i] = (uint8_t)v;
  }
  for (int k = 0; k < 2; k++)
    if (be[k]->alloc(be[k], &t.p[k], t.bytes) || be[k]->to_device(be[k], t.p[k], h, t.bytes)) exit(2);
  free(h);
  return t;
}

/* The buffer's contents on the two backends are the same bits. */
static void same(const twin *t, const char *what)
{
  char *h[2];
  for (int k = 0; k < 2; k++) {
    h[k] = malloc(t->bytes);
    if (be[k]->to_host(be[k], h[k], t->p[k], t->bytes) || be[k]->synchronize(be[k])) exit(2);
  }
  EXPECT(!memcmp(h[0], h[1], t->bytes), "%s: guard and cpu results differ", what);
  free(h[0]);
  free(h[1]);
}

static void drop(twin *t)
{
  for (int k = 0; k < 2; k++) be[k]->free(be[k], t->p[k]);
}

static void check_memory_ops(void)
{
  twin a = floats(1000, -2, 2), b = floats(1000, -2, 2);
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->memset0(be[k], F(a, k) + 10, 300 * sizeof(float)), "memset0 returns 0");
    EXPECT(!be[k]->copy(be[k], F(b, k) + 7, F(a, k), 500 * sizeof(float)), "copy returns 0");
  }
  same(&a, "memset0");
  same(&b, "copy");
  drop(&a);
  drop(&b);
}

/* C = alpha op(A) op(B) + beta C for every transpose pair, one size split over threads and one
 * too small to split. */
static void check_gemm(void)
{
  const int sizes[2][3] = {{136, 128, 130}, {5, 7, 3}};
  for (int z = 0; z < 2; z++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        const int M = sizes[z][0], N = sizes[z][1], K = sizes[z][2];
        const int lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
        twin A = floats((size_t)(ta ? K : M) * lda, -1, 1), B = floats((size_t)(tb ? N : K) * ldb, -1, 1);
        twin C = floats((size_t)M * ldc, -1, 1);
        for (int k = 0; k < 2; k++)
          EXPECT(!be[k]->gemm(be[k], ta, tb, M, N, K, 0.7f, F(A, k), lda, F(B, k), ldb, 0.3f, F(C, k), ldc),
                 "gemm returns 0");
        same(&C, "gemm");
        drop(&A);
        drop(&B);
        drop(&C);
      }
}

static void check_layernorm(void)
{
  const long long rows = 37;
  const int h = 48;
  twin x = floats((size_t)rows * h, -3, 3), w = floats(h, 0.5f, 1.5f), b = floats(h, -1, 1);
  twin y = floats((size_t)rows * h, 0, 0), mean = floats(rows, 0, 0), rstd = floats(rows, 0, 0);
  twin dy = floats((size_t)rows * h, -1, 1), dx = floats((size_t)rows * h, 0, 0);
  twin dw = floats(h, -1, 1), db = floats(h, -1, 1);
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->layernorm_forward(be[k], F(x, k), F(w, k), F(b, k), F(y, k), F(mean, k), F(rstd, k), rows, h,
                                     1e-5f),
           "layernorm_forward returns 0");
    EXPECT(!be[k]->layernorm_backward(be[k], F(dy, k), F(x, k), F(w, k), F(mean, k), F(rstd, k), F(dx, k), F(dw, k),
                                      F(db, k), rows, h),
           "layernorm_backward returns 0");
  }
  same(&y, "layernorm_forward y");
  same(&mean, "layernorm_forward mean");
  same(&rstd, "layernorm_forward rstd");
  same(&dx, "layernorm_backward dx");
  same(&dw, "layernorm_backward dw");
  same(&db, "layernorm_backward db");
  twin *all[] = {&x, &w, &b, &y, &mean, &rstd, &dy, &dx, &dw, &db};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

/* gelu, bias, add, scale, dropout: the element-wise operations. */
static void check_elementwise(void)
{
  const long long rows = 33;
  const int cols = 40;
  const size_t n = (size_t)rows * cols;
  twin x = floats(n, -4, 4), y = floats(n, 0, 0), dy = floats(n, -1, 1), dx = floats(n, 0, 0);
  twin bias = floats(cols, -1, 1), db = floats(cols, -1, 1), z = floats(n, -1, 1);
  twin mask = ints(n, 1, 1), dmask = ints(n, 1, 2), dd = floats(n, -1, 1);
  const ptdp_dropout_key key = {.seed = 99, .site = 2, .layer = 1, .sample0 = 4, .row0 = 6, .col0 = 80, .b = 3, .p = 0.3f};
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->gelu_forward(be[k], F(x, k), F(y, k), n), "gelu_forward returns 0");
    EXPECT(!be[k]->gelu_backward(be[k], F(x, k), F(dy, k), F(dx, k), n), "gelu_backward returns 0");
    EXPECT(!be[k]->bias_forward(be[k], F(y, k), F(bias, k), rows, cols), "bias_forward returns 0");
    EXPECT(!be[k]->bias_backward(be[k], F(dy, k), F(db, k), rows, cols), "bias_backward returns 0");
    EXPECT(!be[k]->add(be[k], F(z, k), F(x, k), n), "add returns 0");
    EXPECT(!be[k]->scale(be[k], F(dx, k), 0.37f, n), "scale returns 0");
    EXPECT(!be[k]->dropout_forward(be[k], F(x, k), U8(mask, k), rows, cols, &key), "dropout_forward returns 0");
    EXPECT(!be[k]->dropout_backward(be[k], F(dd, k), U8(dmask, k), n, 0.3f), "dropout_backward returns 0");
  }
  same(&y, "gelu_forward then bias_forward");
  same(&dx, "gelu_backward then scale");
  same(&db, "bias_backward");
  same(&z, "add");
  same(&x, "dropout_forward x");
  same(&mask, "dropout_forward mask");
  same(&dd, "dropout_backward");
  twin *all[] = {&x, &y, &dy, &dx, &bias, &db, &z, &mask, &dmask, &dd};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

/* Attention forward and backward, with dropout (p > 0) and without (probs_drop aliases probs). */
static void check_attention(float p)
{
  ptdp_attn_desc d = {.b = 2, .s = 136, .al = 2, .hd = 8, .head0 = 2};
  d.drop = (ptdp_dropout_key){.seed = 5, .site = 1, .layer = 0, .sample0 = 2, .row0 = 0, .col0 = 0, .b = 2, .p = p};
  const size_t N = (size_t)d.s * d.b, hl = (size_t)d.al * d.hd, ss = (size_t)d.b * d.al * d.s * d.s;
  twin qkv = floats(N * 3 * hl, -1, 1), probs = floats(ss, 0, 0), mask = ints(ss, 1, 1), pd = floats(ss, 0, 0);
  twin ctx = floats(N * hl, 0, 0), dctx = floats(N * hl, -1, 1), dqkv = floats(N * 3 * hl, 0, 0);
  twin scratch = floats((size_t)d.s * d.s, 0, 0);
  for (int k = 0; k < 2; k++) {
    float *probs_drop = p > 0 ? F(pd, k) : F(probs, k);
    EXPECT(!be[k]->attention_forward(be[k], &d, F(qkv, k), F(probs, k), U8(mask, k), probs_drop, F(ctx, k)),
           "attention_forward returns 0");
    EXPECT(!be[k]->attention_backward(be[k], &d, F(qkv, k), F(probs, k), U8(mask, k), probs_drop, F(dctx, k),
                                      F(dqkv, k), F(scratch, k)),
           "attention_backward returns 0");
  }
  same(&probs, "attention_forward probs");
  same(&mask, "attention_forward mask");
  same(&pd, "attention_forward probs_drop");
  same(&ctx, "attention_forward ctx");
  same(&dqkv, "attention_backward dqkv");
  twin *all[] = {&qkv, &probs, &mask, &pd, &ctx, &dctx, &dqkv, &scratch};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

/* Embedding and vocab-parallel cross entropy on the vocabulary slice [v0, v0 + vl). */
static void check_vocab_ops(void)
{
  const long long rows = 50, v0 = 20;
  const int h = 24, vl = 60, V = 100;
  twin tok = ints(rows, 4, V), tgt = ints(rows, 4, V);
  twin wte = floats((size_t)vl * h, -1, 1), out = floats((size_t)rows * h, 0, 0);
  twin dout = floats((size_t)rows * h, -1, 1), dwte = floats((size_t)vl * h, -1, 1);
  twin logits = floats((size_t)rows * vl, -5, 5), rowmax = floats(rows, 0, 0), tv = floats(rows, 0, 0);
  twin se = floats(rows, 0, 0);
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->embedding_forward(be[k], F(wte, k), I32(tok, k), v0, vl, F(out, k), rows, h),
           "embedding_forward returns 0");
    EXPECT(!be[k]->embedding_backward(be[k], F(dout, k), I32(tok, k), v0, vl, F(dwte, k), rows, h),
           "embedding_backward returns 0");
    EXPECT(!be[k]->xent_stats(be[k], F(logits, k), I32(tgt, k), v0, rows, vl, F(rowmax, k), F(tv, k)),
           "xent_stats returns 0");
    EXPECT(!be[k]->xent_sumexp(be[k], F(logits, k), F(rowmax, k), rows, vl, F(se, k)), "xent_sumexp returns 0");
    EXPECT(!be[k]->xent_grad(be[k], F(logits, k), I32(tgt, k), v0, F(rowmax, k), F(se, k), rows, vl, 0.25f),
           "xent_grad returns 0");
  }
  same(&out, "embedding_forward");
  same(&dwte, "embedding_backward");
  same(&rowmax, "xent_stats rowmax");
  same(&tv, "xent_stats tgt");
  same(&se, "xent_sumexp");
  same(&logits, "xent_grad");
  twin *all[] = {&tok, &tgt, &wte, &out, &dout, &dwte, &logits, &rowmax, &tv, &se};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

static void check_optimizer_ops(void)
{
  const size_t n = 5000;
  twin p = floats(n, -1, 1), g = floats(n, -1, 1), m = floats(n, -0.1f, 0.1f), v = floats(n, 0, 0.01f);
  double s[2];
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->adamw(be[k], F(p, k), F(g, k), F(m, k), F(v, k), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3),
           "adamw returns 0");
    s[k] = be[k]->sumsq(be[k], F(p, k), n);
  }
  same(&p, "adamw p");
  same(&m, "adamw m");
  same(&v, "adamw v");
  EXPECT(!memcmp(&s[0], &s[1], sizeof s[0]), "sumsq: guard %.17g, cpu %.17g", s[1], s[0]);
  EXPECT(s[0] > 0, "sumsq is positive (%g)", s[0]);
  drop(&p);
  drop(&g);
  drop(&m);
  drop(&v);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const ptdp_backend_options opt = {.num_threads = 2, .ranks_on_node = 1, .report = 0};
  if (ptdp_backend_create("cpu", &opt, &be[0]) || ptdp_backend_create("guard", &opt, &be[1])) return 2;
  EXPECT(be[0]->host_accessible == 1 && be[1]->host_accessible == 0, "host_accessible: cpu 1, guard 0");
  check_memory_ops();
  check_gemm();
  check_layernorm();
  check_elementwise();
  check_attention(0.0f);
  check_attention(0.1f);
  check_vocab_ops();
  check_optimizer_ops();
  ptdp_backend_destroy(&be[0]);
  ptdp_backend_destroy(&be[1]);
  EXPECT(!be[0] && !be[1], "ptdp_backend_destroy sets the pointer to NULL");
  printf("test_guard_ops: %d passed, %d failed\n", n_pass, n_fail);
  MPI_Finalize();
  return n_fail != 0;
}
