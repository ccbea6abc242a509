/* Harness: safetensors files (src/convert/safetensors.c), as ptdp-convert --hf-in reads them.
 *
 * Input: a whole file.  ptdp_safetensors_parse (from memory) and ptdp_safetensors_open (the same
 * bytes as a file) must accept or refuse without crashing, and alike.  Promises checked when
 * they accept: the data section is the file after the header; every tensor's [begin, end) lies
 * inside it, is its shape's bytes (recomputed here in 128 bits) and the tensors, in order, tile it
 * exactly; every F32, F16 and BF16 tensor reads back (F32: the file's bytes); written again by
 * ptdp_safetensors_write in its own dtype and reopened, the names, shapes, metadata and every
 * value are the same (NaNs may change payload, not NaN-ness). */
#include "fuzz.h"

#include "ptdp/error.h"
#include "ptdp/safetensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ELEMS = 1 << 22 }; /* elements read per input (a file's size bounds them anyway) */

static int readable(ptdp_st_dtype t) { return t == PTDP_ST_F32 || t == PTDP_ST_F16 || t == PTDP_ST_BF16; }

/* The layout promises, recomputed independently of the reader. */
static void check_layout(const ptdp_safetensors *st, size_t size)
{
  if (st->data_start + st->data_size != size) fuzz_fail("data section is not the rest of the file");
  uint64_t at = 0;
  for (int i = 0; i < st->ntensors; i++) {
    const ptdp_st_tensor *t = &st->tensors[i];
    unsigned __int128 bytes = (unsigned __int128)ptdp_st_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) bytes *= (unsigned __int128)(uint64_t)t->shape[d];
    if (t->begin != at || t->end < t->begin || t->end > st->data_size) fuzz_fail("tensors do not tile the data");
    if (bytes != (unsigned __int128)(t->end - t->begin)) fuzz_fail("a tensor's bytes are not its shape's");
    if (!t->name[0] || t->ndim > PTDP_ST_MAX_DIMS) fuzz_fail("an empty name or too many dimensions");
    at = t->end;
  }
  if (at != st->data_size) fuzz_fail("tensors end before the data");
}

static int same_value(float a, float b)
{
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return memcmp(&a, &b, sizeof a) == 0;
}

/* Read every readable tensor (F32 also compared with the file's bytes), write them again, reopen
 * and compare. */
static void read_and_rewrite(const ptdp_safetensors *st, const uint8_t *data)
{
  ptdp_st_out *out = calloc((size_t)st->ntensors + 1, sizeof *out);
  float **vals = calloc((size_t)st->ntensors + 1, sizeof *vals);
  int n = 0;
  long long budget = MAX_ELEMS;
  for (int i = 0; out && vals && i < st->ntensors; i++) {
    const ptdp_st_tensor *t = &st->tensors[i];
    const int64_t k = ptdp_st_tensor_elems(t);
    if (!readable(t->dtype) || k > budget) continue;
    budget -= k;
    float *v = malloc(sizeof(float) * (size_t)k + 1);
    if (!v) break;
    if (ptdp_safetensors_read_f32(st, t, v)) fuzz_fail("a tensor the header accepted could not be read");
    if (t->dtype == PTDP_ST_F32 && k && memcmp(v, data + st->data_start + t->begin, 4 * (size_t)k))
      fuzz_fail("an F32 tensor read back other bytes than the file's");
    vals[n] = v;
    out[n] = (ptdp_st_out){.name = t->name, .dtype = t->dtype, .ndim = t->ndim, .data = v};
    memcpy(out[n].shape, t->shape, sizeof t->shape);
    n++;
  }
  char path[FUZZ_PATH_MAX];
  ptdp_safetensors *again = NULL;
  if (n && fuzz_file("st-out", (const uint8_t *)"", 0, path) == 0) {
    if (ptdp_safetensors_write(path, out, n, st->meta, st->nmeta)) fuzz_fail("writing accepted tensors failed");
    if (ptdp_safetensors_open(path, &again)) fuzz_fail("ptdp's own file was refused");
    if (again->ntensors != n || again->nmeta != st->nmeta) fuzz_fail("the rewritten file has other tensors");
    for (int i = 0; i < n; i++) {
      const ptdp_st_tensor *t = ptdp_safetensors_find(again, out[i].name);
      if (!t || t->dtype != out[i].dtype || t->ndim != out[i].ndim ||
          memcmp(t->shape, out[i].shape, sizeof(int64_t) * (size_t)t->ndim))
        fuzz_fail("a rewritten tensor changed name, dtype or shape");
      const int64_t k = ptdp_st_tensor_elems(t);
      float *w = malloc(sizeof(float) * (size_t)k + 1);
      if (w && ptdp_safetensors_read_f32(again, t, w)) fuzz_fail("a rewritten tensor could not be read");
      for (int64_t j = 0; w && j < k; j++)
        if (!same_value(w[j], vals[i][j])) fuzz_fail("a rewritten value changed");
      free(w);
    }
    for (int i = 0; i < st->nmeta; i++) {
      const char *v = ptdp_safetensors_meta(again, st->meta[i].key);
      if (!v || strcmp(v, st->meta[i].value)) fuzz_fail("rewritten metadata changed");
    }
    ptdp_safetensors_close(&again);
  }
  for (int i = 0; i < n; i++) free(vals[i]);
  free(vals);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  uint8_t *copy = malloc(size ? size : 1); /* a private copy: reads past the input are caught */
  if (!copy) return 0;
  memcpy(copy, data, size);
  ptdp_safetensors *mem = NULL, *file = NULL;
  const int refused = ptdp_safetensors_parse(copy, size, size, "fuzz.safetensors", &mem);
  fuzz_verdict("parse", refused);
  char path[FUZZ_PATH_MAX];
  if (fuzz_file("st", copy, size, path) == 0) {
    const int frefused = ptdp_safetensors_open(path, &file);
    fuzz_verdict("open", frefused);
    if (!refused != !frefused) fuzz_fail("parsing from memory and opening the file disagree");
    if (!frefused) {
      check_layout(file, size);
      read_and_rewrite(file, copy);
    }
  }
  if (!refused) check_layout(mem, size);
  ptdp_safetensors_close(&mem);
  ptdp_safetensors_close(&file);
  free(copy);
  ptdp_error_clear();
  return 0;
}
