/* The operators and collectives of one transformer layer, of the embedding and of the head, for
 * one micro-batch on one rank, each timed by the cost terms of cost.c.
 *
 * Symbols: N = b s tokens; t TP ranks; Nl = N / t under sequence parallelism, else N (the
 * LayerNorm and dropout regions); hl = h / t, fl = f / t, al = a / t, hd = h / a; e bytes per
 * element (2 in fp16/bf16, 4 in fp32), 1-byte dropout masks.  Megatron's layer (Shoeybi et al.
 * 2019 Fig. 3; Korthikanti et al. 2022 Fig. 5):
 *   LN1 -> [SP: all-gather] -> QKV [N,h]x[h,3hl] -> QK^T (b al x [s,hd]x[hd,s]) -> softmax ->
 *   dropout -> attention over V (b al x [s,s]x[s,hd]) -> [N,hl]x[hl,h] -> all-reduce (SP:
 *   reduce-scatter) -> bias-dropout-add -> LN2 -> [SP: all-gather] -> [N,h]x[h,fl] -> bias-GeLU ->
 *   [N,fl]x[fl,h] -> all-reduce (SP: reduce-scatter) -> bias-dropout-add.
 * Backward: every GEMM twice (input gradient, weight gradient); the conjugate collectives; the
 * memory-bound operators read what they saved and the incoming gradient and write theirs. */
#include "ptdp/sim_cost.h"

#include "ptdp/error.h"
#include "ptdp/layer_desc.h"
#include "ptdp/shape.h"

/* The model the keys make (ptdp_model_config_of), as ptdp-train would build it on the layout's
 * t p ranks, with ptdp-sim's vocabulary when the keys give none. */
ptdp_model_config ptdp_sim_model_config(const ptdp_model_keys *a)
{
  ptdp_model_config c;
  const long long vocab = a->vocab_size > 0 ? a->vocab_size : PTDP_SIM_DEFAULT_VOCAB;
  ptdp_model_config_of(a, &(ptdp_model_env){.use = PTDP_MODEL_TRAIN,
                                            .world = (int)(a->tensor_model_parallel_size * a->pipeline_model_parallel_size),
                                            .vocab = vocab}, &c);
  return c;
}

ptdp_model_shape ptdp_sim_model_shape(const ptdp_model_keys *a) { return ptdp_sim_model_config(a).shape; }

/* TP rank 0's sizes: every rank of a TP group has the same (the vocabulary slices too, padded). */
ptdp_sim_dims ptdp_sim_dims_of(const ptdp_model_keys *a)
{
  const ptdp_model_shape m = ptdp_sim_model_shape(a);
  const ptdp_rank_shape r = ptdp_rank_shape_of(&m, (int)a->seq_length, (int)a->micro_batch_size,
                                               (int)a->tensor_model_parallel_size, 0);
  return (ptdp_sim_dims){.N = (double)r.N, .Nl = (double)r.Nl, .s = (double)r.s, .b = (double)r.b, .h = r.h,
                         .hl = r.hl, .fl = r.fl, .al = r.al, .hd = r.hd, .vl = (double)r.vl, .qkv = r.qkv,
                         .t = r.t, .sp = r.sp};
}

/* The shape and cost context shared by the three op lists. */
typedef struct {
  const ptdp_sim_hw *hw;
  const ptdp_sim_options *o;
  double R, e, ge; /* peak FLOP/s for the precision; bytes per element; 1-byte masks */
  ptdp_sim_dims d; /* this rank's sizes */
  int fused, hdrop, adrop;
  int flash;       /* the fused (flash) attention: one kernel, no s x s tensors */
  int te;          /* Transformer Engine: bias and GeLU in the GEMMs' epilogues */
  int ub;          /* TP comm overlap (userbuffers): SP's collectives pipelined with their GEMMs */
  int bias;        /* the linear layers have biases (not disable-bias-linear) */
  int rope;        /* rotary positions on q and k (position-embedding-type rope), no position table */
  ptdp_sim_group tp; /* the TP group: t consecutive ranks, across nodes when t > gpus-per-node */
} ctx;

