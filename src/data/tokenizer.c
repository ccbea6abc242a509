/* GPT-2 byte-level BPE and byte-level tokenizers (see include/ptdp/tokenizer.h).
 *
 * Tables (shared by clones, read-only after loading):
 *   tok_off/tok_len  id -> the token's raw bytes in tok_bytes (encoder.json keys are written
 *                    in GPT-2's byte-to-unicode alphabet; they are mapped back to bytes here,
 *                    so BPE runs on bytes and ids, never on unicode strings)
 *   byte_id[256]     id of each one-byte token
 *   merges           open-addressing table, key (id_a << 32 | id_b) -> (rank, merged id)
 * Per tokenizer: a word cache, piece bytes -> ids, cleared when it grows past a limit. */
#include "ptdp/tokenizer.h"

#include "ptdp/error.h"
#include "ptdp/json.h"
#include "ptdp/strmap.h"
#include "ptdp/textfile.h"
#include "ptdp/unicode.h"
#include "tokenizer_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- GPT-2 byte alphabet */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand
 * for themselves; the other 68 bytes, in increasing order, become U+0100, U+0101, ... */
void ptdp_bpe_byte_alphabet(uint32_t byte_to_cp[256], int cp_to_byte[512])
{
  int next = 0;
  for (int i = 0; i < 512; i++) cp_to_byte[i] = -1;
  for (int b = 0; b < 256; b++) {
    int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    byte_to_cp[b] = printable ? (uint32_t)b : (uint32_t)(256 + next++);
    cp_to_byte[byte_to_cp[b]] = b;
  }
}

/* Map a token written in the byte alphabet (UTF-8) back to raw bytes in out (>= len bytes).
 * Returns the byte count, or -1 if a character is outside the alphabet. */
long ptdp_bpe_unalphabet(const int cp_to_byte[512], const char *s, size_t len, char *out)
{
  size_t i = 0, k = 0;
  while (i < len) {
    uint32_t cp;
    i += (size_t)ptdp_utf8_decode((const unsigned char *)s + i, len - i, &cp);
    if (cp >= 512 || cp_to_byte[cp] < 0) return -1;
    out[k++] = (char)cp_to_byte[cp];
  }
  return (long)k;
}

/* ---------------------------------------------------------------- loading */

int ptdp_bpe_read_file(const char *path, const char *what, char **data, size_t *len)
{
  return ptdp_text_file_read(path, what, PTDP_TOKENIZER_FILE_MAX, data, len);
}

typedef struct {
  const char *path;
  int cp_to_byte[512];
  ptdp_strmap *vocab; /* raw token bytes -> id */
  int32_t max_id;
  char bad[256];
} vocab_ctx;

static int vocab_member(void *vp, const char *key, size_t key_len, const char *val, size_t val_len)
{
  vocab_ctx *c = vp;
  char raw[1024];
  if (key_len > sizeof raw) return snprintf(c->bad, sizeof c->bad, "a token longer than %zu bytes", sizeof raw), 2;
  long nb = ptdp_bpe_unalphabet(c->cp_to_byte, key, key_len, raw);
  if (nb <= 0)
    return snprintf(c->bad, sizeof c->bad, "token \"%.40s\" is not written in GPT-2's byte alphabet", key), 2;
  return ptdp_bpe_vocab_put(c->vocab, raw, (size_t)nb, val, val_len, &c->max_id, "", key, c->bad, sizeof c->bad);
}

