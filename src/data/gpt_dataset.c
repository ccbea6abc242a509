/* GPT datasets: Megatron's GPTDataset index arrays per (dataset, split), built by rank 0 and
 * cached on disk, mapped by every rank; blending across datasets (see
 * include/ptdp/gpt_dataset.h, gpt_index.h for the arrays, gpt_cache.h for the file).
 *
 * Start-up cost, for a corpus of N tokens in D documents and a split of M samples: opening a
 * dataset maps the .bin without reading it and validates the .idx (O(D)); a cache miss builds
 * the arrays on rank 0 in O(D E + M) time and 4 D E + 16 M bytes (E epochs) and writes them; a
 * hit maps the file (O(1), pages shared by the ranks of a node).  No token is read before
 * training asks for a sample.  Cache name: gpt-<train|valid|test>-<FNV-1a 64 of the
 * description, hex>.idx. */
#include "ptdp/gpt_dataset.h"

#include "gpt_cache.h"
#include "gpt_index.h"
#include "ptdp/checked.h"
#include "ptdp/error.h"
#include "ptdp/indexed_dataset.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_DATASETS 256
static const char *split_names[3] = {"train", "valid", "test"};

typedef struct {
  int built;
  ptdp_gpt_cached c; /* the arrays, mapped from the cache file */
} gpt_split;