static void ctx_init(ctx *c, const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o)
{
  const int half = a->fp16 || a->bf16;
  c->hw = hw;
  c->o = o;
  c->R = (half && hw->peak_flops_16 > 0 ? hw->peak_flops_16 : hw->peak_flops_32) * o->software_efficiency;
  c->e = half ? 2 : 4;
  c->d = ptdp_sim_dims_of(a);
  c->fused = o->fusion == PTDP_SIM_FUSION_MEGATRON;
  c->hdrop = a->hidden_dropout > 0;
  c->adrop = a->attention_dropout > 0;
  c->tp = ptdp_sim_group_of(hw, c->d.t, 1);
  c->flash = ptdp_sim_flash(a, o);
  c->bias = !a->disable_bias_linear;
  c->rope = a->position_embedding_type == PTDP_POS_ROPE;
  c->te = o->te_fused;
  /* userbuffers work within a node and on sequence-parallel layouts only (Megatron refuses it
   * without SP; across nodes it has no transport) */
  c->ub = o->tp_comm_overlap && c->d.sp && c->d.t > 1 && c->tp.k == 1;
}

static ptdp_sim_op *add(ptdp_sim_oplist *l, const char *name, ptdp_sim_component comp, double fwd, double bwd, int sel)
{
  static ptdp_sim_op spare; /* never read: the list is sized for every caller below */
  if (l->n >= PTDP_SIM_MAX_OPS) return &spare;
  l->op[l->n] = (ptdp_sim_op){.name = name, .comp = comp, .fwd = fwd, .bwd = bwd, .selective = sel};
  return &l->op[l->n++];
}

static double gemm(const ctx *c, double M, double N, double K, double batch)
{
  return ptdp_sim_gemm_time(c->hw, c->R, M, N, K, batch, c->e);
}
static double mem(const ctx *c, double bytes) { return ptdp_sim_membound_time(c->hw, bytes); }
/* A linear layer [M,K]x[K,N]: forward; backward = input gradient [M,N]x[N,K] + weight gradient [K,M]x[M,N]. */
static void linear(const ctx *c, ptdp_sim_oplist *l, const char *name, double M, double N, double K)
{
  add(l, name, PTDP_SIM_GEMM, gemm(c, M, N, K, 1), gemm(c, M, K, N, 1) + gemm(c, K, N, M, 1), 0);
}
/* All-reduce of the full activation [N, h] (no SP), or SP's reduce-scatter / all-gather: the
 * same bytes on the wire, half the steps each. */
static double tp_allreduce(const ctx *c, double bytes)
{
  return ptdp_sim_collective_time(c->hw, &c->tp, PTDP_SIM_COLL_ALLREDUCE, c->o->allreduce, bytes, NULL);
}
static double tp_gather(const ctx *c, double bytes)
{
  return ptdp_sim_collective_time(c->hw, &c->tp, PTDP_SIM_COLL_ALLGATHER, c->o->allreduce, bytes, NULL);
}

/* LayerNorm (or RMSNorm: fewer statistics, the same bytes): forward reads x and writes y
 * (statistics are small); backward reads x, dy, writes dx. */
static void layernorm(const ctx *c, ptdp_sim_oplist *l, const char *name)
{
  const double x = c->d.Nl * c->d.h * c->e;
  add(l, name, PTDP_SIM_MEMBOUND, mem(c, 2 * x), mem(c, 3 * x), 0);
}

/* A TP collective of time x beside a GEMM of time G under tp-comm-overlap: pipelined in t
 * chunks, at least one chunk's communication shows (the first all-gather chunk, or the last
 * reduce-scatter chunk, has no GEMM beside it), and whatever the GEMM cannot cover; the hidden
 * rest costs the GEMM the SMs the copies hold.  Without the overlap, x. */
static double ub_exposed(const ctx *c, double x, double G, double *hidden)
{
  if (!c->ub || x <= 0) return x;
  double shown = x - G;
  if (shown < x / c->d.t) shown = x / c->d.t;
  const double hid = x - shown;
  if (hidden) *hidden += hid;
  return shown + ptdp_sim_overlap_cost(c->hw, hid);
}

/* The region after a row-parallel GEMM (forward time G, backward input-gradient GEMM dgrad):
 * (SP: reduce-scatter | all-reduce), bias, dropout, residual add. */
