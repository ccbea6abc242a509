/* ptdp-convert --hf-in DIR --save CKPT: a Hugging Face model directory as a ptdp checkpoint.
 *
 * Read: DIR/config.json (the architecture, GPT2LMHeadModel or LlamaForCausalLM, and its keys), the
 * weights from DIR/model.safetensors or from the files DIR/model.safetensors.index.json maps them
 * to (F32, F16 or BF16: widened to fp32 exactly), and the GPT-2 tokenizer's DIR/vocab.json and
 * merges.txt when present (copied into CKPT and named by its vocab-file and merge-file keys), else
 * a DIR/tokenizer.json (copied, named by tokenizer-model).  Written: CKPT as ptdp-train saves
 * it, iteration 0, weights only (ptdp-train loads it with finetune, or no-load-optim), through
 * the checkpoint module and a one-rank model: global shapes, any layout loads it.
 *
 * Refused, each with a message naming the file and the reason: another architecture, keys whose
 * model ptdp does not compute and values outside ptdp-train's ranges (config_read, hf_config.c),
 * a tensor missing or of another shape or dtype (checked on the headers before the model takes
 * memory), a weight under two names (in two files, or with and without the prefix), a tensor the
 * architecture's table does not know (an untied lm_head that differs from the word embedding
 * among them), an index naming files outside DIR, tokenizer files ptdp cannot read.  A value that
 * is not finite is converted, as transformers loads it, with a warning naming the first. */
#include "convert_impl.h"

#include "ptdp/checkpoint.h"
#include "ptdp/error.h"
#include "ptdp/textfile.h"
#include "ptdp/tokenizer.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONFIG_MAX (1 << 20)     /* bytes of config.json */
#define INDEX_MAX (64 << 20)     /* bytes of the index */
#define MAX_SHARDS 4096

/* The weight files of a directory and where each tensor is. */
typedef struct {
  const hf_arch *arch;
  const char *dir;
  int nfiles;
  ptdp_safetensors *file[MAX_SHARDS];
  /* the first tensor read that holds a value that is not finite, and how many do */
  int nonfinite;
  char nf_name[128], nf_file[2 * PTDP_OPT_STRLEN];
  long long nf_at, nf_cols;
  float nf_value;
} weights;

static void weights_close(weights *w)
{
  for (int i = 0; i < w->nfiles; i++) ptdp_safetensors_close(&w->file[i]);
  w->nfiles = 0;
}

/* A JSON file whole (a regular file of at most max bytes: ptdp/textfile.h), parsed. */
static int read_json(const char *path, const char *what, size_t max, ptdp_json_value *v)
{
  char *text;
  size_t n;
  memset(v, 0, sizeof *v);
  PTDP_CALL(ptdp_text_file_read(path, what, max, &text, &n));
  const int rc = ptdp_json_parse(text, n, path, v);
  free(text);
  return rc;
}

static int read_config(const char *dir, const hf_arch **arch, hf_model *hm)
{
  char path[2 * PTDP_OPT_STRLEN];
  snprintf(path, sizeof path, "%s/config.json", dir);
  PTDP_CHECK(access(path, R_OK) == 0, "no readable config.json in '%s': give a Hugging Face model directory", dir);
  ptdp_json_value cfg;
  int rc = read_json(path, "the model's configuration", CONFIG_MAX, &cfg);
  if (!rc && cfg.kind != PTDP_JSON_OBJECT) rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: not a JSON object", path);
  const ptdp_json_value *a = rc ? NULL : ptdp_json_get(&cfg, "architectures");
  int strings = a && a->kind == PTDP_JSON_ARRAY && a->n > 0;
  for (int i = 0; strings && i < a->n; i++) strings = a->items[i].kind == PTDP_JSON_STRING;
  if (a && !strings)
    rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: architectures is not an array of class names (strings)", path);
  if (!rc && !(*arch = hf_arch_find(&cfg))) {
    const ptdp_json_value *t = ptdp_json_get(&cfg, "model_type");
    rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: architecture '%s' (model_type '%s'): ptdp-convert reads GPT2LMHeadModel "
                   "and LlamaForCausalLM",
                   path,
                   a && a->kind == PTDP_JSON_ARRAY && a->n && a->items[0].kind == PTDP_JSON_STRING ? a->items[0].str
                                                                                                 : "?",
                   t && t->kind == PTDP_JSON_STRING ? t->str : "?");
  }
  memset(hm, 0, sizeof *hm);
  if (!rc) rc = hf_arch_check(&cfg, *arch, path);
  if (!rc) rc = (*arch)->config_read(&cfg, path, hm);
  ptdp_json_free(&cfg);
  return rc;
}

