/* Model FLOPs per iteration: see include/ptdp/flops.h. */
#include "ptdp/flops.h"

double ptdp_model_flops(long long B, long long s, const ptdp_model_shape *m, long long V)
{
  const double h = m->hidden, a = m->heads, g = ptdp_model_query_groups(m), hd = ptdp_model_head_dim(m);
  const double f = m->ffn, S = (double)s;
  const double mlp = (m->arch.swiglu ? 3 : 2) * h * f; /* SwiGLU: gate, up and down */
  const double layer = h * (a + 2 * g) * hd + 2 * S * a * hd + a * hd * h + mlp; /* multiply-adds per token */
  return 3.0 * 2.0 * (double)B * S * ((double)m->num_layers * layer + h * (double)V);
}
