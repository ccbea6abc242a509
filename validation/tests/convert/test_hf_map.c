/* The name-and-layout tables of ptdp-convert (src/convert/hf_map.c, hf_gpt2.c, hf_llama.c) on
 * synthetic tensors whose every element is its own index, so a moved element names where it came
 * from.  For each architecture: exporting then importing gives back every Megatron-core tensor
 * exactly (every row written once: the table's maps are onto and one-to-one), and each Hugging
 * Face tensor is where an independent formula, written here from the two layouts, puts it:
 *   GPT-2   c_attn.weight[i][j h + a hd + d] = linear_qkv[a 3 hd + j hd + d][i] (Conv1D: [in, out]);
 *           c_proj, c_fc, mlp.c_proj transposed
 *   Llama   q_proj[a hd + d] = linear_qkv[(a / n)(n + 2) hd + (a mod n) hd + d], k_proj[g hd + d] =
 *           linear_qkv[g (n + 2) hd + n hd + d], v_proj the next hd rows (n = heads / groups);
 *           gate_proj = linear_fc1's first f rows, up_proj the last f; lm_head only when untied
 * and config.json written then read gives the same sizes.  Planted: a Llama table whose k_proj
 * takes the value rows is caught (two parts write the same rows). */
#include "../../../src/convert/convert_impl.h"

#include "ptdp/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails, checks;

static void check(int cond, const char *what)
{
  checks++;
  if (!cond) {
    fails++;
    printf("FAIL: %s\n", what);
  }
}

/* Megatron-core tensors of the table's model: name, shape, element k = k + 1000 * tensor. */
typedef struct {
  hf_tensor t[64];
  int n;
} model;

static void add(model *m, const char *name, long long rows, long long cols, int ndim)
{
  hf_tensor *t = &m->t[m->n];
  snprintf(t->name, sizeof t->name, "%s", name);
  t->rows = rows, t->cols = cols, t->ndim = ndim;
  t->data = malloc(sizeof(float) * (size_t)(rows * cols));
  for (long long k = 0; k < rows * cols; k++) t->data[k] = (float)(k + 1000 * m->n);
  m->n++;
}

static void gpt2_model(model *m, const hf_dims *d)
{
  const long long h = d->h, f = d->ffn;
  char n[128];
  m->n = 0;
  add(m, "embedding.word_embeddings.weight", d->vocab, h, 2);
  add(m, "embedding.position_embeddings.weight", d->max_pos, h, 2);
  for (int l = 0; l < d->layers; l++) {
    const struct { const char *s; long long r, c; int nd; } t[] = {
      {"input_layernorm.weight", h, 1, 1}, {"input_layernorm.bias", h, 1, 1},
      {"self_attention.linear_qkv.weight", 3 * h, h, 2}, {"self_attention.linear_qkv.bias", 3 * h, 1, 1},
      {"self_attention.linear_proj.weight", h, h, 2}, {"self_attention.linear_proj.bias", h, 1, 1},
      {"pre_mlp_layernorm.weight", h, 1, 1}, {"pre_mlp_layernorm.bias", h, 1, 1},
      {"mlp.linear_fc1.weight", f, h, 2}, {"mlp.linear_fc1.bias", f, 1, 1},
      {"mlp.linear_fc2.weight", h, f, 2}, {"mlp.linear_fc2.bias", h, 1, 1}};
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
      snprintf(n, sizeof n, "decoder.layers.%d.%s", l, t[k].s);
      add(m, n, t[k].r, t[k].c, t[k].nd);
    }
  }
  add(m, "decoder.final_layernorm.weight", h, 1, 1);
  add(m, "decoder.final_layernorm.bias", h, 1, 1);
}

static void llama_model(model *m, const hf_dims *d)
{
  const long long h = d->h, f = d->ffn, hd = d->head_dim, qkv = (d->heads + 2 * d->groups) * hd;
  char n[128];
  m->n = 0;
  add(m, "embedding.word_embeddings.weight", d->vocab, h, 2);
  for (int l = 0; l < d->layers; l++) {
    const struct { const char *s; long long r, c; int nd; } t[] = {
      {"input_layernorm.weight", h, 1, 1}, {"self_attention.linear_qkv.weight", qkv, h, 2},
      {"self_attention.linear_proj.weight", h, d->heads * hd, 2}, {"pre_mlp_layernorm.weight", h, 1, 1},
      {"mlp.linear_fc1.weight", 2 * f, h, 2}, {"mlp.linear_fc2.weight", h, f, 2}};
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
      snprintf(n, sizeof n, "decoder.layers.%d.%s", l, t[k].s);
      add(m, n, t[k].r, t[k].c, t[k].nd);
    }
  }
  add(m, "decoder.final_layernorm.weight", h, 1, 1);
  if (d->untied) add(m, "output_layer.weight", d->vocab, h, 2);
}

