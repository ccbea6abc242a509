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
 * Rank 0 of comm builds every index array and writes it, under a name that hashes all the
 * parameters that shape it (the split's document lengths included), to cache_path; every rank
 * then maps the file read-only.  A later run with the same parameters maps the files instead of
 * building.  cache_path must be visible to all ranks (a shared file system across nodes).
 *
 * Open never reads the tokens (the .bin is mapped; the .idx is validated): its cost is linear
 * in the documents and the samples of the splits, not in the tokens.  Token ids are not checked
 * here against a vocabulary: the trainer checks every sample it draws (src/train/batch.c). */
#ifndef PTDP_GPT_DATASET_H
#define PTDP_GPT_DATASET_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

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
/* Which dataset of data_path supplies sample index of split (0 for a single prefix). */
int ptdp_data_sample_source(const ptdp_data *d, int split, long long index);
int ptdp_data_num_datasets(const ptdp_data *d);
void ptdp_data_destroy(ptdp_data **d);

/* What ptdp_data_open did on this rank, in seconds of wall-clock time. */
typedef struct {
  double seconds;       /* the whole of ptdp_data_open (on ranks other than 0, waiting for it included) */
  double open_seconds;  /* opening every dataset: validating its .idx, mapping its .bin */
  double build_seconds; /* building index arrays (rank 0, cache misses) */
  double write_seconds; /* writing them to the cache (rank 0, cache misses) */
  double map_seconds;   /* looking up and mapping cache files */
  int splits_built, splits_loaded; /* (dataset, split) pairs built here / found in the cache */
} ptdp_data_stats;

const ptdp_data_stats *ptdp_data_get_stats(const ptdp_data *d);
/* Collective over comm: rank 0 prints one line in Megatron's style, "> finished creating GPT
 * datasets ...", with the open time (min, max over ranks), rank 0's breakdown, and peak resident
 * memory so far (getrusage, min and max over ranks). */
int ptdp_data_report(const ptdp_data *d, MPI_Comm comm, FILE *out);

#endif
