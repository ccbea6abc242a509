/* The model's loss bookkeeping: the mean cross-entropy losses of the micro-batches whose head
 * forward ran, kept until the layers above take them (ptdp_gpt_take_losses).
 *
 * On a backend with xent_loss a micro-batch's loss stays on the device (the model's work.losses,
 * one slot per micro-batch of an iteration) and the host reads the pending ones in one copy and
 * one wait; the per-micro-batch wait this replaces kept the host from queueing work ahead.  On
 * another backend the host copies the reduced statistics [3 N] (row max, sum-exp, target logit)
 * and sums loss_r = log(sumexp_r) + max_r - target_r over the N rows itself. */
#ifndef PTDP_LOSS_H
#define PTDP_LOSS_H

typedef struct {
  double sum;             /* the losses already on the host, summed in forward order */
  int count;              /* every loss recorded since the last take: on the host and pending */
  int pending, cap;       /* losses waiting on the device; cap = max(m, 1) device slots */
  long long *sample0;     /* [cap] each pending micro-batch's first sample */
  float *host;            /* [cap] their host copy */
  float *host_xent;       /* [3 N] host copy of the loss statistics (a backend without xent_loss) */
} ptdp_gpt_losses;

struct ptdp_gpt;
/* The sum of the mean losses of the micro-batches whose head forward ran since the last call (or
 * ptdp_gpt_drop_losses), in forward order, and their count; 0 and 0 on a rank without the head.
 * A non-finite loss is an error naming its micro-batch's first sample. */
int ptdp_gpt_take_losses(struct ptdp_gpt *m, double *sum, int *count);
void ptdp_gpt_drop_losses(struct ptdp_gpt *m); /* forget them (a run that failed part way) */

#endif
