/* The run file: its path, its layout (created once, before SWMR writing starts: HDF5 1.10 creates
 * no objects in SWMR mode), and opening it again to append (see ptdp/runfile.h). */
#include "h5util.h"
#include "runfile_impl.h"

#include "ptdp/config.h"
#include "ptdp/error.h"
#include "ptdp/cpu_threads.h"
#include "ptdp/memory_formula.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const rf_metric_i64[4] = {"iteration", "consumed_samples", "skipped_iterations", "nan_iterations"};
const char *const rf_metric_f64[8] = {"lm_loss",          "learning_rate",     "grad_norm",       "loss_scale",
                                      "ms_per_iteration", "tokens_per_second", "tflops_per_rank", "mfu"};
static const char *const comm_names[RF_NCOMMS] = {"tp_layers", "tp_other", "pp", "dp", "embedding"};

int rf_types(struct ptdp_runfile *rf)
{
  rf->str_type = H5Tcopy(H5T_C_S1);
  PTDP_CALL_HDF5(rf->str_type);
  PTDP_CALL_HDF5(H5Tset_size(rf->str_type, 64));
  PTDP_CALL_HDF5(H5Tset_strpad(rf->str_type, H5T_STR_NULLPAD));
  hid_t s256 = H5Tcopy(H5T_C_S1), s64 = H5Tcopy(H5T_C_S1), s32 = H5Tcopy(H5T_C_S1);
  PTDP_CALL_HDF5(s256);
  PTDP_CALL_HDF5(s64);
  PTDP_CALL_HDF5(s32);
  PTDP_CALL_HDF5(H5Tset_size(s256, 256));
  PTDP_CALL_HDF5(H5Tset_size(s64, 64));
  PTDP_CALL_HDF5(H5Tset_size(s32, 32));
  hid_t j = rf->job_type = H5Tcreate(H5T_COMPOUND, sizeof(rf_job));
  PTDP_CALL_HDF5(j);
  PTDP_CALL_HDF5(H5Tinsert(j, "start_time", HOFFSET(rf_job, start_time), H5T_NATIVE_DOUBLE));
  PTDP_CALL_HDF5(H5Tinsert(j, "end_time", HOFFSET(rf_job, end_time), H5T_NATIVE_DOUBLE));
  PTDP_CALL_HDF5(H5Tinsert(j, "ranks", HOFFSET(rf_job, ranks), H5T_NATIVE_LLONG));
  PTDP_CALL_HDF5(H5Tinsert(j, "hosts", HOFFSET(rf_job, hosts), s256));
  PTDP_CALL_HDF5(H5Tinsert(j, "layout", HOFFSET(rf_job, layout), s64));
  PTDP_CALL_HDF5(H5Tinsert(j, "slurm_job_id", HOFFSET(rf_job, slurm_job_id), s32));
  PTDP_CALL_HDF5(H5Tinsert(j, "slurm_array_job_id", HOFFSET(rf_job, slurm_array_job_id), s32));
  PTDP_CALL_HDF5(H5Tinsert(j, "slurm_array_task_id", HOFFSET(rf_job, slurm_array_task_id), s32));
  PTDP_CALL_HDF5(H5Tinsert(j, "first_iteration", HOFFSET(rf_job, first_iteration), H5T_NATIVE_LLONG));
  PTDP_CALL_HDF5(H5Tinsert(j, "last_iteration", HOFFSET(rf_job, last_iteration), H5T_NATIVE_LLONG));
  hid_t e = rf->event_type = H5Tcreate(H5T_COMPOUND, sizeof(rf_event));
  PTDP_CALL_HDF5(e);
  PTDP_CALL_HDF5(H5Tinsert(e, "start", HOFFSET(rf_event, start), H5T_NATIVE_DOUBLE));
  PTDP_CALL_HDF5(H5Tinsert(e, "end", HOFFSET(rf_event, end), H5T_NATIVE_DOUBLE));
  PTDP_CALL_HDF5(H5Tinsert(e, "wait", HOFFSET(rf_event, wait), H5T_NATIVE_DOUBLE));
  PTDP_CALL_HDF5(H5Tinsert(e, "kind", HOFFSET(rf_event, kind), H5T_NATIVE_INT));
  PTDP_CALL_HDF5(H5Tinsert(e, "microbatch", HOFFSET(rf_event, microbatch), H5T_NATIVE_INT));
  PTDP_CALL_HDF5(H5Tinsert(e, "chunk", HOFFSET(rf_event, chunk), H5T_NATIVE_INT));
  PTDP_CALL_HDF5(H5Tclose(s256));
  PTDP_CALL_HDF5(H5Tclose(s64));
  PTDP_CALL_HDF5(H5Tclose(s32));
  return 0;
}

