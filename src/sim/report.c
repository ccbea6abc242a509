/* ptdp-sim's report: the lines scripts read (ptdp-sim(1), OUTPUT), and the --explain tree. */
#include "ptdp/sim.h"

#include "sim_internal.h"

#include <string.h>

#define GB 1e9

void ptdp_sim_print(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, const ptdp_sim_result *r,
                    FILE *out)
{
  fprintf(out, "hardware: %s\n", hw->name);
  fprintf(out, "layout: n %d = t %d x p %d x d %d, v %d, micro-batch %lld, global batch %lld, m %d micro-batches per "
               "pipeline, %s%s%s, %s\n",
          r->world, r->t, r->p, r->d, r->v, a->micro_batch_size, r->gbs, r->m,
          a->recompute_granularity == PTDP_RECOMPUTE_FULL        ? "full recomputation"
          : a->recompute_granularity == PTDP_RECOMPUTE_SELECTIVE ? "selective recomputation"
                                                                 : "no recomputation",
          a->sequence_parallel && r->t > 1 ? ", sequence parallel" : "",
          a->use_distributed_optimizer && r->d > 1 ? ", distributed optimizer" : "",
          a->bf16 ? "bf16" : a->fp16 ? "fp16" : "fp32");
  static const char *impl[] = {"keys", "megatron-2021", "megatron-2022", "megatron-core", "auto"};
  fprintf(out, "stack: %s, %s attention%s%s, DP reduction %s%s%s\n", impl[o->implementation],
          ptdp_sim_flash(a, o) ? "flash" : "unfused", o->te_fused ? ", Transformer Engine epilogues" : "",
          o->async_tp_allreduce ? ", async TP all-reduce" : "",
          ptdp_sim_overlaps_grad_reduce(o) ? "overlapped" : "after the backward",
          a->use_distributed_optimizer && o->overlap_param_gather ? ", parameter gather overlapped" : "",
          o->tp_comm_overlap ? ", tp-comm-overlap" : "");
  fprintf(out, "iteration time (s): %.6g\n", r->iteration);
  ptdp_sim_range_print(r, out);
  fprintf(out, "throughput per GPU (TFLOP/s/GPU): %.6g\n", r->tflops_per_gpu);
  fprintf(out, "aggregate throughput (PFLOP/s): %.6g\n", r->tflops_per_gpu * r->world / 1e3);
  fprintf(out, "MFU (%%): %.4g\n", 100 * r->mfu);
  fprintf(out, "pipeline bubble fraction: %.6g\n", r->bubble);
  fprintf(out, "memory per GPU (GB): %.4g (stage %d; device %.4g GB, usable %.4g GB)\n", r->mem_total / GB,
          r->worst_stage, hw->memory_bytes / GB, hw->memory_bytes * o->memory_margin / GB);
  fprintf(out, "memory weights (GB): %.4g\n", r->mem_weights / GB);
  fprintf(out, "memory gradients (GB): %.4g\n", r->mem_grads / GB);
  fprintf(out, "memory optimizer state (GB): %.4g\n", r->mem_optimizer / GB);
  fprintf(out, "memory activations (GB): %.4g\n", r->mem_activations / GB);
  fprintf(out, "memory other (GB): %.4g\n", r->mem_other / GB);
  /* exact, for comparison with ptdp-train's "[memory] peak held activations ... max over ranks" */
  double peak = 0;
  for (int k = 0; k < 3; k++) peak = r->stage_mem[k][0] > peak ? r->stage_mem[k][0] : peak;
  fprintf(out, "memory peak activations, largest stage (bytes): %.0f\n", peak);
  /* exact, for comparison with ptdp-train's "[memory] rank 0 plan" line (stage 0's) */
  const double *s0 = r->stage_mem[0];
  fprintf(out, "memory stage 0 (bytes): weights %.0f, gradients %.0f, optimizer %.0f, activations %.0f, total %.0f\n",
          s0[1], s0[2], s0[3], s0[0], s0[4]);
  for (int c = 0; c < PTDP_SIM_COMPONENTS; c++)
    fprintf(out, "time %s (s): %.6g exposed, %.6g hidden\n", ptdp_sim_component_name(c), r->comp[c], r->hidden[c]);
  fprintf(out, "time recomputation (s): %.6g\n", r->recompute);
  fprintf(out, "time pipeline (s): %.6g\n", r->pipeline_time);
  if (r->cores_bound > 0) fprintf(out, "time all ranks' work over the node's cores (s): %.6g\n", r->cores_bound);
  fprintf(out, "training time for %.4g tokens (days): %.4g (Narayanan et al. eq. 4 at the simulated rate: %.4g)\n",
          o->train_tokens, r->train_days_sim, r->train_days_eq4);
  if (!r->fits)
    fprintf(out, "WARNING: memory per GPU %.4g GB does not fit in %.4g GB usable: try recompute-granularity "
                 "selective or full, sequence-parallel, use-distributed-optimizer (d > 1), a larger "
                 "tensor-model-parallel-size or pipeline-model-parallel-size, or a smaller micro-batch-size\n",
            r->mem_total / GB, hw->memory_bytes * o->memory_margin / GB);
}

