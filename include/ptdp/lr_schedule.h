/* The learning-rate schedule after warmup (Megatron's OptimizerParamScheduler): constant,
 * linear or cosine decay from lr to min-lr over the decay period.  The values are the positions
 * of the choices in lr-decay-style's "constant|linear|cosine". */
#ifndef PTDP_LR_SCHEDULE_H
#define PTDP_LR_SCHEDULE_H

typedef enum { PTDP_LR_CONSTANT, PTDP_LR_LINEAR, PTDP_LR_COSINE } ptdp_lr_decay_style;

#endif
