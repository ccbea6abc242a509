/* ptdp-sim --calibrate's fit (ptdp/calibrate.h): groups of hardware values scaled by one factor
 * each, fitted by Gauss-Newton to what short runs measured against ptdp_sim_run's prediction of
 * each run's own layout. */
#include "ptdp/calibrate.h"

#include "ptdp/error.h"

#include "sim_hw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the timers can separate (ptdp-sim(1), CALIBRATION): the GEMMs (forward and backward
 * differ in their GEMM share: the backward has two per forward one); a GPU's memory-bound
 * operators, or each CPU operator's time per element (scaled together: one timer cannot tell
 * LayerNorm from GeLU); the flash attention kernel; the optimizer (its own timer); collectives
 * within a node (tp-comm, and the d > 1 runs' iteration); between nodes (runs that span nodes). */
static const ptdp_sim_cal_group groups[PTDP_SIM_CAL_GROUPS] = {
  {"GEMM rate", {"gemm-efficiency", NULL}, 1},
  {"memory-bound operators", {"memory-bandwidth-gbs", NULL}, 1},
  {"flash attention", {"flash-attention-efficiency-forward", "flash-attention-efficiency-backward", NULL}, 1},
  {"CPU operators",
   {"cpu-elementwise-ns", "cpu-dropout-ns", "cpu-layernorm-forward-ns", "cpu-layernorm-backward-ns",
    "cpu-gelu-forward-ns", "cpu-gelu-backward-ns", "cpu-bias-grad-ns", "cpu-softmax-forward-ns",
    "cpu-softmax-backward-ns", "cpu-cross-entropy-forward-ns", "cpu-cross-entropy-grad-ns", NULL},
   0},
  {"CPU optimizer", {"cpu-optimizer-ns", NULL}, 0},
  {"collectives within a node",
   {"intra-node-bandwidth-gbs", "intra-node-allgather-bandwidth-gbs", "intra-node-reduce-scatter-bandwidth-gbs", NULL},
   1},
  {"collectives between nodes", {"inter-node-bandwidth-gbs", NULL}, 1},
};

const ptdp_sim_cal_group *ptdp_sim_cal_group_of(int g) { return g >= 0 && g < PTDP_SIM_CAL_GROUPS ? &groups[g] : NULL; }

void ptdp_sim_cal_apply(ptdp_sim_hw *hw, int g, double x)
{
  for (int k = 0; groups[g].keys[k]; k++) {
    double *v = ptdp_sim_hw_field(hw, groups[g].keys[k]);
    if (v) *v = groups[g].rate ? *v / x : *v * x;
  }
}

int ptdp_sim_cal_options(const ptdp_sim_cal_run *r, const ptdp_options *opt, const ptdp_sim_options *o,
                         const ptdp_sim_hw *hw, ptdp_sim_options *out)
{
  *out = *o;
  out->world_size = r->world;
  if (!(opt && ptdp_options_given(opt, "fusion")) && ptdp_sim_hw_is_cpu(hw)) out->fusion = PTDP_SIM_FUSION_CPU;
  out->out[0] = '\0';
  out->explain = 0;
  return 0;
}

double ptdp_sim_cal_predict(const ptdp_sim_result *res, const ptdp_sim_cal_run *r, ptdp_sim_cal_quantity q)
{
  switch (q) {
  case PTDP_SIM_CAL_ITERATION: return res->iteration;
  /* one stage, one chunk: the m items of the only stage (a pipeline's ranks differ: not used) */
  case PTDP_SIM_CAL_FORWARD: return res->p == 1 && res->v == 1 ? res->m * res->stage_fwd[0] : NAN;
  case PTDP_SIM_CAL_BACKWARD: return res->p == 1 && res->v == 1 ? res->m * res->stage_bwd[0] : NAN;
  case PTDP_SIM_CAL_OPTIMIZER: return res->comp[PTDP_SIM_OPTIMIZER];
  case PTDP_SIM_CAL_TP_COMM: return res->t > 1 ? res->comp[PTDP_SIM_TP] : NAN;
  default: (void)r; return NAN;
  }
}

/* The fit's working state: the runs, their options, the groups fitted. */
typedef struct {
  const ptdp_sim_cal_run *runs;
  int n;
  const ptdp_sim_hw *base;
  ptdp_sim_options *opts; /* [n] */
  int g[PTDP_SIM_CAL_GROUPS], k; /* the fitted groups' indices, how many */
  int row_run[64 * PTDP_SIM_CAL_QUANTITIES], row_q[64 * PTDP_SIM_CAL_QUANTITIES], rows;
  ptdp_sim_result *res;
} fit_state;

/* Each quantity counts by its relative error; one under 5% of the run's iteration by its error
 * relative to that 5% (a timer of almost nothing would otherwise weigh as much as the iteration
 * on the noise of its few microseconds). */
static double row_scale(const ptdp_sim_cal_run *r, int q)
{
  const double floor = 0.05 * r->measured[PTDP_SIM_CAL_ITERATION], m = r->measured[q];
  return m > floor ? m : floor;
}

static void hw_at(const fit_state *s, const double *theta, ptdp_sim_hw *hw)
{
  *hw = *s->base;
  for (int j = 0; j < s->k; j++) ptdp_sim_cal_apply(hw, s->g[j], exp(theta[j]));
}

/* The residuals at theta (rows); *iters (may be NULL): each run's predicted iteration. */
static int residuals(fit_state *s, const double *theta, double *r, double *iters)
{
  ptdp_sim_hw *hw = malloc(sizeof *hw);
  if (!hw) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  hw_at(s, theta, hw);
  int err = 0, row = 0;
  for (int i = 0; !err && i < s->n; i++) {
    err = ptdp_sim_run(&s->runs[i].args.model, hw, &s->opts[i], s->res);
    if (err) break;
    if (iters) iters[i] = s->res->iteration;
    for (; row < s->rows && s->row_run[row] == i; row++)
      r[row] = (ptdp_sim_cal_predict(s->res, &s->runs[i], s->row_q[row]) - s->runs[i].measured[s->row_q[row]]) /
               row_scale(&s->runs[i], s->row_q[row]);
  }
  free(hw);
  return err;
}

/* Solve A x = b (k x k, symmetric positive semi-definite plus a ridge) by Gaussian elimination
 * with partial pivoting; 0, or -1 when singular. */
static int solve(int k, double *A, double *b, double *x)
{
  for (int c = 0; c < k; c++) {
    int piv = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(A[r * k + c]) > fabs(A[piv * k + c])) piv = r;
    if (fabs(A[piv * k + c]) < 1e-300) return -1;
    for (int j = 0; j < k; j++) {
      const double t = A[c * k + j];
      A[c * k + j] = A[piv * k + j];
      A[piv * k + j] = t;
    }
    const double t = b[c];
    b[c] = b[piv];
    b[piv] = t;
    for (int r = c + 1; r < k; r++) {
      const double f = A[r * k + c] / A[c * k + c];
      for (int j = c; j < k; j++) A[r * k + j] -= f * A[c * k + j];
      b[r] -= f * b[c];
    }
  }
  for (int c = k - 1; c >= 0; c--) {
    double v = b[c];
    for (int j = c + 1; j < k; j++) v -= A[c * k + j] * x[j];
    x[c] = v / A[c * k + c];
  }
  return 0;
}

