/* Hugging Face tokenizer.json (Megatron's HuggingFaceTokenizer; see include/ptdp/tokenizer.h):
 * loading the BPE model, its added tokens, normalizer, pre-tokenizer and decoder into the same
 * tables as GPT-2's files (tokenizer_impl.h), plus what tokenizer.json adds (hf_tables).
 *
 * Two kinds of BPE file are read:
 *   byte-level   a ByteLevel pre-tokenizer (GPT-2, Llama 3, Qwen ...): tokens are written in
 *                GPT-2's byte alphabet and mapped back to bytes, BPE starts from bytes;
 *   SentencePiece-style   no ByteLevel (Llama 2, Mistral): tokens are text with U+2581 for
 *                the space, BPE starts from characters, a character without a token becomes
 *                its UTF-8 bytes' <0xNN> tokens (byte_fallback) or the unknown token.
 * Everything else in a file (WordPiece, Unigram, a normalizer other than NFC, Prepend, Replace,
 * a pre-tokenizer other than Split, ByteLevel, Metaspace) is refused with its name. */
#include "ptdp/tokenizer.h"

#include "ptdp/error.h"
#include "ptdp/json.h"
#include "ptdp/unicode.h"
#include "tokenizer_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPACE_MARK "\xE2\x96\x81" /* U+2581, SentencePiece's space */

/* GPT-2's split pattern as Hugging Face's ByteLevel pre-tokenizer writes it: a Split naming it
 * takes the hand-written scanner (tokenizer_encode.c), tested equal to the regex engine. */
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* The end-of-document token when no tokenizer_config.json names one: the first of these that
 * the file has (Llama 3, GPT-2 / Qwen, Llama 2 / Mistral, Gemma). */
static const char *const EOD_NAMES[] = {"<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>"};

typedef struct {
  const char *path;
  hf_tables *hf;
  bpe_tables *t;
  int cp_to_byte[512];
  int32_t max_id;
  ptdp_json_buf str, str2;
  char bad[320];
} loader;

/* ---------------------------------------------------------------- JSON helpers */

typedef struct {
  const char *const *names;
  size_t k;
  const char **vals;
  size_t *lens;
} fields_ctx;

static int fields_member(void *vp, const char *key, size_t key_len, const char *val, size_t val_len)
{
  fields_ctx *c = vp;
  for (size_t i = 0; i < c->k; i++)
    if (strlen(c->names[i]) == key_len && memcmp(c->names[i], key, key_len) == 0)
      c->vals[i] = val, c->lens[i] = val_len;
  return 0;
}

/* The members names[0..k) of the object obj (NULL where absent). */
static int get_fields(loader *L, const char *what, const char *obj, size_t n, const char *const *names, size_t k,
                      const char **vals, size_t *lens)
{
  for (size_t i = 0; i < k; i++) vals[i] = NULL, lens[i] = 0;
  fields_ctx c = {names, k, vals, lens};
  ptdp_json_error err;
  int rc = ptdp_json_object_each(obj, n, PTDP_JSON_KEYS_UNIQUE, fields_member, &c, &err);
  PTDP_CHECK(rc == 0 || err.fault != PTDP_JSON_DUPLICATE_KEY, "tokenizer file '%s': %s: %s", L->path, what, err.msg);
  PTDP_CHECK(rc == 0, "tokenizer file '%s': %s is not a JSON object (%s at byte %zu of it)", L->path, what,
             err.msg, err.at);
  return 0;
}

static int is_null(const char *v, size_t n) { return !v || (n == 4 && memcmp(v, "null", 4) == 0); }

static int get_bool(loader *L, const char *what, const char *v, size_t n, int def, int *out)
{
  *out = def;
  if (is_null(v, n)) return 0;
  if (n == 4 && memcmp(v, "true", 4) == 0) *out = 1;
  else if (n == 5 && memcmp(v, "false", 5) == 0) *out = 0;
  else PTDP_CHECK(0, "tokenizer file '%s': %s must be true or false", L->path, what);
  return 0;
}

/* A string value into buf (NUL-terminated; may hold NUL bytes: use buf->len). */
static int get_string(loader *L, const char *what, const char *v, size_t n, ptdp_json_buf *buf)
{
  ptdp_json_error err;
  int rc = v ? ptdp_json_string_value(v, n, buf, &err) : 1;
  PTDP_CHECK(rc != 1, "tokenizer file '%s': %s must be a string", L->path, what);
  PTDP_CHECK(rc == 0, "tokenizer file '%s': %s: %s", L->path, what, err.msg);
  return 0;
}

static int get_id(loader *L, const char *what, const char *v, size_t n, int32_t *id)
{
  char num[24];
  PTDP_CHECK(v && n > 0 && n < sizeof num, "tokenizer file '%s': %s must be an integer id", L->path, what);
  memcpy(num, v, n);
  num[n] = '\0';
  char *end;
  long x = strtol(num, &end, 10);
  PTDP_CHECK(!*end && x >= 0 && x < (1L << 30), "tokenizer file '%s': %s is '%s', not an integer in [0, 2^30)",
             L->path, what, num);
  *id = (int32_t)x;
  return 0;
}

static int type_is(const char *type, const char *name) { return strcmp(type, name) == 0; }

