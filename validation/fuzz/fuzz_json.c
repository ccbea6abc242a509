/* Harness: JSON lines and ptdp-preprocess's windowing (src/text/json.c, src/data/preprocess.c).
 *
 * Input: one flag byte, then the input file.  Flags: bit 0 plain-text input (documents are
 * runs of non-blank lines) instead of JSON lines, bit 1 append the end of document, bits 2-7
 * the window w = 1 + 3 k bytes.  The ByteLevel tokenizer encodes, so token ids are the bytes.
 * Promises checked:
 *   - cutting the input as one window and cutting it through a window of w bytes that grows
 *     only when a document does not fit (ptdp-preprocess's rounds) give the same documents,
 *     byte for byte and with the same line numbers;
 *   - every round's encoding is consistent: tokens per key = the sum of its sequence lengths,
 *     ids in [0, 257), and a plain-text document's tokens are its bytes (plus the end of
 *     document when asked);
 *   - JSON lines that fail to parse or lack a key are reported as bad documents, not crashes. */
#include "fuzz.h"

#include "../../src/data/preprocess.h"
#include "ptdp/error.h"
#include "ptdp/tokenizer.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  size_t off, len;
  int64_t line;
} doc_ref;

typedef struct {
  doc_ref *v;
  size_t n, cap;
} doc_list;

static pp_args json_args = {.input = "fuzz.jsonl", .keys = {"text", "title"}, .nkeys = 2, .skip_bad_lines = 1,
                            .workers = 1};
static pp_args text_args = {.input = "fuzz.txt", .keys = {"text"}, .nkeys = 1, .text_input = 1, .skip_bad_lines = 1,
                            .workers = 1};
static pp_state st;

/* One state for the whole campaign (a round's arrays are 65,536 documents long). */
static int setup(void)
{
  static int ready;
  if (ready) return ready > 0;
  ptdp_tokenizer *tok;
  ready = -1;
  if (ptdp_tokenizer_create_bytes(&tok)) return 0;
  st.eod = ptdp_tokenizer_eod(tok);
  st.slices = calloc(1, sizeof *st.slices);
  st.docs = calloc(PP_ROUND_DOCS, sizeof *st.docs);
  st.nseq = calloc((size_t)PP_ROUND_DOCS * PP_MAX_KEYS, sizeof *st.nseq);
  st.bad = calloc(PP_ROUND_DOCS, sizeof *st.bad);
  if (!st.slices || !st.docs || !st.nseq || !st.bad) return 0;
  st.slices[0].st = &st;
  st.slices[0].tok = tok;
  ready = 1;
  return 1;
}

static void push(doc_list *l, const unsigned char *in, const pp_doc *d)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    doc_ref *nv = realloc(l->v, l->cap * sizeof *l->v);
    if (!nv) fuzz_fail("out of memory in the harness");
    l->v = nv;
  }
  l->v[l->n++] = (doc_ref){(size_t)(d->text - in), d->len, d->line};
}

/* Encode the round's documents on one slice and check what it produced. */
static void encode_and_check(void)
{
  pp_slice *s = &st.slices[0];
  const pp_args *a = st.a;
  s->d0 = 0;
  s->d1 = st.ndocs;
  if (pp_encode_slice(s)) fuzz_fail("pp_encode_slice failed on a document (only bad documents are expected)");
  size_t seq[PP_MAX_KEYS] = {0}, tok[PP_MAX_KEYS] = {0};
  for (size_t d = 0; d < st.ndocs; d++) {
    if (st.bad[d]) continue;
    for (int k = 0; k < a->nkeys; k++) {
      int64_t ns = st.nseq[d * (size_t)a->nkeys + (size_t)k];
      size_t first = tok[k];
      for (int64_t j = 0; j < ns; j++) {
        if (seq[k] >= s->seqs[k].n) fuzz_fail("more sequences counted than encoded");
        tok[k] += (size_t)s->seqs[k].v[seq[k]++];
      }
      if (tok[k] > s->tokens[k].n) fuzz_fail("sequence lengths exceed the tokens encoded");
      if (a->text_input) { /* ByteLevel: the tokens are the document's bytes */
        size_t n = tok[k] - first, len = st.docs[d].len;
        int eod = a->append_eod && ns > 0;
        if (n != len + (size_t)eod) fuzz_fail("text document: token count is not its byte count (+ end of document)");
        for (size_t i = 0; i < len; i++)
          if (s->tokens[k].ids[first + i] != st.docs[d].text[i]) fuzz_fail("text document: a token is not its byte");
        if (eod && s->tokens[k].ids[first + len] != st.eod) fuzz_fail("text document: end of document missing");
      }
    }
  }
  for (int k = 0; k < a->nkeys; k++) {
    if (seq[k] != s->seqs[k].n || tok[k] != s->tokens[k].n) fuzz_fail("tokens or sequences not accounted for");
    for (size_t i = 0; i < s->tokens[k].n; i++)
      if (s->tokens[k].ids[i] < 0 || s->tokens[k].ids[i] > 256) fuzz_fail("a token id outside ByteLevel's 257");
  }
  for (size_t d = 0; d < st.ndocs; d++) {
    free(st.bad[d]);
    st.bad[d] = NULL;
  }
}

/* Cut in[0..n) as ptdp-preprocess's rounds do (ptdp_preprocess.c: process, input_refill) with
 * a window of w bytes: the uncut bytes move to the front, the window refills until full or
 * the input ends, and doubles when one document fills it. */
static void cut_all(const unsigned char *in, size_t n, size_t w, doc_list *out, int encode)
{
  size_t base = 0, len = 0, cap = w, pos = 0;
  int eof = 0, stalled = 1;
  st.line = 0;
  while (1) {
    if (!eof || stalled) {
      if (pos == 0 && len == cap) cap *= 2;
      base += pos, len -= pos, pos = 0;
      size_t take = cap - len < n - base - len ? cap - len : n - base - len;
      len += take;
      if (len < cap) eof = 1; /* read() returned 0 */
    }
    if (pos == len && eof) break;
    size_t nd = 0, next = pp_cut_round(&st, in + base, len, pos, eof, &nd);
    for (size_t d = 0; d < nd; d++) push(out, in, &st.docs[d]);
    if (encode && nd) encode_and_check();
    else
      for (size_t d = 0; d < nd; d++) free(st.bad[d]), st.bad[d] = NULL;
    stalled = next == pos;
    if (stalled && eof) fuzz_fail("no progress at the end of the input (ptdp-preprocess would loop)");
    pos = next;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  if (size < 1 || !setup()) return 0;
  const int flags = data[0];
  pp_args *a = (flags & 1) ? &text_args : &json_args;
  a->append_eod = (flags >> 1) & 1;
  st.a = a;
  const unsigned char *in = data + 1;
  const size_t n = size - 1, w = 1 + 3 * (size_t)(flags >> 2);
  doc_list whole = {0}, windowed = {0};
  cut_all(in, n, n ? n : 1, &whole, 1);
  cut_all(in, n, w, &windowed, 0);
  if (whole.n != windowed.n) fuzz_fail("the windowed cut found a different number of documents");
  for (size_t i = 0; i < whole.n; i++)
    if (whole.v[i].off != windowed.v[i].off || whole.v[i].len != windowed.v[i].len ||
        whole.v[i].line != windowed.v[i].line)
      fuzz_fail("the windowed cut differs from the whole cut");
  free(whole.v);
  free(windowed.v);
  ptdp_error_clear();
  return 0;
}
