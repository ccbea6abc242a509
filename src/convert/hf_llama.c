/* LlamaForCausalLM: Hugging Face's names and layouts of a Llama-style ptdp model (RMSNorm, rotary
 * positions, SwiGLU, no linear biases; grouped-query attention, kv-channels and an untied output
 * layer as the model has them), and its config.json.
 *
 * Hugging Face's Llama keeps nn.Linear's [out, in] (no transposes) and separate q_proj, k_proj,
 * v_proj and gate_proj, up_proj: parts of Megatron-core's linear_qkv (grouped: per query group,
 * its query heads, then its key, then its value) and linear_fc1 ([gate; up]); see hf_rows.  Its
 * rotary embedding turns the halves (i, i + d/2) of each head (rotate_half), as Megatron-core does
 * with rotary-interleaved false: the q and k rows need no permutation.  Its angles are
 * pos theta^(-2i/d) over the whole head, ptdp's with rotary-base theta and rotary-percent 1; an
 * interleaved or partial rotation is refused rather than converted (accepts). */
#include "convert_impl.h"

#include "ptdp/error.h"

#include <string.h>

#define L "model.layers.%d."
#define M "decoder.layers.%d."

static const hf_name llama_names[] = {
  {"model.embed_tokens.weight", "embedding.word_embeddings.weight", HF_ROWS_SAME, 0, 0, 0},
  {L "input_layernorm.weight", M "input_layernorm.weight", HF_ROWS_SAME, 0, 0, 0},
  {L "self_attn.q_proj.weight", M "self_attention.linear_qkv.weight", HF_ROWS_QKV_PART, 0, 0, 0},
  {L "self_attn.k_proj.weight", M "self_attention.linear_qkv.weight", HF_ROWS_QKV_PART, 1, 0, 0},
  {L "self_attn.v_proj.weight", M "self_attention.linear_qkv.weight", HF_ROWS_QKV_PART, 2, 0, 0},
  {L "self_attn.o_proj.weight", M "self_attention.linear_proj.weight", HF_ROWS_SAME, 0, 0, 0},
  {L "post_attention_layernorm.weight", M "pre_mlp_layernorm.weight", HF_ROWS_SAME, 0, 0, 0},
  {L "mlp.gate_proj.weight", M "mlp.linear_fc1.weight", HF_ROWS_HALF, 0, 0, 0},
  {L "mlp.up_proj.weight", M "mlp.linear_fc1.weight", HF_ROWS_HALF, 1, 0, 0},
  {L "mlp.down_proj.weight", M "mlp.linear_fc2.weight", HF_ROWS_SAME, 0, 0, 0},
  {"model.norm.weight", "decoder.final_layernorm.weight", HF_ROWS_SAME, 0, 0, 0},
  {"lm_head.weight", "output_layer.weight", HF_ROWS_SAME, 0, 0, 1},
};
#undef L
#undef M

static const char *const llama_buffers[] = {".rotary_emb.inv_freq", NULL}; /* older files carry it */

static int llama_config_write(FILE *f, const hf_model *m)
{
  const hf_dims *d = &m->d;
  char eps[32], theta[32], std[32], drop[32];
  fprintf(f, "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n");
  fprintf(f, "  \"vocab_size\": %lld,\n  \"hidden_size\": %lld,\n  \"intermediate_size\": %lld,\n", d->vocab, d->h,
          d->ffn);
  fprintf(f, "  \"num_hidden_layers\": %lld,\n  \"num_attention_heads\": %lld,\n  \"num_key_value_heads\": %lld,\n",
          d->layers, d->heads, d->groups);
  fprintf(f, "  \"head_dim\": %lld,\n  \"max_position_embeddings\": %lld,\n", d->head_dim, d->max_pos);
  fprintf(f, "  \"hidden_act\": \"silu\",\n  \"rms_norm_eps\": %s,\n  \"rope_theta\": %s,\n  \"rope_scaling\": null,\n",
          hf_real_text(eps, sizeof eps, m->eps), hf_real_text(theta, sizeof theta, m->rope_theta));
  fprintf(f, "  \"attention_bias\": false,\n  \"mlp_bias\": false,\n  \"tie_word_embeddings\": %s,\n",
          d->untied ? "false" : "true");
  fprintf(f, "  \"attention_dropout\": %s,\n", hf_real_text(drop, sizeof drop, m->attn_dropout));
  fprintf(f, "  \"initializer_range\": %s,\n  \"use_cache\": true,\n", hf_real_text(std, sizeof std, m->init_std));
  if (m->eod >= 0) fprintf(f, "  \"bos_token_id\": %lld,\n  \"eos_token_id\": %lld,\n", m->eod, m->eod);
  fprintf(f, "  \"torch_dtype\": \"%s\"\n}\n", hf_torch_dtype(m->dtype));
  return 0;
}

