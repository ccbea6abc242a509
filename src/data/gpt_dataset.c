/* GPT datasets: Megatron's GPTDataset index arrays per (dataset, split), cached on disk by
 * rank 0, and blending across datasets (see include/ptdp/gpt_dataset.h, gpt_index.h).
 *
 * Cache file (one per dataset and split), little-endian:
 *   char[8] "PTDPGIDX", u64 version 1, u64 description length L, char[L] description (every
 *   parameter that shapes the arrays; compared on load), i64 num_epochs, i64 separate_final,
 *   i64 n_doc_index, i64 total_samples, i64 num_samples_sans_final,
 *   int32 doc_index[n_doc_index], int64 sample_index[2*(total_samples+1)], int64 shuffle[total_samples]
 * Name: gpt-<train|valid|test>-<FNV-1a 64 of the description, hex>.idx */
#include "ptdp/gpt_dataset.h"

#include "gpt_index.h"
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DATASETS 256
static const char *split_names[3] = {"train", "valid", "test"};

typedef struct {
  int built;
  ptdp_gpt_plan plan;
  int64_t n_doc_index;
  int32_t *doc_index;
  int64_t *sample_index; /* 2*(total_samples+1) */
  int64_t *shuffle;      /* total_samples */
} gpt_split;

struct ptdp_data {
  int seq_length, n;
  double weights[MAX_DATASETS];
  ptdp_indexed_dataset *ds[MAX_DATASETS];
  gpt_split sp[MAX_DATASETS][3];
  int64_t blend_size[3];
  int32_t *blend_source[3];
  int64_t *blend_sample[3];
  int vocab_hint;
};

/* ---------------------------------------------------------------- cache files */

static int mkdir_p(const char *path)
{
  char buf[4096];
  PTDP_CHECK(strlen(path) < sizeof buf, "cache path too long: '%s'", path);
  strcpy(buf, path);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        PTDP_CHECK_IO(0, "cannot create the data cache directory '%s': %s", buf, strerror(errno));
      *p = c;
      if (!c) break;
    }
  }
  return 0;
}

static uint64_t fnv1a(const char *s)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static int write_all(FILE *f, const void *p, size_t size, size_t n) { return n == 0 || fwrite(p, size, n, f) == n; }

