/* Private to src/convert: ptdp checkpoints to and from Hugging Face model directories.
 *
 *   hf_map.c      the engine: an architecture's table of names and layouts (below) turns ptdp's
 *                 global tensors (Megatron-core names, ptdp-checkpoint(5)) into Hugging Face's
 *                 and back; shards and the index file
 *   hf_gpt2.c     GPT2LMHeadModel: its table and its config.json
 *   hf_model.c    the one-rank model the weights pass through (checkpoints read and written by
 *                 ptdp's checkpoint module)
 *   hf_export.c   --load CKPT --hf-out DIR
 *   hf_import.c   --hf-in DIR --save CKPT
 *   ptdp_convert.c  the executable: its keys, main
 *
 * An architecture is data: a list of names, each a Hugging Face tensor, the Megatron-core tensor
 * it comes from, and how its rows map (hf_rows) and whether it is stored transposed, with the
 * architecture's config.json and the ptdp-train keys it means.  Two: GPT2LMHeadModel (hf_gpt2.c)
 * and LlamaForCausalLM (hf_llama.c: q/k/v and gate/up as parts of linear_qkv and linear_fc1). */
#ifndef PTDP_CONVERT_IMPL_H
#define PTDP_CONVERT_IMPL_H

#include "ptdp/args.h"
#include "ptdp/backend.h"
#include "ptdp/gpt.h"
#include "ptdp/grid.h"
#include "ptdp/json.h"
#include "ptdp/safetensors.h"

#include <stdio.h>

/* The model's sizes, as the layouts and the config files need them. */
typedef struct {
  long long layers, h, heads, ffn, vocab, max_pos;
  long long groups;   /* query groups (key/value heads): heads without grouped-query attention */
  long long head_dim; /* kv-channels: h / heads unless given */
  int untied;         /* the output layer is a tensor of its own */
} hf_dims;
/* groups and head_dim where 0: heads and h / heads. */
void hf_dims_complete(hf_dims *d);

/* What a Hugging Face model directory records besides tensors (config.json's keys). */
typedef struct {
  hf_dims d;
  double eps;          /* layer_norm_epsilon (rms_norm_eps) */
  double rope_theta;   /* Llama: rotary-base (0: no rotary positions) */
  double init_std;     /* initializer_range */
  double hidden_dropout, attn_dropout;
  long long eod;       /* bos/eos token id, -1: none */
  ptdp_st_dtype dtype; /* torch_dtype of the tensors */
} hf_model;

/* How a Hugging Face tensor's rows (before any transpose) come from the Megatron-core tensor's
 * (hd the head size, a the heads, g the query groups, n = a / g the heads of a group, f the MLP
 * width):
 *   SAME         row r is row r
 *   QKV_BY_HEAD  GPT-2's fused c_attn, [q all heads | k all heads | v all heads], from
 *                Megatron-core's per-head [q k v] (linear_qkv, g = a: row a' 3 hd + j hd + i is
 *                output i of head a' of projection j = 0 q, 1 k, 2 v; Hugging Face's row
 *                j a hd + a' hd + i)
 *   QKV_PART     one of Llama's q_proj, k_proj, v_proj (part 0, 1, 2) from Megatron-core's grouped
 *                linear_qkv: group g' holds [its n query heads, its key, its value], (n + 2) hd
 *                rows; q_proj row a' hd + i is row g' (n + 2) hd + (a' mod n) hd + i with
 *                g' = a' / n; k_proj row g' hd + i is row g' (n + 2) hd + n hd + i, v_proj's
 *                (n + 1) hd + i
 *   HALF         SwiGLU's gate_proj (part 0) and up_proj (part 1) from linear_fc1 [2f, h] =
 *                [gate; up]: rows part f + r */
typedef enum { HF_ROWS_SAME = 0, HF_ROWS_QKV_BY_HEAD, HF_ROWS_QKV_PART, HF_ROWS_HALF } hf_rows;

typedef struct {
  const char *hf;    /* Hugging Face's name; %d: the layer */
  const char *mcore; /* the Megatron-core name of ptdp's parameter table; %d: the layer */
  hf_rows rows;
  int part;          /* which part of the Megatron-core tensor (0: all of it) */
  int transpose;     /* stored [in, out] (GPT-2's Conv1D) where Megatron-core has [out, in] */
  int if_untied;     /* only when the output layer is untied (hf_dims.untied): lm_head */
} hf_name;

typedef struct {
  const char *architecture; /* config.json's architectures[0] */
  const char *model_type;
  const char *prefix;       /* the names' prefix that the hub's older files omit ("transformer."), or "" */
  const hf_name *names;
  int nnames;
  const char *const *buffers; /* suffixes of tensors that are buffers, not weights: ignored on import */
  const char *tied_output;    /* the output layer's name, tied to the word embedding: if present it must equal it */
  const char *word_embedding; /* the Hugging Face name of the word embedding */
  /* config.json of m to f; and m from a parsed config.json (path for messages) */
  int (*config_write)(FILE *f, const hf_model *m);
  int (*config_read)(const ptdp_json_value *cfg, const char *path, hf_model *m);
  /* Whether a checkpoint of ptdp-train's keys a is this architecture exactly (0), else an
   * error naming the first key whose model Hugging Face's class cannot compute (file: the
   * checkpoint, for the message). */
  int (*accepts)(const ptdp_args *a, const char *file);
  /* The ptdp-train keys an imported model of this architecture has besides its sizes, as
   * "key=value" (NULL-terminated); the ones that follow config.json (untied output, query
   * groups, head size, rotary base) come from hf_model. */
  const char *const *keys;
} hf_arch;

extern const hf_arch hf_arch_gpt2;
extern const hf_arch hf_arch_llama;
/* The architecture of a config.json: architectures[0] (an array of strings), else (no
 * architectures) model_type; NULL when ptdp has none. */
