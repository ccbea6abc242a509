/* ptdp-sim: a cost model of one training iteration (time, throughput, memory) for any layout on a
 * described cluster.  Pure: no MPI, no device.  What it shares with ptdp-train rather than
 * re-derives: the keys and the model they make (ptdp/model_config.h), the layer's description
 * (ptdp/layer_desc.h), the pipeline schedule and its replay (ptdp/schedule.h), the memory plan
 * (ptdp/plan.h), the FLOP formula (ptdp_model_flops).
 *
 * This is the top of src/sim: ptdp_sim_run (sim.c) times each stage's work items from the
 * operators of the cost model (ptdp/sim_cost.h), replays the pipeline event by event
 * (ptdp_schedule_replay: the bubble comes out of the replay), adds the gradient reductions and
 * the optimizer (reduce.c) and takes memory from ptdp-train's plan (sim_mem.c); report.c and
 * sim_out.c print and write the prediction (ptdp(7), THE SIMULATOR'S COST MODEL). */
#ifndef PTDP_SIM_H
#define PTDP_SIM_H

#include "ptdp/sim_cost.h"

#include <stdio.h>

/* The iteration time's range from the hardware file's provenance (uncertainty.c; ptdp-sim(1),
 * UNCERTAINTY): each value that prices time continuously (a rate, an efficiency, a bandwidth, a
 * latency, a time per element; never a count or a size) is moved to each end of its band,
 * value x (1 -+ band), one at a time, and the iteration predicted again.  The bands by tag
 * (relative half-widths; why these: ptdp-sim(1)); a calibrated MEASURED value (its figure says
 * "standard error X%") takes 2 X%, the fit's own 95% interval.  DEFAULT and UNTAGGED values are
 * ASSUMED ones: nothing says where they come from. */
#define PTDP_SIM_BAND_MEASURED 0.05
#define PTDP_SIM_BAND_DERIVED 0.10
#define PTDP_SIM_BAND_ASSUMED 0.20
#define PTDP_SIM_BAND_MAX 0.9 /* a calibrated band is capped here: the value stays positive */

/* One value's one-at-a-time change. */
typedef struct {
  int key;            /* the hardware file's key (ptdp_sim_hw_key) */
  int band_key;       /* the key whose tag set the band: key, or the peak an efficiency is a fraction of */
  ptdp_sim_prov kind; /* band_key's tag */
  int calibrated;     /* the band is 2 standard errors of a --calibrate fit */
  double band;        /* relative half-width */
  double at_lo, at_hi; /* iteration (s) with the value at x (1 - band), x (1 + band) */
} ptdp_sim_sensitivity;

typedef struct {
  int n; /* values banded */
  ptdp_sim_sensitivity v[PTDP_SIM_HW_KEYS];
  double lo, hi;             /* iteration (s): the central one -+ the root sum of squares of the changes */
  double worst_lo, worst_hi; /* -+ their sum: every value at its worse end at once */
} ptdp_sim_range;

/* The prediction. */
typedef struct {
  int t, p, d, v, m, world;
  long long vocab_padded, gbs;
  double iteration;                 /* s */
  double model_flops;               /* per iteration (ptdp_model_flops) */
  double tflops_per_gpu, mfu;       /* model FLOPs / time / n; / peak */
  double bubble;                    /* pipeline idle / compute, the largest over stages (Narayanan) */
  double pipeline_time;             /* replay makespan */
  double comp[PTDP_SIM_COMPONENTS];   /* time per component per iteration on the busiest stage (s): exposed */
  double hidden[PTDP_SIM_COMPONENTS]; /* of which hidden behind compute */
  double recompute;                 /* the extra forward's time (s per iteration, busiest stage) */
  double cores_bound;               /* ranks beyond a CPU node's cores: their work over the cores (s); 0 if none */
  double stage_fwd[2], stage_bwd[2];  /* a middle chunk's forward and backward item (s), first/last stage */
  /* memory per GPU (bytes), the largest stage: */
  double mem_weights, mem_grads, mem_optimizer, mem_activations, mem_other, mem_total;
  double stage_mem[3][5];           /* stages 0, p/2, p-1: peak activations, weights, gradients, optimizer, total */
  int worst_stage;
  int fits;
  double plan_peak_activations;     /* the plan's held activations at peak, in the precision modelled, stage 0 */
  double train_days_sim, train_days_eq4; /* for o.train_tokens */
  ptdp_sim_oplist layer, embedding, head;
  int ranged;                       /* range below filled (ptdp_sim_range_run) */
  ptdp_sim_range range;
} ptdp_sim_result;

/* After the reductions: the iteration is at least the node's work over its cores (sets
 * r->cores_bound; busy[p] is each stage's replayed work). */
void ptdp_sim_core_bound(const ptdp_sim_hw *hw, const double *busy, ptdp_sim_result *r);
/* Predict one iteration of a's layout on world ranks of hw. */
int ptdp_sim_run(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r);
/* The band of a value by its tag (PTDP_SIM_BAND_*; *calibrated: from the fit's standard error). */
double ptdp_sim_band_of(const ptdp_sim_hw_tag *t, int *calibrated);
/* r's range (r->range, r->ranged): every banded value of hw at its band's two ends, a, o and
 * everything else as r was predicted (ptdp_sim_run first); r's central figures are not touched.
 * Two predictions per value: ptdp-sweep asks only for the rows it prints. */
int ptdp_sim_range_run(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r);
/* The report's line "iteration time range (s): LO .. HI (...)"; --explain's top values by the
 * change across their band. */
void ptdp_sim_range_print(const ptdp_sim_result *r, FILE *out);
void ptdp_sim_range_explain(const ptdp_sim_hw *hw, const ptdp_sim_result *r, int top, FILE *out);
/* The report lines (ptdp-sim(1), OUTPUT), the --explain tree. */
void ptdp_sim_print(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, const ptdp_sim_result *r,
                    FILE *out);
void ptdp_sim_explain(const ptdp_model_keys *a, const ptdp_sim_options *o, const ptdp_sim_result *r, FILE *out);
/* The run file's layout where it overlaps (/config, /metrics, /memory, /pipeline). */
int ptdp_sim_write_runfile(const char *path, const ptdp_model_keys *a, ptdp_options *train_opts, const ptdp_sim_hw *hw,
                           const ptdp_sim_options *o, const ptdp_sim_result *r);

#endif
