/* ptdp-sim --out: the prediction in the run file's layout (ptdp-runfile(5)) where the two overlap,
 * so that ptdp-compare and ptdp-plot read a prediction as they read a run:
 *   /             format "ptdp-run", format_version, source "ptdp-sim", hardware
 *   /config       one string attribute per ptdp-train key; the int64 and f64 layout attributes
 *   /metrics/NAME one row (iteration 1): ms_per_iteration, tokens_per_second, tflops_per_rank,
 *                 mfu; what only training measures (losses, norms) NaN or -1
 *   /memory/X_bytes  int64 [W] per rank, from the plan in the precision modelled (sim_mem.c)
 *   /pipeline/iteration [1]; /pipeline/events [1, W, I]: every rank's work items as replayed
 *                 (start: the end of the rank's previous item; wait: the time it then waits for
 *                 its input; end), kind, microbatch, chunk; /pipeline/bubble_measured [1, W]: the
 *                 replay's idle / busy per rank; /pipeline/bubble_replayed [1], attribute
 *                 bubble_formula
 *   /sim/components  names [C], exposed_seconds [C], hidden_seconds [C]: what the run file has not
 *   /sim/range       iteration_seconds [3] low, central, high (root sum of squares),
 *                    worst_case_seconds [2]; keys [K], band [K], seconds_at_band_ends [K, 2]: each
 *                    banded value's one-at-a-time predictions (ptdp-sim(1), UNCERTAINTY) */
#include "ptdp/error.h"
#include "ptdp/sim.h"
#include "ptdp/runfile.h"
#include "sim_internal.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int attr_str(hid_t obj, const char *name, const char *value)
{
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
  H5Tset_size(t, strlen(value) + 1);
  hid_t at = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  int ok = at >= 0 && H5Awrite(at, t, value) >= 0;
  if (at >= 0) H5Aclose(at);
  H5Sclose(sp);
  H5Tclose(t);
  PTDP_CHECK_IO(ok, "writing attribute %s", name);
  return 0;
}

static int attr_num(hid_t obj, const char *name, hid_t type, const void *v)
{
  hid_t sp = H5Screate(H5S_SCALAR), at = H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
  int ok = at >= 0 && H5Awrite(at, type, v) >= 0;
  if (at >= 0) H5Aclose(at);
  H5Sclose(sp);
  PTDP_CHECK_IO(ok, "writing attribute %s", name);
  return 0;
}

/* /pipeline/events as the trainer writes it (ptdp-runfile(5)). */
typedef struct {
  double start, end, wait;
  int kind, microbatch, chunk;
} sim_event;

