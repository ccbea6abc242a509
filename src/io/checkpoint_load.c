/* Checkpoints: loading on any layout, locating a checkpoint, reading its keys (see
 * ptdp/checkpoint.h and checkpoint.c for who reads what). */
#include "checkpoint_impl.h"

#include "ptdp/error.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does every link of path exist? (H5Lexists needs the parents to exist.) */
static int path_exists(hid_t file, const char *path)
{
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1;; p++) {
    if (*p && *p != '/') continue;
    char c = *p;
    *p = 0;
    htri_t e = H5Lexists(file, buf, H5P_DEFAULT);
    if (e <= 0) return (int)e;
    if (!c) return 1;
    *p = c;
  }
}

/* Does every data-parallel replica hold the whole of kind (the weights; Adam's moments without the
 * distributed optimizer)?  With d > 1 each replica then reads its shard and the rest comes by
 * all-gather (gather_replicated), so the replicas read the file's bytes once between them. */
static int replicated(const ckpt_io *io, int kind)
{
  return io->dpart && (kind == KIND_MODEL || !io->ddp->distributed);
}

/* The part of global tensor g of kind this rank reads: local parameter *i (-1: none), elements [lo, hi). */
static void read_part(const ckpt_io *io, int kind, int g, int *i, long long *lo, long long *hi)
{
  *i = -1;
  *lo = *hi = 0;
  for (int j = 0; j < io->m->params.n; j++)
    if (io->gidx[j] == g) *i = j;
  if (*i < 0) return;
  const ptdp_param_info *p = &io->m->params.table[*i];
  const ckpt_part pt = replicated(io, kind) ? io->dpart[*i] : kind == KIND_MODEL ? ckpt_whole_slice(p) : io->spart[*i];
  *lo = pt.lo;
  *hi = pt.hi < p->rows * p->lcols ? pt.hi : p->rows * p->lcols; /* padding rows: not in the file */
}

/* Open dataset kind/g and check its shape against the model's. */
static int open_dataset(ckpt_io *io, int kind, int g, const char *file, hid_t *out)
{
  char path[256];
  ckpt_dataset_path(io, kind, g, path, sizeof path);
  int e = path_exists(io->file, path);
  PTDP_CALL_HDF5(e);
  PTDP_CHECK(e, "checkpoint '%s' lacks dataset %s, which the model here has", file, path);
  hid_t ds = H5Dopen2(io->file, path, H5P_DEFAULT);
  PTDP_CALL_HDF5(ds);
  *out = ds;
  const ptdp_param_info *gp = &io->global[g];
  hid_t sp = H5Dget_space(ds);
  PTDP_CALL_HDF5(sp);
  hsize_t dims[2] = {0, 1};
  int nd = H5Sget_simple_extent_dims(sp, dims, NULL);
  PTDP_CALL_HDF5(H5Sclose(sp));
  PTDP_CHECK(nd == gp->ndim && (long long)dims[0] == gp->grows && (nd == 1 || (long long)dims[1] == gp->gcols),
             "checkpoint '%s': dataset %s has shape [%llu%s%llu], the model here expects [%lld%s%lld]", file, path,
             (unsigned long long)dims[0], nd == 2 ? ", " : "", nd == 2 ? (unsigned long long)dims[1] : 0ull, gp->grows,
             gp->ndim == 2 ? ", " : "", gp->ndim == 2 ? gp->gcols : 0ll);
  int n = 0;
  for (int j = 0; j < io->m->params.n; j++) n += io->gidx[j] == g;
  PTDP_CHECK_INTERNAL(n <= 1, "two local parameters hold %s", path);
  return 0;
}

/* How local elements [c0, c1) of p are read. */
enum { READ_HDF5 = 0, READ_DIRECT, READ_SWAP };

/* How local elements [c0, c1) of p in ds are read, and the file bytes [off, off+len) the reader
 * takes: READ_SWAP (ckpt_swap_rows), this rank's part of the rows at full width; READ_DIRECT, one
 * contiguous range of the file, or a column slice whose rows span at most twice its bytes (read
 * whole, the rank keeps its columns); READ_HDF5, through HDF5 (off, len: the span, for read-ahead). */
