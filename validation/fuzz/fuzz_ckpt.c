/* Harness: the checkpoint loader (src/io/checkpoint_load.c, checkpoint.c, checkpoint_h5.c,
 * checkpoint_direct.c) on damaged and hostile checkpoints.
 *
 * Input (fuzz_h5.h): a whole checkpoint file, or an edit program over the real checkpoint that
 * the harness saves at start-up from its trainer (ptdp_checkpoint_save: one rank, fp16 with a
 * dynamic scaler, optimizer state).  Each input is loaded as ptdp-train resumes
 * (ptdp_checkpoint_load with the optimizer; one input in four with direct I/O, where the scratch
 * folder's file system takes it: choose_reader), then its keys are read as use-checkpoint-args
 * reads them (every key of the table).
 * Either may refuse; neither may crash, read out of bounds or hang.  Promise checked when the
 * load succeeds: every element of every parameter and of both Adam moments is bit for bit what
 * HDF5 alone (its default driver, through its own type conversion) reads from the dataset
 * (a loader that read other bytes, or the right bytes as another type, returned a wrong
 * result), and the model and optimizer state hold nothing left from before the load. */
#include "fuzz.h"
#include "fuzz_h5.h"

#include "ptdp/args.h"
#include "ptdp/checkpoint.h"
#include "ptdp/error.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *base;
static size_t base_len;

/* The harness's own checkpoint, saved once and kept in memory. */
static int make_base(ptdp_trainer *tr)
{
  char dir[FUZZ_PATH_MAX], file[FUZZ_PATH_MAX + 64];
  if (fuzz_tmpdir(dir, sizeof dir)) return -1;
  ptdp_options keys; /* every key over its value, for /args */
  ptdp_args_view(&tr->args, &keys);
  const ptdp_checkpoint_info info = {.iteration = 1, .consumed_train = 1, .opt_step = 1, .scaler = tr->opt.scaler,
                                     .lr = 1e-3, .keys = &keys};
  int rc = ptdp_checkpoint_save(dir, &info, &tr->model, &tr->master, &tr->opt, NULL);
  snprintf(file, sizeof file, "%s/iter_0000001/%s", dir, PTDP_CHECKPOINT_FILE);
  if (!rc) base = fuzz_slurp(file, &base_len);
  if (!rc && base) rc = fuzz_h5_base(file);
  fuzz_rmtree(dir);
  return rc || !base ? -1 : 0;
}

/* A value no checkpoint element is likely to hold (a NaN with a payload): what the load must overwrite. */
static void poison(float *x, long long n)
{
  const uint32_t bits = 0x7fc0dead;
  for (long long k = 0; k < n; k++) memcpy(&x[k], &bits, sizeof bits);
}

/* Dataset path of parameter p of kind k, as the checkpoint layout names it (ptdp-checkpoint(5), FILE). */
static void dataset_path(int k, const ptdp_param_info *p, char *out, size_t n)
{
  static const char *const prefix[3] = {"/model", "/optimizer/exp_avg", "/optimizer/exp_avg_sq"};
  int len = snprintf(out, n, "%s/%s", prefix[k], p->name);
  for (int i = (int)strlen(prefix[k]) + 1; i < len && i < (int)n; i++)
    if (out[i] == '.') out[i] = '/';
}

/* The promise: what was loaded is the file's content (one rank: every slice is the whole tensor). */
static void check_loaded(const ptdp_trainer *tr, const char *path)
{
  const ptdp_gpt *m = &tr->model;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) fuzz_fail("HDF5 alone cannot open a checkpoint that loaded");
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < m->params.n; i++) {
      const ptdp_param_info *p = &m->params.table[i];
      const long long n = p->rows * p->cols;
      const float *got = (k == 0 ? m->params.fp32 : k == 1 ? tr->opt.m : tr->opt.v) + m->params.layout.offset[i];
      char ds_path[256];
      dataset_path(k, p, ds_path, sizeof ds_path);
      float *want = malloc(sizeof(float) * (size_t)(n ? n : 1));
      hid_t ds = H5Dopen2(f, ds_path, H5P_DEFAULT);
      if (!want || ds < 0 || H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, want) < 0)
        fuzz_fail("HDF5 alone cannot read a dataset of a checkpoint that loaded");
      if (memcmp(got, want, sizeof(float) * (size_t)n)) {
        fprintf(stderr, "ptdp fuzz: %s\n", ds_path);
        fuzz_fail("a checkpoint loaded values that are not its dataset's");
      }
      H5Dclose(ds);
      free(want);
    }
  H5Fclose(f);
}

/* use-checkpoint-args and ptdp-generate: every key of the table read from /args. */
static void read_keys(const ptdp_checkpoint_ref *ref)
{
  ptdp_args a;
  ptdp_options o;
  if (ptdp_args_init(&a, &o)) return;
  const char **keys = malloc(sizeof *keys * (size_t)o.count);
  for (int i = 0; keys && i < o.count; i++) keys[i] = o.table[i].name;
  if (keys) (void)ptdp_checkpoint_read_keys(ref, &o, keys, o.count, MPI_COMM_WORLD);
  free(keys);
  ptdp_options_free(&o);
}

/* Direct reads wait for the page cache to write the input out (about 45 ms an input, three times
 * the rest of a load): one input in four, chosen by a hash of its bytes so that a reproducer
 * takes the same path, reads through the direct reader, the others through HDF5 alone (the
 * loader's test hook PTDP_CHECKPOINT_DIRECT=0). */
static void choose_reader(const uint8_t *data, size_t size)
{
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ull;
  setenv("PTDP_CHECKPOINT_DIRECT", h % 4 == 0 ? "1" : "0", 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  fuzz_begin();
  ptdp_trainer *tr = fuzz_trainer();
  if (!tr || (!base && make_base(tr))) fuzz_fail("the harness's own trainer or checkpoint cannot be made");
  ptdp_checkpoint_ref ref = {.iteration = 1};
  if (fuzz_h5_input("ckpt.h5", base, base_len, data, size, ref.file, sizeof ref.file)) return 0;
  snprintf(ref.dir, sizeof ref.dir, "%s", ref.file);
  choose_reader(data, size);
  ptdp_gpt *m = &tr->model;
  poison(m->params.fp32, m->params.layout.total);
  poison(tr->opt.m, m->params.layout.total);
  poison(tr->opt.v, m->params.layout.total);
  ptdp_checkpoint_info info;
  ptdp_error_set_collective(1);
  const int rc = ptdp_checkpoint_load(&ref, m, &tr->master, &tr->opt, &info, NULL);
  fuzz_h5_close_all(); /* a failed load leaves its file open: one rank's failure ends a real run */
  if (rc == 0) check_loaded(tr, ref.file);
  fuzz_verdict("load", rc);
  ptdp_error_clear();
  ptdp_error_set_collective(1);
  read_keys(&ref);
  fuzz_verdict("keys", ptdp_error_message()[0]);
  fuzz_h5_close_all();
  ptdp_error_clear();
  return 0;
}
