/* The inference forward pass and the sampler of ptdp-generate (include/ptdp/generate.h).
 *
 *   test_generate [cpu|guard [llama]]     on t = the number of ranks (p = 1); llama: RMSNorm, rotary
 *                                         positions, no linear biases, the output layer untied, 2
 *                                         key/value groups (the cache holds one key per group),
 *                                         the SwiGLU MLP
 *
 * A 3-layer model (h 64, 4 heads, vocabulary 300: padding rows on every t) with weights from
 * ptdp_gpt_init_params (init-method-std 0.3, so the logits are spread and greedy choices clear):
 *  1. logits: the generator's logits equal the training forward's (ptdp_gpt_forward on the same
 *     model, its logits fetched through debug_logits) for the same 24 tokens, within 1e-5 of
 *     max|logit|: (a) all 24 in one prefill, (b) 1 prefilled then 23 decoded one at a time
 *     against the cache, (c) 7 prefilled then 17 decoded.  Called directly rather than through
 *     the trainer's debug dump so that no file and no trainer are involved, and every row of
 *     the decode path is compared, not only the first step's.  The tolerance: the same
 *     operations on the same float32 weights, differing only in the order of sums (a product of
 *     one row instead of 24, the decode softmax over exactly len keys instead of a causal block
 *     with zeros): rounding of a few ulp per operation through 3 layers, ~1e-7 of the scale;
 *     1e-5 leaves two orders of magnitude and still catches any real error (a wrong position,
 *     head or cache row moves logits by ~1e-2 of their scale).
 *  2. KV-cached generation equals generation that runs the whole sequence at every step, token
 *     for token: greedy, top-k 20 and top-p 0.9 sampling.
 *  3. the sampler alone: greedy and its ties, top-k (ties with the k-th kept), top-p (the first
 *     token past p kept), temperature (frequencies of 20000 draws against softmax(l / T)),
 *     determinism in (seed, step), and the checks of bad settings. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/generate.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/rng.h"

#include "../expect.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S 24      /* tokens of the logits comparison */
#define VOCAB 300

static double max_rel_diff(const float *a, const float *ref, size_t n)
{
  double d = 0, scale = 0;
  for (size_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - ref[i]));
    scale = fmax(scale, fabs((double)ref[i]));
  }
  return scale > 0 ? d / scale : d;
}

/* The training forward's logits [S, VOCAB] of tokens, gathered from the TP ranks. */
static int training_logits(ptdp_gpt *m, const int32_t *tokens, float *full)
{
  const int vv = ptdp_gpt_vocab_columns(m), t = m->t;
  const long long vl = m->sh.vl;
  float *mine = calloc((size_t)S * vl, sizeof(float)), *all = calloc((size_t)t * S * vl, sizeof(float));
  float *local = calloc((size_t)S * (vv > 0 ? vv : 1), sizeof(float));
  int32_t targets[S] = {0};
  ptdp_gpt_capture_logits(m, local);
  int err = ptdp_gpt_forward(m, 0, 0, tokens, targets, 0);
  ptdp_gpt_release(m, 0, 0);
  for (int r = 0; r < S; r++) memcpy(mine + (size_t)r * vl, local + (size_t)r * vv, sizeof(float) * (size_t)vv);
  MPI_Allgather(mine, (int)(S * vl), MPI_FLOAT, all, (int)(S * vl), MPI_FLOAT, m->grid->tp.comm);
  for (int q = 0; q < t; q++) {
    long long cols = VOCAB - q * vl;
    cols = cols < 0 ? 0 : cols > vl ? vl : cols;
    for (int r = 0; r < S; r++)
      memcpy(full + (size_t)r * VOCAB + q * vl, all + ((size_t)q * S + r) * vl, sizeof(float) * (size_t)cols);
  }
  free(mine), free(all), free(local);
  return err;
}