/* The "type" of the object v into L->str. */
static int get_type(loader *L, const char *what, const char *v, size_t n)
{
  static const char *const names[] = {"type"};
  const char *tv;
  size_t tl;
  PTDP_CALL(get_fields(L, what, v, n, names, 1, &tv, &tl));
  PTDP_CHECK(tv, "tokenizer file '%s': %s has no \"type\"", L->path, what);
  PTDP_CALL(get_string(L, what, tv, tl, &L->str));
  return 0;
}

/* A token's text as bytes: byte-level files write tokens in GPT-2's byte alphabet. */
static int token_bytes(loader *L, const char *s, size_t len, char *out, size_t out_cap, size_t *nb)
{
  if (!L->hf->byte_level) {
    if (len > out_cap) return -1;
    memcpy(out, s, len);
    *nb = len;
    return 0;
  }
  if (len > out_cap) return -1;
  long k = ptdp_bpe_unalphabet(L->cp_to_byte, s, len, out);
  if (k <= 0) return -1;
  *nb = (size_t)k;
  return 0;
}

/* ---------------------------------------------------------------- model */

static int vocab_member(void *vp, const char *key, size_t key_len, const char *val, size_t val_len)
{
  loader *L = vp;
  char raw[1024];
  size_t nb;
  if (key_len == 0 || token_bytes(L, key, key_len, raw, sizeof raw, &nb))
    return snprintf(L->bad, sizeof L->bad, "model.vocab: token \"%.40s\" is %s", key,
                    key_len == 0            ? "empty"
                    : L->hf->byte_level     ? "not written in GPT-2's byte alphabet"
                                            : "too long"), 2;
  return ptdp_bpe_vocab_put(&L->hf->vocab, raw, nb, val, val_len, &L->max_id, "model.vocab: ", key, L->bad,
                            sizeof L->bad);
}

static int lookup(loader *L, const char *s, size_t len, char *raw, size_t *nb, int64_t *id)
{
  if (token_bytes(L, s, len, raw, 1024, nb)) return 0;
  return ptdp_strmap_get(&L->hf->vocab, raw, *nb, id);
}

typedef struct {
  const char *v[3];
  size_t l[3];
  size_t n;
} items3;

static int collect_item(void *vp, size_t index, const char *item, size_t item_len)
{
  items3 *c = vp;
  if (index < 3) c->v[index] = item, c->l[index] = item_len;
  c->n = index + 1;
  return 0;
}

/* The merge's two parts as JSON strings: "a b" (split at its one space) or ["a", "b"]. */
static int merge_parts(loader *L, size_t index, const char *item, size_t item_len)
{
  ptdp_json_error err;
  if (item_len && item[0] == '[') {
    items3 c = {{NULL, NULL, NULL}, {0, 0, 0}, 0};
    if (ptdp_json_array_each(item, item_len, PTDP_JSON_KEYS_UNIQUE, collect_item, &c, &err) || c.n != 2 ||
        ptdp_json_string_value(c.v[0], c.l[0], &L->str, &err) ||
        ptdp_json_string_value(c.v[1], c.l[1], &L->str2, &err))
      return snprintf(L->bad, sizeof L->bad, "model.merges[%zu] is not a pair of two strings", index), 2;
    return 0;
  }
  if (ptdp_json_string_value(item, item_len, &L->str, &err))
    return snprintf(L->bad, sizeof L->bad, "model.merges[%zu] is neither a string \"a b\" nor a pair [\"a\", \"b\"]",
                    index), 2;
  const char *d = L->str.data, *sp = memchr(d, ' ', L->str.len);
  if (!sp || memchr(sp + 1, ' ', L->str.len - (size_t)(sp + 1 - d)))
    return snprintf(L->bad, sizeof L->bad, "model.merges[%zu] \"%.60s\" is not two tokens separated by one space",
                    index, d), 2;
  L->str2.len = 0;
  size_t lb = L->str.len - (size_t)(sp + 1 - d);
  if (lb + 1 > L->str2.cap) {
    char *nd = realloc(L->str2.data, lb + 1);
    if (!nd) return snprintf(L->bad, sizeof L->bad, "out of memory"), 2;
    L->str2.data = nd, L->str2.cap = lb + 1;
  }
  memcpy(L->str2.data, sp + 1, lb);
  L->str2.data[lb] = '\0';
  L->str2.len = lb;
  L->str.len = (size_t)(sp - d);
  L->str.data[L->str.len] = '\0';
  return 0;
}

static int merge_item(void *vp, size_t index, const char *item, size_t item_len)
{
  loader *L = vp;
  int rc = merge_parts(L, index, item, item_len);
  if (rc) return rc;
  char raw[2048];
  size_t na, nb, nm;
  int64_t ia, ib, im;
  int part = !lookup(L, L->str.data, L->str.len, raw, &na, &ia) ? 1
             : !lookup(L, L->str2.data, L->str2.len, raw + 1024, &nb, &ib) ? 2 : 0;
  if (!part) {
    memcpy(raw + na, raw + 1024, nb);
    nm = na + nb;
    if (!ptdp_strmap_get(&L->hf->vocab, raw, nm, &im)) part = 3;
  }
  if (part)
    return snprintf(L->bad, sizeof L->bad, "model.merges[%zu] (\"%.40s\", \"%.40s\"): %s is not a token of model.vocab",
                    index, L->str.data, L->str2.data, part == 1 ? "the first part" : part == 2 ? "the second part"
                                                                                     : "their concatenation"), 2;
  return ptdp_bpe_merge_add(L->t, (int32_t)ia, (int32_t)ib, (int32_t)im) ? (snprintf(L->bad, sizeof L->bad,
                                                                                     "out of memory"), 2) : 0;
}