static int datasetn(hid_t f, const char *path, hid_t type, int rank, const hsize_t *dims, const void *data)
{
  hid_t sp = H5Screate_simple(rank, dims, NULL), lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t ds = H5Dcreate2(f, path, type, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  int ok = ds >= 0 && H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
  if (ds >= 0) H5Dclose(ds);
  H5Pclose(lcpl);
  H5Sclose(sp);
  PTDP_CHECK_IO(ok, "writing dataset %s", path);
  return 0;
}

/* A one-dimensional dataset of n elements. */
static int dataset(hid_t f, const char *path, hid_t type, hsize_t n, const void *data)
{
  return datasetn(f, path, type, 1, &n, data);
}

static int write_config(hid_t f, const ptdp_model_keys *a, ptdp_options *o, const ptdp_sim_result *r)
{
  hid_t g = H5Gcreate2(f, "/config", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CHECK_IO(g >= 0, "creating /config");
  int err = 0;
  for (int i = 0; !err && i < o->count; i++) {
    char v[PTDP_OPT_STRLEN];
    ptdp_options_value_text(o, i, v, sizeof v);
    err = attr_str(g, o->table[i].name, v);
  }
  const long long ints[][2] = {{r->world, 0}, {r->t, 0}, {r->p, 0}, {r->d, 0}, {r->v, 0}, {r->m, 0},
                               {a->num_layers, 0}, {a->hidden_size, 0}, {a->seq_length, 0}, {a->micro_batch_size, 0},
                               {r->gbs, 0}, {a->vocab_size, 0}, {r->vocab_padded, 0}, {a->sequence_parallel, 0},
                               {a->use_distributed_optimizer, 0}};
  static const char *names[] = {"world_size", "tensor_model_parallel_size", "pipeline_model_parallel_size",
                                "data_parallel_size", "virtual_pipeline_chunks", "micro_batches", "num_layers",
                                "hidden_size", "seq_length", "micro_batch_size", "global_batch_size", "vocab_size",
                                "padded_vocab_size", "sequence_parallel", "use_distributed_optimizer"};
  for (int i = 0; !err && i < (int)(sizeof names / sizeof names[0]); i++)
    err = attr_num(g, names[i], H5T_NATIVE_LLONG, &ints[i][0]);
  /* the group's attributes are unique: a ptdp-train key of the same name was written above as text */
  if (!err) err = attr_num(g, "model_flops_per_iteration", H5T_NATIVE_DOUBLE, &r->model_flops);
  H5Gclose(g);
  return err;
}

static int write_metrics(hid_t f, const ptdp_model_keys *a, const ptdp_sim_result *r, double peak)
{
  const long long one = 1, samples = r->gbs, zero = 0, none = -1;
  const double nan = NAN, ms = 1e3 * r->iteration, tok = (double)r->gbs * a->seq_length / r->iteration;
  const double mfu = peak > 0 ? r->mfu : NAN;
  PTDP_CALL(dataset(f, "/metrics/iteration", H5T_NATIVE_LLONG, 1, &one));
  PTDP_CALL(dataset(f, "/metrics/consumed_samples", H5T_NATIVE_LLONG, 1, &samples));
  PTDP_CALL(dataset(f, "/metrics/skipped_iterations", H5T_NATIVE_LLONG, 1, &zero));
  PTDP_CALL(dataset(f, "/metrics/nan_iterations", H5T_NATIVE_LLONG, 1, &none));
  PTDP_CALL(dataset(f, "/metrics/lm_loss", H5T_NATIVE_DOUBLE, 1, &nan));
  PTDP_CALL(dataset(f, "/metrics/learning_rate", H5T_NATIVE_DOUBLE, 1, &nan));
  PTDP_CALL(dataset(f, "/metrics/grad_norm", H5T_NATIVE_DOUBLE, 1, &nan));
  PTDP_CALL(dataset(f, "/metrics/loss_scale", H5T_NATIVE_DOUBLE, 1, &nan));
  PTDP_CALL(dataset(f, "/metrics/ms_per_iteration", H5T_NATIVE_DOUBLE, 1, &ms));
  PTDP_CALL(dataset(f, "/metrics/tokens_per_second", H5T_NATIVE_DOUBLE, 1, &tok));
  PTDP_CALL(dataset(f, "/metrics/tflops_per_rank", H5T_NATIVE_DOUBLE, 1, &r->tflops_per_gpu));
  PTDP_CALL(dataset(f, "/metrics/mfu", H5T_NATIVE_DOUBLE, 1, &mfu));
  return 0;
}

/* Rank w's pipeline stage (grid order tp-dp-pp: w / (t d); tp-pp-dp: (w / t) % p). */
static int stage_of(const ptdp_model_keys *a, const ptdp_sim_result *r, int w)
{
  return a->parallel_order == PTDP_ORDER_TP_DP_PP ? w / (r->t * r->d) : (w / r->t) % r->p;
}

/* Per rank: the stage of world rank w (grid order tp-dp-pp: w / (t d); tp-pp-dp: (w / t) % p)
 * holds what the plan gives its stage (first, middle or last sampled). */
static int write_memory(hid_t f, const ptdp_model_keys *a, const ptdp_sim_result *r)
{
  static const char *names[] = {"peak_activation_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes",
                                "allocated_bytes"};
  long long *v = malloc(sizeof *v * (size_t)r->world);
  if (!v) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  int err = 0;
  for (int k = 0; !err && k < 5; k++) {
    for (int w = 0; w < r->world; w++) {
      const int s = stage_of(a, r, w);
      const int pick = s == 0 ? 0 : s == r->p - 1 ? 2 : 1;
      v[w] = llround(r->stage_mem[pick][k]);
    }
    char path[64];
    snprintf(path, sizeof path, "/memory/%s", names[k]);
    err = dataset(f, path, H5T_NATIVE_LLONG, (hsize_t)r->world, v);
  }
  free(v);
  return err;
}

/* Every rank's replayed items: the ranks of a stage run the same list at the same times. */
static int write_events(hid_t f, const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                        const ptdp_sim_result *r)
{
  ptdp_replay rp = {0};
  PTDP_CALL(ptdp_sim_pipeline_replay(a, hw, o, r, &rp));
  const int n = rp.n, W = r->world;
  sim_event *ev = malloc(sizeof *ev * (size_t)W * n);
  double *bub = malloc(sizeof *bub * (size_t)W);
  hid_t et = H5Tcreate(H5T_COMPOUND, sizeof(sim_event));
  H5Tinsert(et, "start", HOFFSET(sim_event, start), H5T_NATIVE_DOUBLE);
  H5Tinsert(et, "end", HOFFSET(sim_event, end), H5T_NATIVE_DOUBLE);
  H5Tinsert(et, "wait", HOFFSET(sim_event, wait), H5T_NATIVE_DOUBLE);
  H5Tinsert(et, "kind", HOFFSET(sim_event, kind), H5T_NATIVE_INT);
  H5Tinsert(et, "microbatch", HOFFSET(sim_event, microbatch), H5T_NATIVE_INT);
  H5Tinsert(et, "chunk", HOFFSET(sim_event, chunk), H5T_NATIVE_INT);
  int err = ev && bub ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  for (int w = 0; !err && w < W; w++) {
    const int s = stage_of(a, r, w);
    double prev = 0;
    for (int i = 0; i < n; i++) {
      const size_t k = (size_t)s * n + i;
      const ptdp_work *it = &rp.sched[s].items[i];
      ev[(size_t)w * n + i] = (sim_event){.start = prev, .end = rp.end[k], .wait = rp.start[k] - prev,
                                          .kind = it->kind, .microbatch = it->microbatch, .chunk = it->chunk};
      prev = rp.end[k];
    }
    bub[w] = rp.idle[s];
  }
  const long long one = 1;
  const hsize_t d3[3] = {1, (hsize_t)W, (hsize_t)n}, d2[2] = {1, (hsize_t)W};
  if (!err) err = dataset(f, "/pipeline/iteration", H5T_NATIVE_LLONG, 1, &one);
  if (!err) err = datasetn(f, "/pipeline/events", et, 3, d3, ev);
  if (!err) err = datasetn(f, "/pipeline/bubble_measured", H5T_NATIVE_DOUBLE, 2, d2, bub);
  H5Tclose(et);
  free(ev);
  free(bub);
  ptdp_replay_destroy(&rp);
  return err;
}

/* The range from the provenance bands and each value's two predictions. */
static int write_range(hid_t f, const ptdp_sim_result *r)
{
  const ptdp_sim_range *rg = &r->range;
  const double c[3] = {rg->lo, r->iteration, rg->hi}, w[2] = {rg->worst_lo, rg->worst_hi};
  char keys[PTDP_SIM_HW_KEYS][48];
  double band[PTDP_SIM_HW_KEYS], ends[PTDP_SIM_HW_KEYS][2];
  for (int i = 0; i < rg->n; i++) {
    snprintf(keys[i], sizeof keys[i], "%s", ptdp_sim_hw_key(rg->v[i].key));
    band[i] = rg->v[i].band;
    ends[i][0] = rg->v[i].at_lo;
    ends[i][1] = rg->v[i].at_hi;
  }
  PTDP_CALL(dataset(f, "/sim/range/iteration_seconds", H5T_NATIVE_DOUBLE, 3, c));
  PTDP_CALL(dataset(f, "/sim/range/worst_case_seconds", H5T_NATIVE_DOUBLE, 2, w));
  if (rg->n == 0) return 0;
  hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, sizeof keys[0]);
  int err = dataset(f, "/sim/range/keys", st, (hsize_t)rg->n, keys);
  H5Tclose(st);
  const hsize_t d2[2] = {(hsize_t)rg->n, 2};
  if (!err) err = dataset(f, "/sim/range/band", H5T_NATIVE_DOUBLE, (hsize_t)rg->n, band);
  if (!err) err = datasetn(f, "/sim/range/seconds_at_band_ends", H5T_NATIVE_DOUBLE, 2, d2, ends);
  return err;
}

int ptdp_sim_write_runfile(const char *path, const ptdp_model_keys *a, ptdp_options *o, const ptdp_sim_hw *hw,
                           const ptdp_sim_options *so, const ptdp_sim_result *r)
{
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CHECK_IO(f >= 0, "cannot create the run file %s", path);
  const long long version = PTDP_RUNFILE_FORMAT;
  const double peak = a->fp16 || a->bf16 ? hw->peak_flops_16 : hw->peak_flops_32;
  int err = attr_str(f, "format", "ptdp-run");
  if (!err) err = attr_num(f, "format_version", H5T_NATIVE_LLONG, &version);
  if (!err) err = attr_str(f, "source", "ptdp-sim");
  if (!err) err = attr_str(f, "hardware", hw->name);
  if (!err) err = write_config(f, a, o, r);
  if (!err) {
    hid_t g = H5Gopen2(f, "/config", H5P_DEFAULT);
    err = attr_num(g, "peak_flops_per_rank", H5T_NATIVE_DOUBLE, &peak);
    H5Gclose(g);
  }
  if (!err) err = write_metrics(f, a, r, peak);
  if (!err) err = write_memory(f, a, r);
  if (!err) err = write_events(f, a, hw, so, r);
  if (!err) err = dataset(f, "/pipeline/bubble_replayed", H5T_NATIVE_DOUBLE, 1, &r->bubble);
  if (!err) {
    hid_t g = H5Gopen2(f, "/pipeline", H5P_DEFAULT);
    const double formula = (double)(r->p - 1) / ((double)r->v * r->m);
    err = attr_num(g, "bubble_formula", H5T_NATIVE_DOUBLE, &formula);
    H5Gclose(g);
  }
  if (!err) {
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 32);
    char names[PTDP_SIM_COMPONENTS][32];
    for (int c = 0; c < PTDP_SIM_COMPONENTS; c++) snprintf(names[c], 32, "%s", ptdp_sim_component_name(c));
    err = dataset(f, "/sim/components/names", st, PTDP_SIM_COMPONENTS, names);
    H5Tclose(st);
  }
  if (!err) err = dataset(f, "/sim/components/exposed_seconds", H5T_NATIVE_DOUBLE, PTDP_SIM_COMPONENTS, r->comp);
  if (!err) err = dataset(f, "/sim/components/hidden_seconds", H5T_NATIVE_DOUBLE, PTDP_SIM_COMPONENTS, r->hidden);
  if (!err && r->ranged) err = write_range(f, r);
  H5Fclose(f);
  return err;
}
