/* ptdp-preprocess internals (see preprocess.h). */
#include "preprocess.h"

#include "json.h"
#include "ptdp/error.h"
#include "unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pp_state_create(pp_state *st, const pp_args *a, ptdp_tokenizer *tok)
{
  memset(st, 0, sizeof *st);
  st->a = a;
  st->dtype = ptdp_mmidx_dtype_for_vocab(ptdp_tokenizer_vocab_size(tok));
  st->eod = ptdp_tokenizer_eod(tok);
  PTDP_CALLOC(st->slices, (size_t)a->workers, sizeof *st->slices);
  for (int t = 0; t < a->workers; t++) {
    st->slices[t].st = st;
    PTDP_CALL(ptdp_tokenizer_clone(tok, &st->slices[t].tok));
  }
  PTDP_CALLOC(st->docs, PP_ROUND_DOCS, sizeof *st->docs);
  PTDP_CALLOC(st->lens, (size_t)PP_ROUND_DOCS * (size_t)a->nkeys, sizeof *st->lens);
  PTDP_CALLOC(st->bad, PP_ROUND_DOCS, sizeof *st->bad);
  for (int k = 0; k < a->nkeys; k++) {
    size_t n = strlen(a->output_prefix) + strlen(a->keys[k]) + 32;
    char *bin = malloc(n), *idx = malloc(n);
    if (!bin || !idx) free(bin), free(idx);
    PTDP_CHECK(bin && idx, "out of memory");
    snprintf(bin, n, "%s_%s_document.bin", a->output_prefix, a->keys[k]);
    snprintf(idx, n, "%s_%s_document.idx", a->output_prefix, a->keys[k]);
    int rc = ptdp_mmidx_writer_open(&st->writers[k], bin, idx, st->dtype);
    free(bin);
    free(idx);
    PTDP_CALL(rc);
  }
  return 0;
}

void pp_state_destroy(pp_state *st)
{
  for (int k = 0; k < PP_MAX_KEYS; k++) ptdp_mmidx_writer_abort(&st->writers[k]);
  if (st->slices)
    for (int t = 0; t < st->a->workers; t++) {
      ptdp_tokenizer_destroy(&st->slices[t].tok);
      for (int k = 0; k < PP_MAX_KEYS; k++) ptdp_token_buf_free(&st->slices[t].tokens[k]);
    }
  if (st->bad)
    for (size_t d = 0; d < PP_ROUND_DOCS; d++) free(st->bad[d]);
  free(st->slices);
  free(st->docs);
  free(st->lens);
  free(st->bad);
  memset(st, 0, sizeof *st);
}

int pp_state_finish(pp_state *st)
{
  for (int k = 0; k < st->a->nkeys; k++) PTDP_CALL(ptdp_mmidx_writer_finish(&st->writers[k]));
  return 0;
}

static int blank(const unsigned char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
  return 1;
}

/* jsonl: every line that is not blank is a document.  text: a document is a block of
 * non-blank lines; blank lines (only spaces, tabs, CR) separate documents.  A document ends
 * before the newline (and CR) of its last line. */
size_t pp_cut_round(pp_state *st, const unsigned char *in, size_t n, size_t pos, size_t *ndocs)
{
  size_t bytes = 0;
  st->ndocs = 0;
  while (pos < n && st->ndocs < PP_ROUND_DOCS && bytes < PP_ROUND_BYTES) {
    const unsigned char *nl = memchr(in + pos, '\n', n - pos);
    size_t e = nl ? (size_t)(nl - in) : n; /* end of this line */
    st->line++;
    if (blank(in + pos, e - pos)) {
      pos = e + 1;
      continue;
    }
    pp_doc *d = &st->docs[st->ndocs++];
    d->text = in + pos;
    d->line = st->line;
    if (st->a->text_input) { /* extend over following non-blank lines */
      while (e < n) {
        const unsigned char *nl2 = memchr(in + e + 1, '\n', n - e - 1);
        size_t e2 = nl2 ? (size_t)(nl2 - in) : n;
        if (e + 1 >= n || blank(in + e + 1, e2 - e - 1)) break;
        st->line++;
        e = e2;
      }
    }
    d->len = (size_t)(in + e - d->text);
    if (d->len && d->text[d->len - 1] == '\r') d->len--;
    bytes += d->len;
    pos = e < n ? e + 1 : n;
  }
  *ndocs = st->ndocs;
  return pos;
}

typedef struct {
  const pp_args *a;
  const char *val[PP_MAX_KEYS];
  size_t val_len[PP_MAX_KEYS];
} key_ctx;

static int take_key(void *p, const char *key, size_t key_len, const char *val, size_t val_len)
{
  key_ctx *c = p;
  for (int k = 0; k < c->a->nkeys; k++)
    if (strlen(c->a->keys[k]) == key_len && memcmp(c->a->keys[k], key, key_len) == 0)
      c->val[k] = val, c->val_len[k] = val_len; /* a repeated key: the last one wins, as in Python */
  return 0;
}