static int run_mode(const ckpt_io *io, hid_t ds, const ptdp_param_info *p, long long c0, long long c1, long long *off,
                    long long *len)
{
  ckpt_chunk_span(ds, p, c0, c1, off, len);
  if (!io->reader || *len <= 0) return READ_HDF5;
  long long r0 = 0, r1 = 0, m0 = 0, m1 = 0;
  if (*len > 4 * (c1 - c0) && ckpt_swap_rows(io, p, c0, c1, &r0, &r1, &m0, &m1)) {
    *off += 4 * ((m0 - r0) * p->gcols - p->col0); /* the span starts at this rank's first column */
    *len = 4 * (m1 - m0) * p->gcols;
    return READ_SWAP;
  }
  return *len > 2 * 4 * (c1 - c0) ? READ_HDF5 : READ_DIRECT;
}

/* Local elements [c0, c1) of p, in order, out of span (the file's elements from the run's first on). */
static void gather_columns(const ptdp_param_info *p, long long c0, long long c1, const float *span, float *out)
{
  ptdp_shard_piece pc;
  ptdp_shard_run_rects(p, c0, c1, &pc);
  const long long first = pc.rect[0].row0 * p->gcols + pc.rect[0].col0;
  for (int k = 0; k < pc.nrects; k++) /* row-major, as HDF5 orders a selection's elements */
    for (long long r = 0; r < pc.rect[k].rows; r++) {
      memcpy(out, span + (pc.rect[k].row0 + r) * p->gcols + pc.rect[k].col0 - first, sizeof(float) * (size_t)pc.rect[k].cols);
      out += pc.rect[k].cols;
    }
}

/* Swapped runs are read by the whole TP group together: direct I/O on all its ranks or on none
 * (a file system taking it on some nodes only reads through HDF5 everywhere), and none goes on
 * when one failed to open the file (rc: this rank's status so far). */
static int agree_reader(ckpt_io *io, int rc)
{
  if (io->m->t < 2) return rc;
  int all = rc ? -1 : io->reader != NULL;
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, io->m->grid->tp.comm));
  if (all <= 0 && io->reader) {
    ckpt_reader_close(io->reader);
    io->reader = NULL;
  }
  if (rc) return rc;
  PTDP_CHECK_LOCAL(all >= 0, "another rank of this tensor-parallel group could not open the checkpoint (its message says why)");
  return 0;
}

/* The plans: every chunk this rank will read, in the order load_dataset reads them, to the direct
 * reader or (the rest) to the read-ahead of the page cache. */
static int plan_reads(ckpt_io *io, int nk, const hid_t *ds)
{
  for (int k = 0; k < nk; k++)
    for (int g = 0; g < io->nglobal; g++) {
      int i;
      long long lo, hi;
      read_part(io, k, g, &i, &lo, &hi);
      for (long long c0 = lo, c1; i >= 0 && c0 < hi; c0 = c1) {
        long long off, len;
        c1 = ckpt_run_end(io, &io->m->params.table[i], c0, hi);
        if (run_mode(io, ds[k * io->nglobal + g], &io->m->params.table[i], c0, c1, &off, &len) != READ_HDF5)
          PTDP_CALL(ckpt_reader_plan(io->reader, off, len));
        else PTDP_CALL(ckpt_stream_plan(&io->stream, off, len));
      }
    }
  return io->reader ? ckpt_reader_start(io->reader) : 0;
}

/* The first weight of x[0 .. b - a) (local elements [a, b) of p, global tensor g) that is not
 * finite, kept when it comes before the rank's first so far: one pass over the part each rank
 * verifies (every element once over the ranks), beside the checksum's. */
static void note_nonfinite(ckpt_io *io, int g, const ptdp_param_info *p, const float *x, long long a, long long b)
{
  if (g > io->nf_g) return;
  for (long long k = a; k < b; k++)
    if (!isfinite(x[k - a])) {
      const long long r = k / p->lcols, at = ptdp_param_global_row(p, r) * p->gcols + p->col0 + k - r * p->lcols;
      if (g < io->nf_g || at < io->nf_at) io->nf_g = g, io->nf_at = at;
      return;
    }
}

