/* A GPT- or Llama-family transformer as Megatron-LM builds it, split over the rank grid.
 *
 * The family is the configuration's ptdp_arch (ptdp/params.h): GPT-2's learned positions,
 * LayerNorm, biases, GELU MLP and output layer tied to the word embedding, or Llama's rotary
 * positions, RMSNorm, no biases, SwiGLU MLP, grouped-query attention and untied output, or any
 * mix the keys allow; the layer's operations are listed once in ptdp/layer_desc.h.  Pre-norm
 * blocks (causal self-attention with fused QKV), a final norm, the vocabulary padded to a
 * multiple of make-vocab-size-divisible-by x t.  Tensor parallelism (Shoeybi et al. 2019): QKV
 * and fc1 column-parallel, proj and fc2 row-parallel, vocab-parallel embedding and cross
 * entropy; sequence parallelism (Korthikanti et al. 2022) splits the norm and dropout regions
 * along s.  Pipeline stages hold model chunks of consecutive layers (virtual stage k = chunk p +
 * stage).
 *
 * Activations are [s, b, h] (token row = pos b + sample), so a sequence shard is a contiguous
 * block of rows.  N = s b tokens per micro-batch; Nl = N / t with sequence parallelism, else N. */
#ifndef PTDP_GPT_H
#define PTDP_GPT_H

#include "ptdp/backend.h"
#include "ptdp/gpt_hooks.h"
#include "ptdp/gpt_params.h"
#include "ptdp/grid.h"
#include "ptdp/loss.h"
#include "ptdp/memory.h"
#include "ptdp/memory_formula.h"
#include "ptdp/model_config.h"
#include "ptdp/params.h"
#include "ptdp/plan.h"
#include "ptdp/recompute.h"
#include "ptdp/schedule.h"
#include "ptdp/shape.h"

#include <stdint.h>

/* ptdp_gpt_config, what a model is built from: ptdp/model_config.h (ptdp_model_config_of). */

/* Pointers to one layer's parameters (storage type: into wt) or gradients (fp32: into grad). */
typedef struct {
  float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
  /* a mixture layer's MLP (fc1_w ... fc2_b NULL): the router [E, h] and experts[4 e + q] expert
   * e's fc1 weight, fc1 bias, fc2 weight, fc2 bias (q = 0..3; the biases NULL without them) */
  float *router_w;
  float **experts;
} ptdp_layer_params;

/* Activations of one layer held for the backward pass (NULL when not stored): one field per
 * entry of PTDP_LAYER_ACTIVATIONS (ptdp/plan.h, with their shapes). */
#define PTDP_LAYER_ACTS_FIELD_(kind, type, field, name, part, elems, unit, when) type *field;
typedef struct {
  PTDP_LAYER_ACTIVATIONS(PTDP_LAYER_ACTS_FIELD_)
} ptdp_layer_acts;
#undef PTDP_LAYER_ACTS_FIELD_

/* One micro-batch's state in one chunk. */
typedef struct {
  ptdp_layer_acts *layers; /* nlayers of the chunk */
  float *out;              /* [Nl, h] output of the last layer (final LN input on the head chunk) */
  int32_t *tokens, *targets; /* [N] in (pos, sample) order; embedding and head chunks */
  uint8_t *emb_mask;       /* [Nl, h] */
  float *lnf_mean, *lnf_rstd, *lnf_out; /* [Nl], [Nl], [Nl, h] */
  float *logits;           /* [N, Vl]: logits, then the gradient of the loss w.r.t. them */
  long long sample0;       /* global index of the micro-batch's first sample */
  int busy;
} ptdp_chunk_slot;

/* One transformer layer of a chunk: pointers to its parameters and gradients, and the range of
 * its entries in the parameter table (for telling the data-parallel module they are final). */
typedef struct {
  ptdp_layer_params w, g;
  int param_first, param_end;
} ptdp_gpt_layer_ref;

typedef struct {
  int layer0, nlayers;   /* global index of the first layer, count */
  int has_embedding, has_head;
  ptdp_gpt_layer_ref *layers; /* nlayers */
  ptdp_chunk_slot *slots;     /* plan.slots of them */
} ptdp_chunk;

