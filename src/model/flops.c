/* Model FLOPs per iteration: see include/ptdp/flops.h. */
#include "ptdp/flops.h"

double ptdp_model_flops(long long B, long long s, long long l, long long h, long long V)
{
  double hh = (double)h;
  return 72.0 * (double)B * (double)s * (double)l * hh * hh *
         (1.0 + (double)s / (6.0 * hh) + (double)V / (12.0 * (double)l * hh));
}