static int count_item(void *vp, size_t index, const char *item, size_t item_len)
{
  (void)item, (void)item_len;
  *(size_t *)vp = index + 1;
  return 0;
}

static int read_model(loader *L, const char *v, size_t n)
{
  static const char *const names[] = {"type", "vocab", "merges", "unk_token", "byte_fallback", "fuse_unk",
                                      "ignore_merges", "continuing_subword_prefix", "end_of_word_suffix", "dropout"};
  enum { TYPE, VOCAB, MERGES, UNK, BYTE_FALLBACK, FUSE_UNK, IGNORE_MERGES, CSP, EOWS, DROPOUT, NF };
  const char *f[NF];
  size_t fl[NF];
  hf_tables *hf = L->hf;
  PTDP_CHECK(v && !is_null(v, n), "tokenizer file '%s' has no model", L->path);
  PTDP_CALL(get_fields(L, "model", v, n, names, NF, f, fl));
  if (f[TYPE]) {
    PTDP_CALL(get_string(L, "model.type", f[TYPE], fl[TYPE], &L->str));
    PTDP_CHECK(type_is(L->str.data, "BPE"), "tokenizer file '%s': model type '%s' is not supported (only BPE models "
               "are: WordPiece, Unigram and WordLevel tokenizers are refused)", L->path, L->str.data);
  }
  PTDP_CHECK(f[VOCAB] && f[MERGES], "tokenizer file '%s': model has no %s (a BPE model needs vocab and merges)",
             L->path, f[VOCAB] ? "merges" : "vocab");
  PTDP_CALL(get_bool(L, "model.byte_fallback", f[BYTE_FALLBACK], fl[BYTE_FALLBACK], 0, &hf->byte_fallback));
  PTDP_CALL(get_bool(L, "model.fuse_unk", f[FUSE_UNK], fl[FUSE_UNK], 0, &hf->fuse_unk));
  PTDP_CALL(get_bool(L, "model.ignore_merges", f[IGNORE_MERGES], fl[IGNORE_MERGES], 0, &hf->ignore_merges));
  for (int k = CSP; k <= EOWS; k++)
    if (!is_null(f[k], fl[k])) {
      PTDP_CALL(get_string(L, names[k], f[k], fl[k], &L->str));
      PTDP_CHECK(L->str.len == 0, "tokenizer file '%s': model.%s '%s' is not supported", L->path, names[k],
                 L->str.data);
    }
  PTDP_CHECK(is_null(f[DROPOUT], fl[DROPOUT]) || (fl[DROPOUT] == 1 && f[DROPOUT][0] == '0') ||
             (fl[DROPOUT] == 3 && memcmp(f[DROPOUT], "0.0", 3) == 0),
             "tokenizer file '%s': model.dropout is not supported (BPE dropout is for training a tokenizer)", L->path);
  ptdp_json_error err;
  int rc = ptdp_json_object_each(f[VOCAB], fl[VOCAB], PTDP_JSON_KEYS_UNIQUE, vocab_member, L, &err);
  PTDP_CHECK(rc != -1, "tokenizer file '%s': model.vocab is not a JSON object: %s", L->path, err.msg);
  PTDP_CHECK(rc == 0, "tokenizer file '%s': %s", L->path, L->bad);
  PTDP_CHECK(hf->vocab.count > 0, "tokenizer file '%s': model.vocab is empty", L->path);
  hf->unk = -1;
  if (!is_null(f[UNK], fl[UNK])) {
    PTDP_CALL(get_string(L, "model.unk_token", f[UNK], fl[UNK], &L->str));
    int64_t id;
    PTDP_CHECK(ptdp_strmap_get(&hf->vocab, L->str.data, L->str.len, &id),
               "tokenizer file '%s': model.unk_token '%s' is not a token of model.vocab", L->path, L->str.data);
    hf->unk = (int32_t)id;
  }
  /* the merges are read after the added tokens (read_file): a merge names vocab tokens only */
  size_t nm = 0;
  rc = ptdp_json_array_each(f[MERGES], fl[MERGES], PTDP_JSON_KEYS_UNIQUE, count_item, &nm, &err);
  PTDP_CHECK(rc == 0, "tokenizer file '%s': model.merges is not a JSON array", L->path);
  PTDP_CALL(ptdp_bpe_merges_alloc(L->t, nm));
  rc = ptdp_json_array_each(f[MERGES], fl[MERGES], PTDP_JSON_KEYS_UNIQUE, merge_item, L, &err);
  PTDP_CHECK(rc == 0, "tokenizer file '%s': %s", L->path, rc == -1 ? err.msg : L->bad);
  return 0;
}

