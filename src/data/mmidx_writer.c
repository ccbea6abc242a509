/* Megatron MMIDIDX writing (see include/ptdp/indexed_dataset.h).  Tokens stream to BIN.tmp;
 * sequence lengths and document indices stay in memory (12 bytes per sequence) until finish
 * writes IDX.tmp and renames both files into place. */
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ptdp_mmidx_writer {
  char *bin_path, *idx_path, *bin_tmp, *idx_tmp;
  FILE *bin;
  int dtype;
  size_t es;
  int32_t *lengths;
  size_t nseq, seq_cap;
  int64_t *doc_idx; /* starts with 0; one more entry per ended document */
  size_t ndoc, doc_cap;
  unsigned char *scratch; /* ids converted to the dtype */
  size_t scratch_cap;
};

static char *join(const char *a, const char *b)
{
  size_t n = strlen(a) + strlen(b) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s", a, b);
  return s;
}

static void writer_free(ptdp_mmidx_writer *w)
{
  if (w->bin) fclose(w->bin);
  free(w->bin_path);
  free(w->idx_path);
  free(w->bin_tmp);
  free(w->idx_tmp);
  free(w->lengths);
  free(w->doc_idx);
  free(w->scratch);
  free(w);
}

void ptdp_mmidx_writer_abort(ptdp_mmidx_writer **w)
{
  if (!w || !*w) return;
  if ((*w)->bin) fclose((*w)->bin);
  (*w)->bin = NULL;
  if ((*w)->bin_tmp) remove((*w)->bin_tmp);
  if ((*w)->idx_tmp) remove((*w)->idx_tmp);
  writer_free(*w);
  *w = NULL;
}

int ptdp_mmidx_writer_open(ptdp_mmidx_writer **wp, const char *bin_path, const char *idx_path, int dtype)
{
  *wp = NULL;
  PTDP_CHECK(ptdp_mmidx_dtype_size(dtype) > 0 && dtype != PTDP_DTYPE_FLOAT32 && dtype != PTDP_DTYPE_FLOAT64,
             "cannot write token ids as dtype code %d", dtype);
  ptdp_mmidx_writer *w;
  PTDP_CALLOC(w, 1, sizeof *w);
  w->dtype = dtype;
  w->es = ptdp_mmidx_dtype_size(dtype);
  w->bin_path = strdup(bin_path);
  w->idx_path = strdup(idx_path);
  w->bin_tmp = join(bin_path, ".tmp");
  w->idx_tmp = join(idx_path, ".tmp");
  w->doc_cap = 1024;
  w->doc_idx = malloc(w->doc_cap * sizeof *w->doc_idx);
  if (!w->bin_path || !w->idx_path || !w->bin_tmp || !w->idx_tmp || !w->doc_idx) {
    writer_free(w);
    PTDP_CHECK(0, "out of memory");
  }
  w->doc_idx[w->ndoc++] = 0;
  w->bin = fopen(w->bin_tmp, "wb");
  if (!w->bin) {
    int e = errno;
    writer_free(w);
    PTDP_CHECK_IO(0, "cannot create '%s.tmp': %s", bin_path, strerror(e));
  }
  *wp = w;
  return 0;
}

static int in_range(int dtype, int32_t v)
{
  switch (dtype) {
  case PTDP_DTYPE_UINT8: return v >= 0 && v <= 255;
  case PTDP_DTYPE_INT8: return v >= -128 && v <= 127;
  case PTDP_DTYPE_INT16: return v >= -32768 && v <= 32767;
  case PTDP_DTYPE_UINT16: return v >= 0 && v <= 65535;
  default: return 1;
  }
}

