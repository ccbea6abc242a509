/* Loss scaling for fp16 (and a fixed scale for bf16 where asked), as Megatron's grad scaler does it.
 *
 * The loss is multiplied by the scale before the backward pass so that small gradients survive
 * fp16's range; the optimizer multiplies the fp32 main gradients by 1 / scale and checks them
 * for inf and NaN first.  A step whose gradients hold one is skipped (no update, the optimizer's
 * step count and learning rate stay where they were) and counts as a skipped iteration.
 *
 * Dynamic scaling (Megatron's DynamicGradScaler, keys initial-loss-scale, min-loss-scale,
 * loss-scale-window, hysteresis), after each step's check:
 *   overflow:  growth_tracker = 0; hysteresis_tracker -= 1; when hysteresis_tracker <= 0 the
 *              scale halves, never below min_scale;
 *   clean:     growth_tracker += 1; when it reaches the window: growth_tracker = 0,
 *              hysteresis_tracker = hysteresis, and the scale doubles.
 * So the first hysteresis - 1 overflows of a run of them leave the scale alone, and the tracker is
 * restored only when the scale grows (not after every clean step): Megatron's behaviour, kept.
 * A constant scaler (key loss-scale) never changes and still skips steps that overflow. */
#ifndef PTDP_GRAD_SCALER_H
#define PTDP_GRAD_SCALER_H

typedef enum { PTDP_SCALER_NONE = 0, PTDP_SCALER_CONSTANT, PTDP_SCALER_DYNAMIC } ptdp_scaler_kind;

typedef struct {
  ptdp_scaler_kind kind;
  double scale, min_scale;
  long long window;         /* loss-scale-window */
  int hysteresis;
  long long growth_tracker; /* clean steps since the last overflow or growth */
  int hysteresis_tracker;   /* overflows left before the scale backs off */
} ptdp_grad_scaler;

/* kind NONE: scale 1, nothing checked (fp32, and bf16 without loss-scale, as Megatron). */
void ptdp_grad_scaler_none(ptdp_grad_scaler *s);
void ptdp_grad_scaler_constant(ptdp_grad_scaler *s, double scale);
void ptdp_grad_scaler_dynamic(ptdp_grad_scaler *s, double initial, double min_scale, long long window,
                              int hysteresis);
/* After a step's check: found_inf 1 if any gradient was inf or NaN. */
void ptdp_grad_scaler_update(ptdp_grad_scaler *s, int found_inf);
/* 1 when steps are checked (and skipped) at all. */
int ptdp_grad_scaler_active(const ptdp_grad_scaler *s);

#endif
