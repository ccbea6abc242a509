/* Every operation of the CUDA backend against the CPU backend (the reference), on random
 * inputs (never zeros), with every pure output poisoned (NaN floats, 0xAB mask bytes) before
 * the call so an element the GPU leaves unwritten shows.  Accumulated outputs (+=) start random.
 * Tolerance: relative norm error ||gpu - cpu|| / ||cpu|| below 1e-5 in fp32 (sums run in another
 * order on the GPU); dropout masks and the embedding forward copy must be identical.
 * Exits 77 (automake: SKIP) with the reason when the build has no CUDA or the node no GPU.
 * NOT YET RUN ON A GPU (written to run unattended on one). */
#include "ptdp/backend.h"
#include "ptdp/cuda.h"
#include "ptdp/error.h"
#include "ptdp/rng.h"

#include "../expect.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5

static ptdp_backend *be[2]; /* [0] cpu, [1] cuda */

typedef struct {
  void *p[2];
  size_t bytes;
} twin;

#define F(t, k) ((float *)(t).p[k])
#define I32(t, k) ((int32_t *)(t).p[k])
#define U8(t, k) ((uint8_t *)(t).p[k])

static uint64_t seq = 1;
static float urand(float lo, float hi) { return lo + (hi - lo) * ptdp_rng_uniform(ptdp_rng_mix(seq++)); }

static twin upload(const void *h, size_t bytes)
{
  twin t = {.bytes = bytes};
  for (int k = 0; k < 2; k++)
    if (be[k]->alloc(be[k], &t.p[k], bytes) || be[k]->to_device(be[k], t.p[k], h, bytes)) exit(2);
  return t;
}

/* n floats uniform in [lo, hi); lo > hi: NaN (an output to be overwritten) */
static twin floats(size_t n, float lo, float hi)
{
  float *h = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) h[i] = lo > hi ? NAN : urand(lo, hi);
  twin t = upload(h, n * sizeof(float));
  free(h);
  return t;
}
static twin poison(size_t n) { return floats(n, 1, 0); }

/* n int32 tokens in [0, mod), or (bytes_each 1) mask bytes: 0xAB when mod is 0 */
static twin ints(size_t n, int bytes_each, int mod)
{
  char *h = malloc(n * (size_t)bytes_each);
  for (size_t i = 0; i < n; i++) {
    int v = mod ? (int)(ptdp_rng_mix(seq++) % (uint64_t)mod) : 0xAB;
    if (bytes_each == 4) ((int32_t *)h)[i] = v;
    else ((uint8_t *)h)[i] = (uint8_t)v;
  }
  twin t = upload(h, n * (size_t)bytes_each);
  free(h);
  return t;
}

static void fetch(const twin *t, char *h[2])
{
  for (int k = 0; k < 2; k++) {
    h[k] = malloc(t->bytes);
    if (be[k]->to_host(be[k], h[k], t->p[k], t->bytes) || be[k]->synchronize(be[k])) exit(2);
  }
}

static void same(const twin *t, const char *what)
{
  char *h[2];
  fetch(t, h);
  EXPECT(!memcmp(h[0], h[1], t->bytes), "%s: cuda and cpu differ", what);
  free(h[0]);
  free(h[1]);
}

/* relative norm error below tol, and no NaN left (an unwritten element) */
static void close_to(const twin *t, double tol, const char *what)
{
  char *h[2];
  fetch(t, h);
  const float *c = (const float *)h[0], *g = (const float *)h[1];
  size_t n = t->bytes / sizeof(float), nan = 0;
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(g[i]) != isnan(c[i])) nan++;
    if (isnan(g[i]) || isnan(c[i])) continue;
    d2 += ((double)g[i] - c[i]) * ((double)g[i] - c[i]);
    r2 += (double)c[i] * c[i];
  }
  double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
  EXPECT(nan == 0 && rel < tol, "%s: relative error %.3g (tolerance %.1g), %zu elements NaN on one side only", what,
         rel, tol, nan);
  printf("  %-32s rel err %.3g\n", what, rel);
  free(h[0]);
  free(h[1]);
}

static void drop(twin *t)
{
  for (int k = 0; k < 2; k++) be[k]->free(be[k], t->p[k]);
}
#define DROP_ALL(...)                                                             \
  do {                                                                            \
    twin *all_[] = {__VA_ARGS__};                                                 \
    for (size_t i_ = 0; i_ < sizeof all_ / sizeof all_[0]; i_++) drop(all_[i_]); \
  } while (0)