/* A file name of the index: a plain name inside the directory, a .safetensors file. */
static int safe_name(const char *s)
{
  const size_t n = strlen(s);
  return n > 12 && n < 256 && !strchr(s, '/') && s[0] != '.' && !strcmp(s + n - 12, ".safetensors");
}

static int open_file(weights *w, const char *name)
{
  for (int i = 0; i < w->nfiles; i++) {
    const char *p = strrchr(w->file[i]->path, '/');
    if (!strcmp(p ? p + 1 : w->file[i]->path, name)) return 0;
  }
  PTDP_CHECK(w->nfiles < MAX_SHARDS, "more than %d weight files", MAX_SHARDS);
  char path[2 * PTDP_OPT_STRLEN];
  snprintf(path, sizeof path, "%s/%s", w->dir, name);
  PTDP_CALL(ptdp_safetensors_open(path, &w->file[w->nfiles]));
  w->nfiles++;
  return 0;
}

/* Every file the index's weight_map names (each a plain name in the directory). */
static int open_index(weights *w, const char *path)
{
  ptdp_json_value ix;
  int rc = read_json(path, "the weights' index", INDEX_MAX, &ix);
  const ptdp_json_value *map = rc ? NULL : ptdp_json_get(&ix, "weight_map");
  if (!rc && (!map || map->kind != PTDP_JSON_OBJECT))
    rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: no weight_map object", path);
  for (int i = 0; !rc && i < map->n; i++) {
    const ptdp_json_value *f = &map->items[i];
    if (f->kind != PTDP_JSON_STRING || !safe_name(f->str))
      rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: tensor '%s' maps to '%s', not a .safetensors file in the directory", path,
                     map->keys[i], f->kind == PTDP_JSON_STRING ? f->str : "(not a string)");
    else rc = open_file(w, f->str);
  }
  ptdp_json_free(&ix);
  return rc;
}

static int open_weights(weights *w, const char *dir)
{
  char path[2 * PTDP_OPT_STRLEN];
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  if (access(path, F_OK) == 0) return open_index(w, path);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  PTDP_CHECK(access(path, F_OK) == 0, "no model.safetensors or model.safetensors.index.json in '%s' (ptdp-convert "
             "reads safetensors files, not pytorch_model.bin)", dir);
  return open_file(w, "model.safetensors");
}

/* The tensor called name, also without the architecture's prefix (the hub's older files; a
 * directory holding both is refused by check_names). */
static const ptdp_st_tensor *find(const weights *w, const char *name, const ptdp_safetensors **in)
{
  const size_t np = strlen(w->arch->prefix);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < w->nfiles; i++) {
      const char *n = k == 0 ? name : !strncmp(name, w->arch->prefix, np) ? name + np : NULL;
      const ptdp_st_tensor *t = n ? ptdp_safetensors_find(w->file[i], n) : NULL;
      if (t) return *in = w->file[i], t;
    }
  return NULL;
}

/* The tensor name of the directory, present, of exactly this shape and of a dtype ptdp reads: its
 * header entry (nothing of its data is read). */
