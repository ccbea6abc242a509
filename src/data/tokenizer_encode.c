/* Encoding and decoding (see include/ptdp/tokenizer.h): GPT-2's pre-tokenising pattern as a
 * hand-written matcher, BPE by merge rank over token ids, a per-tokenizer word cache. */
#include "ptdp/checked.h"
#include "ptdp/error.h"
#include "ptdp/unicode.h"
#include "tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

int ptdp_token_buf_push(ptdp_token_buf *b, int32_t id)
{
  int32_t *ids = ptdp_grow(b->ids, &b->cap, b->n + 1, sizeof *ids, 1024);
  PTDP_CHECK(ids, "out of memory growing a token buffer past %zu ids", b->cap);
  b->ids = ids;
  b->ids[b->n++] = id;
  return 0;
}

void ptdp_token_buf_free(ptdp_token_buf *b)
{
  free(b->ids);
  b->ids = NULL;
  b->n = b->cap = 0;
}

/* Class and byte length of the character at s[i] (an ill-formed byte is one OTHER). */
static ptdp_uc_class class_at(const unsigned char *s, size_t n, size_t i, size_t *len)
{
  if (s[i] < 0x80) {
    *len = 1;
    return ptdp_uc_classify(s[i]);
  }
  uint32_t cp;
  *len = (size_t)ptdp_utf8_decode(s + i, n - i, &cp);
  return ptdp_uc_classify(cp);
}

/* End of the piece that GPT-2's pattern matches at s[i] (i < n), trying its alternatives in
 * order as the regex engine does:
 *   's|'t|'re|'ve|'m|'ll|'d        contractions (ASCII apostrophe, lower case)
 *    ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+    a run of one class, after an optional ' '
 *   \s+(?!\S)                       whitespace not followed by non-space: a run reaching the
 *                                   end, or a run of >= 2 minus its last character
 *   \s+                             otherwise (one whitespace character before non-space) */
size_t ptdp_gpt2_piece_end(const unsigned char *s, size_t n, size_t i)
{
  if (s[i] == '\'' && i + 1 < n) {
    unsigned char a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      unsigned char b = s[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
  }
  size_t len, j = i;
  ptdp_uc_class c = class_at(s, n, i, &len);
  if (s[i] == ' ' && i + 1 < n) {
    size_t len2;
    ptdp_uc_class c2 = class_at(s, n, i + 1, &len2);
    if (c2 != PTDP_UC_SPACE) c = c2, j = i + 1, len = len2;
  }
  if (c != PTDP_UC_SPACE) { /* a run of letters, numbers or others */
    j += len;
    while (j < n && class_at(s, n, j, &len) == c) j += len;
    return j;
  }
  size_t last = i; /* start of the run's last whitespace character */
  j = i;
  while (j < n && class_at(s, n, j, &len) == PTDP_UC_SPACE) last = j, j += len;
  if (j == n || last == i) return j;
  return last;
}

/* BPE-merge one piece into ids appended to out (no cache). */
static int bpe_piece(ptdp_tokenizer *tok, const unsigned char *p, size_t len, ptdp_token_buf *out)
{
  const bpe_tables *t = tok->t;
  if (len > tok->work_cap) {
    int32_t *w = realloc(tok->work, len * sizeof *w);
    PTDP_CHECK(w, "out of memory for a %zu-byte word", len);
    tok->work = w;
    tok->work_cap = len;
  }
  int32_t *w = tok->work;
  size_t m = len;
  for (size_t i = 0; i < len; i++) w[i] = t->byte_id[p[i]];
  /* Repeatedly merge every occurrence (left to right, not overlapping) of the adjacent pair
   * with the lowest rank, as GPT-2's bpe() does. */
  while (m > 1) {
    int32_t best = INT32_MAX, a = 0, b = 0, merged = 0;
    for (size_t i = 0; i + 1 < m; i++) {
      const merge_slot *ms = ptdp_bpe_merge_find(t, w[i], w[i + 1]);
      if (ms && ms->rank < best) best = ms->rank, a = w[i], b = w[i + 1], merged = ms->merged;
    }
    if (best == INT32_MAX) break;
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
      if (i + 1 < m && w[i] == a && w[i + 1] == b) {
        w[k++] = merged;
        i++;
      } else {
        w[k++] = w[i];
      }
    }
    m = k;
  }
  for (size_t i = 0; i < m; i++) PTDP_CALL(ptdp_token_buf_push(out, w[i]));
  return 0;
}

/* Bytes the cache would hold after caching one more piece of len bytes with cnt ids. */
static size_t cache_bytes_after(const ptdp_tokenizer *tok, size_t len, size_t cnt)
{
  size_t cap = tok->cache_cap;
  if (tok->cache_n + cnt + 1 > cap) {
    if (!cap) cap = 1 << 16;
    while (cap < tok->cache_n + cnt + 1) cap *= 2;
  }
  return ptdp_strmap_bytes_after_put(&tok->cache, len) + cap * sizeof(int32_t);
}

/* Cache the ids ids[0..cnt) of the piece p[0..len), emptying the cache first when it would
 * outgrow its limit.  The test is on what would be allocated, not on what is allocated now:
 * emptying keeps the memory, so a test on the allocation would empty the cache on every new
 * piece once it had reached the limit once. */
