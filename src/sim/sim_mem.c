/* ptdp-sim: memory per GPU from ptdp-train's plan (what follows the pipeline is reduce.c's).  The
 * plan is built in the precision modelled and counts bytes by type itself (ptdp/plan.h); the
 * implementation modelled (--fusion) decides whether its classes are taken as they are
 * (ptdp-train's) or adjusted to Megatron's. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/plan.h"
#include "sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double weights, grads, optimizer, activations, other, total, params, plan_act;
} stage_mem;

/* The plan ptdp-train would build for one stage of r's layout: the model the keys make on r's
 * world (ptdp_model_config_of) with the schedule and attention core the simulator models. */
static ptdp_plan_config plan_config(const ptdp_model_keys *a, const ptdp_sim_options *o, const ptdp_sim_result *r,
                                    ptdp_schedule_kind kind, int stage)
{
  ptdp_model_config c;
  const long long vocab = a->vocab_size > 0 ? a->vocab_size : PTDP_SIM_DEFAULT_VOCAB;
  ptdp_model_config_of(a, &(ptdp_model_env){.use = PTDP_MODEL_TRAIN, .world = r->world, .vocab = vocab,
                                            .flash_attention = ptdp_sim_flash(a, o)}, &c);
  c.gpt.schedule = kind;
  const ptdp_param_position pos = {.t = r->t, .tp_rank = 0, .p = r->p, .stage = stage, .v = r->v};
  return ptdp_gpt_plan_config(&c.gpt, &pos);
}

/* Bytes of the plan's buffers of one kind. */
static double kind_bytes(const ptdp_plan *pl, ptdp_buffer_kind k)
{
  double s = 0;
  for (int i = 0; i < pl->n; i++)
    if (pl->buf[i].kind == k) s += (double)pl->buf[i].bytes;
  return s;
}

/* Held activations at peak when Megatron keeps the logits in fp32 (Korthikanti et al. Sec. 4.3
 * count 4 s b v / t: the cross entropy saves its fp32 softmax) where the plan stores them in the
 * storage type: the plan's walk (plan.c, walk_schedule) with each head-chunk slot holding
 * (4 - S) more bytes per logit.  In fp32 nothing is added and this is the plan's peak. */
static int peak_fp32_logits(const ptdp_plan *pl, double *peak)
{
  const ptdp_plan_config *c = &pl->cfg;
  const double S = (double)ptdp_dtype_size((ptdp_dtype)c->dtype);
  double *held;
  PTDP_CALLOC(held, c->pos.v, sizeof *held);
  for (int ch = 0; ch < c->pos.v; ch++) held[ch] = (double)ptdp_plan_held_per_slot(pl, ch);
  for (int i = 0; i < pl->n; i++) {
    const ptdp_buffer *b = &pl->buf[i];
    if (b->kind == PTDP_BUF_LOGITS && b->held && b->slot == 0) held[b->chunk] += (double)b->bytes * (4 - S) / S;
  }
  ptdp_schedule s;
  int err = ptdp_schedule_build(c->schedule, c->pos.stage, c->pos.p, c->pos.v, c->m, &s);
  double busy = 0, most = 0;
  for (int i = 0; !err && i < s.count; i++) {
    busy += s.items[i].kind == PTDP_WORK_FORWARD ? held[s.items[i].chunk] : -held[s.items[i].chunk];
    most = busy > most ? busy : most;
  }
  if (!err) ptdp_schedule_free(&s);
  free(held);
  PTDP_CALL(err);
  *peak = most;
  return 0;
}

/* ptdp-train's memory (--fusion none or cpu): the plan's classes as they are, bytes by type
 * (ptdp/plan.h), so that the total is the plan's peak, the [memory] "rank 0 plan" line's. */
static void ptdp_memory(const ptdp_plan *pl, stage_mem *sm)
{
  sm->weights = (double)pl->total[PTDP_MEM_PARAMS];
  sm->grads = (double)pl->total[PTDP_MEM_GRADS];
  sm->optimizer = (double)pl->total[PTDP_MEM_OPTIMIZER];
  sm->activations = (double)pl->peak_activations;
  sm->other = (double)(pl->total[PTDP_MEM_TRANSIENT] + pl->total[PTDP_MEM_WORK] + pl->total[PTDP_MEM_P2P]);
}