static void row_epilogue(const ctx *c, ptdp_sim_oplist *l, const char *coll, const char *bda, double G, double dgrad)
{
  const double full = c->d.N * c->d.h * c->e, x = c->d.Nl * c->d.h * c->e, mask = c->hdrop ? c->d.Nl * c->d.h : 0;
  /* forward g: all-reduce (or reduce-scatter); backward g is the identity (or an all-gather of
   * the output gradient, which tp-comm-overlap pipelines with the input-gradient GEMM) */
  double hidden = 0;
  const double fwd = c->d.sp ? ub_exposed(c, tp_gather(c, full), G, &hidden) : tp_allreduce(c, full);
  const double bwd = c->d.sp ? ub_exposed(c, tp_gather(c, full), dgrad, &hidden) : 0;
  add(l, coll, PTDP_SIM_TP, fwd, bwd, 0)->hidden = hidden;
  /* fused: read out, residual, bias; write sum and mask.  Unfused: bias add, dropout, add apart.
   * Backward: read dy, mask; write dx (the residual's gradient passes through) and add into the
   * residual stream's gradient; the bias gradient (the GEMM skipped its bias) is a reduction of
   * dx over the Nl tokens, one more read. */
  const double bf = c->fused ? 3 * x + mask : (2 * x) + (c->hdrop ? 2 * x + mask : 0) + 3 * x;
  const double bb = 2 * x + mask + 3 * x + (c->bias ? x : 0);
  add(l, bda, PTDP_SIM_MEMBOUND, mem(c, bf), mem(c, bb), 0);
}

/* The conjugate f of a column-parallel GEMM's input: forward identity (SP: all-gather of the
 * LayerNorm output); backward all-reduce of the input gradient (SP: reduce-scatter) and, with
 * SP, the weight gradient's all-gather of the input again.  Megatron (2022,
 * LinearWithGradAccumulationAndAsyncCommunication) launches the re-gather before the
 * input-gradient GEMM (dgrad) and, with async-tp-allreduce, the input gradient's all-reduce
 * (SP: reduce-scatter) before the weight-gradient GEMM (wgrad): each hides behind its GEMM
 * and what is longer than the GEMM shows.  2021's Megatron ran the all-reduce after both. */
static void column_prologue(const ctx *c, ptdp_sim_oplist *l, const char *name, double G, double dgrad,
                            double wgrad)
{
  const double full = c->d.N * c->d.h * c->e;
  double ub_hidden = 0;
  const double fwd = c->d.sp ? ub_exposed(c, tp_gather(c, full), G, &ub_hidden) : 0;
  const double reduce = c->d.sp ? tp_gather(c, full) : tp_allreduce(c, full);
  double bwd = reduce, hidden = 0;
  if (c->o->async_tp_allreduce) {
    hidden = reduce < wgrad ? reduce : wgrad;
    bwd -= hidden;
  }
  if (c->d.sp) {
    const double regather = tp_gather(c, full), h2 = regather < dgrad ? regather : dgrad;
    hidden += h2;
    bwd += regather - h2;
  }
  /* hidden, not free: the GEMMs run on the SMs the collective leaves them */
  bwd += ptdp_sim_overlap_cost(c->hw, hidden);
  add(l, name, PTDP_SIM_TP, fwd, bwd, 0)->hidden = hidden + ub_hidden;
}

/* Megatron's attention core, unfused: QK^T [s,hd]x[hd,s] per (sample, local head) with the scale
 * folded in (baddbmm), softmax, dropout, attention over V, the context back to [s, b, hl];
 * selective recomputation runs all of it again. */
static void attention_unfused(const ctx *c, ptdp_sim_oplist *l, const ptdp_layer_op *core)
{
  const double e = c->e, B = core->batch, s = core->M, hd = core->K;
  const double ctxt = B * s * hd; /* the context's elements, N hl */
  const double S2 = B * s * s; /* elements of the local score tensor */
  add(l, "QK^T", PTDP_SIM_ATTENTION, gemm(c, s, s, hd, B), gemm(c, s, hd, s, B) + gemm(c, hd, s, s, B), 1);
  /* softmax: fused scale-mask-softmax reads and writes the scores once; unfused also a masking
   * pass and a scaling pass.  Backward reads y and dy, writes dx. */
  add(l, "softmax", PTDP_SIM_ATTENTION, mem(c, (c->fused ? 2 : 6) * S2 * e), mem(c, 3 * S2 * e), 1);
  if (c->adrop) add(l, "attention dropout", PTDP_SIM_ATTENTION, mem(c, S2 * (2 * e + 1)), mem(c, S2 * (2 * e + 1)), 1);
  add(l, "attention over V", PTDP_SIM_ATTENTION, gemm(c, s, hd, s, B), gemm(c, s, s, hd, B) + gemm(c, s, hd, s, B), 1);
  /* [b, al, s, hd] -> [s, b, hl]: a copy each way; the last step of Megatron's core attention */
  add(l, "context transpose", PTDP_SIM_MEMBOUND, mem(c, 2 * ctxt * e), mem(c, 2 * ctxt * e), 1);
}

