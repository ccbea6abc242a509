/* Counter-based random numbers keyed by global indices, never by rank (STYLE: proxy apps).
 *
 * A value is a pure function of (seed, site, layer, sample, row, col): every layout computes
 * the same dropout masks and the same initial weights.  The mixer is SplitMix64's finaliser,
 * applied once per key field; a row's fields are mixed once and each column costs one mix. */
#ifndef PTDP_RNG_H
#define PTDP_RNG_H

#include <stdint.h>

/* What a random stream is for (part of the key). */
enum {
  PTDP_RNG_INIT = 1,       /* weight initialisation: layer = tensor id */
  PTDP_RNG_EMBED_DROP = 2, /* dropout after the embedding */
  PTDP_RNG_ATTN_DROP = 3,  /* dropout on attention probabilities */
  PTDP_RNG_ATTN_RESID = 4, /* dropout on the attention block's output */
  PTDP_RNG_MLP_RESID = 5,  /* dropout on the MLP block's output */
  PTDP_RNG_MOCK_DATA = 6   /* mock-data tokens */
};

uint64_t ptdp_rng_mix(uint64_t z);
/* Hash of a row of a stream: (seed, site, layer, sample, row). */
uint64_t ptdp_rng_row(uint64_t seed, uint32_t site, uint32_t layer, uint64_t sample, uint64_t row);
/* Element col of a row stream. */
uint64_t ptdp_rng_at(uint64_t row_hash, uint64_t col);
/* Uniform in [0, 1) with 24 bits, and a standard normal (Box-Muller on the two halves). */
float ptdp_rng_uniform(uint64_t h);
double ptdp_rng_normal(uint64_t h);

#endif
