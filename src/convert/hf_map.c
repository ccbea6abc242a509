/* The name-and-layout engine, shards and small file helpers (convert_impl.h). */
#include "convert_impl.h"

#include "ptdp/error.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- rows */

void hf_dims_complete(hf_dims *d)
{
  if (!d->groups) d->groups = d->heads;
  if (!d->head_dim) d->head_dim = d->heads ? d->h / d->heads : 0;
}

/* Rows of the Hugging Face tensor (before any transpose) of a Megatron-core tensor of mrows. */
static long long hf_rows_count(const hf_dims *d, hf_rows how, int part, long long mrows)
{
  if (how == HF_ROWS_QKV_PART) return (part == 0 ? d->heads : d->groups) * d->head_dim;
  if (how == HF_ROWS_HALF) return mrows / 2;
  return mrows; /* SAME and QKV_BY_HEAD: permutations */
}

/* The Megatron-core row of Hugging Face row r (hf_rows in convert_impl.h: the formulas). */
static long long row_of(const hf_dims *d, hf_rows how, int part, long long r)
{
  const long long hd = d->head_dim, n = d->heads / d->groups, i = r % hd;
  switch (how) {
  case HF_ROWS_QKV_BY_HEAD: { /* r = j a hd + a' hd + i  ->  a' 3 hd + j hd + i */
    const long long qh = d->heads * hd, j = r / qh, a = r % qh / hd;
    return a * 3 * hd + j * hd + i;
  }
  case HF_ROWS_QKV_PART: {
    const long long head = r / hd, g = part == 0 ? head / n : head, stride = (n + 2) * hd;
    return g * stride + (part == 0 ? head % n * hd : (n + part - 1) * hd) + i;
  }
  case HF_ROWS_HALF: return (long long)part * d->ffn + r;
  default: return r;
  }
}

/* ---------------------------------------------------------------- the table */

static int is_layered(const hf_name *e) { return strstr(e->mcore, "%d") != NULL; }

static int present(const hf_name *e, const hf_dims *d) { return !e->if_untied || d->untied; }

static const hf_tensor *find_mc(const hf_tensor *mc, int nmc, const char *name)
{
  for (int i = 0; i < nmc; i++)
    if (!strcmp(mc[i].name, name)) return &mc[i];
  return NULL;
}

/* Visit the table's (entry, layer) pairs in Hugging Face's order: the entries without a layer
 * before the first layered one, the layers in turn, then the rest. */
typedef int (*visit_fn)(void *ctx, const hf_name *e, const char *hf, const char *mcore);

static int visit_one(const hf_name *e, int layer, visit_fn fn, void *ctx)
{
  char hf[128], mcore[128];
  snprintf(hf, sizeof hf, e->hf, layer);
  snprintf(mcore, sizeof mcore, e->mcore, layer);
  return fn(ctx, e, hf, mcore);
}

static int visit(const hf_arch *a, const hf_dims *d, visit_fn fn, void *ctx)
{
  int first = 0;
  for (; first < a->nnames && !is_layered(&a->names[first]); first++)
    if (present(&a->names[first], d)) PTDP_CALL(visit_one(&a->names[first], 0, fn, ctx));
  for (long long l = 0; l < d->layers; l++)
    for (int k = first; k < a->nnames; k++)
      if (is_layered(&a->names[k]) && present(&a->names[k], d)) PTDP_CALL(visit_one(&a->names[k], (int)l, fn, ctx));
  for (int k = first; k < a->nnames; k++)
    if (!is_layered(&a->names[k]) && present(&a->names[k], d)) PTDP_CALL(visit_one(&a->names[k], 0, fn, ctx));
  return 0;
}

void hf_tensors_free(hf_tensor *t, int n)
{
  for (int i = 0; t && i < n; i++) free(t[i].data);
  free(t);
}

void hf_names_free(char **names, int n)
{
  for (int i = 0; names && i < n; i++) free(names[i]);
  free(names);
}

/* ---------------------------------------------------------------- export */

typedef struct {
  const hf_dims *d;
  const hf_tensor *mc;
  int nmc;
  hf_tensor *out;
  int n, cap;
} export_ctx;