static void print_ops(const ptdp_sim_oplist *l, double times, const char *indent, FILE *out)
{
  for (int i = 0; i < l->n; i++) {
    const ptdp_sim_op *op = &l->op[i];
    fprintf(out, "%s%-34s %-24s fwd %10.4f ms  bwd %10.4f ms%s", indent, op->name, ptdp_sim_component_name(op->comp),
            1e3 * op->fwd * times, 1e3 * op->bwd * times, op->selective ? "  (selective recompute)" : "");
    if (op->hidden > 0) fprintf(out, "  (+%.4f ms hidden)", 1e3 * op->hidden * times);
    fputc('\n', out);
  }
}

void ptdp_sim_explain(const ptdp_model_keys *a, const ptdp_sim_options *o, const ptdp_sim_result *r, FILE *out)
{
  const int nl = (int)(a->num_layers / r->p / r->v);
  fprintf(out, "iteration %.4f s\n", r->iteration);
  fprintf(out, "+- pipeline %.4f s (bubble %.4f of compute; %d stages x %d chunks, %d micro-batches)\n",
          r->pipeline_time, r->bubble, r->p, r->v, r->m);
  for (int s = 0; s < (r->p > 1 ? 2 : 1); s++) {
    fprintf(out, "|  +- stage %d: one micro-batch through chunk 0: forward %.4f ms, backward %.4f ms (recomputation "
                 "included)\n",
            s == 0 ? 0 : r->p - 1, 1e3 * r->stage_fwd[s], 1e3 * r->stage_bwd[s]);
    if (s == 0 && r->embedding.n) {
      fprintf(out, "|  |  +- embedding\n");
      print_ops(&r->embedding, 1, "|  |  |    ", out);
    }
    fprintf(out, "|  |  +- %d layers per chunk, each:\n", nl);
    print_ops(&r->layer, 1, "|  |  |    ", out);
    if (s == (r->p > 1 ? 1 : 0)) {
      fprintf(out, "|  |  +- head\n");
      print_ops(&r->head, 1, "|  |  |    ", out);
    }
  }
  fprintf(out, "+- DP reduction %.4f s exposed, %.4f s hidden (d %d%s)\n", r->comp[PTDP_SIM_DP], r->hidden[PTDP_SIM_DP],
          r->d, ptdp_sim_overlaps_grad_reduce(o) ? ", overlapped with backward" : "");
  fprintf(out, "+- embedding all-reduce %.4f s\n", r->comp[PTDP_SIM_EMBEDDING_AR]);
  fprintf(out, "+- optimizer %.4f s\n", r->comp[PTDP_SIM_OPTIMIZER]);
  if (r->cores_bound > 0)
    fprintf(out, "+- ranks beyond the cores: the node's work over its cores %.4f s%s\n", r->cores_bound,
            r->cores_bound >= r->iteration ? " (sets the iteration)" : "");
}
