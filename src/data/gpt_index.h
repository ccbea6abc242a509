/* Private to src/data: the pure index builders of Megatron's GPTDataset and
 * BlendedDataset, on plain arrays, so tests can pin them down.
 *
 * Terms (Megatron's): a "document" here is one sequence of the indexed dataset; a split owns
 * documents [begin, end).  Tokens per epoch T = sum of their lengths; s = seq_length.  Each
 * sample is s+1 tokens and the next sample starts on the last token of this one, so sample i
 * covers stream tokens [i*s, i*s + s] of the documents laid end to end in doc_index order. */
#ifndef PTDP_DATA_GPT_INDEX_H
#define PTDP_DATA_GPT_INDEX_H

#include <stdint.h>

/* xoshiro256** seeded by splitmix64(seed): our own generator, so the index arrays are the
 * same on every rank, platform and run (they do not match numpy's shuffle).  draws counts the
 * numbers drawn since seeding: the work of the shuffles, which tests bound. */
typedef struct {
  uint64_t s[4];
  uint64_t draws;
} ptdp_rng;

void ptdp_rng_seed(ptdp_rng *r, uint64_t seed);
uint64_t ptdp_rng_next(ptdp_rng *r);
/* Uniform in [0, n), n >= 1, without modulo bias (Lemire's multiply-and-reject). */
uint64_t ptdp_rng_below(ptdp_rng *r, uint64_t n);
/* Fisher-Yates, i from n-1 down to 1: swap a[i] with a[below(i+1)]: n-1 draws (more only when
 * below rejects, with probability under n/2^64 per draw), O(n) time, no extra memory. */
void ptdp_shuffle_i32(ptdp_rng *r, int32_t *a, int64_t n);
void ptdp_shuffle_i64(ptdp_rng *r, int64_t *a, int64_t n);

/* Megatron's split: "969,30,1" (missing weights are 0) normalised to sum 1; boundaries
 * b[0]=0, b[i+1] = b[i] + round(w[i]*n) (half to even), then all shifted so b[3] = n.
 * Returns 0, or -1 for a malformed string (err filled). */
int ptdp_split_bounds(const char *split, int64_t n, int64_t bounds[4], char *err, int errlen);

/* How the epochs are laid out for num_samples samples (Megatron's _get_num_epochs and its
 * 80% rule): E epochs, and whether the last one is shuffled separately. */
typedef struct {
  int64_t tokens_per_epoch, num_epochs, num_samples_sans_final, total_samples;
  int separate_final_epoch;
} ptdp_gpt_plan;

/* Returns 0, -1 if the split cannot supply a sample (T <= 1) although num_samples > 0, or -2 if
 * num_samples s or the tokens of E epochs overflow 64 bits. */
int ptdp_gpt_plan_make(ptdp_gpt_plan *p, int64_t tokens_per_epoch, int64_t num_samples, int seq_length);

/* doc_index (E * ndocs entries): documents begin..end-1 repeated per epoch, shuffled as one
 * block, or (separate final epoch) the first E-1 epochs and the last one shuffled apart. */
void ptdp_gpt_doc_index(int32_t *doc_index, int64_t begin, int64_t end, const ptdp_gpt_plan *p, ptdp_rng *r);

/* sample_index: 2*(total_samples+1) int32 entries (n_doc_index < 2^31 and the documents' int32
 * lengths bound both), pairs (position in doc_index, token offset), the
 * start of each sample; sample i ends (inclusive) where sample i+1 starts.  lengths[d - begin]
 * is the token count of document d of the split [begin, end); doc_index has n_doc_index
 * entries (E epochs of the split, enough tokens for the plan).  One pass over doc_index:
 * returns the steps taken (documents entered plus samples placed), at most
 * n_doc_index + total_samples, which tests check to catch a superlinear rewrite. */
int64_t ptdp_gpt_sample_index(int32_t *sample_index, const int32_t *doc_index, int64_t n_doc_index,
                              const int32_t *lengths, int64_t begin, const ptdp_gpt_plan *p, int seq_length);

/* shuffle (total_samples entries): 0..n-1 shuffled, where n = num_samples_sans_final with a
 * separate final epoch (the rest shuffled after it), else total_samples. */
void ptdp_gpt_shuffle_index(int64_t *shuffle, const ptdp_gpt_plan *p, ptdp_rng *r);

/* Megatron's blending: for step i choose the dataset k maximising w[k]*max(i,1) - count[k]
 * (first on ties); source[i] = k, source_sample[i] = count[k]++.  count: n scratch entries. */
void ptdp_blend_index(int32_t *source, int64_t *source_sample, int64_t size, const double *weights, int n,
                      int64_t *count);

#endif
