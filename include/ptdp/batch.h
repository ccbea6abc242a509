/* Where training samples come from, by global sample index (never by rank), so that every
 * layout sees the same batches:
 *   mock-data   sample n is a fixed function of (seed, n): an arithmetic sequence of token ids
 *               with a random start and stride (learnable, so the loss visibly falls)
 *   flat file   data-path names a file of raw token ids (flat-data-dtype uint16 or int32);
 *               sample n starts at token (n s) mod (tokens - s - 1)
 *   indexed     data-path names Megatron .bin/.idx prefixes (ptdp/gpt_dataset.h)
 * A sample is s + 1 tokens: inputs are its first s, targets its last s. */
#ifndef PTDP_BATCH_H
#define PTDP_BATCH_H

#include "ptdp/args.h"        /* ptdp_args, ptdp_flat_dtype */
#include "ptdp/gpt_dataset.h" /* PTDP_SPLIT_TRAIN, _VALID, _TEST */

#include <mpi.h>
#include <stdint.h>

typedef struct ptdp_batch_source ptdp_batch_source;

int ptdp_batch_open(ptdp_batch_source **src, const ptdp_args *a, long long vocab, MPI_Comm comm);
void ptdp_batch_close(ptdp_batch_source **src);
int ptdp_batch_has_split(const ptdp_batch_source *src, int split);
/* One sample: seq + 1 tokens. */
int ptdp_batch_sample(ptdp_batch_source *src, int split, long long index, int32_t *tokens);
/* A micro-batch of b samples starting at global sample first, as tokens and targets [s, b]
 * (row = pos b + sample), the layout of the model's activations. */
int ptdp_batch_micro(ptdp_batch_source *src, int split, long long first, int b, int s, int32_t *tokens,
                     int32_t *targets, int32_t *scratch /* s + 1 */);

#endif
