/* Megatron MMIDIDX reading and validation (see include/ptdp/indexed_dataset.h). */
#include "ptdp/indexed_dataset.h"

#include "ptdp/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char mmidx_magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};

size_t ptdp_mmidx_dtype_size(int code)
{
  switch (code) {
  case PTDP_DTYPE_UINT8:
  case PTDP_DTYPE_INT8: return 1;
  case PTDP_DTYPE_INT16:
  case PTDP_DTYPE_UINT16: return 2;
  case PTDP_DTYPE_INT32:
  case PTDP_DTYPE_FLOAT32: return 4;
  case PTDP_DTYPE_INT64:
  case PTDP_DTYPE_FLOAT64: return 8;
  default: return 0;
  }
}

const char *ptdp_mmidx_dtype_name(int code)
{
  static const char *names[] = {"?", "uint8", "int8", "int16", "int32", "int64", "float64", "float32", "uint16"};
  return code >= 1 && code <= 8 ? names[code] : "unknown";
}

int ptdp_mmidx_dtype_for_vocab(int vocab_size) { return vocab_size < 65500 ? PTDP_DTYPE_UINT16 : PTDP_DTYPE_INT32; }

static uint64_t rd_u64(const unsigned char *p)
{
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

int ptdp_mmidx_parse(ptdp_mmidx *ix, const void *idx, size_t idx_size, uint64_t bin_size, const char *name)
{
  const unsigned char *p = idx;
  memset(ix, 0, sizeof *ix);
  PTDP_CHECK(idx_size >= PTDP_MMIDX_HEADER_BYTES, "index '%s' is %zu bytes, shorter than the %d-byte MMIDIDX header",
             name, idx_size, PTDP_MMIDX_HEADER_BYTES);
  PTDP_CHECK(memcmp(p, mmidx_magic, 9) == 0, "index '%s' does not start with the MMIDIDX magic: not a Megatron .idx file",
             name);
  uint64_t version = rd_u64(p + 9);
  PTDP_CHECK(version == 1, "index '%s' has version %llu; only version 1 is known", name, (unsigned long long)version);
  int dtype = p[17];
  size_t es = ptdp_mmidx_dtype_size(dtype);
  PTDP_CHECK(es > 0, "index '%s' has unknown dtype code %d (known: 1..8)", name, dtype);
  uint64_t s = rd_u64(p + 18), d = rd_u64(p + 26);
  /* Sizes are checked before multiplying, so huge counts cannot overflow. */
  uint64_t room = (uint64_t)(idx_size - PTDP_MMIDX_HEADER_BYTES);
  PTDP_CHECK(s <= room / 12, "index '%s' claims %llu sequences but holds only %zu bytes: truncated or corrupt", name,
             (unsigned long long)s, idx_size);
  PTDP_CHECK(d <= (room - 12 * s) / 8, "index '%s' claims %llu document indices but holds only %zu bytes: truncated or corrupt",
             name, (unsigned long long)d, idx_size);
  uint64_t want = PTDP_MMIDX_HEADER_BYTES + 12 * s + 8 * d;
  PTDP_CHECK(want == idx_size, "index '%s' is %zu bytes, but %llu sequences and %llu document indices need %llu", name,
             idx_size, (unsigned long long)s, (unsigned long long)d, (unsigned long long)want);
  PTDP_CHECK(d >= 1, "index '%s' has no document indices (at least the leading 0 is required)", name);
  ix->dtype = dtype;
  ix->elem_size = es;
  ix->num_sequences = (int64_t)s;
  ix->num_doc_indices = (int64_t)d;
  ix->lengths = p + PTDP_MMIDX_HEADER_BYTES;
  ix->pointers = ix->lengths + 4 * s;
  ix->doc_idx = ix->pointers + 8 * s;

  uint64_t expect = 0; /* byte offset where the next sequence must start */
  for (int64_t i = 0; i < (int64_t)s; i++) {
    int32_t len = ptdp_mmidx_length(ix, i);
    int64_t ptr = ptdp_mmidx_pointer(ix, i);
    PTDP_CHECK(len >= 0, "index '%s': sequence %lld has negative length %d", name, (long long)i, (int)len);
    PTDP_CHECK(ptr >= 0 && (uint64_t)ptr == expect,
               "index '%s': sequence %lld starts at byte %lld, but the lengths before it put it at %llu", name,
               (long long)i, (long long)ptr, (unsigned long long)expect);
    expect += (uint64_t)len * es;
    PTDP_CHECK(expect <= bin_size, "index '%s': sequence %lld (%d tokens of %zu bytes at byte %lld) runs past the end of the "
               "%llu-byte .bin: the .bin is truncated or belongs to another index", name, (long long)i, (int)len, es,
               (long long)ptr, (unsigned long long)bin_size);
  }
  PTDP_CHECK(expect == bin_size, "index '%s' describes %llu bytes of tokens but the .bin holds %llu: mismatched or "
             "truncated pair", name, (unsigned long long)expect, (unsigned long long)bin_size);
  PTDP_CHECK(ptdp_mmidx_doc_index(ix, 0) == 0, "index '%s': the first document index is %lld, not 0", name,
             (long long)ptdp_mmidx_doc_index(ix, 0));
  for (int64_t k = 1; k < (int64_t)d; k++) {
    int64_t a = ptdp_mmidx_doc_index(ix, k - 1), b = ptdp_mmidx_doc_index(ix, k);
    PTDP_CHECK(b >= a, "index '%s': document indices decrease at entry %lld (%lld after %lld)", name, (long long)k,
               (long long)b, (long long)a);
  }
  PTDP_CHECK(ptdp_mmidx_doc_index(ix, (int64_t)d - 1) == (int64_t)s,
             "index '%s': the last document index is %lld, not the sequence count %llu", name,
             (long long)ptdp_mmidx_doc_index(ix, (int64_t)d - 1), (unsigned long long)s);
  return 0;
}

/* ---------------------------------------------------------------- reader */

struct ptdp_indexed_dataset {
  char *idx_path, *bin_path;
  void *idx_map, *bin_map;
  size_t idx_size, bin_size;
  ptdp_mmidx ix;
};

/* Map a whole file read-only; an empty file maps to NULL with size 0. */
static int map_file(const char *path, const char *what, void **map, size_t *size)
{
  int fd = open(path, O_RDONLY);
  PTDP_CHECK_IO(fd >= 0, "cannot open %s '%s': %s", what, path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    PTDP_CHECK_IO(0, "cannot stat %s '%s': %s", what, path, strerror(errno));
  }
  *size = (size_t)st.st_size;
  *map = NULL;
  if (st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      close(fd);
      PTDP_CHECK_IO(0, "cannot map %s '%s': %s", what, path, strerror(errno));
    }
    *map = m;
  }
  close(fd);
  return 0;
}

