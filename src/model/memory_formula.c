/* Activation bytes per layer by formula: see include/ptdp/memory_formula.h. */
#include "ptdp/memory_formula.h"

double ptdp_layer_bytes_ptdp(const ptdp_layer_shape *l)
{
  const ptdp_rank_shape *r = &l->r;
  const double N = (double)r->N, Nl = (double)r->Nl, h = r->h, hl = r->hl, fl = r->fl, att = (double)r->att;
  const double E = l->bytes > 0 ? l->bytes : 4; /* the storage type's element */
  if (l->recompute == PTDP_RECOMPUTE_FULL) return E * Nl * h; /* the layer input */
  double bytes = E * (4 * Nl * h)            /* x, LN1 out, x2, LN2 out */
                 + 4 * Nl * (l->rmsnorm ? 2 : 4) /* two norms' 1/std (and LayerNorm's mean), fp32 */
                 + E * (N * (double)r->qkv + N * hl) /* QKV ((al + 2 gl) hd = 3 hl without GQA), context */
                 + E * (N * (double)r->fc1 + N * fl) /* fc1 out (GELU input; SwiGLU's 2 fl), activation out */
                 + (l->hidden_dropout ? 2 * Nl * h : 0); /* two residual dropout masks */
  if (l->flash_attention) return bytes + 4.0 * r->b * r->al * r->s; /* log-sum-exp per query row */
  if (l->recompute != PTDP_RECOMPUTE_SELECTIVE)
    bytes += att * (E + (l->attention_dropout ? E + 1 : 0)); /* softmax; mask + dropout out */
  return bytes;
}

double ptdp_layer_bytes_paper(const ptdp_layer_shape *l)
{
  const ptdp_rank_shape *r = &l->r;
  const double sbh = (double)r->s * r->b * r->h, t = r->t, as_h = (double)r->a * r->s / r->h;
  if (l->recompute == PTDP_RECOMPUTE_FULL) return 2 * sbh;
  double attn = l->recompute == PTDP_RECOMPUTE_SELECTIVE || l->flash_attention ? 0 : 5 * as_h / t;
  return r->sp ? sbh * (34 / t + attn) : sbh * (10 + 24 / t + attn);
}
