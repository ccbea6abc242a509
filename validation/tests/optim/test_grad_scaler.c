/* The loss scaler against trajectories computed by hand from Megatron's rule
 * (DynamicGradScaler.update in megatron/core/optimizer/grad_scaler.py; ptdp/grad_scaler.h):
 * overflow: growth_tracker = 0, hysteresis_tracker -= 1, halve (not below min) once it is <= 0;
 * clean: growth_tracker += 1, and at the window: growth_tracker = 0, hysteresis_tracker = H, double.
 * Every expected number below was worked out on paper from those two lines, step by step. */
#include "ptdp/grad_scaler.h"

#include "../expect.h"

#include <math.h>

typedef struct {
  int found;
  double scale;   /* after the update */
  long long growth;
  int hyst;
} step;

static void run(const char *name, ptdp_grad_scaler *s, const step *st, int n)
{
  for (int i = 0; i < n; i++) {
    ptdp_grad_scaler_update(s, st[i].found);
    EXPECT(s->scale == st[i].scale && s->growth_tracker == st[i].growth && s->hysteresis_tracker == st[i].hyst,
           "%s step %d (found %d): scale %g growth %lld hysteresis %d, expected %g %lld %d", name, i + 1, st[i].found,
           s->scale, s->growth_tracker, s->hysteresis_tracker, st[i].scale, st[i].growth, st[i].hyst);
  }
}

int main(void)
{
  ptdp_grad_scaler s;
  /* initial 2^40, window 3, hysteresis 2, min 1 */
  ptdp_grad_scaler_dynamic(&s, ldexp(1, 40), 1.0, 3, 2);
  const double S = ldexp(1, 40);
  const step a[] = {
    {1, S, 0, 1},          /* first overflow: the tracker absorbs it */
    {1, S / 2, 0, 0},      /* second in a row: halve */
    {1, S / 4, 0, -1},     /* the tracker stays spent: every further overflow halves */
    {0, S / 4, 1, -1},     /* clean steps count towards the window, the tracker is not restored */
    {1, S / 8, 0, -2},     /* so a lone overflow now halves at once (Megatron's behaviour) */
    {0, S / 8, 1, -2}, {0, S / 8, 2, -2},
    {0, S / 4, 0, 2},      /* third clean step: double, restore the tracker */
    {1, S / 4, 0, 1},      /* one overflow is absorbed again */
    {0, S / 4, 1, 1}, {0, S / 4, 2, 1},
    {0, S / 2, 0, 2},
  };
  run("dynamic", &s, a, (int)(sizeof a / sizeof a[0]));

  /* the floor: min 4 from 16 with hysteresis 1 */
  ptdp_grad_scaler_dynamic(&s, 16, 4, 1000, 1);
  const step b[] = {{1, 8, 0, 0}, {1, 4, 0, -1}, {1, 4, 0, -2}, {0, 4, 1, -2}};
  run("min-loss-scale", &s, b, (int)(sizeof b / sizeof b[0]));

  /* window 1: every clean step doubles */
  ptdp_grad_scaler_dynamic(&s, 1, 1, 1, 2);
  const step c[] = {{0, 2, 0, 2}, {0, 4, 0, 2}, {1, 4, 0, 1}, {0, 8, 0, 2}};
  run("window 1", &s, c, (int)(sizeof c / sizeof c[0]));

  /* constant and none never move */
  ptdp_grad_scaler_constant(&s, 128);
  EXPECT(ptdp_grad_scaler_active(&s), "a constant scaler checks for overflow");
  ptdp_grad_scaler_update(&s, 1);
  ptdp_grad_scaler_update(&s, 0);
  EXPECT(s.scale == 128, "constant scale moved to %g", s.scale);
  ptdp_grad_scaler_none(&s);
  EXPECT(!ptdp_grad_scaler_active(&s) && s.scale == 1, "no scaler: scale %g, active %d", s.scale,
         ptdp_grad_scaler_active(&s));
  return expect_summary("test_grad_scaler");
}