void ptdp_indexed_dataset_close(ptdp_indexed_dataset **ds)
{
  if (!ds || !*ds) return;
  ptdp_indexed_dataset *d = *ds;
  if (d->idx_map) munmap(d->idx_map, d->idx_size);
  if (d->bin_map) munmap(d->bin_map, d->bin_size);
  free(d->idx_path);
  free(d->bin_path);
  free(d);
  *ds = NULL;
}

static int open_files(ptdp_indexed_dataset *d, const char *idx_path, const char *bin_path)
{
  d->idx_path = strdup(idx_path);
  d->bin_path = strdup(bin_path);
  PTDP_CHECK(d->idx_path && d->bin_path, "out of memory");
  PTDP_CALL(map_file(idx_path, "index file", &d->idx_map, &d->idx_size));
  PTDP_CALL(map_file(bin_path, "data file", &d->bin_map, &d->bin_size));
  PTDP_CALL(ptdp_mmidx_parse(&d->ix, d->idx_map, d->idx_size, d->bin_size, idx_path));
  return 0;
}

int ptdp_indexed_dataset_open_files(ptdp_indexed_dataset **ds, const char *idx_path, const char *bin_path)
{
  ptdp_indexed_dataset *d;
  *ds = NULL;
  PTDP_CALLOC(d, 1, sizeof *d);
  int rc = open_files(d, idx_path, bin_path);
  if (rc) {
    ptdp_indexed_dataset_close(&d);
    return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  }
  *ds = d;
  return 0;
}