static int check_tensor(const weights *w, const char *name, long long rows, long long cols, int ndim,
                        const ptdp_st_tensor **tp, const ptdp_safetensors **in)
{
  const ptdp_st_tensor *t = *tp = find(w, name, in);
  PTDP_CHECK(t, "'%s' holds no tensor '%s' (a %s of config.json's sizes has it)", w->dir, name,
             w->arch->architecture);
  const int same = t->ndim == ndim && t->shape[0] == rows && (ndim == 1 || t->shape[1] == cols);
  char has[160] = "", want[64];
  for (int k = 0, at = 0; k < t->ndim && at < (int)sizeof has - 24; k++)
    at += snprintf(has + at, sizeof has - (size_t)at, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
  if (ndim == 1) snprintf(want, sizeof want, "%lld", rows);
  else snprintf(want, sizeof want, "%lld, %lld", rows, cols);
  PTDP_CHECK(same, "%s: tensor '%s' has shape [%s] where config.json's model needs [%s]", (*in)->path, t->name, has,
             want);
  PTDP_CHECK(t->dtype == PTDP_ST_F32 || t->dtype == PTDP_ST_F16 || t->dtype == PTDP_ST_BF16,
             "%s: tensor '%s' is stored as %s; ptdp reads F32, F16 and BF16 tensors", (*in)->path, t->name,
             ptdp_st_dtype_name(t->dtype));
  return 0;
}

/* hf_shape_fn: the checks of check_tensor, before the model is built. */
static int shape_ok(void *ctx, const char *name, long long rows, long long cols, int ndim)
{
  const ptdp_st_tensor *t;
  const ptdp_safetensors *in;
  return check_tensor(ctx, name, rows, cols, ndim, &t, &in);
}

/* The first value of x[0 .. n) (a tensor of t just read, cols columns) that is not finite, kept
 * for the warning when it is the first of the directory's: transformers loads such a file as it
 * is, and so does ptdp, but training would stop at its first loss without naming the tensor.
 * One pass over what was just read: negligible beside reading it. */
static void note_nonfinite(weights *w, const ptdp_safetensors *in, const ptdp_st_tensor *t, const float *x,
                           long long n, long long cols)
{
  long long i = 0;
  while (i < n && isfinite(x[i])) i++;
  if (i == n || w->nonfinite++) return;
  snprintf(w->nf_name, sizeof w->nf_name, "%s", t->name);
  snprintf(w->nf_file, sizeof w->nf_file, "%s", in->path);
  w->nf_at = i;
  w->nf_cols = cols;
  w->nf_value = x[i];
}

static void warn_nonfinite(const weights *w)
{
  if (!w->nonfinite) return;
  fprintf(stderr, "ptdp-convert: warning: %s: tensor '%s' holds a value that is not finite (%g) at element %lld (row "
          "%lld, column %lld)%s%d tensor%s in all; converted as it is, but training from it stops at the first "
          "loss\n", w->nf_file, w->nf_name, (double)w->nf_value, w->nf_at, w->nf_at / w->nf_cols,
          w->nf_at % w->nf_cols, ": the first of ", w->nonfinite, w->nonfinite == 1 ? "" : "s");
}

/* hf_get_fn: tensor name, of exactly this shape, as fp32. */
static int get_tensor(void *ctx, const char *name, long long rows, long long cols, int ndim, float *out)
{
  weights *w = ctx;
  const ptdp_st_tensor *t;
  const ptdp_safetensors *in;
  PTDP_CALL(check_tensor(w, name, rows, cols, ndim, &t, &in));
  PTDP_CALL(ptdp_safetensors_read_f32(in, t, out));
  note_nonfinite(w, in, t, out, rows * (ndim == 1 ? 1 : cols), ndim == 1 ? 1 : cols);
  return 0;
}

static int is_buffer(const hf_arch *a, const char *name)
{
  const size_t n = strlen(name);
  for (int i = 0; a->buffers && a->buffers[i]; i++) {
    const size_t k = strlen(a->buffers[i]);
    if (n >= k && !strcmp(name + n - k, a->buffers[i])) return 1;
  }
  return 0;
}

static int known(char **names, int n, const char *prefix, const char *name)
{
  const size_t np = strlen(prefix);
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name) || (!strncmp(names[i], prefix, np) && !strcmp(names[i] + np, name))) return 1;
  return 0;
}