static char *bad_message(const char *fmt, long long line, const char *what, const char *detail)
{
  char buf[400];
  snprintf(buf, sizeof buf, fmt, line, what, detail);
  return strdup(buf);
}

/* Encode one document; a bad document gets st->bad[d] set, and contributes no tokens. */
static int encode_doc(pp_slice *s, size_t d, ptdp_json_buf *jb)
{
  pp_state *st = s->st;
  const pp_args *a = st->a;
  const pp_doc *doc = &st->docs[d];
  const char *texts[PP_MAX_KEYS];
  size_t lens[PP_MAX_KEYS];
  char *owned[PP_MAX_KEYS] = {0};
  if (a->text_input) {
    texts[0] = (const char *)doc->text;
    lens[0] = doc->len;
  } else {
    key_ctx c = {.a = a};
    ptdp_json_error err;
    if (ptdp_json_object_each((const char *)doc->text, doc->len, take_key, &c, &err)) {
      char pos[64];
      snprintf(pos, sizeof pos, " (at byte %zu of the line)", err.at + 1);
      st->bad[d] = bad_message("line %lld: malformed JSON: %s%s", (long long)doc->line, err.msg, pos);
      return 0;
    }
    for (int k = 0; k < a->nkeys; k++) {
      if (!c.val[k]) {
        st->bad[d] = bad_message("line %lld: key '%s' is missing%s", (long long)doc->line, a->keys[k], "");
        break;
      }
      int r = ptdp_json_string_value(c.val[k], c.val_len[k], jb, &err);
      if (r) {
        st->bad[d] = bad_message(r > 0 ? "line %lld: key '%s' is not a string%s" : "line %lld: key '%s': %s",
                                 (long long)doc->line, a->keys[k], r > 0 ? "" : err.msg);
        break;
      }
      owned[k] = malloc(jb->len + 1);
      if (!owned[k]) break;
      memcpy(owned[k], jb->data, jb->len);
      texts[k] = owned[k];
      lens[k] = jb->len;
    }
  }
  int rc = 0;
  for (int k = 0; k < a->nkeys && !st->bad[d] && !rc; k++) {
    if (!a->text_input && !owned[k]) {
      rc = ptdp_error_push(PTDP_ERR_MEM, __FILE__, __LINE__, __func__, "out of memory");
      break;
    }
    size_t n0 = s->tokens[k].n;
    rc = ptdp_tokenizer_encode_append(s->tok, texts[k], lens[k], &s->tokens[k]);
    if (!rc && a->append_eod && s->tokens[k].n > n0) rc = ptdp_token_buf_push(&s->tokens[k], st->eod);
    st->lens[d * (size_t)a->nkeys + (size_t)k] = (int64_t)(s->tokens[k].n - n0);
  }
  if (st->bad[d]) /* drop any keys already encoded */
    for (int k = 0; k < a->nkeys; k++) s->tokens[k].n -= (size_t)st->lens[d * (size_t)a->nkeys + (size_t)k];
  for (int k = 0; k < a->nkeys; k++) free(owned[k]);
  return rc;
}

int pp_encode_slice(pp_slice *s)
{
  ptdp_json_buf jb = {0};
  int rc = 0;
  for (int k = 0; k < s->st->a->nkeys; k++) s->tokens[k].n = 0;
  for (size_t d = s->d0; d < s->d1 && !rc; d++) {
    for (int k = 0; k < s->st->a->nkeys; k++) s->st->lens[d * (size_t)s->st->a->nkeys + (size_t)k] = 0;
    rc = encode_doc(s, d, &jb);
  }
  ptdp_json_buf_free(&jb);
  return rc;
}

int pp_write_round(pp_state *st, int nslices)
{
  const pp_args *a = st->a;
  int rc = 0;
  for (int t = 0; t < nslices && !rc; t++) {
    pp_slice *s = &st->slices[t];
    if (s->rc) {
      rc = s->rc;
      break;
    }
    size_t off[PP_MAX_KEYS] = {0};
    for (size_t d = s->d0; d < s->d1 && !rc; d++) {
      if (st->bad[d]) {
        if (!a->skip_bad_lines) {
          rc = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "input '%s' %s (use --skip-bad-lines to skip such lines)",
                               a->input, st->bad[d]);
          break;
        }
        if (st->bad_lines < 10) fprintf(stderr, "ptdp-preprocess: skipping %s\n", st->bad[d]);
        st->bad_lines++;
        continue;
      }
      for (int k = 0; k < a->nkeys && !rc; k++) {
        size_t len = (size_t)st->lens[d * (size_t)a->nkeys + (size_t)k];
        /* Megatron: a document with no tokens is a document with no sequences */
        if (len) rc = ptdp_mmidx_writer_add_sequence(st->writers[k], s->tokens[k].ids + off[k], len);
        if (!rc) rc = ptdp_mmidx_writer_end_document(st->writers[k]);
        off[k] += len;
        if (k == 0) st->tokens_done += (long long)len;
      }
      st->docs_done++;
    }
  }
  for (size_t d = 0; d < st->ndocs; d++) {
    free(st->bad[d]);
    st->bad[d] = NULL;
  }
  if (rc) return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  return 0;
}