static void test_logits(ptdp_generator *g, const int32_t *tokens, const float *ref)
{
  float *got = malloc(sizeof(float) * S * VOCAB);
  const int prefill[] = {S, 1, 7};
  for (int c = 0; c < 3; c++) {
    const int n0 = prefill[c];
    ptdp_generator_reset(g);
    int err = ptdp_generator_forward(g, tokens, n0, 1, got);
    if (n0 < S) err = err || ptdp_generator_forward(g, tokens + n0, S - n0, 1, got + (size_t)n0 * VOCAB);
    double d = max_rel_diff(got, ref, (size_t)S * VOCAB);
    EXPECT(!err && d <= 1e-5, "prefill %d + decode %d: logits differ from the training forward's by %.3g of their scale",
           n0, S - n0, d);
    if (wrank == 0) printf("logits, prefill %2d + decode %2d: max |inference - training| / max |training| = %.3g\n", n0,
                           S - n0, d);
  }
  /* the last row alone, as generation asks for it */
  ptdp_generator_reset(g);
  int err = ptdp_generator_forward(g, tokens, S, 0, got);
  EXPECT(!err && max_rel_diff(got, ref + (size_t)(S - 1) * VOCAB, VOCAB) <= 1e-5, "the last row's logits alone");
  free(got);
}

static void test_cache(ptdp_generator *g, const int32_t *prompt)
{
  const ptdp_sampling modes[] = {{1.0, 1, 0.0, 5}, {1.0, 20, 0.0, 7}, {0.8, 0, 0.9, 9}};
  const char *names[] = {"greedy", "top-k 20", "top-p 0.9"};
  const int np = 5, K = S - np + 1;
  for (int k = 0; k < 3; k++) {
    int32_t a[S], b[S];
    ptdp_generate_stats sa, sb;
    int err = ptdp_generate(g, &modes[k], prompt, np, K, -1, 1, a, &sa);
    err = err || ptdp_generate(g, &modes[k], prompt, np, K, -1, 0, b, &sb);
    EXPECT(!err && sa.generated == K && sb.generated == K && !memcmp(a, b, sizeof(int32_t) * K),
           "%s: KV-cached generation equals recomputing the sequence at every step", names[k]);
    int distinct = 0;
    for (int i = 1; i < K; i++) distinct += a[i] != a[0];
    EXPECT(distinct > 0, "%s: the generated tokens are not all the same (a degenerate test)", names[k]);
    if (wrank == 0) {
      printf("%-10s:", names[k]);
      for (int i = 0; i < K; i++) printf(" %d", a[i]);
      printf("\n");
    }
  }
}

/* ---------------------------------------------------------------- the sampler alone */

static int draw(const ptdp_sampling *s, long long step, const float *l, int n)
{
  int32_t tok = -1;
  return ptdp_sample(s, step, l, n, &tok) ? -2 : tok;
}

