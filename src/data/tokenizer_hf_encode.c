/* Encoding with a tokenizer.json (see tokenizer_hf.c), in Hugging Face's order:
 *   1. added tokens are found in the text (leftmost, longest first; lstrip / rstrip take the
 *      whitespace beside them, single_word wants no word character beside it) and become
 *      their ids; the text between them goes on:
 *   2. the normalizer (NFC, then Prepend, then Replace of a string: Llama 2's " " -> U+2581),
 *   3. the pre-tokenizer steps, each splitting every piece of the step before (Split with a
 *      pattern, GPT-2's pattern, ByteLevel's prefix space, Metaspace),
 *   4. BPE of each piece through the word cache (tokenizer_encode.c): with ignore_merges a
 *      piece that is a token is that token; otherwise the first symbols (bytes, or characters
 *      with byte fallback) are merged by rank, lowest first and leftmost among equals, one
 *      merge at a time with a heap, which is Hugging Face's order and O(m log m) for a piece
 *      of m symbols (a SentencePiece-style text without pre-tokenizer is one piece). */
#include "ptdp/error.h"
#include "ptdp/unicode.h"
#include "tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

#define SPACE_MARK "\xE2\x96\x81" /* U+2581 */

typedef struct {
  int32_t id, prev, next; /* prev/next: neighbouring live symbols, -1 none; id -1: merged away */
} symbol;

typedef struct {
  int32_t rank, pos, merged;
} candidate;

typedef struct {
  symbol *sym;
  size_t sym_cap;
  candidate *heap;
  size_t heap_n, heap_cap;
} hf_scratch;

void ptdp_hf_scratch_free(ptdp_tokenizer *tok)
{
  hf_scratch *s = tok->hf_scratch;
  if (!s) return;
  free(s->sym);
  free(s->heap);
  free(s);
  tok->hf_scratch = NULL;
}

/* ---------------------------------------------------------------- BPE with a heap */

