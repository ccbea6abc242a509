/* Checkpoints: which rank writes and reads which ckpt_part of which tensor (see ptdp/checkpoint.h).
 *
 * Datasets are the global tensors of the model (the parameter table of a one-rank layout, in its
 * order), under /model, and with optimizer state the Adam moments under /optimizer/exp_avg and
 * /optimizer/exp_avg_sq.  Every rank creates (or opens) all of them in the same order, as parallel
 * HDF5's collective metadata requires, and then moves only its own parts of them.
 *
 * Writing: each element is written by exactly one rank.  The tensors of a (TP rank, stage) are
 * split among its d data-parallel replicas as the distributed optimizer splits them (each
 * replica writes the pieces of its shard of every bucket, ptdp/shard_map.h), whether or not that
 * optimizer is in use; TP-replicated tensors are written by one TP rank (index mod t); the last
 * stage's copy of the tied word embedding not at all.  With the distributed optimizer those
 * pieces are exactly the Adam state a rank holds, so no rank ever sees another's state.  A run of
 * whole rows of a row-parallel weight's column slice is written by the TP group as full rows, each
 * rank a t-th of them, after one all-to-all (checkpoint_swap.c).
 *
 * Reading: a rank gets its whole slice of every parameter (its layout's parameter table), and of
 * the Adam moments either its whole slices or, with the distributed optimizer, its shard's pieces.
 * What all d replicas hold each reads a shard of and they all-gather it; a row-parallel weight's
 * column slices are read by the TP group together, each rank a t-th of the rows at full width,
 * and exchanged (checkpoint_load.c).  Checksums are verified over the same partition as writing,
 * computed on the reading layout.
 *
 * Transfers are independent (each rank moves its own parts, no aggregation: the parts are long
 * contiguous runs already) and go through one host buffer of CKPT_CHUNK_ELEMS floats, a run of at
 * most that many consecutive local elements at a time: the extra host memory of saving and
 * loading is that buffer (16 MiB; saving at t > 1 adds the exchanged rows' buffer, 16 MiB and a
 * row; loading adds the direct reader's two, checkpoint_direct.c: at most 80 MiB in all), whatever
 * the model's size, on the CPU as on a GPU.  The page
 * cache holds at most about CKPT_STREAM_WINDOW bytes of the file per rank while saving
 * (checkpoint_stream.c). */
#include "checkpoint_impl.h"

#include "ptdp/config.h"
#include "ptdp/error.h"
#include "ptdp/shard_map.h"

#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const kind_prefix[NKINDS] = {"/model", "/optimizer/exp_avg", "/optimizer/exp_avg_sq"};

void ckpt_dataset_path(const ckpt_io *io, int kind, int g, char *out, size_t n)
{
  int k = snprintf(out, n, "%s/%s", kind_prefix[kind], io->global[g].name);
  for (int i = (int)strlen(kind_prefix[kind]) + 1; i < k && i < (int)n; i++)
    if (out[i] == '.') out[i] = '/';
}

/* The whole slice of parameter p as a part: a rectangle per row block. */
ckpt_part ckpt_whole_slice(const ptdp_param_info *p)
{
  ckpt_part s = {.lo = 0, .hi = p->rows * p->lcols, .nrects = 0};
  if (p->rows > 0 && p->cols > 0) {
    ptdp_shard_piece pc;
    ptdp_shard_run_rects(p, 0, s.hi, &pc);
    s.nrects = pc.nrects;
    memcpy(s.rect, pc.rect, sizeof s.rect);
  }
  return s;
}