int ptdp_bpe_vocab_put(ptdp_strmap *vocab, const char *raw, size_t nb, const char *val, size_t val_len,
                       int32_t *max_id, const char *where, const char *key, char *bad, size_t bad_size)
{
  char num[32];
  if (val_len == 0 || val_len >= sizeof num)
    return snprintf(bad, bad_size, "%stoken \"%.40s\" has no integer id", where, key), 2;
  memcpy(num, val, val_len);
  num[val_len] = '\0';
  char *end;
  long id = strtol(num, &end, 10);
  if (*end || id < 0 || id >= (1L << 30))
    return snprintf(bad, bad_size, "%stoken \"%.40s\" has id '%s', not an integer in [0, 2^30)", where, key, num), 2;
  int64_t old;
  if (ptdp_strmap_get(vocab, raw, nb, &old))
    return snprintf(bad, bad_size, "%stoken \"%.40s\" appears twice", where, key), 2;
  if (ptdp_strmap_put(vocab, raw, nb, id)) return snprintf(bad, bad_size, "out of memory"), 2;
  if (id > *max_id) *max_id = (int32_t)id;
  return 0;
}

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }
static size_t pair_hash(uint64_t key) { return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17); }

const merge_slot *ptdp_bpe_merge_find(const bpe_tables *t, int32_t a, int32_t b)
{
  uint64_t key = pair_key(a, b);
  size_t mask = t->merge_cap - 1, i = pair_hash(key) & mask;
  while (t->merges[i].key) {
    if (t->merges[i].key == key) return &t->merges[i];
    i = (i + 1) & mask;
  }
  return NULL;
}

int ptdp_bpe_merges_alloc(bpe_tables *t, size_t n)
{
  t->merge_cap = 64;
  while (t->merge_cap < 2 * n) t->merge_cap *= 2;
  t->merges = calloc(t->merge_cap, sizeof *t->merges);
  PTDP_CHECK(t->merges, "out of memory for %zu merges", n);
  return 0;
}

int ptdp_bpe_merge_add(bpe_tables *t, int32_t a, int32_t b, int32_t merged)
{
  if (ptdp_bpe_merge_find(t, a, b)) return 0; /* a repeated merge keeps its first rank */
  uint64_t key = pair_key(a, b);
  size_t mask = t->merge_cap - 1, h = pair_hash(key) & mask;
  while (t->merges[h].key) h = (h + 1) & mask;
  t->merges[h] = (merge_slot){.key = key, .rank = t->merge_count++, .merged = merged};
  return 0;
}

/* Parse the merges file: lines "a b" after an optional "#version" line; rank = line order. */
static int load_merges(bpe_tables *t, const char *path, const int cp_to_byte[512], const ptdp_strmap *vocab)
{
  char *text;
  size_t len;
  PTDP_CALL(ptdp_bpe_read_file(path, "merge file", &text, &len));
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  if (ptdp_bpe_merges_alloc(t, lines)) {
    free(text);
    PTDP_CHECK(0, "out of memory for %zu merges", lines);
  }
  size_t lineno = 0, i = 0;
  int rc = 0;
  char raw[2048];
  while (i < len && !rc) {
    size_t e = i;
    while (e < len && text[e] != '\n') e++;
    lineno++;
    size_t le = e;
    if (le > i && text[le - 1] == '\r') le--;
    const char *line = text + i;
    size_t ll = le - i;
    i = e + 1;
    if (ll == 0 || (lineno == 1 && ll >= 8 && memcmp(line, "#version", 8) == 0)) continue;
    const char *sp = memchr(line, ' ', ll);
    long na = -1, nb = -1;
    if (sp && ll < sizeof raw) {
      na = ptdp_bpe_unalphabet(cp_to_byte, line, (size_t)(sp - line), raw);
      if (na > 0) nb = ptdp_bpe_unalphabet(cp_to_byte, sp + 1, ll - (size_t)(sp - line) - 1, raw + na);
    }
    if (na <= 0 || nb <= 0) {
      rc = PTDP_FAIL(PTDP_ERR_INPUT, "merge file '%s' line %zu: expected two tokens 'a b' in GPT-2's byte alphabet",
                     path, lineno);
      break;
    }
    /* both parts and their concatenation must be tokens (GPT-2's 50,000 merges all are): the
     * merge's result is looked up as a token */
    int64_t ia, ib, im;
    int part = !ptdp_strmap_get(vocab, raw, (size_t)na, &ia)        ? 1
               : !ptdp_strmap_get(vocab, raw + na, (size_t)nb, &ib) ? 2
               : !ptdp_strmap_get(vocab, raw, (size_t)(na + nb), &im) ? 3 : 0;
    if (part) {
      int la = (int)(sp - line), lb = (int)ll - la - 1, show = ll > 80 ? 80 : (int)ll;
      if (part < 3)
        rc = PTDP_FAIL(PTDP_ERR_INPUT,
                             "merge file '%s' line %zu: merge '%.*s': '%.*s' is not a token of the vocabulary file",
                             path, lineno, show, line, part == 1 ? la : lb, part == 1 ? line : sp + 1);
      else
        rc = PTDP_FAIL(PTDP_ERR_INPUT,
                             "merge file '%s' line %zu: merge '%.*s': its result '%.*s%.*s' is not a token of the "
                             "vocabulary file", path, lineno, show, line, la, line, lb, sp + 1);
      break;
    }
    ptdp_bpe_merge_add(t, (int32_t)ia, (int32_t)ib, (int32_t)im);
  }
  free(text);
  return rc;
}