/* ---------------------------------------------------------------- added tokens */

static int added_item(void *vp, size_t index, const char *item, size_t item_len)
{
  static const char *const names[] = {"id", "content", "lstrip", "rstrip", "single_word"};
  loader *L = vp;
  hf_tables *hf = L->hf;
  const char *f[5];
  size_t fl[5];
  char what[64];
  snprintf(what, sizeof what, "added_tokens[%zu]", index);
  if (get_fields(L, what, item, item_len, names, 5, f, fl)) return 3;
  hf_added *a = &hf->added[index];
  if (get_id(L, what, f[0], fl[0], &a->id) || get_string(L, what, f[1], fl[1], &L->str) ||
      get_bool(L, what, f[2], fl[2], 0, &a->lstrip) || get_bool(L, what, f[3], fl[3], 0, &a->rstrip) ||
      get_bool(L, what, f[4], fl[4], 0, &a->single_word))
    return 3;
  hf->nadded = index + 1;
  if (L->str.len == 0) return snprintf(L->bad, sizeof L->bad, "%s has an empty content", what), 2;
  if (!(a->content = malloc(L->str.len + 1))) return snprintf(L->bad, sizeof L->bad, "out of memory"), 2;
  memcpy(a->content, L->str.data, L->str.len + 1);
  a->len = L->str.len;
  hf->added_first[(unsigned char)a->content[0] >> 6] |= (uint64_t)1 << ((unsigned char)a->content[0] & 63);
  /* an added token is usually also in model.vocab (GPT-2's <|endoftext|>, Llama 2's <s>), with
   * the same id; Llama 3's special tokens are only here */
  int64_t old;
  if (ptdp_strmap_get(&hf->vocab, a->content, a->len, &old)) {
    if (old != a->id)
      return snprintf(L->bad, sizeof L->bad, "%s \"%.40s\" has id %d but model.vocab gives it id %lld", what,
                      a->content, (int)a->id, (long long)old), 2;
    return 0;
  }
  if (ptdp_strmap_put(&hf->vocab, a->content, a->len, a->id))
    return snprintf(L->bad, sizeof L->bad, "out of memory"), 2;
  if (a->id > L->max_id) L->max_id = a->id;
  return 0;
}

static int read_added(loader *L, const char *v, size_t n)
{
  if (is_null(v, n)) return 0;
  size_t count = 0;
  ptdp_json_error err;
  PTDP_CHECK(ptdp_json_array_each(v, n, PTDP_JSON_KEYS_UNIQUE, count_item, &count, &err) == 0,
             "tokenizer file '%s': added_tokens is not a JSON array", L->path);
  PTDP_CALLOC(L->hf->added, count ? count : 1, sizeof *L->hf->added);
  int rc = ptdp_json_array_each(v, n, PTDP_JSON_KEYS_UNIQUE, added_item, L, &err);
  PTDP_CHECK(rc != 2, "tokenizer file '%s': %s", L->path, L->bad);
  PTDP_CHECK(rc == 0, "tokenizer file '%s': added_tokens could not be read", L->path);
  return 0;
}

/* ---------------------------------------------------------------- Sequence */

/* A reader of one normalizer or one pre_tokenizer, which a Sequence lists. */
typedef int (*step_reader)(loader *L, const char *v, size_t n);
typedef struct {
  loader *L;
  step_reader read;
} sequence_ctx;

static int sequence_item(void *vp, size_t index, const char *item, size_t item_len)
{
  const sequence_ctx *q = vp;
  (void)index;
  return q->read(q->L, item, item_len) ? 3 : 0;
}

/* A Sequence (of normalizers or of pre_tokenizers): its list, the field f[0..fl) (NULL when it has
 * none), each item read by read in order; what and list name them in the message. */
static int read_sequence(loader *L, const char *f, size_t fl, step_reader read, const char *what, const char *list)
{
  ptdp_json_error err;
  sequence_ctx q = {L, read};
  int rc = f ? ptdp_json_array_each(f, fl, PTDP_JSON_KEYS_UNIQUE, sequence_item, &q, &err) : 1;
  PTDP_CHECK(rc != 1 && rc != -1, "tokenizer file '%s': %s Sequence has no list of %s", L->path, what, list);
  return rc ? PTDP_ERR_INPUT : 0;
}

/* What a normalizer and a pre_tokenizer (what, read by read) start alike: null is none; else its
 * type (into L->str) and its fields names[0..k) into f, fl, where names[0] is a Sequence's list,
 * which is read here.  *done when nothing is left for the caller to read. */
static int read_step_head(loader *L, const char *what, step_reader read, const char *v, size_t n,
                          const char *const *names, size_t k, const char **f, size_t *fl, int *done)
{
  *done = 1;
  if (is_null(v, n)) return 0;
  PTDP_CALL(get_type(L, what, v, n));
  PTDP_CALL(get_fields(L, what, v, n, names, k, f, fl));
  if (type_is(L->str.data, "Sequence")) return read_sequence(L, f[0], fl[0], read, what, names[0]);
  *done = 0;
  return 0;
}

/* ---------------------------------------------------------------- normalizer */