/* The pieces of the data-parallel shard r of d of every bucket, by parameter. */
static int shard_parts(ckpt_io *io, int distributed, ckpt_part *out)
{
  ptdp_gpt *m = io->m;
  const ptdp_grid *g = m->grid;
  ptdp_shard_piece *pc;
  PTDP_ALLOC(pc, sizeof *pc * (size_t)m->params.n);
  memset(out, 0, sizeof *out * (size_t)m->params.n);
  for (int b = 0; b < m->params.layout.nbuckets; b++) {
    ptdp_shard s;
    ptdp_shard_of(&m->params.layout, b, distributed, g->dp.size, g->dp.rank, &s);
    int n = ptdp_shard_pieces(&m->params.layout, m->params.table, &s, pc, m->params.n);
    if (n < 0) free(pc);
    PTDP_CHECK_INTERNAL(n >= 0, "more shard pieces than parameters");
    for (int k = 0; k < n; k++) {
      ckpt_part *o = &out[pc[k].param];
      o->lo = pc[k].local_lo;
      o->hi = pc[k].local_hi;
      o->nrects = pc[k].nrects;
      memcpy(o->rect, pc[k].rect, sizeof o->rect);
    }
  }
  free(pc);
  return 0;
}

int ckpt_io_setup(ckpt_io *io, ptdp_gpt *m, ptdp_master *master, const ptdp_ddp *ddp, const float *st_m,
                  const float *st_v)
{
  memset(io, 0, sizeof *io);
  io->file = -1;
  io->stream.fd = -1;
  PTDP_CHECK_INTERNAL(master || m->params.fp32, "a checkpoint of sharded master weights without their owner");
  io->m = m;
  io->master = master;
  io->ddp = ddp;
  io->st_m = (float *)st_m;
  io->st_v = (float *)st_v;
  ptdp_model_shape sh = ptdp_gpt_shape(&m->cfg);
  ptdp_param_position one = {.t = 1, .tp_rank = 0, .p = 1, .stage = 0, .v = 1};
  io->nglobal = ptdp_params_count(&sh, &one);
  PTDP_CALLOC(io->global, (size_t)io->nglobal, sizeof *io->global);
  PTDP_CHECK_INTERNAL(ptdp_params_list(&sh, &one, io->global, io->nglobal) == io->nglobal, "parameter table");
  PTDP_CALLOC(io->gidx, (size_t)m->params.n, sizeof *io->gidx);
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    io->gidx[i] = -1;
    for (int g = 0; g < io->nglobal && io->gidx[i] < 0; g++)
      if (p->tied_copy ? io->global[g].role == PTDP_PARAM_WORD_EMBEDDING : !strcmp(p->name, io->global[g].name))
        io->gidx[i] = g;
    PTDP_CHECK_INTERNAL(io->gidx[i] >= 0, "parameter %s has no global tensor", p->name);
  }
  PTDP_CALLOC(io->wpart, (size_t)m->params.n, sizeof *io->wpart);
  PTDP_CALLOC(io->spart, (size_t)m->params.n, sizeof *io->spart);
  PTDP_CALL(shard_parts(io, 1, io->wpart));
  if (m->grid->dp.size > 1) {
    PTDP_CALLOC(io->dpart, (size_t)m->params.n, sizeof *io->dpart);
    memcpy(io->dpart, io->wpart, sizeof *io->dpart * (size_t)m->params.n);
  }
  for (int i = 0; i < m->params.n; i++) {
    const ptdp_param_info *p = &m->params.table[i];
    if (p->tied_copy || (p->tp_replicated && i % m->t != m->tp_rank)) io->wpart[i] = (ckpt_part){0};
  }
  if (ddp && ddp->distributed) PTDP_CALL(shard_parts(io, 1, io->spart));
  else
    for (int i = 0; i < m->params.n; i++) io->spart[i] = ckpt_whole_slice(&m->params.table[i]);
  PTDP_CALLOC(io->sum, (size_t)NKINDS * io->nglobal, sizeof *io->sum);
  io->nf_g = io->nf_at = LLONG_MAX;
  /* the environment's PTDP_CHECKPOINT_CHUNK (elements) replaces the run length: tests use short
   * runs to cross rows and tensors; the file is the same whatever the length */
  const char *ch = getenv("PTDP_CHECKPOINT_CHUNK");
  io->chunk = ch && atoll(ch) > 0 ? atoll(ch) : CKPT_CHUNK_ELEMS;
  const long long most = ptdp_gpt_max_param_elems(m);
  io->stage_elems = most < io->chunk ? most : io->chunk;
  PTDP_ALLOC(io->stage, sizeof(float) * (size_t)io->stage_elems);
  return 0;
}

