/* Tokenizers: GPT-2 byte-level BPE (Megatron's GPT2BPETokenizer), a file-free byte-level
 * tokenizer (ByteLevel), and Hugging Face tokenizer.json BPE files (HuggingFaceTokenizer).
 *
 * GPT2BPETokenizer reads Megatron's --vocab-file (encoder.json: token -> id, tokens written in
 * GPT-2's byte-to-unicode alphabet) and --merge-file (vocab.bpe: "#version" line, then one
 * merge "a b" per line, in rank order).  Text is split by GPT-2's pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * with \p{L}, \p{N} the Unicode general categories and \s the White_Space property (tables
 * generated from Python's unicodedata); each piece is BPE-merged by rank.  A byte that is not
 * part of well-formed UTF-8 counts as one "other" character, so any byte string encodes and
 * decode(encode(x)) == x.  "<|endoftext|>" (id 50256) is the end of document; text that spells
 * it is encoded as ordinary text, as Megatron and GPT-2 do.
 *
 * ByteLevel: ids 0..255 are the bytes, 256 is the end of document (decoded as nothing);
 * vocabulary 257.
 *
 * HuggingFaceTokenizer reads Megatron's --tokenizer-model, a tokenizer.json (or a directory
 * holding one) of a BPE model, as Hugging Face's tokenizers library encodes without special
 * tokens (add_special_tokens=False): byte-level files (a ByteLevel pre-tokenizer, perhaps after
 * Split patterns, an NFC normalizer: GPT-2, Llama 3, Qwen, cl100k / o200k) and SentencePiece-style files
 * (Prepend / Replace normalizer or Metaspace, byte fallback: Llama 2, Mistral).  Added tokens
 * found in the text become their ids (as Hugging Face does, unlike GPT2BPETokenizer).  The
 * vocabulary is the model's tokens and the added ones; the end of document is the eos_token of
 * a tokenizer_config.json beside the file, else the first of <|end_of_text|>, <|endoftext|>,
 * </s>, <eos> that the file has, else none (-1).  See tokenizer_hf.c for what is refused.
 *
 * Threads: encoding updates a word cache, so one tokenizer serves one thread at a time;
 * ptdp_tokenizer_clone gives another thread its own cache over the same (read-only) tables.
 * Create, clone and destroy from one thread. */
#ifndef PTDP_TOKENIZER_H
#define PTDP_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

typedef struct ptdp_tokenizer ptdp_tokenizer;

/* Megatron's --tokenizer-type, in the order of the key's choices "GPT2BPETokenizer|ByteLevel|HuggingFaceTokenizer". */
typedef enum {
  PTDP_TOKENIZER_GPT2BPE = 0,
  PTDP_TOKENIZER_BYTE_LEVEL = 1,
  PTDP_TOKENIZER_HUGGING_FACE = 2
} ptdp_tokenizer_type;

/* A growable array of token ids that encoders append to. */
typedef struct {
  int32_t *ids;
  size_t n, cap;
} ptdp_token_buf;

int ptdp_tokenizer_create_gpt2(ptdp_tokenizer **tok, const char *vocab_file, const char *merge_file);
int ptdp_tokenizer_create_bytes(ptdp_tokenizer **tok);
/* path: a tokenizer.json, or a directory holding tokenizer.json (and tokenizer_config.json). */
int ptdp_tokenizer_create_hf(ptdp_tokenizer **tok, const char *path);
/* By Megatron's --tokenizer-type name: "GPT2BPETokenizer" (needs vocab_file and merge_file),
 * "ByteLevel", or "HuggingFaceTokenizer" (needs model_file). */
int ptdp_tokenizer_create(ptdp_tokenizer **tok, const char *type, const char *vocab_file,
                          const char *merge_file, const char *model_file);
/* A tokenizer sharing tok's tables with a cache of its own (for another thread). */
int ptdp_tokenizer_clone(const ptdp_tokenizer *tok, ptdp_tokenizer **copy);
void ptdp_tokenizer_destroy(ptdp_tokenizer **tok);

/* Append the ids of bytes[0..n) to out (no end of document is added). */
int ptdp_tokenizer_encode_append(ptdp_tokenizer *tok, const char *bytes, size_t n, ptdp_token_buf *out);
/* Encode into a new malloc'd array (*ids NULL when *nids == 0); the caller frees it. */
int ptdp_tokenizer_encode(ptdp_tokenizer *tok, const char *bytes, size_t n, int32_t **ids, size_t *nids);
/* Decode into a new malloc'd, NUL-terminated buffer of *nbytes bytes; ids must be in range. */
int ptdp_tokenizer_decode(const ptdp_tokenizer *tok, const int32_t *ids, size_t n, char **bytes,
                          size_t *nbytes);

int ptdp_tokenizer_vocab_size(const ptdp_tokenizer *tok);
/* 1 if decode(encode(x)) == x for every byte string x: GPT2BPETokenizer, ByteLevel, and a
 * byte-level tokenizer.json without NFC normalizer whose pre-tokenizer removes nothing and adds
 * no prefix space and whose added tokens take no whitespace (lstrip, rstrip).  SentencePiece-style files are lossy
 * in general (U+2581 in the text decodes as a space; a normalizer may change the text), though
 * not on ordinary text. */
int ptdp_tokenizer_round_trips(const ptdp_tokenizer *tok);
/* The end-of-document id; -1 for a tokenizer.json without one (see above). */
int32_t ptdp_tokenizer_eod(const ptdp_tokenizer *tok);
/* "GPT2BPETokenizer", "ByteLevel" or "HuggingFaceTokenizer". */
const char *ptdp_tokenizer_type_name(const ptdp_tokenizer *tok);

/* The word cache: pieces of two or more bytes and their ids.  When inserting a new piece would
 * make the cache hold more than its limit (table, key pool and ids, counted as allocated),
 * the cache is emptied, keeping its memory, and refills: memory stays bounded by the limit and
 * the cost of emptying is paid once per cache's worth of new words. */
typedef struct {
  uint64_t lookups; /* pieces of two or more bytes encoded */
  uint64_t misses;  /* of those, pieces BPE-merged because they were not cached */
  uint64_t resets;  /* times the cache was emptied */
  size_t words;     /* pieces cached now */
  size_t bytes;     /* bytes allocated now */
  size_t limit;     /* the limit in bytes */
} ptdp_tokenizer_cache_stats;

/* Default limit: 64 MiB per tokenizer (so per ptdp-preprocess worker); at least 1 MiB. */
int ptdp_tokenizer_set_cache_limit(ptdp_tokenizer *tok, size_t bytes);
void ptdp_tokenizer_get_cache_stats(const ptdp_tokenizer *tok, ptdp_tokenizer_cache_stats *stats);

int ptdp_token_buf_push(ptdp_token_buf *b, int32_t id);
void ptdp_token_buf_free(ptdp_token_buf *b);

#endif
