/* tokenize_tool: a thin command line over ptdp's tokenizer, for the shell tests and the
 * benchmark.
 *   tokenize_tool TYPE VOCAB MERGES encode FILE     ids of FILE's bytes, one per line
 *   tokenize_tool TYPE VOCAB MERGES roundtrip FILE  exit 0 iff decode(encode(FILE)) == FILE
 *   tokenize_tool TYPE VOCAB MERGES bench FILE [REPEAT]  tokens/s and MB/s, best of REPEAT
 * TYPE is GPT2BPETokenizer or ByteLevel ("-" for unused files). */
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

static int run(int argc, char **argv)
{
  PTDP_CHECK(argc >= 6, "usage: tokenize_tool TYPE VOCAB MERGES encode|roundtrip|bench FILE [REPEAT]");
  ptdp_tokenizer *tok;
  PTDP_CALL(ptdp_tokenizer_create(&tok, argv[1], argv[2], argv[3]));
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