void ckpt_io_free(ckpt_io *io)
{
  free(io->global);
  free(io->gidx);
  free(io->wpart);
  free(io->spart);
  free(io->dpart);
  free(io->sum);
  free(io->stage);
  free(io->wide);
  if (io->stream.fd >= 0) close(io->stream.fd);
  ckpt_reader_close(io->reader);
  free(io->stream.plan);
}

/* Sum of the element checksums of local elements [lo, hi) of p held in x (x[k - lo] = element k). */
uint64_t ckpt_checksum(const ptdp_param_info *p, const float *x, long long lo, long long hi)
{
  const float *buf = x - lo; /* buf[k]: element k (only k in [lo, hi) is read) */
  if (hi > p->rows * p->lcols) hi = p->rows * p->lcols; /* padding rows: in no global tensor */
  uint64_t s = 0;
  const long long w = p->lcols;
  for (long long k = lo; k < hi;) { /* row by row: the flat global index advances by one per column */
    const long long r = k / w, end = (r + 1) * w < hi ? (r + 1) * w : hi;
    const uint64_t g0 = (uint64_t)(ptdp_param_global_row(p, r) * p->gcols + p->col0 - r * w);
    for (; k < end; k++) {
      uint32_t bits;
      memcpy(&bits, &buf[k], sizeof bits);
      s += ckpt_mix(g0 + (uint64_t)k, bits);
    }
  }
  return s;
}

/* Whether the dataset's elements, from the address its header states, lie inside the file: a
 * damaged or hostile header must not send a direct read outside it.  A file
 * open for writing is one this save is making: its datasets are ptdp's own, and MPI-IO knows no
 * size while it writes (H5Fget_filesize fails, and would print HDF5's error stack at every
 * dataset; the spans are the save's write-back advice, checkpoint_stream.c). */
static int inside_file(hid_t ds, haddr_t base)
{
  hsize_t size = 0;
  unsigned intent = 0;
  int got = 0;
  hid_t f = H5Iget_file_id(ds), sp = H5Dget_space(ds);
  const int writing = f >= 0 && H5Fget_intent(f, &intent) >= 0 && (intent & H5F_ACC_RDWR);
  if (!writing) H5E_BEGIN_TRY { got = f >= 0 && H5Fget_filesize(f, &size) >= 0; } H5E_END_TRY;
  const hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
  if (f >= 0) H5Fclose(f);
  if (sp >= 0) H5Sclose(sp);
  return writing || (got && n >= 0 && base < size && (hsize_t)n <= (size - base) / 4);
}

/* Whether the dataset's elements are stored as ptdp writes them, 32-bit little-endian IEEE floats,
 * so that its bytes can be taken as they are; any other type (a checkpoint converted by another
 * tool) is read through HDF5, which converts it, and the checksums then judge the values. */
static int stored_as_written(hid_t ds)
{
  hid_t t = H5Dget_type(ds);
  const htri_t same = t < 0 ? 0 : H5Tequal(t, H5T_IEEE_F32LE);
  if (t >= 0) H5Tclose(t);
  return same > 0;
}

/* The file bytes that nrects rectangles (row-major) of a dataset of gcols columns span; len 0 when
 * the dataset has no contiguous place inside the file. */