static const hf_tensor *find(const hf_tensor *t, int n, const char *name)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(t[i].name, name)) return &t[i];
  return NULL;
}

/* hf_get_fn over an exported list */
typedef struct {
  const hf_tensor *t;
  int n;
} exported;

static int get(void *ctx, const char *name, long long rows, long long cols, int ndim, float *out)
{
  const exported *e = ctx;
  const hf_tensor *t = find(e->t, e->n, name);
  PTDP_CHECK(t && t->rows == rows && t->cols == cols && t->ndim == ndim, "no tensor %s of that shape", name);
  memcpy(out, t->data, sizeof(float) * (size_t)(rows * cols));
  return 0;
}

/* Export, import into zeroed copies, compare; returns the exported tensors. */
static int round_trip(const char *what, const hf_arch *a, const hf_dims *d, model *m, hf_tensor **hf, int *nhf)
{
  char msg[200];
  int rc = hf_map_export(a, d, m->t, m->n, hf, nhf);
  snprintf(msg, sizeof msg, "%s: export (%d tensors)", what, rc ? 0 : *nhf);
  check(rc == 0, msg);
  if (rc) return rc;
  model back = *m;
  for (int i = 0; i < m->n; i++) back.t[i].data = calloc((size_t)(m->t[i].rows * m->t[i].cols), sizeof(float));
  exported e = {*hf, *nhf};
  rc = hf_map_import(a, d, back.t, back.n, get, &e);
  int same = rc == 0;
  for (int i = 0; i < m->n; i++) {
    same = same && !memcmp(back.t[i].data, m->t[i].data, sizeof(float) * (size_t)(m->t[i].rows * m->t[i].cols));
    free(back.t[i].data);
  }
  snprintf(msg, sizeof msg, "%s: export then import gives every Megatron-core tensor back exactly", what);
  check(same, msg);
  return rc;
}

static float at(const model *m, const char *name, long long r, long long c)
{
  const hf_tensor *t = find(m->t, m->n, name);
  return t->data[r * t->cols + c];
}

static void gpt2(void)
{
  hf_dims d = {.layers = 2, .h = 16, .heads = 4, .ffn = 24, .vocab = 11, .max_pos = 5};
  hf_dims_complete(&d);
  model m;
  gpt2_model(&m, &d);
  hf_tensor *hf;
  int n;
  if (round_trip("GPT-2", &hf_arch_gpt2, &d, &m, &hf, &n)) return;
  const long long h = d.h, hd = d.head_dim;
  const hf_tensor *w = find(hf, n, "transformer.h.1.attn.c_attn.weight");
  const hf_tensor *b = find(hf, n, "transformer.h.1.attn.c_attn.bias");
  int ok = w && b && w->rows == h && w->cols == 3 * h;
  for (long long i = 0; ok && i < h; i++)
    for (long long j = 0; j < 3; j++)
      for (long long a = 0; a < d.heads; a++)
        for (long long e = 0; e < hd; e++) {
          const long long col = j * h + a * hd + e, row = a * 3 * hd + j * hd + e;
          ok = ok && w->data[i * 3 * h + col] == at(&m, "decoder.layers.1.self_attention.linear_qkv.weight", row, i);
          ok = ok && (i || b->data[col] == at(&m, "decoder.layers.1.self_attention.linear_qkv.bias", row, 0));
        }
  check(ok, "GPT-2: c_attn holds [q | k | v] of all heads, transposed, from linear_qkv's per-head rows");
  const hf_tensor *fc = find(hf, n, "transformer.h.0.mlp.c_fc.weight");
  ok = fc && fc->rows == h && fc->cols == d.ffn;
  for (long long r = 0; ok && r < d.ffn; r++)
    for (long long c = 0; c < h; c++)
      ok = ok && fc->data[c * d.ffn + r] == at(&m, "decoder.layers.0.mlp.linear_fc1.weight", r, c);
  check(ok, "GPT-2: c_fc is linear_fc1 transposed (Conv1D)");
  check(n == 2 + 12 * 2 + 2 && !find(hf, n, "lm_head.weight"), "GPT-2: 28 tensors, no lm_head (tied)");
  hf_tensors_free(hf, n);
  for (int i = 0; i < m.n; i++) free(m.t[i].data);
}

