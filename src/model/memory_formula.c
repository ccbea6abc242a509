/* Activation bytes per layer by formula: see include/ptdp/memory_formula.h. */
#include "ptdp/memory_formula.h"

double ptdp_layer_bytes_ptdp(const ptdp_layer_shape *l)
{
  ptdp_layer_desc d;
  ptdp_layer_describe(l, &d);
  return ptdp_layer_desc_saved_bytes(&d);
}

double ptdp_layer_bytes_paper(const ptdp_layer_shape *l)
{
  const ptdp_rank_shape *r = &l->r;
  const double sbh = (double)r->s * r->b * r->h, t = r->t, as_h = (double)r->a * r->s / r->h;
  if (l->recompute == PTDP_RECOMPUTE_FULL) return 2 * sbh;
  double attn = l->recompute == PTDP_RECOMPUTE_SELECTIVE || l->flash_attention ? 0 : 5 * as_h / t;
  return r->sp ? sbh * (34 / t + attn) : sbh * (10 + 24 / t + attn);
}