static int read_normalizer(loader *L, const char *v, size_t n)
{
  static const char *const names[] = {"normalizers", "prepend", "pattern", "content"};
  const char *f[4];
  size_t fl[4];
  int done;
  PTDP_CALL(read_step_head(L, "normalizer", read_normalizer, v, n, names, 4, f, fl, &done));
  if (done) return 0;
  hf_tables *hf = L->hf;
  if (type_is(L->str.data, "NFC")) {
    hf->nfc = 1;
    return 0;
  }
  if (type_is(L->str.data, "Prepend")) {
    PTDP_CHECK(!hf->prepend && !hf->repl_from, "tokenizer file '%s': only one Prepend normalizer, before a Replace, "
               "is supported", L->path);
    PTDP_CALL(get_string(L, "normalizer Prepend's prepend", f[1], fl[1], &L->str));
    PTDP_ALLOC(hf->prepend, L->str.len + 1);
    memcpy(hf->prepend, L->str.data, L->str.len + 1);
    hf->prepend_len = L->str.len;
    return 0;
  }
  if (type_is(L->str.data, "Replace")) {
    static const char *const pn[] = {"String", "Regex"};
    const char *pv[2];
    size_t pl[2];
    PTDP_CHECK(!hf->repl_from, "tokenizer file '%s': only one Replace normalizer is supported", L->path);
    PTDP_CHECK(f[2], "tokenizer file '%s': normalizer Replace has no pattern", L->path);
    PTDP_CALL(get_fields(L, "normalizer Replace's pattern", f[2], fl[2], pn, 2, pv, pl));
    PTDP_CHECK(pv[0], "tokenizer file '%s': normalizer Replace with a Regex pattern is not supported (only String)",
               L->path);
    PTDP_CALL(get_string(L, "normalizer Replace's pattern", pv[0], pl[0], &L->str));
    PTDP_CALL(get_string(L, "normalizer Replace's content", f[3], fl[3], &L->str2));
    PTDP_CHECK(L->str.len > 0, "tokenizer file '%s': normalizer Replace has an empty pattern", L->path);
    PTDP_ALLOC(hf->repl_from, L->str.len + 1);
    PTDP_ALLOC(hf->repl_to, L->str2.len + 1);
    memcpy(hf->repl_from, L->str.data, L->str.len + 1);
    memcpy(hf->repl_to, L->str2.data, L->str2.len + 1);
    hf->repl_from_len = L->str.len, hf->repl_to_len = L->str2.len;
    return 0;
  }
  PTDP_CHECK(0, "tokenizer file '%s': normalizer '%s' is not supported (known: Sequence, NFC, Prepend, Replace)",
             L->path, L->str.data);
  return 0;
}

/* ---------------------------------------------------------------- pre-tokenizer */

static int add_step(loader *L, hf_step s)
{
  hf_tables *hf = L->hf;
  hf_step *ns = realloc(hf->steps, (hf->nsteps + 1) * sizeof *ns);
  if (!ns) {
    ptdp_regex_free(&s.re);
    PTDP_CHECK(0, "out of memory");
  }
  hf->steps = ns;
  hf->steps[hf->nsteps++] = s;
  return 0;
}

static int read_split(loader *L, const char *v, size_t n)
{
  static const char *const names[] = {"pattern", "behavior", "invert"};
  static const char *const pn[] = {"String", "Regex"};
  const char *f[3], *pv[2];
  size_t fl[3], pl[2];
  PTDP_CALL(get_fields(L, "pre_tokenizer Split", v, n, names, 3, f, fl));
  int invert;
  PTDP_CALL(get_bool(L, "pre_tokenizer Split's invert", f[2], fl[2], 0, &invert));
  PTDP_CHECK(!invert, "tokenizer file '%s': pre_tokenizer Split with invert true is not supported", L->path);
  PTDP_CALL(get_string(L, "pre_tokenizer Split's behavior", f[1], fl[1], &L->str));
  hf_step s = {.kind = HF_SPLIT_REGEX};
  if (type_is(L->str.data, "Removed")) s.removed = 1;
  else PTDP_CHECK(type_is(L->str.data, "Isolated"), "tokenizer file '%s': pre_tokenizer Split's behavior '%s' is not "
                  "supported (known: Isolated, Removed)", L->path, L->str.data);
  PTDP_CHECK(f[0], "tokenizer file '%s': pre_tokenizer Split has no pattern", L->path);
  PTDP_CALL(get_fields(L, "pre_tokenizer Split's pattern", f[0], fl[0], pn, 2, pv, pl));
  PTDP_CHECK(pv[0] || pv[1], "tokenizer file '%s': pre_tokenizer Split's pattern is neither String nor Regex", L->path);
  PTDP_CALL(get_string(L, "pre_tokenizer Split's pattern", pv[1] ? pv[1] : pv[0], pv[1] ? pl[1] : pl[0], &L->str));
  if (pv[1] && L->str.len == sizeof GPT2_PATTERN - 1 && memcmp(L->str.data, GPT2_PATTERN, L->str.len) == 0 &&
      !getenv("PTDP_TOKENIZER_REGEX_ONLY")) {
    s.kind = HF_SPLIT_GPT2;
    return add_step(L, s);
  }
  /* a String pattern is matched literally: escape every character for the regex compiler */
  ptdp_json_buf lit = {0};
  const char *pat = L->str.data;
  size_t plen = L->str.len;
  if (!pv[1]) {
    PTDP_ALLOC(lit.data, 2 * plen + 1);
    for (size_t i = 0; i < plen; i++) {
      unsigned char c = (unsigned char)pat[i];
      if (c < 0x80 && !((c | 32) >= 'a' && (c | 32) <= 'z') && !(c >= '0' && c <= '9')) lit.data[lit.len++] = '\\';
      lit.data[lit.len++] = (char)c;
    }
    pat = lit.data, plen = lit.len;
  }
  char msg[256];
  int rc = ptdp_regex_compile(pat, plen, &s.re, msg, sizeof msg);
  free(lit.data);
  PTDP_CHECK(rc == 0, "tokenizer file '%s': the pre_tokenizer's split pattern '%.200s' cannot be used: %s", L->path,
             L->str.data, msg);
  return add_step(L, s);
}

