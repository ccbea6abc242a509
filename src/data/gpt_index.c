/* Index builders of Megatron's GPTDataset and blending (see gpt_index.h). */
#include "gpt_index.h"

#include "ptdp/checked.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void ptdp_rng_seed(ptdp_rng *r, uint64_t seed)
{
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
  r->draws = 0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t ptdp_rng_next(ptdp_rng *r)
{
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  r->draws++;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

uint64_t ptdp_rng_below(ptdp_rng *r, uint64_t n)
{
  /* 128-bit product: the high word is uniform once low words under 2^64 mod n are rejected */
  unsigned __int128 m = (unsigned __int128)ptdp_rng_next(r) * n;
  uint64_t lo = (uint64_t)m;
  if (lo < n) {
    uint64_t threshold = (0 - n) % n;
    while (lo < threshold) {
      m = (unsigned __int128)ptdp_rng_next(r) * n;
      lo = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

/* Fisher-Yates with the swap partners drawn AHEAD steps early: the draws do not depend on the
 * array, so drawing them first leaves the sequence (and the permutation) unchanged, and lets
 * the AHEAD random cache lines be fetched at once instead of one miss after another (on an
 * array larger than the caches this is most of the time of a shuffle). */
#define SHUFFLE_AHEAD 16
#define FISHER_YATES(T, r, a, n)                                          \
  do {                                                                    \
    int64_t j_[SHUFFLE_AHEAD];                                            \
    for (int64_t i_ = (n) - 1; i_ > 0;) {                                 \
      int k_ = i_ < SHUFFLE_AHEAD ? (int)i_ : SHUFFLE_AHEAD;              \
      for (int t_ = 0; t_ < k_; t_++) {                                   \
        j_[t_] = (int64_t)ptdp_rng_below(r, (uint64_t)(i_ - t_) + 1);     \
        __builtin_prefetch(&(a)[j_[t_]], 1);                              \
      }                                                                   \
      for (int t_ = 0; t_ < k_; t_++, i_--) {                             \
        T x_ = (a)[i_];                                                   \
        (a)[i_] = (a)[j_[t_]];                                            \
        (a)[j_[t_]] = x_;                                                 \
      }                                                                   \
    }                                                                     \
  } while (0)

void ptdp_shuffle_i32(ptdp_rng *r, int32_t *a, int64_t n) { FISHER_YATES(int32_t, r, a, n); }

void ptdp_shuffle_i64(ptdp_rng *r, int64_t *a, int64_t n) { FISHER_YATES(int64_t, r, a, n); }

/* One weight of a split string: Megatron takes each run of [.0-9]+ and calls float() on it, so
 * a weight is digits with at most one '.', and at least one digit.  The run is checked by hand
 * and only then given to strtod, which therefore never sees an exponent, a hex prefix, "inf"
 * or "nan"; a run of hundreds of digits can still round to infinity, which the caller refuses.
 * Returns the characters used, 0 if the run is not a number. */
static size_t split_weight(const char *p, double *w)
{
  size_t n = 0, digits = 0, dots = 0;
  for (; isdigit((unsigned char)p[n]) || p[n] == '.'; n++) {
    if (p[n] == '.') dots++;
    else digits++;
  }
  if (digits == 0 || dots > 1) return 0;
  char buf[512];
  if (n >= sizeof buf) {
    *w = HUGE_VAL; /* more than 500 digits: beyond any double */
    return n;
  }
  memcpy(buf, p, n);
  buf[n] = '\0';
  *w = strtod(buf, NULL);
  return n;
}

int ptdp_split_bounds(const char *split, int64_t n, int64_t bounds[4], char *err, int errlen)
{
  /* Megatron (parse_and_normalize_split) reads re.findall(r"[.0-9]+"), any other character
   * separating; we accept only ',', '/' and ' ' between weights (its documented forms "969,30,1"
   * and "98/2/0"), so a typo is an error rather than two weights */
  double w[3] = {0, 0, 0}, sum = 0;
  int k = 0;
  const char *p = split;
  while (*p) {
    if (*p == ',' || *p == ' ' || *p == '/') {
      p++;
      continue;
    }
    if (!(isdigit((unsigned char)*p) || *p == '.')) {
      snprintf(err, (size_t)errlen, "split '%.64s': unexpected character '%c' (expected weights like 969,30,1)",
               split, isprint((unsigned char)*p) ? *p : '?');
      return -1;
    }
    double v;
    size_t used = split_weight(p, &v);
    if (used == 0) {
      snprintf(err, (size_t)errlen, "split '%.64s': '%.*s' is not a number", split, (int)strspn(p, ".0123456789"), p);
      return -1;
    }
    if (k == 3) {
      snprintf(err, (size_t)errlen, "split '%.64s': expected at most 3 non-negative numbers", split);
      return -1;
    }
    if (!isfinite(v)) {
      snprintf(err, (size_t)errlen, "split '%.64s': weight %d is too large to be a finite number", split, k + 1);
      return -1;
    }
    w[k++] = v;
    sum += v;
    p += used;
  }
  if (k == 0 || !(sum > 0) || !isfinite(sum)) {
    snprintf(err, (size_t)errlen, "split '%.64s': needs at least one positive weight and a finite sum, e.g. 969,30,1",
             split);
    return -1;
  }
  bounds[0] = 0;
  for (int i = 0; i < 3; i++) bounds[i + 1] = bounds[i] + (int64_t)nearbyint(w[i] / sum * (double)n);
  int64_t excess = bounds[3] - n;
  for (int i = 1; i < 4; i++) bounds[i] -= excess;
  for (int i = 1; i < 4; i++)
    if (bounds[i] < bounds[i - 1] || bounds[i] < 0) bounds[i] = bounds[i - 1] > 0 ? bounds[i - 1] : 0;
  return 0;
}

int ptdp_gpt_plan_make(ptdp_gpt_plan *p, int64_t tokens_per_epoch, int64_t num_samples, int seq_length)
{
  p->tokens_per_epoch = tokens_per_epoch;
  p->num_epochs = 1;
  p->separate_final_epoch = 0;
  if (tokens_per_epoch <= 1) return num_samples > 0 ? -1 : (p->total_samples = 0, p->num_samples_sans_final = 0, 0);
  /* the +1: a sample needs one token beyond its s (the label of its last position).  E is the
   * least number of epochs with E T >= need, by division: counting up one epoch at a time took
   * need / T steps, years for a hostile num_samples */
  int64_t need, have;
  if (ptdp_mul_i64(num_samples, seq_length, &need) || ptdp_add_i64(need, 1, &need)) return -2;
  p->num_epochs = need <= tokens_per_epoch ? 1 : (need - 1) / tokens_per_epoch + 1;
  if (ptdp_mul_i64(p->num_epochs, tokens_per_epoch, &have)) return -2;
  p->total_samples = (have - 1) / seq_length;
  p->num_samples_sans_final = p->total_samples;
  if (p->num_epochs > 1) {
    int64_t sans = ((p->num_epochs - 1) * tokens_per_epoch - 1) / seq_length;
    int64_t from_final = num_samples - sans, per_epoch = (tokens_per_epoch - 1) / seq_length;
    /* Megatron: shuffle the last epoch apart when it supplies under 80% of an epoch's samples */
    p->separate_final_epoch = from_final < (int64_t)(0.80 * (double)per_epoch);
    if (p->separate_final_epoch) p->num_samples_sans_final = sans;
  }
  return 0;
}

static void doc_block(int32_t *out, int64_t begin, int64_t end, int64_t epochs, ptdp_rng *r)
{
  int64_t nd = end - begin;
  for (int64_t e = 0; e < epochs; e++)
    for (int64_t d = 0; d < nd; d++) out[e * nd + d] = (int32_t)(begin + d);
  ptdp_shuffle_i32(r, out, epochs * nd);
}

void ptdp_gpt_doc_index(int32_t *doc_index, int64_t begin, int64_t end, const ptdp_gpt_plan *p, ptdp_rng *r)
{
  if (!p->separate_final_epoch) {
    doc_block(doc_index, begin, end, p->num_epochs, r);
    return;
  }
  doc_block(doc_index, begin, end, p->num_epochs - 1, r);
  doc_block(doc_index + (p->num_epochs - 1) * (end - begin), begin, end, 1, r);
}

int64_t ptdp_gpt_sample_index(int32_t *sample_index, const int32_t *doc_index, int64_t n_doc_index,
                              const int32_t *lengths, int64_t begin, const ptdp_gpt_plan *p, int seq_length)
{
  /* Sample i >= 1 starts at stream token i s, in the non-empty document that holds it (sample 0
   * at (0, 0) whatever document 0 is): walk doc_index once, keeping c, the stream position where
   * the document at pos starts, and hand out every sample start before its end.  The lengths
   * are read in shuffled order, one cache miss per document: fetched PREFETCH documents ahead. */
  enum { PREFETCH = 16 };
  const int64_t total = p->total_samples, s = seq_length;
  int64_t i = 1, next = s, c = 0, steps = 0;
  sample_index[0] = 0;
  sample_index[1] = 0;
  for (int64_t pos = 0; i <= total && pos < n_doc_index; pos++, steps++) {
    if (pos + PREFETCH < n_doc_index) __builtin_prefetch(&lengths[doc_index[pos + PREFETCH] - begin]);
    const int64_t end = c + lengths[doc_index[pos] - begin];
    for (; next < end && i <= total; i++, next += s, steps++) {
      sample_index[2 * i] = (int32_t)pos;
      sample_index[2 * i + 1] = (int32_t)(next - c);
    }
    c = end;
  }
  return steps;
}

void ptdp_gpt_shuffle_index(int64_t *shuffle, const ptdp_gpt_plan *p, ptdp_rng *r)
{
  int64_t n = p->num_samples_sans_final, total = p->total_samples;
  for (int64_t i = 0; i < total; i++) shuffle[i] = i;
  ptdp_shuffle_i64(r, shuffle, n);
  if (total > n) ptdp_shuffle_i64(r, shuffle + n, total - n);
}

void ptdp_blend_index(int32_t *source, int64_t *source_sample, int64_t size, const double *weights, int n,
                      int64_t *count)
{
  for (int k = 0; k < n; k++) count[k] = 0;
  for (int64_t i = 0; i < size; i++) {
    double step = i > 1 ? (double)i : 1.0;
    int best = 0;
    double best_err = weights[0] * step - (double)count[0];
    for (int k = 1; k < n; k++) {
      double e = weights[k] * step - (double)count[k];
      if (e > best_err) best_err = e, best = k;
    }
    source[i] = best;
    source_sample[i] = count[best]++;
  }
}
