/* GPT2LMHeadModel: Hugging Face's names and layouts of ptdp's GPT-2, and its config.json.
 *
 * Hugging Face's GPT-2 stores its linear layers as Conv1D, weight [in, out] (x W + b), where
 * Megatron-core's linear layers are [out, in] (x W^T + b): every matrix is transposed.  Its
 * c_attn holds the queries of all heads, then the keys, then the values; Megatron-core's
 * linear_qkv holds, head by head, that head's query, key and value (HF_ROWS_QKV_BY_HEAD).  The
 * output layer lm_head is the word embedding (tie_word_embeddings), so files hold wte only. */
#include "convert_impl.h"

#include "ptdp/error.h"

#include <string.h>

#define L "transformer.h.%d."
#define M "decoder.layers.%d."

static const hf_name gpt2_names[] = {
  {"transformer.wte.weight", "embedding.word_embeddings.weight", HF_ROWS_SAME, 0, 0, 0},
  {"transformer.wpe.weight", "embedding.position_embeddings.weight", HF_ROWS_SAME, 0, 0, 0},
  {L "ln_1.weight", M "input_layernorm.weight", HF_ROWS_SAME, 0, 0, 0},
  {L "ln_1.bias", M "input_layernorm.bias", HF_ROWS_SAME, 0, 0, 0},
  {L "attn.c_attn.weight", M "self_attention.linear_qkv.weight", HF_ROWS_QKV_BY_HEAD, 0, 1, 0},
  {L "attn.c_attn.bias", M "self_attention.linear_qkv.bias", HF_ROWS_QKV_BY_HEAD, 0, 0, 0},
  {L "attn.c_proj.weight", M "self_attention.linear_proj.weight", HF_ROWS_SAME, 0, 1, 0},
  {L "attn.c_proj.bias", M "self_attention.linear_proj.bias", HF_ROWS_SAME, 0, 0, 0},
  {L "ln_2.weight", M "pre_mlp_layernorm.weight", HF_ROWS_SAME, 0, 0, 0},
  {L "ln_2.bias", M "pre_mlp_layernorm.bias", HF_ROWS_SAME, 0, 0, 0},
  {L "mlp.c_fc.weight", M "mlp.linear_fc1.weight", HF_ROWS_SAME, 0, 1, 0},
  {L "mlp.c_fc.bias", M "mlp.linear_fc1.bias", HF_ROWS_SAME, 0, 0, 0},
  {L "mlp.c_proj.weight", M "mlp.linear_fc2.weight", HF_ROWS_SAME, 0, 1, 0},
  {L "mlp.c_proj.bias", M "mlp.linear_fc2.bias", HF_ROWS_SAME, 0, 0, 0},
  {"transformer.ln_f.weight", "decoder.final_layernorm.weight", HF_ROWS_SAME, 0, 0, 0},
  {"transformer.ln_f.bias", "decoder.final_layernorm.bias", HF_ROWS_SAME, 0, 0, 0},
};
#undef L
#undef M

/* The attention's causal-mask buffers older files carry: not weights. */
static const char *const gpt2_buffers[] = {".attn.bias", ".attn.masked_bias", NULL};

static int gpt2_config_write(FILE *f, const hf_model *m)
{
  const hf_dims *d = &m->d;
  char eps[32], hd[32], ad[32], std[32];
  fprintf(f, "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n");
  fprintf(f, "  \"vocab_size\": %lld,\n  \"n_positions\": %lld,\n  \"n_ctx\": %lld,\n", d->vocab, d->max_pos,
          d->max_pos);
  fprintf(f, "  \"n_embd\": %lld,\n  \"n_layer\": %lld,\n  \"n_head\": %lld,\n  \"n_inner\": %lld,\n", d->h, d->layers,
          d->heads, d->ffn);
  /* ptdp's GELU is the tanh approximation (src/backend/cpu.c), Hugging Face's gelu_new */
  fprintf(f, "  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": %s,\n",
          hf_real_text(eps, sizeof eps, m->eps));
  hf_real_text(hd, sizeof hd, m->hidden_dropout);
  fprintf(f, "  \"resid_pdrop\": %s,\n  \"embd_pdrop\": %s,\n  \"attn_pdrop\": %s,\n", hd, hd,
          hf_real_text(ad, sizeof ad, m->attn_dropout));
  fprintf(f, "  \"initializer_range\": %s,\n", hf_real_text(std, sizeof std, m->init_std));
  fprintf(f, "  \"scale_attn_weights\": true,\n  \"scale_attn_by_inverse_layer_idx\": false,\n"
             "  \"reorder_and_upcast_attn\": false,\n  \"tie_word_embeddings\": true,\n  \"use_cache\": true,\n");
  if (m->eod >= 0) fprintf(f, "  \"bos_token_id\": %lld,\n  \"eos_token_id\": %lld,\n", m->eod, m->eod);
  fprintf(f, "  \"torch_dtype\": \"%s\"\n}\n", hf_torch_dtype(m->dtype));
  return 0;
}