/* The fused (flash) attention: one kernel over blocks of queries and keys, the scores never
 * written.  Causal: only the lower triangle's blocks run, half of the two s x s GEMMs' FLOPs,
 * forward 2 x 2 b al s^2 hd / 2; the backward recomputes the scores (QK^T again, then dV, dP, dQ,
 * dK: five GEMMs), 2.5 forwards.  At the kernel's own efficiency (the hardware file's
 * flash-attention-efficiency-*, of the 16-bit peak), and never below reading q, k, v and
 * writing o (backward: also do, dq, dk, dv).  Nothing is recomputed by selective recomputation
 * (the trainer's rule too): there is nothing s x s to drop.  Transformer Engine takes and gives
 * [s, b, h] itself; without it the context is transposed as before. */
static void attention_flash(const ctx *c, ptdp_sim_oplist *l, const ptdp_layer_op *core)
{
  const ptdp_sim_hw *hw = c->hw;
  const double R = c->e == 2 ? hw->peak_flops_16 : hw->peak_flops_32, x = core->batch * core->M * core->K * c->e;
  const double F = 2.0 * core->batch * core->M * core->N * core->K;
  double fwd = F / (R * hw->flash_efficiency_fwd), bwd = 2.5 * F / (R * hw->flash_efficiency_bwd);
  if (fwd < 4 * x / hw->memory_bandwidth) fwd = 4 * x / hw->memory_bandwidth;
  if (bwd < 8 * x / hw->memory_bandwidth) bwd = 8 * x / hw->memory_bandwidth;
  add(l, "flash attention", PTDP_SIM_ATTENTION, fwd + hw->kernel_launch, bwd + hw->kernel_launch, 0);
  if (!c->te) add(l, "context transpose", PTDP_SIM_MEMBOUND, mem(c, 2 * x), mem(c, 2 * x), 0);
}

/* The activation after FC1 (M rows of N = fl outputs): bias + GeLU fused, one read and one write;
 * unfused, two passes.  Backward reads the input and dy, writes dx, and reduces the bias gradient
 * (one more read of dx).  Transformer Engine does both in FC1's epilogue (bias, GeLU, and the
 * pre-activation written for the backward) and FC2's input-gradient GEMM's (GeLU's derivative
 * from it, the bias gradient): what is left is that tensor's one write and one read.  SwiGLU
 * reads [gate | up] (2 act) and writes act; backward reads both and dy, writes both halves'
 * gradients (Megatron's bias_swiglu: the bias add in the same pass when fused; no epilogue of
 * the GEMM's takes it). */
static void activation(const ctx *c, ptdp_sim_oplist *l, const ptdp_layer_op *op, int swiglu)
{
  const double act = op->M * op->N * c->e;
  const int bias = op->bias >= 0;
  if (swiglu && bias) add(l, "bias-SwiGLU", PTDP_SIM_MEMBOUND, mem(c, (c->fused ? 3 : 7) * act), mem(c, 7 * act), 0);
  else if (swiglu) add(l, "SwiGLU", PTDP_SIM_MEMBOUND, mem(c, 3 * act), mem(c, 5 * act), 0);
  else if (c->te) add(l, "GeLU epilogue (pre-activation)", PTDP_SIM_MEMBOUND, mem(c, act), mem(c, act), 0);
  else if (bias) add(l, "bias-GeLU", PTDP_SIM_MEMBOUND, mem(c, (c->fused ? 2 : 4) * act), mem(c, 4 * act), 0);
  else add(l, "GeLU", PTDP_SIM_MEMBOUND, mem(c, 2 * act), mem(c, 3 * act), 0);
}

/* The nearest GEMM after (step 1) or before (step -1) operation i of d. */
static const ptdp_layer_op *gemm_near(const ptdp_layer_desc *d, int i, int step)
{
  for (int k = i + step; k >= 0 && k < d->n; k += step)
    if (d->op[k].kind == PTDP_LOP_GEMM) return &d->op[k];
  return NULL;
}

