/* One transformer layer, described once: see include/ptdp/layer_desc.h.  The forward pass it
 * lists is layer.c's (and Megatron's, Shoeybi et al. 2019 Fig. 3; Korthikanti et al. 2022 Fig. 5):
 *   norm 1 -> f -> QKV GEMM (+ bias) -> RoPE -> attention core -> projection GEMM -> g ->
 *   bias-dropout-add -> norm 2 -> f -> FC1 GEMM -> (bias-)GELU or SwiGLU -> FC2 GEMM -> g ->
 *   bias-dropout-add */
#include "ptdp/layer_desc.h"

#include <string.h>

int ptdp_layer_activation(const ptdp_layer_shape *l, ptdp_buffer_kind kind, ptdp_lop_save *s)
{
  const ptdp_rank_shape z = l->r;
  const ptdp_save_unit STORE = PTDP_SAVE_STORE, F32 = PTDP_SAVE_F32, MASK = PTDP_SAVE_MASK;
  const ptdp_save_part IN = PTDP_SAVE_IN, CORE = PTDP_SAVE_CORE, REST = PTDP_SAVE_REST;
  const int ALWAYS = 1, HDROP = l->hidden_dropout, FLASH = l->flash_attention, UNFUSED = !FLASH;
  const int LN = l->arch.norm == PTDP_NORM_LAYERNORM, ADROP = l->attention_dropout && UNFUSED;
  const int MOE = l->moe, DENSE = !l->moe;
  switch (kind) {
#define ONE(k, type, field, name, p_, n_, unit_, when)                                 \
  case k:                                                                              \
    *s = (ptdp_lop_save){.kind = k, .elems = (double)(n_), .unit = unit_, .part = p_}; \
    return (when) != 0;
    PTDP_LAYER_ACTIVATIONS(ONE)
#undef ONE
  default: return 0;
  }
}

int ptdp_layer_desc_add(ptdp_layer_desc *d, const ptdp_layer_op *op)
{
  if (d->n >= PTDP_LAYER_MAX_OPS) return -1;
  d->op[d->n++] = *op;
  return 0;
}

/* Append op, with the activations of kinds[0..n) that the layer keeps. */
static void add(ptdp_layer_desc *d, ptdp_layer_op op, const ptdp_buffer_kind *kinds, int n)
{
  op.nsave = 0;
  for (int i = 0; i < n; i++) {
    ptdp_lop_save s;
    if (ptdp_layer_activation(&d->shape, kinds[i], &s)) op.save[op.nsave++] = s;
  }
  ptdp_layer_desc_add(d, &op);
}

#define SAVES(...) (const ptdp_buffer_kind[]){__VA_ARGS__}, (int)(sizeof((ptdp_buffer_kind[]){__VA_ARGS__}) / sizeof(ptdp_buffer_kind))
#define NOSAVE NULL, 0

static ptdp_layer_op gemm(const char *name, double M, double N, double K, int weight, int bias, int row)
{
  return (ptdp_layer_op){.kind = PTDP_LOP_GEMM, .name = name, .M = M, .N = N, .K = K, .batch = 1, .weight = weight,
                         .bias = bias, .row_parallel = row};
}
static ptdp_layer_op op(ptdp_lop_kind kind, const char *name, double M, double N, int weight, int bias)
{
  return (ptdp_layer_op){.kind = kind, .name = name, .M = M, .N = N, .batch = 1, .weight = weight, .bias = bias};
}

/* The mixture of experts' MLP (moe.c): the router GEMM and routing, the permutation, E expert
 * GEMMs of k N / E rows each per projection (a balanced load), the unpermutation. */
