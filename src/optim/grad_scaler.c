/* Megatron's loss scaling rule: see include/ptdp/grad_scaler.h. */
#include "ptdp/grad_scaler.h"

#include <string.h>

void ptdp_grad_scaler_none(ptdp_grad_scaler *s)
{
  memset(s, 0, sizeof *s);
  s->kind = PTDP_SCALER_NONE;
  s->scale = s->min_scale = 1.0;
}

void ptdp_grad_scaler_constant(ptdp_grad_scaler *s, double scale)
{
  ptdp_grad_scaler_none(s);
  s->kind = PTDP_SCALER_CONSTANT;
  s->scale = s->min_scale = scale;
}

void ptdp_grad_scaler_dynamic(ptdp_grad_scaler *s, double initial, double min_scale, long long window, int hysteresis)
{
  ptdp_grad_scaler_none(s);
  s->kind = PTDP_SCALER_DYNAMIC;
  s->scale = initial;
  s->min_scale = min_scale;
  s->window = window;
  s->hysteresis = s->hysteresis_tracker = hysteresis;
}

int ptdp_grad_scaler_active(const ptdp_grad_scaler *s) { return s->kind != PTDP_SCALER_NONE; }

void ptdp_grad_scaler_update(ptdp_grad_scaler *s, int found_inf)
{
  if (s->kind != PTDP_SCALER_DYNAMIC) return;
  if (found_inf) {
    s->growth_tracker = 0;
    s->hysteresis_tracker--;
    if (s->hysteresis_tracker <= 0) s->scale = s->scale * 0.5 > s->min_scale ? s->scale * 0.5 : s->min_scale;
    return;
  }
  if (++s->growth_tracker == s->window) {
    s->growth_tracker = 0;
    s->hysteresis_tracker = s->hysteresis;
    s->scale *= 2.0;
  }
}
