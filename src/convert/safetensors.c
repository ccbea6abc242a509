/* safetensors files, read and written to the specification: see ptdp/safetensors.h. */
#include "ptdp/safetensors.h"

#include "ptdp/error.h"
#include "ptdp/half.h"
#include "ptdp/json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
  const char *name;
  int size;
} dtypes[PTDP_ST_NDTYPES] = {
  [PTDP_ST_BOOL] = {"BOOL", 1}, [PTDP_ST_U8] = {"U8", 1},     [PTDP_ST_I8] = {"I8", 1},
  [PTDP_ST_F8_E5M2] = {"F8_E5M2", 1}, [PTDP_ST_F8_E4M3] = {"F8_E4M3", 1}, [PTDP_ST_I16] = {"I16", 2},
  [PTDP_ST_U16] = {"U16", 2}, [PTDP_ST_F16] = {"F16", 2},     [PTDP_ST_BF16] = {"BF16", 2},
  [PTDP_ST_I32] = {"I32", 4}, [PTDP_ST_U32] = {"U32", 4},     [PTDP_ST_F32] = {"F32", 4},
  [PTDP_ST_I64] = {"I64", 8}, [PTDP_ST_U64] = {"U64", 8},     [PTDP_ST_F64] = {"F64", 8},
};

const char *ptdp_st_dtype_name(ptdp_st_dtype t) { return t >= 0 && t < PTDP_ST_NDTYPES ? dtypes[t].name : NULL; }

int ptdp_st_dtype_size(ptdp_st_dtype t) { return t >= 0 && t < PTDP_ST_NDTYPES ? dtypes[t].size : 0; }

int ptdp_st_dtype_of(const char *s)
{
  for (int t = 0; t < PTDP_ST_NDTYPES; t++)
    if (!strcmp(s, dtypes[t].name)) return t;
  return -1;
}

int64_t ptdp_st_tensor_elems(const ptdp_st_tensor *t)
{
  int64_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= t->shape[d]; /* bounded when parsed: the bytes fit the file */
  return n;
}

void ptdp_safetensors_close(ptdp_safetensors **pst)
{
  ptdp_safetensors *st = pst ? *pst : NULL;
  if (!st) return;
  for (int i = 0; i < st->ntensors; i++) free(st->tensors[i].name);
  for (int i = 0; i < st->nmeta; i++) {
    free(st->meta[i].key);
    free(st->meta[i].value);
  }
  free(st->tensors);
  free(st->meta);
  free(st->path);
  if (st->fd >= 0) close(st->fd);
  free(st);
  *pst = NULL;
}

/* ---------------------------------------------------------------- reading the header */