static void rects_span(hid_t ds, long long gcols, const ptdp_shard_rect *rect, int nrects, long long *off, long long *len)
{
  *off = *len = 0;
  haddr_t base = H5Dget_offset(ds); /* contiguous datasets (ckpt_dataset_create) have one */
  if (nrects == 0 || base == HADDR_UNDEF || !stored_as_written(ds) || !inside_file(ds, base))
    return; /* HDF5 reads it (and says what is wrong) */
  const ptdp_shard_rect *a = &rect[0], *b = &rect[nrects - 1]; /* row-major: first and last */
  const long long first = a->row0 * gcols + a->col0, last = (b->row0 + b->rows - 1) * gcols + b->col0 + b->cols;
  *off = (long long)base + 4 * first;
  *len = 4 * (last - first);
}

void ckpt_chunk_span(hid_t ds, const ptdp_param_info *p, long long c0, long long c1, long long *off, long long *len)
{
  ptdp_shard_piece pc;
  ptdp_shard_run_rects(p, c0, c1, &pc);
  rects_span(ds, p->gcols, pc.rect, pc.nrects, off, len);
}

int ckpt_transfer_rects(hid_t ds, const ptdp_shard_rect *rect, int nrects, float *x, int write)
{
  if (nrects == 0) return 0;
  hid_t fs = H5Dget_space(ds);
  PTDP_CALL_HDF5(fs);
  hsize_t n = 0;
  for (int r = 0; r < nrects; r++) {
    const ptdp_shard_rect *rc = &rect[r];
    hsize_t start[2] = {(hsize_t)rc->row0, (hsize_t)rc->col0}, count[2] = {(hsize_t)rc->rows, (hsize_t)rc->cols};
    PTDP_CALL_HDF5(H5Sselect_hyperslab(fs, r ? H5S_SELECT_OR : H5S_SELECT_SET, start, NULL, count, NULL));
    n += count[0] * count[1];
  }
  /* the rectangles are consecutive in memory: one contiguous range from x */
  hid_t ms = H5Screate_simple(1, &n, NULL);
  PTDP_CALL_HDF5(ms);
  hid_t dx = H5Pcreate(H5P_DATASET_XFER);
  PTDP_CALL_HDF5(dx);
  PTDP_CALL_HDF5(H5Pset_dxpl_mpio(dx, H5FD_MPIO_INDEPENDENT));
  herr_t rc = write ? H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, dx, x) : H5Dread(ds, H5T_NATIVE_FLOAT, ms, fs, dx, x);
  PTDP_CALL_HDF5(H5Pclose(dx));
  PTDP_CALL_HDF5(H5Sclose(ms));
  PTDP_CALL_HDF5(H5Sclose(fs));
  PTDP_CALL_HDF5(rc);
  return 0;
}

int ckpt_transfer_chunk(hid_t ds, const ptdp_param_info *p, long long c0, long long c1, float *x, int write)
{
  ptdp_shard_piece pc;
  ptdp_shard_run_rects(p, c0, c1, &pc);
  return ckpt_transfer_rects(ds, pc.rect, pc.nrects, x, write);
}

/* Device address of local element k of parameter i for kind. */
float *ckpt_element(const ckpt_io *io, int kind, int i, long long k)
{
  const ptdp_gpt *m = io->m;
  const long long flat = m->params.layout.offset[i] + k;
  if (kind == KIND_MODEL) /* sharded master weights: this rank's shard, only its own pieces move */
    return io->master ? ptdp_master_element(io->master, i, k) : m->params.fp32 + flat;
  long long at = flat; /* without the distributed optimizer the state mirrors the flat buffers */
  if (io->ddp->distributed) {
    ptdp_shard s;
    ptdp_ddp_shard(io->ddp, io->m->params.layout.bucket[i], &s);
    at = s.state + (flat - s.lo);
  }
  return (kind == KIND_EXP_AVG ? io->st_m : io->st_v) + at;
}

/* ---------------------------------------------------------------- save */

