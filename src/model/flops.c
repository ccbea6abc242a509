/* Model FLOPs per iteration: see include/ptdp/flops.h. */
#include "ptdp/flops.h"

#include "ptdp/layer_desc.h"

double ptdp_model_flops_of(long long B, long long s, const ptdp_model_shape *m, long long V, const ptdp_layer_desc *d)
{
  const double h = m->hidden, S = (double)s;
  /* multiply-adds per token: the description's at t = 1 over its s b rows (whole integers: each
   * term is a multiple of the rows, so the quotient is exact) */
  const double layer = ptdp_layer_desc_macs(d) / (double)d->shape.r.N;
  return 3.0 * 2.0 * (double)B * S * ((double)m->num_layers * layer + h * (double)V);
}

double ptdp_model_flops(long long B, long long s, const ptdp_model_shape *m, long long V)
{
  const ptdp_layer_shape l = {.r = ptdp_rank_shape_of(m, (int)s, 1, 1, 0), .arch = m->arch};
  ptdp_layer_desc d;
  ptdp_layer_describe(&l, &d);
  double f = ptdp_model_flops_of(B, s, m, V, &d);
  int moe = 0; /* the mixture layers: their active experts' GEMMs instead of the dense MLP's */
  for (int i = 0; i < m->num_layers; i++) moe += ptdp_moe_layer(&m->arch, i);
  if (moe) {
    ptdp_layer_shape lm = l;
    lm.moe = 1;
    ptdp_layer_desc dm;
    ptdp_layer_describe(&lm, &dm);
    f += 3.0 * 2.0 * (double)B * (double)s * moe * (ptdp_layer_desc_macs(&dm) - ptdp_layer_desc_macs(&d)) / (double)d.shape.r.N;
  }
  return f;
}
