/* ptdp-sweep's outputs: the ranked table with a reason per row, every prediction in HDF5, and
 * the best layouts as a job array's parameter table (ptdp/sweep.h). */
#include "ptdp/sweep.h"

#include "ptdp/error.h"

#include <hdf5.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void ptdp_sweep_name(const ptdp_sweep_layout *L, char *buf, size_t n)
{
  char rec[32] = "";
  if (L->recompute == PTDP_RECOMPUTE_SELECTIVE) snprintf(rec, sizeof rec, " sel");
  if (L->recompute == PTDP_RECOMPUTE_FULL) snprintf(rec, sizeof rec, " full%d", L->recompute_layers);
  snprintf(buf, n, "t%d p%d d%d b%d v%d%s%s%s", L->t, L->p, L->d, L->b, L->v, L->sp ? " sp" : "", rec,
           L->distopt ? " distopt" : "");
}

/* What a layout spends beyond computing its model FLOPs once, by cause (s per iteration). */
enum { COST_BUBBLE, COST_TP, COST_PP, COST_DP, COST_RECOMPUTE, COST_COMPUTE, COST_OPTIMIZER, NCOST };
static void costs(const ptdp_sweep_layout *L, double *c)
{
  c[COST_BUBBLE] = L->pipeline_idle;
  c[COST_TP] = L->comp[PTDP_SIM_TP];
  c[COST_PP] = L->comp[PTDP_SIM_PP];
  c[COST_DP] = L->comp[PTDP_SIM_DP] + L->comp[PTDP_SIM_EMBEDDING_AR];
  c[COST_RECOMPUTE] = L->recompute_time;
  /* the components hold the recomputed forward too: compute is what is left without it */
  c[COST_COMPUTE] = L->comp[PTDP_SIM_GEMM] + L->comp[PTDP_SIM_ATTENTION] + L->comp[PTDP_SIM_MEMBOUND] - L->recompute_time;
  c[COST_OPTIMIZER] = L->comp[PTDP_SIM_OPTIMIZER];
}

static int cost_detail(const ptdp_sweep_layout *L, const ptdp_sim_hw *hw, int k, char *buf, size_t n)
{
  switch (k) {
  case COST_BUBBLE: return snprintf(buf, n, "pipeline bubble %.3f (p %d, m %d, v %d)", L->bubble, L->p, L->m, L->v);
  case COST_TP:
    return L->tp_crosses_nodes ? snprintf(buf, n, "TP across nodes (t %d > %g GPUs per node)", L->t, hw->gpus_per_node)
                               : snprintf(buf, n, "TP communication (t %d)", L->t);
  case COST_PP: return snprintf(buf, n, "PP communication (p %d, b %d)", L->p, L->b);
  case COST_DP: return snprintf(buf, n, "DP communication (d %d)", L->d);
  case COST_RECOMPUTE: return snprintf(buf, n, "recomputation");
  case COST_COMPUTE: return snprintf(buf, n, "compute on the busiest stage (b %d, t %d, p %d)", L->b, L->t, L->p);
  default: return snprintf(buf, n, "optimizer (d %d%s)", L->d, L->distopt ? ", distributed" : "");
  }
}

void ptdp_sweep_reason(const ptdp_sweep_result *res, const ptdp_sim_hw *hw, int i, char *buf, size_t n)
{
  const ptdp_sweep_layout *L = &res->layouts[i], *B = &res->layouts[0];
  double c[NCOST], cb[NCOST];
  costs(L, c);
  costs(B, cb);
  int k = 0, len;
  if (i == 0) { /* the best: its largest overhead */
    for (int j = 1; j < COST_COMPUTE; j++) k = c[j] > c[k] ? j : k;
    len = snprintf(buf, n, "best; largest overhead %.3g s: ", c[k]);
  } else {
    for (int j = 1; j < NCOST; j++) k = c[j] - cb[j] > c[k] - cb[k] ? j : k;
    len = snprintf(buf, n, "+%.3g s %s: ", L->iteration - B->iteration, c[k] - cb[k] >= 0 ? "mostly" : "");
  }
  if (len < 0 || (size_t)len >= n) return;
  len += cost_detail(L, hw, k, buf + len, n - (size_t)len);
  if (i > 0 && (size_t)len < n) len += snprintf(buf + len, n - (size_t)len, " %+.3g s", c[k] - cb[k]);
  if (L->recompute != PTDP_RECOMPUTE_NONE && (size_t)len < n)
    snprintf(buf + len, n - (size_t)len, "; memory: needs %s recomputation to fit", L->recompute == PTDP_RECOMPUTE_FULL ? "full" : "selective");
}

