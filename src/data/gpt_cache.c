/* Index cache files of the GPT dataset: written with stdio, read by mapping (see gpt_cache.h). */
#include "gpt_cache.h"

#include "ptdp/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_VERSION 2
#define HEADER_WORDS 5

static uint64_t round8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* Byte offsets of the three arrays and the file size for a description of L bytes. */
typedef struct {
  uint64_t header, doc_index, sample_index, shuffle, size;
} layout;

static layout layout_of(uint64_t L, int64_t n_doc_index, int64_t total_samples)
{
  layout l;
  l.header = 24 + round8(L);
  l.doc_index = l.header + 8 * HEADER_WORDS;
  l.sample_index = round8(l.doc_index + 4 * (uint64_t)n_doc_index);
  l.shuffle = l.sample_index + 8 * ((uint64_t)total_samples + 1);
  l.size = l.shuffle + 8 * (uint64_t)total_samples;
  return l;
}

static int put(FILE *f, const void *p, size_t size, size_t n) { return n == 0 || fwrite(p, size, n, f) == n; }

int ptdp_gpt_cache_save(const char *path, const char *desc, const ptdp_gpt_plan *plan, int64_t n_doc_index,
                        const int32_t *doc_index, const int32_t *sample_index, const int64_t *shuffle)
{
  char tmp[4400];
  PTDP_CHECK(strlen(path) + 5 < sizeof tmp, "index cache path too long: '%s'", path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  PTDP_CHECK_IO(f, "cannot create the index cache file '%s': %s", tmp, strerror(errno));
  const uint64_t version = CACHE_VERSION, L = strlen(desc), zeros = 0;
  const layout l = layout_of(L, n_doc_index, plan->total_samples);
  const int64_t h[HEADER_WORDS] = {plan->num_epochs, plan->separate_final_epoch, n_doc_index, plan->total_samples,
                                   plan->num_samples_sans_final};
  const size_t ns = (size_t)plan->total_samples;
  int ok = put(f, "PTDPGIDX", 1, 8) && put(f, &version, 8, 1) && put(f, &L, 8, 1) && put(f, desc, 1, L) &&
           put(f, &zeros, 1, l.header - 24 - L) && put(f, h, 8, HEADER_WORDS) &&
           put(f, doc_index, 4, (size_t)n_doc_index) &&
           put(f, &zeros, 1, l.sample_index - l.doc_index - 4 * (uint64_t)n_doc_index) &&
           put(f, sample_index, 4, 2 * (ns + 1)) && put(f, shuffle, 8, ns);
  int e = errno;
  if (fclose(f) != 0) ok = 0, e = errno;
  if (!ok) remove(tmp);
  PTDP_CHECK_IO(ok, "cannot write the index cache file '%s': %s", tmp, strerror(e));
  PTDP_CHECK_IO(rename(tmp, path) == 0, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
  return 0;
}

/* Whether the mapped bytes m[0..size) are a complete version-2 file for desc; fills c's plan. */
static int matches(ptdp_gpt_cached *c, const unsigned char *m, size_t size, const char *desc)
{
  uint64_t version, L, want = strlen(desc);
  if (size < 24 || memcmp(m, "PTDPGIDX", 8) != 0) return 0;
  memcpy(&version, m + 8, 8);
  memcpy(&L, m + 16, 8);
  if (version != CACHE_VERSION || L != want || size < 24 + round8(L) + 8 * HEADER_WORDS ||
      memcmp(m + 24, desc, L) != 0)
    return 0;
  int64_t h[HEADER_WORDS];
  memcpy(h, m + 24 + round8(L), sizeof h);
  const int64_t big = (int64_t)1 << 40; /* keeps the size arithmetic below from overflowing */
  if (h[0] < 1 || h[2] < 0 || h[2] >= big || h[3] < 0 || h[3] >= big || h[4] < 0 || h[4] > h[3]) return 0;
  const layout l = layout_of(L, h[2], h[3]);
  if (l.size != size) return 0;
  c->plan.num_epochs = h[0];
  c->plan.separate_final_epoch = (int)h[1];
  c->n_doc_index = h[2];
  c->plan.total_samples = h[3];
  c->plan.num_samples_sans_final = h[4];
  c->doc_index = (const int32_t *)(const void *)(m + l.doc_index);
  c->sample_index = (const int32_t *)(const void *)(m + l.sample_index);
  c->shuffle = (const int64_t *)(const void *)(m + l.shuffle);
  return 1;
}

int ptdp_gpt_cache_map(ptdp_gpt_cached *c, const char *path, const char *desc, int *found)
{
  memset(c, 0, sizeof *c);
  *found = 0;
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    PTDP_CHECK_IO(errno == ENOENT, "cannot open the index cache file '%s': %s", path, strerror(errno));
    return 0;
  }
  struct stat st;
  void *m = MAP_FAILED;
  int e = 0;
  if (fstat(fd, &st) != 0) e = errno;
  else if (st.st_size > 0 && (m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) e = errno;
  close(fd);
  PTDP_CHECK_IO(e == 0, "cannot map the index cache file '%s': %s", path, strerror(e));
  if (m == MAP_FAILED) return 0; /* empty file: not a cache */
  if (!matches(c, m, (size_t)st.st_size, desc)) {
    munmap(m, (size_t)st.st_size);
    memset(c, 0, sizeof *c);
    return 0;
  }
  c->map = m;
  c->map_bytes = (size_t)st.st_size;
  *found = 1;
  return 0;
}

void ptdp_gpt_cache_unmap(ptdp_gpt_cached *c)
{
  if (c->map) munmap(c->map, c->map_bytes);
  memset(c, 0, sizeof *c);
}