/* A checkpoint whose weights hold a value that is not finite loads (it is what was saved), but
 * the first loss computed from it will not be finite: every rank learns the first such weight,
 * rank 0 names it in a warning, and the model keeps its name for that error (ptdp_gpt). */
static int report_nonfinite(ckpt_io *io, const char *file, MPI_Comm comm)
{
  long long g = io->nf_g, at;
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &g, 1, MPI_LONG_LONG, MPI_MIN, comm));
  if (g == LLONG_MAX) return 0;
  at = io->nf_g == g ? io->nf_at : LLONG_MAX;
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &at, 1, MPI_LONG_LONG, MPI_MIN, comm));
  const ptdp_param_info *p = &io->global[g];
  snprintf(io->m->nonfinite_weight, sizeof io->m->nonfinite_weight, "%s, element %lld (row %lld, column %lld)",
           p->name, at, at / p->gcols, at % p->gcols);
  if (io->m->grid->world_rank == 0)
    fprintf(stderr, "ptdp: warning: checkpoint '%s': weight %s is not finite: the first loss computed from it will "
            "not be finite\n", file, io->m->nonfinite_weight);
  return 0;
}

/* This rank's part of tensor g of kind from dataset ds, chunk by chunk, independently; its
 * checksum partial sums. */
static int load_dataset(ckpt_io *io, int kind, int g, hid_t ds)
{
  int i;
  long long lo, hi;
  read_part(io, kind, g, &i, &lo, &hi);
  if (i < 0) return 0;
  /* the verified part (the writing partition, computed on this layout) lies within what is read */
  const ptdp_param_info *p = &io->m->params.table[i];
  const ckpt_part *w = &io->wpart[i];
  ptdp_backend *be = io->m->be;
  for (long long c0 = lo, c1; c0 < hi; c0 = c1) {
    c1 = ckpt_run_end(io, p, c0, hi);
    const float *x = io->stage;
    long long off, len;
    const int mode = run_mode(io, ds, p, c0, c1, &off, &len);
    if (mode != READ_HDF5) {
      const float *run;
      PTDP_CALL(ckpt_reader_next(io->reader, off, len, &run));
      if (mode == READ_SWAP) PTDP_CALL(ckpt_exchange_slices(io, p, c0, c1, run, io->stage, 0));
      else if (len > 4 * (c1 - c0)) gather_columns(p, c0, c1, run, io->stage); /* a column slice out of its span */
      else x = run;
      io->direct_bytes += 4 * (c1 - c0);
    } else {
      PTDP_CALL(ckpt_stream_reading(&io->stream));
      PTDP_CALL(ckpt_transfer_chunk(ds, p, c0, c1, io->stage, 0));
    }
    const long long a = c0 > w->lo ? c0 : w->lo, b = c1 < w->hi ? c1 : w->hi;
    if (b > a) io->sum[kind * io->nglobal + g] += ckpt_checksum(p, x + (a - c0), a, b);
    if (b > a && kind == KIND_MODEL) note_nonfinite(io, g, p, x + (a - c0), a, b);
    PTDP_CALL(be->to_device(be, ckpt_element(io, kind, i, c0), x, sizeof(float) * (size_t)(c1 - c0)));
    PTDP_CALL(be->synchronize(be)); /* the buffer is reused by a later chunk */
    io->bytes += 4 * (c1 - c0);
  }
  return 0;
}

/* With d > 1: every replica read its shard of each bucket of what all hold; the all-gathers over
 * the data-parallel group complete every replica's buffers (in place, as the distributed
 * optimizer gathers its updated weights). */
static int gather_replicated(ckpt_io *io, int nk)
{
  ptdp_gpt *m = io->m;
  ptdp_comm *dp = &m->grid->dp;
  for (int k = 0; k < nk; k++) {
    if (!replicated(io, k) || (k == KIND_MODEL && io->master && io->master->sharded))
      continue; /* ptdp_master_sync_all gathers */
    float *base = k == KIND_MODEL ? m->params.fp32 : k == KIND_EXP_AVG ? io->st_m : io->st_v; /* the state mirrors the flat buffers */
    for (int b = 0; b < m->params.layout.nbuckets; b++) PTDP_CALL(ptdp_master_allgather_bucket(dp, &m->params.layout, b, base));
  }
  return 0;
}

