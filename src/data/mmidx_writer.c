/* Megatron MMIDIDX writing (see include/ptdp/indexed_dataset.h), in memory that does not grow
 * with the dataset: tokens stream to BIN.tmp, sequence lengths to IDX.tmp just after room for
 * its header, and document indices to an unlinked scratch file beside it.  finish appends the
 * byte offsets (from the lengths, read back in blocks) and the document indices to IDX.tmp,
 * writes the header, and renames both files into place. */
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 65536 /* sequences per block when the offsets are built */

struct ptdp_mmidx_writer {
  char *bin_path, *idx_path, *bin_tmp, *idx_tmp;
  FILE *bin, *idx, *docs; /* docs: int64 document indices, unlinked once open */
  int dtype;
  size_t es;
  uint64_t nseq, ndoc;    /* sequences written; document indices written (documents + 1) */
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
  if (w->idx) fclose(w->idx);
  if (w->docs) fclose(w->docs);
  free(w->bin_path);
  free(w->idx_path);
  free(w->bin_tmp);
  free(w->idx_tmp);
  free(w->scratch);
  free(w);
}

void ptdp_mmidx_writer_abort(ptdp_mmidx_writer **w)
{
  if (!w || !*w) return;
  if ((*w)->bin) fclose((*w)->bin);
  if ((*w)->idx) fclose((*w)->idx);
  (*w)->bin = (*w)->idx = NULL;
  if ((*w)->bin_tmp) remove((*w)->bin_tmp);
  if ((*w)->idx_tmp) remove((*w)->idx_tmp);
  writer_free(*w);
  *w = NULL;
}

/* Open the three files: BIN.tmp, IDX.tmp with room for the header, and the scratch file of
 * document indices (removed at once, so nothing is left behind whatever happens). */
static int open_files(ptdp_mmidx_writer *w)
{
  w->bin = fopen(w->bin_tmp, "wb");
  PTDP_CHECK_IO(w->bin, "cannot create '%s': %s", w->bin_tmp, strerror(errno));
  w->idx = fopen(w->idx_tmp, "w+b");
  PTDP_CHECK_IO(w->idx, "cannot create '%s': %s", w->idx_tmp, strerror(errno));
  char *docs = join(w->idx_path, ".docs.tmp");
  PTDP_CHECK(docs, "out of memory");
  w->docs = fopen(docs, "w+b");
  int e = errno;
  if (w->docs) remove(docs);
  free(docs);
  PTDP_CHECK_IO(w->docs, "cannot create '%s.docs.tmp': %s", w->idx_path, strerror(e));
  unsigned char head[PTDP_MMIDX_HEADER_BYTES] = {0};
  int64_t zero = 0;
  PTDP_CHECK_IO(fwrite(head, 1, sizeof head, w->idx) == sizeof head && fwrite(&zero, 8, 1, w->docs) == 1,
                "cannot write '%s': %s", w->idx_tmp, strerror(errno));
  w->ndoc = 1; /* document indices start with 0 */
  return 0;
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
  if (!w->bin_path || !w->idx_path || !w->bin_tmp || !w->idx_tmp) {
    writer_free(w);
    PTDP_CHECK(0, "out of memory");
  }
  int rc = open_files(w);
  if (rc) {
    ptdp_mmidx_writer_abort(&w);
    return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
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
  int32_t len = (int32_t)n;
  PTDP_CHECK_IO(fwrite(&len, 4, 1, w->idx) == 1, "cannot write '%s': %s", w->idx_tmp, strerror(errno));
  w->nseq++;
  return 0;
}

int ptdp_mmidx_writer_end_document(ptdp_mmidx_writer *w)
{
  int64_t end = (int64_t)w->nseq;
  PTDP_CHECK_IO(fwrite(&end, 8, 1, w->docs) == 1, "cannot write the document indices of '%s': %s", w->idx_tmp,
                strerror(errno));
  w->ndoc++;
  return 0;
}

/* Append to IDX.tmp the byte offset of each sequence (a running sum of the lengths, read back
 * from the file a block at a time), then the document indices; then fill in the header. */
static int write_index_tail(ptdp_mmidx_writer *w)
{
  int32_t *len = malloc(BLOCK * sizeof *len);
  int64_t *ptr = malloc(BLOCK * sizeof *ptr);
  int ok = len && ptr && fflush(w->idx) == 0 && fflush(w->docs) == 0;
  int64_t at = 0;
  for (uint64_t s0 = 0; ok && s0 < w->nseq; s0 += BLOCK) {
    size_t m = w->nseq - s0 < BLOCK ? (size_t)(w->nseq - s0) : BLOCK;
    off_t from = (off_t)(PTDP_MMIDX_HEADER_BYTES + 4 * s0);
    ok = pread(fileno(w->idx), len, 4 * m, from) == (ssize_t)(4 * m);
    for (size_t i = 0; ok && i < m; i++) {
      ptr[i] = at;
      at += (int64_t)len[i] * (int64_t)w->es;
    }
    ok = ok && fwrite(ptr, 8, m, w->idx) == m;
  }
  ok = ok && fseek(w->docs, 0, SEEK_SET) == 0;
  for (uint64_t d0 = 0; ok && d0 < w->ndoc; d0 += BLOCK) {
    size_t m = w->ndoc - d0 < BLOCK ? (size_t)(w->ndoc - d0) : BLOCK;
    ok = fread(ptr, 8, m, w->docs) == m && fwrite(ptr, 8, m, w->idx) == m;
  }
  free(len);
  free(ptr);
  unsigned char head[PTDP_MMIDX_HEADER_BYTES] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
  uint64_t version = 1;
  memcpy(head + 9, &version, 8);
  head[17] = (unsigned char)w->dtype;
  memcpy(head + 18, &w->nseq, 8);
  memcpy(head + 26, &w->ndoc, 8);
  ok = ok && fseek(w->idx, 0, SEEK_SET) == 0 && fwrite(head, 1, sizeof head, w->idx) == sizeof head;
  int e = errno;
  if (fclose(w->idx) != 0 && ok) ok = 0, e = errno;
  w->idx = NULL;
  PTDP_CHECK_IO(ok, "cannot write '%s': %s", w->idx_tmp, e ? strerror(e) : "out of memory or short read");
  return 0;
}

static int finish(ptdp_mmidx_writer *w)
{
  int e = 0;
  if (fflush(w->bin) != 0) e = errno;
  if (fclose(w->bin) != 0 && !e) e = errno;
  w->bin = NULL;
  PTDP_CHECK_IO(!e, "cannot write '%s': %s", w->bin_tmp, strerror(e));
  PTDP_CALL(write_index_tail(w));
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