int ptdp_bpe_tokenizer_new(ptdp_tokenizer **tok, bpe_tables *t)
{
  ptdp_tokenizer *k;
  PTDP_CALLOC(k, 1, sizeof *k);
  if (ptdp_strmap_init(&k->cache, 1 << 10)) {
    free(k);
    PTDP_CHECK(0, "out of memory for the tokenizer's word cache");
  }
  k->t = t;
  k->cache_limit = CACHE_LIMIT_BYTES;
  t->refs++;
  *tok = k;
  return 0;
}

void ptdp_bpe_tables_free(bpe_tables *t)
{
  if (!t || --t->refs > 0) return;
  ptdp_hf_tables_free(t->hf);
  free(t->tok_bytes);
  free(t->tok_off);
  free(t->tok_len);
  free(t->merges);
  free(t);
}

/* A token's raw bytes for a message: printable ASCII as is, other bytes as \xNN, cut at 40. */
const char *ptdp_bpe_token_text(const char *raw, size_t len, char out[200])
{
  size_t k = 0;
  for (size_t i = 0; i < len && i < 40; i++) {
    unsigned char ch = (unsigned char)raw[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '"') out[k++] = (char)ch;
    else k += (size_t)snprintf(out + k, 5, "\\x%02x", ch);
  }
  if (len > 40) out[k++] = '.', out[k++] = '.', out[k++] = '.';
  out[k] = '\0';
  return out;
}

/* The first id below n that no token has (one exists when the largest id is n or more: n tokens,
 * at least one of them not below n). */
static int first_missing_id(const ptdp_strmap *vocab, size_t n, int64_t *missing)
{
  unsigned char *seen;
  PTDP_CALLOC(seen, n, 1);
  for (size_t s = 0; s < vocab->cap; s++)
    if (vocab->slots[s].used && (uint64_t)vocab->slots[s].val < n) seen[vocab->slots[s].val] = 1;
  size_t m = 0;
  while (m < n && seen[m]) m++;
  free(seen);
  *missing = (int64_t)m;
  return 0;
}

/* Ids must be a permutation of 0..n-1: checked before sizing the id tables by the largest id,
 * so a tiny file with id 2^30 - 1 is refused instead of allocating 12 GB; a duplicated id made
 * one token unreachable and another decode wrongly ("abba cab" was once encoded as a's). */