static char *dup_str(const char *s)
{
  const size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* A non-negative integer literal, as uint64. */
static int unsigned_of(const ptdp_json_value *v, uint64_t *u)
{
  if (!v || v->kind != PTDP_JSON_NUMBER || !v->integral || (v->neg && v->u)) return 0;
  *u = v->u;
  return 1;
}

/* v, the header or its __metadata__ (what), must be a JSON object (the reader refuses one that
 * names a tensor or a key twice). */
static int check_object(const ptdp_safetensors *st, const ptdp_json_value *v, const char *what)
{
  PTDP_CHECK(v->kind == PTDP_JSON_OBJECT, "%s: %s is not a JSON object", st->path, what);
  return 0;
}

static int read_meta(ptdp_safetensors *st, const ptdp_json_value *m)
{
  PTDP_CALL(check_object(st, m, "__metadata__"));
  PTDP_CALLOC(st->meta, (size_t)m->n + 1, sizeof *st->meta);
  for (int i = 0; i < m->n; i++) {
    PTDP_CHECK(m->items[i].kind == PTDP_JSON_STRING, "%s: __metadata__ entry '%s' is not a string (the format "
               "allows only strings there)", st->path, m->keys[i]);
    ptdp_st_meta *e = &st->meta[st->nmeta++];
    e->key = dup_str(m->keys[i]);
    e->value = dup_str(m->items[i].str);
    PTDP_CHECK_LOCAL(e->key && e->value, "out of memory"); /* an input-sized allocation */
  }
  return 0;
}

/* The entry's shape: integers >= 0, at most PTDP_ST_MAX_DIMS of them. */
static int read_shape(const ptdp_safetensors *st, ptdp_st_tensor *t, const ptdp_json_value *s)
{
  PTDP_CHECK(s && s->kind == PTDP_JSON_ARRAY, "%s: tensor '%s' has no shape array", st->path, t->name);
  PTDP_CHECK(s->n <= PTDP_ST_MAX_DIMS, "%s: tensor '%s' has %d dimensions; ptdp reads at most %d", st->path, t->name,
             s->n, PTDP_ST_MAX_DIMS);
  t->ndim = s->n;
  for (int d = 0; d < s->n; d++) {
    uint64_t u;
    PTDP_CHECK(unsigned_of(&s->items[d], &u) && u <= INT64_MAX,
               "%s: tensor '%s': dimension %d of its shape is not an integer in [0, 2^63)", st->path, t->name, d);
    t->shape[d] = (int64_t)u;
  }
  return 0;
}

/* Bytes the shape and dtype make, or an error when the product overflows 64 bits. */
static int shape_bytes(const ptdp_safetensors *st, const ptdp_st_tensor *t, uint64_t *bytes)
{
  uint64_t n = (uint64_t)ptdp_st_dtype_size(t->dtype);
  for (int d = 0; d < t->ndim; d++) {
    const uint64_t k = (uint64_t)t->shape[d];
    PTDP_CHECK(k == 0 || n <= UINT64_MAX / k, "%s: tensor '%s': its shape's size overflows 64 bits", st->path, t->name);
    n *= k;
  }
  *bytes = n;
  return 0;
}

static int read_entry(const ptdp_safetensors *st, ptdp_st_tensor *t, const ptdp_json_value *e)
{
  PTDP_CHECK(t->name[0], "%s: a tensor with an empty name", st->path);
  PTDP_CHECK(e->kind == PTDP_JSON_OBJECT, "%s: the entry of tensor '%s' is not an object", st->path, t->name);
  for (int i = 0; i < e->n; i++)
    PTDP_CHECK(!strcmp(e->keys[i], "dtype") || !strcmp(e->keys[i], "shape") || !strcmp(e->keys[i], "data_offsets"),
               "%s: tensor '%s' has the unknown key '%s' (an entry holds dtype, shape and data_offsets)", st->path,
               t->name, e->keys[i]);
  const ptdp_json_value *dt = ptdp_json_get(e, "dtype"), *off = ptdp_json_get(e, "data_offsets");
  PTDP_CHECK(dt && dt->kind == PTDP_JSON_STRING, "%s: tensor '%s' has no dtype string", st->path, t->name);
  const int k = ptdp_st_dtype_of(dt->str);
  PTDP_CHECK(k >= 0, "%s: tensor '%s' has the unknown dtype '%s'", st->path, t->name, dt->str);
  t->dtype = (ptdp_st_dtype)k;
  PTDP_CALL(read_shape(st, t, ptdp_json_get(e, "shape")));
  PTDP_CHECK(off && off->kind == PTDP_JSON_ARRAY && off->n == 2 && unsigned_of(&off->items[0], &t->begin) &&
               unsigned_of(&off->items[1], &t->end),
             "%s: tensor '%s': data_offsets is not a pair of integers >= 0", st->path, t->name);
  PTDP_CHECK(t->begin <= t->end, "%s: tensor '%s': data_offsets [%llu, %llu) end before they begin", st->path, t->name,
             (unsigned long long)t->begin, (unsigned long long)t->end);
  uint64_t bytes = 0;
  PTDP_CALL(shape_bytes(st, t, &bytes));
  PTDP_CHECK(bytes == t->end - t->begin,
             "%s: tensor '%s': its shape and dtype %s make %llu bytes but data_offsets [%llu, %llu) hold %llu",
             st->path, t->name, dt->str, (unsigned long long)bytes, (unsigned long long)t->begin,
             (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
  return 0;
}

static int by_offset(const void *a, const void *b)
{
  const ptdp_st_tensor *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* Sorted by offset, the tensors must tile [0, data_size) exactly. */
static int check_tiling(const ptdp_safetensors *st)
{
  uint64_t at = 0;
  for (int i = 0; i < st->ntensors; i++) {
    const ptdp_st_tensor *t = &st->tensors[i];
    PTDP_CHECK(t->begin >= at, "%s: tensor '%s' [%llu, %llu) overlaps the tensor before it (which ends at %llu)",
               st->path, t->name, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)at);
    PTDP_CHECK(t->begin == at, "%s: a hole in the data before tensor '%s' (bytes [%llu, %llu) belong to no tensor)",
               st->path, t->name, (unsigned long long)at, (unsigned long long)t->begin);
    PTDP_CHECK(t->end <= st->data_size, "%s: tensor '%s' ends at byte %llu of the data, past its end (%llu bytes)",
               st->path, t->name, (unsigned long long)t->end, (unsigned long long)st->data_size);
    at = t->end;
  }
  PTDP_CHECK(at == st->data_size, "%s: the data section has %llu bytes but its tensors end at %llu", st->path,
             (unsigned long long)st->data_size, (unsigned long long)at);
  return 0;
}

static int read_header(ptdp_safetensors *st, const ptdp_json_value *root)
{
  PTDP_CALL(check_object(st, root, "the header"));
  PTDP_CALLOC(st->tensors, (size_t)root->n + 1, sizeof *st->tensors);
  for (int i = 0; i < root->n; i++) {
    if (!strcmp(root->keys[i], "__metadata__")) {
      PTDP_CALL(read_meta(st, &root->items[i]));
      continue;
    }
    ptdp_st_tensor *t = &st->tensors[st->ntensors++];
    t->name = dup_str(root->keys[i]);
    PTDP_CHECK_LOCAL(t->name, "out of memory");
    PTDP_CALL(read_entry(st, t, &root->items[i]));
  }
  qsort(st->tensors, (size_t)st->ntensors, sizeof *st->tensors, by_offset);
  return check_tiling(st);
}

static uint64_t le64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* N, checked against the file's size and the format's limit. */
static int header_length(const uint8_t *head, size_t n, uint64_t file_size, const char *what, uint64_t *len)
{
  PTDP_CHECK(n >= 8 && file_size >= 8, "%s: not a safetensors file: %llu bytes, fewer than the 8 of the header "
             "length", what, (unsigned long long)file_size);
  *len = le64(head);
  PTDP_CHECK(*len <= file_size - 8, "%s: not a safetensors file (or truncated): its header length %llu exceeds the "
             "%llu bytes after it", what, (unsigned long long)*len, (unsigned long long)(file_size - 8));
  PTDP_CHECK(*len <= PTDP_ST_MAX_HEADER, "%s: a header of %llu bytes, more than the format's limit of 100,000,000",
             what, (unsigned long long)*len);
  PTDP_CHECK(*len >= 2, "%s: a header of %llu bytes cannot hold a JSON object", what, (unsigned long long)*len);
  return 0;
}

int ptdp_safetensors_parse(const uint8_t *head, size_t n, uint64_t file_size, const char *what, ptdp_safetensors **out)
{
  uint64_t len;
  *out = NULL;
  PTDP_CALL(header_length(head, n, file_size, what, &len));
  PTDP_CHECK_INTERNAL(len <= n - 8, "%s: the caller handed %zu bytes of a header of %llu", what, n,
                      (unsigned long long)len);
  const char *text = (const char *)head + 8;
  PTDP_CHECK(text[0] == '{', "%s: the header does not start with '{' (not a safetensors file?)", what);
  ptdp_safetensors *st;
  PTDP_CALLOC(st, 1, sizeof *st);
  st->fd = -1;
  st->path = dup_str(what);
  st->data_start = 8 + len;
  st->data_size = file_size - 8 - len;
  /* the reader's byte offsets count from the header's '{', 8 bytes into the file */
  ptdp_json_value root = {0};
  char *header = malloc(strlen(what) + sizeof " (its JSON header)");
  if (header) strcat(strcpy(header, what), " (its JSON header)");
  int rc = st->path && header ? ptdp_json_parse(text, (size_t)len, header, &root)
                              : PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  free(header);
  if (!rc) rc = read_header(st, &root);
  ptdp_json_free(&root);
  if (rc) ptdp_safetensors_close(&st);
  *out = st;
  return rc;
}

/* n bytes at offset off of fd into buf; a short file is an input error. */
static int pread_all(int fd, void *buf, size_t n, uint64_t off, const char *path)
{
  for (size_t got = 0; got < n;) {
    const ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    PTDP_CHECK_IO(r >= 0, "cannot read '%s': %s", path, strerror(errno));
    PTDP_CHECK(r > 0, "'%s' ends before byte %llu: truncated while being read?", path,
               (unsigned long long)(off + n));
    got += (size_t)r;
  }
  return 0;
}

static int open_fd(const char *path, int fd, ptdp_safetensors **out)
{
  struct stat sb;
  PTDP_CHECK_IO(fstat(fd, &sb) == 0, "cannot stat '%s': %s", path, strerror(errno));
  PTDP_CHECK(S_ISREG(sb.st_mode), "'%s' is not a regular file", path);
  uint8_t len8[8];
  const uint64_t size = (uint64_t)sb.st_size;
  uint64_t len = 0;
  if (size >= 8) PTDP_CALL(pread_all(fd, len8, 8, 0, path));
  PTDP_CALL(header_length(len8, size >= 8 ? 8 : 0, size, path, &len));
  uint8_t *head = malloc((size_t)len + 8);
  PTDP_CHECK_LOCAL(head, "out of memory for the %llu-byte header of '%s'", (unsigned long long)len, path);
  int rc = pread_all(fd, head, (size_t)len + 8, 0, path);
  if (!rc) rc = ptdp_safetensors_parse(head, (size_t)len + 8, size, path, out);
  free(head);
  return rc;
}

int ptdp_safetensors_open(const char *path, ptdp_safetensors **out)
{
  *out = NULL;
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO is refused below, not waited on */
  PTDP_CHECK(fd >= 0, "cannot open '%s': %s", path, strerror(errno));
  const int rc = open_fd(path, fd, out);
  if (rc) {
    close(fd);
    return rc;
  }
  (*out)->fd = fd;
  return 0;
}

const ptdp_st_tensor *ptdp_safetensors_find(const ptdp_safetensors *st, const char *name)
{
  for (int i = 0; i < st->ntensors; i++)
    if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
  return NULL;
}

const char *ptdp_safetensors_meta(const ptdp_safetensors *st, const char *key)
{
  for (int i = 0; i < st->nmeta; i++)
    if (!strcmp(st->meta[i].key, key)) return st->meta[i].value;
  return NULL;
}

/* ---------------------------------------------------------------- reading the data */

enum { IO_ELEMS = 1 << 20 }; /* elements converted at a time */

int ptdp_safetensors_read_f32(const ptdp_safetensors *st, const ptdp_st_tensor *t, float *out)
{
  const int es = ptdp_st_dtype_size(t->dtype);
  PTDP_CHECK(t->dtype == PTDP_ST_F32 || t->dtype == PTDP_ST_F16 || t->dtype == PTDP_ST_BF16,
             "%s: tensor '%s' is stored as %s; ptdp reads F32, F16 and BF16 tensors", st->path, t->name,
             ptdp_st_dtype_name(t->dtype));
  PTDP_CHECK_INTERNAL(st->fd >= 0, "%s: a header parsed from memory has no data to read", st->path);
  const int64_t n = ptdp_st_tensor_elems(t);
  if (t->dtype == PTDP_ST_F32) /* little-endian IEEE: the bytes are the floats (ptdp runs on little-endian hosts) */
    return pread_all(st->fd, out, (size_t)n * 4, st->data_start + t->begin, st->path);
  uint16_t *buf = malloc(sizeof *buf * IO_ELEMS);
  PTDP_CHECK_LOCAL(buf, "out of memory");
  int rc = 0;
  for (int64_t k = 0; k < n && !rc; k += IO_ELEMS) {
    const int64_t m = n - k < IO_ELEMS ? n - k : IO_ELEMS;
    rc = pread_all(st->fd, buf, (size_t)m * 2, st->data_start + t->begin + (uint64_t)k * (uint64_t)es, st->path);
    for (int64_t i = 0; !rc && i < m; i++)
      out[k + i] = t->dtype == PTDP_ST_BF16 ? ptdp_bf16_to_float(buf[i]) : ptdp_f16_to_float(buf[i]);
  }
  free(buf);
  return rc;
}

/* ---------------------------------------------------------------- writing */

uint64_t ptdp_st_out_bytes(const ptdp_st_out *t)
{
  uint64_t n = (uint64_t)ptdp_st_dtype_size(t->dtype);
  for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
  return n;
}

/* The header's JSON, padded with spaces to a multiple of 8 bytes; *text malloc'ed. */
static int header_text(const ptdp_st_out *t, int n, const ptdp_st_meta *meta, int nmeta, char **text, size_t *len)
{
  size_t sz = 0;
  char *buf = NULL;
  FILE *f = open_memstream(&buf, &sz);
  PTDP_CHECK_IO(f, "open_memstream: %s", strerror(errno));
  fputc('{', f);
  if (nmeta) {
    fputs("\"__metadata__\":{", f);
    for (int i = 0; i < nmeta; i++) {
      if (i) fputc(',', f);
      ptdp_json_write_string(f, meta[i].key);
      fputc(':', f);
      ptdp_json_write_string(f, meta[i].value);
    }
    fputc('}', f);
  }
  uint64_t at = 0;
  for (int i = 0; i < n; i++) {
    if (i || nmeta) fputc(',', f);
    ptdp_json_write_string(f, t[i].name);
    fprintf(f, ":{\"dtype\":\"%s\",\"shape\":[", ptdp_st_dtype_name(t[i].dtype));
    for (int d = 0; d < t[i].ndim; d++) fprintf(f, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
    const uint64_t b = ptdp_st_out_bytes(&t[i]);
    fprintf(f, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + b));
    at += b;
  }
  fputc('}', f);
  while (ftell(f) % 8) fputc(' ', f); /* the data starts 8-byte aligned */
  const int bad = ferror(f);
  fclose(f);
  if (bad || !buf) {
    free(buf);
    return PTDP_FAIL(PTDP_ERR_MEM, "out of memory for a safetensors header");
  }
  *text = buf;
  *len = sz;
  return 0;
}

static int check_outputs(const char *path, const ptdp_st_out *t, int n)
{
  for (int i = 0; i < n; i++) {
    PTDP_CHECK_INTERNAL(t[i].dtype == PTDP_ST_F32 || t[i].dtype == PTDP_ST_BF16 || t[i].dtype == PTDP_ST_F16,
                        "%s: tensor '%s': ptdp writes F32, BF16 and F16 only", path, t[i].name);
    PTDP_CHECK_INTERNAL(t[i].name[0] && strcmp(t[i].name, "__metadata__") && t[i].ndim <= PTDP_ST_MAX_DIMS,
                        "%s: tensor %d: an empty or reserved name, or too many dimensions", path, i);
    for (int j = 0; j < i; j++)
      PTDP_CHECK_INTERNAL(strcmp(t[i].name, t[j].name), "%s: tensor '%s' given twice", path, t[i].name);
  }
  return 0;
}

/* Tensor t's values in its dtype to f, IO_ELEMS at a time. */
static int write_data(FILE *f, const ptdp_st_out *t, void *buf, const char *path)
{
  const uint64_t n = ptdp_st_out_bytes(t) / (uint64_t)ptdp_st_dtype_size(t->dtype);
  if (t->dtype == PTDP_ST_F32) {
    PTDP_CHECK_IO(fwrite(t->data, 4, (size_t)n, f) == n, "cannot write '%s': %s", path, strerror(errno));
    return 0;
  }
  uint16_t *h = buf;
  for (uint64_t k = 0; k < n; k += IO_ELEMS) {
    const uint64_t m = n - k < IO_ELEMS ? n - k : IO_ELEMS;
    for (uint64_t i = 0; i < m; i++)
      h[i] = t->dtype == PTDP_ST_BF16 ? ptdp_float_to_bf16(t->data[k + i]) : ptdp_float_to_f16(t->data[k + i]);
    PTDP_CHECK_IO(fwrite(h, 2, (size_t)m, f) == m, "cannot write '%s': %s", path, strerror(errno));
  }
  return 0;
}

int ptdp_safetensors_write(const char *path, const ptdp_st_out *t, int n, const ptdp_st_meta *meta, int nmeta)
{
  PTDP_CALL(check_outputs(path, t, n));
  char *text = NULL;
  size_t len = 0;
  PTDP_CALL(header_text(t, n, meta, nmeta, &text, &len));
  FILE *f = fopen(path, "wb");
  void *buf = malloc(2 * IO_ELEMS);
  int rc = 0;
  if (!f) rc = PTDP_FAIL(PTDP_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
  else if (!buf) rc = PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  uint8_t len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)len >> (8 * i));
  if (!rc && (fwrite(len8, 1, 8, f) != 8 || fwrite(text, 1, len, f) != len))
    rc = PTDP_FAIL(PTDP_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  for (int i = 0; i < n && !rc; i++) rc = write_data(f, &t[i], buf, path);
  if (f && fclose(f) && !rc) rc = PTDP_FAIL(PTDP_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  free(buf);
  free(text);
  return rc;
}