static double sumsq(const double *r, int n)
{
  double s = 0;
  for (int i = 0; i < n; i++) s += r[i] * r[i];
  return s;
}

/* The Jacobian d r / d theta (rows x k) by central differences of step h. */
static int jacobian(fit_state *s, const double *theta, double *J, double *rp, double *rm)
{
  const double h = 1e-4;
  double th[PTDP_SIM_CAL_GROUPS];
  for (int j = 0; j < s->k; j++) {
    memcpy(th, theta, sizeof th);
    th[j] = theta[j] + h;
    PTDP_CALL(residuals(s, th, rp, NULL));
    th[j] = theta[j] - h;
    PTDP_CALL(residuals(s, th, rm, NULL));
    for (int i = 0; i < s->rows; i++) J[i * s->k + j] = (rp[i] - rm[i]) / (2 * h);
  }
  return 0;
}

#define THETA_MAX 9.2103403719761836 /* ln 1e4 */

/* Levenberg-Marquardt steps on theta until the step is below 1e-12 or 100 steps. */
static int gauss_newton(fit_state *s, double *theta, double *r, int *steps, double *JtJ_out)
{
  const int k = s->k, n = s->rows;
  double *J = malloc(sizeof *J * (size_t)n * k), *rp = malloc(sizeof *rp * n), *rm = malloc(sizeof *rm * n),
         *rt = malloc(sizeof *rt * n);
  int err = J && rp && rm && rt ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  double lambda = 1e-6;
  if (!err) err = residuals(s, theta, r, NULL);
  for (*steps = 0; !err && *steps < 100; (*steps)++) {
    err = jacobian(s, theta, J, rp, rm);
    if (err) break;
    double A[PTDP_SIM_CAL_GROUPS * PTDP_SIM_CAL_GROUPS], g[PTDP_SIM_CAL_GROUPS];
    for (int a = 0; a < k; a++) {
      g[a] = 0;
      for (int i = 0; i < n; i++) g[a] -= J[i * k + a] * r[i];
      for (int b = 0; b < k; b++) {
        double v = 0;
        for (int i = 0; i < n; i++) v += J[i * k + a] * J[i * k + b];
        A[a * k + b] = v;
      }
    }
    memcpy(JtJ_out, A, sizeof A);
    double step[PTDP_SIM_CAL_GROUPS] = {0}, th[PTDP_SIM_CAL_GROUPS];
    int accepted = 0;
    for (int tries = 0; tries < 30 && !accepted; tries++) {
      double M[PTDP_SIM_CAL_GROUPS * PTDP_SIM_CAL_GROUPS], b[PTDP_SIM_CAL_GROUPS];
      memcpy(M, A, sizeof M);
      memcpy(b, g, sizeof b);
      for (int a = 0; a < k; a++) M[a * k + a] += lambda * (A[a * k + a] > 0 ? A[a * k + a] : 1) + 1e-14;
      if (solve(k, M, b, step)) break;
      for (int a = 0; a < k; a++) { /* factors kept within 1e-4 .. 1e4 of BASE's */
        th[a] = theta[a] + step[a];
        th[a] = th[a] > THETA_MAX ? THETA_MAX : th[a] < -THETA_MAX ? -THETA_MAX : th[a];
        step[a] = th[a] - theta[a];
      }
      err = residuals(s, th, rt, NULL);
      if (err) break;
      if (sumsq(rt, n) <= sumsq(r, n)) {
        accepted = 1;
        memcpy(theta, th, sizeof th);
        memcpy(r, rt, sizeof *r * n);
        lambda = lambda > 1e-12 ? lambda / 10 : lambda;
      } else {
        lambda *= 10;
      }
    }
    double big = 0;
    for (int a = 0; a < k; a++) big = fabs(step[a]) > big ? fabs(step[a]) : big;
    if (!accepted || big < 1e-12) break;
  }
  free(J);
  free(rp);
  free(rm);
  free(rt);
  return err;
}

