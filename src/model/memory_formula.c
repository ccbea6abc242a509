/* Activation bytes per layer by formula: see include/ptdp/memory_formula.h. */
#include "ptdp/memory_formula.h"

double ptdp_layer_bytes_ptdp(const ptdp_layer_shape *l)
{
  const double N = (double)l->s * l->b, Nl = l->sequence_parallel ? N / l->t : N, h = (double)l->h;
  const double hl = h / l->t, fl = (double)l->f / l->t, att = (double)l->b * (l->a / l->t) * l->s * l->s;
  const double E = l->bytes > 0 ? l->bytes : 4; /* the storage type's element */
  if (l->recompute == 1) return E * Nl * h; /* the layer input */
  double bytes = E * (4 * Nl * h)            /* x, LN1 out, x2, LN2 out */
                 + 4 * Nl * 4                /* LN mean and 1/std, two LayerNorms (fp32) */
                 + E * (3 * N * hl + N * hl) /* QKV, attention context */
                 + E * (2 * N * fl)          /* fc1 out (GELU input), GELU out */
                 + (l->hidden_dropout ? 2 * Nl * h : 0); /* two residual dropout masks */
  if (l->recompute != 2) bytes += att * (E + (l->attention_dropout ? E + 1 : 0)); /* softmax; mask + dropout out */
  return bytes;
}

double ptdp_layer_bytes_paper(const ptdp_layer_shape *l)
{
  const double sbh = (double)l->s * l->b * l->h, t = (double)l->t, as_h = (double)l->a * l->s / l->h;
  if (l->recompute == 1) return 2 * sbh;
  double attn = l->recompute == 2 ? 0 : 5 * as_h / t;
  return l->sequence_parallel ? sbh * (34 / t + attn) : sbh * (10 + 24 / t + attn);
}