static int before(const candidate *a, const candidate *b)
{
  return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static int heap_push(hf_scratch *s, candidate c)
{
  if (s->heap_n == s->heap_cap) {
    size_t cap = s->heap_cap ? 2 * s->heap_cap : 256;
    candidate *h = realloc(s->heap, cap * sizeof *h);
    PTDP_CHECK(h, "out of memory for BPE");
    s->heap = h;
    s->heap_cap = cap;
  }
  size_t i = s->heap_n++;
  while (i > 0 && before(&c, &s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->heap[i] = c;
  return 0;
}

static candidate heap_pop(hf_scratch *s)
{
  candidate top = s->heap[0], last = s->heap[--s->heap_n];
  size_t i = 0, n = s->heap_n;
  while (2 * i + 1 < n) {
    size_t c = 2 * i + 1;
    if (c + 1 < n && before(&s->heap[c + 1], &s->heap[c])) c++;
    if (!before(&s->heap[c], &last)) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (n) s->heap[i] = last;
  return top;
}

/* Queue the merge of the live symbol at pos with its right neighbour, if there is one. */
static int queue_pair(const bpe_tables *t, hf_scratch *s, int32_t pos)
{
  if (pos < 0 || s->sym[pos].next < 0) return 0;
  const merge_slot *m = ptdp_bpe_merge_find(t, s->sym[pos].id, s->sym[s->sym[pos].next].id);
  if (!m) return 0;
  return heap_push(s, (candidate){m->rank, pos, m->merged});
}

static int add_symbol(hf_scratch *s, size_t *m, int32_t id)
{
  if (*m == s->sym_cap) {
    size_t cap = s->sym_cap ? 2 * s->sym_cap : 256;
    symbol *y = realloc(s->sym, cap * sizeof *y);
    PTDP_CHECK(y, "out of memory for BPE");
    s->sym = y;
    s->sym_cap = cap;
  }
  s->sym[*m] = (symbol){id, (int32_t)*m - 1, -1};
  if (*m) s->sym[*m - 1].next = (int32_t)*m;
  (*m)++;
  return 0;
}

/* The first symbols of a SentencePiece-style piece: each character's token, else its bytes'
 * <0xNN> tokens (byte_fallback), else the unknown token (consecutive ones fused with fuse_unk),
 * else nothing, as Hugging Face's BPE does. */
static int sp_symbols(const bpe_tables *t, hf_scratch *s, const unsigned char *p, size_t len, size_t *m)
{
  const hf_tables *hf = t->hf;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t cl = (size_t)ptdp_utf8_decode(p + i, len - i, &cp);
    int64_t id;
    if (ptdp_strmap_get(&hf->vocab, (const char *)p + i, cl, &id)) {
      PTDP_CALL(add_symbol(s, m, (int32_t)id));
    } else {
      int all = hf->byte_fallback;
      for (size_t k = 0; k < cl && all; k++) all = hf->byte_fb[p[i + k]] >= 0;
      if (all) {
        for (size_t k = 0; k < cl; k++) PTDP_CALL(add_symbol(s, m, hf->byte_fb[p[i + k]]));
      } else if (hf->unk >= 0 && !(hf->fuse_unk && *m > 0 && s->sym[*m - 1].id == hf->unk)) {
        PTDP_CALL(add_symbol(s, m, hf->unk));
      }
    }
    i += cl;
  }
  return 0;
}

int ptdp_hf_bpe_piece(ptdp_tokenizer *tok, const unsigned char *p, size_t len, ptdp_token_buf *out)
{
  const bpe_tables *t = tok->t;
  const hf_tables *hf = t->hf;
  if (hf->ignore_merges) {
    int64_t id;
    if (ptdp_strmap_get(&hf->vocab, (const char *)p, len, &id)) return ptdp_token_buf_push(out, (int32_t)id);
  }
  if (!tok->hf_scratch) PTDP_CALLOC(tok->hf_scratch, 1, sizeof(hf_scratch));
  hf_scratch *s = tok->hf_scratch;
  size_t m = 0;
  if (hf->byte_level) {
    for (size_t i = 0; i < len; i++) PTDP_CALL(add_symbol(s, &m, t->byte_id[p[i]]));
  } else {
    PTDP_CALL(sp_symbols(t, s, p, len, &m));
  }
  s->heap_n = 0;
  for (size_t i = 0; i + 1 < m; i++) PTDP_CALL(queue_pair(t, s, (int32_t)i));
  while (s->heap_n) {
    candidate c = heap_pop(s);
    symbol *a = &s->sym[c.pos];
    if (a->id < 0 || a->next < 0) continue; /* merged away, or no right neighbour any more */
    symbol *b = &s->sym[a->next];
    const merge_slot *ms = ptdp_bpe_merge_find(t, a->id, b->id);
    if (!ms || ms->merged != c.merged) continue; /* the pair changed since it was queued */
    a->id = c.merged;
    b->id = -1;
    a->next = b->next;
    if (b->next >= 0) s->sym[b->next].prev = c.pos;
    PTDP_CALL(queue_pair(t, s, a->prev));
    PTDP_CALL(queue_pair(t, s, c.pos));
  }
  for (int32_t i = m ? 0 : -1; i >= 0; i = s->sym[i].next) PTDP_CALL(ptdp_token_buf_push(out, s->sym[i].id));
  return 0;
}

/* ---------------------------------------------------------------- pre-tokenizer steps */

static int run_steps(ptdp_tokenizer *tok, size_t k, const unsigned char *p, size_t len, int first,
                     ptdp_token_buf *out);

/* Metaspace: spaces become U+2581, U+2581 is put in front (always, or for the text's first
 * piece only), and with split the piece is cut before each U+2581. */
static int metaspace(ptdp_tokenizer *tok, size_t k, const unsigned char *p, size_t len, int first,
                     ptdp_token_buf *out)
{
  const hf_step *st = &tok->t->hf->steps[k];
  unsigned char *b;
  PTDP_ALLOC(b, 3 * len + 4);
  size_t n = 0;
  int starts = len >= 3 && memcmp(p, SPACE_MARK, 3) == 0;
  if ((st->prepend == 2 || (st->prepend == 1 && first)) && !starts && !(len && p[0] == ' '))
    memcpy(b, SPACE_MARK, 3), n = 3;
  for (size_t i = 0; i < len; i++) {
    if (p[i] == ' ') memcpy(b + n, SPACE_MARK, 3), n += 3;
    else b[n++] = p[i];
  }
  int rc = 0;
  size_t start = 0;
  for (size_t i = 1; st->split && i + 3 <= n && !rc; i++)
    if (memcmp(b + i, SPACE_MARK, 3) == 0) {
      rc = run_steps(tok, k + 1, b + start, i - start, first && start == 0, out);
      start = i;
    }
  if (!rc && n > start) rc = run_steps(tok, k + 1, b + start, n - start, first && start == 0, out);
  free(b);
  return rc;
}

static int split_step(ptdp_tokenizer *tok, size_t k, const unsigned char *p, size_t len, int first,
                      ptdp_token_buf *out)
{
  const hf_step *st = &tok->t->hf->steps[k];
  if (st->kind == HF_SPLIT_GPT2) {
    for (size_t i = 0; i < len;) {
      size_t e = ptdp_gpt2_piece_end(p, len, i);
      PTDP_CALL(run_steps(tok, k + 1, p + i, e - i, first && i == 0, out));
      i = e;
    }
    return 0;
  }
  size_t i = 0, ms, me;
  while (i < len) {
    int r = ptdp_regex_search(st->re, &tok->rx, p, len, i, &ms, &me);
    PTDP_CHECK(r != -2, "the tokenizer's split pattern backtracks too much on a piece of %zu bytes (at byte %zu of "
               "it): a pattern such as (a|a)*b cannot be used", len, i);
    PTDP_CHECK(r >= 0, "out of memory matching the split pattern");
    if (!r) break;
    if (ms > i) PTDP_CALL(run_steps(tok, k + 1, p + i, ms - i, first && i == 0, out));
    if (!st->removed) PTDP_CALL(run_steps(tok, k + 1, p + ms, me - ms, first && ms == 0, out));
    i = me;
  }
  if (i < len) PTDP_CALL(run_steps(tok, k + 1, p + i, len - i, first && i == 0, out));
  return 0;
}

static int run_steps(ptdp_tokenizer *tok, size_t k, const unsigned char *p, size_t len, int first,
                     ptdp_token_buf *out)
{
  const hf_tables *hf = tok->t->hf;
  if (len == 0) return 0;
  if (k == hf->nsteps && hf->sp_cut) {
    size_t start = 0;
    for (size_t i = 3; i + 3 <= len; i++)
      if (memcmp(p + i, SPACE_MARK, 3) == 0 && memcmp(p + i - 3, SPACE_MARK, 3) != 0) {
        PTDP_CALL(ptdp_tokenizer_encode_piece(tok, p + start, i - start, out));
        start = i;
      }
    return ptdp_tokenizer_encode_piece(tok, p + start, len - start, out);
  }
  if (k == hf->nsteps) return ptdp_tokenizer_encode_piece(tok, p, len, out);
  const hf_step *st = &hf->steps[k];
  if (st->kind == HF_METASPACE) return metaspace(tok, k, p, len, first, out);
  if ((st->kind == HF_BYTE_LEVEL || st->kind == HF_SPLIT_GPT2) && st->prefix_space && p[0] != ' ') {
    /* ByteLevel's add_prefix_space: a space in front of every piece that lacks one */
    unsigned char *b;
    PTDP_ALLOC(b, len + 1);
    b[0] = ' ';
    memcpy(b + 1, p, len);
    int rc = st->kind == HF_BYTE_LEVEL ? run_steps(tok, k + 1, b, len + 1, first, out)
                                       : split_step(tok, k, b, len + 1, first, out);
    free(b);
    return rc;
  }
  if (st->kind == HF_BYTE_LEVEL) return run_steps(tok, k + 1, p, len, first, out);
  return split_step(tok, k, p, len, first, out);
}

/* ---------------------------------------------------------------- normalizer */

static int prepend_replace(ptdp_tokenizer *tok, const unsigned char *p, size_t len, int first, ptdp_token_buf *out);

/* NFC first (ASCII is its own NFC), then Prepend and Replace, then the pre-tokenizer steps. */
static int normalize_and_split(ptdp_tokenizer *tok, const unsigned char *p, size_t len, int first,
                               ptdp_token_buf *out)
{
  const hf_tables *hf = tok->t->hf;
  if (len == 0) return 0;
  size_t i = 0;
  while (hf->nfc && i < len && p[i] < 0x80) i++;
  if (!hf->nfc || i == len) return prepend_replace(tok, p, len, first, out);
  unsigned char *norm;
  size_t nn;
  PTDP_CHECK(ptdp_utf8_nfc(p, len, &norm, &nn) == 0, "out of memory normalizing %zu bytes (NFC)", len);
  int rc = prepend_replace(tok, norm, nn, first, out);
  free(norm);
  return rc;
}

static int prepend_replace(ptdp_tokenizer *tok, const unsigned char *p, size_t len, int first, ptdp_token_buf *out)
{
  const hf_tables *hf = tok->t->hf;
  if (len == 0) return 0;
  if (!hf->prepend && !hf->repl_from) return run_steps(tok, 0, p, len, first, out);
  /* Prepend, then Replace over the result (Llama 2's order; the prefix U+2581 has no space) */
  size_t sn = hf->prepend_len + len, grow = hf->repl_to_len > hf->repl_from_len ? hf->repl_to_len : 1;
  unsigned char *src, *b;
  PTDP_ALLOC(src, sn + 1);
  b = malloc(sn * grow + 1);
  if (!b) {
    free(src);
    PTDP_CHECK(0, "out of memory normalizing %zu bytes", len);
  }
  if (hf->prepend_len) memcpy(src, hf->prepend, hf->prepend_len);
  memcpy(src + hf->prepend_len, p, len);
  size_t n = 0;
  for (size_t i = 0; i < sn;) {
    if (hf->repl_from && sn - i >= hf->repl_from_len && memcmp(src + i, hf->repl_from, hf->repl_from_len) == 0) {
      memcpy(b + n, hf->repl_to, hf->repl_to_len);
      n += hf->repl_to_len;
      i += hf->repl_from_len;
    } else {
      b[n++] = src[i++];
    }
  }
  free(src);
  int rc = run_steps(tok, 0, b, n, first, out);
  free(b);
  return rc;
}

/* ---------------------------------------------------------------- added tokens */

static int is_word_byte(unsigned char c)
{
  return (c | 32) >= 'a' && (c | 32) <= 'z' ? 1 : (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

static int is_space_byte(unsigned char c) { return c == ' ' || (c >= 9 && c <= 13); }

/* The leftmost-longest added token at or after from: its id and the span it takes (with the
 * whitespace lstrip / rstrip take); 0 if none. */
static int find_added(const hf_tables *hf, const unsigned char *s, size_t n, size_t from, size_t *ms, size_t *me,
                      int32_t *id)
{
  for (size_t i = from; i < n; i++) {
    if (!((hf->added_first[s[i] >> 6] >> (s[i] & 63)) & 1u)) continue;
    const hf_added *best = NULL;
    for (size_t k = 0; k < hf->nadded; k++) {
      const hf_added *a = &hf->added[k];
      if (a->len > n - i || memcmp(s + i, a->content, a->len) != 0 || (best && best->len >= a->len)) continue;
      if (a->single_word && ((i > 0 && is_word_byte(s[i - 1])) || (i + a->len < n && is_word_byte(s[i + a->len]))))
        continue;
      best = a;
    }
    if (!best) continue;
    size_t a = i, b = i + best->len;
    if (best->lstrip)
      while (a > from && is_space_byte(s[a - 1])) a--;
    if (best->rstrip)
      while (b < n && is_space_byte(s[b])) b++;
    *ms = a, *me = b, *id = best->id;
    return 1;
  }
  return 0;
}

int ptdp_hf_encode_append(ptdp_tokenizer *tok, const unsigned char *s, size_t n, ptdp_token_buf *out)
{
  const hf_tables *hf = tok->t->hf;
  size_t pos = 0, ms, me;
  int32_t id;
  while (hf->nadded && find_added(hf, s, n, pos, &ms, &me, &id)) {
    PTDP_CALL(normalize_and_split(tok, s + pos, ms - pos, pos == 0, out));
    PTDP_CALL(ptdp_token_buf_push(out, id));
    pos = me;
  }
  PTDP_CALL(normalize_and_split(tok, s + pos, n - pos, pos == 0, out));
  return 0;
}