/* A tensor of the directory and the file that holds it. */
typedef struct {
  const ptdp_st_tensor *t;
  const ptdp_safetensors *in;
} located;

static int cmp_located(const void *a, const void *b)
{
  return strcmp(((const located *)a)->t->name, ((const located *)b)->t->name);
}

/* Each weight under one name: no tensor in two files (each file's names are unique already), and
 * none both with and without the architecture's prefix ("transformer.h.0.ln_1.weight" and
 * "h.0.ln_1.weight"): which of the two would be read is unclear, and their values may differ. */
static int check_unique(const weights *w)
{
  size_t n = 0, k = 0;
  for (int f = 0; f < w->nfiles; f++) n += (size_t)w->file[f]->ntensors;
  located *all;
  PTDP_CALLOC(all, n + 1, sizeof *all);
  for (int f = 0; f < w->nfiles; f++)
    for (int i = 0; i < w->file[f]->ntensors; i++) all[k++] = (located){&w->file[f]->tensors[i], w->file[f]};
  qsort(all, n, sizeof *all, cmp_located);
  const located *dup = NULL, *bare = NULL, *full = NULL;
  for (size_t i = 1; i < n && !dup; i++)
    if (!strcmp(all[i - 1].t->name, all[i].t->name)) dup = &all[i];
  const char *prefix = w->arch->prefix;
  const size_t np = strlen(prefix);
  for (size_t i = 0; np && i < n && !dup && !bare; i++) {
    if (strncmp(all[i].t->name, prefix, np)) continue;
    const ptdp_st_tensor key = {.name = (char *)all[i].t->name + np};
    const located probe = {&key, NULL};
    if ((bare = bsearch(&probe, all, n, sizeof *all, cmp_located))) full = &all[i];
  }
  int rc = 0;
  if (dup) rc = PTDP_FAIL(PTDP_ERR_INPUT, "'%s': tensor '%s' is in two of its weight files", w->dir, dup->t->name);
  else if (bare)
    rc = PTDP_FAIL(PTDP_ERR_INPUT, "'%s': tensors '%s' (%s) and '%s' (%s) are one weight, with and without the "
                   "prefix '%s': which to read is unclear", w->dir, full->t->name, full->in->path, bare->t->name,
                   bare->in->path, prefix);
  free(all);
  return rc;
}

/* Every tensor of the files must be in the table, a buffer, or the tied output layer (of the word
 * embedding's shape here, its values compared once they are read: check_tied). */
static int check_names(const weights *w, const hf_dims *d)
{
  char **names;
  int n;
  PTDP_CALL(hf_map_names(w->arch, d, &names, &n));
  int rc = 0;
  for (int f = 0; f < w->nfiles && !rc; f++)
    for (int i = 0; i < w->file[f]->ntensors && !rc; i++) {
      const ptdp_st_tensor *t = &w->file[f]->tensors[i];
      if (known(names, n, w->arch->prefix, t->name) || is_buffer(w->arch, t->name)) continue;
      if (strcmp(t->name, w->arch->tied_output))
        rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: tensor '%s' is not part of a %s that ptdp can represent",
                       w->file[f]->path, t->name, w->arch->architecture);
      else if (!(t->ndim == 2 && t->shape[0] == d->vocab && t->shape[1] == d->h))
        rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: %s has another shape than the word embedding: an untied output layer, "
                       "which ptdp's GPT does not have", w->file[f]->path, t->name);
    }
  hf_names_free(names, n);
  return rc;
}

/* The Megatron-core tensors of one layer and those outside the layers, shapes only, of the model
 * of keys a: its parameter table (ptdp/params.h), which allocates nothing. */