const hf_arch *hf_arch_find(const ptdp_json_value *cfg);
/* The config.json of architecture a names no other: architectures one class, model_type (a string)
 * a's; else an error naming path. */
int hf_arch_check(const ptdp_json_value *cfg, const hf_arch *a, const char *path);
/* The architecture of a checkpoint's keys: LlamaForCausalLM where they ask for any of RMSNorm,
 * rotary positions or SwiGLU, else GPT2LMHeadModel; an error naming the key that neither can
 * express. */
int hf_arch_of_args(const ptdp_args *a, const char *file, const hf_arch **arch);

/* ---- hf_config.c: config.json's keys, each used or refused, never replaced by a default (the
 * file's comment says how).  A size: an integer in the range of ptdp-train's key train (its key
 * table's, at least 1); absent (or null where null_default): deflt, or with deflt HF_REQUIRED an
 * error naming path and key.  A real in the range of ptdp-train's key train; absent: deflt.  A
 * boolean (absent: deflt), one that must be want where present (else an error saying why), a
 * string (absent: NULL).  Every refusal names the file, the key, the value and what ptdp needs.
 * torch_dtype's name of t; the shortest text that reads back as v. */
#define HF_REQUIRED (-1LL)
int hf_cfg_size(const ptdp_json_value *cfg, const char *key, const char *train, long long deflt, int null_default,
                const char *path, long long *out);
int hf_cfg_real(const ptdp_json_value *cfg, const char *key, const char *train, double deflt, const char *path,
                double *out);
int hf_cfg_bool(const ptdp_json_value *cfg, const char *key, int deflt, const char *path, int *out);
int hf_cfg_bool_is(const ptdp_json_value *cfg, const char *key, int want, const char *path, const char *why);
int hf_cfg_string(const ptdp_json_value *cfg, const char *key, const char *path, const char **out);
const char *hf_torch_dtype(ptdp_st_dtype t);
const char *hf_real_text(char *buf, size_t n, double v);

/* One tensor of a model in host memory: its global shape and fp32 values. */
typedef struct {
  char name[128];
  int ndim;
  long long rows, cols; /* cols 1 for a vector */
  float *data;
} hf_tensor;

/* The Hugging Face tensors of the Megatron-core tensors mc[0 .. nmc) (all of a model's), in the
 * table's order (the layers in turn); *out[0 .. *nout) own their data. */
int hf_map_export(const hf_arch *a, const hf_dims *d, const hf_tensor *mc, int nmc, hf_tensor **out, int *nout);
/* The inverse: fill mc[0 .. nmc) (shapes set, data allocated) from the Hugging Face tensors that
 * get(ctx, name, ...) reads; every element of every mc tensor must be written exactly once. */
typedef int (*hf_get_fn)(void *ctx, const char *name, long long rows, long long cols, int ndim, float *out);
int hf_map_import(const hf_arch *a, const hf_dims *d, hf_tensor *mc, int nmc, hf_get_fn get, void *ctx);
/* Each Hugging Face tensor of the table for d, in its order, with the shape it has in a model of
 * Megatron-core tensors mc[0 .. nmc) (their shapes alone are read: the tensors of one layer,
 * layer 0's standing for every layer's, and those outside the layers) to fn, until fn fails: the
 * directory's tensors are checked against config.json's sizes before the model takes memory. */
typedef int (*hf_shape_fn)(void *ctx, const char *name, long long rows, long long cols, int ndim);
int hf_map_shapes(const hf_arch *a, const hf_dims *d, const hf_tensor *mc, int nmc, hf_shape_fn fn, void *ctx);
/* The Hugging Face names the table gives for d (for checking a directory holds nothing else);
 * *names[0 .. *n) malloc'ed, freed with hf_names_free. */
int hf_map_names(const hf_arch *a, const hf_dims *d, char ***names, int *n);
void hf_names_free(char **names, int n);
void hf_tensors_free(hf_tensor *t, int n);

/* Write tensors t[0 .. n) as dtype into dir: model.safetensors, or shards of at most max_bytes
 * each (model-0000K-of-0000N.safetensors) and model.safetensors.index.json; the weight files of
 * an earlier export there are removed first. */
int hf_write_shards(const char *dir, const hf_tensor *t, int n, ptdp_st_dtype dtype, unsigned long long max_bytes);

/* A size with an optional unit, as Hugging Face's max_shard_size: "5GB", "500MB", "2GiB", "1000". */
int hf_parse_size(const char *s, unsigned long long *bytes);
/* mkdir -p dir. */
int hf_make_dir(const char *dir);
/* Copy a file. */
int hf_copy_file(const char *from, const char *to);

/* ---- hf_model.c: a one-rank model (t = p = d = 1, CPU backend, parameters only) of ptdp-train's
 * keys a; its parameter table is the model's global tensors. */
typedef struct {
  ptdp_backend *be;
  ptdp_grid grid;
  int have_grid, have_model;
  ptdp_gpt m;
} hf_session;
int hf_session_create(hf_session *s, const ptdp_args *a);
void hf_session_free(hf_session *s);
/* Host tensors named and shaped as the model's parameters (*n of them), zeroed. */
int hf_session_tensors(const hf_session *s, hf_tensor **mc, int *n);
/* The model's weights into mc (from hf_session_tensors), and back. */
int hf_session_get(hf_session *s, hf_tensor *mc);
int hf_session_set(hf_session *s, const hf_tensor *mc);

/* The two directions. */
int hf_export(const char *load_dir, const char *out_dir, ptdp_st_dtype dtype, unsigned long long max_shard);
int hf_import(const char *in_dir, const char *save_dir);

#endif
