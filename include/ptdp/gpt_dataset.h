/* GPT training data as Megatron's GPTDataset and BlendedDataset: samples of seq_length+1
 * tokens drawn from one or more indexed datasets (PREFIX.bin/.idx), split into train, valid
 * and test by documents, shuffled by seed, blended by weight.
 *
 *   data_path   "PREFIX" or "w1 PREFIX1 w2 PREFIX2 ..." (weights normalised to sum 1)
 *   split       "969,30,1": each dataset's documents (= its sequences, Megatron's meaning)
 *               are cut into train/valid/test by these weights, Megatron's rounding
 *   cache_path  directory for the index files; NULL or "" = PREFIX's directory/cache/GPTDataset_indices
 *   seq_length  s; each sample is s+1 tokens (inputs are tokens[0..s), labels tokens[1..s])
 *   seed        shuffles documents and samples (our own xoshiro256** generator: identical on every
 *               rank and run, but not numpy's sequence)
 *   num_samples samples wanted per split; a split asked for 0 samples is not built
 *
 * World rank 0 of comm builds every index array and writes it, under a name that hashes all
 * the parameters that shape it, to cache_path; the other ranks read it after rank 0 reports
 * success.  A later run with the same parameters reads the files instead of building.
 * cache_path must be visible to all ranks (a shared file system when ranks span nodes). */
#ifndef PTDP_GPT_DATASET_H
#define PTDP_GPT_DATASET_H

#include <mpi.h>
#include <stdint.h>

typedef struct {
  const char *data_path;    /* "prefix" or "w1 prefix1 w2 prefix2 ..." */
  const char *split;        /* "969,30,1" */
  const char *cache_path;   /* NULL = default */
  int seq_length;
  unsigned long long seed;
  long long num_samples[3]; /* train, valid, test samples needed (Megatron's counts) */
} ptdp_data_args;

typedef struct ptdp_data ptdp_data;

enum { PTDP_SPLIT_TRAIN = 0, PTDP_SPLIT_VALID = 1, PTDP_SPLIT_TEST = 2 };

/* Collective over comm.  Errors are reported by rank 0 and returned on every rank. */
int ptdp_data_open(ptdp_data **d, const ptdp_data_args *a, MPI_Comm comm);
/* Samples available in a split (>= the number asked for; 0 if the split was not built or is
 * empty).  For one dataset this is Megatron's len(GPTDataset), for a blend the number asked. */
long long ptdp_data_num_samples(const ptdp_data *d, int split);
/* seq_length+1 tokens of sample index (taken modulo the split's count). */
int ptdp_data_get_sample(const ptdp_data *d, int split, long long index, int32_t *tokens);
/* Largest token id + 1 over the data (every dataset's .bin scanned once at open), or -1. */
int ptdp_data_vocab_hint(const ptdp_data *d);
/* Which dataset of data_path supplies sample index of split (0 for a single prefix). */
int ptdp_data_sample_source(const ptdp_data *d, int split, long long index);
int ptdp_data_num_datasets(const ptdp_data *d);
void ptdp_data_destroy(ptdp_data **d);

#endif