static int gpt2_activation(const ptdp_json_value *cfg, const char *path)
{
  const char *act;
  PTDP_CALL(hf_cfg_string(cfg, "activation_function", path, &act));
  if (!act) return 0; /* GPT2Config's default: gelu_new */
  /* three names of the one tanh formula x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2 */
  PTDP_CHECK(!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_fast"),
             "%s: activation_function '%s': ptdp's GELU is the tanh approximation (gelu_new, gelu_pytorch_tanh, "
             "gelu_fast); converting would change the model's outputs", path, act);
  return 0;
}

/* config.json's keys, each with the ptdp-train key it sets (its range is that key's) and what an
 * absent key means: the sizes are required (a default size would not fit the tensors anyway);
 * n_inner null or absent is 4 n_embd, as GPT2Config has it; the rest GPT2Config's defaults. */
static int gpt2_config_read(const ptdp_json_value *cfg, const char *path, hf_model *m)
{
  hf_dims *d = &m->d;
  PTDP_CALL(hf_cfg_size(cfg, "vocab_size", "vocab-size", HF_REQUIRED, 0, path, &d->vocab));
  PTDP_CALL(hf_cfg_size(cfg, "n_embd", "hidden-size", HF_REQUIRED, 0, path, &d->h));
  PTDP_CALL(hf_cfg_size(cfg, "n_layer", "num-layers", HF_REQUIRED, 0, path, &d->layers));
  PTDP_CALL(hf_cfg_size(cfg, "n_head", "num-attention-heads", HF_REQUIRED, 0, path, &d->heads));
  PTDP_CALL(hf_cfg_size(cfg, "n_positions", "max-position-embeddings", HF_REQUIRED, 0, path, &d->max_pos));
  PTDP_CALL(hf_cfg_size(cfg, "n_inner", "ffn-hidden-size", 4 * d->h, 1, path, &d->ffn));
  PTDP_CHECK(d->h % d->heads == 0, "%s: n_embd %lld is not a multiple of n_head %lld", path, d->h, d->heads);
  hf_dims_complete(d); /* no query groups, head size h / a */
  PTDP_CALL(gpt2_activation(cfg, path));
  PTDP_CALL(hf_cfg_real(cfg, "layer_norm_epsilon", "layernorm-epsilon", 1e-5, path, &m->eps));
  PTDP_CALL(hf_cfg_real(cfg, "initializer_range", "init-method-std", 0.02, path, &m->init_std));
  PTDP_CALL(hf_cfg_real(cfg, "resid_pdrop", "hidden-dropout", 0.1, path, &m->hidden_dropout));
  PTDP_CALL(hf_cfg_real(cfg, "attn_pdrop", "attention-dropout", 0.1, path, &m->attn_dropout));
  double embd; /* ptdp's hidden-dropout is both: the embeddings' and the residual branches' */
  PTDP_CALL(hf_cfg_real(cfg, "embd_pdrop", "hidden-dropout", m->hidden_dropout, path, &embd));
  PTDP_CHECK(embd == m->hidden_dropout, "%s: embd_pdrop %g differs from resid_pdrop %g: ptdp's hidden-dropout is "
             "one probability for both", path, embd, m->hidden_dropout);
  PTDP_CALL(hf_cfg_bool_is(cfg, "tie_word_embeddings", 1, path,
                           "an output layer of its own; ptdp's GPT ties it to the word embedding"));
  PTDP_CALL(hf_cfg_bool_is(cfg, "scale_attn_weights", 1, path,
                           "ptdp scales the attention scores by 1/sqrt(head size)"));
  PTDP_CALL(hf_cfg_bool_is(cfg, "scale_attn_by_inverse_layer_idx", 0, path,
                           "ptdp does not scale the scores by the layer's index"));
  PTDP_CALL(hf_cfg_bool_is(cfg, "add_cross_attention", 0, path, "ptdp's GPT has no cross-attention"));
  m->eod = -1;
  return 0;
}