/* The layer's operations (ptdp_layer_describe), each priced by its kind. */
static int layer_ops(const ctx *c, const ptdp_layer_desc *d, ptdp_sim_oplist *l)
{
  l->n = 0;
  for (int i = 0; i < d->n; i++) {
    const ptdp_layer_op *op = &d->op[i];
    switch (op->kind) {
    case PTDP_LOP_NORM: layernorm(c, l, op->name); break;
    case PTDP_LOP_TP_IN: { /* the collective around the column-parallel GEMM that follows */
      const ptdp_layer_op *g = gemm_near(d, i, 1);
      PTDP_CHECK(g, "the layer's description has no GEMM after %s", op->name);
      column_prologue(c, l, op->name, gemm(c, g->M, g->N, g->K, 1), gemm(c, g->M, g->K, g->N, 1),
                      gemm(c, g->K, g->N, g->M, 1));
      break;
    }
    case PTDP_LOP_GEMM: add(l, op->name, PTDP_SIM_GEMM, gemm(c, op->M, op->N, op->K, op->batch),
                            gemm(c, op->M, op->K, op->N, op->batch) + gemm(c, op->K, op->N, op->M, op->batch), 0);
      break;
    /* Megatron's column-parallel linear adds its bias after the GEMM (matmul, then + bias: read and
     * write); backward reduces dy over the tokens for the bias gradient (one read).  Transformer
     * Engine adds it, and reduces its gradient, in the GEMMs' epilogues. */
    case PTDP_LOP_BIAS:
      if (!c->te) add(l, op->name, PTDP_SIM_MEMBOUND, mem(c, 2 * op->M * op->N * c->e), mem(c, op->M * op->N * c->e), 0);
      break;
    /* rotary positions: the turned columns read and written in place; the backward turns their
     * gradients back the same way */
    case PTDP_LOP_ROPE:
      add(l, op->name, PTDP_SIM_MEMBOUND, mem(c, 2 * op->M * op->N * c->e), mem(c, 2 * op->M * op->N * c->e), 0);
      break;
    case PTDP_LOP_ATTENTION:
      if (c->flash) attention_flash(c, l, op);
      else attention_unfused(c, l, op);
      break;
    case PTDP_LOP_ACTIVATION: activation(c, l, op, d->shape.arch.swiglu); break;
    case PTDP_LOP_TP_OUT: { /* with the bias-dropout-add after it, around the row-parallel GEMM before */
      const ptdp_layer_op *g = gemm_near(d, i, -1);
      PTDP_CHECK(g && i + 1 < d->n && d->op[i + 1].kind == PTDP_LOP_RESIDUAL,
                 "the layer's description has no row-parallel GEMM before, or residual after, %s", op->name);
      row_epilogue(c, l, op->name, d->op[i + 1].name, gemm(c, g->M, g->N, g->K, 1), gemm(c, g->M, g->K, g->N, 1));
      break;
    }
    case PTDP_LOP_RESIDUAL: break; /* with its TP_OUT */
    /* the mixture's routing: the fp32 logits read for the softmax and top k, the probabilities
     * written; backward the same over their gradients */
    case PTDP_LOP_ROUTE:
      add(l, op->name, PTDP_SIM_MEMBOUND, mem(c, 3 * op->M * op->N * 4), mem(c, 3 * op->M * op->N * 4), 0);
      break;
    /* a permutation reads and writes each row once; its backward moves the gradients back */
    case PTDP_LOP_PERMUTE:
      add(l, op->name, PTDP_SIM_MEMBOUND, mem(c, 2 * op->M * op->N * c->e), mem(c, 2 * op->M * op->N * c->e), 0);
      break;
    default: PTDP_CHECK(0, "ptdp-sim has no cost for the layer's operation %s", op->name);
    }
  }
  return 0;
}

/* The layer the keys describe, on TP rank 0 (every rank of a TP group has the same sizes). */
void ptdp_sim_layer_desc(const ptdp_model_keys *a, const ptdp_sim_options *o, ptdp_layer_desc *d)
{
  const ptdp_model_shape m = ptdp_sim_model_shape(a);
  const ptdp_layer_shape ls = {
    .r = ptdp_rank_shape_of(&m, (int)a->seq_length, (int)a->micro_batch_size, (int)a->tensor_model_parallel_size, 0),
    .hidden_dropout = a->hidden_dropout > 0, .attention_dropout = a->attention_dropout > 0,
    .recompute = a->recompute_granularity, .bytes = a->fp16 || a->bf16 ? 2 : 4, .arch = m.arch,
    .flash_attention = ptdp_sim_flash(a, o), .moe = ptdp_moe_layer(&m.arch, 0)}; /* layer 0's MLP */
  ptdp_layer_describe(&ls, d);
}

int ptdp_sim_layer_ops_of(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                          const ptdp_layer_desc *d, ptdp_sim_oplist *l)
{
  ctx c;
  ctx_init(&c, a, hw, o);
  return layer_ops(&c, d, l);
}

