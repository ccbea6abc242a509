/* ptdp-convert --load CKPT --hf-out DIR: a ptdp checkpoint as a Hugging Face model directory.
 *
 *   DIR/config.json                      the architecture's keys (hf_arch.config_write)
 *   DIR/model.safetensors                the weights, Hugging Face's names and layouts; beyond
 *                                        max-shard-size, model-0000K-of-0000N.safetensors and
 *   DIR/model.safetensors.index.json     {"metadata": {"total_size"}, "weight_map": {name: file}}
 *   DIR/vocab.json, merges.txt, tokenizer_config.json
 *                                        the GPT-2 tokenizer's files, when the checkpoint's keys
 *                                        name readable ones of the model's vocabulary
 *   DIR/tokenizer.json, tokenizer_config.json
 *                                        or its Hugging Face tokenizer (HuggingFaceTokenizer)
 * The architecture follows the checkpoint's keys (hf_arch_of_args): GPT2LMHeadModel, or
 * LlamaForCausalLM for RMSNorm, rotary positions and SwiGLU; a model neither class computes
 * (an interleaved rotation, RMSNorm with GELU, ...) is refused naming the key. */
#include "convert_impl.h"

#include "ptdp/checkpoint.h"
#include "ptdp/error.h"
#include "ptdp/tokenizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The training keys a conversion records besides the model keys of
 * ptdp_checkpoint_read_model_keys. */
static const char *const extra_keys[] = {"init-method-std", "hidden-dropout", "attention-dropout", "seq-length"};

static int checkpoint_args(const char *load_dir, ptdp_checkpoint_ref *ref, ptdp_args *a)
{
  int found = 0;
  PTDP_CALL(ptdp_checkpoint_locate(load_dir, MPI_COMM_WORLD, ref, &found));
  PTDP_CHECK(found, "no checkpoint in '%s' (no %s there): give the save directory of a ptdp-train run", load_dir,
             PTDP_CHECKPOINT_TRACKER);
  ptdp_options o;
  int rc = ptdp_args_init(a, &o);
  if (!rc) rc = ptdp_checkpoint_read_model_keys(ref, &o, MPI_COMM_WORLD);
  if (!rc) rc = ptdp_checkpoint_read_keys(ref, &o, extra_keys, (int)(sizeof extra_keys / sizeof *extra_keys),
                                          MPI_COMM_WORLD);
  ptdp_options_free(&o);
  PTDP_CALL(rc);
  PTDP_CHECK(a->vocab_size > 0, "checkpoint '%s' records no vocab-size: it is not a complete ptdp checkpoint",
             ref->file);
  return 0;
}

static int write_config(const char *dir, const hf_arch *arch, const hf_model *hm)
{
  char path[2 * PTDP_OPT_STRLEN];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "w");
  PTDP_CHECK_IO(f, "cannot create '%s': %s", path, strerror(errno));
  int rc = arch->config_write(f, hm);
  if ((ferror(f) | fclose(f)) && !rc) rc = PTDP_FAIL(PTDP_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
  return rc;
}

/* The checkpoint's tokenizer.json (tokenizer-model: the file or its directory) as DIR/tokenizer.json,
 * with a tokenizer_config.json naming the fast tokenizer, and its end-of-text id into *eod. */
static int copy_hf_tokenizer(const char *dir, const ptdp_args *a, long long *eod)
{
  char from[2 * PTDP_OPT_STRLEN], path[2 * PTDP_OPT_STRLEN];
  struct stat sb;
  const int is_dir = stat(a->tokenizer_model, &sb) == 0 && S_ISDIR(sb.st_mode);
  snprintf(from, sizeof from, is_dir ? "%s/tokenizer.json" : "%s", a->tokenizer_model);
  ptdp_tokenizer *tok = NULL;
  PTDP_CALL(ptdp_tokenizer_create_hf(&tok, from));
  const int tv = ptdp_tokenizer_vocab_size(tok);
  const long long id = ptdp_tokenizer_eod(tok);
  ptdp_tokenizer_destroy(&tok);
  if (tv > a->vocab_size) {
    fprintf(stderr, "ptdp-convert: note: no tokenizer files written: '%s' has %d tokens, the model %lld\n", from, tv,
            a->vocab_size);
    return 0;
  }
  *eod = id;
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  PTDP_CALL(hf_copy_file(from, path));
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  FILE *f = fopen(path, "w");
  PTDP_CHECK_IO(f, "cannot create '%s': %s", path, strerror(errno));
  fprintf(f, "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"model_max_length\": %lld\n}\n",
          a->max_position_embeddings ? a->max_position_embeddings : a->seq_length);
  PTDP_CHECK_IO(!ferror(f) && fclose(f) == 0, "cannot write '%s'", path);
  return 0;
}

/* The GPT-2 tokenizer's files as Hugging Face names them (vocab.json is GPT-2's encoder.json,
 * merges.txt its vocab.bpe), or the Hugging Face tokenizer's tokenizer.json, and its end-of-text
 * id into *eod; nothing (and a note) when the checkpoint names no readable files. */