/* The Hugging Face tensor of entry e from Megatron-core tensor m: rows mapped, then transposed. */
static int export_one(void *vctx, const hf_name *e, const char *hf, const char *mcore)
{
  export_ctx *c = vctx;
  const hf_tensor *m = find_mc(c->mc, c->nmc, mcore);
  PTDP_CHECK_INTERNAL(m, "the conversion table names '%s', which the checkpoint's model does not have", mcore);
  PTDP_CHECK_INTERNAL(c->n < c->cap, "more Hugging Face tensors than the table has room for");
  hf_tensor *o = &c->out[c->n++];
  const long long R = hf_rows_count(c->d, e->rows, e->part, m->rows), C = m->cols;
  snprintf(o->name, sizeof o->name, "%s", hf);
  o->ndim = m->ndim;
  o->rows = e->transpose && m->ndim == 2 ? C : R;
  o->cols = e->transpose && m->ndim == 2 ? R : C;
  PTDP_ALLOC(o->data, sizeof(float) * (size_t)(R * C));
  for (long long r = 0; r < R; r++) {
    const float *src = m->data + row_of(c->d, e->rows, e->part, r) * C;
    if (e->transpose && m->ndim == 2)
      for (long long k = 0; k < C; k++) o->data[k * R + r] = src[k];
    else memcpy(o->data + r * C, src, sizeof(float) * (size_t)C);
  }
  return 0;
}

static int count_one(void *ctx, const hf_name *e, const char *hf, const char *mcore)
{
  (void)e, (void)hf, (void)mcore;
  ++*(int *)ctx;
  return 0;
}

static int table_size(const hf_arch *a, const hf_dims *d, int *n)
{
  *n = 0;
  return visit(a, d, count_one, n);
}

int hf_map_export(const hf_arch *a, const hf_dims *d, const hf_tensor *mc, int nmc, hf_tensor **out, int *nout)
{
  export_ctx c = {.d = d, .mc = mc, .nmc = nmc};
  PTDP_CALL(table_size(a, d, &c.cap));
  PTDP_CALLOC(c.out, (size_t)c.cap + 1, sizeof *c.out);
  const int rc = visit(a, d, export_one, &c);
  if (rc) {
    hf_tensors_free(c.out, c.n);
    return rc;
  }
  *out = c.out;
  *nout = c.n;
  return 0;
}

/* ---------------------------------------------------------------- import */

typedef struct {
  const hf_dims *d;
  hf_tensor *mc;
  int nmc;
  unsigned char **seen; /* [nmc] a flag per row: written */
  hf_get_fn get;
  void *ctx;
} import_ctx;

static int import_one(void *vctx, const hf_name *e, const char *hf, const char *mcore)
{
  import_ctx *c = vctx;
  hf_tensor *m = NULL;
  for (int i = 0; i < c->nmc && !m; i++)
    if (!strcmp(c->mc[i].name, mcore)) m = &c->mc[i];
  PTDP_CHECK_INTERNAL(m, "the conversion table names '%s', which the model does not have", mcore);
  const long long R = hf_rows_count(c->d, e->rows, e->part, m->rows), C = m->cols;
  const int t = e->transpose && m->ndim == 2;
  float *buf;
  PTDP_ALLOC(buf, sizeof(float) * (size_t)(R * C));
  int rc = c->get(c->ctx, hf, t ? C : R, t ? R : C, m->ndim, buf);
  unsigned char *seen = c->seen[m - c->mc];
  for (long long r = 0; !rc && r < R; r++) {
    const long long mr = row_of(c->d, e->rows, e->part, r);
    if (seen[mr]) rc = PTDP_FAIL(PTDP_ERR_INTERNAL, "row %lld of '%s' comes from two tensors", mr, mcore);
    seen[mr] = 1;
    float *dst = m->data + mr * C;
    if (t)
      for (long long k = 0; k < C; k++) dst[k] = buf[k * R + r];
    else memcpy(dst, buf + r * C, sizeof(float) * (size_t)C);
  }
  free(buf);
  return rc;
}

int hf_map_import(const hf_arch *a, const hf_dims *d, hf_tensor *mc, int nmc, hf_get_fn get, void *ctx)
{
  import_ctx c = {.d = d, .mc = mc, .nmc = nmc, .get = get, .ctx = ctx};
  PTDP_CALLOC(c.seen, (size_t)nmc + 1, sizeof *c.seen);
  int rc = 0;
  for (int i = 0; i < nmc && !rc; i++)
    if (!(c.seen[i] = calloc((size_t)mc[i].rows + 1, 1))) rc = PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  if (!rc) rc = visit(a, d, import_one, &c);
  for (int i = 0; i < nmc && !rc; i++)
    for (long long r = 0; r < mc[i].rows && !rc; r++)
      if (!c.seen[i][r])
        rc = PTDP_FAIL(PTDP_ERR_INTERNAL, "the %s table leaves row %lld of '%s' unset", a->architecture, r, mc[i].name);
  for (int i = 0; i < nmc; i++) free(c.seen[i]);
  free(c.seen);
  return rc;
}

/* ---------------------------------------------------------------- shapes */