int rf_create(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims, const void *fill)
{
  hsize_t maxd[4], chunk[4];
  size_t elem = H5Tget_size(type), per = elem ? elem : 1;
  for (int d = rank - 1; d >= 0; d--) { /* chunks of about 64 KiB: whole rows of the inner dimensions */
    maxd[d] = H5S_UNLIMITED;
    chunk[d] = d == 0 ? 1 : (dims[d] > 0 ? dims[d] : 1);
    per *= chunk[d];
  }
  if (per < 65536) chunk[0] = 65536 / per > 0 ? 65536 / per : 1;
  hid_t sp = H5Screate_simple(rank, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  PTDP_CALL_HDF5(sp);
  PTDP_CALL_HDF5(dcpl);
  PTDP_CALL_HDF5(H5Pset_chunk(dcpl, rank, chunk));
  if (fill) PTDP_CALL_HDF5(H5Pset_fill_value(dcpl, type, fill));
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  PTDP_CALL_HDF5(lcpl);
  PTDP_CALL_HDF5(H5Pset_create_intermediate_group(lcpl, 1));
  hid_t ds = H5Dcreate2(loc, name, type, sp, lcpl, dcpl, H5P_DEFAULT);
  PTDP_CALL_HDF5(ds);
  PTDP_CALL_HDF5(H5Dclose(ds));
  PTDP_CALL_HDF5(H5Pclose(lcpl));
  PTDP_CALL_HDF5(H5Pclose(dcpl));
  PTDP_CALL_HDF5(H5Sclose(sp));
  return 0;
}

/* A file appended to may be damaged or another program's: a dataset whose rank is outside
 * [lo, hi] would overflow dims[4] below, or be given fewer start and count entries than HDF5 reads
 * (fuzz_runfile found the first).  Refused, naming the file and the dataset. */
static int check_rank(hid_t file, const char *path, hid_t fs, int lo, int hi)
{
  const int nd = H5Sget_simple_extent_ndims(fs);
  if (nd >= lo && nd <= hi) return 0;
  char name[512] = "?", want[32];
  if (H5Fget_name(file, name, sizeof name) < 0) snprintf(name, sizeof name, "?");
  if (lo == hi) snprintf(want, sizeof want, "%d", lo);
  else snprintf(want, sizeof want, "%d to %d", lo, hi);
  return PTDP_FAIL(PTDP_ERR_INPUT, "run file '%s': dataset %s has %d dimensions where ptdp writes %s: the file is "
                   "damaged or not a ptdp run file", name, path, nd, want);
}

int rf_write(hid_t file, const char *path, hid_t memtype, int rank, const hsize_t *start, const hsize_t *count,
             const void *buf)
{
  hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  PTDP_CALL_HDF5(ds);
  hid_t fs = H5Dget_space(ds);
  PTDP_CALL_HDF5(fs);
  PTDP_CALL(check_rank(file, path, fs, rank, rank));
  hsize_t dims[4];
  PTDP_CALL_HDF5(H5Sget_simple_extent_dims(fs, dims, NULL));
  int grow = 0;
  for (int d = 0; d < rank; d++)
    if (start[d] + count[d] > dims[d]) dims[d] = start[d] + count[d], grow = 1;
  if (grow) {
    PTDP_CALL_HDF5(H5Sclose(fs));
    PTDP_CALL_HDF5(H5Dset_extent(ds, dims));
    fs = H5Dget_space(ds);
    PTDP_CALL_HDF5(fs);
  }
  PTDP_CALL_HDF5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
  hid_t ms = H5Screate_simple(rank, count, NULL);
  PTDP_CALL_HDF5(ms);
  herr_t rc = H5Dwrite(ds, memtype, ms, fs, H5P_DEFAULT, buf);
  PTDP_CALL_HDF5(H5Sclose(ms));
  PTDP_CALL_HDF5(H5Sclose(fs));
  PTDP_CALL_HDF5(H5Dclose(ds));
  PTDP_CALL_HDF5(rc);
  return 0;
}

int rf_rows(hid_t file, const char *path, long long *n)
{
  hid_t ds = H5Dopen2(file, path, H5P_DEFAULT);
  PTDP_CALL_HDF5(ds);
  hid_t fs = H5Dget_space(ds);
  PTDP_CALL_HDF5(fs);
  PTDP_CALL(check_rank(file, path, fs, 1, 4));
  hsize_t dims[4] = {0};
  PTDP_CALL_HDF5(H5Sget_simple_extent_dims(fs, dims, NULL));
  PTDP_CALL_HDF5(H5Sclose(fs));
  PTDP_CALL_HDF5(H5Dclose(ds));
  *n = (long long)dims[0];
  return 0;
}

/* ---------------------------------------------------------------- the path */

static int exists(const char *p)
{
  struct stat st;
  return stat(p, &st) == 0;
}

/* Rank 0: the file to write; an error when an explicit run-file names another run's file. */
static int resolve_path(const ptdp_runfile_run *a, int appending, char *out, size_t n, char *base_out, size_t nb)
{
  if (a->run_file[0]) {
    snprintf(out, n, "%s", a->run_file);
    PTDP_CHECK(appending || !exists(out),
               "run-file '%s' exists and this run is not resuming from a checkpoint: it is another run's file "
               "(remove it, or name another run-file)", out);
    return 0;
  }
  char base[PTDP_OPT_STRLEN + 8];
  if (a->save[0]) PTDP_CALL(ckpt_fs_make_dirs(a->save)); /* the run file goes there before the first checkpoint */
  if (a->save[0]) snprintf(base, sizeof base, "%s/run", a->save);
  else snprintf(base, sizeof base, "ptdp-run");
  snprintf(out, n, "%s.h5", base);
  snprintf(base_out, nb, "%s", base);
  if (a->save[0]) {
    /* SAVE/run.h5 belongs to the run whose checkpoints SAVE receives: a resumed run appends to it.
     * One found by a launch that resumes from no checkpoint (a requeue of a job killed before its
     * first save, or a new run saving into a used directory) is another launch's file that this run
     * does not continue: it is kept under the next free SAVE/run-K.h5, never overwritten, and this
     * run starts SAVE/run.h5 afresh, so its requeues append to the file that holds its start. */
    if (appending || !exists(out)) return 0;
    char aside[PTDP_OPT_STRLEN + 32];
    int k = 1;
    do snprintf(aside, sizeof aside, "%s-%d.h5", base, k++);
    while (exists(aside));
    PTDP_CHECK_IO(rename(out, aside) == 0, "cannot move the earlier run file '%s' aside to '%s' (%s)", out, aside,
                  strerror(errno));
    printf("[run file] %s held a launch this run does not continue (it resumes from no checkpoint): kept as %s\n", out,
           aside);
    return 0;
  }
  for (int k = 1; exists(out); k++) snprintf(out, n, "%s-%d.h5", base, k); /* never overwrite */
  return 0;
}

/* ---------------------------------------------------------------- creating */

static int create_config(struct ptdp_runfile *rf)
{
  const ptdp_runfile_run *run = &rf->run;
  hid_t g = H5Gcreate2(rf->file, "/config", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CALL_HDF5(g);
  PTDP_CALL(ckpt_attr_write_keys(g, run->keys));
  const ptdp_grid_layout *L = &run->grid->layout;
  const struct {
    const char *name;
    long long v;
  } ints[] = {{"world_size", L->world},       {"tensor_model_parallel_size", L->t}, {"pipeline_model_parallel_size", L->p},
              {"data_parallel_size", L->d},   {"virtual_pipeline_chunks", run->model->nchunks},
              {"micro_batches", run->micro_batches}, {"num_layers", run->num_layers}, {"hidden_size", run->hidden},
              {"seq_length", run->seq},       {"micro_batch_size", run->micro_batch},
              {"global_batch_size", run->global_batch},
              {"vocab_size", run->vocab},     {"padded_vocab_size", run->model->sh.padded_vocab},
              {"sequence_parallel", run->model->cfg.sequence_parallel},
              {"use_distributed_optimizer", run->use_distributed_optimizer}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) PTDP_CALL(ckpt_attr_write_i64(g, ints[i].name, ints[i].v));
  char text[PTDP_OPT_STRLEN];
  PTDP_CALL(ckpt_attr_write_str(g, "pipeline_schedule", run->schedule));
  PTDP_CALL(ckpt_attr_write_str(g, "recompute_granularity", run->recompute));
  PTDP_CALL(ckpt_attr_write_f64(g, "model_flops_per_iteration", run->model_flops));
  PTDP_CALL(ckpt_attr_write_f64(g, "peak_flops_per_rank", run->peak_flops));
  PTDP_CALL(ckpt_attr_write_str(g, "build", PTDP_CONFIGURE_SUMMARY));
  ptdp_blas_describe(1, text, sizeof text);
  PTDP_CALL(ckpt_attr_write_str(g, "blas", text));
  PTDP_CALL_HDF5(H5Gclose(g));
  return 0;
}

static int create_memory_pipeline(struct ptdp_runfile *rf)
{
  const ptdp_runfile_run *run = &rf->run;
  const hid_t f = rf->file;
  const hsize_t W = (hsize_t)run->grid->layout.world, L = (hsize_t)(run->num_layers / run->grid->layout.p);
  const hsize_t I = (hsize_t)run->work_items, zero[3] = {0, 0, 0};
  const long long minus1 = -1;
  const double nan = 0.0 / 0.0;
  char kn[RF_NKINDS][64] = {{0}};
  for (int k = 0; k < RF_NKINDS; k++) snprintf(kn[k], sizeof kn[k], "%s", ptdp_buffer_kind_name((ptdp_buffer_kind)(RF_KIND0 + k)));
  const hsize_t nk[1] = {RF_NKINDS}, wl[2] = {W, L}, wlk[3] = {W, L, RF_NKINDS}, w[1] = {W};
  PTDP_CALL(rf_create(f, "/memory/tensor_names", rf->str_type, 1, nk, NULL));
  PTDP_CALL(rf_write(f, "/memory/tensor_names", rf->str_type, 1, zero, nk, kn));
  PTDP_CALL(rf_create(f, "/memory/layer_index", H5T_NATIVE_LLONG, 2, wl, &minus1));
  PTDP_CALL(rf_create(f, "/memory/layer_bytes", H5T_NATIVE_LLONG, 3, wlk, &minus1));
  static const char *const per_rank[] = {"peak_activation_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes",
                                         "allocated_bytes"};
  char path[128];
  for (size_t i = 0; i < sizeof per_rank / sizeof per_rank[0]; i++) {
    snprintf(path, sizeof path, "/memory/%s", per_rank[i]);
    PTDP_CALL(rf_create(f, path, H5T_NATIVE_LLONG, 1, w, &minus1));
  }
  const ptdp_layer_shape ls = ptdp_gpt_layer_shape(run->model);
  hid_t g = H5Gopen2(f, "/memory", H5P_DEFAULT);
  PTDP_CALL_HDF5(g);
  PTDP_CALL(ckpt_attr_write_str(g, "precision", ptdp_dtype_name(run->model->cfg.dtype)));
  PTDP_CALL(ckpt_attr_write_f64(g, "formula_layer_bytes_paper", ptdp_layer_bytes_paper(&ls)));
  PTDP_CALL(ckpt_attr_write_f64(g, "formula_layer_bytes_ptdp", ptdp_layer_bytes_ptdp(&ls)));
  PTDP_CALL_HDF5(H5Gclose(g));
  const hsize_t swi[3] = {0, W, I}, sw[2] = {0, W};
  PTDP_CALL(rf_create(f, "/memory/timeline_iteration", H5T_NATIVE_LLONG, 1, zero, &minus1));
  PTDP_CALL(rf_create(f, "/memory/timeline", H5T_NATIVE_LLONG, 3, swi, &minus1));
  PTDP_CALL(rf_create(f, "/pipeline/iteration", H5T_NATIVE_LLONG, 1, zero, &minus1));
  rf_event none = {nan, nan, nan, -1, -1, -1};
  PTDP_CALL(rf_create(f, "/pipeline/events", rf->event_type, 3, swi, &none));
  PTDP_CALL(rf_create(f, "/pipeline/bubble_measured", H5T_NATIVE_DOUBLE, 2, sw, &nan));
  PTDP_CALL(rf_create(f, "/pipeline/bubble_replayed", H5T_NATIVE_DOUBLE, 1, zero, &nan));
  g = H5Gopen2(f, "/pipeline", H5P_DEFAULT);
  PTDP_CALL_HDF5(g);
  const double bubble = (double)(run->grid->layout.p - 1) / ((double)run->model->nchunks * run->micro_batches);
  PTDP_CALL(ckpt_attr_write_f64(g, "bubble_formula", bubble));
  PTDP_CALL_HDF5(H5Gclose(g));
  return 0;
}

static int create_layout(struct ptdp_runfile *rf, const char *hosts)
{
  const hid_t f = rf->file;
  const long long W = rf->run.grid->layout.world;
  char created[64];
  time_t now = time(NULL);
  strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  PTDP_CALL(ckpt_attr_write_str(f, "format", "ptdp-run"));
  PTDP_CALL(ckpt_attr_write_i64(f, "format_version", PTDP_RUNFILE_FORMAT));
  PTDP_CALL(ckpt_attr_write_str(f, "ptdp_version", PACKAGE_VERSION));
  PTDP_CALL(ckpt_attr_write_str(f, "created", created));
  PTDP_CALL(create_config(rf));
  const hsize_t zero[3] = {0, 0, 0}, w[1] = {(hsize_t)W};
  const double nan = 0.0 / 0.0;
  const long long minus1 = -1;
  PTDP_CALL(rf_create(f, "/config/hosts", rf->str_type, 1, w, NULL));
  PTDP_CALL(rf_write(f, "/config/hosts", rf->str_type, 1, zero, w, hosts));
  PTDP_CALL(rf_create(f, "/jobs", rf->job_type, 1, zero, NULL));
  char path[128];
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "/metrics/%s", rf_metric_i64[i]);
    PTDP_CALL(rf_create(f, path, H5T_NATIVE_LLONG, 1, zero, &minus1));
  }
  for (int i = 0; i < 8; i++) {
    snprintf(path, sizeof path, "/metrics/%s", rf_metric_f64[i]);
    PTDP_CALL(rf_create(f, path, H5T_NATIVE_DOUBLE, 1, zero, &nan));
  }
  PTDP_CALL(rf_create(f, "/eval/iteration", H5T_NATIVE_LLONG, 1, zero, &minus1));
  PTDP_CALL(rf_create(f, "/eval/lm_loss", H5T_NATIVE_DOUBLE, 1, zero, &nan));
  PTDP_CALL(rf_create(f, "/eval/ppl", H5T_NATIVE_DOUBLE, 1, zero, &nan));
  /* timers: names fixed by the trainer's registration */
  const int T = ptdp_events_count(rf->run.events);
  char(*tn)[64];
  PTDP_CALLOC(tn, (size_t)T, sizeof *tn);
  for (int i = 0; i < T; i++) snprintf(tn[i], sizeof tn[i], "%s", ptdp_events_name(rf->run.events, i));
  const hsize_t nt[1] = {(hsize_t)T}, wt[3] = {0, (hsize_t)W, (hsize_t)T};
  int rc = rf_create(f, "/timers/names", rf->str_type, 1, nt, NULL);
  if (!rc) rc = rf_write(f, "/timers/names", rf->str_type, 1, zero, nt, tn);
  free(tn);
  PTDP_CALL(rc);
  PTDP_CALL(rf_create(f, "/timers/iteration", H5T_NATIVE_LLONG, 1, zero, &minus1));
  PTDP_CALL(rf_create(f, "/timers/ms", H5T_NATIVE_DOUBLE, 3, wt, &nan));
  char cn[RF_NCOMMS][64] = {{0}};
  for (int i = 0; i < RF_NCOMMS; i++) snprintf(cn[i], sizeof cn[i], "%s", comm_names[i]);
  const hsize_t nc[1] = {RF_NCOMMS}, wc[3] = {0, (hsize_t)W, RF_NCOMMS}, wc2[2] = {(hsize_t)W, RF_NCOMMS};
  PTDP_CALL(rf_create(f, "/communication/names", rf->str_type, 1, nc, NULL));
  PTDP_CALL(rf_write(f, "/communication/names", rf->str_type, 1, zero, nc, cn));
  PTDP_CALL(rf_create(f, "/communication/iteration", H5T_NATIVE_LLONG, 1, zero, &minus1));
  PTDP_CALL(rf_create(f, "/communication/bytes", H5T_NATIVE_DOUBLE, 3, wc, &nan));
  PTDP_CALL(rf_create(f, "/communication/calls", H5T_NATIVE_DOUBLE, 3, wc, &nan));
  PTDP_CALL(rf_create(f, "/communication/analytical_bytes", H5T_NATIVE_DOUBLE, 2, wc2, &nan));
  return create_memory_pipeline(rf);
}