static void moe_ops(ptdp_layer_desc *d, const ptdp_layer_shape *l)
{
  const ptdp_rank_shape *z = &l->r;
  const int bias = !l->arch.no_linear_bias, none = -1;
  const double N = (double)z->N, h = z->h, E = z->E, Nk = (double)z->Nk, rows = Nk / E;
  add(d, gemm("router GEMM", N, E, h, PTDP_PARAM_ROUTER_WEIGHT, none, 0), SAVES(PTDP_BUF_MOE_LOGITS));
  ptdp_layer_op route = op(PTDP_LOP_ROUTE, "router top-k", N, E, none, none);
  route.K = z->k; /* the backward all-reduces the probabilities' gradient, N k numbers, over TP */
  add(d, route, NOSAVE);
  add(d, op(PTDP_LOP_PERMUTE, "permute", Nk, h, none, none), NOSAVE);
  ptdp_layer_op fc1 = gemm("expert FC1 GEMMs", rows, z->efc1, h, PTDP_PARAM_EXPERT_FC1_WEIGHT,
                           bias ? PTDP_PARAM_EXPERT_FC1_BIAS : none, 0);
  fc1.batch = E;
  add(d, fc1, SAVES(PTDP_BUF_MOE_FC1_OUT));
  if (bias) add(d, op(PTDP_LOP_BIAS, "expert FC1 bias", Nk, z->efc1, none, PTDP_PARAM_EXPERT_FC1_BIAS), NOSAVE);
  add(d, op(PTDP_LOP_ACTIVATION, l->arch.swiglu ? "expert SwiGLU" : "expert GeLU", Nk, z->efl, none, none),
      SAVES(PTDP_BUF_MOE_ACT_OUT));
  ptdp_layer_op fc2 = gemm("expert FC2 GEMMs", rows, h, z->efl, PTDP_PARAM_EXPERT_FC2_WEIGHT,
                           bias ? PTDP_PARAM_EXPERT_FC2_BIAS : none, 1);
  fc2.batch = E;
  add(d, fc2, SAVES(PTDP_BUF_MOE_EXPERT_OUT));
  add(d, op(PTDP_LOP_PERMUTE, "unpermute", Nk, h, none, bias ? PTDP_PARAM_EXPERT_FC2_BIAS : none), NOSAVE);
}

void ptdp_layer_describe(const ptdp_layer_shape *l, ptdp_layer_desc *d)
{
  memset(d, 0, sizeof *d);
  d->shape = *l;
  const ptdp_rank_shape *z = &l->r;
  const int rms = l->arch.norm == PTDP_NORM_RMSNORM, bias = !l->arch.no_linear_bias;
  const double N = (double)z->N, Nl = (double)z->Nl, h = z->h;
  const int none = -1;
  /* attention */
  add(d, op(PTDP_LOP_NORM, rms ? "rmsnorm 1" : "layernorm 1", Nl, h, PTDP_PARAM_LN1_WEIGHT,
            rms ? none : PTDP_PARAM_LN1_BIAS),
      SAVES(PTDP_BUF_LAYER_INPUT, PTDP_BUF_LN1_MEAN, PTDP_BUF_LN1_RSTD, PTDP_BUF_LN1_OUT));
  add(d, op(PTDP_LOP_TP_IN, "TP f (QKV input)", N, h, none, none), NOSAVE);
  add(d, gemm("QKV GEMM", N, z->qkv, h, PTDP_PARAM_QKV_WEIGHT, bias ? PTDP_PARAM_QKV_BIAS : none, 0),
      SAVES(PTDP_BUF_QKV));
  if (bias) add(d, op(PTDP_LOP_BIAS, "QKV bias", N, z->qkv, none, PTDP_PARAM_QKV_BIAS), NOSAVE);
  /* the queries (hl) and the keys ((qkv - hl) / 2: one head per group) turned in place */
  if (l->arch.position == PTDP_POS_ROPE) add(d, op(PTDP_LOP_ROPE, "RoPE", N, z->hl + (z->qkv - z->hl) / 2, none, none), NOSAVE);
  ptdp_layer_op core = op(PTDP_LOP_ATTENTION, "attention core", z->s, z->s, none, none);
  core.K = z->hd;
  core.batch = (double)z->b * z->al;
  add(d, core,
      SAVES(PTDP_BUF_ATTN_PROBS, PTDP_BUF_ATTN_MASK, PTDP_BUF_ATTN_PROBS_DROPPED, PTDP_BUF_ATTN_CONTEXT,
            PTDP_BUF_ATTN_LSE));
  add(d, gemm("projection GEMM", N, h, z->hl, PTDP_PARAM_PROJ_WEIGHT, bias ? PTDP_PARAM_PROJ_BIAS : none, 1), NOSAVE);
  add(d, op(PTDP_LOP_TP_OUT, z->sp ? "TP reduce-scatter (attention)" : "TP all-reduce (attention)", N, h, none, none),
      NOSAVE);
  add(d, op(PTDP_LOP_RESIDUAL, "bias-dropout-add 1", Nl, h, none, bias ? PTDP_PARAM_PROJ_BIAS : none),
      SAVES(PTDP_BUF_ATTN_RESID_MASK, PTDP_BUF_LN2_INPUT));
  /* MLP */
  add(d, op(PTDP_LOP_NORM, rms ? "rmsnorm 2" : "layernorm 2", Nl, h, PTDP_PARAM_LN2_WEIGHT,
            rms ? none : PTDP_PARAM_LN2_BIAS),
      SAVES(PTDP_BUF_LN2_MEAN, PTDP_BUF_LN2_RSTD, PTDP_BUF_LN2_OUT));
  add(d, op(PTDP_LOP_TP_IN, "TP f (MLP input)", N, h, none, none), NOSAVE);
  if (l->moe) moe_ops(d, l);
  else {
    add(d, gemm("FC1 GEMM", N, z->fc1, h, PTDP_PARAM_FC1_WEIGHT, bias ? PTDP_PARAM_FC1_BIAS : none, 0),
        SAVES(PTDP_BUF_FC1_OUT));
    add(d, op(PTDP_LOP_ACTIVATION, l->arch.swiglu ? "SwiGLU" : "GeLU", N, z->fl, none, bias ? PTDP_PARAM_FC1_BIAS : none),
        SAVES(PTDP_BUF_GELU_OUT));
    add(d, gemm("FC2 GEMM", N, h, z->fl, PTDP_PARAM_FC2_WEIGHT, bias ? PTDP_PARAM_FC2_BIAS : none, 1), NOSAVE);
  }
  add(d, op(PTDP_LOP_TP_OUT, z->sp ? "TP reduce-scatter (MLP)" : "TP all-reduce (MLP)", N, h, none, none), NOSAVE);
  add(d, op(PTDP_LOP_RESIDUAL, "bias-dropout-add 2", Nl, h, none, bias && !l->moe ? PTDP_PARAM_FC2_BIAS : none),
      SAVES(PTDP_BUF_MLP_RESID_MASK));
}