void ptdp_sweep_print(const ptdp_sweep_result *res, const ptdp_sim_hw *hw, int k, FILE *out)
{
  if (k > res->n) k = res->n;
  fprintf(out, "%4s  %-34s %10s %-22s %1s %9s %6s %7s %8s  %s\n", "rank", "layout", "iter (s)", "range (s)", "", "TFLOP/s",
          "MFU %", "bubble", "mem (GB)", "why here");
  char pairs[512] = "";
  int inseparable = 0, len = 0;
  for (int i = 0; i < k; i++) {
    const ptdp_sweep_layout *L = &res->layouts[i];
    char name[96], why[256], range[32] = "-";
    ptdp_sweep_name(L, name, sizeof name);
    ptdp_sweep_reason(res, hw, i, why, sizeof why);
    if (i < res->ranged) snprintf(range, sizeof range, "%.4g .. %.4g", L->range_lo, L->range_hi);
    const int mark = ptdp_sweep_inseparable(res, i);
    fprintf(out, "%4d  %-34s %10.4g %-22s %c %9.4g %6.1f %7.3f %8.4g  %s\n", i + 1, name, L->iteration, range,
            mark ? '~' : ' ', L->tflops_per_gpu, 100 * L->mfu, L->bubble, L->memory / 1e9, why);
    if (mark && len >= 0 && (size_t)len < sizeof pairs)
      len += snprintf(pairs + len, sizeof pairs - (size_t)len, "%s%d-%d", inseparable ? ", " : "", i + 1, i + 2);
    inseparable += mark;
  }
  const int compared = k < res->ranged ? k : res->ranged - 1; /* pairs (i, i + 1) with both ranged */
  if (compared <= 0) return;
  if (inseparable)
    fprintf(out, "ranking: the provenance bands cannot separate %d of the %d neighbouring pairs (~: the band of the "
                 "next row's time minus the row's, one value at a time, root sum of squares, reaches 0): %s\n",
            inseparable, compared, pairs);
  else
    fprintf(out, "ranking: the provenance bands separate every neighbouring pair of the %d rows (each next row's time "
                 "minus the row's stays above 0 across its band)\n",
            k);
}