static int read_metaspace(loader *L, const char *v, size_t n)
{
  static const char *const names[] = {"replacement", "add_prefix_space", "prepend_scheme", "split"};
  const char *f[4];
  size_t fl[4];
  PTDP_CALL(get_fields(L, "pre_tokenizer Metaspace", v, n, names, 4, f, fl));
  PTDP_CALL(get_string(L, "pre_tokenizer Metaspace's replacement", f[0], fl[0], &L->str));
  PTDP_CHECK(L->str.len == 3 && memcmp(L->str.data, SPACE_MARK, 3) == 0,
             "tokenizer file '%s': pre_tokenizer Metaspace's replacement must be U+2581", L->path);
  hf_step s = {.kind = HF_METASPACE, .prepend = 2};
  int aps;
  PTDP_CALL(get_bool(L, "pre_tokenizer Metaspace's add_prefix_space", f[1], fl[1], 1, &aps));
  s.prepend = aps ? 2 : 0;
  if (f[2]) {
    PTDP_CALL(get_string(L, "pre_tokenizer Metaspace's prepend_scheme", f[2], fl[2], &L->str));
    s.prepend = type_is(L->str.data, "always") ? 2 : type_is(L->str.data, "first") ? 1 : 0;
    PTDP_CHECK(s.prepend || type_is(L->str.data, "never"), "tokenizer file '%s': Metaspace prepend_scheme '%s' is "
               "unknown", L->path, L->str.data);
  }
  PTDP_CALL(get_bool(L, "pre_tokenizer Metaspace's split", f[3], fl[3], 1, &s.split));
  L->hf->strip_space = s.prepend != 0;
  return add_step(L, s);
}

static int read_pre_tokenizer(loader *L, const char *v, size_t n)
{
  static const char *const names[] = {"pretokenizers", "add_prefix_space", "use_regex"};
  const char *f[3];
  size_t fl[3];
  int done;
  PTDP_CALL(read_step_head(L, "pre_tokenizer", read_pre_tokenizer, v, n, names, 3, f, fl, &done));
  if (done) return 0;
  if (type_is(L->str.data, "Split")) return read_split(L, v, n);
  if (type_is(L->str.data, "Metaspace")) return read_metaspace(L, v, n);
  if (type_is(L->str.data, "ByteLevel")) {
    hf_step s = {.kind = HF_BYTE_LEVEL};
    int use_regex;
    PTDP_CALL(get_bool(L, "pre_tokenizer ByteLevel's add_prefix_space", f[1], fl[1], 1, &s.prefix_space));
    PTDP_CALL(get_bool(L, "pre_tokenizer ByteLevel's use_regex", f[2], fl[2], 1, &use_regex));
    if (use_regex) s.kind = HF_SPLIT_GPT2;
    L->hf->byte_level = 1;
    return add_step(L, s);
  }
  PTDP_CHECK(0, "tokenizer file '%s': pre_tokenizer '%s' is not supported (known: Sequence, Split, ByteLevel, "
             "Metaspace)", L->path, L->str.data);
  return 0;
}

/* Is there a ByteLevel pre-tokenizer (decides how vocab tokens are written)?  A textual scan of
 * the pre_tokenizer's JSON; read_pre_tokenizer checks the structure afterwards. */
static int has_byte_level(const char *v, size_t n)
{
  static const char key[] = "\"ByteLevel\"";
  for (size_t i = 0; v && i + sizeof key - 1 <= n; i++)
    if (memcmp(v + i, key, sizeof key - 1) == 0) return 1;
  return 0;
}

/* ---------------------------------------------------------------- decoder and end of text */

static int decoder_strips(const char *v, size_t n)
{
  /* a Strip decoder removing a leading " " (Llama 2's Sequence), or a Metaspace decoder */
  static const char strip[] = "\"Strip\"", meta[] = "\"Metaspace\"";
  for (size_t i = 0; v && i + sizeof strip - 1 <= n; i++)
    if (memcmp(v + i, strip, sizeof strip - 1) == 0 ||
        (i + sizeof meta - 1 <= n && memcmp(v + i, meta, sizeof meta - 1) == 0))
      return 1;
  return 0;
}

