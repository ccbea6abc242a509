/* Harness: GPT-2 vocabulary and merge files, and BPE encode/decode (src/data/tokenizer*.c).
 *
 * Input: the vocabulary file (encoder.json), "\n%%\n", the merge file (vocab.bpe), "\n%%\n",
 * a text.  Files the loader refuses end the input (the refusal is the expected outcome).
 * Promises checked when it accepts them: every id of the text's encoding is below the
 * vocabulary size, and decode(encode(text)) == text, byte for byte (any bytes, not only
 * UTF-8: include/ptdp/tokenizer.h promises it; a duplicated id once broke it). */
#include "fuzz.h"

#include "ptdp/error.h"
#include "ptdp/tokenizer.h"

#include <stdlib.h>
#include <string.h>

static void round_trip(ptdp_tokenizer *tok, const uint8_t *text, size_t n)
{
  int32_t *ids = NULL;
  size_t nids = 0;
  if (ptdp_tokenizer_encode(tok, (const char *)text, n, &ids, &nids)) fuzz_fail("encode refused a text");
  const int32_t v = ptdp_tokenizer_vocab_size(tok);
  for (size_t i = 0; i < nids; i++)
    if (ids[i] < 0 || ids[i] >= v) fuzz_fail("encode gave an id outside the vocabulary");
  char *back = NULL;
  size_t nb = 0;
  if (ptdp_tokenizer_decode(tok, ids, nids, &back, &nb)) fuzz_fail("decode refused encode's ids");
  if (nb != n || (n && memcmp(back, text, n) != 0)) fuzz_fail("decode(encode(text)) != text");
  free(ids);
  free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  size_t nv, nm, nt;
  const uint8_t *vocab = fuzz_part(data, size, 0, &nv), *merges = fuzz_part(data, size, 1, &nm);
  const uint8_t *text = fuzz_part(data, size, 2, &nt);
  char vp[FUZZ_PATH_MAX], mp[FUZZ_PATH_MAX];
  if (!merges || fuzz_file("vocab", vocab, nv, vp) || fuzz_file("merges", merges, nm, mp)) return 0;
  ptdp_tokenizer *tok = NULL;
  if (ptdp_tokenizer_create_gpt2(&tok, vp, mp) == 0) {
    static const uint8_t fixed[] = "abba cab, The quick brown fox's 12 jumps\n\n \xff\xfe \xe2\x80\x9cq\xe2\x80\x9d";
    round_trip(tok, fixed, sizeof fixed - 1);
    if (text) round_trip(tok, text, nt);
    ptdp_tokenizer_destroy(&tok);
  }
  ptdp_error_clear();
  return 0;
}
