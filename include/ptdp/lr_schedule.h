/* Megatron's learning-rate schedule (OptimizerParamScheduler): linear warmup over `warmup`
 * iterations, then constant, linear or cosine decay to min_lr at decay_iters.  As in Megatron,
 * iteration n + 1 runs with the rate reached after n completed iterations. */
#ifndef PTDP_LR_SCHEDULE_H
#define PTDP_LR_SCHEDULE_H

typedef enum { PTDP_LR_CONSTANT = 0, PTDP_LR_LINEAR, PTDP_LR_COSINE } ptdp_lr_decay_style;

typedef struct {
  double lr, min_lr;
  long long warmup, decay_iters;
  ptdp_lr_decay_style style;
} ptdp_lr_schedule;

/* Learning rate after n completed iterations. */
double ptdp_lr_at(const ptdp_lr_schedule *s, long long n);

#endif