typedef struct {
  const hf_dims *d;
  const hf_tensor *mc;
  int nmc;
  hf_shape_fn fn;
  void *ctx;
} shapes_ctx;

static int shape_one(void *vctx, const hf_name *e, const char *hf, const char *mcore)
{
  (void)mcore;
  shapes_ctx *c = vctx;
  char layer0[128]; /* every layer's tensors have layer 0's shapes */
  snprintf(layer0, sizeof layer0, e->mcore, 0);
  const hf_tensor *m = find_mc(c->mc, c->nmc, layer0);
  PTDP_CHECK_INTERNAL(m, "the conversion table names '%s', which the model does not have", layer0);
  const long long R = hf_rows_count(c->d, e->rows, e->part, m->rows), C = m->cols;
  const int t = e->transpose && m->ndim == 2;
  return c->fn(c->ctx, hf, t ? C : R, t ? R : C, m->ndim);
}

int hf_map_shapes(const hf_arch *a, const hf_dims *d, const hf_tensor *mc, int nmc, hf_shape_fn fn, void *ctx)
{
  shapes_ctx c = {.d = d, .mc = mc, .nmc = nmc, .fn = fn, .ctx = ctx};
  return visit(a, d, shape_one, &c);
}

typedef struct {
  char **names;
  int n, cap;
} names_ctx;

static int name_one(void *vctx, const hf_name *e, const char *hf, const char *mcore)
{
  (void)e, (void)mcore;
  names_ctx *c = vctx;
  PTDP_CHECK_INTERNAL(c->n < c->cap, "names");
  const size_t k = strlen(hf) + 1;
  PTDP_ALLOC(c->names[c->n], k);
  memcpy(c->names[c->n++], hf, k);
  return 0;
}

int hf_map_names(const hf_arch *a, const hf_dims *d, char ***names, int *n)
{
  names_ctx c = {0};
  PTDP_CALL(table_size(a, d, &c.cap));
  PTDP_CALLOC(c.names, (size_t)c.cap + 1, sizeof *c.names);
  const int rc = visit(a, d, name_one, &c);
  if (rc) {
    hf_names_free(c.names, c.n);
    return rc;
  }
  *names = c.names;
  *n = c.n;
  return 0;
}

/* ---------------------------------------------------------------- shards */

static ptdp_st_out out_of(const hf_tensor *t, ptdp_st_dtype dtype)
{
  ptdp_st_out o = {.name = t->name, .dtype = dtype, .ndim = t->ndim, .data = t->data};
  o.shape[0] = t->rows;
  o.shape[1] = t->cols;
  return o;
}

/* Split t[0 .. n) greedily, in order, into shards of at most max bytes (a tensor larger than max
 * is a shard of its own, as Hugging Face does); shard[i] is tensor i's shard. */
static int plan_shards(const hf_tensor *t, int n, ptdp_st_dtype dtype, unsigned long long max, int *shard)
{
  int s = 0;
  unsigned long long in = 0;
  for (int i = 0; i < n; i++) {
    const ptdp_st_out o = out_of(&t[i], dtype);
    const unsigned long long b = ptdp_st_out_bytes(&o);
    if (in > 0 && in + b > max) s++, in = 0;
    shard[i] = s;
    in += b;
  }
  return s + 1;
}

static int write_index(const char *dir, const hf_tensor *t, int n, const int *shard, int nshards,
                       unsigned long long total)
{
  char path[2 * PTDP_OPT_STRLEN], file[64];
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  FILE *f = fopen(path, "w");
  PTDP_CHECK_IO(f, "cannot create '%s': %s", path, strerror(errno));
  fprintf(f, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {\n", total);
  for (int i = 0; i < n; i++) {
    snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", shard[i] + 1, nshards);
    fputs("    ", f);
    ptdp_json_write_string(f, t[i].name);
    fprintf(f, ": \"%s\"%s\n", file, i + 1 < n ? "," : "");
  }
  fputs("  }\n}\n", f);
  PTDP_CHECK_IO(!ferror(f) && fclose(f) == 0, "cannot write '%s': %s", path, strerror(errno));
  return 0;
}

/* Whether name is a weight file of ours: model.safetensors, its index, or model-K-of-N.safetensors. */
static int weight_file(const char *name)
{
  unsigned k, n;
  char tail[32];
  if (!strcmp(name, "model.safetensors") || !strcmp(name, "model.safetensors.index.json")) return 1;
  return sscanf(name, "model-%5u-of-%5u%31s", &k, &n, tail) == 3 && !strcmp(tail, ".safetensors");
}

/* Remove the weight files an earlier export left in dir: a stale index would send a reader to
 * old shards (save_pretrained removes them too). */
static int remove_old_weights(const char *dir)
{
  DIR *d = opendir(dir);
  PTDP_CHECK_IO(d, "cannot list '%s': %s", dir, strerror(errno));
  int rc = 0;
  for (struct dirent *e; !rc && (e = readdir(d));) {
    if (!weight_file(e->d_name)) continue;
    char path[2 * PTDP_OPT_STRLEN];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) && errno != ENOENT) rc = PTDP_FAIL(PTDP_ERR_IO, "cannot remove '%s': %s", path, strerror(errno));
  }
  closedir(d);
  return rc;
}