static void llama_layout(const hf_dims *d, const model *m, const hf_tensor *hf, int n)
{
  const long long hd = d->head_dim, g = d->groups, k = d->heads / g, stride = (k + 2) * hd;
  const char *qkv = "decoder.layers.1.self_attention.linear_qkv.weight";
  const hf_tensor *q = find(hf, n, "model.layers.1.self_attn.q_proj.weight");
  const hf_tensor *kp = find(hf, n, "model.layers.1.self_attn.k_proj.weight");
  const hf_tensor *v = find(hf, n, "model.layers.1.self_attn.v_proj.weight");
  int ok = q && kp && v && q->rows == d->heads * hd && kp->rows == g * hd && v->rows == g * hd;
  for (long long a = 0; ok && a < d->heads; a++)
    for (long long e = 0; e < hd; e++)
      for (long long c = 0; c < d->h; c++)
        ok = ok && q->data[(a * hd + e) * d->h + c] == at(m, qkv, a / k * stride + a % k * hd + e, c);
  for (long long gg = 0; ok && gg < g; gg++)
    for (long long e = 0; e < hd; e++)
      for (long long c = 0; c < d->h; c++) {
        ok = ok && kp->data[(gg * hd + e) * d->h + c] == at(m, qkv, gg * stride + k * hd + e, c);
        ok = ok && v->data[(gg * hd + e) * d->h + c] == at(m, qkv, gg * stride + (k + 1) * hd + e, c);
      }
  check(ok, "Llama: q_proj, k_proj, v_proj are the query heads, keys and values of linear_qkv's groups");
  const hf_tensor *gate = find(hf, n, "model.layers.0.mlp.gate_proj.weight");
  const hf_tensor *up = find(hf, n, "model.layers.0.mlp.up_proj.weight");
  ok = gate && up && gate->rows == d->ffn && up->rows == d->ffn;
  for (long long r = 0; ok && r < d->ffn; r++)
    for (long long c = 0; c < d->h; c++) {
      ok = ok && gate->data[r * d->h + c] == at(m, "decoder.layers.0.mlp.linear_fc1.weight", r, c);
      ok = ok && up->data[r * d->h + c] == at(m, "decoder.layers.0.mlp.linear_fc1.weight", d->ffn + r, c);
    }
  check(ok, "Llama: gate_proj and up_proj are linear_fc1's two halves");
}

static void llama_config(const hf_dims *d)
{
  hf_model w = {.d = *d, .eps = 1e-5, .rope_theta = 500000, .init_std = 0.02, .eod = 7, .dtype = PTDP_ST_BF16}, r;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  hf_arch_llama.config_write(f, &w);
  fclose(f);
  ptdp_json_value cfg;
  memset(&r, 0, sizeof r);
  const int rc = ptdp_json_parse(text, len, "config.json", &cfg) || hf_arch_llama.config_read(&cfg, "config.json", &r);
  check(!rc && !memcmp(&r.d, &w.d, sizeof r.d) && r.eps == w.eps && r.rope_theta == w.rope_theta,
        "Llama: config.json written then read gives the same sizes, rms_norm_eps and rope_theta");
  ptdp_json_free(&cfg);
  free(text);
}

static void llama(int untied)
{
  hf_dims d = {.layers = 2, .h = 32, .heads = 8, .groups = 2, .head_dim = 4, .ffn = 40, .vocab = 13, .max_pos = 9,
               .untied = untied};
  model m;
  llama_model(&m, &d);
  hf_tensor *hf;
  int n;
  if (round_trip(untied ? "Llama (untied)" : "Llama (tied)", &hf_arch_llama, &d, &m, &hf, &n)) return;
  llama_layout(&d, &m, hf, n);
  check(n == 1 + 9 * 2 + 1 + untied && !find(hf, n, "lm_head.weight") == !untied,
        untied ? "Llama untied: 21 tensors with lm_head" : "Llama tied: 20 tensors, no lm_head");
  if (untied) llama_config(&d);
  /* planted: k_proj takes the value rows, so v's rows are written twice and k's never */
  hf_name bad[16];
  memcpy(bad, hf_arch_llama.names, sizeof(hf_name) * (size_t)hf_arch_llama.nnames);
  for (int i = 0; i < hf_arch_llama.nnames; i++)
    if (strstr(bad[i].hf, "k_proj")) bad[i].part = 2;
  hf_arch planted = hf_arch_llama;
  planted.names = bad;
  exported e = {hf, n};
  ptdp_error_set_quiet(1);
  check(hf_map_import(&planted, &d, m.t, m.n, get, &e) != 0, "planted: a table writing v's rows twice is refused");
  ptdp_error_clear();
  hf_tensors_free(hf, n);
  for (int i = 0; i < m.n; i++) free(m.t[i].data);
}

int main(void)
{
  gpt2();
  llama(0);
  llama(1);
  printf("%d checks, %d failed\n", checks, fails);
  return fails != 0;
}
