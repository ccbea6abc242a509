/* Token sampling with Megatron-LM's semantics (megatron/inference/text_generation/sampling.py),
 * on host logits of the real vocabulary: see include/ptdp/generate.h.
 *
 *   greedy   top_k == 1 (Megatron) or temperature == 0 (ours): the first index of the largest logit
 *   else     z = logits / T; top-k keeps z_i >= the k-th largest z (ties kept, as torch's
 *            `logits < topk(...)[-1]` filter does); top-p sorts z descending, takes the cumulative
 *            softmax c_j, and keeps rank j when c_{j-1} <= p (rank 0 always): the smallest set of
 *            most probable tokens whose mass exceeds p; then one draw from softmax(z) over the kept
 *            tokens.
 *
 * The draw is u in [0, 1) from a counter-based hash of (seed, step): a pure function of the
 * logits, the settings and the step, never of the rank, so every TP rank picks the same token
 * from the same gathered logits.  Probabilities are summed in double in token order. */
#include "ptdp/generate.h"

#include "ptdp/error.h"
#include "ptdp/rng.h"

#include <math.h>
#include <stdlib.h>

/* The stream of the draws: the next site after those listed in ptdp/rng.h (generation runs no
 * dropout and no initialisation, so it shares no stream with them in any case). */
#define SAMPLING_SITE 7u

int ptdp_sampling_is_greedy(const ptdp_sampling *s) { return s->top_k == 1 || s->temperature == 0.0; }

int ptdp_sampling_check(const ptdp_sampling *s, long long vocab)
{
  PTDP_CHECK(s->temperature >= 0.0 && isfinite(s->temperature),
             "temperature %g must be a positive number (0 means greedy)", s->temperature);
  PTDP_CHECK(s->top_k >= 0, "top-k %lld must be 0 (off), 1 (greedy) or more", s->top_k);
  PTDP_CHECK(s->top_p >= 0.0 && s->top_p <= 1.0, "top-p %g must be in [0, 1] (0 means off)", s->top_p);
  PTDP_CHECK(!(s->top_k > 0 && s->top_p > 0.0), "cannot set both top-k (%lld) and top-p (%g): choose one (as Megatron)",
             s->top_k, s->top_p);
  PTDP_CHECK(!(s->temperature == 0.0 && (s->top_k > 1 || s->top_p > 0.0)),
             "temperature 0 is greedy decoding; top-k %lld / top-p %g would have no effect (give temperature > 0)",
             s->top_k, s->top_p);
  PTDP_CHECK(vocab <= 0 || s->top_k <= vocab, "top-k %lld is larger than the vocabulary (%lld tokens)", s->top_k,
             vocab);
  return 0;
}

typedef struct {
  double z;
  int id;
} scored;

/* Descending by value, ascending by token id among equals: a total order, so every rank sorts
 * alike. */
static int by_value_desc(const void *pa, const void *pb)
{
  const scored *a = pa, *b = pb;
  if (a->z != b->z) return a->z < b->z ? 1 : -1;
  return (a->id > b->id) - (a->id < b->id);
}

static int argmax(const float *l, int n)
{
  int best = 0;
  for (int i = 1; i < n; i++)
    if (l[i] > l[best]) best = i;
  return best;
}

/* keep[i] = 1 for the tokens top-k or top-p keeps (z already divided by the temperature). */
static void filter(const ptdp_sampling *s, const double *z, int n, scored *sorted, unsigned char *keep)
{
  for (int i = 0; i < n; i++) keep[i] = 1;
  if (s->top_k <= 1 && s->top_p <= 0.0) return;
  for (int i = 0; i < n; i++) sorted[i] = (scored){z[i], i};
  qsort(sorted, (size_t)n, sizeof *sorted, by_value_desc);
  if (s->top_k > 1) {
    const double kth = sorted[s->top_k < n ? s->top_k - 1 : n - 1].z;
    for (int i = 0; i < n; i++) keep[i] = z[i] >= kth;
    return;
  }
  /* top-p: cumulative softmax in sorted order */
  double sum = 0.0;
  for (int j = 0; j < n; j++) sum += exp(sorted[j].z - sorted[0].z);
  double before = 0.0; /* c_{j-1} */
  for (int j = 0; j < n; j++) {
    keep[sorted[j].id] = j == 0 || before <= s->top_p;
    before += exp(sorted[j].z - sorted[0].z) / sum;
  }
}

/* u in [0, 1) with 53 random bits, keyed by (seed, step). */
static double draw(uint64_t seed, long long step)
{
  uint64_t h = ptdp_rng_at(ptdp_rng_row(seed, SAMPLING_SITE, 0, 0, (uint64_t)step), 0);
  return (double)(h >> 11) * 0x1p-53;
}

int ptdp_sample(const ptdp_sampling *s, long long step, const float *logits, int vocab, int32_t *token)
{
  PTDP_CHECK_INTERNAL(vocab > 0, "sampling from an empty vocabulary");
  for (int i = 0; i < vocab; i++)
    PTDP_CHECK_LOCAL(isfinite(logits[i]), "the logits of generation step %lld are not finite (token %d: %g)", step, i,
                     (double)logits[i]);
  if (ptdp_sampling_is_greedy(s)) {
    *token = argmax(logits, vocab);
    return 0;
  }
  double *z;
  scored *sorted;
  unsigned char *keep;
  PTDP_ALLOC(z, sizeof *z * (size_t)vocab);
  sorted = malloc(sizeof *sorted * (size_t)vocab);
  keep = malloc((size_t)vocab);
  if (!sorted || !keep) {
    free(z), free(sorted), free(keep);
    return PTDP_FAIL(PTDP_ERR_MEM, "out of memory sampling %d logits", vocab);
  }
  double zmax = -INFINITY;
  for (int i = 0; i < vocab; i++) {
    z[i] = (double)logits[i] / s->temperature;
    zmax = z[i] > zmax ? z[i] : zmax;
  }
  filter(s, z, vocab, sorted, keep);
  double total = 0.0;
  for (int i = 0; i < vocab; i++) total += keep[i] ? exp(z[i] - zmax) : 0.0;
  const double target = draw(s->seed, step) * total;
  double acc = 0.0;
  int pick = -1;
  for (int i = 0; i < vocab; i++) {
    if (!keep[i]) continue;
    pick = i; /* the last kept token, should rounding leave acc just below target */
    acc += exp(z[i] - zmax);
    if (acc > target) break;
  }
  *token = pick;
  free(z), free(sorted), free(keep);
  return 0;
}