/* The model's shape against the checkpoint's: the first difference, named. */
/* Bit i: layer i's MLP is a mixture of experts (the first 62 layers). */
static long long moe_mask(const ptdp_gpt_config *c)
{
  long long mask = 0;
  for (int i = 0; i < c->num_layers && i < 62; i++) mask |= (long long)ptdp_moe_layer(&c->arch, i) << i;
  return mask;
}

static int check_shape(const ckpt_io *io, const char *file)
{
  const ptdp_gpt_config *c = &io->m->cfg;
  const struct {
    const char *attr, *key;
    long long here;
  } k[] = {{"num_layers", "num-layers", c->num_layers},
           {"hidden_size", "hidden-size", c->hidden},
           {"num_attention_heads", "num-attention-heads", c->heads},
           {"ffn_hidden_size", "ffn-hidden-size", c->ffn},
           {"max_position_embeddings", "max-position-embeddings", c->max_pos},
           {"vocab_size", "vocab-size", c->vocab},
           /* the architecture (checkpoints before it have none of these: GPT-2's, not checked) */
           {"normalization", "normalization (0 LayerNorm, 1 RMSNorm)", c->arch.norm},
           {"position_embedding_type", "position-embedding-type (0 learned_absolute, 1 rope, 2 none)",
            c->arch.position},
           {"disable_bias_linear", "disable-bias-linear", c->arch.no_linear_bias},
           {"untie_embeddings_and_output_weights", "untie-embeddings-and-output-weights", c->arch.untie},
           {"num_query_groups", "num-query-groups (query groups: num-attention-heads without grouped-query "
                                "attention)", io->m->sh.gl * io->m->t},
           {"kv_channels", "kv-channels (the head size)", io->m->sh.hd},
           {"swiglu", "swiglu", c->arch.swiglu},
           /* the mixture of experts (absent: a dense model) */
           {"num_experts", "num-experts", c->arch.moe.num_experts},
           {"moe_ffn_hidden_size", "moe-ffn-hidden-size", c->arch.moe.num_experts ? ptdp_moe_ffn(&c->arch, c->ffn) : 0},
           {"moe_layer_mask", "moe-layer-freq (bit i: layer i is a mixture)", moe_mask(c)}};
  hid_t mg = H5Gopen2(io->file, "/model", H5P_DEFAULT);
  PTDP_CHECK(mg >= 0, "checkpoint '%s' has no /model group: it is not a ptdp checkpoint", file);
  int rc = 0;
  for (size_t i = 0; i < sizeof k / sizeof k[0] && !rc; i++) {
    long long there = 0;
    int has = 0;
    rc = ckpt_attr_get_i64(mg, k[i].attr, &there, &has);
    const int moe_attr = !strcmp(k[i].attr, "num_experts") || !strncmp(k[i].attr, "moe_", 4);
    if (!rc && !has && moe_attr) has = 1; /* a checkpoint without them is dense: 0 */
    if (!rc && has && there != k[i].here)
      rc = PTDP_FAIL(PTDP_ERR_INPUT,
                           "checkpoint '%s' has %s = %lld, the model here %lld (use-checkpoint-args takes the model's "
                           "shape from the checkpoint)", file, k[i].key, there, k[i].here);
  }
  H5Gclose(mg);
  return rc;
}

static int open_checked(ckpt_io *io, const char *file, MPI_Comm comm)
{
  hid_t fapl;
  PTDP_CALL(ckpt_fapl(comm, &fapl));
  io->file = H5Fopen(file, H5F_ACC_RDONLY, fapl);
  PTDP_CALL_HDF5(H5Pclose(fapl));
  PTDP_CHECK(io->file >= 0, "cannot open checkpoint '%s': the file is truncated or is not an HDF5 file", file);
  long long version = 0;
  int has = 0;
  PTDP_CALL(ckpt_attr_get_i64(io->file, "format_version", &version, &has));
  PTDP_CHECK(has, "'%s' has no format_version attribute: it is not a ptdp checkpoint", file);
  PTDP_CHECK(version >= 1 && version <= PTDP_CHECKPOINT_FORMAT,
             "checkpoint '%s' has format version %lld; this ptdp reads version %d (a newer ptdp wrote it?)", file,
             version, PTDP_CHECKPOINT_FORMAT);
  return check_shape(io, file);
}