/* Why GPT2LMHeadModel cannot compute the model of keys a (the first reason), or NULL: GPT-2 is
 * ptdp's default architecture, LayerNorm, learned positions, GELU, biases, a tied output layer,
 * one key/value head per query head of h / a. */
static const char *gpt2_mismatch(const ptdp_args *a)
{
  if (a->normalization != PTDP_NORM_LAYERNORM) return "normalization is RMSNorm";
  if (a->position_embedding_type != PTDP_POS_LEARNED) return "position-embedding-type is not learned_absolute";
  if (a->swiglu) return "swiglu is set";
  if (a->disable_bias_linear) return "disable-bias-linear is set";
  if (a->untie_embeddings_and_output_weights) return "untie-embeddings-and-output-weights is set";
  if (a->group_query_attention && a->num_query_groups != a->num_attention_heads) return "group-query-attention is set";
  if (a->kv_channels && a->kv_channels * a->num_attention_heads != a->hidden_size)
    return "kv-channels is not hidden-size / heads";
  return NULL;
}

static int gpt2_accepts(const ptdp_args *a, const char *file)
{
  const char *why = gpt2_mismatch(a);
  PTDP_CHECK(!why, "checkpoint '%s': %s, which GPT2LMHeadModel cannot express (it has LayerNorm, learned positions, "
             "GELU, biases, a tied output layer and h / a per head)", file, why);
  return 0;
}

const hf_arch hf_arch_gpt2 = {
  .architecture = "GPT2LMHeadModel",
  .model_type = "gpt2",
  .prefix = "transformer.",
  .names = gpt2_names,
  .nnames = (int)(sizeof gpt2_names / sizeof gpt2_names[0]),
  .buffers = gpt2_buffers,
  .tied_output = "lm_head.weight",
  .word_embedding = "transformer.wte.weight",
  .config_write = gpt2_config_write,
  .config_read = gpt2_config_read,
  .accepts = gpt2_accepts,
  .keys = NULL, /* ptdp-train's defaults */
};

const hf_arch *hf_arch_find(const ptdp_json_value *cfg)
{
  static const hf_arch *const all[] = {&hf_arch_gpt2, &hf_arch_llama};
  const ptdp_json_value *arch = ptdp_json_get(cfg, "architectures"), *type = ptdp_json_get(cfg, "model_type");
  const char *a = arch && arch->kind == PTDP_JSON_ARRAY && arch->n > 0 && arch->items[0].kind == PTDP_JSON_STRING
                    ? arch->items[0].str
                    : NULL;
  const char *t = type && type->kind == PTDP_JSON_STRING ? type->str : NULL;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (a ? !strcmp(a, all[i]->architecture) : !arch && t && !strcmp(t, all[i]->model_type)) return all[i];
  return NULL;
}

int hf_arch_check(const ptdp_json_value *cfg, const hf_arch *a, const char *path)
{
  const ptdp_json_value *arch = ptdp_json_get(cfg, "architectures");
  const char *t;
  PTDP_CALL(hf_cfg_string(cfg, "model_type", path, &t));
  PTDP_CHECK(!t || !strcmp(t, a->model_type), "%s: model_type '%s' is not architectures' %s's ('%s')", path, t,
             a->architecture, a->model_type);
  PTDP_CHECK(!arch || arch->n == 1, "%s: architectures names %d classes; ptdp-convert reads one", path,
             arch ? arch->n : 0);
  return 0;
}

int hf_arch_of_args(const ptdp_args *a, const char *file, const hf_arch **arch)
{
  const int llama = a->normalization == PTDP_NORM_RMSNORM || a->position_embedding_type == PTDP_POS_ROPE || a->swiglu;
  *arch = llama ? &hf_arch_llama : &hf_arch_gpt2;
  return (*arch)->accepts(a, file);
}
