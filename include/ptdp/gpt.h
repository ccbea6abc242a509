/* GPT-2 as Megatron-LM builds it, split over the rank grid.
 *
 * Learned word and position embeddings, pre-LayerNorm blocks (causal self-attention with fused
 * QKV, GELU MLP), final LayerNorm, output layer tied to the word embedding, vocabulary padded to
 * a multiple of make-vocab-size-divisible-by x t.  Tensor parallelism (Shoeybi et al. 2019):
 * QKV and fc1 column-parallel, proj and fc2 row-parallel, vocab-parallel embedding and cross
 * entropy; sequence parallelism (Korthikanti et al. 2022) splits LayerNorm/dropout regions along
 * s.  Pipeline stages hold model chunks of consecutive layers (virtual stage k = chunk p + stage).
 *
 * Activations are [s, b, h] (token row = pos b + sample), so a sequence shard is a contiguous
 * block of rows.  N = s b tokens per micro-batch; Nl = N / t with sequence parallelism, else N. */
#ifndef PTDP_GPT_H
#define PTDP_GPT_H

#include "ptdp/backend.h"
#include "ptdp/grid.h"
#include "ptdp/memory.h"
#include "ptdp/recompute.h"

#include <stdint.h>

typedef struct {
  int num_layers, hidden, heads, ffn, seq, max_pos, micro_batch;
  long long vocab, padded_vocab;
  float eps, hidden_dropout, attn_dropout, init_std;
  uint64_t seed;
  int sequence_parallel;
  int chunks;            /* v: model chunks per pipeline stage (1 unless interleaved) */
  int max_in_flight;     /* activation slots per chunk (from the schedule) */
  ptdp_recompute recompute;
  ptdp_recompute_method recompute_method;
  int recompute_num_layers;
  long long bucket_elems; /* gradient elements per data-parallel bucket (ddp-bucket-size) */
  int dp_size;            /* d: every bucket is padded to a multiple of 16 d elements */
} ptdp_gpt_config;

/* A data-parallel gradient bucket: a contiguous range [lo, hi) of the flat buffers, of whole
 * parameters, reduced as one message.  Buckets are formed in reverse parameter order (the order
 * the backward pass completes gradients); the tied word embedding has a bucket of its own,
 * reduced after the pipeline has finished (its two copies are summed first). */
typedef struct {
  long long lo, hi;
  int nparams;
  int late;       /* the embedding bucket */
  int remaining;  /* parameters whose gradient is not final yet (this iteration) */
  int started;
  ptdp_comm_req req;
} ptdp_bucket;

/* How a parameter's global tensor is split across TP ranks. */
typedef enum { PTDP_SPLIT_NONE = 0, PTDP_SPLIT_ROWS = 1, PTDP_SPLIT_COLS = 2 } ptdp_split;

typedef struct {
  char name[96];        /* Megatron-core name, e.g. decoder.layers.3.self_attention.linear_qkv.weight */
  long long offset;     /* into the flat local parameter buffer (elements) */
  long long rows, cols; /* local shape (cols = 1 for vectors) */
  long long grows, gcols;
  ptdp_split split;
  int no_decay;      /* biases and LayerNorm: no weight decay */
  int tp_replicated; /* every TP rank holds the same values */
  int sp_partial;    /* with sequence parallelism its gradient is a partial sum over TP */
  int tied_copy;     /* the last stage's copy of the word embedding (p > 1) */
  int embedding;     /* the word embedding (either copy) */
  int bucket;        /* index of its gradient bucket */
  int tensor_id;     /* key of its initial values */
  int init;          /* 0 zero, 1 one, 2 normal(std), 3 normal(std / sqrt(2 L)) */
} ptdp_param;

/* Pointers to one layer's parameters (or gradients). */
typedef struct {
  float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} ptdp_layer_params;

/* Activations of one layer held for the backward pass (NULL when not stored). */
typedef struct {
  float *x;                      /* [Nl, h] layer input = LN1 input */
  float *ln1_mean, *ln1_rstd;    /* [Nl] */
  float *ln1_out;                /* [Nl, h] QKV input (a shard under SP; re-gathered in backward) */
  float *qkv;                    /* [N, 3 hl] */
  float *probs;                  /* [b, al, s, s] softmax output */
  uint8_t *attn_mask;            /* [b, al, s, s] attention dropout mask */
  float *probs_drop;             /* [b, al, s, s] dropout output (aliases probs when p = 0) */
  float *ctx;                    /* [N, hl] proj input */
  uint8_t *mask1;                /* [Nl, h] attention residual dropout mask */
  float *x2;                     /* [Nl, h] LN2 input */
  float *ln2_mean, *ln2_rstd;    /* [Nl] */
  float *ln2_out;                /* [Nl, h] fc1 input */
  float *fc1;                    /* [N, fl] GELU input */
  float *gelu;                   /* [N, fl] fc2 input */
  uint8_t *mask2;                /* [Nl, h] MLP residual dropout mask */
} ptdp_layer_acts;