int ptdp_indexed_dataset_open(ptdp_indexed_dataset **ds, const char *prefix)
{
  size_t n = strlen(prefix);
  char *idx, *bin;
  PTDP_ALLOC(idx, n + 5);
  bin = malloc(n + 5);
  if (!bin) free(idx);
  PTDP_CHECK(bin, "out of memory");
  snprintf(idx, n + 5, "%s.idx", prefix);
  snprintf(bin, n + 5, "%s.bin", prefix);
  int rc = ptdp_indexed_dataset_open_files(ds, idx, bin);
  free(idx);
  free(bin);
  if (rc) return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  return 0;
}

const ptdp_mmidx *ptdp_indexed_dataset_index(const ptdp_indexed_dataset *ds) { return &ds->ix; }
int64_t ptdp_indexed_dataset_num_sequences(const ptdp_indexed_dataset *ds) { return ds->ix.num_sequences; }
int64_t ptdp_indexed_dataset_num_documents(const ptdp_indexed_dataset *ds) { return ds->ix.num_doc_indices - 1; }
int32_t ptdp_indexed_dataset_length(const ptdp_indexed_dataset *ds, int64_t seq) { return ptdp_mmidx_length(&ds->ix, seq); }

/* Element i of a .bin region as int64 (integer dtypes). */
static int64_t load_elem(const unsigned char *p, int dtype, size_t i)
{
  switch (dtype) {
  case PTDP_DTYPE_UINT8: return p[i];
  case PTDP_DTYPE_INT8: return (int8_t)p[i];
  case PTDP_DTYPE_INT16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case PTDP_DTYPE_UINT16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
  case PTDP_DTYPE_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
  default: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
  }
}

static int integer_dtype(int dtype) { return dtype != PTDP_DTYPE_FLOAT32 && dtype != PTDP_DTYPE_FLOAT64; }

int ptdp_indexed_dataset_get(const ptdp_indexed_dataset *ds, int64_t seq, int64_t offset, int64_t count, int32_t *out)
{
  const ptdp_mmidx *ix = &ds->ix;
  PTDP_CHECK(integer_dtype(ix->dtype), "data file '%s' holds %s values, not token ids", ds->bin_path,
             ptdp_mmidx_dtype_name(ix->dtype));
  PTDP_CHECK(seq >= 0 && seq < ix->num_sequences, "sequence %lld is outside '%s' (%lld sequences)", (long long)seq,
             ds->idx_path, (long long)ix->num_sequences);
  int32_t len = ptdp_mmidx_length(ix, seq);
  PTDP_CHECK(offset >= 0 && count >= 0 && offset + count <= len,
             "tokens [%lld, %lld) are outside sequence %lld of '%s' (%d tokens)", (long long)offset,
             (long long)(offset + count), (long long)seq, ds->idx_path, (int)len);
  const unsigned char *p = (const unsigned char *)ds->bin_map + ptdp_mmidx_pointer(ix, seq) + (size_t)offset * ix->elem_size;
  if (ix->dtype == PTDP_DTYPE_UINT16) { /* the common case, kept tight */
    for (int64_t i = 0; i < count; i++) {
      uint16_t v;
      memcpy(&v, p + 2 * i, 2);
      out[i] = v;
    }
    return 0;
  }
  for (int64_t i = 0; i < count; i++) {
    int64_t v = load_elem(p, ix->dtype, (size_t)i);
    PTDP_CHECK(v >= INT32_MIN && v <= INT32_MAX, "token %lld of '%s' does not fit int32", (long long)v, ds->bin_path);
    out[i] = (int32_t)v;
  }
  return 0;
}
