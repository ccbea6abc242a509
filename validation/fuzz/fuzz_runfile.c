/* Harness: appending to a run file (src/io/runfile.c's opening of an existing file: its format
 * attributes and the extents of the datasets it grows; runfile_write.c's rows), as a requeued
 * job does to the file an earlier launch left, damaged or hostile.
 *
 * Input (fuzz_h5.h): a whole run file, or an edit program over the real one the harness writes at
 * start-up (ptdp_runfile_open of its trainer, one evaluation, the memory rows, one interval).
 * Each input is opened to append as a resumed ptdp-train opens it, and when accepted it gets
 * what a launch writes: an interval, an evaluation, the memory rows, the close.  Opening may
 * refuse and a write may fail; nothing may crash, write out of bounds or hang.  Promise checked
 * when every write succeeded: HDF5 alone reads back, as the last row of /eval/iteration and of
 * /metrics/iteration, the iteration just appended. */
#include "fuzz.h"
#include "fuzz_h5.h"

#include "ptdp/args.h"
#include "ptdp/error.h"
#include "ptdp/runfile.h"
#include "ptdp/schedule.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *base;
static size_t base_len;

enum { ITERATION = 7 };

static char run_path[FUZZ_PATH_MAX + 16];
static ptdp_options keys;
static ptdp_runfile_run run;

/* What the trainer hands the run file (trainer.c's open_runfile), for the harness's trainer. */
static void describe(const ptdp_trainer *tr)
{
  const ptdp_args *a = &tr->args;
  ptdp_args_view((ptdp_args *)a, &keys);
  run = (ptdp_runfile_run){
      .keys = &keys, .run_file = run_path, .save = "", .grid = &tr->grid, .model = &tr->model, .events = tr->events,
      .schedule = ptdp_schedule_name(tr->pipe.sched.kind), .work_items = tr->pipe.sched.count, .micro_batches = tr->m,
      .num_layers = a->num_layers, .hidden = a->hidden_size, .seq = a->seq_length, .micro_batch = a->micro_batch_size,
      .global_batch = tr->gbs, .vocab = tr->vocab, .model_flops = 1e9, .peak_flops = 1e12,
      .optimizer_bytes = (double)tr->opt.state_bytes, .first_iteration = ITERATION - 1};
  snprintf(run.recompute, sizeof run.recompute, "none");
}

/* What a launch writes after opening: an interval, an evaluation, the memory rows; then the close. */
static int append(ptdp_runfile **rf, ptdp_trainer *tr, long long iteration)
{
  ptdp_events_summary timers;
  const ptdp_runfile_metrics row = {.iteration = iteration, .consumed_samples = iteration, .lm_loss = 2.5,
                                    .learning_rate = 1e-3, .grad_norm = 1, .loss_scale = 1};
  int rc = ptdp_events_reduce(tr->events, &tr->grid.world, 1, &timers);
  if (!rc) rc = ptdp_runfile_interval(*rf, &row, &timers);
  if (!rc) rc = ptdp_runfile_eval(*rf, iteration, 2.5);
  if (!rc) rc = ptdp_runfile_memory(*rf);
  const int rc_close = ptdp_runfile_close(rf);
  return rc ? rc : rc_close;
}

/* The harness's own run file, written once and kept in memory. */
static int make_base(ptdp_trainer *tr)
{
  char dir[FUZZ_PATH_MAX];
  if (fuzz_tmpdir(dir, sizeof dir)) return -1;
  describe(tr);
  snprintf(run_path, sizeof run_path, "%s/run.h5", dir);
  ptdp_runfile *rf = NULL;
  int rc = ptdp_runfile_open(&rf, &run, 0);
  if (!rc) rc = append(&rf, tr, 1);
  if (!rc) base = fuzz_slurp(run_path, &base_len);
  if (!rc && base) rc = fuzz_h5_base(run_path);
  fuzz_rmtree(dir);
  return rc || !base ? -1 : 0;
}

/* The last element of dataset path (any shape, read as long long), or -1 when HDF5 cannot read it. */
static long long last_value(hid_t f, const char *path)
{
  long long v = -1;
  hid_t ds = H5Dopen2(f, path, H5P_DEFAULT), sp = ds < 0 ? -1 : H5Dget_space(ds);
  const hssize_t n = sp < 0 ? 0 : H5Sget_simple_extent_npoints(sp);
  long long *all = n > 0 && n < (1 << 20) ? malloc(sizeof *all * (size_t)n) : NULL;
  if (all && H5Dread(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, all) >= 0) v = all[n - 1];
  free(all);
  if (sp >= 0) H5Sclose(sp);
  if (ds >= 0) H5Dclose(ds);
  return v;
}

static void check_appended(const char *path)
{
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return; /* a file HDF5 cannot open again is the damage the input brought */
  const long long ev = last_value(f, "/eval/iteration"), mt = last_value(f, "/metrics/iteration");
  H5Fclose(f);
  if ((ev >= 0 && ev != ITERATION) || (mt >= 0 && mt != ITERATION)) {
    fprintf(stderr, "ptdp fuzz: last rows read back: /eval/iteration %lld, /metrics/iteration %lld\n", ev, mt);
    fuzz_fail("a run file accepted for appending holds other rows than those appended");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  ptdp_trainer *tr = fuzz_trainer();
  if (!tr || (!base && make_base(tr))) fuzz_fail("the harness's own trainer or run file cannot be made");
  if (fuzz_h5_input("run.h5", base, base_len, data, size, run_path, sizeof run_path)) return 0;
  ptdp_error_set_collective(1);
  ptdp_runfile *rf = NULL;
  int rc = ptdp_runfile_open(&rf, &run, 1);
  if (!rc) rc = append(&rf, tr, ITERATION);
  fuzz_h5_close_all();
  if (!rc) check_appended(run_path);
  fuzz_verdict("append", rc);
  ptdp_error_clear();
  return 0;
}
