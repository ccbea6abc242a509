/* cpu_op_bench: time ptdp's CPU backend, operator by operator, and print the hardware-file keys
 * ptdp-sim's CPU model reads (--fusion cpu; src/sim/layer_cpu.c).  jobs/measure_cpu_hw.sh runs it.
 *
 * usage: cpu_op_bench [THREADS [b s h a V]]   (defaults 1; 4 128 256 8 512: the model of
 *        validation/bench/bench_sim_cpu.sh on one rank)
 *
 * Every operator is the backend's own (ptdp_backend_create("cpu")), with the kernels ptdp-train
 * picks (ptdp_blas_choose_core), on the tensors one layer of that model uses for one
 * micro-batch, N = b s rows, each call on another of NSETS copies of them (as in training,
 * the inputs come from beyond the core's private caches); the median of REPS calls after a warm-up.
 * Printed per element:
 *   peak-tflops-32        the rate R of the model's linear layers (forward, input and weight
 *                         gradients of QKV, projection, FC1, FC2) through the backend's gemm;
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
 * Each GEMM's rate and the sgemm rate of n = 1024 are printed as comments beside R. */
#include "ptdp/backend.h"
#include "ptdp/cpu_threads.h"
#include "ptdp/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The median of REPS timed calls of the statement, after one untimed: training runs at the
 * typical speed of a call, not at the luckiest (on a shared VM the best is 5 to 15% faster).
 * Call r works on the r-th of NSETS copies of the buffers (the statement adds at_ to its
 * pointers): in training an operator reads tensors another operator wrote earlier, from beyond
 * the private caches, not the ones it just touched itself. */
