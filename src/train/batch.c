/* Training samples by global index: see include/ptdp/batch.h. */
#include "ptdp/batch.h"

#include "ptdp/args.h"
#include "ptdp/checked.h"
#include "ptdp/error.h"
#include "ptdp/gpt_dataset.h"
#include "ptdp/rng.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { SRC_MOCK, SRC_FLAT, SRC_INDEXED };

struct ptdp_batch_source {
  int kind;
  long long vocab;
  int seq;
  uint64_t seed;
  /* flat file */
  void *map;
  size_t map_bytes;
  long long ntokens;
  int elem; /* 2 or 4 bytes */
  /* indexed */
  ptdp_data *data;
};

static int file_exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0;
}

static int open_flat(ptdp_batch_source *s, const ptdp_args *a)
{
  struct stat sd;
  PTDP_CHECK(stat(a->data_path, &sd) != 0 || !S_ISDIR(sd.st_mode),
             "data-path '%s' is a directory; give a dataset prefix (PREFIX for PREFIX.bin/.idx) or a token file",
             a->data_path);
  int fd = open(a->data_path, O_RDONLY);
  PTDP_CHECK(fd >= 0, "cannot open data-path '%s': %s", a->data_path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    PTDP_CHECK(0, "cannot stat data-path '%s': %s", a->data_path, strerror(errno));
  }
  s->elem = a->flat_data_dtype == PTDP_FLAT_INT32 ? 4 : 2;
  s->map_bytes = (size_t)st.st_size;
  s->ntokens = (long long)(st.st_size / s->elem);
  if (st.st_size % s->elem != 0 || s->ntokens < a->seq_length + 2) {
    close(fd);
    PTDP_CHECK(st.st_size % s->elem == 0, "flat token file '%s' has %lld bytes, not a multiple of %d (flat-data-dtype %s)",
               a->data_path, (long long)st.st_size, s->elem, s->elem == 4 ? "int32" : "uint16");
    PTDP_CHECK(0, "flat token file '%s' holds %lld tokens; seq-length %lld needs at least %lld", a->data_path,
               s->ntokens, a->seq_length, a->seq_length + 2);
  }
  s->map = mmap(NULL, s->map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  PTDP_CHECK(s->map != MAP_FAILED, "cannot map data-path '%s': %s", a->data_path, strerror(errno));
  /* every token must be a valid id */
  long long bad = -1, maxid = 0;
  for (long long i = 0; i < s->ntokens; i++) {
    long long id = s->elem == 2 ? ((const uint16_t *)s->map)[i] : ((const int32_t *)s->map)[i];
    if (id < 0 || id >= s->vocab) {
      bad = i;
      maxid = id;
      break;
    }
  }
  PTDP_CHECK(bad < 0, "flat token file '%s': token %lld has id %lld, outside the vocabulary [0, %lld) (vocab-size)",
             a->data_path, bad, maxid, s->vocab);
  return 0;
}

int ptdp_batch_open(ptdp_batch_source **out, const ptdp_args *a, long long vocab, MPI_Comm comm)
{
  ptdp_batch_source *s;
  PTDP_CALLOC(s, 1, sizeof *s);
  *out = s;
  s->vocab = vocab;
  s->seq = (int)a->seq_length;
  s->seed = (uint64_t)a->seed;
  if (a->mock_data) {
    s->kind = SRC_MOCK;
    return 0;
  }
  char idx[PTDP_OPT_STRLEN + 8];
  snprintf(idx, sizeof idx, "%s.idx", a->data_path);
  if (strchr(a->data_path, ' ') || file_exists(idx)) {
    s->kind = SRC_INDEXED;
    long long gbs = a->global_batch_size;
    ptdp_data_args da = {.data_path = a->data_path, .split = a->split,
                         .cache_path = a->data_cache_path[0] ? a->data_cache_path : NULL,
                         .seq_length = (int)a->seq_length, .seed = (unsigned long long)a->seed};
    /* samples wanted per split; a product past 2^63 is refused, not wrapped */
    long long evals = 0, valid = 0;
    const int over = ptdp_mul_ll(a->train_iters, gbs, &da.num_samples[0]) ||
                     ptdp_mul_ll(a->train_iters / a->eval_interval + 1, a->eval_iters, &evals) ||
                     ptdp_mul_ll(evals, gbs, &valid) || ptdp_mul_ll(a->eval_iters, gbs, &da.num_samples[2]);
    PTDP_CHECK(!over, "train-iters %lld, eval-iters %lld and global-batch-size %lld ask for more samples than 2^63",
               a->train_iters, a->eval_iters, gbs);
    da.num_samples[1] = a->eval_iters > 0 ? valid : 0;
    PTDP_CALL(ptdp_data_open(&s->data, &da, comm));
    PTDP_CALL(ptdp_data_report(s->data, comm, stdout));
    return 0;
  }
  PTDP_CHECK(file_exists(a->data_path), "data-path '%s' is neither a file nor an indexed dataset prefix (no '%s')",
             a->data_path, idx);
  s->kind = SRC_FLAT;
  return open_flat(s, a);
}

void ptdp_batch_close(ptdp_batch_source **src)
{
  if (!src || !*src) return;
  ptdp_batch_source *s = *src;
  if (s->map && s->map != MAP_FAILED) munmap(s->map, s->map_bytes);
  if (s->data) ptdp_data_destroy(&s->data);
  free(s);
  *src = NULL;
}

int ptdp_batch_has_split(const ptdp_batch_source *src, int split)
{
  if (src->kind == SRC_INDEXED) return ptdp_data_num_samples(src->data, split) > 0;
  return split == PTDP_SPLIT_TRAIN;
}

int ptdp_batch_sample(ptdp_batch_source *s, int split, long long n, int32_t *tok)
{
  const int len = s->seq + 1;
  if (s->kind == SRC_MOCK) {
    uint64_t r = ptdp_rng_mix(ptdp_rng_row(s->seed, PTDP_RNG_MOCK_DATA, (uint32_t)split, (uint64_t)n, 0));
    long long start = (long long)(r % (uint64_t)s->vocab), stride = 1 + (long long)((r >> 32) % 7);
    for (int i = 0; i < len; i++) tok[i] = (int32_t)((start + stride * i) % s->vocab);
    return 0;
  }
  if (s->kind == SRC_FLAT) {
    long long span = s->ntokens - len, off = (n * s->seq) % (span > 0 ? span : 1);
    for (int i = 0; i < len; i++)
      tok[i] = s->elem == 2 ? ((const uint16_t *)s->map)[off + i] : ((const int32_t *)s->map)[off + i];
    return 0;
  }
  PTDP_CALL(ptdp_data_get_sample(s->data, split, n, tok));
  for (int i = 0; i < len; i++)
    PTDP_CHECK_LOCAL(tok[i] >= 0 && tok[i] < s->vocab, "sample %lld of the data holds token id %d, outside the vocabulary [0, %lld)",
                     n, tok[i], s->vocab);
  return 0;
}

int ptdp_batch_micro(ptdp_batch_source *src, int split, long long first, int b, int s, int32_t *tokens,
                     int32_t *targets, int32_t *scratch)
{
  for (int j = 0; j < b; j++) {
    PTDP_CALL(ptdp_batch_sample(src, split, first + j, scratch));
    for (int i = 0; i < s; i++) {
      tokens[(long long)i * b + j] = scratch[i];
      targets[(long long)i * b + j] = scratch[i + 1];
    }
  }
  return 0;
}
