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
  return ptdp_model_flops_of(B, s, m, V, &d);
}