int hf_write_shards(const char *dir, const hf_tensor *t, int n, ptdp_st_dtype dtype, unsigned long long max_bytes)
{
  PTDP_CALL(remove_old_weights(dir));
  static const ptdp_st_meta meta[] = {{"format", "pt"}}; /* what transformers' save_pretrained records */
  int *shard;
  ptdp_st_out *o;
  PTDP_CALLOC(shard, (size_t)n + 1, sizeof *shard);
  PTDP_CALLOC(o, (size_t)n + 1, sizeof *o);
  const int nshards = plan_shards(t, n, dtype, max_bytes, shard);
  unsigned long long total = 0;
  int rc = 0;
  for (int s = 0, i = 0; s < nshards && !rc; s++) {
    int k = 0;
    for (; i < n && shard[i] == s; i++) {
      o[k] = out_of(&t[i], dtype);
      total += ptdp_st_out_bytes(&o[k++]);
    }
    char path[2 * PTDP_OPT_STRLEN];
    if (nshards == 1) snprintf(path, sizeof path, "%s/model.safetensors", dir);
    else snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, s + 1, nshards);
    rc = ptdp_safetensors_write(path, o, k, meta, 1);
  }
  if (!rc && nshards > 1) rc = write_index(dir, t, n, shard, nshards, total);
  free(shard);
  free(o);
  return rc;
}

/* ---------------------------------------------------------------- helpers */

int hf_parse_size(const char *s, unsigned long long *bytes)
{
  char *end;
  errno = 0;
  const double v = strtod(s, &end);
  PTDP_CHECK(end != s && errno == 0 && v > 0, "max-shard-size '%s' is not a positive size (e.g. 5GB, 500MB)", s);
  static const struct {
    const char *unit;
    double mult;
  } units[] = {{"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
               {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcasecmp(end, units[i].unit)) {
      const double b = v * units[i].mult;
      PTDP_CHECK(b >= 1 && b < 1.8e19, "max-shard-size '%s' is out of range", s);
      *bytes = (unsigned long long)b;
      return 0;
    }
  return PTDP_FAIL(PTDP_ERR_INPUT, "max-shard-size '%s': unknown unit '%s' (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s,
                   end);
}

int hf_copy_file(const char *from, const char *to)
{
  FILE *in = fopen(from, "rb");
  PTDP_CHECK(in, "cannot open '%s': %s", from, strerror(errno));
  FILE *out = fopen(to, "wb");
  if (!out) {
    fclose(in);
    return PTDP_FAIL(PTDP_ERR_IO, "cannot create '%s': %s", to, strerror(errno));
  }
  char buf[1 << 16];
  size_t k;
  int rc = 0;
  while (!rc && (k = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, k, out) != k) rc = PTDP_FAIL(PTDP_ERR_IO, "cannot write '%s': %s", to, strerror(errno));
  if (!rc && ferror(in)) rc = PTDP_FAIL(PTDP_ERR_IO, "cannot read '%s'", from);
  fclose(in);
  if (fclose(out) && !rc) rc = PTDP_FAIL(PTDP_ERR_IO, "cannot write '%s': %s", to, strerror(errno));
  return rc;
}

int hf_make_dir(const char *dir)
{
  char path[PTDP_OPT_STRLEN];
  PTDP_CHECK(strlen(dir) < sizeof path, "directory name '%s' is too long", dir);
  strcpy(path, dir);
  for (char *p = path + 1; *p; p++) /* mkdir -p */
    if (*p == '/') {
      *p = '\0';
      PTDP_CHECK_IO(mkdir(path, 0777) == 0 || errno == EEXIST, "cannot make '%s': %s", path, strerror(errno));
      *p = '/';
    }
  PTDP_CHECK_IO(mkdir(path, 0777) == 0 || errno == EEXIST, "cannot make '%s': %s", path, strerror(errno));
  struct stat sb;
  PTDP_CHECK(stat(path, &sb) == 0 && S_ISDIR(sb.st_mode), "'%s' is not a directory", dir);
  return 0;
}
