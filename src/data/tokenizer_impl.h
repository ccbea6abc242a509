/* Private to src/data: the tokenizer's tables and state, shared by tokenizer.c (loading)
 * and tokenizer_encode.c (pre-tokenising, BPE, decoding). */
#ifndef PTDP_DATA_TOKENIZER_IMPL_H
#define PTDP_DATA_TOKENIZER_IMPL_H

#include "ptdp/tokenizer.h"
#include "strmap.h"

#include <stddef.h>
#include <stdint.h>

/* Default bound on the bytes one tokenizer's word cache holds (table, key pool and ids). */
#define CACHE_LIMIT_BYTES ((size_t)64 << 20)

typedef struct {
  uint64_t key; /* (id_a << 32 | id_b) + 1, so 0 marks an empty slot */
  int32_t rank, merged;
} merge_slot;

typedef struct bpe_tables {
  int refs;
  int is_bytes;
  int32_t vocab_size, eod;
  char *tok_bytes;
  size_t *tok_off;
  int32_t *tok_len;
  int32_t byte_id[256];
  merge_slot *merges;
  size_t merge_cap; /* power of two */
} bpe_tables;

struct ptdp_tokenizer {
  bpe_tables *t;
  ptdp_strmap cache;  /* piece -> offset into cache_ids */
  int32_t *cache_ids; /* at each offset: count, then the ids */
  size_t cache_n, cache_cap;
  size_t cache_limit;             /* bytes; see ptdp_tokenizer_set_cache_limit */
  ptdp_tokenizer_cache_stats stats;
  int32_t *work;      /* BPE scratch: ids of the piece being merged */
  size_t work_cap;
};

/* Look up the merge of the adjacent pair (a, b); NULL if none. */
const merge_slot *ptdp_bpe_merge_find(const bpe_tables *t, int32_t a, int32_t b);

#endif