/* One micro-batch's state in one chunk. */
typedef struct {
  ptdp_layer_acts *layers; /* nlayers of the chunk */
  float *out;              /* [Nl, h] output of the last layer (final LN input on the head chunk) */
  int32_t *tokens, *targets; /* [N] in (pos, sample) order; embedding and head chunks */
  uint8_t *emb_mask;       /* [Nl, h] */
  float *lnf_mean, *lnf_rstd, *lnf_out; /* [Nl], [Nl], [Nl, h] */
  float *logits;           /* [N, Vl]: logits, then the gradient of the loss w.r.t. them */
  long long sample0;       /* global index of the micro-batch's first sample */
  float loss;              /* mean cross entropy of the micro-batch (head chunk) */
  int busy;
} ptdp_chunk_slot;

typedef struct {
  int layer0, nlayers;   /* global index of the first layer, count */
  int has_embedding, has_head;
  ptdp_chunk_slot *slots; /* max_in_flight of them */
} ptdp_chunk;

/* Work buffers shared by all micro-batches (not held between forward and backward). */
typedef struct {
  float *full_a, *full_b;   /* [N, h] gathered inputs, partial sums, their gradients */
  float *shard_a, *shard_b, *shard_c; /* [Nl, h] */
  float *dqkv;              /* [N, 3 hl] */
  float *dctx;              /* [N, hl] */
  float *dfc;               /* [N, fl] */
  float *attn;              /* [s, s] attention backward */
  float *xent;              /* [3 N] row max, sum-exp, target logit */
  float *grad_a, *grad_b;   /* [Nl, h] gradients flowing between layers (ping-pong) */
  int32_t *pos;             /* [Nl] position of each local token row */
  ptdp_layer_acts *recomp;  /* recompute scratch: one layer's activations per recomputed layer of a group */
  int nrecomp;
} ptdp_gpt_work;

typedef struct {
  ptdp_gpt_config cfg;
  ptdp_backend *be;
  ptdp_grid *grid;
  int t, tp_rank, p, stage;
  int al, hd, hl, fl;     /* local heads, head size, local width h/t, local ffn f/t */
  long long vl, v0;       /* local vocab rows and first row */
  int N, Nl;              /* tokens per micro-batch, per rank under SP */
  long long row0;         /* first global token row of this rank's sequence shard */
  int nparams;
  ptdp_param *params;
  long long nelem;        /* local parameter elements */
  long long nalloc;       /* elements allocated: nelem rounded up to a multiple of d (optimizer shards) */
  float *param, *grad;
  int nchunks;
  ptdp_chunk *chunks;
  ptdp_gpt_work work;
  ptdp_memory mem;        /* activation accounting, from the allocations themselves */
  int wte_index, wte_copy_index, wpe_index, lnf_w_index, lnf_b_index;
  int *layer_param0;      /* per chunk-local layer (over all chunks): index of its first parameter */
  int nbuckets;
  ptdp_bucket *buckets;
  /* called when the gradients of params [first, first + count) are final (last micro-batch) */
  int (*grads_ready)(void *ctx, int first, int count);
  void *grads_ready_ctx;
  int grads_final;        /* within ptdp_gpt_backward: its `last` argument */
  float *debug_logits;    /* if set, the next head forward copies its logits [N, V/t] here, then clears it */
} ptdp_gpt;

int ptdp_gpt_create(ptdp_gpt *m, const ptdp_gpt_config *cfg, ptdp_backend *be, ptdp_grid *grid);
void ptdp_gpt_destroy(ptdp_gpt *m);
/* The parameter table of the whole model as one rank would hold it (t = p = 1): names and
 * global shapes, for files with global-shaped datasets.  Caller frees *list. */
int ptdp_gpt_global_params(const ptdp_gpt_config *cfg, ptdp_param **list, int *n);
/* Set every parameter from its global-index key (layout independent). */
int ptdp_gpt_init_params(ptdp_gpt *m);
/* Pointers into base (m->param or m->grad) for chunk c's layer i. */
ptdp_layer_params ptdp_gpt_layer(const ptdp_gpt *m, int chunk, int i, float *base);

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

/* What the pipeline driver may ask of the model (it never reads the slots themselves). */
int ptdp_gpt_num_slots(const ptdp_gpt *m);                 /* activation slots per chunk */
int ptdp_gpt_slot_busy(const ptdp_gpt *m, int c, int slot); /* between its forward and backward */
double ptdp_gpt_slot_loss(const ptdp_gpt *m, int c, int slot); /* head chunk, after the forward */
int ptdp_gpt_chunk_has_embedding(const ptdp_gpt *m, int c);
int ptdp_gpt_chunk_has_head(const ptdp_gpt *m, int c);

#endif