int ptdp_sim_layer_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                       ptdp_sim_oplist *l)
{
  if (o->fusion == PTDP_SIM_FUSION_CPU) return ptdp_sim_cpu_layer_ops(a, hw, o, l); /* layer_cpu.c */
  ptdp_layer_desc d;
  ptdp_sim_layer_desc(a, o, &d);
  return ptdp_sim_layer_ops_of(a, hw, o, &d, l);
}

/* Embedding (first virtual stage): vocabulary-parallel lookup, its all-reduce over TP (SP: a
 * reduce-scatter), position add, dropout.  Backward: scatter-add into the fp32 gradient rows. */
int ptdp_sim_embedding_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                           ptdp_sim_oplist *l)
{
  if (o->fusion == PTDP_SIM_FUSION_CPU) return ptdp_sim_cpu_embedding_ops(a, hw, o, l); /* layer_cpu.c */
  ctx c;
  ctx_init(&c, a, hw, o);
  l->n = 0;
  const double full = c.d.N * c.d.h * c.e, x = c.d.Nl * c.d.h * c.e;
  if (a->position_embedding_type != PTDP_POS_LEARNED) /* no position table: word rows gathered, gradients scattered */
    add(l, "word lookup", PTDP_SIM_MEMBOUND, mem(&c, 2 * full), mem(&c, full + c.d.N * c.d.h * 4), 0);
  else
    add(l, "word lookup + position add", PTDP_SIM_MEMBOUND, mem(&c, 2 * full + 3 * x),
        mem(&c, full + 2 * c.d.N * c.d.h * 4), 0);
  if (c.d.t > 1)
    add(l, c.d.sp ? "TP reduce-scatter (embedding)" : "TP all-reduce (embedding)", PTDP_SIM_TP,
        c.d.sp ? tp_gather(&c, full) : tp_allreduce(&c, full), c.d.sp ? tp_gather(&c, full) : 0, 0);
  if (c.hdrop) add(l, "embedding dropout", PTDP_SIM_MEMBOUND, mem(&c, 2 * x + x / c.e), mem(&c, 2 * x + x / c.e), 0);
  return 0;
}

/* Head (last virtual stage): final LayerNorm, (SP: all-gather), logits [N,h]x[h,vl], the
 * vocabulary-parallel cross entropy in fp32 (its three [N] all-reduces: max, sum, target
 * logit), and in backward the logits' two GEMMs and the all-reduce of the input gradient. */
int ptdp_sim_head_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                      ptdp_sim_oplist *l)
{
  if (o->fusion == PTDP_SIM_FUSION_CPU) return ptdp_sim_cpu_head_ops(a, hw, o, l); /* layer_cpu.c */
  ctx c;
  ctx_init(&c, a, hw, o);
  l->n = 0;
  layernorm(&c, l, a->normalization == PTDP_NORM_RMSNORM ? "final rmsnorm" : "final layernorm");
  column_prologue(&c, l, "TP f (logits input)", gemm(&c, c.d.N, c.d.vl, c.d.h, 1), gemm(&c, c.d.N, c.d.h, c.d.vl, 1),
                  gemm(&c, c.d.h, c.d.vl, c.d.N, 1));
  linear(&c, l, "logits GEMM", c.d.N, c.d.vl, c.d.h);
  /* The vocabulary-parallel cross entropy over the z = N vl logits, loss in fp32.  Megatron's
   * (fusion megatron), pass by pass: forward, the fp32 copy (read e, write 4), the row max
   * (read 4), subtract it in place (8), exp in place (8), the row sum (read 4), divide in place
   * into the saved softmax (8): e + 36 bytes; backward, the softmax times the incoming gradient
   * in place (8) and the copy's gradient back to 16 bits (read 4, write e): e + 12.
   * ptdp-train's (fusion none): statistics, exp-sum and gradient passes, e + 16; backward one
   * scaling pass, 4 + e. */
  const double z = c.d.N * c.d.vl;
  const double ce_fwd = c.fused ? c.e + 36 : c.e + 16, ce_bwd = c.fused ? c.e + 12 : 4 + c.e;
  add(l, "cross entropy", PTDP_SIM_MEMBOUND, mem(&c, z * ce_fwd), mem(&c, z * ce_bwd), 0);
  if (c.d.t > 1) add(l, "TP all-reduces (cross entropy)", PTDP_SIM_TP, 3 * tp_allreduce(&c, c.d.N * 4), 0, 0);
  return 0;
}