/* Work buffers shared by all micro-batches (not held between forward and backward). */
typedef struct {
  float *full_a, *full_b;   /* [N, h] gathered inputs, partial sums, their gradients */
  float *shard_a, *shard_b, *shard_c; /* [Nl, h] */
  float *dqkv;              /* [N, 3 hl] */
  float *dctx;              /* [N, hl] */
  float *dfc;               /* [N, fl]; SwiGLU: [N, 2 fl] then the activation's gradient [N, fl] */
  float *attn;              /* [s, s] attention backward */
  float *xent;              /* [4 N] row max, sum-exp, target logit; the slice's own max (t > 1) */
  float *losses;            /* [max(m, 1)] the losses of the micro-batches not yet read (xent_loss) */
  float *grad_a, *grad_b;   /* [Nl, h] gradients flowing between layers (ping-pong) */
  int32_t *pos;             /* [Nl] position of each local token row */
  float *moe_rows_a, *moe_rows_b; /* [N k, h] the mixture's rows in expert order (and gradients) */
  float *moe_dfc;           /* [N k, efc1 (+ efl with SwiGLU)] an expert's fc1 output gradient */
  float *moe_router;        /* [N E + N k] the router logits' and the probabilities' gradients */
  float *rope;              /* [max_pos, rd/2, 2] cos and sin of the rotary angles (fp32) */
  ptdp_layer_acts *recomp;  /* recompute scratch: one layer's activations per recomputed layer of a group */
  int nrecomp;
} ptdp_gpt_work;

/* Parameters outside the layers: table indices (-1 when this rank has none) and pointers. */
typedef struct {
  int index;
  float *w, *g;
} ptdp_gpt_param_ref;

struct ptdp_gpt;
/* The passes of a layer whose kernels depend on the family (LayerNorm or RMSNorm) and on which
 * fused operations the backend has, chosen once by ptdp_gpt_create (src/model/layer_passes.c). */
typedef struct {
  /* the normalisation over rows of h (RMSNorm: mean and bias unused) */
  int (*norm_forward)(struct ptdp_gpt *m, const float *x, const float *w, const float *b, float *y, float *mean,
                      float *rstd, long long rows);
  int (*norm_backward)(struct ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                       const float *rstd, float *dx, float *dw, float *db, long long rows);
  /* dx = the norm's backward of dy, plus res (the residual stream's gradient) */
  int (*norm_backward_add)(struct ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                           const float *rstd, float *dx, float *dw, float *db, long long rows, const float *res);
  /* y = dropout(y + b) + res over rows of h (b NULL: no bias) */
  int (*residual)(struct ptdp_gpt *m, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k,
                  const float *res, long long rows);
  /* the same, then out = norm(y) with weights nw, nb and its statistics */
  int (*residual_norm)(struct ptdp_gpt *m, float *y, const float *b, uint8_t *mask, const ptdp_dropout_key *k,
                       const float *res, long long rows, const float *nw, const float *nb, float *out, float *mean,
                       float *rstd);
  /* dst = the hidden dropout's backward of src, n elements (src kept) */
  int (*dropout_backward_to)(struct ptdp_gpt *m, float *dst, const float *src, const uint8_t *mask, size_t n);
} ptdp_layer_passes;

/* One rank's model.  Read-only after ptdp_gpt_create for everyone but the model itself, except
 * the flat buffers of params (the optimizer, the data-parallel module and checkpoints write
 * them), the hooks (through their setters) and, during an evaluation, cfg's dropout
 * probabilities (ptdp_trainer_evaluate turns them off and back on). */
typedef struct ptdp_gpt {
  /* what it is and where it runs */
  ptdp_gpt_config cfg;
  ptdp_backend *be;
  ptdp_grid *grid;
  ptdp_layer_passes passes; /* the family's and the backend's passes, chosen at creation */
  int t, tp_rank, p, stage;
  ptdp_rank_shape sh;     /* this rank's sizes: local heads and widths, vocabulary slice, token rows */
  size_t es;              /* bytes per element of the storage type */
  /* its parameters: the table and the flat buffers (ptdp/gpt_params.h) */
  ptdp_gpt_params params;
  ptdp_gpt_param_ref wte, output, wpe, lnf_w, lnf_b; /* output: the output layer (the last stage's copy of
                                                         the tied embedding, or untied its own) */
  /* its activations and work space */
  int nchunks;
  ptdp_chunk *chunks;
  ptdp_gpt_work work;
  ptdp_plan plan;          /* every buffer of this rank (ptdp/plan.h) */
  ptdp_memory mem;         /* the allocations of the plan, recorded */
  ptdp_gpt_losses loss;    /* the losses not yet taken (ptdp/loss.h) */
  ptdp_gpt_hooks hooks;    /* what the layers above hear (ptdp/gpt_hooks.h) */
  char nonfinite_weight[192]; /* the first weight of a loaded checkpoint that is not finite (the
                                 checkpoint module sets it; "": none): named when a loss is not */
  float loss_scale;       /* within ptdp_gpt_backward: its loss_scale (the mixture's losses scale as the head's) */
  int recomputing;        /* within a recomputation's forward (its losses are not counted again) */
  double moe_losses;      /* the mixture layers' load-balancing and z losses (coefficients included) of
                             this rank's forwards since ptdp_gpt_take_moe_losses, summed */
} ptdp_gpt;