int ptdp_bpe_fill_id_tables(bpe_tables *t, const char *vocab_file, const ptdp_strmap *v, int32_t max_id,
                            int allow_holes)
{
  char a[200], b[200];
  /* holes (allow_holes) are bounded too: at most as many as tokens, plus 1024 */
  PTDP_CHECK(!allow_holes || (size_t)max_id + 1 <= 2 * v->count + 1024, "vocabulary file '%s': the largest id %d is "
             "far beyond the %zu tokens (more missing ids than tokens)", vocab_file, (int)max_id, v->count);
  if (!allow_holes && (size_t)max_id + 1 > v->count) {
    int64_t m = 0;
    PTDP_CALL(first_missing_id(v, v->count, &m));
    PTDP_CHECK(0, "vocabulary file '%s': ids must be 0..%zu, one per token, but no token has id %lld (largest id %d)",
               vocab_file, v->count - 1, (long long)m, (int)max_id);
  }
  t->vocab_size = max_id + 1;
  PTDP_CALLOC(t->tok_off, (size_t)t->vocab_size, sizeof *t->tok_off);
  PTDP_CALLOC(t->tok_len, (size_t)t->vocab_size, sizeof *t->tok_len);
  PTDP_ALLOC(t->tok_bytes, v->pool_len + 1);
  memcpy(t->tok_bytes, v->pool, v->pool_len);
  for (size_t s = 0; s < v->cap; s++) {
    const ptdp_strmap_slot *sl = &v->slots[s];
    if (!sl->used) continue;
    /* every token has at least one byte (vocab_member), so a length of 0 marks a free id */
    PTDP_CHECK(t->tok_len[sl->val] == 0, "vocabulary file '%s': id %lld is given to two tokens, \"%s\" and \"%s\"",
               vocab_file, (long long)sl->val, ptdp_bpe_token_text(t->tok_bytes + t->tok_off[sl->val],
               (size_t)t->tok_len[sl->val], a), ptdp_bpe_token_text(v->pool + sl->off, sl->len, b));
    t->tok_off[sl->val] = sl->off;
    t->tok_len[sl->val] = (int32_t)sl->len;
  }
  return 0;
}

static int load_vocab(bpe_tables *t, const char *vocab_file, vocab_ctx *c)
{
  char *text;
  size_t len;
  PTDP_CALL(ptdp_bpe_read_file(vocab_file, "vocabulary file", &text, &len));
  ptdp_json_error jerr;
  int rc = ptdp_json_object_each(text, len, PTDP_JSON_KEYS_UNIQUE, vocab_member, c, &jerr);
  free(text);
  PTDP_CHECK(rc != -1 || jerr.fault != PTDP_JSON_DUPLICATE_KEY, "vocabulary file '%s': %s", vocab_file, jerr.msg);
  PTDP_CHECK(rc != -1, "vocabulary file '%s' is not a JSON object: %s at byte %zu", vocab_file, jerr.msg, jerr.at);
  PTDP_CHECK(rc == 0, "vocabulary file '%s': %s", vocab_file, c->bad);
  PTDP_CHECK(c->vocab->count > 0, "vocabulary file '%s' is empty", vocab_file);
  PTDP_CALL(ptdp_bpe_fill_id_tables(t, vocab_file, c->vocab, c->max_id, 0));
  /* the byte alphabet: BPE starts every piece from one-byte tokens, so all 256 must be there */
  for (int b = 0; b < 256; b++) {
    char ch = (char)b;
    int64_t id;
    PTDP_CHECK(ptdp_strmap_get(c->vocab, &ch, 1, &id),
               "vocabulary file '%s' lacks the one-byte token for byte 0x%02x (GPT-2's byte alphabet needs all 256)",
               vocab_file, b);
    t->byte_id[b] = (int32_t)id;
  }
  int64_t eod;
  PTDP_CHECK(ptdp_strmap_get(c->vocab, "<|endoftext|>", 13, &eod), "vocabulary file '%s' has no <|endoftext|> token",
             vocab_file);
  t->eod = (int32_t)eod;
  return 0;
}

