/* tokenize_tool: a thin command line over ptdp's tokenizer, for the shell tests and the
 * benchmark.
 *   tokenize_tool TYPE VOCAB MERGES encode FILE     ids of FILE's bytes, one per line
 *   tokenize_tool TYPE VOCAB MERGES encode-docs FILE  FILE's NUL-separated documents encoded
 *       one by one, each document's ids on one line (space-separated)
 *   tokenize_tool TYPE VOCAB MERGES roundtrip FILE  exit 0 iff decode(encode(FILE)) == FILE
 *   tokenize_tool TYPE VOCAB MERGES bench FILE [REPEAT]  tokens/s and MB/s, best of REPEAT
 *   tokenize_tool TYPE VOCAB MERGES distinct N LIMIT_MIB [check]
 *       encode N distinct generated words (" " + 9 letters, a bijection of the word's index,
 *       so every word is new to the cache) with a word cache of LIMIT_MIB; print tokens/s,
 *       the cache's counters and the most bytes it held; with "check", also encode the same
 *       text with a cache too large to be emptied and exit non-zero if any id differs
 * TYPE is GPT2BPETokenizer, ByteLevel ("-" for unused files) or HuggingFaceTokenizer (VOCAB is then the
 * tokenizer.json, MERGES "-"). */
#include "ptdp/error.h"
#include "ptdp/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int slurp(const char *path, char **data, size_t *len)
{
  FILE *f = fopen(path, "rb");
  PTDP_CHECK_IO(f, "cannot open '%s'", path);
  PTDP_CHECK_IO(fseek(f, 0, SEEK_END) == 0, "cannot seek '%s'", path);
  long sz = ftell(f);
  rewind(f);
  char *d;
  PTDP_ALLOC(d, (size_t)sz + 1);
  size_t got = fread(d, 1, (size_t)sz, f);
  fclose(f);
  PTDP_CHECK_IO(got == (size_t)sz, "short read on '%s'", path);
  *data = d;
  *len = got;
  return 0;
}

/* Word i of the distinct-words text: i scrambled by an odd multiplier mod 26^9 (a bijection,
 * since the multiplier is coprime to 26), written as 9 letters. */
static size_t distinct_word(uint64_t i, char *w)
{
  const uint64_t m = 5429503678976ull; /* 26^9 */
  uint64_t x = (i * 0x9E3779B97ull) % m;
  w[0] = ' ';
  for (int k = 1; k <= 9; k++, x /= 26) w[k] = (char)('a' + x % 26);
  return 10;
}

/* Encode n distinct words in chunks of 65536; chunk by chunk, tokens into ids (if non-NULL,
 * compared to ref's encoding) and the cache's largest allocation into *peak. */
static int distinct_run(ptdp_tokenizer *tok, ptdp_tokenizer *ref, uint64_t n, size_t *ntok, size_t *peak)
{
  enum { CHUNK = 65536 };
  char *text;
  PTDP_ALLOC(text, (size_t)CHUNK * 10);
  ptdp_token_buf out = {0}, want = {0};
  int rc = 0;
  *ntok = *peak = 0;
  for (uint64_t i0 = 0; i0 < n && !rc; i0 += CHUNK) {
    size_t len = 0;
    for (uint64_t i = i0; i < n && i < i0 + CHUNK; i++) len += distinct_word(i, text + len);
    out.n = want.n = 0;
    rc = ptdp_tokenizer_encode_append(tok, text, len, &out);
    if (!rc && ref) {
      rc = ptdp_tokenizer_encode_append(ref, text, len, &want);
      if (!rc && (out.n != want.n || memcmp(out.ids, want.ids, out.n * sizeof *out.ids))) {
        fprintf(stderr, "tokenize_tool: ids differ from an unbounded cache's in words %llu..\n", (unsigned long long)i0);
        rc = 1;
      }
    }
    ptdp_tokenizer_cache_stats st;
    ptdp_tokenizer_get_cache_stats(tok, &st);
    if (st.bytes > *peak) *peak = st.bytes;
    *ntok += out.n;
  }
  ptdp_token_buf_free(&out);
  ptdp_token_buf_free(&want);
  free(text);
  return rc;
}