static void test_sampler(void)
{
  const float l[5] = {1, 5, 3, 4, 2};
  const ptdp_sampling greedy = {1.0, 1, 0, 1}, cold = {0.0, 0, 0, 1};
  EXPECT(draw(&greedy, 0, l, 5) == 1 && draw(&cold, 3, l, 5) == 1, "greedy (top-k 1, temperature 0) is the argmax");
  const float tie[4] = {0, 2, 2, 1};
  EXPECT(draw(&greedy, 0, tie, 4) == 1, "greedy takes the first of equal maxima");
  /* top-k 2 on {3, 2, 2, 0}: the tie with the 2nd largest is kept, token 3 never drawn */
  const float tk[4] = {3, 2, 2, 0};
  const ptdp_sampling k2 = {1.0, 2, 0, 11};
  int seen[5] = {0}, bad = 0;
  for (int i = 0; i < 4000; i++) {
    int t = draw(&k2, i, tk, 4);
    if (t < 0 || t == 3) bad++;
    else seen[t]++;
  }
  EXPECT(!bad && seen[0] && seen[1] && seen[2], "top-k 2 keeps ties with the 2nd largest and nothing else");
  /* top-p on probabilities {0.5, 0.3, 0.15, 0.05}: p 0.6 keeps tokens 0 and 1 (0.5 <= 0.6 before
   * token 1; 0.8 > 0.6 before token 2), drawn in proportion 5 : 3 */
  const float tp[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
  const ptdp_sampling p6 = {1.0, 0, 0.6, 12};
  memset(seen, 0, sizeof seen);
  bad = 0;
  const int N = 20000;
  for (int i = 0; i < N; i++) {
    int t = draw(&p6, i, tp, 4);
    if (t < 0 || t > 1) bad++;
    else seen[t]++;
  }
  EXPECT(!bad && fabs((double)seen[0] / N - 0.625) < 0.02, "top-p 0.6 keeps the two most probable (%d, %d, bad %d)",
         seen[0], seen[1], bad);
  /* temperature 2 on l: frequencies follow softmax(l / 2) */
  const ptdp_sampling t2 = {2.0, 0, 0, 13};
  memset(seen, 0, sizeof seen);
  double z = 0, p[5];
  for (int i = 0; i < 5; i++) z += p[i] = exp(l[i] / 2.0);
  for (int i = 0; i < N; i++) {
    int t = draw(&t2, i, l, 5);
    if (t >= 0) seen[t]++;
  }
  double worst = 0;
  for (int i = 0; i < 5; i++) worst = fmax(worst, fabs((double)seen[i] / N - p[i] / z));
  EXPECT(worst < 0.015, "temperature 2: frequencies of %d draws within 0.015 of softmax(l / 2) (worst %.4f)", N, worst);
  /* a pure function of (seed, step) */
  const ptdp_sampling a = {1.0, 0, 0, 21}, b = {1.0, 0, 0, 22};
  int same = 1, differ = 0;
  for (int i = 0; i < 64; i++) {
    same &= draw(&a, i, l, 5) == draw(&a, i, l, 5);
    differ += draw(&a, i, l, 5) != draw(&b, i, l, 5);
  }
  EXPECT(same && differ > 10, "draws depend on (seed, step) only: repeatable, another seed differs");
  /* bad settings and logits */
  ptdp_error_set_quiet(1);
  const ptdp_sampling bads[] = {{-1, 0, 0, 0}, {1, 0, 1.5, 0}, {1, 5, 0.5, 0}, {0, 5, 0, 0}, {1, 400, 0, 0}};
  int refused = 0;
  for (int i = 0; i < 5; i++) refused += ptdp_sampling_check(&bads[i], VOCAB) != 0;
  EXPECT(refused == 5, "bad sampling settings are refused (%d of 5)", refused);
  const float nan[3] = {0, NAN, 1};
  EXPECT(draw(&a, 0, nan, 3) == -2, "non-finite logits are an error");
  ptdp_error_set_quiet(0);
  ptdp_error_clear();
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int world;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  const char *backend = argc > 1 ? argv[1] : "cpu";
  ptdp_grid grid;
  ptdp_backend *be = NULL;
  if (ptdp_grid_create(MPI_COMM_WORLD, world, 1, PTDP_ORDER_TP_DP_PP, &grid) || ptdp_backend_create(backend, NULL, &be) ||
      ptdp_grid_attach_backend(&grid, be))
    MPI_Abort(MPI_COMM_WORLD, 1);
  ptdp_gpt_config c = {.num_layers = 3, .hidden = 64, .heads = 4, .ffn = 256, .seq = S, .max_pos = 32,
                       .micro_batch = 1, .vocab = VOCAB, .vocab_divisible_by = 8, .eps = 1e-5f, .init_std = 0.3f,
                       .seed = 77, .chunks = 1, .schedule = PTDP_SCHED_1F1B, .m = 1, .dp_size = 1,
                       .bucket_elems = 1 << 20};
  const int llama = argc > 2 && !strcmp(argv[2], "llama");
  if (llama) /* the decode path turns each new row by its position in the cache */
    c.arch = (ptdp_arch){.norm = PTDP_NORM_RMSNORM, .position = PTDP_POS_ROPE, .no_linear_bias = 1, .untie = 1,
                         .query_groups = 2, .swiglu = 1}; /* 2 key/value groups: one per rank at t = 2 */
  ptdp_gpt m;
  ptdp_generator g;
  if (ptdp_gpt_create(&m, &c, be, &grid) || ptdp_gpt_init_params(&m) || ptdp_generator_create(&g, &m, S))
    MPI_Abort(MPI_COMM_WORLD, 1);
  int32_t tokens[S];
  for (int i = 0; i < S; i++) tokens[i] = (int32_t)(ptdp_rng_mix(1000 + (uint64_t)i) % VOCAB);
  float *ref = malloc(sizeof(float) * S * VOCAB);
  EXPECT(training_logits(&m, tokens, ref) == 0, "the training forward runs");
  if (wrank == 0) printf("t = %d, backend %s%s\n", world, backend, llama ? ", Llama architecture" : "");
  test_logits(&g, tokens, ref);
  test_cache(&g, tokens);
  test_sampler();
  free(ref);
  ptdp_generator_destroy(&g);
  ptdp_gpt_destroy(&m);
  ptdp_backend_destroy(&be);
  ptdp_grid_destroy(&grid);
  int fails = 0;
  MPI_Allreduce(&n_fail, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (wrank == 0) printf("test_generate: rank 0 %d checks passed; %d failed over all %d ranks\n", n_pass, fails, world);
  MPI_Finalize();
  return fails ? 1 : 0;
}
