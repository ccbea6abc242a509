/* What the layers above hear from the model: see include/ptdp/gpt_hooks.h. */
#include "model_internal.h"

#include "ptdp/error.h"
#include "ptdp/half.h"

#include <stdlib.h>

void ptdp_gpt_on_grads_ready(ptdp_gpt *m, int (*fn)(void *ctx, int param), void *ctx)
{
  m->hooks.grads_ready = fn;
  m->hooks.grads_ready_ctx = ctx;
}

/* Tell the owner of the gradient buckets that params [first, end) of the table are final. */
int ptdp_gpt_grads_ready(ptdp_gpt *m, int first, int end)
{
  if (!m->hooks.grads_final || !m->hooks.grads_ready || first < 0) return 0;
  for (int i = first; i < end; i++) PTDP_CALL(m->hooks.grads_ready(m->hooks.grads_ready_ctx, i));
  return 0;
}

void ptdp_gpt_capture_logits(ptdp_gpt *m, float *host) { m->hooks.debug_logits = host; }

/* The logits to m->hooks.debug_logits (host fp32), widened from the storage type; then clears it. */
int ptdp_gpt_hook_logits(ptdp_gpt *m, const float *logits, size_t n)
{
  ptdp_backend *be = m->be;
  void *host = m->hooks.debug_logits;
  if (m->es != sizeof(float)) PTDP_ALLOC(host, n * m->es > 0 ? n * m->es : 1);
  int err = be->to_host(be, host, logits, n * m->es);
  if (!err) err = be->synchronize(be);
  for (size_t i = 0; !err && host != m->hooks.debug_logits && i < n; i++)
    m->hooks.debug_logits[i] = ptdp_half_load(host, m->cfg.dtype, i);
  if (host != m->hooks.debug_logits) free(host);
  m->hooks.debug_logits = NULL;
  return err;
}