int ptdp_gpt_create(ptdp_gpt *m, const ptdp_gpt_config *cfg, ptdp_backend *be, ptdp_grid *grid);
void ptdp_gpt_destroy(ptdp_gpt *m);
/* One layer of this rank as the activation-memory formulas see it (ptdp/memory_formula.h). */
ptdp_layer_shape ptdp_gpt_layer_shape(const ptdp_gpt *m);
/* Number of real-vocabulary columns of this rank's logits (its slice of the vocabulary). */
int ptdp_gpt_vocab_columns(const ptdp_gpt *m);

/* Forward one micro-batch through chunk c, activation slot `slot`.  tokens/targets: [N] in
 * (pos, sample) order, needed on the embedding / head chunk (NULL elsewhere).  On other chunks
 * the input must already be in ptdp_gpt_input(m, c, slot). */
int ptdp_gpt_forward(ptdp_gpt *m, int c, int slot, const int32_t *tokens, const int32_t *targets, long long sample0);
/* Backward of the same: dout [Nl, h] the gradient w.r.t. the chunk's output (NULL on the head
 * chunk, whose loss gradient is scaled by loss_scale); on return *dinput (unless the chunk has
 * the embedding) points at the gradient w.r.t. the chunk input, valid until the next call.
 * last: this is the chunk's last backward of the iteration, so its gradients become final (the
 * model then tells grads_ready, which starts data-parallel reductions). */
int ptdp_gpt_backward(ptdp_gpt *m, int c, int slot, const float *dout, float loss_scale, int last, float **dinput);
float *ptdp_gpt_input(ptdp_gpt *m, int c, int slot);
/* Free a slot without a backward pass (evaluation). */
void ptdp_gpt_release(ptdp_gpt *m, int c, int slot);
float *ptdp_gpt_output(ptdp_gpt *m, int c, int slot);

/* One pass through a transformer layer's forward: the one definition of the block, shared by
 * training (a micro-batch: sequence parallelism, dropout, activations kept for the backward) and
 * inference (n new token rows against a key/value cache, src/generate/infer.c).  What differs
 * between them is said here: the rows, the collectives, and the attention core. */
typedef struct ptdp_block_pass ptdp_block_pass;
struct ptdp_block_pass {
  long long N;       /* token rows through the tensor-parallel GEMMs */
  long long Nl;      /* rows of the LayerNorm, dropout and residual regions: N / t under SP, else N */
  int sp;            /* sequence parallelism: all-gather before the column-parallel GEMMs,
                        reduce-scatter after the row-parallel ones (else all-reduce in place) */
  float *full;       /* [N, h] work space under SP */
  long long sample0; /* global index of the first sample: the dropout masks' key */
  long long pos0;    /* position of row 0 (rotary embedding: row r is at pos0 + r / b) */
  int b;             /* samples per position row */
  /* the attention core: a->qkv [N, 3 hl] to a->ctx [N, hl] */
  int (*attention)(const ptdp_block_pass *p, ptdp_gpt *m, int layer, const ptdp_layer_acts *a);
  void *ctx;         /* the attention core's own state (inference: the generator) */
};
/* Global layer `layer` with weights w: from a->x [Nl, h] to out [Nl, h], writing the activations
 * a points at (which may share buffers where nothing reads them back, as in inference).
 * Dropout follows the model's configuration (none in inference). */
int ptdp_gpt_block_forward(ptdp_gpt *m, int layer, const ptdp_layer_params *w, const ptdp_block_pass *p,
                           const ptdp_layer_acts *a, float *out);

/* The architecture's normalisation (LayerNorm or RMSNorm: mean and bias unused) over rows of h. */
int ptdp_gpt_norm_forward(ptdp_gpt *m, const float *x, const float *w, const float *b, float *y, float *mean, float *rstd,
                      long long rows);
int ptdp_gpt_norm_backward(ptdp_gpt *m, const float *dy, const float *x, const float *w, const float *mean,
                       const float *rstd, float *dx, float *dw, float *db, long long rows);

/* The output layer of the head chunk: its own tensor (untied, or the last stage's copy of the tied
 * embedding), else the word embedding of the same chunk. */
const ptdp_gpt_param_ref *ptdp_gpt_output_layer(const ptdp_gpt *m);

/* What the pipeline driver may ask of the model (it never reads the slots themselves). */
int ptdp_gpt_num_slots(const ptdp_gpt *m);                 /* activation slots per chunk */
int ptdp_gpt_slot_busy(const ptdp_gpt *m, int c, int slot); /* between its forward and backward */
/* The sum of the mixture layers' load-balancing and z losses over this rank's layers and the
 * forwards since the last call (part of the training loss, not of the reported one); 0 without
 * experts. */
double ptdp_gpt_take_moe_losses(ptdp_gpt *m);
int ptdp_gpt_chunk_has_embedding(const ptdp_gpt *m, int c);
int ptdp_gpt_chunk_has_head(const ptdp_gpt *m, int c);

#endif