static int save_split(const gpt_split *g, const char *path, const char *desc)
{
  char tmp[4400];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  PTDP_CHECK_IO(f, "cannot create the index cache file '%s': %s", tmp, strerror(errno));
  uint64_t version = 1, dl = strlen(desc);
  int64_t h[5] = {g->plan.num_epochs, g->plan.separate_final_epoch, g->n_doc_index, g->plan.total_samples,
                  g->plan.num_samples_sans_final};
  size_t ns = (size_t)g->plan.total_samples;
  int ok = write_all(f, "PTDPGIDX", 1, 8) && write_all(f, &version, 8, 1) && write_all(f, &dl, 8, 1) &&
           write_all(f, desc, 1, dl) && write_all(f, h, 8, 5) &&
           write_all(f, g->doc_index, 4, (size_t)g->n_doc_index) && write_all(f, g->sample_index, 8, 2 * (ns + 1)) &&
           write_all(f, g->shuffle, 8, ns);
  int e = errno;
  if (fclose(f) != 0) ok = 0, e = errno;
  if (!ok) remove(tmp);
  PTDP_CHECK_IO(ok, "cannot write the index cache file '%s': %s", tmp, strerror(e));
  PTDP_CHECK_IO(rename(tmp, path) == 0, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
  return 0;
}

static int read_all(FILE *f, void *p, size_t size, size_t n) { return n == 0 || fread(p, size, n, f) == n; }

/* Load a cache file; 1 if it is missing or does not match desc (then nothing is kept). */
static int load_split(gpt_split *g, const char *path, const char *desc, int *missing)
{
  *missing = 1;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char magic[8];
  uint64_t version = 0, dl = 0;
  int64_t h[5];
  int ok = read_all(f, magic, 1, 8) && memcmp(magic, "PTDPGIDX", 8) == 0 && read_all(f, &version, 8, 1) &&
           version == 1 && read_all(f, &dl, 8, 1) && dl == strlen(desc);
  char *d = ok ? malloc(dl + 1) : NULL;
  ok = ok && d && read_all(f, d, 1, dl) && memcmp(d, desc, dl) == 0 && read_all(f, h, 8, 5);
  free(d);
  ok = ok && h[0] >= 1 && h[2] >= 0 && h[3] >= 0 && h[4] >= 0 && h[4] <= h[3] && h[2] < ((int64_t)1 << 40) &&
       h[3] < ((int64_t)1 << 40);
  if (ok) {
    g->plan.num_epochs = h[0];
    g->plan.separate_final_epoch = (int)h[1];
    g->n_doc_index = h[2];
    g->plan.total_samples = h[3];
    g->plan.num_samples_sans_final = h[4];
    size_t ns = (size_t)h[3];
    g->doc_index = malloc((size_t)h[2] * 4 + 4);
    g->sample_index = malloc(2 * (ns + 1) * 8);
    g->shuffle = malloc(ns * 8 + 8);
    ok = g->doc_index && g->sample_index && g->shuffle && read_all(f, g->doc_index, 4, (size_t)h[2]) &&
         read_all(f, g->sample_index, 8, 2 * (ns + 1)) && read_all(f, g->shuffle, 8, ns) && fgetc(f) == EOF;
    if (!ok) {
      free(g->doc_index), free(g->sample_index), free(g->shuffle);
      g->doc_index = NULL, g->sample_index = NULL, g->shuffle = NULL;
    }
  }
  fclose(f);
  *missing = !ok;
  return 0;
}

/* ---------------------------------------------------------------- building */

static int build_split(gpt_split *g, const ptdp_indexed_dataset *ds, int64_t begin, int64_t end, int64_t want,
                       int seq_length, unsigned long long seed, const char *what)
{
  const ptdp_mmidx *ix = ptdp_indexed_dataset_index(ds);
  int64_t tokens = 0;
  for (int64_t i = begin; i < end; i++) tokens += ptdp_mmidx_length(ix, i);
  PTDP_CHECK(ptdp_gpt_plan_make(&g->plan, tokens, want, seq_length) == 0,
             "%s: the split has %lld tokens, too few for a single sample", what, (long long)tokens);
  PTDP_CHECK(g->plan.num_epochs * (end - begin) < INT32_MAX, "%s: %lld epochs of %lld documents is too many", what,
             (long long)g->plan.num_epochs, (long long)(end - begin));
  g->n_doc_index = g->plan.num_epochs * (end - begin);
  int32_t *lengths;
  PTDP_ALLOC(lengths, (size_t)ix->num_sequences * 4 + 4);
  for (int64_t i = 0; i < ix->num_sequences; i++) lengths[i] = ptdp_mmidx_length(ix, i);
  g->doc_index = malloc((size_t)g->n_doc_index * 4 + 4);
  g->sample_index = malloc(2 * ((size_t)g->plan.total_samples + 1) * 8);
  g->shuffle = malloc((size_t)g->plan.total_samples * 8 + 8);
  if (!g->doc_index || !g->sample_index || !g->shuffle) free(lengths);
  PTDP_CHECK(g->doc_index && g->sample_index && g->shuffle, "%s: out of memory for the index arrays", what);
  ptdp_rng r; /* one stream per (dataset, split), consumed in Megatron's order */
  ptdp_rng_seed(&r, seed);
  ptdp_gpt_doc_index(g->doc_index, begin, end, &g->plan, &r);
  ptdp_gpt_sample_index(g->sample_index, g->doc_index, lengths, &g->plan, seq_length);
  ptdp_gpt_shuffle_index(g->shuffle, &g->plan, &r);
  free(lengths);
  return 0;
}

/* ---------------------------------------------------------------- data_path */

static int parse_data_path(ptdp_data *d, const char *path, char prefixes[][1024])
{
  char buf[65536];
  PTDP_CHECK(path && strlen(path) < sizeof buf, "data-path is missing or too long");
  strcpy(buf, path);
  char *words[2 * MAX_DATASETS + 1];
  int nw = 0;
  for (char *t = strtok(buf, " \t\n"); t; t = strtok(NULL, " \t\n")) {
    PTDP_CHECK(nw < 2 * MAX_DATASETS, "data-path: more than %d datasets", MAX_DATASETS);
    words[nw++] = t;
  }
  PTDP_CHECK(nw >= 1, "data-path is empty");
  if (nw == 1) {
    d->n = 1;
    d->weights[0] = 1;
    PTDP_CHECK(strlen(words[0]) < 1000, "data-path prefix too long");
    strcpy(prefixes[0], words[0]);
    return 0;
  }
  PTDP_CHECK(nw % 2 == 0, "data-path '%s': expected one prefix or pairs 'weight prefix'", path);
  double sum = 0;
  d->n = nw / 2;
  for (int k = 0; k < d->n; k++) {
    char *end;
    double w = strtod(words[2 * k], &end);
    PTDP_CHECK(*end == '\0' && end != words[2 * k] && w > 0 && isfinite(w),
               "data-path: '%s' is not a positive weight (expected 'weight prefix' pairs)", words[2 * k]);
    PTDP_CHECK(strlen(words[2 * k + 1]) < 1000, "data-path prefix too long");
    d->weights[k] = w;
    sum += w;
    strcpy(prefixes[k], words[2 * k + 1]);
  }
  for (int k = 0; k < d->n; k++) d->weights[k] /= sum;
  return 0;
}

/* Default cache: beside the data, as Megatron does: dirname(prefix)/cache/GPTDataset_indices */
static void cache_dir(char *out, size_t n, const char *cache_path, const char *prefix)
{
  if (cache_path && *cache_path) {
    snprintf(out, n, "%s", cache_path);
    return;
  }
  const char *slash = strrchr(prefix, '/');
  if (!slash) snprintf(out, n, "cache/GPTDataset_indices");
  else snprintf(out, n, "%.*s/cache/GPTDataset_indices", (int)(slash - prefix), prefix);
}

/* ---------------------------------------------------------------- open */

/* Samples a dataset of a blend must supply: Megatron's ceil(ceil(n*w) * 1.005). */
static int64_t per_dataset_samples(const ptdp_data *d, int k, long long n)
{
  if (d->n == 1) return n;
  return (int64_t)ceil(ceil((double)n * d->weights[k]) * 1.005);
}

/* Build (rank 0) or load (others, or rank 0 on a cache hit) the index of every (dataset, split). */
static int indices(ptdp_data *d, const ptdp_data_args *a, char prefixes[][1024], int root)
{
  for (int k = 0; k < d->n; k++) {
    const ptdp_mmidx *ix = ptdp_indexed_dataset_index(d->ds[k]);
    int64_t bounds[4];
    char err[256], dir[4096], desc[8192], path[4200];
    PTDP_CHECK(ptdp_split_bounds(a->split ? a->split : "969,30,1", ix->num_sequences, bounds, err, sizeof err) == 0,
               "%s", err);
    cache_dir(dir, sizeof dir, a->cache_path, prefixes[k]);
    if (root) PTDP_CALL(mkdir_p(dir));
    for (int s = 0; s < 3; s++) {
      gpt_split *g = &d->sp[k][s];
      int64_t want = per_dataset_samples(d, k, a->num_samples[s]);
      if (want <= 0 || bounds[s + 1] == bounds[s]) continue;
      snprintf(desc, sizeof desc,
               "ptdp GPTDataset index v1; prefix=%s; sequences=%lld; idx_tokens_bytes=%lld; split=%s [%lld, %lld); "
               "num_samples=%lld; seq_length=%d; seed=%llu",
               prefixes[k], (long long)ix->num_sequences,
               (long long)(ix->num_sequences ? ptdp_mmidx_pointer(ix, ix->num_sequences - 1) : 0), split_names[s],
               (long long)bounds[s], (long long)bounds[s + 1], (long long)want, a->seq_length, a->seed);
      snprintf(path, sizeof path, "%s/gpt-%s-%016llx.idx", dir, split_names[s], (unsigned long long)fnv1a(desc));
      int missing;
      PTDP_CALL(load_split(g, path, desc, &missing));
      if (missing) {
        PTDP_CHECK(root, "index cache file '%s' is missing or does not match although rank 0 wrote it: is the cache "
                   "directory shared by all ranks?", path);
        char what[1200];
        snprintf(what, sizeof what, "dataset '%s', %s split", prefixes[k], split_names[s]);
        PTDP_CALL(build_split(g, d->ds[k], bounds[s], bounds[s + 1], want, a->seq_length, a->seed, what));
        PTDP_CALL(save_split(g, path, desc));
      }
      g->built = 1;
    }
  }
  return 0;
}

static int open_local(ptdp_data *d, const ptdp_data_args *a, char prefixes[][1024], int root)
{
  for (int k = 0; k < d->n; k++) PTDP_CALL(ptdp_indexed_dataset_open(&d->ds[k], prefixes[k]));
  if (root) /* the others receive it by broadcast */
    for (int k = 0; k < d->n; k++) {
      int64_t m;
      PTDP_CALL(ptdp_indexed_dataset_max_token(d->ds[k], &m));
      if (m + 1 > d->vocab_hint) d->vocab_hint = (int)(m + 1);
    }
  PTDP_CALL(indices(d, a, prefixes, root));
  return 0;
}

static int blend(ptdp_data *d, const ptdp_data_args *a)
{
  if (d->n == 1) return 0;
  int64_t count[MAX_DATASETS];
  for (int s = 0; s < 3; s++) {
    int64_t n = a->num_samples[s];
    int any = 0;
    for (int k = 0; k < d->n; k++) any |= d->sp[k][s].built;
    if (n <= 0 || !any) continue;
    for (int k = 0; k < d->n; k++)
      PTDP_CHECK(d->sp[k][s].built && d->sp[k][s].plan.total_samples > 0,
                 "blending the %s split: dataset %d of data-path has no documents in it", split_names[s], k);
    PTDP_ALLOC(d->blend_source[s], (size_t)n * sizeof(int32_t));
    PTDP_ALLOC(d->blend_sample[s], (size_t)n * sizeof(int64_t));
    ptdp_blend_index(d->blend_source[s], d->blend_sample[s], n, d->weights, d->n, count);
    d->blend_size[s] = n;
  }
  return 0;
}

int ptdp_data_open(ptdp_data **dp, const ptdp_data_args *a, MPI_Comm comm)
{
  *dp = NULL;
  PTDP_CHECK(a->seq_length >= 1, "seq-length must be positive, got %d", a->seq_length);
  for (int s = 0; s < 3; s++) PTDP_CHECK(a->num_samples[s] >= 0, "negative sample count for the %s split", split_names[s]);
  int rank;
  PTDP_CALL_MPI(MPI_Comm_rank(comm, &rank));
  ptdp_data *d;
  PTDP_CALLOC(d, 1, sizeof *d);
  char(*prefixes)[1024] = calloc(MAX_DATASETS, 1024);
  if (!prefixes) free(d);
  PTDP_CHECK(prefixes, "out of memory");
  int rc = parse_data_path(d, a->data_path, prefixes);
  d->seq_length = a->seq_length;
  d->vocab_hint = -1;
  /* rank 0 first: it validates, builds and writes; the others follow only if it succeeded */
  int status = rc;
  if (!rc && rank == 0) status = open_local(d, a, prefixes, 1);
  if (!rc) {
    PTDP_CALL_MPI(MPI_Bcast(&status, 1, MPI_INT, 0, comm));
    PTDP_CALL_MPI(MPI_Bcast(&d->vocab_hint, 1, MPI_INT, 0, comm));
  }
  if (!rc && status && rank != 0)
    status = ptdp_error_push(PTDP_ERR_INPUT, __FILE__, __LINE__, __func__, "opening the data failed on rank 0");
  if (!rc && !status && rank != 0) {
    int coll = ptdp_error_collective();
    ptdp_error_set_collective(0); /* a failure here is this rank's alone: print it */
    status = open_local(d, a, prefixes, 0);
    ptdp_error_set_collective(coll);
  }
  if (!rc) {
    int any;
    PTDP_CALL_MPI(MPI_Allreduce(&status, &any, 1, MPI_INT, MPI_MAX, comm));
    rc = any;
    if (any && !status) rc = ptdp_error_push(any, __FILE__, __LINE__, __func__, "opening the data failed on another rank");
  }
  if (!rc) rc = blend(d, a);
  free(prefixes);
  if (rc) {
    ptdp_data_destroy(&d);
    return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
  }
  *dp = d;
  return 0;
}

/* ---------------------------------------------------------------- access */

long long ptdp_data_num_samples(const ptdp_data *d, int split)
{
  if (split < 0 || split > 2) return 0;
  if (d->n > 1) return d->blend_size[split];
  return d->sp[0][split].built ? d->sp[0][split].plan.total_samples : 0;
}

int ptdp_data_num_datasets(const ptdp_data *d) { return d->n; }
int ptdp_data_vocab_hint(const ptdp_data *d) { return d->vocab_hint; }

static int64_t wrap(long long i, int64_t n) { return (int64_t)(((i % n) + n) % n); }

int ptdp_data_sample_source(const ptdp_data *d, int split, long long index)
{
  if (d->n == 1 || split < 0 || split > 2 || d->blend_size[split] == 0) return 0;
  return d->blend_source[split][wrap(index, d->blend_size[split])];
}

static int gpt_get(const ptdp_indexed_dataset *ds, const gpt_split *g, int64_t i, int seq_length, int32_t *tokens)
{
  int64_t idx = g->shuffle[i];
  int64_t d0 = g->sample_index[2 * idx], o0 = g->sample_index[2 * idx + 1];
  int64_t d1 = g->sample_index[2 * idx + 2], o1 = g->sample_index[2 * idx + 3];
  int64_t k = 0;
  for (int64_t p = d0; p <= d1; p++) {
    int64_t doc = g->doc_index[p];
    int64_t from = p == d0 ? o0 : 0;
    int64_t to = p == d1 ? o1 + 1 : ptdp_indexed_dataset_length(ds, doc); /* exclusive */
    PTDP_CALL(ptdp_indexed_dataset_get(ds, doc, from, to - from, tokens + k));
    k += to - from;
  }
  PTDP_CHECK(k == seq_length + 1, "sample %lld has %lld tokens, expected %d: corrupt index cache?", (long long)i,
             (long long)k, seq_length + 1);
  return 0;
}

int ptdp_data_get_sample(const ptdp_data *d, int split, long long index, int32_t *tokens)
{
  PTDP_CHECK(split >= 0 && split <= 2, "split %d is not 0 (train), 1 (valid) or 2 (test)", split);
  long long n = ptdp_data_num_samples(d, split);
  PTDP_CHECK(n > 0, "the %s split has no samples (empty split, or 0 samples asked for)", split_names[split]);
  int64_t i = wrap(index, n);
  int k = 0;
  if (d->n > 1) {
    k = d->blend_source[split][i];
    i = d->blend_sample[split][i];
  }
  const gpt_split *g = &d->sp[k][split];
  PTDP_CALL(gpt_get(d->ds[k], g, wrap(i, g->plan.total_samples), d->seq_length, tokens));
  return 0;
}

void ptdp_data_destroy(ptdp_data **dp)
{
  if (!dp || !*dp) return;
  ptdp_data *d = *dp;
  for (int k = 0; k < d->n; k++) {
    ptdp_indexed_dataset_close(&d->ds[k]);
    for (int s = 0; s < 3; s++) {
      free(d->sp[k][s].doc_index);
      free(d->sp[k][s].sample_index);
      free(d->sp[k][s].shuffle);
    }
  }
  for (int s = 0; s < 3; s++) {
    free(d->blend_source[s]);
    free(d->blend_sample[s]);
  }
  free(d);
  *dp = NULL;
}