static void check_memory_ops(void)
{
  twin a = floats(1000, -2, 2), b = floats(1000, -2, 2);
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->memset0(be[k], F(a, k) + 10, 300 * sizeof(float)), "memset0 returns 0");
    EXPECT(!be[k]->copy(be[k], F(b, k) + 7, F(a, k), 500 * sizeof(float)), "copy returns 0");
  }
  same(&a, "memset0");
  same(&b, "copy");
  void *z;
  float hz[64];
  EXPECT(!be[1]->alloc(be[1], &z, sizeof hz) && !be[1]->to_host(be[1], hz, z, sizeof hz) && !be[1]->synchronize(be[1]),
         "alloc, to_host");
  int zero = 1;
  for (int i = 0; i < 64; i++) zero &= hz[i] == 0.0f;
  EXPECT(zero, "alloc returns zeroed memory");
  be[1]->free(be[1], z);
  DROP_ALL(&a, &b);
}

/* every transpose pair, padded strides, offsets that break 16-byte alignment, beta 0 over NaN */
static void check_gemm(void)
{
  const int sizes[3][3] = {{512, 384, 200}, {136, 128, 130}, {5, 7, 3}};
  for (int z = 0; z < 3; z++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        const int M = sizes[z][0], N = sizes[z][1], K = sizes[z][2];
        const int lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
        twin A = floats((size_t)(ta ? K : M) * lda + 1, -1, 1), B = floats((size_t)(tb ? N : K) * ldb, -1, 1);
        twin C = floats((size_t)M * ldc, -1, 1), C0 = poison((size_t)M * ldc);
        for (int k = 0; k < 2; k++) {
          EXPECT(!be[k]->gemm(be[k], ta, tb, M, N, K, 0.7f, F(A, k) + 1, lda, F(B, k), ldb, 0.3f, F(C, k), ldc),
                 "gemm returns 0");
          EXPECT(!be[k]->gemm(be[k], ta, tb, M, N, K, 1.0f, F(A, k), lda, F(B, k), ldb, 0.0f, F(C0, k), ldc),
                 "gemm (beta 0) returns 0");
        }
        char what[64];
        snprintf(what, sizeof what, "gemm %dx%dx%d ta %d tb %d", M, N, K, ta, tb);
        close_to(&C, TOL, what);
        /* the padding columns of C0 stay NaN on both sides: skipped by close_to's NaN rule */
        close_to(&C0, TOL, "gemm beta 0 over NaN");
        DROP_ALL(&A, &B, &C, &C0);
      }
}

static void check_layernorm(int h)
{
  const long long rows = 300;
  twin x = floats((size_t)rows * h, -3, 3), w = floats(h, 0.5f, 1.5f), b = floats(h, -1, 1);
  twin y = poison((size_t)rows * h), mean = poison(rows), rstd = poison(rows);
  twin dy = floats((size_t)rows * h, -1, 1), dx = poison((size_t)rows * h);
  twin dw = floats(h, -1, 1), db = floats(h, -1, 1);
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->layernorm_forward(be[k], F(x, k), F(w, k), F(b, k), F(y, k), F(mean, k), F(rstd, k), rows, h,
                                     1e-5f),
           "layernorm_forward returns 0");
    EXPECT(!be[k]->layernorm_backward(be[k], F(dy, k), F(x, k), F(w, k), F(mean, k), F(rstd, k), F(dx, k), F(dw, k),
                                      F(db, k), rows, h),
           "layernorm_backward returns 0");
  }
  close_to(&y, TOL, "layernorm_forward y");
  close_to(&mean, TOL, "layernorm_forward mean");
  close_to(&rstd, TOL, "layernorm_forward rstd");
  close_to(&dx, TOL, "layernorm_backward dx");
  close_to(&dw, TOL, "layernorm_backward dw");
  close_to(&db, TOL, "layernorm_backward db");
  DROP_ALL(&x, &w, &b, &y, &mean, &rstd, &dy, &dx, &dw, &db);
}

static void check_elementwise(void)
{
  const long long rows = 333;
  const int cols = 400;
  const size_t n = (size_t)rows * cols;
  twin x = floats(n, -4, 4), y = poison(n), dy = floats(n, -1, 1), dx = poison(n);
  twin bias = floats(cols, -1, 1), db = floats(cols, -1, 1), z = floats(n, -1, 1);
  twin mask = ints(n, 1, 0), dmask = ints(n, 1, 2), dd = floats(n, -1, 1);
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
  close_to(&y, TOL, "gelu_forward, bias_forward");
  close_to(&dx, TOL, "gelu_backward, scale");
  close_to(&db, TOL, "bias_backward");
  close_to(&z, TOL, "add");
  close_to(&x, TOL, "dropout_forward x");
  same(&mask, "dropout_forward mask (the CPU's bits)");
  close_to(&dd, TOL, "dropout_backward");
  DROP_ALL(&x, &y, &dy, &dx, &bias, &db, &z, &mask, &dmask, &dd);
}