static int layer0_tensors(const ptdp_args *a, hf_tensor **out, int *n)
{
  ptdp_model_config c;
  ptdp_model_config_of(&a->model, &(ptdp_model_env){.use = PTDP_MODEL_WEIGHTS, .world = 1}, &c);
  ptdp_model_shape s = c.shape;
  s.num_layers = 1;
  const ptdp_param_position pos = {.t = 1, .p = 1, .v = 1};
  const int k = ptdp_params_count(&s, &pos);
  ptdp_param_info *p;
  PTDP_CALLOC(p, (size_t)k + 1, sizeof *p);
  hf_tensor *t = calloc((size_t)k + 1, sizeof *t);
  if (!t || ptdp_params_list(&s, &pos, p, k) != k) {
    free(p);
    free(t);
    return PTDP_FAIL(PTDP_ERR_MEM, "out of memory");
  }
  for (int i = 0; i < k; i++) {
    snprintf(t[i].name, sizeof t[i].name, "%s", p[i].name);
    t[i].ndim = p[i].ndim;
    t[i].rows = p[i].grows;
    t[i].cols = p[i].gcols;
  }
  free(p);
  *out = t;
  *n = k;
  return 0;
}

/* Everything about the directory's tensors that their headers tell, before the model takes any
 * memory: each name the table gives for config.json's sizes present, of its shape and a dtype
 * ptdp reads; each weight under one name; nothing else. */
static int check_headers(const weights *w, const hf_model *hm, const ptdp_args *a)
{
  hf_tensor *mc = NULL;
  int nmc = 0;
  PTDP_CALL(layer0_tensors(a, &mc, &nmc));
  int rc = check_unique(w);
  if (!rc) rc = hf_map_shapes(w->arch, &hm->d, mc, nmc, shape_ok, (void *)w);
  if (!rc) rc = check_names(w, &hm->d);
  hf_tensors_free(mc, nmc);
  return rc;
}

/* The tied output layer, when a file holds it, must be the word embedding bit for bit (an untied
 * one is a tensor of the table). */
static int check_tied(const weights *w, const hf_dims *d, const hf_tensor *wte)
{
  const ptdp_safetensors *in = NULL;
  const ptdp_st_tensor *t = NULL;
  for (int f = 0; f < w->nfiles && !t && !d->untied; f++)
    if ((t = ptdp_safetensors_find(w->file[f], w->arch->tied_output))) in = w->file[f];
  if (!t) return 0;
  float *x;
  PTDP_ALLOC(x, sizeof(float) * (size_t)(wte->rows * wte->cols) + 1);
  int rc = ptdp_safetensors_read_f32(in, t, x);
  if (!rc && memcmp(x, wte->data, sizeof(float) * (size_t)(wte->rows * wte->cols)))
    rc = PTDP_FAIL(PTDP_ERR_INPUT, "%s: %s differs from the word embedding: an untied output layer, which ptdp's GPT "
                   "(output tied to the word embedding) cannot represent", in->path, t->name);
  free(x);
  return rc;
}

/* ---------------------------------------------------------------- ptdp-train's keys */

static int set_int(ptdp_options *o, const char *key, long long v)
{
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v);
  return ptdp_options_set(o, key, buf, PTDP_SRC_CMDLINE, "config.json");
}

static int set_real(ptdp_options *o, const char *key, double v)
{
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", v);
  return ptdp_options_set(o, key, buf, PTDP_SRC_CMDLINE, "config.json");
}

/* The keys the architecture implies, and those config.json decides: an untied output layer, query
 * groups, a head size other than h / a, the rotary base. */
static int arch_keys(ptdp_options *o, const hf_arch *arch, const hf_model *hm)
{
  const hf_dims *d = &hm->d;
  for (const char *const *k = arch->keys; k && *k; k++) {
    char key[64];
    const char *eq = strchr(*k, '=');
    PTDP_CHECK_INTERNAL(eq && eq - *k < (long)sizeof key, "key '%s'", *k);
    snprintf(key, sizeof key, "%.*s", (int)(eq - *k), *k);
    PTDP_CALL(ptdp_options_set(o, key, eq + 1, PTDP_SRC_CMDLINE, "config.json"));
  }
  if (d->untied)
    PTDP_CALL(ptdp_options_set(o, "untie-embeddings-and-output-weights", "true", PTDP_SRC_CMDLINE, "config.json"));
  if (d->groups != d->heads) {
    PTDP_CALL(ptdp_options_set(o, "group-query-attention", "true", PTDP_SRC_CMDLINE, "config.json"));
    PTDP_CALL(set_int(o, "num-query-groups", d->groups));
  }
  if (d->head_dim * d->heads != d->h) PTDP_CALL(set_int(o, "kv-channels", d->head_dim));
  /* Llama's config_read refuses a rope_theta outside rotary-base's range: 0 here is GPT-2's none */
  return hm->rope_theta != 0 ? set_real(o, "rotary-base", hm->rope_theta) : 0;
}

