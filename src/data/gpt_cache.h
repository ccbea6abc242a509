/* Private to src/data: the index cache file of one (dataset, split) of Megatron's GPTDataset,
 * written once by rank 0 and memory-mapped read-only by every rank, so that a warm start costs
 * a few system calls whatever the size of the arrays, and ranks on one node share the pages.
 *
 * File layout (version 2), little-endian, every array 8-byte aligned within the file:
 *   offset      size        field
 *   0           8           magic "PTDPGIDX"
 *   8           8           u64 version = 2
 *   16          8           u64 L, bytes of the description
 *   24          L           description (every parameter that shapes the arrays; compared on
 *                           load), then zero bytes up to P = 24 + L rounded up to 8
 *   P           40          i64 num_epochs, separate_final_epoch, N = n_doc_index,
 *                           M = total_samples, num_samples_sans_final
 *   P+40        4N          int32 doc_index, then zero bytes up to Q = P+40+4N rounded up to 8
 *   Q           8(M+1)      int32 sample_index: (position in doc_index, token offset) pairs
 *   Q+8(M+1)    8M          int64 shuffle
 * The file's size must be exactly Q + 8(M+1) + 8M: 16 bytes per sample, 4 per document and
 * epoch.  int32 suffices for the sample index as in Megatron: positions are below N < 2^31,
 * offsets below a document's int32 length.  Version 1 (unaligned arrays, read into
 * memory) is no longer read: such a file is rebuilt. */
#ifndef PTDP_DATA_GPT_CACHE_H
#define PTDP_DATA_GPT_CACHE_H

#include "gpt_index.h"

#include <stddef.h>
#include <stdint.h>

/* The index arrays of one (dataset, split): views into the mapped cache file. */
typedef struct {
  ptdp_gpt_plan plan;
  int64_t n_doc_index;
  const int32_t *doc_index;    /* n_doc_index document ids */
  const int32_t *sample_index; /* 2 (total_samples + 1) */
  const int64_t *shuffle;      /* total_samples */
  void *map;
  size_t map_bytes;
} ptdp_gpt_cached;

/* Write the arrays to path (through path.tmp and a rename, so a reader never sees half a file). */
int ptdp_gpt_cache_save(const char *path, const char *desc, const ptdp_gpt_plan *plan, int64_t n_doc_index,
                        const int32_t *doc_index, const int32_t *sample_index, const int64_t *shuffle);
/* Map path if it exists, is complete and its description is desc: *found = 1 and c filled.
 * A missing or mismatched file gives *found = 0 (not an error); a file that cannot be mapped
 * is an error. */
int ptdp_gpt_cache_map(ptdp_gpt_cached *c, const char *path, const char *desc, int *found);
void ptdp_gpt_cache_unmap(ptdp_gpt_cached *c);

#endif
