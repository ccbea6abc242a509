/* ptdp-preprocess internals (see preprocess.h). */
#include "preprocess.h"

#include "ptdp/checked.h"
#include "ptdp/error.h"
#include "ptdp/json.h"
#include "ptdp/unicode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pp_state_create(pp_state *st, const pp_args *a, ptdp_tokenizer *tok)
{
  memset(st, 0, sizeof *st);
  st->a = a;
  st->dtype = ptdp_mmidx_dtype_for_vocab(ptdp_tokenizer_vocab_size(tok));
  st->eod = ptdp_tokenizer_eod(tok);
  PTDP_CHECK(!a->append_eod || st->eod >= 0, "--append-eod: the tokenizer has no end-of-document token (none of "
             "<|end_of_text|>, <|endoftext|>, </s>, <eos>, and no eos_token in a tokenizer_config.json beside it)");
  PTDP_CALLOC(st->slices, (size_t)a->workers, sizeof *st->slices);
  for (int t = 0; t < a->workers; t++) {
    st->slices[t].st = st;
    PTDP_CALL(ptdp_tokenizer_clone(tok, &st->slices[t].tok));
  }
  PTDP_CALLOC(st->docs, PP_ROUND_DOCS, sizeof *st->docs);
  PTDP_CALLOC(st->nseq, (size_t)PP_ROUND_DOCS * (size_t)a->nkeys, sizeof *st->nseq);
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
      for (int k = 0; k < PP_MAX_KEYS; k++) {
        ptdp_token_buf_free(&st->slices[t].tokens[k]);
        free(st->slices[t].seqs[k].v);
      }
    }
  if (st->bad)
    for (size_t d = 0; d < PP_ROUND_DOCS; d++) free(st->bad[d]);
  free(st->slices);
  free(st->docs);
  free(st->nseq);
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

/* The end of the line that starts at pos: the index of its '\n', or n when it has none. */
static size_t line_end(const unsigned char *in, size_t n, size_t pos)
{
  const unsigned char *nl = pos < n ? memchr(in + pos, '\n', n - pos) : NULL;
  return nl ? (size_t)(nl - in) : n;
}

/* jsonl: every line that is not blank is a document.  text: a document is a block of
 * non-blank lines; blank lines (only spaces, tabs, CR) separate documents.  A document ends
 * before the newline (and CR) of its last line.  Before the end of the input, a line without
 * its newline is not yet whole, and a text document is whole only once the line after it is. */
