/* A run file (ptdp-runfile(5)) read for ptdp-sim --calibrate: the run's keys from /config's
 * string attributes, its world size and hosts, and per iteration the time and the timers the fit
 * uses, each the slowest rank's, the median over the log intervals after the first (the first
 * holds the warm-up: the first iteration's allocations and page faults). */
#include "ptdp/calibrate.h"

#include "ptdp/error.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[first..n) (v reordered); NaN when empty. */
static double median_from(double *v, int n, int first)
{
  if (n - first <= 0) return NAN;
  qsort(v + first, (size_t)(n - first), sizeof *v, cmp_double);
  const int k = n - first;
  return k % 2 ? v[first + k / 2] : 0.5 * (v[first + k / 2 - 1] + v[first + k / 2]);
}

/* Dataset path's elements as doubles (*n of them, malloc'd); NULL with *n 0 when absent. */
static double *read_doubles(hid_t f, const char *path, hsize_t dims[3], int *rank)
{
  *rank = 0;
  if (H5Lexists(f, path, H5P_DEFAULT) <= 0) return NULL;
  hid_t ds = H5Dopen2(f, path, H5P_DEFAULT);
  if (ds < 0) return NULL;
  hid_t sp = H5Dget_space(ds);
  *rank = H5Sget_simple_extent_ndims(sp);
  double *v = NULL;
  if (*rank >= 1 && *rank <= 3) {
    H5Sget_simple_extent_dims(sp, dims, NULL);
    hsize_t total = 1;
    for (int i = 0; i < *rank; i++) total *= dims[i];
    v = malloc(sizeof *v * (total ? total : 1));
    if (v && H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
      free(v);
      v = NULL;
    }
  }
  H5Sclose(sp);
  H5Dclose(ds);
  return v;
}

/* A dataset of fixed-length strings [n] into one buffer of n x *len bytes (malloc'd). */
static char *read_strings(hid_t f, const char *path, hsize_t *n, size_t *len)
{
  *n = 0;
  if (H5Lexists(f, path, H5P_DEFAULT) <= 0) return NULL;
  hid_t ds = H5Dopen2(f, path, H5P_DEFAULT);
  if (ds < 0) return NULL;
  hid_t sp = H5Dget_space(ds), ft = H5Dget_type(ds);
  char *buf = NULL;
  if (H5Sget_simple_extent_ndims(sp) == 1 && H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) <= 0) {
    H5Sget_simple_extent_dims(sp, n, NULL);
    *len = H5Tget_size(ft);
    buf = calloc((size_t)*n + 1, *len + 1);
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, *len);
    H5Tset_strpad(mt, H5T_STR_NULLPAD);
    if (buf && H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
      free(buf);
      buf = NULL;
    }
    H5Tclose(mt);
  }
  H5Tclose(ft);
  H5Sclose(sp);
  H5Dclose(ds);
  return buf;
}

static int attr_string(hid_t g, const char *name, char *out, size_t n)
{
  out[0] = '\0';
  if (H5Aexists(g, name) <= 0) return 0;
  hid_t a = H5Aopen(g, name, H5P_DEFAULT), ft = H5Aget_type(a);
  int ok = 0;
  if (H5Tget_class(ft) == H5T_STRING && H5Tis_variable_str(ft) <= 0 && H5Tget_size(ft) < n) {
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_size(mt, H5Tget_size(ft));
    H5Tset_strpad(mt, H5T_STR_NULLPAD);
    memset(out, 0, n);
    ok = H5Aread(a, mt, out) >= 0;
    H5Tclose(mt);
  }
  H5Tclose(ft);
  H5Aclose(a);
  return ok;
}

static long long attr_int(hid_t g, const char *name)
{
  long long v = -1;
  if (H5Aexists(g, name) <= 0) return -1;
  hid_t a = H5Aopen(g, name, H5P_DEFAULT);
  if (H5Aread(a, H5T_NATIVE_LLONG, &v) < 0) v = -1;
  H5Aclose(a);
  return v;
}

/* Every ptdp-train key that /config holds, into r->args. */
static int read_keys(hid_t cfg, const char *path, ptdp_sim_cal_run *r)
{
  ptdp_options o;
  PTDP_CALL(ptdp_args_init(&r->args, &o));
  int err = 0;
  char v[PTDP_OPT_STRLEN], where[600];
  snprintf(where, sizeof where, "%s:/config", path);
  for (int i = 0; !err && i < o.count; i++)
    if (attr_string(cfg, o.table[i].name, v, sizeof v)) err = ptdp_options_set(&o, o.table[i].name, v, PTDP_SRC_DECK, where);
  ptdp_options_free(&o);
  return err;
}

/* Timer name's column in names (T of them, len bytes each); -1 if absent. */
static int timer_index(const char *names, hsize_t T, size_t len, const char *name)
{
  for (hsize_t t = 0; t < T; t++)
    if (!strncmp(names + t * len, name, len) && strlen(name) <= len) return (int)t;
  return -1;
}

