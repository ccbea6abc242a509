/* ptdp-sweep: every layout of a model on n devices, predicted by ptdp-sim's code (ptdp/sim.h),
 * ranked.  Pure: no MPI.
 *
 * A layout: t p d = n, micro-batch b (b d divides the global batch B, m = B / (b d)), v model
 * chunks per stage (interleaved, m a multiple of p), sequence parallelism (t > 1), the
 * distributed optimizer (d > 1) and recomputation.  What is enumerated is what the keys allow;
 * nothing from the papers' advice is built in.  What is dropped, and why:
 *   - layouts ptdp-train refuses (t must divide the heads, p the layers, ...);
 *   - layouts that do not fit in memory (weights, gradients and optimizer state bounded first
 *     without simulating: 16-bit weights and gradients, Adam's fp32 state / d with the
 *     distributed optimizer);
 *   - recomputation the layout does not need: recomputing only adds time, so when a layout fits
 *     without it, its recomputing variants are not listed; when it does not, selective and the
 *     least full recomputation that fits (block method, the fewest layers per chunk) are. */
#ifndef PTDP_SWEEP_H
#define PTDP_SWEEP_H

#include "ptdp/model_config.h"
#include "ptdp/sim.h"

#include <stdio.h>

typedef struct {
  int t, p, d, b, v, m;
  int v_layers;            /* num-layers-per-virtual-pipeline-stage (0: v = 1) */
  int sp, distopt;
  ptdp_recompute recompute;
  int recompute_layers;    /* full: block method, the first N layers of each chunk */
  double iteration;        /* s */
  double tflops_per_gpu, mfu, bubble;
  double memory;           /* bytes per GPU, fullest stage */
  double memory_usable;    /* bytes */
  double comp[PTDP_SIM_COMPONENTS]; /* exposed s per iteration, busiest stage */
  double recompute_time;   /* s per iteration */
  double pipeline_idle;    /* s: pipeline time - busiest stage's work, the bubble's cost */
  int tp_crosses_nodes;    /* t > GPUs per node */
  double train_days_sim, train_days_eq4;
  double range_lo, range_hi; /* s: the iteration's range from the provenance bands (ptdp_sweep_ranges); NaN if not computed */
} ptdp_sweep_layout;

typedef struct {
  ptdp_sweep_layout *layouts; /* fitting layouts, fastest first */
  int n, cap;
  long long candidates;       /* layouts enumerated (valid keys) */
  long long simulated;        /* ptdp_sim_run calls */
  long long dropped_memory;   /* valid layouts that fit with no recomputation */
  long long bounded;          /* (t, p, distributed optimizer) left out by the weights-and-state bound */
  double seconds;             /* wall time of the sweep */
  int ranged;                 /* layouts 0 .. ranged - 1 have their range */
  ptdp_sim_range *ranges;     /* their one-at-a-time changes (ranges[i]: layout i's; ranged of them) */
  double range_seconds;       /* wall time of the ranges */
} ptdp_sweep_result;

/* Every layout of base's model (its other keys kept) on o->world_size devices of hw, with
 * global batch gbs (0: base's).  Fills res (ptdp_sweep_free). */
int ptdp_sweep_run(const ptdp_model_keys *base, const ptdp_sim_hw *hw, const ptdp_sim_options *o, long long gbs,
                   ptdp_sweep_result *res);
void ptdp_sweep_free(ptdp_sweep_result *res);
/* A lower bound on a rank's bytes of weights, gradients and optimizer state at tensor, pipeline
 * and data parallelism t, p, d (distopt: the distributed optimizer): the sweep leaves out the
 * (t, p, distopt) whose bound exceeds the device, so it must never exceed what ptdp-sim counts
 * (grouped queries, kv-channels and SwiGLU included; validation/tests/sweep/test_sweep_bound.c). */
double ptdp_sweep_state_bytes_lower(const ptdp_model_keys *a, int t, int p, int d, int distopt);
/* The ranges (ptdp_sim_range_run) of the best k layouts and of the one after them (to say whether
 * the k-th can be told from it): only what the table prints, each range costing two predictions
 * per banded hardware value (kept in res->ranges for ptdp_sweep_inseparable).  The ranking stays
 * the central prediction's. */
int ptdp_sweep_ranges(const ptdp_model_keys *base, const ptdp_sim_hw *hw, const ptdp_sim_options *o, long long gbs,
                      ptdp_sweep_result *res, int k);
/* The band of the difference T_b - T_a between two layouts of the same hardware file (ta, tb their
 * central iterations, ra, rb their one-at-a-time changes, ptdp_sim_range_run): for each banded
 * value i, at each end of its band, the difference moves by (tb_i - tb) - (ta_i - ta); a value
 * both share moving both the same way moves it little.  Combined as the range is (root sum of
 * squares of the one-at-a-time changes, each side): *lo .. *hi around tb - ta.  A value banded
 * in one row only counts with its change in that row. */
void ptdp_sweep_difference(double ta, const ptdp_sim_range *ra, double tb, const ptdp_sim_range *rb, double *lo,
                           double *hi);
/* Whether the provenance bands cannot separate layout i from layout i + 1 (both ranged): the band
 * of T_{i+1} - T_i (ptdp_sweep_difference) reaches 0, its lower end <= 0. */
int ptdp_sweep_inseparable(const ptdp_sweep_result *res, int i);
/* base with layout L's keys set (what ptdp-train is given to run L). */
void ptdp_sweep_apply(const ptdp_model_keys *base, const ptdp_sweep_layout *L, long long gbs, ptdp_model_keys *a);

/* The best k as a table, each with why it is where it is against the best (its largest extra
 * cost: bubble, TP/PP/DP communication, TP across nodes, recomputation, memory), its range and a
 * mark '~' where the bands cannot separate it from the next row (ptdp_sweep_inseparable), then a
 * line naming those pairs. */
void ptdp_sweep_print(const ptdp_sweep_result *res, const ptdp_sim_hw *hw, int k, FILE *out);
/* One-line reason for layout i (relative to layout 0) into buf. */
void ptdp_sweep_reason(const ptdp_sweep_result *res, const ptdp_sim_hw *hw, int i, char *buf, size_t n);
/* Every prediction as HDF5 columns under /sweep (one row per fitting layout, fastest first). */
int ptdp_sweep_write_h5(const char *path, const ptdp_sweep_result *res, const ptdp_sim_hw *hw, long long gbs);
/* The best k as a job array's table: task, predicted_ms_per_iteration, then ptdp-train keys. */
int ptdp_sweep_write_tsv(const char *path, const ptdp_sweep_result *res, int k, long long gbs);
/* A layout as text: "t8 p8 d24 b1 v2 sp sel distopt". */
void ptdp_sweep_name(const ptdp_sweep_layout *L, char *buf, size_t n);

#endif