static int model_keys(ptdp_options *o, const hf_arch *arch, const hf_model *hm)
{
  const hf_dims *d = &hm->d;
  PTDP_CALL(arch_keys(o, arch, hm));
  PTDP_CALL(set_int(o, "num-layers", d->layers));
  PTDP_CALL(set_int(o, "hidden-size", d->h));
  PTDP_CALL(set_int(o, "num-attention-heads", d->heads));
  PTDP_CALL(set_int(o, "ffn-hidden-size", d->ffn));
  PTDP_CALL(set_int(o, "max-position-embeddings", d->max_pos));
  PTDP_CALL(set_int(o, "seq-length", d->max_pos));
  PTDP_CALL(set_int(o, "vocab-size", d->vocab));
  PTDP_CALL(set_real(o, "layernorm-epsilon", hm->eps));
  PTDP_CALL(set_real(o, "init-method-std", hm->init_std));
  PTDP_CALL(set_real(o, "hidden-dropout", hm->hidden_dropout));
  return set_real(o, "attention-dropout", hm->attn_dropout);
}

/* A tokenizer.json (Llama's, Qwen's, ...: ptdp's HuggingFaceTokenizer reads it), copied into
 * save_dir and named by tokenizer-model. */
static int hf_tokenizer_keys(ptdp_options *o, const char *json_in, const char *save_dir, long long vocab)
{
  char dir[PATH_MAX], path[PATH_MAX + 16];
  ptdp_tokenizer *tok = NULL;
  PTDP_CALL(ptdp_tokenizer_create_hf(&tok, json_in));
  const int tv = ptdp_tokenizer_vocab_size(tok);
  ptdp_tokenizer_destroy(&tok);
  PTDP_CHECK(tv <= vocab, "'%s': the tokenizer has %d tokens but config.json's vocab_size is %lld", json_in, tv, vocab);
  PTDP_CHECK_IO(realpath(save_dir, dir), "cannot resolve '%s': %s", save_dir, strerror(errno));
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  PTDP_CALL(hf_copy_file(json_in, path));
  PTDP_CALL(ptdp_options_set(o, "tokenizer-model", path, PTDP_SRC_CMDLINE, "the tokenizer's files"));
  return ptdp_options_set(o, "tokenizer-type", "HuggingFaceTokenizer", PTDP_SRC_CMDLINE, "the tokenizer's files");
}

/* The GPT-2 tokenizer's files, copied into save_dir and named by the keys, else a tokenizer.json;
 * when the directory has neither, a note (the checkpoint then names none, as a mock-data run's). */
