/* ptdp-sim --calibrate: a hardware file's efficiency and bandwidth keys fitted to a user's own
 * short runs (ptdp-sim(1), CALIBRATION).  Pure but for the run files' reading (cal_runfile.c) and
 * the file written (cal_write.c); the fit itself (calibrate.c) works on runs in memory, so a test
 * can hand it synthetic ones.
 *
 * The model of the fit.  Each group g of hardware values gets one factor x_g on the time it
 * prices: a time per element (cpu-*-ns) becomes base x_g, a rate (gemm-efficiency, a bandwidth)
 * base / x_g, every value of the group by the same factor (their ratios stay BASE's).  For each
 * run i and each quantity q it measured (the iteration, its forward and backward compute, the
 * optimizer, the TP collectives' time: ptdp_sim_cal_quantity), ptdp-sim predicts P_iq(x) for the
 * run's own layout and keys; the fit minimises
 *     sum_iq ((P_iq(x) - M_iq) / max(M_iq, M_i / 20))^2,   M_i the run's measured iteration
 * (each quantity by its relative error; a timer of under 5% of the iteration relative to that 5%),
 * over theta_g = ln x_g by Gauss-Newton (Jacobian by central differences of ptdp_sim_run; the
 * prediction is piecewise linear in the x_g, so a few steps converge).  A group no prediction
 * depends on (a change of 1% in x_g moves no P_iq by 1e-9 of M_i) is not fitted and keeps BASE's
 * values and tags. */
#ifndef PTDP_CALIBRATE_H
#define PTDP_CALIBRATE_H

#include "ptdp/args.h"
#include "ptdp/sim.h"

/* What a run file's timers measured, per iteration (s), the slowest rank's (max over ranks),
 * the median over the log intervals after the first (warm-up). */
typedef enum {
  PTDP_SIM_CAL_ITERATION = 0, /* /metrics/ms_per_iteration */
  PTDP_SIM_CAL_FORWARD,       /* timer forward: compute of the forward items (p = 1 runs) */
  PTDP_SIM_CAL_BACKWARD,      /* timer backward (with the recomputed forward) (p = 1 runs) */
  PTDP_SIM_CAL_OPTIMIZER,     /* timer optimizer */
  PTDP_SIM_CAL_TP_COMM,       /* timer tp-comm (t > 1 runs) */
  PTDP_SIM_CAL_QUANTITIES
} ptdp_sim_cal_quantity;

/* One short run: its keys, layout and what it measured. */
typedef struct {
  char path[512];   /* the run file (synthetic runs: a label) */
  char label[64];   /* its layout, "t2 p1 d1 v1 sp" */
  char hosts[256];  /* distinct hosts of its ranks, comma-separated */
  ptdp_args args;   /* every ptdp-train key of the run, from /config */
  long long world;  /* ranks */
  double measured[PTDP_SIM_CAL_QUANTITIES]; /* s per iteration; NaN: not measured or not used */
} ptdp_sim_cal_run;

#define PTDP_SIM_CAL_GROUPS 7
#define PTDP_SIM_CAL_MAX_KEYS 12

/* A group of hardware values fitted by one factor. */
typedef struct {
  const char *name;                        /* "GEMM rate" */
  const char *keys[PTDP_SIM_CAL_MAX_KEYS]; /* hardware-file keys, NULL-terminated */
  int rate;                                /* 1: a rate (the time goes as 1 / value); 0: a time */
} ptdp_sim_cal_group;
const ptdp_sim_cal_group *ptdp_sim_cal_group_of(int g);

/* The fit's answer. */
typedef struct {
  int fitted[PTDP_SIM_CAL_GROUPS];    /* 1: the runs depend on the group and it was fitted */
  double factor[PTDP_SIM_CAL_GROUPS]; /* x_g (1 where not fitted) */
  double stderr_ln[PTDP_SIM_CAL_GROUPS]; /* standard error of ln x_g from the residuals (0: as many rows as groups) */
  int rows, iterations;
  double rms_before, rms_after;       /* sqrt(mean residual^2), each relative to its quantity (max(M_iq, M_i / 20)) */
  double max_after;                   /* the largest |residual| after */
  /* per run: predicted iteration before and after, measured (s) */
  double iter_before[64], iter_after[64];
  double pred_after[64][PTDP_SIM_CAL_QUANTITIES]; /* each quantity predicted after (NaN: none) */
} ptdp_sim_cal_fit;

/* Read run file path into r (its keys, layout, hosts, measured quantities). */
int ptdp_sim_cal_read_run(const char *path, ptdp_sim_cal_run *r);
/* The sim options to predict run r with: o's (the command line's), the run's world size, and
 * --fusion cpu for a CPU file unless o's table says fusion was given. */
int ptdp_sim_cal_options(const ptdp_sim_cal_run *r, const ptdp_options *opt, const ptdp_sim_options *o,
                         const ptdp_sim_hw *hw, ptdp_sim_options *out);
/* Predict quantity q of run r on hw (NaN when the prediction has no such quantity for r's layout). */
double ptdp_sim_cal_predict(const ptdp_sim_result *res, const ptdp_sim_cal_run *r, ptdp_sim_cal_quantity q);
/* Fit base's groups to the n runs; *out is base with the factors applied. */
int ptdp_sim_cal_fit_runs(const ptdp_sim_cal_run *runs, int n, const ptdp_sim_hw *base, const ptdp_options *opt,
                          const ptdp_sim_options *o, ptdp_sim_hw *out, ptdp_sim_cal_fit *fit);
/* Apply factor x of group g to hw (SI values). */
void ptdp_sim_cal_apply(ptdp_sim_hw *hw, int g, double x);
/* Write MINE.hw: base_path's lines, each fitted value replaced by base x factor (file units)
 * tagged MEASURED (the runs' hosts, today's date, command, the figure: runs, factor, residuals);
 * every other line as it was. */
int ptdp_sim_cal_write(const char *base_path, const char *out_path, const ptdp_sim_hw *base,
                       const ptdp_sim_cal_run *runs, int n, const ptdp_sim_cal_fit *fit, const char *command);
/* The fit's report (ptdp-sim(1), CALIBRATION). */
void ptdp_sim_cal_print(const ptdp_sim_cal_run *runs, int n, const ptdp_sim_cal_fit *fit, FILE *out);

#endif