int ptdp_tokenizer_create_gpt2(ptdp_tokenizer **tok, const char *vocab_file, const char *merge_file)
{
  *tok = NULL;
  PTDP_CHECK(vocab_file && *vocab_file, "GPT2BPETokenizer needs a vocabulary file (--vocab-file)");
  PTDP_CHECK(merge_file && *merge_file, "GPT2BPETokenizer needs a merge file (--merge-file)");
  bpe_tables *t = calloc(1, sizeof *t);
  PTDP_CHECK(t, "out of memory");
  vocab_ctx *c = calloc(1, sizeof *c);
  ptdp_strmap vocab;
  /* the map doubles as it fills: a small start keeps a tiny file cheap (the fuzz harness loads
   * thousands per second), GPT-2's 50,257 tokens cost a few rehashes */
  if (!c || ptdp_strmap_init(&vocab, 1 << 10)) {
    free(c);
    free(t);
    PTDP_CHECK(0, "out of memory");
  }
  uint32_t byte_to_cp[256];
  ptdp_bpe_byte_alphabet(byte_to_cp, c->cp_to_byte);
  c->path = vocab_file;
  c->vocab = &vocab;
  c->max_id = -1;
  int rc = load_vocab(t, vocab_file, c);
  if (!rc) rc = load_merges(t, merge_file, c->cp_to_byte, &vocab);
  ptdp_strmap_free(&vocab);
  free(c);
  if (!rc) rc = ptdp_bpe_tokenizer_new(tok, t);
  if (rc) {
    t->refs = 1;
    ptdp_bpe_tables_free(t);
    return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  }
  return 0;
}

int ptdp_tokenizer_create_bytes(ptdp_tokenizer **tok)
{
  *tok = NULL;
  bpe_tables *t;
  PTDP_CALLOC(t, 1, sizeof *t);
  t->is_bytes = 1;
  t->vocab_size = 257;
  t->eod = 256;
  int rc = ptdp_bpe_tokenizer_new(tok, t);
  if (rc) free(t);
  return rc;
}

int ptdp_tokenizer_create(ptdp_tokenizer **tok, const char *type, const char *vocab_file, const char *merge_file,
                          const char *model_file)
{
  *tok = NULL;
  if (type && strcmp(type, "ByteLevel") == 0) return ptdp_tokenizer_create_bytes(tok);
  if (type && strcmp(type, "HuggingFaceTokenizer") == 0) return ptdp_tokenizer_create_hf(tok, model_file);
  PTDP_CHECK(type && strcmp(type, "GPT2BPETokenizer") == 0,
             "unknown tokenizer type '%s' (known: GPT2BPETokenizer, ByteLevel, HuggingFaceTokenizer)",
             type ? type : "(null)");
  PTDP_CALL(ptdp_tokenizer_create_gpt2(tok, vocab_file, merge_file));
  return 0;
}

int ptdp_tokenizer_clone(const ptdp_tokenizer *tok, ptdp_tokenizer **copy)
{
  PTDP_CALL(ptdp_bpe_tokenizer_new(copy, tok->t));
  (*copy)->cache_limit = tok->cache_limit;
  return 0;
}

void ptdp_tokenizer_destroy(ptdp_tokenizer **tok)
{
  if (!tok || !*tok) return;
  ptdp_strmap_free(&(*tok)->cache);
  free((*tok)->cache_ids);
  free((*tok)->work);
  ptdp_regex_work_free(&(*tok)->rx);
  ptdp_hf_scratch_free(*tok);
  ptdp_bpe_tables_free((*tok)->t);
  free(*tok);
  *tok = NULL;
}

int ptdp_tokenizer_vocab_size(const ptdp_tokenizer *tok) { return tok->t->vocab_size; }
int32_t ptdp_tokenizer_eod(const ptdp_tokenizer *tok) { return tok->t->eod; }
int ptdp_tokenizer_round_trips(const ptdp_tokenizer *tok) { return !tok->t->is_hf || ptdp_hf_round_trips(tok->t->hf); }
const char *ptdp_tokenizer_type_name(const ptdp_tokenizer *tok)
{
  return tok->t->is_bytes ? "ByteLevel" : tok->t->is_hf ? "HuggingFaceTokenizer" : "GPT2BPETokenizer";
}