static int tokenizer_keys(ptdp_options *o, const char *in_dir, const char *save_dir, long long vocab)
{
  char vocab_in[2 * PTDP_OPT_STRLEN], merges_in[2 * PTDP_OPT_STRLEN], dir[PATH_MAX], path[PATH_MAX + 16];
  snprintf(vocab_in, sizeof vocab_in, "%s/vocab.json", in_dir);
  snprintf(merges_in, sizeof merges_in, "%s/merges.txt", in_dir);
  snprintf(path, sizeof path, "%s/tokenizer.json", in_dir);
  if (access(vocab_in, F_OK) && access(merges_in, F_OK) && !access(path, F_OK))
    return hf_tokenizer_keys(o, path, save_dir, vocab);
  if (access(vocab_in, F_OK) && access(merges_in, F_OK)) {
    fprintf(stderr, "ptdp-convert: note: '%s' has no vocab.json and merges.txt (the GPT-2 tokenizer's files ptdp "
            "reads) and no tokenizer.json: the checkpoint names no tokenizer\n", in_dir);
    return 0;
  }
  ptdp_tokenizer *tok = NULL;
  PTDP_CALL(ptdp_tokenizer_create_gpt2(&tok, vocab_in, merges_in));
  const int tv = ptdp_tokenizer_vocab_size(tok);
  ptdp_tokenizer_destroy(&tok);
  PTDP_CHECK(tv == vocab, "'%s': the tokenizer has %d tokens but config.json's vocab_size is %lld", in_dir, tv, vocab);
  PTDP_CHECK_IO(realpath(save_dir, dir), "cannot resolve '%s': %s", save_dir, strerror(errno));
  snprintf(path, sizeof path, "%s/vocab.json", dir);
  PTDP_CALL(hf_copy_file(vocab_in, path));
  PTDP_CALL(ptdp_options_set(o, "vocab-file", path, PTDP_SRC_CMDLINE, "the tokenizer's files"));
  snprintf(path, sizeof path, "%s/merges.txt", dir);
  PTDP_CALL(hf_copy_file(merges_in, path));
  PTDP_CALL(ptdp_options_set(o, "merge-file", path, PTDP_SRC_CMDLINE, "the tokenizer's files"));
  return ptdp_options_set(o, "tokenizer-type", "GPT2BPETokenizer", PTDP_SRC_CMDLINE, "the tokenizer's files");
}

/* ---------------------------------------------------------------- the conversion */

static int save(const char *save_dir, ptdp_args *a, const hf_tensor *mc, hf_session *s)
{
  PTDP_CALL(hf_session_set(s, mc));
  ptdp_options view;
  ptdp_args_view(a, &view);
  const ptdp_checkpoint_info info = {.iteration = 0, .keys = &view, .keep = 0};
  ptdp_checkpoint_stats st;
  return ptdp_checkpoint_save(save_dir, &info, &s->m, NULL, NULL, &st);
}

static int convert(weights *w, const hf_model *hm, ptdp_args *a, const char *save_dir)
{
  hf_session s;
  hf_tensor *mc = NULL;
  int nmc = 0;
  int rc = hf_session_create(&s, a);
  if (!rc) rc = hf_session_tensors(&s, &mc, &nmc);
  if (!rc) rc = hf_map_import(w->arch, &hm->d, mc, nmc, get_tensor, w);
  const hf_tensor *wte = NULL;
  for (int i = 0; i < nmc; i++)
    if (s.m.params.table[i].role == PTDP_PARAM_WORD_EMBEDDING) wte = &mc[i];
  if (!rc) rc = wte ? check_tied(w, &hm->d, wte) : PTDP_FAIL(PTDP_ERR_INTERNAL, "no word embedding");
  if (!rc) warn_nonfinite(w);
  if (!rc) rc = save(save_dir, a, mc, &s);
  hf_tensors_free(mc, nmc);
  hf_session_free(&s);
  return rc;
}

int hf_import(const char *in_dir, const char *save_dir)
{
  const hf_arch *arch = NULL;
  hf_model hm;
  PTDP_CALL(read_config(in_dir, &arch, &hm));
  weights w = {.arch = arch, .dir = in_dir};
  ptdp_args a;
  ptdp_options o;
  memset(&o, 0, sizeof o);
  int rc = open_weights(&w, in_dir);
  if (!rc) rc = ptdp_args_init(&a, &o);
  if (!rc) rc = model_keys(&o, arch, &hm);
  if (!rc) rc = check_headers(&w, &hm, &a);
  if (!rc) rc = hf_make_dir(save_dir);
  if (!rc) rc = tokenizer_keys(&o, in_dir, save_dir, hm.d.vocab);
  if (!rc) rc = convert(&w, &hm, &a, save_dir);
  if (!rc)
    fprintf(stderr, "ptdp-convert: %s (%s, %d file%s) -> %s/iter_0000000\n", in_dir, arch->architecture, w.nfiles,
            w.nfiles == 1 ? "" : "s", save_dir);
  ptdp_options_free(&o);
  weights_close(&w);
  return rc;
}