static int verify_checksums(ckpt_io *io, int nk, const char *file, MPI_Comm comm)
{
  const int nds = nk * io->nglobal;
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, io->sum, nds, MPI_UINT64_T, MPI_SUM, comm));
  for (int d = 0; d < nds; d++) {
    char path[256];
    ckpt_dataset_path(io, d / io->nglobal, d % io->nglobal, path, sizeof path);
    hid_t ds = H5Dopen2(io->file, path, H5P_DEFAULT);
    PTDP_CALL_HDF5(ds);
    uint64_t stored = 0;
    int has = 0;
    int rc = ckpt_attr_get_u64(ds, "checksum", &stored, &has);
    PTDP_CALL_HDF5(H5Dclose(ds));
    PTDP_CALL(rc);
    PTDP_CHECK(has, "checkpoint '%s': dataset %s has no checksum: the checkpoint is incomplete", file, path);
    PTDP_CHECK(stored == io->sum[d],
               "checkpoint '%s' is damaged: dataset %s does not match its checksum (stored %016llx, read %016llx)",
               file, path, (unsigned long long)stored, (unsigned long long)io->sum[d]);
  }
  return 0;
}

/* A dynamic scaler continues from a checkpoint that saved one (Megatron's grad_scaler state);
 * any other pair (an fp32 or bf16 checkpoint, a constant scale) keeps the run's own start. */
static int load_scaler(hid_t og, ptdp_grad_scaler *s)
{
  char kind[16] = "";
  int has = 0, h1 = 0;
  PTDP_CALL(ckpt_attr_get_str(og, "loss_scaler", kind, sizeof kind, &has));
  if (!has || strcmp(kind, "dynamic") || s->kind != PTDP_SCALER_DYNAMIC) return 0;
  double scale = 0;
  long long growth = 0, hyst = 0;
  PTDP_CALL(ckpt_attr_get_f64(og, "loss_scale", &scale, &h1));
  PTDP_CALL(ckpt_attr_need_i64(og, "growth_tracker", &growth));
  PTDP_CALL(ckpt_attr_need_i64(og, "hysteresis_tracker", &hyst));
  PTDP_CHECK(h1, "the checkpoint's loss scaler has no loss_scale");
  PTDP_CHECK(isfinite(scale) && scale > 0 && growth >= 0 && hyst >= -1000000 && hyst <= 1000000,
             "the checkpoint's loss scaler state is invalid (scale %g, growth tracker %lld, hysteresis tracker %lld)",
             scale, growth, hyst);
  s->scale = scale;
  s->growth_tracker = growth;
  s->hysteresis_tracker = (int)hyst;
  return 0;
}