static void check_attention(int s, int hd, float p)
{
  ptdp_attn_desc d = {.b = 2, .s = s, .al = 3, .hd = hd, .head0 = 3};
  d.drop = (ptdp_dropout_key){.seed = 5, .site = 3, .layer = 1, .sample0 = 2, .row0 = 0, .col0 = 0, .b = 2, .p = p};
  const size_t N = (size_t)d.s * d.b, hl = (size_t)d.al * d.hd, ss = (size_t)d.b * d.al * d.s * d.s;
  twin qkv = floats(N * 3 * hl, -1, 1), probs = poison(ss), mask = ints(ss, 1, 0), pd = poison(ss);
  twin ctx = poison(N * hl), dctx = floats(N * hl, -1, 1), dqkv = poison(N * 3 * hl);
  twin scratch = floats((size_t)d.s * d.s, 0, 0);
  for (int k = 0; k < 2; k++) {
    float *probs_drop = p > 0 ? F(pd, k) : F(probs, k);
    EXPECT(!be[k]->attention_forward(be[k], &d, F(qkv, k), F(probs, k), U8(mask, k), probs_drop, F(ctx, k)),
           "attention_forward returns 0");
    EXPECT(!be[k]->attention_backward(be[k], &d, F(qkv, k), F(probs, k), U8(mask, k), probs_drop, F(dctx, k),
                                      F(dqkv, k), F(scratch, k)),
           "attention_backward returns 0");
  }
  close_to(&probs, TOL, "attention probs");
  if (p > 0) {
    same(&mask, "attention dropout mask (the CPU's bits)");
    close_to(&pd, TOL, "attention probs_drop");
  }
  close_to(&ctx, TOL, "attention ctx");
  close_to(&dqkv, TOL, "attention dqkv");
  DROP_ALL(&qkv, &probs, &mask, &pd, &ctx, &dctx, &dqkv, &scratch);
}

static void check_vocab_ops(void)
{
  const long long rows = 500, v0 = 200;
  const int h = 96, vl = 600, V = 1000;
  twin tok = ints(rows, 4, V), tgt = ints(rows, 4, V);
  twin wte = floats((size_t)vl * h, -1, 1), out = poison((size_t)rows * h);
  twin dout = floats((size_t)rows * h, -1, 1), dwte = floats((size_t)vl * h, -1, 1);
  twin logits = floats((size_t)rows * vl, -5, 5), rowmax = poison(rows), tv = poison(rows), se = poison(rows);
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
  same(&out, "embedding_forward (a copy)");
  close_to(&dwte, TOL, "embedding_backward");
  same(&rowmax, "xent_stats rowmax");
  same(&tv, "xent_stats tgt");
  close_to(&se, TOL, "xent_sumexp");
  close_to(&logits, TOL, "xent_grad");
  DROP_ALL(&tok, &tgt, &wte, &out, &dout, &dwte, &logits, &rowmax, &tv, &se);
}

static void check_optimizer_ops(void)
{
  const size_t n = 1000003; /* past the reduction's blocks, not a multiple of anything */
  twin p = floats(n, -1, 1), g = floats(n, -1, 1), m = floats(n, -0.1f, 0.1f), v = floats(n, 0, 0.01f);
  double s[2];
  for (int k = 0; k < 2; k++) {
    EXPECT(!be[k]->adamw(be[k], F(p, k), F(g, k), F(m, k), F(v, k), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3),
           "adamw returns 0");
    s[k] = be[k]->sumsq(be[k], F(p, k), n);
  }
  close_to(&p, TOL, "adamw p");
  close_to(&m, TOL, "adamw m");
  close_to(&v, TOL, "adamw v");
  EXPECT(fabs(s[1] - s[0]) <= 1e-10 * s[0], "sumsq: cuda %.17g, cpu %.17g", s[1], s[0]);
  DROP_ALL(&p, &g, &m, &v);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  char why[256] = "";
  if (!ptdp_cuda_built() || ptdp_cuda_device_count(why, sizeof why) <= 0) {
    printf("SKIP: no GPU to test the CUDA backend on (%s)\n", ptdp_cuda_built() ? why : "built without CUDA");
    MPI_Finalize();
    return 77;
  }
  const ptdp_backend_options opt = {.num_threads = 2, .ranks_on_node = 1, .report = 0, .device = -1};
  if (ptdp_backend_create("cpu", &opt, &be[0]) || ptdp_backend_create("cuda", &opt, &be[1])) return 2;
  EXPECT(be[1]->host_accessible == 0 && be[1]->stream != NULL, "cuda: host_accessible 0, a stream");
  check_memory_ops();
  check_gemm();
  check_layernorm(48);
  check_layernorm(1024);
  check_elementwise();
  check_attention(136, 8, 0.0f);
  check_attention(136, 8, 0.1f);
  check_attention(512, 64, 0.1f);
  check_vocab_ops();
  check_optimizer_ops();
  ptdp_backend_destroy(&be[0]);
  ptdp_backend_destroy(&be[1]);
  printf("test_cuda_ops: %d passed, %d failed\n", n_pass, n_fail);
  MPI_Finalize();
  return n_fail != 0;
}