int ptdp_sim_cal_fit_runs(const ptdp_sim_cal_run *runs, int n, const ptdp_sim_hw *base, const ptdp_options *opt,
                          const ptdp_sim_options *o, ptdp_sim_hw *out, ptdp_sim_cal_fit *fit)
{
  PTDP_CHECK(n >= 1 && n <= 64, "--calibrate needs 1 to 64 run files (got %d)", n);
  memset(fit, 0, sizeof *fit);
  fit_state s = {.runs = runs, .n = n, .base = base};
  s.opts = calloc((size_t)n, sizeof *s.opts);
  s.res = calloc(1, sizeof *s.res);
  double *r = NULL, *r0 = NULL;
  int err = s.opts && s.res ? 0 : PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  /* the rows: every quantity a run measured that the prediction has for its layout */
  for (int i = 0; !err && i < n; i++) {
    err = ptdp_sim_cal_options(&runs[i], opt, o, base, &s.opts[i]);
    if (!err) err = ptdp_sim_run(&runs[i].args.model, base, &s.opts[i], s.res);
    if (err) break;
    PTDP_CHECK(runs[i].measured[PTDP_SIM_CAL_ITERATION] > 0, "%s: no time per iteration measured", runs[i].path);
    for (int q = 0; q < PTDP_SIM_CAL_QUANTITIES; q++) {
      if (!(runs[i].measured[q] >= 0) || isnan(ptdp_sim_cal_predict(s.res, &runs[i], q))) continue;
      s.row_run[s.rows] = i;
      s.row_q[s.rows++] = q;
    }
  }
  fit->rows = s.rows;
  /* the groups the predictions depend on: a 1% change moving some row by 1e-9 */
  if (!err) {
    r = calloc((size_t)s.rows, sizeof *r);
    r0 = calloc((size_t)s.rows, sizeof *r0);
    if (!r || !r0) err = PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  }
  double theta[PTDP_SIM_CAL_GROUPS] = {0};
  if (!err) err = residuals(&s, theta, r0, fit->iter_before);
  for (int g = 0; !err && g < PTDP_SIM_CAL_GROUPS; g++) {
    s.k = 1;
    s.g[0] = g;
    theta[0] = log(1.01);
    err = residuals(&s, theta, r, NULL);
    double moved = 0;
    for (int i = 0; i < s.rows; i++) moved = fabs(r[i] - r0[i]) > moved ? fabs(r[i] - r0[i]) : moved;
    fit->fitted[g] = moved > 1e-9;
    theta[0] = 0;
  }
  s.k = 0;
  for (int g = 0; g < PTDP_SIM_CAL_GROUPS; g++) {
    fit->factor[g] = 1;
    if (fit->fitted[g]) s.g[s.k++] = g;
  }
  PTDP_CHECK(err || s.k > 0, "--calibrate: no hardware value the fit knows changes these runs' predictions");
  double JtJ[PTDP_SIM_CAL_GROUPS * PTDP_SIM_CAL_GROUPS] = {0};
  if (!err) err = gauss_newton(&s, theta, r, &fit->iterations, JtJ);
  if (!err) {
    double sq0 = sumsq(r0, s.rows), sq = sumsq(r, s.rows);
    fit->rms_before = sqrt(sq0 / s.rows);
    fit->rms_after = sqrt(sq / s.rows);
    for (int i = 0; i < s.rows; i++) fit->max_after = fabs(r[i]) > fit->max_after ? fabs(r[i]) : fit->max_after;
    /* standard errors: sigma^2 (J^T J)^-1, sigma^2 = RSS / (rows - k) */
    const int dof = s.rows - s.k;
    for (int j = 0; j < s.k; j++) {
      double e[PTDP_SIM_CAL_GROUPS] = {0}, x[PTDP_SIM_CAL_GROUPS], A[PTDP_SIM_CAL_GROUPS * PTDP_SIM_CAL_GROUPS];
      e[j] = 1;
      memcpy(A, JtJ, sizeof A);
      if (dof > 0 && !solve(s.k, A, e, x)) fit->stderr_ln[s.g[j]] = sqrt(fabs(x[j]) * sq / dof);
    }
    for (int j = 0; j < s.k; j++) fit->factor[s.g[j]] = exp(theta[j]);
    hw_at(&s, theta, out);
    err = residuals(&s, theta, r, fit->iter_after);
  }
  for (int i = 0; !err && i < n; i++) {
    err = ptdp_sim_run(&runs[i].args.model, out, &s.opts[i], s.res);
    for (int q = 0; !err && q < PTDP_SIM_CAL_QUANTITIES; q++) fit->pred_after[i][q] = ptdp_sim_cal_predict(s.res, &runs[i], q);
  }
  free(r);
  free(r0);
  free(s.opts);
  free(s.res);
  return err;
}