/* Megatron's memory (--fusion megatron): the plan's bytes by type (weights and activations in
 * the storage type, fp32 main gradients, moments and master weights: 2 + 4 + 12 bytes per
 * parameter in 16 bits, as Megatron counts), adjusted where Megatron's implementation differs
 * from ptdp's:
 *   - fp16 keeps 16-bit main gradients (the 2021 stack of Narayanan et al.: gradients
 *     accumulated and all-reduced in fp16), 2 bytes where the plan has 4;
 *   - the distributed optimizer reduce-scatters into the gradient buffer itself (no separate
 *     shard buffer); its master weights are sharded over d like the moments, as the plan has
 *     them too: 2 + 4 + 12/d bytes per parameter in bf16;
 *   - logits in fp32 (peak_fp32_logits);
 *   - no per-slot send buffers, tokens or pipeline buffers of ptdp's: Megatron frees a slot's
 *     output once sent (Korthikanti et al. App. B); the work space, and one message of b s h
 *     elements in each direction. */
static int megatron_memory(const ptdp_model_keys *a, const ptdp_plan *pl, stage_mem *sm)
{
  const double S = (double)ptdp_dtype_size((ptdp_dtype)pl->cfg.dtype);
  const double moment = kind_bytes(pl, PTDP_BUF_ADAM_M), master = kind_bytes(pl, PTDP_BUF_MASTER_PARAMS);
  sm->weights = (double)pl->total[PTDP_MEM_PARAMS];
  sm->grads = (double)pl->total[PTDP_MEM_GRADS] * (a->fp16 ? 0.5 : 1);
  sm->optimizer = moment + kind_bytes(pl, PTDP_BUF_ADAM_V) + master;
  PTDP_CALL(peak_fp32_logits(pl, &sm->activations));
  sm->other = (double)pl->total[PTDP_MEM_WORK] + 2.0 * (double)a->micro_batch_size * a->seq_length * a->hidden_size * S;
  return 0;
}

/* One stage's memory, from the plan in the precision modelled. */
static int stage_memory(const ptdp_model_keys *a, const ptdp_sim_options *o, const ptdp_sim_result *r,
                        ptdp_schedule_kind kind, int stage, stage_mem *sm)
{
  const ptdp_plan_config pc = plan_config(a, o, r, kind, stage);
  ptdp_plan pl;
  PTDP_CALL(ptdp_plan_build(&pc, &pl));
  memset(sm, 0, sizeof *sm);
  sm->params = (double)pl.total[PTDP_MEM_PARAMS] / (double)ptdp_dtype_size((ptdp_dtype)pc.dtype);
  sm->plan_act = (double)pl.peak_activations;
  int err = 0;
  if (o->fusion == PTDP_SIM_FUSION_MEGATRON) err = megatron_memory(a, &pl, sm);
  else ptdp_memory(&pl, sm);
  sm->total = sm->weights + sm->grads + sm->optimizer + sm->activations + sm->other;
  ptdp_plan_free(&pl);
  return err;
}

/* Stages 0 (most activations in flight), p - 1 (the head) and one in the middle: the others
 * hold what the middle one holds, less activations. */
int ptdp_sim_memory(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_result *r,
                    ptdp_schedule_kind kind, double *params)
{
  const int p = r->p, pick[3] = {0, p / 2, p - 1};
  stage_mem sm[3];
  for (int i = 0; i < 3; i++) {
    if (i > 0 && pick[i] == pick[i - 1]) sm[i] = sm[i - 1];
    else PTDP_CALL(stage_memory(a, o, r, kind, pick[i], &sm[i]));
  }
  for (int i = 0; i < 3; i++) {
    const double v[5] = {sm[i].activations, sm[i].weights, sm[i].grads, sm[i].optimizer, sm[i].total};
    memcpy(r->stage_mem[i], v, sizeof v);
  }
  for (int s = 0; s < p; s++) params[s] = s == 0 ? sm[0].params : s == p - 1 ? sm[2].params : sm[1].params;
  int w = 0;
  for (int i = 1; i < 3; i++) w = sm[i].total > sm[w].total ? i : w;
  r->worst_stage = pick[w];
  r->mem_weights = sm[w].weights;
  r->mem_grads = sm[w].grads;
  r->mem_optimizer = sm[w].optimizer;
  r->mem_activations = sm[w].activations;
  r->mem_other = sm[w].other;
  r->mem_total = sm[w].total;
  r->plan_peak_activations = sm[0].plan_act;
  r->fits = r->mem_total <= hw->memory_bytes * o->memory_margin;
  return 0;
}
