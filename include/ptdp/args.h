/* The inputs of a training run: one struct, filled from defaults, a deck and the command line
 * (ptdp/options.h), echoed at start.  Keys are Megatron-LM's argument names. */
#ifndef PTDP_ARGS_H
#define PTDP_ARGS_H

#include "ptdp/options.h"

typedef struct {
  /* model */
  long long num_layers, hidden_size, num_attention_heads, ffn_hidden_size, seq_length, max_position_embeddings;
  long long vocab_size, make_vocab_size_divisible_by;
  double init_method_std, hidden_dropout, attention_dropout, layernorm_epsilon;
  /* batches and iterations */
  long long micro_batch_size, global_batch_size, train_iters, seed, log_interval, eval_interval, eval_iters;
  /* optimizer and learning rate */
  double lr, min_lr, weight_decay, clip_grad, adam_beta1, adam_beta2, adam_eps;
  long long lr_warmup_iters, lr_decay_iters;
  char lr_decay_style[PTDP_OPT_STRLEN];
  /* parallelism */
  long long tensor_model_parallel_size, pipeline_model_parallel_size, num_layers_per_virtual_pipeline_stage;
  char parallel_order[PTDP_OPT_STRLEN], pipeline_schedule[PTDP_OPT_STRLEN];
  int sequence_parallel, use_distributed_optimizer;
  long long ddp_bucket_size;
  /* recomputation */
  char recompute_granularity[PTDP_OPT_STRLEN], recompute_method[PTDP_OPT_STRLEN];
  long long recompute_num_layers;
  /* data */
  int mock_data;
  char data_path[PTDP_OPT_STRLEN], split[PTDP_OPT_STRLEN], data_cache_path[PTDP_OPT_STRLEN];
  char flat_data_dtype[PTDP_OPT_STRLEN], tokenizer_type[PTDP_OPT_STRLEN];
  char vocab_file[PTDP_OPT_STRLEN], merge_file[PTDP_OPT_STRLEN];
  /* outputs and diagnostics */
  char debug_dump[PTDP_OPT_STRLEN];
  long long num_threads;
} ptdp_args;

/* Fill args from argv (after the program name).  Collective-safe: every rank parses the same
 * text and reaches the same verdict. */
int ptdp_args_parse(ptdp_args *a, ptdp_options *o, int argc, char **argv);
/* Refuse inconsistent settings before any work starts; world is the number of ranks. */
int ptdp_args_validate(const ptdp_args *a, int world);
/* The option table (for --help and the README). */
void ptdp_args_print_help(FILE *out);
/* Echo every input, marking the ones set by the deck or command line. */
void ptdp_args_print(const ptdp_options *o, FILE *out);

/* Warn (rank 0) about keys given but without effect in this configuration. */
void ptdp_args_warn_unused(const ptdp_options *o, const ptdp_args *a, int world, FILE *out);

/* Derived sizes. */
long long ptdp_args_ffn(const ptdp_args *a);
/* Vocabulary padded to a multiple of make-vocab-size-divisible-by x t (Megatron). */
long long ptdp_args_padded_vocab(const ptdp_args *a, long long vocab);

#endif
