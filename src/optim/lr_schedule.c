/* The learning-rate schedule: see include/ptdp/lr_schedule.h. */
#include "ptdp/lr_schedule.h"

#include <math.h>

double ptdp_lr_at(const ptdp_lr_schedule *c, long long n)
{
  if (c->warmup > 0 && n <= c->warmup) return c->lr * (double)n / (double)c->warmup;
  if (c->style == PTDP_LR_CONSTANT) return c->lr;
  if (n > c->decay_iters) return c->min_lr;
  double ratio = (double)(n - c->warmup) / (double)(c->decay_iters - c->warmup > 0 ? c->decay_iters - c->warmup : 1);
  double coeff = c->style == PTDP_LR_LINEAR ? 1.0 - ratio : 0.5 * (cos(M_PI * ratio) + 1.0);
  return c->min_lr + coeff * (c->lr - c->min_lr);
}
