/* Harness: Hugging Face tokenizer.json files and their encode/decode (src/data/tokenizer_hf.c,
 * tokenizer_hf_encode.c, src/text/regex.c, json.c).
 *
 * Input: the tokenizer.json, "\n%%\n", a text.  A file the loader refuses ends the input (the
 * refusal is the expected outcome), and so does a text that the split pattern refuses (too
 * much backtracking).  Promises checked when the file is accepted: every id of an encoding is
 * below the vocabulary size, decode takes every id encode gave, and decode(encode(text)) ==
 * text byte for byte where the tokenizer says it round-trips (ptdp_tokenizer_round_trips:
 * byte-level files that drop nothing), for the input's text and a fixed one. */
#include "fuzz.h"

#include "ptdp/error.h"
#include "ptdp/tokenizer.h"

#include <stdlib.h>
#include <string.h>

static void check(ptdp_tokenizer *tok, const uint8_t *text, size_t n)
{
  int32_t *ids = NULL;
  size_t nids = 0;
  if (ptdp_tokenizer_encode(tok, (const char *)text, n, &ids, &nids)) {
    ptdp_error_clear(); /* a pattern that backtracks too much: refused, not a broken promise */
    return;
  }
  const int32_t v = ptdp_tokenizer_vocab_size(tok);
  for (size_t i = 0; i < nids; i++)
    if (ids[i] < 0 || ids[i] >= v) fuzz_fail("encode gave an id outside the vocabulary");
  char *back = NULL;
  size_t nb = 0;
  if (ptdp_tokenizer_decode(tok, ids, nids, &back, &nb)) fuzz_fail("decode refused encode's ids");
  if (ptdp_tokenizer_round_trips(tok) && (nb != n || (n && memcmp(back, text, n) != 0)))
    fuzz_fail("decode(encode(text)) != text for a tokenizer that promises it");
  free(ids);
  free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  size_t nj, nt;
  const uint8_t *json = fuzz_part(data, size, 0, &nj), *text = fuzz_part(data, size, 1, &nt);
  char jp[FUZZ_PATH_MAX];
  if (fuzz_file("tokenizer.json", json, nj, jp)) return 0;
  ptdp_tokenizer *tok = NULL;
  if (ptdp_tokenizer_create_hf(&tok, jp) == 0) {
    static const uint8_t fixed[] = "abba cab, The quick brown fox's 12 jumps\n\n \xff\xfe \xe2\x80\x9cq\xe2\x80\x9d "
                                   "<|endoftext|> \xe2\x96\x81x <s>";
    check(tok, fixed, sizeof fixed - 1);
    if (text) check(tok, text, nt);
    ptdp_tokenizer_destroy(&tok);
  }
  ptdp_error_clear();
  return 0;
}