/* Keys whose model ptdp would not compute: refused by name. */
static int llama_refusals(const ptdp_json_value *cfg, const char *path)
{
  const ptdp_json_value *scaling = ptdp_json_get(cfg, "rope_scaling");
  const char *act;
  PTDP_CALL(hf_cfg_string(cfg, "hidden_act", path, &act));
  PTDP_CHECK(!act || !strcmp(act, "silu"), "%s: hidden_act is not \"silu\": ptdp's SwiGLU gates with SiLU", path);
  PTDP_CHECK(!scaling || scaling->kind == PTDP_JSON_NULL, "%s: rope_scaling is set (Llama 3.1's and others' stretched "
             "positions): ptdp's rotary embedding has no scaling", path);
  PTDP_CALL(hf_cfg_bool_is(cfg, "attention_bias", 0, path, "ptdp's Llama has no biases on q, k, v and o"));
  return hf_cfg_bool_is(cfg, "mlp_bias", 0, path, "ptdp's Llama has no biases in the MLP");
}

/* config.json's keys, each with the ptdp-train key it sets (its range is that key's) and what an
 * absent key means (LlamaConfig's defaults; the sizes are required; num_key_value_heads and
 * head_dim null or absent: a and h / a, as LlamaConfig has them). */
static int llama_config_read(const ptdp_json_value *cfg, const char *path, hf_model *m)
{
  hf_dims *d = &m->d;
  PTDP_CALL(llama_refusals(cfg, path));
  PTDP_CALL(hf_cfg_size(cfg, "vocab_size", "vocab-size", HF_REQUIRED, 0, path, &d->vocab));
  PTDP_CALL(hf_cfg_size(cfg, "hidden_size", "hidden-size", HF_REQUIRED, 0, path, &d->h));
  PTDP_CALL(hf_cfg_size(cfg, "intermediate_size", "ffn-hidden-size", HF_REQUIRED, 0, path, &d->ffn));
  PTDP_CALL(hf_cfg_size(cfg, "num_hidden_layers", "num-layers", HF_REQUIRED, 0, path, &d->layers));
  PTDP_CALL(hf_cfg_size(cfg, "num_attention_heads", "num-attention-heads", HF_REQUIRED, 0, path, &d->heads));
  PTDP_CALL(hf_cfg_size(cfg, "num_key_value_heads", "num-query-groups", d->heads, 1, path, &d->groups));
  PTDP_CHECK(d->groups <= d->heads && d->heads % d->groups == 0, "%s: num_attention_heads %lld is not a multiple of "
             "num_key_value_heads %lld", path, d->heads, d->groups);
  PTDP_CALL(hf_cfg_size(cfg, "head_dim", "kv-channels", d->h / d->heads ? d->h / d->heads : 1, 1, path, &d->head_dim));
  PTDP_CALL(hf_cfg_size(cfg, "max_position_embeddings", "max-position-embeddings", HF_REQUIRED, 0, path, &d->max_pos));
  PTDP_CALL(hf_cfg_real(cfg, "rms_norm_eps", "layernorm-epsilon", 1e-6, path, &m->eps));
  PTDP_CALL(hf_cfg_real(cfg, "rope_theta", "rotary-base", 10000, path, &m->rope_theta));
  PTDP_CALL(hf_cfg_real(cfg, "initializer_range", "init-method-std", 0.02, path, &m->init_std));
  PTDP_CALL(hf_cfg_real(cfg, "attention_dropout", "attention-dropout", 0, path, &m->attn_dropout));
  int tied;
  PTDP_CALL(hf_cfg_bool(cfg, "tie_word_embeddings", 0, path, &tied)); /* LlamaConfig's default: untied */
  d->untied = !tied;
  m->eod = -1;
  return 0;
}

/* Why LlamaForCausalLM cannot compute the model of keys a (the first reason), or NULL. */
static const char *llama_mismatch(const ptdp_args *a)
{
  if (a->normalization != PTDP_NORM_RMSNORM) return "normalization is LayerNorm (Llama's is RMSNorm)";
  if (a->position_embedding_type != PTDP_POS_ROPE) return "position-embedding-type is not rope";
  if (a->rotary_interleaved)
    return "rotary-interleaved is set (Hugging Face's Llama turns the halves (i, i + d/2): rotate_half)";
  if (a->rotary_percent != 1.0) return "rotary-percent is not 1 (Llama turns whole heads)";
  if (!a->swiglu) return "swiglu is not set (Llama's MLP is SwiGLU)";
  if (!a->disable_bias_linear) return "the linear layers have biases (disable-bias-linear is not set)";
  return NULL;
}

static int llama_accepts(const ptdp_args *a, const char *file)
{
  const char *why = llama_mismatch(a);
  PTDP_CHECK(!why, "checkpoint '%s': %s: LlamaForCausalLM cannot express it as ptdp-convert writes it", file, why);
  return 0;
}

static const char *const llama_keys[] = {"normalization=RMSNorm", "position-embedding-type=rope", "swiglu=true",
                                         "disable-bias-linear=true", NULL};

const hf_arch hf_arch_llama = {
  .architecture = "LlamaForCausalLM",
  .model_type = "llama",
  .prefix = "",
  .names = llama_names,
  .nnames = (int)(sizeof llama_names / sizeof llama_names[0]),
  .buffers = llama_buffers,
  .tied_output = "lm_head.weight",
  .word_embedding = "model.embed_tokens.weight",
  .config_write = llama_config_write,
  .config_read = llama_config_read,
  .accepts = llama_accepts,
  .keys = llama_keys,
};