static int distinct(ptdp_tokenizer *proto, int argc, char **argv)
{
  PTDP_CHECK(argc >= 7, "usage: tokenize_tool TYPE VOCAB MERGES distinct N LIMIT_MIB [check]");
  uint64_t n = strtoull(argv[5], NULL, 10);
  size_t limit = (size_t)(atof(argv[6]) * 1048576.0);
  int check = argc > 7 && strcmp(argv[7], "check") == 0;
  ptdp_tokenizer *tok, *ref = NULL;
  PTDP_CALL(ptdp_tokenizer_clone(proto, &tok));
  PTDP_CALL(ptdp_tokenizer_set_cache_limit(tok, limit));
  if (check) {
    PTDP_CALL(ptdp_tokenizer_clone(proto, &ref));
    PTDP_CALL(ptdp_tokenizer_set_cache_limit(ref, (size_t)1 << 40));
  }
  size_t ntok = 0, peak = 0;
  double t0 = now();
  int rc = distinct_run(tok, ref, n, &ntok, &peak);
  double dt = now() - t0;
  ptdp_tokenizer_cache_stats st;
  ptdp_tokenizer_get_cache_stats(tok, &st);
  printf("distinct words %llu: %zu tokens in %.3f s, %.0f tokens/s%s; cache limit %zu bytes, most held %zu, "
         "lookups %llu, misses %llu, resets %llu, words now %zu\n",
         (unsigned long long)n, ntok, dt, (double)ntok / dt, check ? " (timed with the check)" : "", st.limit, peak,
         (unsigned long long)st.lookups, (unsigned long long)st.misses, (unsigned long long)st.resets, st.words);
  ptdp_tokenizer_destroy(&tok);
  ptdp_tokenizer_destroy(&ref);
  return rc;
}

/* Each NUL-separated document of text[0..len) encoded alone, its ids on one line. */
static int encode_docs(ptdp_tokenizer *tok, const char *text, size_t len)
{
  size_t i = 0;
  while (1) {
    const char *nul = memchr(text + i, '\0', len - i);
    size_t e = nul ? (size_t)(nul - text) : len;
    int32_t *ids;
    size_t n;
    PTDP_CALL(ptdp_tokenizer_encode(tok, text + i, e - i, &ids, &n));
    for (size_t k = 0; k < n; k++) printf(k ? " %d" : "%d", (int)ids[k]);
    putchar('\n');
    free(ids);
    if (!nul) return 0;
    i = e + 1;
  }
}

static int run(int argc, char **argv)
{
  PTDP_CHECK(argc >= 6, "usage: tokenize_tool TYPE VOCAB MERGES encode|roundtrip|bench FILE [REPEAT] | distinct N LIMIT_MIB [check]");
  ptdp_tokenizer *tok;
  PTDP_CALL(ptdp_tokenizer_create(&tok, argv[1], argv[2], argv[3], argv[2]));
  if (strcmp(argv[4], "distinct") == 0) {
    int rc = distinct(tok, argc, argv);
    ptdp_tokenizer_destroy(&tok);
    return rc;
  }
  char *text = NULL;
  size_t len = 0;
  PTDP_CALL(slurp(argv[5], &text, &len));
  const char *mode = argv[4];
  int32_t *ids = NULL;
  size_t n = 0;
  if (strcmp(mode, "bench") == 0) {
    int repeat = argc > 6 ? atoi(argv[6]) : 3;
    double best = 1e30, cold = 0;
    for (int r = 0; r < repeat; r++) {
      ptdp_tokenizer *fresh; /* a fresh cache each time: the honest, cold-cache number */
      PTDP_CALL(ptdp_tokenizer_clone(tok, &fresh));
      double t0 = now();
      PTDP_CALL(ptdp_tokenizer_encode(fresh, text, len, &ids, &n));
      double dt = now() - t0;
      if (r == 0) cold = dt;
      if (dt < best) best = dt;
      free(ids);
      ptdp_tokenizer_destroy(&fresh);
    }
    printf("tokenizer %s: %zu bytes -> %zu tokens in %.3f s (best of %d, first %.3f s): "
           "%.0f tokens/s, %.2f MB/s\n",
           ptdp_tokenizer_type_name(tok), len, n, best, repeat, cold, (double)n / best, (double)len / best / 1e6);
  } else if (strcmp(mode, "encode-docs") == 0) {
    PTDP_CALL(encode_docs(tok, text, len));
  } else {
    PTDP_CALL(ptdp_tokenizer_encode(tok, text, len, &ids, &n));
    if (strcmp(mode, "encode") == 0) {
      for (size_t i = 0; i < n; i++) printf("%d\n", (int)ids[i]);
    } else {
      PTDP_CHECK(strcmp(mode, "roundtrip") == 0, "unknown mode '%s'", mode);
      char *back;
      size_t nb;
      PTDP_CALL(ptdp_tokenizer_decode(tok, ids, n, &back, &nb));
      PTDP_CHECK(nb == len && memcmp(back, text, len) == 0, "decode(encode(%s)) differs from the input", argv[5]);
      free(back);
    }
    free(ids);
  }
  free(text);
  ptdp_tokenizer_destroy(&tok);
  return 0;
}

int main(int argc, char **argv)
{
  ptdp_error_set_collective(0);
  int rc = run(argc, argv);
  return rc ? 1 : 0;
}