size_t pp_cut_round(pp_state *st, const unsigned char *in, size_t n, size_t pos, int eof, size_t *ndocs)
{
  size_t bytes = 0;
  st->ndocs = 0;
  while (pos < n && st->ndocs < PP_ROUND_DOCS && bytes < PP_ROUND_BYTES) {
    size_t e = line_end(in, n, pos); /* end of this line */
    if (e == n && !eof) break;
    if (blank(in + pos, e - pos)) {
      st->line++;
      pos = e < n ? e + 1 : n;
      continue;
    }
    int64_t lines = 1;
    if (st->a->text_input) { /* extend over following non-blank lines */
      int whole = 1;
      while (e < n) {
        size_t e2 = line_end(in, n, e + 1);
        if (e2 == n && !eof) {
          whole = 0;
          break;
        }
        if (e + 1 >= n || blank(in + e + 1, e2 - e - 1)) break;
        lines++;
        e = e2;
      }
      if (!whole) break;
    }
    pp_doc *d = &st->docs[st->ndocs++];
    d->text = in + pos;
    d->line = st->line + 1;
    st->line += lines;
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

static char *bad_message(const char *fmt, ...)
{
  char buf[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return strdup(buf);
}

/* What a JSON value is, for messages. */
static const char *json_kind(const char *val)
{
  switch (val[0]) {
  case '"': return "a string";
  case '[': return "a list";
  case '{': return "an object";
  case 'n': return "null";
  case 't':
  case 'f': return "a boolean";
  default: return "a number";
  }
}

static int lens_push(pp_lens *l, int64_t v)
{
  int64_t *p = ptdp_grow(l->v, &l->cap, l->n + 1, sizeof *p, 1024);
  PTDP_CHECK(p, "out of memory for more than %zu sequence lengths", l->cap);
  l->v = p;
  l->v[l->n++] = v;
  return 0;
}

/* Encode text as the next sequence of key k in document d; no sequence when it has no tokens
 * (Megatron drops a sentence that tokenizes to nothing). */
static int encode_sequence(pp_slice *s, size_t d, int k, const char *text, size_t len)
{
  size_t n0 = s->tokens[k].n;
  PTDP_CALL(ptdp_tokenizer_encode_append(s->tok, text, len, &s->tokens[k]));
  if (s->tokens[k].n == n0) return 0;
  PTDP_CALL(lens_push(&s->seqs[k], (int64_t)(s->tokens[k].n - n0)));
  s->st->nseq[d * (size_t)s->st->a->nkeys + (size_t)k]++;
  return 0;
}

/* One document's key k while its list is walked. */
typedef struct {
  pp_slice *s;
  size_t d;
  int k, rc; /* rc: a failure other than bad input */
  ptdp_json_buf *jb;
} field_ctx;

/* One item of a list-valued field: a string, encoded as one sequence. */
static int take_item(void *p, size_t index, const char *item, size_t item_len)
{
  field_ctx *f = p;
  pp_state *st = f->s->st;
  const pp_doc *doc = &st->docs[f->d];
  const char *key = st->a->keys[f->k];
  ptdp_json_error err;
  int r = ptdp_json_string_value(item, item_len, f->jb, &err);
  if (r > 0)
    st->bad[f->d] = bad_message("line %lld: key '%s': item %zu of the list is %s, not a string",
                                (long long)doc->line, key, index + 1, json_kind(item));
  else if (r < 0)
    st->bad[f->d] = bad_message("line %lld: key '%s': item %zu: %s", (long long)doc->line, key, index + 1, err.msg);
  else
    f->rc = encode_sequence(f->s, f->d, f->k, f->jb->data, f->jb->len);
  return r || f->rc;
}

/* Encode the raw JSON value of key k: a string is one sequence, a list of strings one sequence
 * per item with tokens; with --append-eod the EOD joins the last sequence.  Anything else, or
 * a list item that is not a string, makes the document bad (Megatron stops on it). */
static int encode_field(pp_slice *s, size_t d, int k, const char *val, size_t val_len, ptdp_json_buf *jb)
{
  pp_state *st = s->st;
  const pp_doc *doc = &st->docs[d];
  const char *key = st->a->keys[k];
  ptdp_json_error err;
  if (val[0] == '"') {
    if (ptdp_json_string_value(val, val_len, jb, &err)) {
      st->bad[d] = bad_message("line %lld: key '%s': %s", (long long)doc->line, key, err.msg);
      return 0;
    }
    PTDP_CALL(encode_sequence(s, d, k, jb->data, jb->len));
  } else if (val[0] == '[') {
    field_ctx f = {.s = s, .d = d, .k = k, .rc = 0, .jb = jb};
    int r = ptdp_json_array_each(val, val_len, PTDP_JSON_KEYS_REPEAT, take_item, &f, &err);
    if (f.rc) return ptdp_error_trace(f.rc, __FILE__, __LINE__, __func__);
    if (r < 0) st->bad[d] = bad_message("line %lld: key '%s': %s", (long long)doc->line, key, err.msg);
    if (r) return 0;
  } else {
    st->bad[d] = bad_message("line %lld: key '%s' is %s, not a string or a list of strings", (long long)doc->line,
                             key, json_kind(val));
    return 0;
  }
  if (st->a->append_eod && st->nseq[d * (size_t)st->a->nkeys + (size_t)k] > 0) {
    PTDP_CALL(ptdp_token_buf_push(&s->tokens[k], st->eod));
    s->seqs[k].v[s->seqs[k].n - 1]++;
  }
  return 0;
}

/* Encode one document; a bad document gets st->bad[d] set, and contributes no tokens. */
static int encode_doc(pp_slice *s, size_t d, ptdp_json_buf *jb)
{
  pp_state *st = s->st;
  const pp_args *a = st->a;
  const pp_doc *doc = &st->docs[d];
  int64_t *nseq = st->nseq + d * (size_t)a->nkeys;
  size_t tok0[PP_MAX_KEYS], seq0[PP_MAX_KEYS];
  for (int k = 0; k < a->nkeys; k++) tok0[k] = s->tokens[k].n, seq0[k] = s->seqs[k].n, nseq[k] = 0;
  int rc = 0;
  if (a->text_input) {
    rc = encode_sequence(s, d, 0, (const char *)doc->text, doc->len);
    if (!rc && a->append_eod && nseq[0] > 0) {
      rc = ptdp_token_buf_push(&s->tokens[0], st->eod);
      s->seqs[0].v[s->seqs[0].n - 1]++;
    }
    return rc;
  }
  key_ctx c = {.a = a};
  ptdp_json_error err;
  if (ptdp_json_object_each((const char *)doc->text, doc->len, PTDP_JSON_KEYS_REPEAT, take_key, &c, &err)) {
    if (err.fault == PTDP_JSON_DUPLICATE_KEY) /* byte offsets from 0, in the line */
      st->bad[d] = bad_message("line %lld: %s of the line", (long long)doc->line, err.msg);
    else
      st->bad[d] = bad_message("line %lld: malformed JSON: %s (at byte %zu of the line)", (long long)doc->line,
                               err.msg, err.at + 1);
    return 0;
  }
  for (int k = 0; k < a->nkeys && !st->bad[d] && !rc; k++) {
    if (!c.val[k])
      st->bad[d] = bad_message("line %lld: key '%s' is missing", (long long)doc->line, a->keys[k]);
    else
      rc = encode_field(s, d, k, c.val[k], c.val_len[k], jb);
  }
  if (st->bad[d]) /* drop any keys already encoded */
    for (int k = 0; k < a->nkeys; k++) s->tokens[k].n = tok0[k], s->seqs[k].n = seq0[k], nseq[k] = 0;
  return rc;
}

int pp_encode_slice(pp_slice *s)
{
  ptdp_json_buf jb = {0};
  int rc = 0;
  for (int k = 0; k < s->st->a->nkeys; k++) s->tokens[k].n = 0, s->seqs[k].n = 0;
  for (size_t d = s->d0; d < s->d1 && !rc; d++) rc = encode_doc(s, d, &jb);
  ptdp_json_buf_free(&jb);
  return rc;
}

/* Write document d of slice s: per key, its sequences then the end of the document. */
static int write_doc(pp_state *st, pp_slice *s, size_t d, size_t tok_off[], size_t seq_off[])
{
  const pp_args *a = st->a;
  for (int k = 0; k < a->nkeys; k++) {
    int64_t ns = st->nseq[d * (size_t)a->nkeys + (size_t)k];
    for (int64_t j = 0; j < ns; j++) {
      size_t len = (size_t)s->seqs[k].v[seq_off[k]++];
      PTDP_CALL(ptdp_mmidx_writer_add_sequence(st->writers[k], s->tokens[k].ids + tok_off[k], len));
      tok_off[k] += len;
      if (k == 0) st->tokens_done += (long long)len;
    }
    /* Megatron: a document with no tokens is a document with no sequences */
    PTDP_CALL(ptdp_mmidx_writer_end_document(st->writers[k]));
  }
  st->docs_done++;
  return 0;
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
    size_t tok_off[PP_MAX_KEYS] = {0}, seq_off[PP_MAX_KEYS] = {0};
    for (size_t d = s->d0; d < s->d1 && !rc; d++) {
      if (st->bad[d]) {
        if (!a->skip_bad_lines) {
          rc = PTDP_FAIL(PTDP_ERR_INPUT, "input '%s' %s (use --skip-bad-lines to skip such lines)",
                               a->input, st->bad[d]);
          break;
        }
        if (st->bad_lines < 10) fprintf(stderr, "ptdp-preprocess: skipping %s\n", st->bad[d]);
        st->bad_lines++;
        continue;
      }
      rc = write_doc(st, s, d, tok_off, seq_off);
    }
  }
  for (size_t d = 0; d < st->ndocs; d++) {
    free(st->bad[d]);
    st->bad[d] = NULL;
  }
  if (rc) return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  return 0;
}