static int load_all(ckpt_io *io, const ptdp_checkpoint_ref *ref, ptdp_optimizer *opt, ptdp_checkpoint_info *info,
                    MPI_Comm comm)
{
  PTDP_CALL(open_checked(io, ref->file, comm));
  int nk = 1;
  if (opt) {
    htri_t e = H5Lexists(io->file, "/optimizer", H5P_DEFAULT);
    PTDP_CALL_HDF5(e);
    PTDP_CHECK(e > 0, "checkpoint '%s' holds no optimizer state (saved with no-save-optim): load it with "
                      "no-load-optim or finetune", ref->file);
    nk = NKINDS;
  }
  /* all datasets opened and checked first (collective metadata), then every rank reads its parts
   * with no collective call between them but the TP group's all-to-all of each swapped run */
  const int nds = nk * io->nglobal;
  hid_t *ds;
  PTDP_ALLOC(ds, sizeof *ds * (size_t)nds);
  int rc = 0, opened = 0;
  while (opened < nds && !rc) {
    ds[opened] = -1;
    rc = open_dataset(io, opened / io->nglobal, opened % io->nglobal, ref->file, &ds[opened]);
    if (ds[opened] >= 0) opened++;
  }
  if (!rc) rc = ckpt_stream_open(&io->stream, ref->file, CKPT_STREAM_WINDOW);
  /* the environment's PTDP_CHECKPOINT_DIRECT=0 (a test hook) reads everything through HDF5 */
  const char *direct = getenv("PTDP_CHECKPOINT_DIRECT");
  if (!rc && !(direct && !strcmp(direct, "0"))) rc = ckpt_reader_open(&io->reader, ref->file);
  rc = agree_reader(io, rc);
  if (!rc) {
    /* reading is each rank's own: a failure here is printed by its rank and ends the run with
     * MPI_Abort, since the other ranks may be waiting for it in an exchange of slices */
    const int coll = ptdp_error_collective();
    ptdp_error_set_collective(0);
    rc = plan_reads(io, nk, ds);
    const int fail_at = ckpt_fault_here("read-error", io->m->grid->world_rank) ? nds / 2 : -1;
    for (int d = 0; d < nds && !rc; d++)
      rc = d == fail_at ? PTDP_FAIL(PTDP_ERR_IO,
                                          "injected read error (PTDP_CHECKPOINT_FAULT=read-error) in dataset %d of %d", d, nds)
                        : load_dataset(io, d / io->nglobal, d % io->nglobal, ds[d]);
    if (!rc) ptdp_error_set_collective(coll);
  }
  ckpt_reader_close(io->reader);
  io->reader = NULL;
  if (!rc) rc = ckpt_stream_close(&io->stream);
  for (int d = 0; d < opened; d++)
    if (H5Dclose(ds[d]) < 0 && !rc) rc = PTDP_ERR_LIB;
  free(ds);
  PTDP_CALL(rc);
  PTDP_CALL(io->m->be->synchronize(io->m->be));
  PTDP_CALL(verify_checksums(io, nk, ref->file, comm));
  PTDP_CALL(report_nonfinite(io, ref->file, comm));
  PTDP_CALL(gather_replicated(io, nk));
  ptdp_checkpoint_info in = {0};
  PTDP_CALL(ckpt_attr_need_i64(io->file, "iteration", &in.iteration));
  PTDP_CALL(ckpt_attr_need_i64(io->file, "consumed_train_samples", &in.consumed_train));
  PTDP_CALL(ckpt_attr_need_i64(io->file, "consumed_valid_samples", &in.consumed_valid));
  PTDP_CHECK(in.iteration >= 0 && in.consumed_train >= 0 && in.consumed_valid >= 0,
             "checkpoint '%s': iteration %lld, consumed_train_samples %lld, consumed_valid_samples %lld: negative",
             ref->file, in.iteration, in.consumed_train, in.consumed_valid);
  if (opt) {
    hid_t og = H5Gopen2(io->file, "/optimizer", H5P_DEFAULT);
    PTDP_CALL_HDF5(og);
    int rs = ckpt_attr_need_i64(og, "step", &in.opt_step);
    if (!rs) rs = load_scaler(og, &opt->scaler);
    PTDP_CALL_HDF5(H5Gclose(og));
    PTDP_CALL(rs);
    PTDP_CHECK(in.opt_step >= 0, "checkpoint '%s': the optimizer's step %lld is negative", ref->file, in.opt_step);
    opt->step = in.opt_step;
    in.scaler = opt->scaler;
  }
  /* bf16/fp16: the weights are the rounding of the master weights */
  PTDP_CALL(io->master ? ptdp_master_sync_all(io->master) : ptdp_gpt_sync_weights(io->m, 0, io->m->params.layout.total));
  if (info) *info = in;
  PTDP_CALL_HDF5(H5Fclose(io->file));
  io->file = -1;
  return 0;
}

int ptdp_checkpoint_load(const ptdp_checkpoint_ref *ref, ptdp_gpt *m, ptdp_master *master, ptdp_optimizer *opt,
                         ptdp_checkpoint_info *info, ptdp_checkpoint_stats *stats)
{
  MPI_Comm comm = m->grid->world.comm;
  PTDP_CALL_MPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  ckpt_io io;
  int rc = ckpt_io_setup(&io, m, master, opt ? opt->ddp : NULL, opt ? opt->m : NULL, opt ? opt->v : NULL);
  if (!rc) rc = load_all(&io, ref, opt, info, comm);
  /* closing is collective (MPI-IO): not after one rank's own failure, which ends the run with
   * MPI_Abort while the others may still be waiting for it elsewhere */
  if (io.file >= 0 && (!rc || ptdp_error_collective())) H5Fclose(io.file);
  long long bytes[2] = {io.bytes, io.direct_bytes};
  ckpt_io_free(&io);
  PTDP_CALL(rc);
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, bytes, 2, MPI_LONG_LONG, MPI_SUM, comm));
  if (stats) {
    stats->bytes = (double)bytes[0];
    stats->direct_bytes = (double)bytes[1];
    stats->seconds = MPI_Wtime() - t0;
  }
  return 0;
}

