/* ptdp-sim's helpers shared between its files (not public). */
#ifndef PTDP_SIM_INTERNAL_H
#define PTDP_SIM_INTERNAL_H

#include "ptdp/schedule.h"
#include "ptdp/sim.h"

/* Memory per stage from the plan (worst stage into r); params_per_stage[p]: elements held. */
int ptdp_sim_memory(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r,
                    ptdp_schedule_kind kind, double *params_per_stage);
/* After the pipeline (reduce.c): DP reduction, tied-embedding all-reduce, optimizer, the
 * distributed optimizer's gather; sets r->iteration.  st[p]: each stage's times from the replay. */
int ptdp_sim_reductions(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r,
                        const double *params_per_stage, const ptdp_sim_stage_times *st);
/* Whether the modelled implementation overlaps the DP reduction with the backward: the
 * overlap-grad-reduce key, or ptdp-train's own (fusion none or cpu), which always does. */
int ptdp_sim_overlaps_grad_reduce(const ptdp_sim_options *o);

/* The pipeline of r's layout replayed again (ptdp_sim_run's replay), for the run file's events. */
int ptdp_sim_pipeline_replay(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                             const ptdp_sim_result *r, ptdp_replay *rp);

#endif
