/* Vocabulary ranges and the vocab-parallel embedding + cross entropy against one rank.
 *
 * Padded vocabulary (Megatron): round up to a multiple of make-vocab-size-divisible-by x t.
 * Each TP rank owns rows [r V/t, (r+1) V/t) of the word embedding.  A model with no layers is
 * embedding -> final LayerNorm -> tied output layer -> cross entropy, so its loss and word
 * embedding gradient exercise exactly the vocab-parallel pieces; for t = 1, 2, 4 (on 4 ranks,
 * d = 4 / t) the loss must equal t = 1's and the gathered gradient rows t = 1's rows, to 1e-6
 * of their scale (float32 sums of h = 16 terms in a different order). */
#include "ptdp/args.h"
#include "ptdp/backend.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../expect.h"

/* A check every rank makes; rank 0 also lists the passing ones. */
static void check(int ok, const char *what)
{
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  EXPECT(ok, "%s", what);
  if (ok && wrank == 0) printf("ok: %s\n", what);
}

/* Loss and the full word-embedding gradient [V, h] for tensor-parallel size t. */
static int run(int t, double *loss, float *wte_grad)
{
  ptdp_grid g;
  ptdp_backend *be;
  if (ptdp_grid_create(MPI_COMM_WORLD, t, 1, PTDP_ORDER_TP_DP_PP, &g) || ptdp_backend_create("cpu", NULL, &be)) return 1;
  ptdp_gpt_config c = {.num_layers = 0, .hidden = 16, .heads = 4, .ffn = 64, .seq = 8, .max_pos = 8, .micro_batch = 2,
                       .vocab = 37, .vocab_divisible_by = 8 / t, .eps = 1e-5f, .init_std = 0.5f, .seed = 11,
                       .chunks = 1, .schedule = PTDP_SCHED_1F1B, .m = 1, .dp_size = 1}; /* padded to 40 for t = 1, 2, 4 */
  ptdp_gpt m;
  if (ptdp_gpt_create(&m, &c, be, &g) || ptdp_gpt_init_params(&m)) return 1;
  check(m.sh.v0 == (long long)g.me.tp * (40 / t) && m.sh.vl == 40 / t, "vocabulary range of this rank is [r V/t, (r+1) V/t)");
  int32_t tok[16], tgt[16];
  for (int r = 0; r < 16; r++) {
    tok[r] = (int32_t)(ptdp_rng_mix(300 + r) % 37);
    tgt[r] = (int32_t)(ptdp_rng_mix(400 + r) % 37);
  }
  if (ptdp_gpt_forward(&m, 0, 0, tok, tgt, 0) || ptdp_gpt_take_losses(&m, loss, NULL)) return 1;
  float *din;
  if (ptdp_gpt_backward(&m, 0, 0, NULL, 1.0f, 1, &din)) return 1;
  const ptdp_param_info *p = &m.params.table[m.wte.index];
  if (ptdp_comm_allgather(&g.tp, m.wte.g, wte_grad, (size_t)ptdp_param_local_elems(p), PTDP_TAG_MISC)) return 1;
  ptdp_gpt_destroy(&m);
  ptdp_backend_destroy(&be);
  ptdp_grid_destroy(&g);
  return 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  ptdp_args a;
  memset(&a, 0, sizeof a);
  struct { long long v, div, t, want; } pv[] = {{50257, 128, 1, 50304}, {50257, 128, 2, 50432}, {50257, 128, 8, 51200},
                                                 {300, 192, 2, 384}, {256, 128, 1, 256}};
  for (size_t i = 0; i < sizeof pv / sizeof pv[0]; i++) {
    a.make_vocab_size_divisible_by = pv[i].div;
    a.tensor_model_parallel_size = pv[i].t;
    char msg[128];
    snprintf(msg, sizeof msg, "padded vocabulary of %lld (divisible by %lld, t=%lld) is %lld", pv[i].v, pv[i].div,
             pv[i].t, pv[i].want);
    check(ptdp_args_padded_vocab(&a, pv[i].v) == pv[i].want, msg);
  }
  float ref[40 * 16], got[40 * 16];
  double l1, lt;
  if (run(1, &l1, ref)) return 2;
  for (int t = 2; t <= 4; t *= 2) {
    if (run(t, &lt, got)) return 2;
    double scale = 0, diff = 0;
    for (int i = 0; i < 40 * 16; i++) {
      scale = fmax(scale, fabs(ref[i]));
      diff = fmax(diff, fabs(got[i] - ref[i]));
    }
    char msg[160];
    snprintf(msg, sizeof msg, "t=%d: loss %.8f vs %.8f (rel %.1e); word-embedding gradient rel %.1e", t, lt, l1,
             fabs(lt - l1) / l1, diff / scale);
    check(fabs(lt - l1) <= 1e-6 * l1 && diff <= 1e-6 * scale && scale > 0, msg);
  }
  MPI_Finalize();
  return n_fail ? 1 : 0;
}