static int cache_put(ptdp_tokenizer *tok, const unsigned char *p, size_t len, const int32_t *ids, size_t cnt)
{
  if (cache_bytes_after(tok, len, cnt) > tok->cache_limit && tok->stats.words > 0) {
    ptdp_strmap_clear(&tok->cache);
    tok->cache_n = 0;
    tok->stats.words = 0;
    tok->stats.resets++;
    /* emptied, the cache grows again only if one piece alone exceeds the limit */
  }
  if (tok->cache_n + cnt + 1 > tok->cache_cap) {
    size_t cap = tok->cache_cap ? 2 * tok->cache_cap : 1 << 16;
    while (cap < tok->cache_n + cnt + 1) cap *= 2;
    int32_t *c = realloc(tok->cache_ids, cap * sizeof *c);
    PTDP_CHECK(c, "out of memory growing the word cache");
    tok->cache_ids = c;
    tok->cache_cap = cap;
  }
  int64_t at = (int64_t)tok->cache_n;
  tok->cache_ids[tok->cache_n++] = (int32_t)cnt;
  memcpy(tok->cache_ids + tok->cache_n, ids, cnt * sizeof(int32_t));
  tok->cache_n += cnt;
  PTDP_CHECK(ptdp_strmap_put(&tok->cache, (const char *)p, len, at) == 0, "out of memory growing the word cache");
  tok->stats.words++;
  return 0;
}

/* Encode one piece through the cache. */
int ptdp_tokenizer_encode_piece(ptdp_tokenizer *tok, const unsigned char *p, size_t len, ptdp_token_buf *out)
{
  if (len == 1 && tok->t->byte_id[p[0]] >= 0) return ptdp_token_buf_push(out, tok->t->byte_id[p[0]]);
  /* tokenizer.json: a long piece (a SentencePiece-style text has no pre-tokenizer: the whole
   * text is one piece) is merged without filling the cache with it */
  if (tok->t->is_hf && len > 256) return ptdp_hf_bpe_piece(tok, p, len, out);
  tok->stats.lookups++;
  int64_t off;
  if (ptdp_strmap_get(&tok->cache, (const char *)p, len, &off)) {
    int32_t cnt = tok->cache_ids[off];
    for (int32_t k = 0; k < cnt; k++) PTDP_CALL(ptdp_token_buf_push(out, tok->cache_ids[off + 1 + k]));
    return 0;
  }
  tok->stats.misses++;
  size_t n0 = out->n;
  if (tok->t->is_hf) PTDP_CALL(ptdp_hf_bpe_piece(tok, p, len, out));
  else PTDP_CALL(bpe_piece(tok, p, len, out));
  PTDP_CALL(cache_put(tok, p, len, out->ids + n0, out->n - n0));
  return 0;
}

int ptdp_tokenizer_set_cache_limit(ptdp_tokenizer *tok, size_t bytes)
{
  /* below its first allocation (about 350 KiB) a cache would be emptied at every new piece */
  PTDP_CHECK(bytes >= ((size_t)1 << 20), "the word cache limit must be at least 1 MiB, not %zu bytes", bytes);
  tok->cache_limit = bytes;
  return 0;
}

void ptdp_tokenizer_get_cache_stats(const ptdp_tokenizer *tok, ptdp_tokenizer_cache_stats *stats)
{
  *stats = tok->stats;
  stats->bytes = ptdp_strmap_bytes(&tok->cache) + tok->cache_cap * sizeof(int32_t);
  stats->limit = tok->cache_limit;
}

int ptdp_tokenizer_encode_append(ptdp_tokenizer *tok, const char *bytes, size_t n, ptdp_token_buf *out)
{
  const unsigned char *s = (const unsigned char *)bytes;
  if (tok->t->is_bytes) {
    for (size_t i = 0; i < n; i++) PTDP_CALL(ptdp_token_buf_push(out, s[i]));
    return 0;
  }
  if (tok->t->is_hf) return ptdp_hf_encode_append(tok, s, n, out);
  size_t i = 0;
  while (i < n) {
    size_t e = ptdp_gpt2_piece_end(s, n, i);
    PTDP_CALL(ptdp_tokenizer_encode_piece(tok, s + i, e - i, out));
    i = e;
  }
  return 0;
}

int ptdp_tokenizer_encode(ptdp_tokenizer *tok, const char *bytes, size_t n, int32_t **ids, size_t *nids)
{
  ptdp_token_buf b = {0};
  int rc = ptdp_tokenizer_encode_append(tok, bytes, n, &b);
  if (rc) {
    ptdp_token_buf_free(&b);
    return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  }
  *ids = b.ids;
  *nids = b.n;
  return 0;
}

int ptdp_tokenizer_decode(const ptdp_tokenizer *tok, const int32_t *ids, size_t n, char **bytes, size_t *nbytes)
{
  const bpe_tables *t = tok->t;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    PTDP_CHECK(ids[i] >= 0 && ids[i] < t->vocab_size, "token id %d at position %zu is outside the vocabulary [0, %d)",
               (int)ids[i], i, (int)t->vocab_size);
    total += t->is_bytes ? (ids[i] < 256) : (size_t)t->tok_len[ids[i]];
  }
  char *d;
  PTDP_ALLOC(d, total + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (t->is_bytes) {
      if (ids[i] < 256) d[k++] = (char)ids[i];
    } else {
      memcpy(d + k, t->tok_bytes + t->tok_off[ids[i]], (size_t)t->tok_len[ids[i]]);
      k += (size_t)t->tok_len[ids[i]];
    }
  }
  /* SentencePiece-style tokenizer.json: the space the normalizer put in front goes (Hugging
   * Face's Strip or Metaspace decoder) */
  if (t->is_hf && t->hf->strip_space && k > 0 && d[0] == ' ') {
    memmove(d, d + 1, k - 1);
    k--;
  }
  d[k] = '\0';
  *bytes = d;
  *nbytes = k;
  return 0;
}