/* The local parameter this rank writes of global tensor g (or -1). */
static int writer_of(const ckpt_io *io, int g)
{
  for (int i = 0; i < io->m->params.n; i++)
    if (io->gidx[i] == g && io->wpart[i].nrects > 0) return i;
  return -1;
}

static int create_dataset(ckpt_io *io, int kind, int g, hid_t *ds)
{
  char path[256];
  ckpt_dataset_path(io, kind, g, path, sizeof path);
  const ptdp_param_info *gp = &io->global[g];
  return ckpt_dataset_create(io->file, path, gp->ndim, gp->grows, gp->gcols, ds);
}

/* This rank's part of tensor g of kind into dataset ds, chunk by chunk, independently. */
static int save_dataset(ckpt_io *io, int kind, int g, hid_t ds)
{
  int i = writer_of(io, g);
  const ptdp_param_info *p = i >= 0 ? &io->m->params.table[i] : NULL;
  if (!p) return 0;
  const ckpt_part *w = &io->wpart[i];
  const long long hi = w->hi < p->rows * p->lcols ? w->hi : p->rows * p->lcols; /* padding rows: not saved */
  ptdp_backend *be = io->m->be;
  for (long long c0 = w->lo, c1; c0 < hi; c0 = c1) {
    c1 = ckpt_run_end(io, p, c0, hi);
    PTDP_CALL(be->to_host(be, io->stage, ckpt_element(io, kind, i, c0), sizeof(float) * (size_t)(c1 - c0)));
    PTDP_CALL(be->synchronize(be));
    long long off, len, r0, r1, m0, m1;
    if (io->wide && ckpt_swap_rows(io, p, c0, c1, &r0, &r1, &m0, &m1)) {
      /* a column slice: the TP group writes these rows at full width, each rank a t-th of them */
      PTDP_CALL(ckpt_exchange_slices(io, p, c0, c1, io->stage, io->wide, 1));
      ptdp_param_info full = *p; /* the rows at full width, as a slice of all the columns */
      full.col0 = 0;
      full.lcols = p->gcols;
      io->sum[kind * io->nglobal + g] += ckpt_checksum(&full, io->wide, m0 * p->gcols, m1 * p->gcols);
      const ptdp_shard_rect rows = {.row0 = p->row0 + m0, .col0 = 0, .rows = m1 - m0, .cols = p->gcols};
      PTDP_CALL(ckpt_transfer_rects(ds, &rows, 1, io->wide, 1));
      rects_span(ds, p->gcols, &rows, 1, &off, &len);
    } else {
      io->sum[kind * io->nglobal + g] += ckpt_checksum(p, io->stage, c0, c1);
      PTDP_CALL(ckpt_transfer_chunk(ds, p, c0, c1, io->stage, 1));
      ckpt_chunk_span(ds, p, c0, c1, &off, &len);
    }
    PTDP_CALL(ckpt_stream_wrote(&io->stream, off, len));
    io->bytes += 4 * (c1 - c0);
  }
  return 0;
}

static int save_args(hid_t file, const ptdp_options *keys)
{
  PTDP_CALL(ckpt_group_create(file, "/args"));
  hid_t g = H5Gopen2(file, "/args", H5P_DEFAULT);
  PTDP_CALL_HDF5(g);
  PTDP_CALL(ckpt_attr_write_keys(g, keys));
  PTDP_CALL_HDF5(H5Gclose(g));
  return 0;
}

/* The loss scaler under /optimizer (Megatron keeps its grad_scaler in the optimizer's state). */
static int save_scaler(hid_t og, const ptdp_grad_scaler *s)
{
  static const char *kinds[] = {"none", "constant", "dynamic"};
  PTDP_CALL(ckpt_attr_write_str(og, "loss_scaler", kinds[s->kind]));
  PTDP_CALL(ckpt_attr_write_f64(og, "loss_scale", s->scale));
  PTDP_CALL(ckpt_attr_write_i64(og, "growth_tracker", s->growth_tracker));
  PTDP_CALL(ckpt_attr_write_i64(og, "hysteresis_tracker", s->hysteresis_tracker));
  return 0;
}