/* ---------------------------------------------------------------- opening */

static herr_t visit_none(hid_t obj, const char *name, const H5O_info_t *info, void *op)
{
  (void)obj, (void)name, (void)info, (void)op;
  return 0;
}

static int open_file(struct ptdp_runfile *rf, int create)
{
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  PTDP_CALL_HDF5(fapl);
  PTDP_CALL_HDF5(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST)); /* SWMR needs it */
  if (create) {
    rf->file = H5Fcreate(rf->path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    /* a default name another run starting here took first: the next free number */
    for (int k = 1; rf->file < 0 && rf->base[0] && exists(rf->path) && k < 100000; k++) {
      snprintf(rf->path, sizeof rf->path, "%s-%d.h5", rf->base, k);
      if (!exists(rf->path)) rf->file = H5Fcreate(rf->path, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
    }
    PTDP_CALL_HDF5(H5Pclose(fapl));
    PTDP_CHECK_IO(rf->file >= 0, "cannot create the run file '%s'", rf->path);
    return 0;
  }
  rf->file = H5Fopen(rf->path, H5F_ACC_RDWR, fapl);
  if (rf->file < 0) {
    /* a run killed while writing leaves the file marked open for SWMR writing; clearing the mark
     * is what `h5clear -s` does, through the file-access property HDF5 1.10 registers for it */
    hbool_t clear = 1;
    if (H5Pexist(fapl, "clear_status_flags") > 0 && H5Pset(fapl, "clear_status_flags", &clear) >= 0)
      rf->file = H5Fopen(rf->path, H5F_ACC_RDWR, fapl);
  }
  PTDP_CALL_HDF5(H5Pclose(fapl));
  PTDP_CHECK_IO(rf->file >= 0, "cannot open the run file '%s' to append to it (if a killed run left it marked "
                               "open, `h5clear -s %s` clears the mark)", rf->path, rf->path);
  char fmt[64] = "";
  long long version = 0;
  int has_fmt = 0, has_version = 0;
  PTDP_CALL(ckpt_attr_get_str(rf->file, "format", fmt, sizeof fmt, &has_fmt));
  PTDP_CALL(ckpt_attr_get_i64(rf->file, "format_version", &version, &has_version));
  PTDP_CHECK(!strcmp(fmt, "ptdp-run") && version == PTDP_RUNFILE_FORMAT,
             "'%s' is not a ptdp run file of format version %d (format '%s', version %lld): name another run-file",
             rf->path, PTDP_RUNFILE_FORMAT, fmt, version);
  /* every object header read now, before SWMR writing starts: in SWMR mode HDF5 retries a metadata
   * read whose checksum fails 100 times, sleeping twice as long each time (for a reader racing the
   * writer), so a damaged header met later held a requeued job for ever (fuzz_runfile) */
  PTDP_CHECK(H5Ovisit2(rf->file, H5_INDEX_NAME, H5_ITER_NATIVE, visit_none, NULL, H5O_INFO_BASIC) >= 0,
             "the run file '%s' is damaged: HDF5 cannot read all its objects (name another run-file)", rf->path);
  PTDP_CALL(rf_rows(rf->file, "/metrics/iteration", &rf->n_intervals));
  PTDP_CALL(rf_rows(rf->file, "/eval/iteration", &rf->n_evals));
  PTDP_CALL(rf_rows(rf->file, "/pipeline/iteration", &rf->n_samples));
  return 0;
}

static void job_row(const struct ptdp_runfile *rf, const char *hosts, rf_job *j)
{
  const ptdp_runfile_run *run = &rf->run;
  j->start_time = rf->start_time;
  j->end_time = (double)time(NULL);
  j->ranks = run->grid->layout.world;
  /* distinct hosts, in rank order */
  for (int r = 0; r < run->grid->layout.world; r++) {
    const char *h = hosts + 64 * (size_t)r;
    int seen = 0;
    for (int q = 0; q < r && !seen; q++) seen = !strncmp(h, hosts + 64 * (size_t)q, 64);
    if (!seen && strlen(j->hosts) + strlen(h) + 2 < sizeof j->hosts)
      snprintf(j->hosts + strlen(j->hosts), sizeof j->hosts - strlen(j->hosts), "%s%s", j->hosts[0] ? "," : "", h);
  }
  const ptdp_grid_layout *L = &run->grid->layout;
  snprintf(j->layout, sizeof j->layout, "t%d p%d d%d v%d%s%s", L->t, L->p, L->d, run->model->nchunks,
           run->model->cfg.sequence_parallel ? " sp" : "", run->use_distributed_optimizer ? " distopt" : "");
  const char *e;
  if ((e = getenv("SLURM_JOB_ID"))) snprintf(j->slurm_job_id, sizeof j->slurm_job_id, "%s", e);
  if ((e = getenv("SLURM_ARRAY_JOB_ID"))) snprintf(j->slurm_array_job_id, sizeof j->slurm_array_job_id, "%s", e);
  if ((e = getenv("SLURM_ARRAY_TASK_ID"))) snprintf(j->slurm_array_task_id, sizeof j->slurm_array_task_id, "%s", e);
}

int rf_write_job(struct ptdp_runfile *rf)
{
  rf->job_rec.end_time = (double)time(NULL);
  rf->job_rec.first_iteration = rf->first_iteration;
  rf->job_rec.last_iteration = rf->last_iteration;
  const hsize_t at[1] = {(hsize_t)rf->job}, one[1] = {1};
  return rf_write(rf->file, "/jobs", rf->job_type, 1, at, one, &rf->job_rec);
}

/* Rank 0: path, create or open, a /jobs row, then SWMR writing. */
static int open_rank0(struct ptdp_runfile *rf, int appending, const char *hosts)
{
  PTDP_CALL(resolve_path(&rf->run, appending, rf->path, sizeof rf->path, rf->base, sizeof rf->base));
  PTDP_CALL_HDF5(H5Eset_auto2(H5E_DEFAULT, NULL, NULL));
  PTDP_CALL(rf_types(rf));
  const int create = !(appending && exists(rf->path));
  PTDP_CALL(open_file(rf, create));
  if (create) PTDP_CALL(create_layout(rf, hosts));
  PTDP_CALL(rf_rows(rf->file, "/jobs", &rf->job));
  job_row(rf, hosts, &rf->job_rec);
  PTDP_CALL(rf_write_job(rf));
  PTDP_CALL_HDF5(H5Fstart_swmr_write(rf->file));
  return 0;
}

int ptdp_runfile_open(ptdp_runfile **out, const ptdp_runfile_run *run, int appending)
{
  *out = NULL;
  if (!strcmp(run->run_file, "none")) return 0;
  struct ptdp_runfile *rf;
  PTDP_CALLOC(rf, 1, sizeof *rf);
  rf->file = -1;
  rf->run = *run;
  const ptdp_grid *grid = run->grid;
  rf->rank0 = grid->world_rank == 0;
  rf->start_time = (double)time(NULL);
  rf->first_iteration = rf->last_iteration = run->first_iteration;
  char me[64] = "", *hosts = NULL;
  int len = 0;
  PTDP_CALL_MPI(MPI_Get_processor_name(me, &len));
  if (rf->rank0) PTDP_CALLOC(hosts, (size_t)grid->layout.world, 64);
  PTDP_CALL_MPI(MPI_Gather(me, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, grid->world.comm));
  int st = rf->rank0 ? open_rank0(rf, appending, hosts) : 0;
  free(hosts);
  rf->run.keys = NULL; /* read while opening only (ptdp/runfile.h) */
  rf->run.run_file = rf->run.save = NULL;
  PTDP_CALL_MPI(MPI_Bcast(&st, 1, MPI_INT, 0, grid->world.comm));
  if (st) {
    ptdp_runfile_close(&rf);
    if (grid->world_rank == 0) return st;
    return ptdp_error_push(st, __FILE__, __LINE__, __func__, "opening the run file failed on rank 0 (its message says why)");
  }
  *out = rf;
  return 0;
}

const char *ptdp_runfile_path(const ptdp_runfile *rf) { return rf && rf->rank0 ? rf->path : ""; }