double ptdp_layer_desc_macs(const ptdp_layer_desc *d)
{
  double macs = 0;
  for (int i = 0; i < d->n; i++) {
    const ptdp_layer_op *o = &d->op[i];
    if (o->kind == PTDP_LOP_GEMM) macs += o->batch * o->M * o->N * o->K;
    if (o->kind == PTDP_LOP_ATTENTION) macs += 2 * o->batch * o->M * o->N * o->K; /* scores, then over V */
  }
  return macs;
}

double ptdp_layer_desc_tp_elems(const ptdp_layer_desc *d, int forward_again)
{
  if (d->shape.r.t <= 1) return 0;
  const int sp = d->shape.r.sp;
  double units = 0;
  for (int i = 0; i < d->n; i++) {
    const ptdp_layer_op *o = &d->op[i];
    double fwd = 0, bwd = 0;
    if (o->kind == PTDP_LOP_TP_IN) {
      fwd = sp ? 1 : 0;        /* all-gather of the input */
      bwd = sp ? 1 + 1 : 2;    /* reduce-scatter (all-reduce) of its gradient; SP: the input again */
    } else if (o->kind == PTDP_LOP_TP_OUT) {
      fwd = sp ? 1 : 2;        /* reduce-scatter (all-reduce) of the partial sums */
      bwd = sp ? 1 : 0;        /* all-gather of the output gradient */
    } else if (o->kind == PTDP_LOP_ROUTE) {
      units += 2 * o->M * o->K; /* backward: the all-reduce of the probabilities' gradient [N, k] */
    }
    units += (fwd * (forward_again ? 2 : 1) + bwd) * o->M * o->N;
  }
  return units;
}

double ptdp_layer_desc_saved_bytes(const ptdp_layer_desc *d)
{
  const ptdp_layer_shape *l = &d->shape;
  const double unit[3] = {l->bytes > 0 ? l->bytes : 4, 4, 1};
  double bytes = 0;
  for (int i = 0; i < d->n; i++)
    for (int k = 0; k < d->op[i].nsave; k++) {
      const ptdp_lop_save *s = &d->op[i].save[k];
      if (l->recompute == PTDP_RECOMPUTE_FULL && s->part != PTDP_SAVE_IN) continue;
      if (l->recompute == PTDP_RECOMPUTE_SELECTIVE && s->part == PTDP_SAVE_CORE) continue;
      bytes += s->elems * unit[s->unit];
    }
  return bytes;
}
