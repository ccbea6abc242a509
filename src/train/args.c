/* The key table of ptdp-train and the consistency checks of its inputs. */
#include "ptdp/args.h"

#include "ptdp/error.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#define OFF(f) offsetof(ptdp_args, f)
/* The offset of a choice field, which the parser writes as an int: the field's enum must have
 * the size of int, or the build stops here. */
#define ENUM_OFF(f)                                                                              \
  (OFF(f) + 0 * sizeof(struct {                                                                  \
     _Static_assert(sizeof(((ptdp_args *)0)->f) == sizeof(int), #f " must be an int-sized enum"); \
     int unused;                                                                                 \
   }))
#define BIG 1e15

/* When a key has an effect (the table's last column): a predicate over the parsed inputs and the
 * world size n = t p d, and the reason printed when a key given has none.  ALWAYS: every key
 * without a condition. */
#define ALWAYS NULL

static const ptdp_args *in(const void *target) { return target; }
static long long dp_size(const ptdp_args *a, int world)
{
  long long tp = a->tensor_model_parallel_size * a->pipeline_model_parallel_size;
  return tp > 0 ? world / tp : 1;
}
static int full_recompute(const void *a, int world) { return in(a)->recompute_granularity == PTDP_RECOMPUTE_FULL; }
static int lr_decays(const void *a, int world) { return in(a)->lr_decay_style != PTDP_LR_CONSTANT; }
static int tp_split(const void *a, int world) { return in(a)->tensor_model_parallel_size != 1; }
static int pp_split(const void *a, int world) { return in(a)->pipeline_model_parallel_size != 1; }
static int dp_split(const void *a, int world) { return dp_size(in(a), world) != 1; }
static int real_data(const void *a, int world) { return !in(a)->mock_data; }
static int evaluates(const void *a, int world) { return !in(a)->mock_data && in(a)->eval_iters != 0; }
static int gpt2_files_read(const void *a, int world)
{
  return in(a)->vocab_size <= 0 && in(a)->tokenizer_type == PTDP_TOKENIZER_GPT2BPE;
}
static int hf_file_read(const void *a, int world)
{
  return in(a)->vocab_size <= 0 && in(a)->tokenizer_type == PTDP_TOKENIZER_HUGGING_FACE;
}
/* a flat token file: one path, not a weighted list "w1 prefix1 w2 prefix2" */
static int flat_file(const void *a, int world)
{
  return !in(a)->mock_data && in(a)->data_path[0] && !strchr(in(a)->data_path, ' ');
}

static const ptdp_opt_effect if_full_recompute = {full_recompute, "recompute-granularity is not full"};
static const ptdp_opt_effect if_lr_decays = {lr_decays, "lr-decay-style is constant"};
static const ptdp_opt_effect if_tp = {tp_split, "tensor-model-parallel-size is 1"};
static const ptdp_opt_effect if_pp = {pp_split, "pipeline-model-parallel-size is 1"};
static const ptdp_opt_effect if_dp = {dp_split, "the data-parallel size is 1"};
static const ptdp_opt_effect if_split = {real_data, "mock-data has no validation or test split"};
static const ptdp_opt_effect if_index = {real_data, "mock-data builds no index"};
static const ptdp_opt_effect if_evaluation = {evaluates, "there is no evaluation (mock-data or eval-iters 0)"};
static const ptdp_opt_effect if_gpt2_files = {gpt2_files_read,
                                              "vocab-size is given or tokenizer-type is not GPT2BPETokenizer"};
static const ptdp_opt_effect if_hf_file = {hf_file_read,
                                           "vocab-size is given or tokenizer-type is not HuggingFaceTokenizer"};
static int signal_handler(const void *a, int world) { return in(a)->exit_signal_handler; }
static const ptdp_opt_effect if_signal_handler = {signal_handler, "exit-signal-handler is not set"};
static int uses_fp16(const void *a, int world) { return in(a)->fp16; }
static const ptdp_opt_effect if_fp16 = {uses_fp16, "fp16 is not set"};
static int uses_half(const void *a, int world) { return in(a)->fp16 || in(a)->bf16; }
static const ptdp_opt_effect if_half = {uses_half, "neither fp16 nor bf16 is set"};
static int on_cuda(const void *a, int world) { return in(a)->backend == PTDP_BACKEND_CUDA; }
static const ptdp_opt_effect if_cuda = {on_cuda, "backend is not cuda"};
static int uses_rope(const void *a, int world) { return in(a)->position_embedding_type == PTDP_POS_ROPE; }
static const ptdp_opt_effect if_rope = {uses_rope, "position-embedding-type is not rope"};
static int uses_gqa(const void *a, int world) { return in(a)->group_query_attention; }
static const ptdp_opt_effect if_gqa = {uses_gqa, "group-query-attention is not set"};
static int nccl_possible(const void *a, int world)
{
  return in(a)->backend == PTDP_BACKEND_CUDA && in(a)->comm_backend != PTDP_COMM_MPI;
}
static const ptdp_opt_effect if_nccl = {nccl_possible, "collectives do not go through NCCL (backend is not cuda, or "
                                                       "comm-backend is mpi)"};
static int moe(const void *a, int world) { return in(a)->num_experts > 0; }
static const ptdp_opt_effect if_moe = {moe, "num-experts is 0 (every MLP is dense)"};
static int moe_aux(const void *a, int world)
{
  return in(a)->num_experts > 0 && in(a)->moe_router_load_balancing_type == PTDP_MOE_AUX_LOSS;
}
static const ptdp_opt_effect if_moe_aux = {moe_aux, "num-experts is 0 or moe-router-load-balancing-type is not aux_loss"};
static int moe_softmax(const void *a, int world)
{
  return in(a)->num_experts > 0 && in(a)->moe_router_score_function == PTDP_MOE_SOFTMAX;
}
static const ptdp_opt_effect if_moe_softmax = {moe_softmax,
                                               "num-experts is 0 or moe-router-score-function is not softmax"};
static const ptdp_opt_effect if_flat_file = {flat_file, "data-path is not a flat token file"};

/* name, type, offset, default, min, max, choices, help, effect */
static const ptdp_option table[] = {
  /* model */
  {"num-layers", PTDP_OPT_INT, OFF(num_layers), "2", 1, 100000, NULL, "number of transformer layers (l)", ALWAYS},
  {"hidden-size", PTDP_OPT_INT, OFF(hidden_size), "64", 1, 1 << 20, NULL, "transformer hidden size (h)", ALWAYS},
  {"num-attention-heads", PTDP_OPT_INT, OFF(num_attention_heads), "4", 1, 1 << 16, NULL, "attention heads (a)", ALWAYS},
  {"ffn-hidden-size", PTDP_OPT_INT, OFF(ffn_hidden_size), "0", 0, 1 << 22, NULL,
   "MLP hidden size; 0 means 4 x hidden-size (with swiglu, Megatron's int(8 hidden-size / 3 / 64) * 64)", ALWAYS},
  {"seq-length", PTDP_OPT_INT, OFF(seq_length), "64", 1, 1 << 20, NULL, "tokens per sample (s)", ALWAYS},
  {"max-position-embeddings", PTDP_OPT_INT, OFF(max_position_embeddings), "0", 0, 1 << 20, NULL,
   "rows of the position table; 0 means seq-length", ALWAYS},
  {"vocab-size", PTDP_OPT_INT, OFF(vocab_size), "0", 0, 1 << 24, NULL,
   "vocabulary for mock or flat token data; 0 means from the tokenizer (GPT-2: 50257)", ALWAYS},
  {"make-vocab-size-divisible-by", PTDP_OPT_INT, OFF(make_vocab_size_divisible_by), "128", 1, 1 << 16, NULL,
   "pad the vocabulary to a multiple of this times tensor-model-parallel-size", ALWAYS},
  {"init-method-std", PTDP_OPT_REAL, OFF(init_method_std), "0.02", 0, 10, NULL,
   "std of the normal initialisation", ALWAYS},
  {"hidden-dropout", PTDP_OPT_REAL, OFF(hidden_dropout), "0.1", 0, 0.99, NULL,
   "dropout on embeddings and residual branches", ALWAYS},
  {"attention-dropout", PTDP_OPT_REAL, OFF(attention_dropout), "0.1", 0, 0.99, NULL,
   "dropout on attention probabilities", ALWAYS},
  {"layernorm-epsilon", PTDP_OPT_REAL, OFF(layernorm_epsilon), "1e-5", 1e-12, 1, NULL,
   "epsilon of the normalisation layers (LayerNorm or RMSNorm; Megatron's norm-epsilon)", ALWAYS},
  /* the architecture: the defaults are GPT-2's; Llama: RMSNorm, rope, disable-bias-linear, untied */
  {"normalization", PTDP_OPT_ENUM, ENUM_OFF(normalization), "LayerNorm", 0, 0, "LayerNorm|RMSNorm",
   "normalisation layers: LayerNorm (weight and bias), RMSNorm (weight only, no mean subtracted)", ALWAYS},
  {"position-embedding-type", PTDP_OPT_ENUM, ENUM_OFF(position_embedding_type), "learned_absolute", 0, 0,
   "learned_absolute|rope|none",
   "positions: a learned table added to the embeddings (GPT-2), rotary embedding of queries and keys (Llama), or "
   "none", ALWAYS},
  {"rotary-base", PTDP_OPT_REAL, OFF(rotary_base), "10000", 1, 1e12, NULL,
   "rope: base of the rotary angles (Llama 3: 500000)", &if_rope},
  {"rotary-percent", PTDP_OPT_REAL, OFF(rotary_percent), "1.0", 0.01, 1, NULL,
   "rope: the fraction of each head the rotation turns", &if_rope},
  {"rotary-interleaved", PTDP_OPT_BOOL, OFF(rotary_interleaved), "false", 0, 0, NULL,
   "rope: turn adjacent pairs (2i, 2i+1); false: pairs (i, i + d/2), the rotate-half layout of Llama and Hugging "
   "Face",
   &if_rope},
  {"group-query-attention", PTDP_OPT_BOOL, OFF(group_query_attention), "false", 0, 0, NULL,
   "grouped-query attention: the query heads of a group share one key and one value head", ALWAYS},
  {"num-query-groups", PTDP_OPT_INT, OFF(num_query_groups), "1", 1, 1 << 16, NULL,
   "group-query-attention: key/value groups (g): g divides num-attention-heads, tensor-model-parallel-size "
   "divides g", &if_gqa},
  {"kv-channels", PTDP_OPT_INT, OFF(kv_channels), "0", 0, 1 << 16, NULL,
   "the head size; 0 means hidden-size / num-attention-heads", ALWAYS},
  {"swiglu", PTDP_OPT_BOOL, OFF(swiglu), "false", 0, 0, NULL,
   "the MLP's activation is SwiGLU, silu(x W_gate) * (x W_up), fc1 holding [gate; up] (Llama); ffn-hidden-size is "
   "then the width of each", ALWAYS},
  {"disable-bias-linear", PTDP_OPT_BOOL, OFF(disable_bias_linear), "false", 0, 0, NULL,
   "no biases on the linear layers (QKV, projection, fc1, fc2), as Llama", ALWAYS},
  {"untie-embeddings-and-output-weights", PTDP_OPT_BOOL, OFF(untie_embeddings_and_output_weights), "false", 0, 0,
   NULL, "the output layer is a tensor of its own instead of the word embedding", ALWAYS},
  /* the mixture of experts (every expert on every rank; Megatron-core's names and defaults) */
  {"num-experts", PTDP_OPT_INT, OFF(num_experts), "0", 0, 4096, NULL,
   "experts of each mixture-of-experts MLP (E); 0: every MLP is dense", ALWAYS},
  {"moe-router-topk", PTDP_OPT_INT, OFF(moe_router_topk), "2", 1, 4096, NULL,
   "experts each token is routed to (k)", &if_moe},
  {"moe-ffn-hidden-size", PTDP_OPT_INT, OFF(moe_ffn_hidden_size), "0", 0, 1 << 22, NULL,
   "each expert's MLP width; 0 means ffn-hidden-size", &if_moe},
  {"moe-layer-freq", PTDP_OPT_STRING, OFF(moe_layer_freq), "1", 0, 0, NULL,
   "which layers are mixtures: n (every n-th from layer 0) or a pattern with an entry per layer, e.g. "
   "([0]*1+[1]*3)", &if_moe},
  {"moe-router-score-function", PTDP_OPT_ENUM, ENUM_OFF(moe_router_score_function), "softmax", 0, 0,
   "softmax|sigmoid", "the router's scores: softmax of the top-k logits (or of all: pre-softmax), or sigmoid "
   "normalised over the top k", &if_moe},
  {"moe-router-pre-softmax", PTDP_OPT_BOOL, OFF(moe_router_pre_softmax), "false", 0, 0, NULL,
   "softmax over all experts before the top k (the probabilities then do not sum to 1)", &if_moe_softmax},
  {"moe-router-topk-scaling-factor", PTDP_OPT_REAL, OFF(moe_router_topk_scaling_factor), "0", 0, 1e6, NULL,
   "multiply the top-k probabilities by this; 0: no scaling", &if_moe},
  {"moe-router-load-balancing-type", PTDP_OPT_ENUM, ENUM_OFF(moe_router_load_balancing_type), "aux_loss", 0, 0,
   "aux_loss|seq_aux_loss|global_aux_loss|sinkhorn|none",
   "aux_loss: the Switch Transformer's load-balancing loss over each micro-batch's tokens; none; the others are not "
   "built yet", &if_moe},
  {"moe-aux-loss-coeff", PTDP_OPT_REAL, OFF(moe_aux_loss_coeff), "0", 0, 1e6, NULL,
   "weight of the load-balancing loss of each mixture layer in the training loss", &if_moe_aux},
  {"moe-z-loss-coeff", PTDP_OPT_REAL, OFF(moe_z_loss_coeff), "0", 0, 1e6, NULL,
   "weight of the router z-loss, mean over tokens of logsumexp(logits)^2; 0: none", &if_moe},
  {"moe-router-dtype", PTDP_OPT_ENUM, ENUM_OFF(moe_router_dtype), "fp32", 0, 0, "fp32|fp64",
   "the router's element type (fp32; fp64 is not built yet)", &if_moe},
  {"moe-router-enable-expert-bias", PTDP_OPT_BOOL, OFF(moe_router_enable_expert_bias), "false", 0, 0, NULL,
   "aux-loss-free balancing by an expert bias (not built yet)", &if_moe},
  {"moe-router-num-groups", PTDP_OPT_INT, OFF(moe_router_num_groups), "0", 0, 4096, NULL,
   "group-limited routing: expert groups (not built yet)", &if_moe},
  {"moe-router-group-topk", PTDP_OPT_INT, OFF(moe_router_group_topk), "0", 0, 4096, NULL,
   "group-limited routing: groups each token may use (not built yet)", &if_moe},
  {"moe-shared-expert-intermediate-size", PTDP_OPT_INT, OFF(moe_shared_expert_intermediate_size), "0", 0, 1 << 22,
   NULL, "width of the shared experts (not built yet)", &if_moe},
  {"moe-expert-capacity-factor", PTDP_OPT_REAL, OFF(moe_expert_capacity_factor), "0", 0, 1e6, NULL,
   "token dropping above this capacity; 0: dropless (token dropping is not built yet)", &if_moe},
  {"expert-model-parallel-size", PTDP_OPT_INT, OFF(expert_model_parallel_size), "1", 1, 1 << 16, NULL,
   "ranks the experts are split over (EP; only 1, every expert on every rank, is built yet)", ALWAYS},
  {"expert-tensor-parallel-size", PTDP_OPT_INT, OFF(expert_tensor_parallel_size), "0", 0, 1 << 16, NULL,
   "ranks each expert's MLP is split over; 0 means tensor-model-parallel-size (only that is built yet)", &if_moe},
  /* batches and iterations */
  {"micro-batch-size", PTDP_OPT_INT, OFF(micro_batch_size), "2", 1, 1 << 20, NULL,
   "samples per micro-batch (b)", ALWAYS},
  {"global-batch-size", PTDP_OPT_INT, OFF(global_batch_size), "0", 0, 1LL << 40, NULL,
   "samples per iteration (B); 0 means micro-batch-size x data-parallel size", ALWAYS},
  {"train-iters", PTDP_OPT_INT, OFF(train_iters), "10", 0, BIG, NULL, "training iterations", ALWAYS},
  {"seed", PTDP_OPT_INT, OFF(seed), "1234", 0, 4294967295.0, NULL,
   "random seed (weights, dropout, data order)", ALWAYS},
  {"log-interval", PTDP_OPT_INT, OFF(log_interval), "1", 1, BIG, NULL, "iterations between log lines", ALWAYS},
  {"eval-interval", PTDP_OPT_INT, OFF(eval_interval), "1000", 1, BIG, NULL,
   "iterations between evaluations on the validation split", &if_evaluation},
  {"eval-iters", PTDP_OPT_INT, OFF(eval_iters), "10", 0, BIG, NULL,
   "global batches per evaluation; 0 disables evaluation", ALWAYS},
  /* optimizer */
  {"lr", PTDP_OPT_REAL, OFF(lr), "3e-4", 0, 10, NULL, "peak learning rate", ALWAYS},
  {"min-lr", PTDP_OPT_REAL, OFF(min_lr), "0", 0, 10, NULL, "learning rate at the end of decay", &if_lr_decays},
  {"lr-warmup-iters", PTDP_OPT_INT, OFF(lr_warmup_iters), "0", 0, BIG, NULL, "iterations of linear warmup", ALWAYS},
  {"lr-decay-style", PTDP_OPT_ENUM, ENUM_OFF(lr_decay_style), "cosine", 0, 0, "constant|linear|cosine",
   "decay after warmup", ALWAYS},
  {"lr-decay-iters", PTDP_OPT_INT, OFF(lr_decay_iters), "0", 0, BIG, NULL,
   "iterations of decay; 0 means train-iters", &if_lr_decays},
  {"weight-decay", PTDP_OPT_REAL, OFF(weight_decay), "0.01", 0, 10, NULL,
   "AdamW decoupled weight decay (not on biases or LayerNorm)", ALWAYS},
  {"clip-grad", PTDP_OPT_REAL, OFF(clip_grad), "1.0", 0, 1e10, NULL,
   "clip the global gradient norm to this; 0 disables", ALWAYS},
  {"adam-beta1", PTDP_OPT_REAL, OFF(adam_beta1), "0.9", 0, 0.999999, NULL, "Adam first-moment decay", ALWAYS},
  {"adam-beta2", PTDP_OPT_REAL, OFF(adam_beta2), "0.999", 0, 0.999999999, NULL, "Adam second-moment decay", ALWAYS},
  {"adam-eps", PTDP_OPT_REAL, OFF(adam_eps), "1e-8", 1e-30, 1, NULL, "Adam epsilon", ALWAYS},
  /* parallelism */
  {"tensor-model-parallel-size", PTDP_OPT_INT, OFF(tensor_model_parallel_size), "1", 1, 1 << 16, NULL,
   "tensor-parallel ranks (t)", ALWAYS},
  {"pipeline-model-parallel-size", PTDP_OPT_INT, OFF(pipeline_model_parallel_size), "1", 1, 1 << 16, NULL,
   "pipeline stages (p)", ALWAYS},
  {"num-layers-per-virtual-pipeline-stage", PTDP_OPT_INT, OFF(num_layers_per_virtual_pipeline_stage), "0", 0, 100000,
   NULL, "layers per model chunk; selects the interleaved schedule (0: not interleaved)", ALWAYS},
  {"pipeline-schedule", PTDP_OPT_ENUM, ENUM_OFF(pipeline_schedule), "1f1b", 0, 0, "gpipe|1f1b|interleaved",
   "pipeline schedule", &if_pp},
  {"parallel-order", PTDP_OPT_ENUM, ENUM_OFF(parallel_order), "tp-dp-pp", 0, 0, "tp-dp-pp|tp-pp-dp",
   "rank order of the grid, fastest-varying first", ALWAYS},
  {"sequence-parallel", PTDP_OPT_BOOL, OFF(sequence_parallel), "false", 0, 0, NULL,
   "split LayerNorm and dropout regions along the sequence across TP ranks", &if_tp},
  {"use-distributed-optimizer", PTDP_OPT_BOOL, OFF(use_distributed_optimizer), "false", 0, 0, NULL,
   "shard optimizer state across data-parallel ranks (ZeRO-1)", &if_dp},
  {"ddp-bucket-size", PTDP_OPT_INT, OFF(ddp_bucket_size), "40000000", 1, BIG, NULL,
   "gradient elements per data-parallel reduction bucket", &if_dp},
  /* recomputation */
  {"recompute-granularity", PTDP_OPT_ENUM, ENUM_OFF(recompute_granularity), "none", 0, 0, "none|full|selective",
   "activation recomputation", ALWAYS},
  {"recompute-method", PTDP_OPT_ENUM, ENUM_OFF(recompute_method), "uniform", 0, 0, "uniform|block",
   "with full recomputation: which layers are recomputed", &if_full_recompute},
  {"recompute-num-layers", PTDP_OPT_INT, OFF(recompute_num_layers), "1", 1, 100000, NULL,
   "with full recomputation: layers per checkpointed group (uniform) or recomputed layers per stage (block)",
   &if_full_recompute},
  /* data */
  {"mock-data", PTDP_OPT_BOOL, OFF(mock_data), "false", 0, 0, NULL,
   "synthetic samples, a fixed function of (seed, global sample index)", ALWAYS},
  {"data-path", PTDP_OPT_STRING, OFF(data_path), "", 0, 0, NULL,
   "indexed dataset prefix, weighted list 'w1 prefix1 w2 prefix2', or a flat token file", ALWAYS},
  {"split", PTDP_OPT_STRING, OFF(split), "969,30,1", 0, 0, NULL,
   "train,valid,test proportions of the documents", &if_split},
  {"data-cache-path", PTDP_OPT_STRING, OFF(data_cache_path), "", 0, 0, NULL,
   "directory for cached sample indices (default: beside the data)", &if_index},
  {"flat-data-dtype", PTDP_OPT_ENUM, ENUM_OFF(flat_data_dtype), "uint16", 0, 0, "uint16|int32",
   "element type of a flat token file (data-path without .idx/.bin)", &if_flat_file},
  {"tokenizer-type", PTDP_OPT_ENUM, ENUM_OFF(tokenizer_type), "GPT2BPETokenizer", 0, 0,
   "GPT2BPETokenizer|ByteLevel|HuggingFaceTokenizer", "tokenizer that made the data", ALWAYS},
  {"vocab-file", PTDP_OPT_STRING, OFF(vocab_file), "", 0, 0, NULL, "GPT-2 encoder.json", &if_gpt2_files},
  {"merge-file", PTDP_OPT_STRING, OFF(merge_file), "", 0, 0, NULL, "GPT-2 merges (vocab.bpe)", &if_gpt2_files},
  {"tokenizer-model", PTDP_OPT_STRING, OFF(tokenizer_model), "", 0, 0, NULL,
   "Hugging Face tokenizer.json, or its directory (HuggingFaceTokenizer)", &if_hf_file},
  /* checkpoints and ending a run */
  {"save", PTDP_OPT_STRING, OFF(save), "", 0, 0, NULL,
   "directory to save checkpoints in (SAVE/iter_NNNNNNN/checkpoint.h5); also saved at the end of training", ALWAYS},
  {"save-interval", PTDP_OPT_INT, OFF(save_interval), "0", 0, BIG, NULL,
   "iterations between checkpoints; 0: only at the end and on exit", ALWAYS},
  {"keep-checkpoints", PTDP_OPT_INT, OFF(keep_checkpoints), "0", 0, BIG, NULL,
   "keep only the newest K checkpoints in save (older ones deleted once a newer is complete); 0 keeps all", ALWAYS},
  {"no-save-optim", PTDP_OPT_BOOL, OFF(no_save_optim), "false", 0, 0, NULL,
   "save the model without the optimizer state", ALWAYS},
  {"load", PTDP_OPT_STRING, OFF(load), "", 0, 0, NULL,
   "directory to resume from (its latest_checkpointed_iteration.txt); none there yet: start from scratch", ALWAYS},
  {"no-load-optim", PTDP_OPT_BOOL, OFF(no_load_optim), "false", 0, 0, NULL,
   "load the model and the run's position, not the optimizer state", ALWAYS},
  {"finetune", PTDP_OPT_BOOL, OFF(finetune), "false", 0, 0, NULL,
   "load the weights only: iteration, optimizer and data position start afresh", ALWAYS},
  {"use-checkpoint-args", PTDP_OPT_BOOL, OFF(use_checkpoint_args), "false", 0, 0, NULL,
   "take the model's shape and tokenizer keys from the checkpoint in load", ALWAYS},
  {"exit-interval", PTDP_OPT_INT, OFF(exit_interval), "0", 0, BIG, NULL,
   "save (with save) and exit after an iteration that is a multiple of this; 0: never", ALWAYS},
  {"exit-duration-in-mins", PTDP_OPT_REAL, OFF(exit_duration_in_mins), "0", 0, 1e9, NULL,
   "save (with save) and exit once the run has taken this many minutes; 0: never", ALWAYS},
  {"exit-signal-handler", PTDP_OPT_BOOL, OFF(exit_signal_handler), "false", 0, 0, NULL,
   "on exit-signal: finish the iteration, save (with save), exit 0", ALWAYS},
  {"exit-signal", PTDP_OPT_ENUM, ENUM_OFF(exit_signal), "SIGTERM", 0, 0, "SIGTERM|SIGINT|SIGUSR1|SIGUSR2",
   "the signal exit-signal-handler catches (Slurm's --signal=USR1@T sends SIGUSR1 T seconds early)", &if_signal_handler},
  /* the run file */
  {"run-file", PTDP_OPT_STRING, OFF(run_file), "", 0, 0, NULL,
   "HDF5 file of everything measured (\"\": SAVE/run.h5 with save, else ptdp-run.h5 here, never another run's; none: off)",
   ALWAYS},
  {"timeline-interval", PTDP_OPT_INT, OFF(timeline_interval), "0", 0, BIG, NULL,
   "iterations between sampled iterations (pipeline events, memory timeline); 0: the last of each log interval",
   ALWAYS},
  {"peak-tflops", PTDP_OPT_REAL, OFF(peak_tflops), "0", 0, 1e9, NULL,
   "peak TFLOP/s of one rank's device, for MFU in the run file (0: unknown)", ALWAYS},
  /* precision (Megatron's names) */
  {"fp16", PTDP_OPT_BOOL, OFF(fp16), "false", 0, 0, NULL,
   "fp16 mixed precision: fp16 weights and activations, fp32 master weights, main gradients and optimizer, "
   "dynamic loss scaling (every backend; ptdp-sim models it)", ALWAYS},
  {"bf16", PTDP_OPT_BOOL, OFF(bf16), "false", 0, 0, NULL,
   "bf16 mixed precision: bf16 weights and activations, fp32 master weights, main gradients and optimizer "
   "(every backend; ptdp-sim models it)",
   ALWAYS},
  {"loss-scale", PTDP_OPT_REAL, OFF(loss_scale), "0", 0, 1e30, NULL,
   "fp16 or bf16: a fixed loss scale (steps with inf/NaN gradients are skipped); 0: dynamic for fp16, none for bf16",
   &if_half},
  {"initial-loss-scale", PTDP_OPT_REAL, OFF(initial_loss_scale), "4294967296", 1, 1e30, NULL,
   "fp16, dynamic: the first loss scale", &if_fp16},
  {"min-loss-scale", PTDP_OPT_REAL, OFF(min_loss_scale), "1", 1e-30, 1e30, NULL,
   "fp16, dynamic: the loss scale never goes below this", &if_fp16},
  {"loss-scale-window", PTDP_OPT_INT, OFF(loss_scale_window), "1000", 1, BIG, NULL,
   "fp16, dynamic: iterations without overflow before the scale doubles", &if_fp16},
  {"hysteresis", PTDP_OPT_INT, OFF(hysteresis), "2", 1, BIG, NULL,
   "fp16, dynamic: overflows tolerated before the scale halves", &if_fp16},
  /* device */
  {"backend", PTDP_OPT_ENUM, ENUM_OFF(backend), "cpu", 0, 0, PTDP_BACKEND_CHOICES,
   "device backend: cpu (OpenBLAS + OpenMP); guard (tests only: the CPU backend with memory the host cannot touch); "
   "cuda (one NVIDIA GPU per rank)",
   ALWAYS},
  {"attention-backend", PTDP_OPT_ENUM, ENUM_OFF(attention_backend), "auto", 0, 0, PTDP_ATTENTION_BACKEND_CHOICES,
   "attention core: flash (fused: no s x s tensors kept, each query row's log-sum-exp instead); unfused (the "
   "softmax kept in full, the reference); auto: flash on a GPU backend that has it, else unfused",
   ALWAYS},
  {"device", PTDP_OPT_INT, OFF(device), "-1", -1, 1024, NULL,
   "cuda: the GPU of every rank of a node; -1: the node-local rank modulo the node's GPUs", &if_cuda},
  {"comm-backend", PTDP_OPT_ENUM, ENUM_OFF(comm_backend), "auto", 0, 0, "auto|mpi|nccl",
   "cuda: collectives and pipeline messages through NCCL or MPI (staged through host memory); auto: NCCL when built "
   "and no two ranks share a GPU",
   &if_cuda},
  {"distributed-timeout-minutes", PTDP_OPT_REAL, OFF(distributed_timeout_minutes), "10", 1e-3, 1e6, NULL,
   "cuda with NCCL: minutes a rank waits for a collective before it aborts the group's NCCL communicator and fails, "
   "naming the group and the collective (Megatron's)",
   &if_nccl},
  /* outputs and diagnostics */
  {"debug-inject-inf", PTDP_OPT_INT, OFF(debug_inject_inf), "0", 0, BIG, NULL,
   "tests: make one gradient element +inf on rank 0 at this iteration (1-based; 0: never), to exercise the "
   "overflow check of loss scaling", &if_half},
  {"debug-dump", PTDP_OPT_STRING, OFF(debug_dump), "", 0, 0, NULL,
   "write initial weights, first-step logits, loss, gradients and every loss to this HDF5 file", ALWAYS},
  {"num-threads", PTDP_OPT_INT, OFF(num_threads), "0", 0, 1024, NULL,
   "OpenMP/BLAS threads per rank; 0 means OMP_NUM_THREADS or all cores / ranks", ALWAYS},
};

#define NOPT ((int)(sizeof table / sizeof table[0]))

int ptdp_args_init(ptdp_args *a, ptdp_options *o)
{
  memset(a, 0, sizeof *a);
  return ptdp_options_init(o, table, NOPT, a);
}

int ptdp_args_parse(ptdp_args *a, ptdp_options *o, int argc, char **argv)
{
  PTDP_CALL(ptdp_args_init(a, o));
  o->program = "ptdp-train";
  PTDP_CALL(ptdp_options_parse_args(o, argc, argv));
  return 0;
}

const ptdp_option *ptdp_args_option(const char *key)
{
  for (int i = 0; i < NOPT; i++)
    if (!strcmp(table[i].name, key)) return &table[i];
  return NULL;
}

void ptdp_args_view(ptdp_args *a, ptdp_options *o)
{
  memset(o, 0, sizeof *o);
  o->table = table;
  o->count = NOPT;
  o->target = a;
}

void ptdp_args_print(const ptdp_options *o, FILE *out)
{
  fprintf(out, "------------------------ arguments ------------------------\n");
  for (int i = 0; i < o->count; i++) {
    char v[PTDP_OPT_STRLEN];
    ptdp_options_value_text(o, i, v, sizeof v);
    const char *src = o->source[i] == PTDP_SRC_DECK ? " (deck)"
                      : o->source[i] == PTDP_SRC_CMDLINE ? " (command line)"
                      : o->source[i] == PTDP_SRC_CHECKPOINT ? " (checkpoint)"
                                                             : "";
    /* Megatron-style echo: name, dots to column 40, value */
    int dots = 38 - (int)strlen(o->table[i].name);
    fprintf(out, "  %s %.*s %s%s\n", o->table[i].name, dots > 3 ? dots : 3, "......................................", v,
            src);
  }
  fprintf(out, "-------------------- end of arguments ---------------------\n");
}

long long ptdp_args_padded_vocab(const ptdp_args *a, long long vocab)
{
  return ptdp_padded_vocab(vocab, (int)a->make_vocab_size_divisible_by, (int)a->tensor_model_parallel_size);
}

/* Checkpoint keys that need save or load. */
static int validate_checkpoint_keys(const ptdp_args *a)
{
  const int save = a->save[0] != 0, load = a->load[0] != 0;
  PTDP_CHECK(save || !a->save_interval, "save-interval = %lld is given without save (the directory to save in)",
             a->save_interval);
  PTDP_CHECK(save || !a->keep_checkpoints, "keep-checkpoints = %lld is given without save", a->keep_checkpoints);
  PTDP_CHECK(save || !a->no_save_optim, "no-save-optim is given without save");
  PTDP_CHECK(load || !a->finetune, "finetune is given without load (the checkpoint directory to start from)");
  PTDP_CHECK(load || !a->no_load_optim, "no-load-optim is given without load");
  PTDP_CHECK(load || !a->use_checkpoint_args, "use-checkpoint-args is given without load");
  return 0;
}

int ptdp_args_validate(const ptdp_args *a, int world)
{
  PTDP_CALL(ptdp_model_keys_check(&a->model, world));
  PTDP_CHECK(a->min_lr <= a->lr, "min-lr %g is larger than lr %g", a->min_lr, a->lr);
  long long decay = a->lr_decay_iters ? a->lr_decay_iters : a->train_iters;
  PTDP_CHECK(a->lr_warmup_iters <= decay || a->train_iters == 0,
             "lr-warmup-iters %lld is longer than the decay period (lr-decay-iters or train-iters) %lld",
             a->lr_warmup_iters, decay);
  int have_path = a->data_path[0] != '\0';
  PTDP_CHECK(a->mock_data || have_path, "no training data: give data-path, or mock-data = true");
  PTDP_CHECK(!(a->mock_data && have_path), "both mock-data and data-path are given; choose one");
  PTDP_CHECK(!a->mock_data || a->vocab_size > 0, "mock-data needs vocab-size (e.g. vocab-size = 50257)");
  PTDP_CHECK(!(a->fp16 && a->bf16), "fp16 and bf16 are both set; choose one");
  PTDP_CHECK(!a->debug_inject_inf || a->fp16 || a->loss_scale > 0,
             "debug-inject-inf needs a loss scaler to detect it (fp16, or bf16 with loss-scale)");
  return validate_checkpoint_keys(a);
}

void ptdp_args_warn_unused(const ptdp_options *o, const ptdp_args *a, int world, FILE *out)
{
  assert(a == o->target);
  ptdp_options_warn_unused(o, world, out);
}
