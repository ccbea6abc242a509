/* gen_corpus PREFIX TOKENS [MEAN_DOC_TOKENS] [VOCAB] [SEED]
 * Writes PREFIX.bin/.idx, a Megatron MMIDIDX indexed dataset of TOKENS uint16 tokens (one
 * sequence per document) for the start-up benchmark (bench_data_startup.sh).  Document lengths
 * are lognormal with sigma 1 and the given mean (default 1000; median = mean / e^0.5, so most
 * documents are short and a few are long, as in web text), at least 1 token, the last one cut
 * to make the total exact.  Token ids are uniform in [0, VOCAB) (default 50257).  Standalone
 * (no ptdp library) so that it checks the reader against an independent writer. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t next(void) /* splitmix64 */
{
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double uniform01(void) { return ((double)(next() >> 11) + 0.5) / 9007199254740992.0; }

/* lognormal with E[x] = mean: exp(mu + sigma z), mu = ln(mean) - sigma^2/2, sigma = 1 */
static int64_t doc_length(double mean)
{
  double z = sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01());
  double x = exp(log(mean) - 0.5 + z);
  if (x < 1) x = 1;
  if (x > 1e8) x = 1e8;
  return (int64_t)x;
}

static void put(FILE *f, const void *p, size_t n)
{
  if (fwrite(p, 1, n, f) != n) {
    perror("gen_corpus: write");
    exit(1);
  }
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: gen_corpus PREFIX TOKENS [MEAN_DOC_TOKENS] [VOCAB] [SEED]\n");
    return 2;
  }
  const char *prefix = argv[1];
  int64_t total = (int64_t)strtod(argv[2], NULL);
  double mean = argc > 3 ? strtod(argv[3], NULL) : 1000;
  uint32_t vocab = argc > 4 ? (uint32_t)atoi(argv[4]) : 50257;
  rng_state = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
  if (total < 1 || mean < 1 || vocab < 1 || vocab > 65536) {
    fprintf(stderr, "gen_corpus: need TOKENS >= 1, MEAN >= 1, 1 <= VOCAB <= 65536\n");
    return 2;
  }
  size_t plen = strlen(prefix) + 5;
  char *bin_path = malloc(plen), *idx_path = malloc(plen);
  snprintf(bin_path, plen, "%s.bin", prefix);
  snprintf(idx_path, plen, "%s.idx", prefix);
  FILE *bin = fopen(bin_path, "wb");
  if (!bin) {
    perror(bin_path);
    return 1;
  }
  /* document lengths first (the .idx needs the count up front) */
  size_t cap = 1024, n = 0;
  int32_t *len = malloc(cap * 4);
  for (int64_t left = total; left > 0; n++) {
    if (n == cap) len = realloc(len, (cap *= 2) * 4);
    int64_t l = doc_length(mean);
    len[n] = (int32_t)(l < left ? l : left);
    left -= len[n];
  }
  enum { CHUNK = 1 << 20 };
  static uint16_t buf[CHUNK];
  for (int64_t done = 0; done < total;) {
    size_t k = (size_t)(total - done < CHUNK ? total - done : CHUNK);
    for (size_t i = 0; i < k; i += 4) {
      uint64_t r = next();
      for (size_t j = 0; j < 4 && i + j < k; j++) buf[i + j] = (uint16_t)((uint16_t)(r >> (16 * j)) % vocab);
    }
    put(bin, buf, 2 * k);
    done += (int64_t)k;
  }
  if (fclose(bin) != 0) {
    perror(bin_path);
    return 1;
  }
  FILE *idx = fopen(idx_path, "wb");
  if (!idx) {
    perror(idx_path);
    return 1;
  }
  uint64_t version = 1, s = n, d = n + 1;
  uint8_t dtype = 8; /* uint16 */
  put(idx, "MMIDIDX\0\0", 9);
  put(idx, &version, 8);
  put(idx, &dtype, 1);
  put(idx, &s, 8);
  put(idx, &d, 8);
  put(idx, len, 4 * n);
  int64_t ptr = 0; /* byte offset of each sequence */
  for (size_t i = 0; i < n; i++) {
    put(idx, &ptr, 8);
    ptr += 2 * (int64_t)len[i];
  }
  for (uint64_t i = 0; i <= n; i++) put(idx, &i, 8);
  if (fclose(idx) != 0) {
    perror(idx_path);
    return 1;
  }
  printf("gen_corpus: %s.bin/.idx: %lld tokens in %zu documents (mean %.1f tokens), vocab %u\n", prefix,
         (long long)total, n, (double)total / (double)n, vocab);
  free(len);
  free(bin_path);
  free(idx_path);
  return 0;
}