#define REPS 15
#define NSETS 4
static int by_value(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
#define MEDIAN(var, stmt)                                                                                           \
  do {                                                                                                              \
    double dts_[REPS];                                                                                              \
    for (int rep_ = 0; rep_ <= REPS; rep_++) {                                                                      \
      const size_t at_ = (size_t)(rep_ % NSETS) * big;                                                              \
      (void)at_;                                                                                                    \
      const double t0_ = now();                                                                                     \
      if ((stmt) != 0) {                                                                                            \
        fprintf(stderr, "cpu_op_bench: %s failed\n", #stmt);                                                        \
        exit(1);                                                                                                    \
      }                                                                                                             \
      if (rep_ > 0) dts_[rep_ - 1] = now() - t0_;                                                                   \
    }                                                                                                               \
    qsort(dts_, REPS, sizeof dts_[0], by_value);                                                                    \
    var = dts_[REPS / 2];                                                                                           \
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
  float *x = buffer(NSETS * big, 1), *y = buffer(NSETS * big, 2), *z = buffer(NSETS * big, 3);
  float *w = buffer(NSETS * big, 1);
  uint8_t *mask = malloc(NSETS * big);
  float *mean = buffer((size_t)N, 0), *rstd = buffer((size_t)N, 1), *gw = buffer((size_t)f * 3, 0);
  float *gb = buffer((size_t)f * 3, 0), *stat = buffer((size_t)3 * N, 1);
  int32_t *tok = malloc(sizeof *tok * (size_t)N);
  if (!mask || !tok) return 1;
  for (int r = 0; r < N; r++) tok[r] = (int32_t)((r * 31) % V);
  double t, t2, t3, t4;

  MEDIAN(t, be->gemm(be, 0, 0, n1024, n1024, n1024, 1.0f, x + at_, n1024, y + at_, n1024, 0.0f, z + at_, n1024));
  const double R1024 = 2.0 * n1024 * n1024 * n1024 / t;
  char corename[512];
  ptdp_blas_describe(threads, corename, sizeof corename);
  printf("# ptdp's CPU backend, %s\n", corename);
  printf("# model per rank: b %d, s %d, h %d, a %d, V %d (N = b s = %d rows)\n", b, s, h, nh, V, N);
  /* the linear layers [N, K] x [K, Nout] (QKV, projection, FC1, FC2) as the model runs them:
   * forward C = X W^T, input gradient dX = dY W, weight gradient dW += dY^T X */
  const int shapes[4][2] = {{h, 3 * h}, {h, h}, {h, f}, {f, h}};
  double lin_flops = 0, lin_time = 0;
  printf("# linear layers, forward / input gradient / weight gradient (GFLOP/s):");
  for (int i = 0; i < 4; i++) {
    const int K = shapes[i][0], M2 = shapes[i][1];
    const double F = 2.0 * N * M2 * K;
    MEDIAN(t, be->gemm(be, 0, 1, N, M2, K, 1.0f, x + at_, K, y + at_, K, 0.0f, z + at_, M2));
    MEDIAN(t2, be->gemm(be, 0, 0, N, K, M2, 1.0f, x + at_, M2, y + at_, K, 0.0f, z + at_, K));
    MEDIAN(t3, be->gemm(be, 1, 0, M2, K, N, 1.0f, x + at_, M2, y + at_, K, 1.0f, z + at_, K));
    printf(" [%d,%d]x[%d,%d] %.0f/%.0f/%.0f", N, K, K, M2, F / t / 1e9, F / t2 / 1e9, F / t3 / 1e9);
    lin_flops += 3 * F;
    lin_time += t + t2 + t3;
  }
  const double R = lin_flops / lin_time;
  printf("\n# R = the twelve together, the rate of the shapes the model uses (sgemm n = 1024: %.1f GFLOP/s)\n",
         R1024 / 1e9);
  printf("peak-tflops-32 = %.5g\n", R / 1e12);

  const double nh_elems = (double)N * h, nf = (double)N * f;
  MEDIAN(t, be->add(be, y + at_, x + at_, (size_t)N * h));
  key("cpu-elementwise-ns", t, nh_elems, "y += x on [N, h]");
  ptdp_dropout_key dk = {.seed = 1234, .site = 1, .layer = 0, .sample0 = 0, .row0 = 0, .col0 = 0, .b = b, .p = 0.1f};
  MEDIAN(t, be->dropout_forward(be, y + at_, mask + at_, N, h, &dk));
  key("cpu-dropout-ns", t, nh_elems, "dropout mask drawn and applied on [N, h], p 0.1");
  MEDIAN(t, be->layernorm_forward(be, x + at_, w, w, y + at_, mean, rstd, N, h, 1e-5f));
  key("cpu-layernorm-forward-ns", t, nh_elems, "LayerNorm forward on [N, h]");
  MEDIAN(t, be->layernorm_backward(be, y + at_, x + at_, w, mean, rstd, z + at_, gw, gb, N, h));
  key("cpu-layernorm-backward-ns", t, nh_elems, "LayerNorm backward on [N, h] (input, weight and bias gradients)");
  MEDIAN(t, be->gelu_forward(be, x + at_, y + at_, (size_t)N * f));
  key("cpu-gelu-forward-ns", t, nf, "GeLU forward on [N, 4h]");
  MEDIAN(t, be->gelu_backward(be, x + at_, y + at_, z + at_, (size_t)N * f));
  key("cpu-gelu-backward-ns", t, nf, "GeLU backward on [N, 4h]");
  MEDIAN(t, be->bias_backward(be, y + at_, gb, N, 3 * h));
  MEDIAN(t2, be->bias_backward(be, y + at_, gb, N, h));
  MEDIAN(t3, be->bias_backward(be, y + at_, gb, N, f));
  key("cpu-bias-grad-ns", t + 2 * t2 + t3, (double)N * (3 * h + h + f + h),
      "the bias gradients of one layer: column sums of [N, 3h], [N, h], [N, 4h], [N, h]");

  ptdp_attn_desc ad = {.b = b, .s = s, .al = nh, .hd = hd, .head0 = 0, .drop = dk};
  ad.drop.p = 0;
  float *qkv = x, *probs = y, *ctx = w, *dctx = z, *dqkv = buffer(NSETS * big, 0), *scratch = buffer((size_t)s * s, 0);
  double ff, fb;
  ptdp_sim_cpu_attention_flops(s, hd, &ff, &fb);
  const double scores = (double)b * nh * s * s, pairs = (double)b * nh;
  MEDIAN(t, be->attention_forward(be, &ad, qkv + at_, probs + at_, mask, probs + at_, ctx + at_));
  MEDIAN(t2, be->attention_backward(be, &ad, qkv + at_, probs + at_, mask, probs + at_, dctx + at_, dqkv + at_,
                                    scratch));
  printf("# attention core, no dropout: forward %.1f us (GEMMs at R %.1f us), backward %.1f us (GEMMs %.1f us)\n",
         t * 1e6, pairs * ff / R * 1e6, t2 * 1e6, pairs * fb / R * 1e6);
  key("cpu-softmax-forward-ns", t - pairs * ff / R > 0 ? t - pairs * ff / R : 0, scores,
      "attention core forward less its GEMMs at R, per score b a s s (causal softmax)");
  key("cpu-softmax-backward-ns", t2 - pairs * fb / R > 0 ? t2 - pairs * fb / R : 0, scores,
      "attention core backward less its GEMMs at R, per score");

  const double logits = (double)N * V;
  float *mx = stat, *se = stat + N, *tg = stat + 2 * N;
  MEDIAN(t, be->xent_stats(be, x + at_, tok, 0, N, V, mx, tg));
  MEDIAN(t4, be->xent_sumexp(be, x + at_, mx, N, V, se));
  key("cpu-cross-entropy-forward-ns", t + t4, logits, "cross entropy max and sum-exp passes on [N, V]");
  memcpy(y, x, sizeof(float) * NSETS * big);
  MEDIAN(t, be->xent_grad(be, y + at_, tok, 0, mx, se, N, V, 1.0f));
  key("cpu-cross-entropy-grad-ns", t, logits, "cross entropy gradient pass on [N, V]");

  /* the optimizer over 4 Mi parameters (64 MiB of state, beyond the caches, as a model's is) */
  const size_t np = (size_t)1 << 22;
  float *p = buffer(np, 1), *g = buffer(np, 1), *m1 = buffer(np, 0), *m2 = buffer(np, 0);
  memset(m1, 0, np * sizeof *m1); /* moments start at zero (the second must not be negative) */
  memset(m2, 0, np * sizeof *m2);
  MEDIAN(t, be->adamw(be, p, g, m1, m2, np, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.01f, 3));
  double sq = 0;
  MEDIAN(t2, (sq += be->sumsq(be, g, np), 0));
  MEDIAN(t3, be->scale(be, g, 0.999f, np));
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