static int save_attributes(const ckpt_io *io, const ptdp_checkpoint_info *info)
{
  const ptdp_gpt *m = io->m;
  hid_t f = io->file;
  PTDP_CALL(ckpt_attr_write_i64(f, "format_version", PTDP_CHECKPOINT_FORMAT));
  PTDP_CALL(ckpt_attr_write_str(f, "ptdp_version", PACKAGE_VERSION));
  PTDP_CALL(ckpt_attr_write_i64(f, "iteration", info->iteration));
  PTDP_CALL(ckpt_attr_write_i64(f, "consumed_train_samples", info->consumed_train));
  PTDP_CALL(ckpt_attr_write_i64(f, "consumed_valid_samples", info->consumed_valid));
  PTDP_CALL(ckpt_attr_write_f64(f, "learning_rate", info->lr));
  PTDP_CALL(ckpt_attr_write_i64(f, "lr_schedule_iterations", info->opt_step));
  const ptdp_grid *g = m->grid;
  PTDP_CALL(ckpt_attr_write_i64(f, "saved_world_size", g->layout.world));
  PTDP_CALL(ckpt_attr_write_i64(f, "saved_tensor_model_parallel_size", g->layout.t));
  PTDP_CALL(ckpt_attr_write_i64(f, "saved_pipeline_model_parallel_size", g->layout.p));
  PTDP_CALL(ckpt_attr_write_i64(f, "saved_virtual_pipeline_chunks", m->nchunks));
  PTDP_CALL(ckpt_attr_write_i64(f, "saved_data_parallel_size", g->layout.d));
  PTDP_CALL(ckpt_attr_write_i64(f, "saved_sequence_parallel", m->cfg.sequence_parallel));
  PTDP_CALL(ckpt_attr_write_i64(f, "saved_distributed_optimizer", m->cfg.distributed_optimizer));
  /* the tensors are fp32 whatever the run's precision: in bf16/fp16 the master weights */
  PTDP_CALL(ckpt_attr_write_str(f, "saved_precision", ptdp_dtype_name(m->cfg.dtype)));
  hid_t mg = H5Gopen2(f, "/model", H5P_DEFAULT);
  PTDP_CALL_HDF5(mg);
  PTDP_CALL(ckpt_attr_write_i64(mg, "num_layers", m->cfg.num_layers));
  PTDP_CALL(ckpt_attr_write_i64(mg, "hidden_size", m->cfg.hidden));
  PTDP_CALL(ckpt_attr_write_i64(mg, "num_attention_heads", m->cfg.heads));
  PTDP_CALL(ckpt_attr_write_i64(mg, "ffn_hidden_size", m->cfg.ffn));
  PTDP_CALL(ckpt_attr_write_i64(mg, "max_position_embeddings", m->cfg.max_pos));
  PTDP_CALL(ckpt_attr_write_i64(mg, "vocab_size", m->cfg.vocab));
  /* the architecture: which tensors exist (ptdp_params_has_role) and what the rotation is */
  PTDP_CALL(ckpt_attr_write_i64(mg, "normalization", m->cfg.arch.norm));
  PTDP_CALL(ckpt_attr_write_i64(mg, "position_embedding_type", m->cfg.arch.position));
  PTDP_CALL(ckpt_attr_write_i64(mg, "disable_bias_linear", m->cfg.arch.no_linear_bias));
  PTDP_CALL(ckpt_attr_write_i64(mg, "untie_embeddings_and_output_weights", m->cfg.arch.untie));
  PTDP_CALL(ckpt_attr_write_i64(mg, "num_query_groups", m->sh.gl * m->t));
  PTDP_CALL(ckpt_attr_write_i64(mg, "kv_channels", m->sh.hd));
  PTDP_CALL(ckpt_attr_write_i64(mg, "swiglu", m->cfg.arch.swiglu));
  if (m->cfg.arch.moe.num_experts > 0) { /* the mixture of experts: which tensors exist */
    PTDP_CALL(ckpt_attr_write_i64(mg, "num_experts", m->cfg.arch.moe.num_experts));
    PTDP_CALL(ckpt_attr_write_i64(mg, "moe_ffn_hidden_size", ptdp_moe_ffn(&m->cfg.arch, m->cfg.ffn)));
    long long mask = 0; /* bit i: layer i is a mixture (the first 62 layers) */
    for (int i = 0; i < m->cfg.num_layers && i < 62; i++) mask |= (long long)ptdp_moe_layer(&m->cfg.arch, i) << i;
    PTDP_CALL(ckpt_attr_write_i64(mg, "moe_layer_mask", mask));
  }
  PTDP_CALL_HDF5(H5Gclose(mg));
  if (io->ddp) {
    hid_t og = H5Gopen2(f, "/optimizer", H5P_DEFAULT);
    PTDP_CALL_HDF5(og);
    PTDP_CALL(ckpt_attr_write_i64(og, "step", info->opt_step));
    PTDP_CALL(ckpt_attr_write_str(og, "kind", "adamw"));
    PTDP_CALL(save_scaler(og, &info->scaler));
    PTDP_CALL_HDF5(H5Gclose(og));
  }
  return save_args(f, info->keys);
}