/* Quantity of timer column t: per interval the max over ranks, then the median after the first. */
static double timer_median(const double *ms, const hsize_t dims[3], int t)
{
  const int N = (int)dims[0], W = (int)dims[1], T = (int)dims[2];
  if (t < 0 || N < 1) return NAN;
  double *v = malloc(sizeof *v * N);
  if (!v) return NAN;
  for (int i = 0; i < N; i++) {
    double m = -INFINITY;
    for (int w = 0; w < W; w++) {
      const double x = ms[((size_t)i * W + w) * T + t];
      if (x > m) m = x;
    }
    v[i] = m * 1e-3;
  }
  const double med = median_from(v, N, N > 1 ? 1 : 0);
  free(v);
  return med;
}

int ptdp_sim_cal_read_run(const char *path, ptdp_sim_cal_run *r)
{
  memset(r, 0, sizeof *r);
  snprintf(r->path, sizeof r->path, "%s", path);
  for (int q = 0; q < PTDP_SIM_CAL_QUANTITIES; q++) r->measured[q] = NAN;
  H5E_auto2_t fn;
  void *data;
  H5Eget_auto2(H5E_DEFAULT, &fn, &data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  H5Eset_auto2(H5E_DEFAULT, fn, data);
  PTDP_CHECK_IO(f >= 0, "--calibrate: cannot open the run file %s (an HDF5 file of ptdp-train: ptdp-runfile(5))",
                path);
  int err = 0;
  hid_t cfg = H5Lexists(f, "/config", H5P_DEFAULT) > 0 ? H5Gopen2(f, "/config", H5P_DEFAULT) : -1;
  if (cfg < 0) err = PTDP_FAIL(PTDP_ERR_INPUT, "%s: no /config group: not a ptdp run file", path);
  if (!err) err = read_keys(cfg, path, r);
  if (!err) {
    r->world = attr_int(cfg, "world_size");
    const long long t = attr_int(cfg, "tensor_model_parallel_size"), p = attr_int(cfg, "pipeline_model_parallel_size"),
                    d = attr_int(cfg, "data_parallel_size"), v = attr_int(cfg, "virtual_pipeline_chunks");
    snprintf(r->label, sizeof r->label, "t%lld p%lld d%lld v%lld%s%s%s", t, p, d, v,
             r->args.model.sequence_parallel && t > 1 ? " sp" : "",
             r->args.model.recompute_granularity == PTDP_RECOMPUTE_FULL        ? " full-recompute"
             : r->args.model.recompute_granularity == PTDP_RECOMPUTE_SELECTIVE ? " selective-recompute"
                                                                               : "",
             r->args.model.use_distributed_optimizer ? " distopt" : "");
    if (r->world <= 0) err = PTDP_FAIL(PTDP_ERR_INPUT, "%s: /config has no world_size", path);
  }
  if (cfg >= 0) H5Gclose(cfg);
  hsize_t nh = 0;
  size_t hl = 0;
  char *hosts = err ? NULL : read_strings(f, "/config/hosts", &nh, &hl);
  for (hsize_t w = 0; hosts && w < nh; w++) { /* distinct, in rank order */
    char h[128];
    snprintf(h, sizeof h, "%.*s", (int)(hl < 127 ? hl : 127), hosts + w * hl);
    int seen = 0;
    for (hsize_t q = 0; q < w && !seen; q++) seen = !strncmp(hosts + q * hl, hosts + w * hl, hl);
    if (!seen && h[0] && strlen(r->hosts) + strlen(h) + 2 < sizeof r->hosts)
      snprintf(r->hosts + strlen(r->hosts), sizeof r->hosts - strlen(r->hosts), "%s%s", r->hosts[0] ? "," : "", h);
  }
  free(hosts);
  hsize_t dm[3] = {0}, dt[3] = {0}, nt = 0;
  int rm = 0, rt = 0;
  size_t tl = 0;
  double *ms = err ? NULL : read_doubles(f, "/metrics/ms_per_iteration", dm, &rm);
  double *tm = err ? NULL : read_doubles(f, "/timers/ms", dt, &rt);
  char *names = err ? NULL : read_strings(f, "/timers/names", &nt, &tl);
  if (!err && (!ms || rm != 1 || dm[0] < 1))
    err = PTDP_FAIL(PTDP_ERR_INPUT, "%s: no /metrics/ms_per_iteration rows: the run logged no interval (train more "
                                    "iterations than log-interval)", path);
  if (!err) {
    for (hsize_t i = 0; i < dm[0]; i++) ms[i] *= 1e-3;
    r->measured[PTDP_SIM_CAL_ITERATION] = median_from(ms, (int)dm[0], dm[0] > 1 ? 1 : 0);
  }
  if (!err && tm && names && rt == 3 && dt[2] == nt) {
    static const char *timer[PTDP_SIM_CAL_QUANTITIES] = {NULL, "forward", "backward", "optimizer", "tp-comm"};
    for (int q = 1; q < PTDP_SIM_CAL_QUANTITIES; q++)
      r->measured[q] = timer_median(tm, dt, timer_index(names, nt, tl, timer[q]));
  }
  free(ms);
  free(tm);
  free(names);
  H5Fclose(f);
  return err;
}