struct ptdp_data {
  int seq_length, n;
  double weights[MAX_DATASETS];
  ptdp_indexed_dataset *ds[MAX_DATASETS];
  gpt_split sp[MAX_DATASETS][3];
  int64_t blend_size[3];
  int32_t *blend_source[3];
  int64_t *blend_sample[3];
  ptdp_data_stats stats;
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

/* A fingerprint of the split's document lengths, so a cache file never outlives the .idx it
 * was built from (same prefix and counts, other lengths).  Reads 4 bytes per document. */
static uint64_t lengths_hash(const ptdp_mmidx *ix, int64_t begin, int64_t end)
{
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int64_t i = begin; i < end; i++) {
    h = (h ^ (uint32_t)ptdp_mmidx_length(ix, i)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  return h;
}

/* ---------------------------------------------------------------- building */

typedef struct {
  ptdp_gpt_plan plan;
  int64_t n_doc_index;
  int32_t *lengths, *doc_index, *sample_index; /* lengths of the split's documents, [end - begin] */
  int64_t *shuffle;
} gpt_arrays;

static void arrays_free(gpt_arrays *g)
{
  free(g->lengths), free(g->doc_index), free(g->sample_index), free(g->shuffle);
  memset(g, 0, sizeof *g);
}

/* The three arrays of one split, in Megatron's order of random draws.  Time and memory linear
 * in their sizes: one pass over the split's lengths, two Fisher-Yates shuffles, one walk;
 * 4 bytes per document and epoch, 16 per sample. */
static int build_arrays(gpt_arrays *g, const ptdp_indexed_dataset *ds, int64_t begin, int64_t end, int64_t want,
                        int seq_length, unsigned long long seed, const char *what)
{
  const ptdp_mmidx *ix = ptdp_indexed_dataset_index(ds);
  const int64_t nd = end - begin;
  PTDP_ALLOC(g->lengths, (size_t)nd * 4 + 4);
  int64_t tokens = 0;
  for (int64_t i = 0; i < nd; i++) tokens += g->lengths[i] = ptdp_mmidx_length(ix, begin + i);
  int planned = ptdp_gpt_plan_make(&g->plan, tokens, want, seq_length);
  PTDP_CHECK(planned != -1, "%s: the split has %lld tokens, too few for a single sample", what, (long long)tokens);
  PTDP_CHECK(planned == 0, "%s: %lld samples of %d tokens overflow 64-bit token counts", what, (long long)want,
             seq_length);
  int64_t ndi;
  PTDP_CHECK(!ptdp_mul_i64(g->plan.num_epochs, nd, &ndi) && ndi < INT32_MAX,
             "%s: %lld epochs of %lld documents is too many", what, (long long)g->plan.num_epochs, (long long)nd);
  g->n_doc_index = ndi;
  /* 16 bytes per sample (sample index and shuffle) must fit a size_t */
  PTDP_CHECK(g->plan.total_samples < (INT64_MAX >> 5), "%s: %lld samples is too many", what,
             (long long)g->plan.total_samples);
  const size_t ns = (size_t)g->plan.total_samples;
  PTDP_ALLOC(g->doc_index, (size_t)g->n_doc_index * 4 + 4);
  PTDP_ALLOC(g->sample_index, 2 * (ns + 1) * 4);
  PTDP_ALLOC(g->shuffle, ns * 8 + 8);
  ptdp_rng r; /* one stream per (dataset, split), consumed in Megatron's order */
  ptdp_rng_seed(&r, seed);
  ptdp_gpt_doc_index(g->doc_index, begin, end, &g->plan, &r);
  ptdp_gpt_sample_index(g->sample_index, g->doc_index, g->n_doc_index, g->lengths, begin, &g->plan, seq_length);
  ptdp_gpt_shuffle_index(g->shuffle, &g->plan, &r);
  return 0;
}

/* Rank 0 on a cache miss: build, write to path, free (the caller maps the file like the others). */
static int build_split(ptdp_data_stats *st, const ptdp_indexed_dataset *ds, int64_t begin, int64_t end, int64_t want,
                       int seq_length, unsigned long long seed, const char *what, const char *path, const char *desc)
{
  gpt_arrays g = {0};
  double t0 = MPI_Wtime();
  int rc = build_arrays(&g, ds, begin, end, want, seq_length, seed, what);
  double t1 = MPI_Wtime();
  if (!rc)
    rc = ptdp_gpt_cache_save(path, desc, &g.plan, g.n_doc_index, g.doc_index, g.sample_index, g.shuffle);
  st->build_seconds += t1 - t0;
  st->write_seconds += MPI_Wtime() - t1;
  arrays_free(&g);
  if (rc) return ptdp_error_trace(rc, __FILE__, __LINE__, __func__);
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

/* Everything that shapes one split's arrays; the cache file's name hashes it, its header holds it. */
static void describe(char *desc, size_t n, const char *prefix, const ptdp_mmidx *ix, const int64_t bounds[4], int s,
                     int64_t want, const ptdp_data_args *a)
{
  snprintf(desc, n,
           "ptdp GPTDataset index v2; prefix=%s; sequences=%lld; idx_tokens_bytes=%lld; split=%s [%lld, %lld); "
           "lengths_hash=%016llx; num_samples=%lld; seq_length=%d; seed=%llu",
           prefix, (long long)ix->num_sequences,
           (long long)(ix->num_sequences ? ptdp_mmidx_pointer(ix, ix->num_sequences - 1) : 0), split_names[s],
           (long long)bounds[s], (long long)bounds[s + 1],
           (unsigned long long)lengths_hash(ix, bounds[s], bounds[s + 1]), (long long)want, a->seq_length, a->seed);
}

/* Map the cache of every (dataset, split); on a miss rank 0 builds and writes it first (the
 * others run this only after rank 0 succeeded, so they always find it). */
static int indices(ptdp_data *d, const ptdp_data_args *a, char prefixes[][1024], int root)
{
  ptdp_data_stats *st = &d->stats;
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
      describe(desc, sizeof desc, prefixes[k], ix, bounds, s, want, a);
      snprintf(path, sizeof path, "%s/gpt-%s-%016llx.idx", dir, split_names[s], (unsigned long long)fnv1a(desc));
      int found;
      double t0 = MPI_Wtime();
      PTDP_CALL(ptdp_gpt_cache_map(&g->c, path, desc, &found));
      st->map_seconds += MPI_Wtime() - t0;
      if (!found) {
        PTDP_CHECK(root, "index cache file '%s' is missing or does not match although rank 0 wrote it: is the cache "
                   "directory shared by all ranks?", path);
        char what[1200];
        snprintf(what, sizeof what, "dataset '%s', %s split", prefixes[k], split_names[s]);
        PTDP_CALL(build_split(st, d->ds[k], bounds[s], bounds[s + 1], want, a->seq_length, a->seed, what, path, desc));
        t0 = MPI_Wtime();
        PTDP_CALL(ptdp_gpt_cache_map(&g->c, path, desc, &found));
        st->map_seconds += MPI_Wtime() - t0;
        PTDP_CHECK_IO(found, "index cache file '%s' does not read back as written", path);
        st->splits_built++;
      } else {
        st->splits_loaded++;
      }
      g->built = 1;
    }
  }
  return 0;
}

static int open_local(ptdp_data *d, const ptdp_data_args *a, char prefixes[][1024], int root)
{
  double t0 = MPI_Wtime();
  for (int k = 0; k < d->n; k++) PTDP_CALL(ptdp_indexed_dataset_open(&d->ds[k], prefixes[k]));
  d->stats.open_seconds = MPI_Wtime() - t0;
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
      PTDP_CHECK(d->sp[k][s].built && d->sp[k][s].c.plan.total_samples > 0,
                 "blending the %s split: dataset %d of data-path has no documents in it", split_names[s], k);
    PTDP_ALLOC(d->blend_source[s], (size_t)n * sizeof(int32_t));
    PTDP_ALLOC(d->blend_sample[s], (size_t)n * sizeof(int64_t));
    ptdp_blend_index(d->blend_source[s], d->blend_sample[s], n, d->weights, d->n, count);
    d->blend_size[s] = n;
  }
  return 0;
}

