/* cpu_op_bench: time ptdp's CPU backend, operator by operator, and print the hardware-file keys
 * ptdp-sim's CPU model reads (--fusion cpu; src/sim/layer_cpu.c).  jobs/measure_cpu_hw.sh runs it.
 *
 * usage: cpu_op_bench [THREADS [b s h a V]]   (defaults 1; 4 128 256 8 512: the model of
 *        validation/bench/bench_sim_cpu.sh on one rank)
 *
 * Every operator is the backend's own (ptdp_backend_create("cpu")), with the kernels ptdp-train
 * picks (ptdp_blas_choose_core), on the tensors one layer of that model uses for one
 * micro-batch, N = b s rows; best of REPS calls after a warm-up.  Printed per element:
 *   peak-tflops-32        sgemm n = 1024 through the backend's gemm (the rate R);
 *   cpu-elementwise-ns    y += x on [N, h];
 *   cpu-dropout-ns        a mask drawn and applied on [N, h], p = 0.1;
 *   cpu-layernorm-*-ns    LayerNorm forward and backward on [N, h];
 *   cpu-gelu-*-ns         GeLU forward and backward on [N, 4h];
 *   cpu-bias-grad-ns      the four bias gradients of a layer ([N, 3h], [N, h], [N, 4h], [N, h])
 *                         together: their time over their elements (column sums: the cost per
 *                         element grows with the column count, see validation/bench/README.md);
 *   cpu-softmax-*-ns      the attention core (no dropout) less its GEMM FLOPs at R, over the
 *                         b a s s scores;
 *   cpu-cross-entropy-*   max and sum-exp passes, and the gradient pass, on [N, V];
 *   cpu-optimizer-ns      AdamW, the gradient's sum of squares and clipping scale, 4 Mi parameters.
 * The GEMM shapes of the model's linear layers are printed as comments beside R. */
