/* The model's loss bookkeeping: see include/ptdp/loss.h. */
#include "model_internal.h"

#include "ptdp/error.h"

#include <math.h>
#include <stdlib.h>

int ptdp_gpt_losses_create(ptdp_gpt_losses *l, int cap, long long N)
{
  l->cap = cap > 0 ? cap : 1; /* the plan's work_losses */
  PTDP_ALLOC(l->host_xent, sizeof(float) * 3 * (size_t)N);
  PTDP_ALLOC(l->sample0, sizeof(long long) * (size_t)l->cap);
  PTDP_ALLOC(l->host, sizeof(float) * (size_t)l->cap);
  return 0;
}

void ptdp_gpt_losses_free(ptdp_gpt_losses *l)
{
  free(l->host_xent);
  free(l->sample0);
  free(l->host);
}

static int check_loss(const ptdp_gpt *m, double loss, long long sample0)
{
  PTDP_CHECK_LOCAL(isfinite(loss), "the loss is not finite (%g) at micro-batch starting at sample %lld%s%s%s", loss,
                   sample0, m->nonfinite_weight[0] ? " (the checkpoint loaded holds a weight that is not finite: " : "",
                   m->nonfinite_weight, m->nonfinite_weight[0] ? ")" : "");
  return 0;
}

/* The pending losses to the host (one copy, one wait), checked and added in forward order. */
static int read_pending(ptdp_gpt *m)
{
  ptdp_backend *be = m->be;
  const int n = m->loss.pending;
  if (n == 0) return 0;
  m->loss.pending = 0;
  PTDP_CALL(be->to_host(be, m->loss.host, m->work.losses, sizeof(float) * (size_t)n));
  PTDP_CALL(be->synchronize(be));
  for (int i = 0; i < n; i++) {
    PTDP_CALL(check_loss(m, m->loss.host[i], m->loss.sample0[i]));
    m->loss.sum += m->loss.host[i];
  }
  return 0;
}

/* The micro-batch's mean loss from the reduced statistics: left on the device by xent_loss (read
 * at the run's end, or here when its slots are full), else computed on the host from a copy of
 * the statistics [3 N], which waits for the device. */
int ptdp_gpt_record_loss(ptdp_gpt *m, const ptdp_chunk_slot *sl, const float *mx, const float *se, const float *tg)
{
  ptdp_backend *be = m->be;
  const int N = m->sh.N;
  m->loss.count++;
  if (be->xent_loss) {
    if (m->loss.pending == m->loss.cap) PTDP_CALL(read_pending(m));
    PTDP_CALL(be->xent_loss(be, mx, se, tg, N, m->work.losses + m->loss.pending));
    m->loss.sample0[m->loss.pending++] = sl->sample0;
    return 0;
  }
  float *hx = m->loss.host_xent;
  PTDP_CALL(be->to_host(be, hx, mx, sizeof(float) * 3 * (size_t)N));
  PTDP_CALL(be->synchronize(be));
  double loss = 0;
  for (int r = 0; r < N; r++) loss += log((double)hx[N + r]) + hx[r] - hx[2 * N + r];
  const float l = (float)(loss / N);
  PTDP_CALL(check_loss(m, l, sl->sample0));
  m->loss.sum += l;
  return 0;
}

int ptdp_gpt_take_losses(ptdp_gpt *m, double *sum, int *count)
{
  const int err = read_pending(m);
  *sum = err ? 0.0 : m->loss.sum;
  if (count) *count = err ? 0 : m->loss.count;
  ptdp_gpt_drop_losses(m);
  return err;
}

void ptdp_gpt_drop_losses(ptdp_gpt *m)
{
  m->loss.sum = 0;
  m->loss.count = m->loss.pending = 0;
}