/* Rank 0's verdict to the others, who have waited while it built: they test and sleep rather
 * than poll, so that on a node with fewer free cores than ranks they leave the builder its core
 * (a millisecond of latency, once). */
static int bcast_status(int *status, int rank, MPI_Comm comm)
{
  MPI_Request req;
  PTDP_CALL_MPI(MPI_Ibcast(status, 1, MPI_INT, 0, comm, &req));
  for (int done = 0;;) {
    PTDP_CALL_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return 0;
    if (rank != 0) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
}

int ptdp_data_open(ptdp_data **dp, const ptdp_data_args *a, MPI_Comm comm)
{
  *dp = NULL;
  const double t0 = MPI_Wtime();
  PTDP_CHECK(a->seq_length >= 1, "seq-length must be positive, got %d", a->seq_length);
  for (int s = 0; s < 3; s++) PTDP_CHECK(a->num_samples[s] >= 0, "negative sample count for the %s split", split_names[s]);
  /* 16 bytes of index per sample, and Megatron's blend count n w 1.005 taken through a double:
   * 2^50 samples (10^15) is beyond any run and keeps both exact and in range */
  for (int s = 0; s < 3; s++)
    PTDP_CHECK(a->num_samples[s] <= (1LL << 50),
               "%lld samples wanted for the %s split: more than 2^50 (train-iters x global-batch-size too large?)",
               a->num_samples[s], split_names[s]);
  int rank;
  PTDP_CALL_MPI(MPI_Comm_rank(comm, &rank));
  ptdp_data *d;
  PTDP_CALLOC(d, 1, sizeof *d);
  char(*prefixes)[1024] = calloc(MAX_DATASETS, 1024);
  if (!prefixes) free(d);
  PTDP_CHECK(prefixes, "out of memory");
  int rc = parse_data_path(d, a->data_path, prefixes);
  d->seq_length = a->seq_length;
  /* rank 0 first: it validates, builds and writes; the others follow only if it succeeded */
  int status = rc;
  if (!rc && rank == 0) status = open_local(d, a, prefixes, 1);
  if (!rc) PTDP_CALL(bcast_status(&status, rank, comm));
  if (!rc && status && rank != 0)
    status = PTDP_FAIL(PTDP_ERR_INPUT, "opening the data failed on rank 0");
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
  d->stats.seconds = MPI_Wtime() - t0;
  *dp = d;
  return 0;
}

/* ---------------------------------------------------------------- report */

const ptdp_data_stats *ptdp_data_get_stats(const ptdp_data *d) { return &d->stats; }

static double peak_rss_mib(void)
{
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0.0; /* Linux: KiB */
}

int ptdp_data_report(const ptdp_data *d, MPI_Comm comm, FILE *out)
{
  const ptdp_data_stats *st = &d->stats;
  double mine[2] = {st->seconds, peak_rss_mib()}, lo[2], hi[2];
  PTDP_CALL_MPI(MPI_Reduce(mine, lo, 2, MPI_DOUBLE, MPI_MIN, 0, comm));
  PTDP_CALL_MPI(MPI_Reduce(mine, hi, 2, MPI_DOUBLE, MPI_MAX, 0, comm));
  int rank;
  PTDP_CALL_MPI(MPI_Comm_rank(comm, &rank));
  if (rank != 0) return 0;
  fprintf(out,
          "> finished creating GPT datasets ... time (min, max) across ranks (ms): (%.1f, %.1f); index arrays: %d "
          "built, %d from the cache; rank 0 (ms): open .idx %.1f, build %.1f, write %.1f, map %.1f; "
          "peak RSS (min, max) across ranks (MiB): (%.1f, %.1f)\n",
          1e3 * lo[0], 1e3 * hi[0], st->splits_built, st->splits_loaded, 1e3 * st->open_seconds,
          1e3 * st->build_seconds, 1e3 * st->write_seconds, 1e3 * st->map_seconds, lo[1], hi[1]);
  fflush(out);
  return 0;
}

/* ---------------------------------------------------------------- access */

long long ptdp_data_num_samples(const ptdp_data *d, int split)
{
  if (split < 0 || split > 2) return 0;
  if (d->n > 1) return d->blend_size[split];
  return d->sp[0][split].built ? d->sp[0][split].c.plan.total_samples : 0;
}

int ptdp_data_num_datasets(const ptdp_data *d) { return d->n; }

static int64_t wrap(long long i, int64_t n) { return (int64_t)(((i % n) + n) % n); }

int ptdp_data_sample_source(const ptdp_data *d, int split, long long index)
{
  if (d->n == 1 || split < 0 || split > 2 || d->blend_size[split] == 0) return 0;
  return d->blend_source[split][wrap(index, d->blend_size[split])];
}

/* Sample i of one split: s+1 tokens.  The mapped arrays were only checked for their sizes at
 * open, so every entry used here is checked before it indexes anything (O(1) per sample). */
static int gpt_get(const ptdp_indexed_dataset *ds, const ptdp_gpt_cached *g, int64_t i, int seq_length, int32_t *tokens)
{
  const int64_t ns = g->plan.total_samples, need = (int64_t)seq_length + 1;
  int64_t idx = g->shuffle[i];
  PTDP_CHECK(idx >= 0 && idx < ns, "shuffle entry %lld is %lld, outside [0, %lld): corrupt index cache?", (long long)i,
             (long long)idx, (long long)ns);
  int64_t d0 = g->sample_index[2 * idx], o0 = g->sample_index[2 * idx + 1];
  int64_t d1 = g->sample_index[2 * idx + 2], o1 = g->sample_index[2 * idx + 3];
  PTDP_CHECK(d0 >= 0 && d0 <= d1 && d1 < g->n_doc_index, "sample %lld spans positions [%lld, %lld] of a %lld-entry "
             "document index: corrupt index cache?", (long long)idx, (long long)d0, (long long)d1,
             (long long)g->n_doc_index);
  int64_t k = 0;
  for (int64_t p = d0; p <= d1; p++) {
    int64_t doc = g->doc_index[p];
    PTDP_CHECK(doc >= 0 && doc < ptdp_indexed_dataset_num_sequences(ds), "document index entry %lld is %lld, not a "
               "sequence of the dataset: corrupt index cache?", (long long)p, (long long)doc);
    int64_t from = p == d0 ? o0 : 0;
    int64_t to = p == d1 ? o1 + 1 : ptdp_indexed_dataset_length(ds, doc); /* exclusive */
    PTDP_CHECK(to - from >= 0 && k + (to - from) <= need, "sample %lld has more than %lld tokens: corrupt index cache?",
               (long long)i, (long long)need);
    PTDP_CALL(ptdp_indexed_dataset_get(ds, doc, from, to - from, tokens + k));
    k += to - from;
  }
  PTDP_CHECK(k == need, "sample %lld has %lld tokens, expected %lld: corrupt index cache?", (long long)i, (long long)k,
             (long long)need);
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
  const ptdp_gpt_cached *g = &d->sp[k][split].c;
  PTDP_CALL(gpt_get(d->ds[k], g, wrap(i, g->plan.total_samples), d->seq_length, tokens));
  return 0;
}

void ptdp_data_destroy(ptdp_data **dp)
{
  if (!dp || !*dp) return;
  ptdp_data *d = *dp;
  for (int k = 0; k < d->n; k++) {
    ptdp_indexed_dataset_close(&d->ds[k]);
    for (int s = 0; s < 3; s++) ptdp_gpt_cache_unmap(&d->sp[k][s].c);
  }
  for (int s = 0; s < 3; s++) {
    free(d->blend_source[s]);
    free(d->blend_sample[s]);
  }
  free(d);
  *dp = NULL;
}