/* tokenizer_config.json's eos_token beside the file, as Megatron's AutoTokenizer finds it. */
static int config_eos(loader *L, const char *dir, int32_t *eod)
{
  static const char *const names[] = {"eos_token", "content"};
  char path[4096];
  int pn = snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  if (pn < 0 || (size_t)pn >= sizeof path) return 0;
  if (access(path, F_OK)) return 0;
  char *text;
  size_t len;
  PTDP_CALL(ptdp_bpe_read_file(path, "tokenizer config", &text, &len));
  const char *fv[2];
  size_t fl[2];
  const char *save = L->path;
  L->path = path;
  int rc = get_fields(L, "tokenizer_config.json", text, len, names, 1, fv, fl);
  if (!rc && fv[0] && fl[0] && fv[0][0] == '{') rc = get_fields(L, "eos_token", fv[0], fl[0], names + 1, 1, fv, fl);
  if (!rc && fv[0] && !is_null(fv[0], fl[0])) rc = get_string(L, "eos_token", fv[0], fl[0], &L->str);
  L->path = save;
  if (!rc && fv[0] && !is_null(fv[0], fl[0])) {
    int64_t id;
    if (ptdp_strmap_get(&L->hf->vocab, L->str.data, L->str.len, &id)) *eod = (int32_t)id;
    else rc = PTDP_FAIL(PTDP_ERR_INPUT, "'%s': eos_token '%s' is not a token of '%s'", path, L->str.data, L->path);
  }
  free(text);
  return rc;
}

static int find_eod(loader *L, const char *dir)
{
  int32_t eod = -1;
  PTDP_CALL(config_eos(L, dir, &eod));
  for (size_t k = 0; eod < 0 && k < sizeof EOD_NAMES / sizeof EOD_NAMES[0]; k++) {
    int64_t id;
    if (ptdp_strmap_get(&L->hf->vocab, EOD_NAMES[k], strlen(EOD_NAMES[k]), &id)) eod = (int32_t)id;
  }
  L->t->eod = eod;
  return 0;
}

/* ---------------------------------------------------------------- tables */

/* SentencePiece-style decoding: U+2581 is a space, <0xNN> is byte NN. */
static int sp_decode_tables(bpe_tables *t)
{
  hf_tables *hf = t->hf;
  for (int b = 0; b < 256; b++) hf->byte_fb[b] = -1;
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    int64_t id;
    if (ptdp_strmap_get(&hf->vocab, name, 6, &id)) hf->byte_fb[b] = (int32_t)id;
  }
  size_t total = 0;
  for (int32_t i = 0; i < t->vocab_size; i++) total += (size_t)t->tok_len[i];
  char *pool;
  PTDP_ALLOC(pool, total + 1);
  size_t k = 0;
  for (int32_t i = 0; i < t->vocab_size; i++) {
    const char *s = t->tok_bytes + t->tok_off[i];
    size_t n = (size_t)t->tok_len[i], start = k;
    for (size_t j = 0; j < n;) {
      if (n - j >= 3 && memcmp(s + j, SPACE_MARK, 3) == 0) pool[k++] = ' ', j += 3;
      else pool[k++] = s[j++];
    }
    t->tok_off[i] = start;
    t->tok_len[i] = (int32_t)(k - start);
  }
  for (int b = 0; b < 256; b++)
    if (hf->byte_fb[b] >= 0) pool[t->tok_off[hf->byte_fb[b]]] = (char)b, t->tok_len[hf->byte_fb[b]] = 1;
  free(t->tok_bytes);
  t->tok_bytes = pool;
  /* the first symbol of a one-byte piece: its character's token, else byte fallback, else unknown */
  for (int b = 0; b < 256; b++) {
    char ch = (char)b;
    int64_t id;
    t->byte_id[b] = b < 0x80 && ptdp_strmap_get(&hf->vocab, &ch, 1, &id) ? (int32_t)id
                    : hf->byte_fallback && hf->byte_fb[b] >= 0   ? hf->byte_fb[b]
                                                                 : -1;
  }
  return 0;
}

/* May a SentencePiece-style text be cut before each run of U+2581 (hf_tables.sp_cut)?  Only if
 * no token could span the cut: none holds U+2581 right after another character.  The merges make
 * only tokens, so no merge crosses the cut, and BPE on the pieces equals BPE on the whole. */
static int can_cut(const hf_tables *hf)
{
  int64_t id;
  if (hf->ignore_merges || !ptdp_strmap_get(&hf->vocab, SPACE_MARK, 3, &id)) return 0;
  for (size_t s = 0; s < hf->vocab.cap; s++) {
    const ptdp_strmap_slot *sl = &hf->vocab.slots[s];
    if (!sl->used) continue;
    const char *k = hf->vocab.pool + sl->off;
    for (size_t j = 1; j + 3 <= sl->len; j++)
      if (memcmp(k + j, SPACE_MARK, 3) == 0 && (j < 3 || memcmp(k + j - 3, SPACE_MARK, 3) != 0)) return 0;
  }
  return 1;
}

static int byte_level_tables(loader *L)
{
  for (int b = 0; b < 256; b++) {
    char ch = (char)b;
    int64_t id;
    PTDP_CHECK(ptdp_strmap_get(&L->hf->vocab, &ch, 1, &id), "tokenizer file '%s': model.vocab lacks the one-byte "
               "token for byte 0x%02x (a byte-level BPE needs all 256 of GPT-2's byte alphabet)", L->path, b);
    L->t->byte_id[b] = (int32_t)id;
  }
  return 0;
}

