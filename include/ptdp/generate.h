/* Text generation: an inference forward pass with a key/value cache over a model's parameters,
 * and token sampling (temperature, top-k, top-p) as Megatron-LM's text generation does it.
 *
 * The generator reads the parameters of a ptdp_gpt built with p = 1 (one pipeline stage, one
 * chunk) over t tensor-parallel ranks, whatever t the weights were trained or saved with, and
 * runs its own forward pass: the training forward's operations and TP reductions (column-parallel
 * QKV and fc1, row-parallel proj and fc2 followed by an all-reduce, vocab-parallel embedding and
 * output layer), no dropout, and attention against a cache of every earlier position's keys and
 * values, K and V [cap, hl] per layer on each rank (hl = h / t: the rank's heads).
 *
 *   prefill   the prompt's n tokens in one pass (the backend's causal attention over n positions);
 *   decode    one new token per step: its query against the cached keys 0..len (S = q K^T / sqrt(hd),
 *             P = softmax(S), ctx = P V, one product per local head), so a step costs O(len) in
 *             attention instead of the O(len^2) of running the whole sequence again.
 *
 * The logits of the real vocabulary are gathered across the TP ranks (padding rows excluded), so
 * every rank holds the same [vocab] row and samples the same token from it: sampling is a pure
 * function of (logits, seed, step), never of the rank.  Device memory is touched only through
 * the backend's operations and the communication layer (ptdp/backend.h, ptdp/comm.h). */
#ifndef PTDP_GENERATE_H
#define PTDP_GENERATE_H

#include "ptdp/gpt.h"

#include <stdint.h>

/* ---------------------------------------------------------------- sampling (sample.c) */

/* Megatron's sampling settings.  Greedy (argmax) when top_k == 1 or temperature == 0; otherwise
 * logits / temperature, then top-k (keep the k largest, ties with the k-th included) or top-p
 * (keep the most probable tokens up to and including the first whose cumulative probability
 * exceeds p), then a draw from the softmax of what is kept.  top_k and top_p exclude each other;
 * both 0 samples from the whole distribution. */
typedef struct {
  double temperature; /* >= 0; 0 means greedy */
  long long top_k;    /* 0: off; 1: greedy */
  double top_p;       /* 0: off; else in (0, 1] */
  uint64_t seed;      /* the draw of step i is keyed by (seed, i) */
} ptdp_sampling;

/* Refuse settings Megatron refuses (top-k with top-p, top-p with greedy, top-k beyond the
 * vocabulary, ...) with a message naming the keys; vocab <= 0 skips the vocabulary check. */
int ptdp_sampling_check(const ptdp_sampling *s, long long vocab);
int ptdp_sampling_is_greedy(const ptdp_sampling *s);
/* The token of generation step `step` from host logits [vocab] (the real vocabulary).  Pure: the
 * same logits, settings and step give the same token on every rank.  Non-finite logits are an
 * error. */
int ptdp_sample(const ptdp_sampling *s, long long step, const float *logits, int vocab, int32_t *token);

/* ---------------------------------------------------------------- inference (generate.c, infer.c) */

/* Rows of logits gathered across TP per round (bounds the gather buffers [t, R, vl]). */
#define PTDP_GENERATE_LOGIT_ROWS 8

typedef struct {
  ptdp_gpt *m;   /* the parameters (p = 1, one chunk); not owned */
  int cap;       /* positions the cache holds (<= max-position-embeddings) */
  int len;       /* positions cached so far */
  float **kc, **vc; /* per layer: cached keys and values [cap, hl], row = position, [al][hd] within */
  /* work space for up to cap token rows */
  float *x, *x2, *y;          /* [cap, h] residual stream, attention block output, partial sums */
  float *ln, *mean, *rstd;    /* [cap, h], [cap], [cap] LayerNorm output and statistics */
  float *qkv, *ctx;           /* [cap, 3 hl], [cap, hl] */
  float *fc, *act;            /* [cap, fl] fc1 output, GELU output */
  float *probs;               /* [al, n, n] prefill attention probabilities (grown on demand) */
  long long probs_elems;
  float *scores, *stats;      /* [al, cap] decode scores, then probabilities; [3 al] softmax statistics */
  int32_t *tokens, *positions, *notarget; /* [cap] token ids, [cap] 0..cap-1, [al] -1 */
  float *logits, *gathered;   /* [R, vl] local logits of R rows, [t, R, vl] gathered */
  float *host;                /* host copy of gathered */
  double device_bytes;        /* allocated through the backend */
} ptdp_generator;

/* A generator of `capacity` positions over m's parameters.  Collective over m's TP group. */
int ptdp_generator_create(ptdp_generator *g, ptdp_gpt *m, int capacity);
void ptdp_generator_destroy(ptdp_generator *g);
/* Empty the cache (the next forward starts at position 0). */
void ptdp_generator_reset(ptdp_generator *g);
/* Run tokens[0 .. n) (host) at positions len .. len + n - 1, appending their keys and values to
 * the cache.  An empty cache takes the n tokens in one pass; otherwise they go one at a time.
 * logits (host, may be NULL) receives the real vocabulary's logits: [n, vocab] with all_rows,
 * else [vocab] of the last token.  Collective over the TP group. */
int ptdp_generator_forward(ptdp_generator *g, const int32_t *tokens, int n, int all_rows, float *logits);

typedef struct {
  double prefill_seconds; /* the prompt's pass and the first token */
  double decode_seconds;  /* every later token */
  int generated;          /* tokens written to out */
  int stopped;            /* 1 when the end of document was drawn */
} ptdp_generate_stats;

/* Generate up to max_new tokens after prompt[0 .. np) into out: step i draws with ptdp_sample(s,
 * i, ...).  Drawing eod (>= 0) ends generation; the eod is not stored.  kv_cache 0 runs the whole
 * sequence again at every step (the reference the cache is tested against).  np + max_new must
 * not exceed g->cap + 1.  Collective over the TP group; every rank gets the same tokens. */
int ptdp_generate(ptdp_generator *g, const ptdp_sampling *s, const int32_t *prompt, int np, int max_new, int32_t eod,
                  int kv_cache, int32_t *out, ptdp_generate_stats *st);

#endif