int ptdp_checkpoint_load_model(const ptdp_checkpoint_ref *ref, ptdp_gpt *m)
{
  return ptdp_checkpoint_load(ref, m, NULL, NULL, NULL, NULL);
}

/* ---------------------------------------------------------------- locate, keys */

int ptdp_checkpoint_locate(const char *load_dir, MPI_Comm comm, ptdp_checkpoint_ref *ref, int *found)
{
  int rank;
  PTDP_CALL_MPI(MPI_Comm_rank(comm, &rank));
  struct {
    int status;
    char msg[2 * PTDP_OPT_STRLEN + 256];
    ptdp_checkpoint_ref ref;
  } r;
  memset(&r, 0, sizeof r);
  if (rank == 0) r.status = ckpt_fs_locate(load_dir, &r.ref, r.msg, sizeof r.msg);
  PTDP_CALL_MPI(MPI_Bcast(&r, (int)sizeof r, MPI_BYTE, 0, comm));
  PTDP_CHECK(r.status >= 0, "%s", r.msg);
  *found = r.status == 0;
  if (*found) *ref = r.ref;
  return 0;
}

int ptdp_checkpoint_read_keys(const ptdp_checkpoint_ref *ref, ptdp_options *o, const char *const *keys, int nkeys,
                              MPI_Comm comm)
{
  hid_t fapl;
  PTDP_CALL(ckpt_fapl(comm, &fapl));
  hid_t f = H5Fopen(ref->file, H5F_ACC_RDONLY, fapl);
  PTDP_CALL_HDF5(H5Pclose(fapl));
  PTDP_CHECK(f >= 0, "cannot open checkpoint '%s': the file is truncated or is not an HDF5 file", ref->file);
  hid_t g = H5Gopen2(f, "/args", H5P_DEFAULT);
  int rc = g < 0 ? PTDP_FAIL(PTDP_ERR_INPUT,
                                   "checkpoint '%s' has no /args group: it is not a ptdp checkpoint", ref->file)
                 : 0;
  char where[PTDP_OPT_STRLEN + 16], v[PTDP_OPT_STRLEN];
  snprintf(where, sizeof where, "checkpoint %s", ref->file);
  for (int k = 0; k < nkeys && !rc; k++) {
    int has = 0;
    rc = ckpt_attr_get_str(g, keys[k], v, sizeof v, &has);
    if (!rc && has) rc = ptdp_options_set(o, keys[k], v, PTDP_SRC_CHECKPOINT, where);
  }
  if (g >= 0) H5Gclose(g);
  H5Fclose(f);
  return rc;
}

int ptdp_checkpoint_read_model_keys(const ptdp_checkpoint_ref *ref, ptdp_options *o, MPI_Comm comm)
{
  static const char *const keys[] = {"num-layers", "hidden-size", "num-attention-heads", "ffn-hidden-size",
                                     "max-position-embeddings", "vocab-size", "make-vocab-size-divisible-by",
                                     "layernorm-epsilon", "tokenizer-type", "vocab-file", "merge-file",
                                     "normalization", "position-embedding-type", "rotary-base", "rotary-percent",
                                     "rotary-interleaved", "disable-bias-linear",
                                     "untie-embeddings-and-output-weights", "group-query-attention",
                                     "num-query-groups", "kv-channels", "tokenizer-model", "swiglu",
                                     "num-experts", "moe-router-topk", "moe-ffn-hidden-size", "moe-layer-freq",
                                     "moe-router-score-function", "moe-router-pre-softmax",
                                     "moe-router-topk-scaling-factor"};
  return ptdp_checkpoint_read_keys(ref, o, keys, (int)(sizeof keys / sizeof keys[0]), comm);
}
