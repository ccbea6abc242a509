/* Private to src/data: the tokenizer's tables and state, shared by tokenizer.c (loading)
 * and tokenizer_encode.c (pre-tokenising, BPE, decoding). */
#ifndef PTDP_DATA_TOKENIZER_IMPL_H
#define PTDP_DATA_TOKENIZER_IMPL_H

#include "ptdp/regex.h"
#include "ptdp/strmap.h"
#include "ptdp/tokenizer.h"

#include <stddef.h>
#include <stdint.h>

/* Default bound on the bytes one tokenizer's word cache holds (table, key pool and ids). */
#define CACHE_LIMIT_BYTES ((size_t)64 << 20)

typedef struct {
  uint64_t key; /* (id_a << 32 | id_b) + 1, so 0 marks an empty slot */
  int32_t rank, merged;
} merge_slot;

/* A token of tokenizer.json's added_tokens, matched in the text before anything else. */
typedef struct {
  char *content;
  size_t len;
  int32_t id;
  int lstrip, rstrip, single_word;
} hf_added;

/* One pre-tokenizer step of tokenizer.json (in the order of its Sequence). */
typedef enum {
  HF_SPLIT_REGEX, /* Split with a Regex (or String) pattern, behavior Isolated or Removed */
  HF_SPLIT_GPT2,  /* GPT-2's pattern: ByteLevel with use_regex, or a Split naming that pattern */
  HF_BYTE_LEVEL,  /* ByteLevel without its regex: only add_prefix_space */
  HF_METASPACE    /* Metaspace: spaces to U+2581, a prefix, and a split before each U+2581 */
} hf_step_kind;

typedef struct {
  hf_step_kind kind;
  ptdp_regex *re;      /* HF_SPLIT_REGEX */
  int removed;         /* HF_SPLIT_*: behavior Removed (the matches are dropped) */
  int prefix_space;    /* HF_BYTE_LEVEL, HF_SPLIT_GPT2 from ByteLevel: add_prefix_space */
  int prepend;         /* HF_METASPACE: 0 never, 1 first piece only, 2 always */
  int split;           /* HF_METASPACE: split before each replacement character */
} hf_step;

/* What tokenizer.json adds to the tables (is_hf). */
typedef struct {
  int byte_level;       /* 1: byte-level BPE (ByteLevel pre-tokenizer); 0: SentencePiece-style */
  int ignore_merges;    /* a piece that is a token is that token (Llama 3) */
  int byte_fallback, fuse_unk;
  int32_t unk;          /* -1: none */
  int32_t byte_fb[256]; /* <0xNN> tokens; -1 none */
  ptdp_strmap vocab;    /* token bytes -> id */
  int nfc;              /* NFC normalizer (Qwen): applied before Prepend and Replace */
  char *prepend;        /* Prepend normalizer (NULL: none) */
  size_t prepend_len;
  char *repl_from, *repl_to; /* one Replace normalizer of a String pattern (NULL: none) */
  size_t repl_from_len, repl_to_len;
  hf_step *steps;
  size_t nsteps;
  hf_added *added;
  size_t nadded;
  uint64_t added_first[4]; /* bit b: some added token starts with byte b */
  int strip_space;         /* decoding removes one leading space (Metaspace, Strip) */
  int sp_cut;              /* SentencePiece-style: no token has U+2581 after another character, so
                              BPE never merges across the start of a run of U+2581 and the text is
                              cut there into pieces the word cache can hold */
  int32_t bos;             /* post-processor's leading special token, -1 none */
} hf_tables;

typedef struct bpe_tables {
  int refs;
  int is_bytes;
  int is_hf;
  hf_tables *hf;
  int32_t vocab_size, eod;
  char *tok_bytes;
  size_t *tok_off;
  int32_t *tok_len;
  int32_t byte_id[256];
  merge_slot *merges;
  size_t merge_cap; /* power of two */
  int32_t merge_count;
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
  ptdp_regex_work rx; /* tokenizer.json: the split patterns' backtracking stack */
  void *hf_scratch;   /* tokenizer.json: BPE symbols and heap, normalised text (tokenizer_hf_encode.c) */
};

/* Look up the merge of the adjacent pair (a, b); NULL if none. */
const merge_slot *ptdp_bpe_merge_find(const bpe_tables *t, int32_t a, int32_t b);
/* Room for n merges; add one (rank: merges added before it; a repeated pair keeps its rank). */
int ptdp_bpe_merges_alloc(bpe_tables *t, size_t n);
int ptdp_bpe_merge_add(bpe_tables *t, int32_t a, int32_t b, int32_t merged);

/* tokenizer.c's helpers, shared with tokenizer_hf.c. */
void ptdp_bpe_byte_alphabet(uint32_t byte_to_cp[256], int cp_to_byte[512]);
/* Map a token written in GPT-2's byte alphabet back to bytes (out: len bytes); -1 if it is not. */
long ptdp_bpe_unalphabet(const int cp_to_byte[512], const char *s, size_t len, char *out);
/* A tokenizer file (what: "vocabulary file", ...) whole: a regular file of at most
 * PTDP_TOKENIZER_FILE_MAX bytes (ptdp/textfile.h), else an error naming it. */
int ptdp_bpe_read_file(const char *path, const char *what, char **data, size_t *len);
/* One member of a vocabulary object {"token": id}: val[0..val_len) (its JSON text) as an id in
 * [0, 2^30) for the token's bytes raw[0..nb), put into vocab, *max_id raised to it.  Returns 0, or
 * 2 (the JSON walker's stop) with the reason in bad: about token key, after where ("model.vocab: "). */
int ptdp_bpe_vocab_put(ptdp_strmap *vocab, const char *raw, size_t nb, const char *val, size_t val_len,
                       int32_t *max_id, const char *where, const char *key, char *bad, size_t bad_size);
int ptdp_bpe_tokenizer_new(ptdp_tokenizer **tok, bpe_tables *t);
void ptdp_bpe_tables_free(bpe_tables *t);
const char *ptdp_bpe_token_text(const char *raw, size_t len, char out[200]);
/* id -> bytes tables from v (token bytes -> id), refusing duplicated ids, and missing ids
 * unless allow_holes (an id without a token then decodes as nothing). */
int ptdp_bpe_fill_id_tables(bpe_tables *t, const char *file, const ptdp_strmap *v, int32_t max_id, int allow_holes);

/* tokenizer_encode.c: GPT-2's pattern (the end of the piece starting at s[i]) and the cached
 * encoding of one piece. */
size_t ptdp_gpt2_piece_end(const unsigned char *s, size_t n, size_t i);
int ptdp_tokenizer_encode_piece(ptdp_tokenizer *tok, const unsigned char *p, size_t len, ptdp_token_buf *out);

/* tokenizer_hf.c / tokenizer_hf_encode.c */
void ptdp_hf_tables_free(hf_tables *hf);
int ptdp_hf_round_trips(const hf_tables *hf);
int ptdp_hf_encode_append(ptdp_tokenizer *tok, const unsigned char *s, size_t n, ptdp_token_buf *out);
/* BPE of one piece (no cache): ignore_merges, the first symbols (bytes, or characters with
 * byte fallback), then merges by rank with a heap (Hugging Face's order). */
int ptdp_hf_bpe_piece(ptdp_tokenizer *tok, const unsigned char *p, size_t len, ptdp_token_buf *out);
void ptdp_hf_scratch_free(ptdp_tokenizer *tok);

#endif