static int copy_tokenizer(const char *dir, const ptdp_args *a, long long *eod)
{
  *eod = -1;
  if (a->tokenizer_type == PTDP_TOKENIZER_HUGGING_FACE && a->tokenizer_model[0] && !access(a->tokenizer_model, R_OK))
    return copy_hf_tokenizer(dir, a, eod);
  if (a->tokenizer_type != PTDP_TOKENIZER_GPT2BPE || !a->vocab_file[0] || !a->merge_file[0] ||
      access(a->vocab_file, R_OK) || access(a->merge_file, R_OK)) {
    fprintf(stderr, "ptdp-convert: note: no tokenizer files written (the checkpoint's tokenizer is %s%s%s)\n",
            a->tokenizer_type == PTDP_TOKENIZER_GPT2BPE ? "GPT2BPETokenizer" : "the byte-level one",
            a->tokenizer_type == PTDP_TOKENIZER_GPT2BPE ? " with no readable vocab-file and merge-file" : "",
            a->tokenizer_type == PTDP_TOKENIZER_GPT2BPE ? "" : ", which Hugging Face has no file for");
    return 0;
  }
  ptdp_tokenizer *tok = NULL;
  PTDP_CALL(ptdp_tokenizer_create_gpt2(&tok, a->vocab_file, a->merge_file));
  const int tv = ptdp_tokenizer_vocab_size(tok);
  const long long id = ptdp_tokenizer_eod(tok);
  ptdp_tokenizer_destroy(&tok);
  if (tv != a->vocab_size) { /* vocab-size given in the deck: ptdp-train did not read the tokenizer either */
    fprintf(stderr, "ptdp-convert: note: no tokenizer files written: the checkpoint's tokenizer has %d tokens, its "
            "model %lld\n", tv, a->vocab_size);
    return 0;
  }
  *eod = id;
  char path[2 * PTDP_OPT_STRLEN];
  snprintf(path, sizeof path, "%s/vocab.json", dir);
  PTDP_CALL(hf_copy_file(a->vocab_file, path));
  snprintf(path, sizeof path, "%s/merges.txt", dir);
  PTDP_CALL(hf_copy_file(a->merge_file, path));
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  FILE *f = fopen(path, "w");
  PTDP_CHECK_IO(f, "cannot create '%s': %s", path, strerror(errno));
  fprintf(f, "{\n  \"tokenizer_class\": \"GPT2Tokenizer\",\n  \"model_max_length\": %lld,\n"
             "  \"bos_token\": \"<|endoftext|>\",\n  \"eos_token\": \"<|endoftext|>\",\n"
             "  \"unk_token\": \"<|endoftext|>\",\n  \"add_prefix_space\": false\n}\n",
          a->max_position_embeddings ? a->max_position_embeddings : a->seq_length);
  PTDP_CHECK_IO(!ferror(f) && fclose(f) == 0, "cannot write '%s'", path);
  return 0;
}

static hf_model model_of(const ptdp_args *a, ptdp_st_dtype dtype)
{
  ptdp_model_config mc;
  ptdp_model_config_of(&a->model, &(ptdp_model_env){.use = PTDP_MODEL_WEIGHTS, .world = 1}, &mc);
  const ptdp_gpt_config *g = &mc.gpt;
  hf_model hm = {.d = {.layers = g->num_layers, .h = g->hidden, .heads = g->heads, .ffn = g->ffn, .vocab = g->vocab,
                       .max_pos = g->max_pos, .groups = g->arch.query_groups, .head_dim = g->arch.kv_channels,
                       .untied = g->arch.untie},
                 .eps = a->layernorm_epsilon, .init_std = a->init_method_std, .hidden_dropout = a->hidden_dropout,
                 .attn_dropout = a->attention_dropout, .eod = -1, .dtype = dtype,
                 .rope_theta = g->arch.position == PTDP_POS_ROPE ? g->arch.rotary_base : 0};
  hf_dims_complete(&hm.d);
  return hm;
}

/* The checkpoint's global tensors in host memory, through a one-rank model. */
static int read_checkpoint(const ptdp_checkpoint_ref *ref, const ptdp_args *a, hf_tensor **mc, int *nmc)
{
  hf_session s;
  int rc = hf_session_create(&s, a);
  if (!rc) rc = ptdp_checkpoint_load_model(ref, &s.m);
  if (!rc) rc = hf_session_tensors(&s, mc, nmc);
  if (!rc) rc = hf_session_get(&s, *mc);
  hf_session_free(&s);
  return rc;
}

int hf_export(const char *load_dir, const char *out_dir, ptdp_st_dtype dtype, unsigned long long max_shard)
{
  ptdp_checkpoint_ref ref;
  ptdp_args a;
  PTDP_CALL(checkpoint_args(load_dir, &ref, &a));
  const hf_arch *arch = NULL;
  PTDP_CALL(hf_arch_of_args(&a, ref.file, &arch));
  hf_model hm = model_of(&a, dtype);
  hf_tensor *mc = NULL, *hf = NULL;
  int nmc = 0, nhf = 0;
  int rc = read_checkpoint(&ref, &a, &mc, &nmc);
  if (!rc) rc = hf_map_export(arch, &hm.d, mc, nmc, &hf, &nhf);
  hf_tensors_free(mc, nmc);
  if (!rc) rc = hf_make_dir(out_dir);
  if (!rc) rc = hf_write_shards(out_dir, hf, nhf, dtype, max_shard);
  if (!rc) rc = copy_tokenizer(out_dir, &a, &hm.eod);
  if (!rc) rc = write_config(out_dir, arch, &hm);
  if (!rc)
    fprintf(stderr, "ptdp-convert: %s (iteration %lld) -> %s: %s, %d tensors, %s\n", ref.dir, ref.iteration, out_dir,
            arch->architecture, nhf, ptdp_st_dtype_name(dtype));
  hf_tensors_free(hf, nhf);
  return rc;
}