int ptdp_mmidx_writer_add_sequence(ptdp_mmidx_writer *w, const int32_t *ids, size_t n)
{
  PTDP_CHECK(n <= INT32_MAX, "a sequence of %zu tokens is longer than the format's int32 lengths allow", n);
  if (w->nseq == w->seq_cap) {
    size_t cap = w->seq_cap ? 2 * w->seq_cap : 1024;
    int32_t *l = realloc(w->lengths, cap * sizeof *l);
    PTDP_CHECK(l, "out of memory for %zu sequence lengths", cap);
    w->lengths = l;
    w->seq_cap = cap;
  }
  if (n * w->es > w->scratch_cap) {
    unsigned char *s = realloc(w->scratch, n * w->es);
    PTDP_CHECK(s, "out of memory for a sequence of %zu tokens", n);
    w->scratch = s;
    w->scratch_cap = n * w->es;
  }
  for (size_t i = 0; i < n; i++) {
    PTDP_CHECK(in_range(w->dtype, ids[i]), "token id %d does not fit the index dtype %s", (int)ids[i],
               ptdp_mmidx_dtype_name(w->dtype));
    unsigned char *p = w->scratch + i * w->es;
    switch (w->dtype) {
    case PTDP_DTYPE_UINT8:
    case PTDP_DTYPE_INT8: *p = (unsigned char)ids[i]; break;
    case PTDP_DTYPE_INT16:
    case PTDP_DTYPE_UINT16: { uint16_t v = (uint16_t)ids[i]; memcpy(p, &v, 2); break; }
    case PTDP_DTYPE_INT32: memcpy(p, &ids[i], 4); break;
    default: { int64_t v = ids[i]; memcpy(p, &v, 8); break; }
    }
  }
  PTDP_CHECK_IO(n == 0 || fwrite(w->scratch, w->es, n, w->bin) == n, "cannot write '%s': %s", w->bin_tmp, strerror(errno));
  w->lengths[w->nseq++] = (int32_t)n;
  return 0;
}

int ptdp_mmidx_writer_end_document(ptdp_mmidx_writer *w)
{
  if (w->ndoc == w->doc_cap) {
    int64_t *d = realloc(w->doc_idx, 2 * w->doc_cap * sizeof *d);
    PTDP_CHECK(d, "out of memory for document indices");
    w->doc_idx = d;
    w->doc_cap *= 2;
  }
  w->doc_idx[w->ndoc++] = (int64_t)w->nseq;
  return 0;
}

static int write_index(ptdp_mmidx_writer *w)
{
  FILE *f = fopen(w->idx_tmp, "wb");
  PTDP_CHECK_IO(f, "cannot create '%s': %s", w->idx_tmp, strerror(errno));
  unsigned char head[PTDP_MMIDX_HEADER_BYTES] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
  uint64_t version = 1, s = w->nseq, d = w->ndoc;
  memcpy(head + 9, &version, 8);
  head[17] = (unsigned char)w->dtype;
  memcpy(head + 18, &s, 8);
  memcpy(head + 26, &d, 8);
  int ok = fwrite(head, 1, sizeof head, f) == sizeof head;
  ok = ok && (s == 0 || fwrite(w->lengths, 4, s, f) == s);
  int64_t ptr = 0;
  for (size_t i = 0; ok && i < s; i++) { /* pointers: running byte offsets */
    ok = fwrite(&ptr, 8, 1, f) == 1;
    ptr += (int64_t)w->lengths[i] * (int64_t)w->es;
  }
  ok = ok && fwrite(w->doc_idx, 8, d, f) == d;
  int e = errno;
  if (fclose(f) != 0) ok = 0, e = errno;
  PTDP_CHECK_IO(ok, "cannot write '%s': %s", w->idx_tmp, strerror(e));
  return 0;
}

static int finish(ptdp_mmidx_writer *w)
{
  int e = 0;
  if (fflush(w->bin) != 0) e = errno;
  if (fclose(w->bin) != 0 && !e) e = errno;
  w->bin = NULL;
  PTDP_CHECK_IO(!e, "cannot write '%s': %s", w->bin_tmp, strerror(e));
  PTDP_CALL(write_index(w));
  PTDP_CHECK_IO(rename(w->bin_tmp, w->bin_path) == 0, "cannot rename '%s' to '%s': %s", w->bin_tmp, w->bin_path,
                strerror(errno));
  PTDP_CHECK_IO(rename(w->idx_tmp, w->idx_path) == 0, "cannot rename '%s' to '%s': %s", w->idx_tmp, w->idx_path,
                strerror(errno));
  return 0;
}

int ptdp_mmidx_writer_finish(ptdp_mmidx_writer **wp)
{
  ptdp_mmidx_writer *w = *wp;
  int rc = finish(w);
  if (rc) {
    ptdp_mmidx_writer_abort(wp);
    return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  }
  writer_free(w);
  *wp = NULL;
  return 0;
}
