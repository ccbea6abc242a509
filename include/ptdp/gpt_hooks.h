/* What the layers above the model hear from it, set through ptdp_gpt_on_grads_ready and
 * ptdp_gpt_capture_logits only: the data-parallel module is told when a parameter's gradient is
 * final (the chunk's last backward of an iteration), so that its bucket's reduction can start
 * while the backward pass goes on; the debug dump asks for the logits of the next head forward. */
#ifndef PTDP_GPT_HOOKS_H
#define PTDP_GPT_HOOKS_H

typedef struct {
  int (*grads_ready)(void *ctx, int param);
  void *grads_ready_ctx;
  float *debug_logits;    /* host [N, vocab slice]; cleared once filled */
  int grads_final;        /* within ptdp_gpt_backward: its `last` argument (grads_ready is called) */
} ptdp_gpt_hooks;

struct ptdp_gpt;
/* fn(ctx, i) for each parameter i whose gradient is final; fn NULL: nobody listens. */
void ptdp_gpt_on_grads_ready(struct ptdp_gpt *m, int (*fn)(void *ctx, int param), void *ctx);
/* The next head forward copies its logits [N, this rank's vocabulary columns] to host (fp32). */
void ptdp_gpt_capture_logits(struct ptdp_gpt *m, float *host);

#endif