#include "ptdp/backend.h"
#include "ptdp/cpu_threads.h"
#include "ptdp/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 8

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* best of REPS timed calls of the statement, after one untimed */
#define BEST(var, stmt)                                                                                                \
  do {                                                                                                                 \
    var = 1e30;                                                                                                        \
    for (int rep_ = 0; rep_ <= REPS; rep_++) {                                                                         \
      const double t0_ = now();                                                                                        \
      if ((stmt) != 0) {                                                                                               \
        fprintf(stderr, "cpu_op_bench: %s failed\n", #stmt);                                                           \
        exit(1);                                                                                                       \
      }                                                                                                                \
      const double dt_ = now() - t0_;                                                                                  \
      if (rep_ > 0 && dt_ < var) var = dt_;                                                                            \
    }                                                                                                                  \
  } while (0)

static float *buffer(size_t n, float v)
{
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "cpu_op_bench: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++) p[i] = v * (float)((i * 7) % 13) / 13.0f - 0.25f;
  return p;
}

static void key(const char *name, double seconds, double elements, const char *how)
{
  printf("# %s\n%s = %.4g\n", how, name, seconds / elements * 1e9);
}

int main(int argc, char **argv)
{
  ptdp_blas_choose_core(argc, argv);
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  const int b = argc > 6 ? atoi(argv[2]) : 4, s = argc > 6 ? atoi(argv[3]) : 128, h = argc > 6 ? atoi(argv[4]) : 256;
  const int nh = argc > 6 ? atoi(argv[5]) : 8, V = argc > 6 ? atoi(argv[6]) : 512;
  if (threads < 1 || b < 1 || s < 1 || h < 1 || nh < 1 || h % nh || V < 1) {
    fprintf(stderr, "usage: cpu_op_bench [THREADS [b s h a V]]\n");
    return 2;
  }
  ptdp_backend_options bo = {.num_threads = threads, .ranks_on_node = 1, .report = 1, .local_rank = 0, .device = -1};
  ptdp_backend *be = NULL;
  if (ptdp_backend_create("cpu", &bo, &be) != 0) return 1;
  const int N = b * s, f = 4 * h, hd = h / nh, n1024 = 1024;
  size_t big = (size_t)n1024 * n1024;
  const size_t need[] = {(size_t)N * f, (size_t)N * V, (size_t)b * nh * s * s, (size_t)N * 3 * h};
  for (int i = 0; i < 4; i++) big = need[i] > big ? need[i] : big;
  float *x = buffer(big, 1), *y = buffer(big, 2), *z = buffer(big, 3), *w = buffer(big, 1);
  uint8_t *mask = malloc(big);
  float *mean = buffer((size_t)N, 0), *rstd = buffer((size_t)N, 1), *gw = buffer((size_t)f * 3, 0);
  float *gb = buffer((size_t)f * 3, 0), *stat = buffer((size_t)3 * N, 1);
  int32_t *tok = malloc(sizeof *tok * (size_t)N);
  if (!mask || !tok) return 1;
  for (int r = 0; r < N; r++) tok[r] = (int32_t)((r * 31) % V);
  double t, t2, t3, t4;

  BEST(t, be->gemm(be, 0, 0, n1024, n1024, n1024, 1.0f, x, n1024, y, n1024, 0.0f, z, n1024));
  const double R = 2.0 * n1024 * n1024 * n1024 / t;
  char corename[512];
  ptdp_blas_describe(threads, corename, sizeof corename);
  printf("# ptdp's CPU backend, %s\n", corename);
  printf("# model per rank: b %d, s %d, h %d, a %d, V %d (N = b s = %d rows)\n", b, s, h, nh, V, N);
  printf("# sgemm n = 1024 through the backend's gemm: R = %.1f GFLOP/s\npeak-tflops-32 = %.5g\n", R / 1e9, R / 1e12);
  /* the linear layers' forward shapes [N, K] x [K, Nout], beside R (not used: a check) */
  const int shapes[4][2] = {{h, 3 * h}, {h, h}, {h, f}, {f, h}};
  printf("# linear layers at this size (GFLOP/s, fraction of R):");
  for (int i = 0; i < 4; i++) {
    const int K = shapes[i][0], M2 = shapes[i][1];
    BEST(t, be->gemm(be, 0, 1, N, M2, K, 1.0f, x, K, y, K, 0.0f, z, M2));
    printf(" [%d,%d]x[%d,%d] %.1f (%.2f)", N, K, K, M2, 2.0 * N * M2 * K / t / 1e9, 2.0 * N * M2 * K / t / R);
  }
  printf("\n");

  const double nh_elems = (double)N * h, nf = (double)N * f;
  BEST(t, be->add(be, y, x, (size_t)N * h));
  key("cpu-elementwise-ns", t, nh_elems, "y += x on [N, h]");
  ptdp_dropout_key dk = {.seed = 1234, .site = 1, .layer = 0, .sample0 = 0, .row0 = 0, .col0 = 0, .b = b, .p = 0.1f};
  BEST(t, be->dropout_forward(be, y, mask, N, h, &dk));
  key("cpu-dropout-ns", t, nh_elems, "dropout mask drawn and applied on [N, h], p 0.1");
  BEST(t, be->layernorm_forward(be, x, w, w, y, mean, rstd, N, h, 1e-5f));
  key("cpu-layernorm-forward-ns", t, nh_elems, "LayerNorm forward on [N, h]");
  BEST(t, be->layernorm_backward(be, y, x, w, mean, rstd, z, gw, gb, N, h));
  key("cpu-layernorm-backward-ns", t, nh_elems, "LayerNorm backward on [N, h] (input, weight and bias gradients)");
  BEST(t, be->gelu_forward(be, x, y, (size_t)N * f));
  key("cpu-gelu-forward-ns", t, nf, "GeLU forward on [N, 4h]");
  BEST(t, be->gelu_backward(be, x, y, z, (size_t)N * f));
  key("cpu-gelu-backward-ns", t, nf, "GeLU backward on [N, 4h]");
  BEST(t, be->bias_backward(be, y, gb, N, 3 * h));
  BEST(t2, be->bias_backward(be, y, gb, N, h));
  BEST(t3, be->bias_backward(be, y, gb, N, f));
  key("cpu-bias-grad-ns", t + 2 * t2 + t3, (double)N * (3 * h + h + f + h),
      "the bias gradients of one layer: column sums of [N, 3h], [N, h], [N, 4h], [N, h]");

  ptdp_attn_desc ad = {.b = b, .s = s, .al = nh, .hd = hd, .head0 = 0, .drop = dk};
  ad.drop.p = 0;
  float *qkv = x, *probs = y, *ctx = w, *dctx = z, *dqkv = buffer((size_t)N * 3 * h, 0), *scratch = buffer((size_t)s * s, 0);
  double ff, fb;
  ptdp_sim_cpu_attention_flops(s, hd, &ff, &fb);
  const double scores = (double)b * nh * s * s, pairs = (double)b * nh;
  BEST(t, be->attention_forward(be, &ad, qkv, probs, mask, probs, ctx));
  BEST(t2, be->attention_backward(be, &ad, qkv, probs, mask, probs, dctx, dqkv, scratch));
  printf("# attention core, no dropout: forward %.1f us (GEMMs at R %.1f us), backward %.1f us (GEMMs %.1f us)\n",
         t * 1e6, pairs * ff / R * 1e6, t2 * 1e6, pairs * fb / R * 1e6);
  key("cpu-softmax-forward-ns", t - pairs * ff / R > 0 ? t - pairs * ff / R : 0, scores,
      "attention core forward less its GEMMs at R, per score b a s s (causal softmax)");
  key("cpu-softmax-backward-ns", t2 - pairs * fb / R > 0 ? t2 - pairs * fb / R : 0, scores,
      "attention core backward less its GEMMs at R, per score");

  const double logits = (double)N * V;
  float *mx = stat, *se = stat + N, *tg = stat + 2 * N;
  BEST(t, be->xent_stats(be, x, tok, 0, N, V, mx, tg));
  BEST(t4, be->xent_sumexp(be, x, mx, N, V, se));
  key("cpu-cross-entropy-forward-ns", t + t4, logits, "cross entropy max and sum-exp passes on [N, V]");
  memcpy(y, x, sizeof(float) * (size_t)N * V);
  BEST(t, be->xent_grad(be, y, tok, 0, mx, se, N, V, 1.0f));
  key("cpu-cross-entropy-grad-ns", t, logits, "cross entropy gradient pass on [N, V]");

  /* the optimizer over 4 Mi parameters (64 MiB of state, beyond the caches, as a model's is) */
  const size_t np = (size_t)1 << 22;
  float *p = buffer(np, 1), *g = buffer(np, 1), *m1 = buffer(np, 0), *m2 = buffer(np, 0);
  memset(m1, 0, np * sizeof *m1); /* moments start at zero (the second must not be negative) */
  memset(m2, 0, np * sizeof *m2);
  BEST(t, be->adamw(be, p, g, m1, m2, np, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, 3));
  double sq = 0;
  BEST(t2, (sq += be->sumsq(be, g, np), 0));
  BEST(t3, be->scale(be, g, 0.999f, np));
  key("cpu-optimizer-ns", t + t2 + t3, (double)np,
      "AdamW step, the gradient's sum of squares and its clipping scale, 4 Mi parameters");
  free(p);
  free(g);
  free(m1);
  free(m2);

  ptdp_backend_destroy(&be);
  float *bufs[] = {x, y, z, w, mean, rstd, gw, gb, stat, dqkv, scratch};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
  free(mask);
  free(tok);
  return 0;
}