/* Collective sync of the file's data to storage (every rank, as a parallel file system needs). */
static int sync_file(MPI_Comm comm, const char *path)
{
  MPI_File fh;
  PTDP_CALL_MPI(MPI_File_open(comm, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  PTDP_CALL_MPI(MPI_File_sync(fh));
  PTDP_CALL_MPI(MPI_File_close(&fh));
  return 0;
}

/* Rank 0 runs fs(); every rank returns its verdict (others with a pointer to rank 0's message). */
#define RANK0_FS(comm, rank, call, what)                                                              \
  do {                                                                                                \
    int st_ = 0;                                                                                      \
    if ((rank) == 0) st_ = (call);                                                                    \
    PTDP_CALL_MPI(MPI_Bcast(&st_, 1, MPI_INT, 0, (comm)));                                            \
    if (st_ && (rank) == 0) return st_;                                                               \
    if (st_) return ptdp_error_push(st_, __FILE__, __LINE__, __func__, "%s failed on rank 0 (its message says why)", what); \
  } while (0)

static int save_all(ckpt_io *io, const ptdp_checkpoint_info *info, const char *path, MPI_Comm comm)
{
  hid_t fapl;
  PTDP_CALL(ckpt_fapl(comm, &fapl));
  io->file = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
  PTDP_CALL_HDF5(H5Pclose(fapl));
  PTDP_CHECK_IO(io->file >= 0, "cannot create the checkpoint file '%s'", path);
  PTDP_CALL(ckpt_stream_open(&io->stream, path, CKPT_STREAM_WINDOW));
  if (io->m->t > 1) { /* the full rows of a swapped run: a run's floats, and a row for an uneven split */
    long long row = 1;
    for (int i = 0; i < io->m->params.n; i++)
      if (io->m->params.table[i].gcols > row) row = io->m->params.table[i].gcols;
    PTDP_ALLOC(io->wide, sizeof(float) * (size_t)(io->stage_elems + row));
  }
  const int nk = io->ddp ? NKINDS : 1, nds = nk * io->nglobal;
  hid_t *ds;
  PTDP_ALLOC(ds, sizeof *ds * (size_t)nds);
  int rc = 0;
  int rank;
  PTDP_CALL_MPI(MPI_Comm_rank(comm, &rank));
  /* all datasets first (collective), then every rank writes its parts with no collective call
   * between them but the TP group's all-to-all of each column-slice run, so none waits on
   * another rank's writing until the end */
  int made = 0;
  while (made < nds && !(rc = create_dataset(io, made / io->nglobal, made % io->nglobal, &ds[made]))) made++;
  /* writing is each rank's own: a failure here is printed by its rank and ends the run with
   * MPI_Abort (no dataset closed: the other ranks may be waiting for it in an exchange) */
  const int coll = ptdp_error_collective();
  if (!rc) ptdp_error_set_collective(0);
  for (int k = 0; k < nk && !rc; k++)
    for (int g = 0; g < io->nglobal && !rc; g++) {
      if (k == 0 && g == io->nglobal / 2) ckpt_fault("datasets", rank);
      if (k == 0 && g == io->nglobal / 2 && ckpt_fault_here("write-error", rank))
        rc = PTDP_FAIL(PTDP_ERR_IO,
                             "injected write error (PTDP_CHECKPOINT_FAULT=write-error) in dataset %d of %d", g, nds);
      else rc = save_dataset(io, k, g, ds[k * io->nglobal + g]);
    }
  if (rc && !ptdp_error_collective()) {
    free(ds);
    return rc;
  }
  ptdp_error_set_collective(coll);
  if (!rc && MPI_Allreduce(MPI_IN_PLACE, io->sum, nds, MPI_UINT64_T, MPI_SUM, comm) != MPI_SUCCESS) rc = PTDP_ERR_LIB;
  for (int d = 0; d < made; d++) {
    if (!rc) rc = ckpt_attr_write_u64(ds[d], "checksum", io->sum[d]);
    if (H5Dclose(ds[d]) < 0 && !rc) rc = PTDP_ERR_LIB;
  }
  free(ds);
  PTDP_CALL(rc);
  PTDP_CALL(ckpt_stream_close(&io->stream));
  PTDP_CALL(save_attributes(io, info));
  PTDP_CALL_HDF5(H5Fclose(io->file));
  io->file = -1;
  PTDP_CALL(sync_file(comm, path));
  /* rank 0 names the checkpoint complete only once every rank's data is on storage */
  PTDP_CALL_MPI(MPI_Barrier(comm));
  ckpt_fault("closed", rank);
  return 0;
}

int ptdp_checkpoint_save(const char *save_dir, const ptdp_checkpoint_info *info, ptdp_gpt *m, ptdp_master *master,
                         const ptdp_optimizer *opt, ptdp_checkpoint_stats *stats)
{
  MPI_Comm comm = m->grid->world.comm;
  const int rank = m->grid->world_rank;
  PTDP_CALL_MPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  char tmp[PTDP_OPT_STRLEN] = "", path[2 * PTDP_OPT_STRLEN];
  RANK0_FS(comm, rank, ckpt_fs_prepare(save_dir, info->iteration, tmp, sizeof tmp), "preparing the checkpoint directory");
  PTDP_CALL_MPI(MPI_Bcast(tmp, sizeof tmp, MPI_CHAR, 0, comm));
  snprintf(path, sizeof path, "%s/%s", tmp, PTDP_CHECKPOINT_FILE);
  ckpt_io io;
  int rc = ckpt_io_setup(&io, m, master, opt ? opt->ddp : NULL, opt ? opt->m : NULL, opt ? opt->v : NULL);
  if (!rc) rc = save_all(&io, info, path, comm);
  long long bytes = io.bytes;
  ckpt_io_free(&io);
  PTDP_CALL(rc);
  RANK0_FS(comm, rank, ckpt_fs_commit(save_dir, info->iteration, tmp), "completing the checkpoint");
  RANK0_FS(comm, rank, ckpt_fs_retain(save_dir, info->keep, info->iteration), "removing old checkpoints");
  PTDP_CALL_MPI(MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_LONG_LONG, MPI_SUM, comm));
  if (stats) {
    stats->bytes = (double)bytes;
    stats->seconds = MPI_Wtime() - t0;
    stats->direct_bytes = 0;
  }
  return 0;
}