static int load(loader *L, const char *text, size_t len, const char *dir)
{
  static const char *const names[] = {"model", "added_tokens", "normalizer", "pre_tokenizer", "decoder"};
  enum { MODEL, ADDED, NORMALIZER, PRE, DECODER, NF };
  const char *f[NF];
  size_t fl[NF];
  PTDP_CALL(get_fields(L, "the file", text, len, names, NF, f, fl));
  L->hf->byte_level = has_byte_level(f[PRE], fl[PRE]);
  PTDP_CALL(read_pre_tokenizer(L, f[PRE], fl[PRE]));
  PTDP_CALL(read_normalizer(L, f[NORMALIZER], fl[NORMALIZER]));
  PTDP_CHECK(!L->hf->byte_level || (!L->hf->prepend && !L->hf->repl_from), "tokenizer file '%s': a Prepend or "
             "Replace normalizer with a ByteLevel pre-tokenizer is not supported", L->path);
  L->max_id = -1;
  PTDP_CALL(ptdp_strmap_init(&L->hf->vocab, 1 << 10) == 0 ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory"));
  PTDP_CALL(read_model(L, f[MODEL], fl[MODEL]));
  PTDP_CALL(read_added(L, f[ADDED], fl[ADDED]));
  /* ids need not be contiguous: converted tiktoken files put special tokens after a gap */
  PTDP_CALL(ptdp_bpe_fill_id_tables(L->t, L->path, &L->hf->vocab, L->max_id, 1));
  if (L->hf->byte_level) PTDP_CALL(byte_level_tables(L));
  else PTDP_CALL(sp_decode_tables(L->t));
  if (!L->hf->byte_level && decoder_strips(f[DECODER], fl[DECODER])) L->hf->strip_space = 1;
  if (!L->hf->byte_level) L->hf->sp_cut = can_cut(L->hf) && !getenv("PTDP_TOKENIZER_NO_CUT");
  PTDP_CALL(find_eod(L, dir));
  return 0;
}

int ptdp_hf_round_trips(const hf_tables *hf)
{
  if (!hf->byte_level || hf->nfc) return 0; /* NFC changes text that is not in NFC */
  for (size_t i = 0; i < hf->nsteps; i++) /* ByteLevel's prefix space is kept by its decoder */
    if (hf->steps[i].removed || hf->steps[i].prefix_space) return 0;
  for (size_t i = 0; i < hf->nadded; i++)
    if (hf->added[i].lstrip || hf->added[i].rstrip) return 0;
  return 1;
}

void ptdp_hf_tables_free(hf_tables *hf)
{
  if (!hf) return;
  ptdp_strmap_free(&hf->vocab);
  free(hf->prepend);
  free(hf->repl_from);
  free(hf->repl_to);
  for (size_t i = 0; i < hf->nsteps; i++) ptdp_regex_free(&hf->steps[i].re);
  free(hf->steps);
  for (size_t i = 0; i < hf->nadded; i++) free(hf->added[i].content);
  free(hf->added);
  free(hf);
}

int ptdp_tokenizer_create_hf(ptdp_tokenizer **tok, const char *path)
{
  *tok = NULL;
  PTDP_CHECK(path && *path, "HuggingFaceTokenizer needs a tokenizer.json file (--tokenizer-model)");
  /* a directory stands for its tokenizer.json, as Megatron's AutoTokenizer takes a directory */
  char file[4096], dir[4096];
  struct stat st;
  int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
  int fn = snprintf(file, sizeof file, is_dir ? "%s/tokenizer.json" : "%s", path);
  PTDP_CHECK(fn > 0 && (size_t)fn < sizeof file, "the tokenizer path '%.200s...' is too long", path);
  snprintf(dir, sizeof dir, "%s", is_dir ? path : file);
  if (!is_dir) {
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
  }
  char *text;
  size_t len;
  PTDP_CALL(ptdp_bpe_read_file(file, "tokenizer file", &text, &len));
  bpe_tables *t = calloc(1, sizeof *t);
  loader *L = calloc(1, sizeof *L);
  if (t) t->hf = calloc(1, sizeof *t->hf);
  if (!t || !L || !t->hf) {
    free(text);
    free(L);
    if (t) free(t->hf);
    free(t);
    PTDP_CHECK(0, "out of memory");
  }
  t->is_hf = 1;
  t->refs = 1;
  L->path = file;
  L->t = t;
  L->hf = t->hf;
  uint32_t byte_to_cp[256];
  ptdp_bpe_byte_alphabet(byte_to_cp, L->cp_to_byte);
  int rc = load(L, text, len, dir);
  free(text);
  ptdp_json_buf_free(&L->str);
  ptdp_json_buf_free(&L->str2);
  free(L);
  if (!rc) {
    t->refs = 0;
    rc = ptdp_bpe_tokenizer_new(tok, t);
  }
  if (rc) {
    t->refs = 1;
    ptdp_bpe_tables_free(t);
    return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  }
  return 0;
}