static int column(hid_t g, const char *name, hid_t type, hsize_t n, const void *data)
{
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t ds = H5Dcreate2(g, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int ok = ds >= 0 && (n == 0 || H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  PTDP_CHECK_IO(ok, "writing /sweep/%s", name);
  return 0;
}

/* One column of ints or doubles gathered from the layouts by a field's offset. */
static int int_column(hid_t g, const char *name, const ptdp_sweep_result *res, size_t off)
{
  long long *v = malloc(((size_t)res->n + 1) * sizeof *v);
  if (!v) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  for (int i = 0; i < res->n; i++) v[i] = *(const int *)((const char *)&res->layouts[i] + off);
  int err = column(g, name, H5T_NATIVE_LLONG, (hsize_t)res->n, v);
  free(v);
  return err;
}
static int real_column(hid_t g, const char *name, const ptdp_sweep_result *res, size_t off)
{
  double *v = malloc(((size_t)res->n + 1) * sizeof *v);
  if (!v) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  for (int i = 0; i < res->n; i++) v[i] = *(const double *)((const char *)&res->layouts[i] + off);
  int err = column(g, name, H5T_NATIVE_DOUBLE, (hsize_t)res->n, v);
  free(v);
  return err;
}

int ptdp_sweep_write_h5(const char *path, const ptdp_sweep_result *res, const ptdp_sim_hw *hw, long long gbs)
{
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  PTDP_CHECK_IO(f >= 0, "cannot create %s", path);
  hid_t g = H5Gcreate2(f, "/sweep", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int err = g < 0;
  static const struct { const char *name; size_t off; } ints[] = {
      {"tensor_model_parallel_size", offsetof(ptdp_sweep_layout, t)}, {"pipeline_model_parallel_size", offsetof(ptdp_sweep_layout, p)},
      {"data_parallel_size", offsetof(ptdp_sweep_layout, d)}, {"micro_batch_size", offsetof(ptdp_sweep_layout, b)},
      {"virtual_pipeline_chunks", offsetof(ptdp_sweep_layout, v)}, {"micro_batches", offsetof(ptdp_sweep_layout, m)},
      {"sequence_parallel", offsetof(ptdp_sweep_layout, sp)}, {"use_distributed_optimizer", offsetof(ptdp_sweep_layout, distopt)},
      {"recompute_granularity", offsetof(ptdp_sweep_layout, recompute)}, {"recompute_num_layers", offsetof(ptdp_sweep_layout, recompute_layers)},
      {"tp_crosses_nodes", offsetof(ptdp_sweep_layout, tp_crosses_nodes)}};
  static const struct { const char *name; size_t off; } reals[] = {
      {"iteration_seconds", offsetof(ptdp_sweep_layout, iteration)}, {"tflops_per_gpu", offsetof(ptdp_sweep_layout, tflops_per_gpu)},
      {"mfu", offsetof(ptdp_sweep_layout, mfu)}, {"bubble", offsetof(ptdp_sweep_layout, bubble)},
      {"memory_bytes", offsetof(ptdp_sweep_layout, memory)}, {"pipeline_idle_seconds", offsetof(ptdp_sweep_layout, pipeline_idle)},
      {"recompute_seconds", offsetof(ptdp_sweep_layout, recompute_time)},
      {"tp_seconds", offsetof(ptdp_sweep_layout, comp) + PTDP_SIM_TP * sizeof(double)},
      {"pp_seconds", offsetof(ptdp_sweep_layout, comp) + PTDP_SIM_PP * sizeof(double)},
      {"dp_seconds", offsetof(ptdp_sweep_layout, comp) + PTDP_SIM_DP * sizeof(double)},
      {"range_low_seconds", offsetof(ptdp_sweep_layout, range_lo)},
      {"range_high_seconds", offsetof(ptdp_sweep_layout, range_hi)}};
  for (size_t i = 0; !err && i < sizeof ints / sizeof ints[0]; i++) err = int_column(g, ints[i].name, res, ints[i].off);
  for (size_t i = 0; !err && i < sizeof reals / sizeof reals[0]; i++) err = real_column(g, reals[i].name, res, reals[i].off);
  if (!err) { /* the layout as text, and the sweep's own numbers */
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 64);
    char *names = calloc((size_t)res->n + 1, 64);
    err = !names;
    for (int i = 0; !err && i < res->n; i++) ptdp_sweep_name(&res->layouts[i], names + 64 * i, 64);
    if (!err) err = column(g, "layout", st, (hsize_t)res->n, names);
    free(names);
    hid_t sp = H5Screate(H5S_SCALAR);
    const long long world = res->n ? (long long)res->layouts[0].t * res->layouts[0].p * res->layouts[0].d : 0;
    const struct { const char *name; long long v; } attrs[] = {{"world_size", world}, {"global_batch_size", gbs},
                                                              {"candidates", res->candidates}, {"simulated", res->simulated}};
    for (size_t i = 0; !err && i < sizeof attrs / sizeof attrs[0]; i++) {
      hid_t a = H5Acreate2(g, attrs[i].name, H5T_NATIVE_LLONG, sp, H5P_DEFAULT, H5P_DEFAULT);
      err = a < 0 || H5Awrite(a, H5T_NATIVE_LLONG, &attrs[i].v) < 0;
      if (a >= 0) H5Aclose(a);
    }
    H5Tset_size(st, sizeof hw->name);
    hid_t a = err ? -1 : H5Acreate2(g, "hardware", st, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
      err = H5Awrite(a, st, hw->name) < 0;
      H5Aclose(a);
    }
    H5Sclose(sp);
    H5Tclose(st);
  }
  if (g >= 0) H5Gclose(g);
  H5Fclose(f);
  PTDP_CHECK_IO(!err, "writing %s", path);
  return 0;
}

int ptdp_sweep_write_tsv(const char *path, const ptdp_sweep_result *res, int k, long long gbs)
{
  FILE *f = fopen(path, "w");
  PTDP_CHECK_IO(f, "cannot create %s", path);
  if (k > res->n) k = res->n;
  fprintf(f, "task\tpredicted_ms_per_iteration\ttensor-model-parallel-size\tpipeline-model-parallel-size\t"
             "micro-batch-size\tglobal-batch-size\tnum-layers-per-virtual-pipeline-stage\tsequence-parallel\t"
             "use-distributed-optimizer\trecompute-granularity\trecompute-method\trecompute-num-layers\n");
  static const char *gran[] = {"none", "full", "selective"};
  for (int i = 0; i < k; i++) {
    const ptdp_sweep_layout *L = &res->layouts[i];
    char name[96];
    ptdp_sweep_name(L, name, sizeof name);
    for (char *c = name; *c; c++) *c = *c == ' ' ? '-' : *c;
    fprintf(f, "%d-%s\t%.6g\t%d\t%d\t%d\t%lld\t%d\t%s\t%s\t%s\tblock\t%d\n", i, name, 1e3 * L->iteration, L->t, L->p, L->b,
            gbs, L->v > 1 ? L->v_layers : 0, L->sp ? "true" : "false", L->distopt ? "true" : "false", gran[L->recompute],
            L->recompute == PTDP_RECOMPUTE_FULL ? L->recompute_layers : 1);
  }
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  PTDP_CHECK_IO(!bad, "writing %s", path);
  return 0;
}
