/* The parameter table: see include/ptdp/params.h. */
#include "ptdp/params.h"

#include <stdio.h>
#include <string.h>

/* Keys of the initial values: one per global tensor, whatever the layout.  Layer tensors get
 * 100 + 16 l + role; the tied copy shares the word embedding's key (it holds the same tensor). */
enum { KEY_WORD_EMBEDDING = 1, KEY_POSITION_EMBEDDING = 2, KEY_FINAL_LN_WEIGHT = 3, KEY_FINAL_LN_BIAS = 4,
       KEY_OUTPUT_LAYER = 5, KEY_LAYER_BASE = 100, KEY_LAYER_STRIDE = 16 };

/* Static facts of each layer role: name suffix, split, shape in units of h and f, init, flags. */
typedef struct {
  const char *suffix;
  ptdp_split split;
  int rows_h3, rows_h, rows_f; /* global rows = QKV's (a + 2 g) hd (3h for GPT-2), h or f (one set) */
  int cols_h, cols_f;          /* global cols = h or f; neither: a vector */
  ptdp_init_kind init;
  int weight_decay, sp_partial;
} layer_role;

static const layer_role roles[PTDP_PARAM_LAYER_ROLES] = {
  [PTDP_PARAM_LN1_WEIGHT] = {"input_layernorm.weight", PTDP_SPLIT_NONE, 0, 1, 0, 0, 0, PTDP_INIT_ONES, 0, 1},
  [PTDP_PARAM_LN1_BIAS] = {"input_layernorm.bias", PTDP_SPLIT_NONE, 0, 1, 0, 0, 0, PTDP_INIT_ZEROS, 0, 1},
  [PTDP_PARAM_QKV_WEIGHT] = {"self_attention.linear_qkv.weight", PTDP_SPLIT_ROWS, 1, 0, 0, 1, 0, PTDP_INIT_NORMAL, 1, 0},
  [PTDP_PARAM_QKV_BIAS] = {"self_attention.linear_qkv.bias", PTDP_SPLIT_ROWS, 1, 0, 0, 0, 0, PTDP_INIT_ZEROS, 0, 0},
  [PTDP_PARAM_PROJ_WEIGHT] = {"self_attention.linear_proj.weight", PTDP_SPLIT_COLS, 0, 1, 0, 1, 0,
                              PTDP_INIT_NORMAL_SCALED, 1, 0},
  [PTDP_PARAM_PROJ_BIAS] = {"self_attention.linear_proj.bias", PTDP_SPLIT_NONE, 0, 1, 0, 0, 0, PTDP_INIT_ZEROS, 0, 1},
  [PTDP_PARAM_LN2_WEIGHT] = {"pre_mlp_layernorm.weight", PTDP_SPLIT_NONE, 0, 1, 0, 0, 0, PTDP_INIT_ONES, 0, 1},
  [PTDP_PARAM_LN2_BIAS] = {"pre_mlp_layernorm.bias", PTDP_SPLIT_NONE, 0, 1, 0, 0, 0, PTDP_INIT_ZEROS, 0, 1},
  [PTDP_PARAM_FC1_WEIGHT] = {"mlp.linear_fc1.weight", PTDP_SPLIT_ROWS, 0, 0, 1, 1, 0, PTDP_INIT_NORMAL, 1, 0},
  [PTDP_PARAM_FC1_BIAS] = {"mlp.linear_fc1.bias", PTDP_SPLIT_ROWS, 0, 0, 1, 0, 0, PTDP_INIT_ZEROS, 0, 0},
  [PTDP_PARAM_FC2_WEIGHT] = {"mlp.linear_fc2.weight", PTDP_SPLIT_COLS, 0, 1, 0, 0, 1, PTDP_INIT_NORMAL_SCALED, 1, 0},
  [PTDP_PARAM_FC2_BIAS] = {"mlp.linear_fc2.bias", PTDP_SPLIT_NONE, 0, 1, 0, 0, 0, PTDP_INIT_ZEROS, 0, 1},
};

int ptdp_params_has_role(const ptdp_arch *a, ptdp_param_role r)
{
  switch (r) {
  case PTDP_PARAM_LN1_BIAS:
  case PTDP_PARAM_LN2_BIAS:
  case PTDP_PARAM_FINAL_LN_BIAS: return a->norm != PTDP_NORM_RMSNORM;
  case PTDP_PARAM_QKV_BIAS:
  case PTDP_PARAM_PROJ_BIAS:
  case PTDP_PARAM_FC1_BIAS:
  case PTDP_PARAM_FC2_BIAS: return !a->no_linear_bias;
  case PTDP_PARAM_POSITION_EMBEDDING: return a->position == PTDP_POS_LEARNED;
  default: return 1;
  }
}

const char *ptdp_param_role_suffix(ptdp_param_role r)
{
  return r >= 0 && r < PTDP_PARAM_LAYER_ROLES ? roles[r].suffix : "";
}

int ptdp_model_head_dim(const ptdp_model_shape *s)
{
  return s->arch.kv_channels > 0 ? s->arch.kv_channels : s->hidden / s->heads;
}

int ptdp_model_query_groups(const ptdp_model_shape *s)
{
  return s->arch.query_groups > 0 ? s->arch.query_groups : s->heads;
}

long long ptdp_model_attn_width(const ptdp_model_shape *s) { return (long long)s->heads * ptdp_model_head_dim(s); }

long long ptdp_model_qkv_rows(const ptdp_model_shape *s)
{
  return ((long long)s->heads + 2LL * ptdp_model_query_groups(s)) * ptdp_model_head_dim(s);
}

long long ptdp_padded_vocab(long long vocab, int divisible_by, int t)
{
  long long mult = (long long)divisible_by * t;
  return (vocab + mult - 1) / mult * mult;
}

int ptdp_params_layers_per_chunk(const ptdp_model_shape *s, const ptdp_param_position *pos)
{
  return s->num_layers / (pos->p * pos->v);
}

int ptdp_params_chunk_layer0(const ptdp_model_shape *s, const ptdp_param_position *pos, int c)
{
  return (c * pos->p + pos->stage) * ptdp_params_layers_per_chunk(s, pos);
}

int ptdp_params_chunk_has_embedding(const ptdp_param_position *pos, int c) { return c * pos->p + pos->stage == 0; }

int ptdp_params_chunk_has_head(const ptdp_param_position *pos, int c)
{
  return c * pos->p + pos->stage == pos->p * pos->v - 1;
}

static int is_matrix(ptdp_param_role r)
{
  return r == PTDP_PARAM_WORD_EMBEDDING || r == PTDP_PARAM_OUTPUT_LAYER || r == PTDP_PARAM_POSITION_EMBEDDING ||
         r == PTDP_PARAM_QKV_WEIGHT || r == PTDP_PARAM_PROJ_WEIGHT || r == PTDP_PARAM_FC1_WEIGHT ||
         r == PTDP_PARAM_FC2_WEIGHT;
}

/* One entry: the global shape, split and flags decide the slice and the local buffer.  A row
 * split gives each TP rank lrows = (padded) global rows / t; the slice is the part of
 * [tp_rank lrows, (tp_rank + 1) lrows) inside the global tensor. */
static void fill(ptdp_param_info *e, const ptdp_model_shape *s, const ptdp_param_position *pos, ptdp_param_role role,
                 long long grows, long long gcols, long long padded_rows, ptdp_split split, ptdp_init_kind init,
                 uint32_t key, int weight_decay, int sp_partial)
{
  memset(e, 0, sizeof *e);
  e->role = role;
  e->layer = -1;
  e->ndim = is_matrix(role) ? 2 : 1;
  e->blocks = 1;
  e->grows = grows;
  e->gcols = gcols;
  e->split = split;
  e->lrows = split == PTDP_SPLIT_ROWS ? padded_rows / pos->t : grows;
  e->lcols = split == PTDP_SPLIT_COLS ? gcols / pos->t : gcols;
  e->row0 = split == PTDP_SPLIT_ROWS ? (long long)pos->tp_rank * e->lrows : 0;
  e->col0 = split == PTDP_SPLIT_COLS ? (long long)pos->tp_rank * e->lcols : 0;
  long long left = grows - e->row0;
  e->rows = left < 0 ? 0 : left < e->lrows ? left : e->lrows;
  e->cols = e->lcols;
  e->init = init;
  e->init_key = key;
  e->weight_decay = weight_decay;
  e->tp_replicated = split == PTDP_SPLIT_NONE;
  e->sp_partial = sp_partial && s->sequence_parallel && pos->t > 1;
  e->embedding = role == PTDP_PARAM_WORD_EMBEDDING || role == PTDP_PARAM_OUTPUT_LAYER;
  e->tied_copy = role == PTDP_PARAM_OUTPUT_LAYER;
  e->expert = -1;
}

static void layer_entry(ptdp_param_info *e, const ptdp_model_shape *s, const ptdp_param_position *pos, int layer,
                        ptdp_param_role r)
{
  const layer_role *lr = &roles[r];
  const long long h = s->hidden, f = s->ffn;
  long long grows = lr->rows_h3 ? ptdp_model_qkv_rows(s) : lr->rows_h ? h : f;
  /* the projection reads the attention's output, a hd wide (h unless kv-channels says otherwise) */
  long long gcols = r == PTDP_PARAM_PROJ_WEIGHT ? ptdp_model_attn_width(s) : lr->cols_h ? h : lr->cols_f ? f : 1;
  const int glu = s->arch.swiglu && (r == PTDP_PARAM_FC1_WEIGHT || r == PTDP_PARAM_FC1_BIAS);
  if (glu) grows = 2 * f; /* [gate; up] */
  fill(e, s, pos, r, grows, gcols, grows, lr->split, lr->init,
       (uint32_t)(KEY_LAYER_BASE + KEY_LAYER_STRIDE * layer + (int)r), lr->weight_decay, lr->sp_partial);
  if (glu) { /* each TP rank holds [gate_r; up_r], its slice of each block (Megatron-core's linear_fc1) */
    e->blocks = 2;
    e->row0 = (long long)pos->tp_rank * (f / pos->t);
    e->rows = e->lrows;
  }
  e->layer = layer;
  snprintf(e->name, sizeof e->name, "decoder.layers.%d.%s", layer, lr->suffix);
}

/* Keys of the mixture's tensors: the router takes the key of the dense linear_fc1 it replaces;
 * expert j's four tensors (q = fc1 weight, fc1 bias, fc2 weight, fc2 bias) get
 * 2^24 + 4 (4096 l + j) + q, past every other key for l < 1024 layers and E <= 4096 experts. */
enum { KEY_EXPERT_BASE = 1 << 24, KEY_EXPERTS_PER_LAYER = 4096 };

/* Entry q of a mixture layer's MLP: q = 0 the router [E, h]; else expert (q - 1) / 4's tensor
 * (q - 1) % 4: linear_fc1 weight [f_e, h] (SwiGLU [2 f_e, h], two blocks) and bias, split over TP
 * as the dense linear_fc1; linear_fc2 weight [h, f_e] split as the dense linear_fc2, and its bias.
 * The router and the fc2 bias are replicated over TP with whole gradients on every rank (the
 * layer computes them from the gathered rows: no sequence-parallel partial sums). */
static void moe_entry(ptdp_param_info *e, const ptdp_model_shape *s, const ptdp_param_position *pos, int layer, int q)
{
  const long long h = s->hidden, fe = ptdp_moe_ffn(&s->arch, s->ffn);
  if (q == 0) {
    fill(e, s, pos, PTDP_PARAM_ROUTER_WEIGHT, s->arch.moe.num_experts, h, s->arch.moe.num_experts, PTDP_SPLIT_NONE,
         PTDP_INIT_NORMAL, (uint32_t)(KEY_LAYER_BASE + KEY_LAYER_STRIDE * layer + PTDP_PARAM_FC1_WEIGHT), 1, 0);
    e->ndim = 2;
    e->layer = layer;
    snprintf(e->name, sizeof e->name, "decoder.layers.%d.mlp.router.weight", layer);
    return;
  }
  static const struct {
    ptdp_param_role role;
    const char *suffix;
    ptdp_split split;
    ptdp_init_kind init;
    int decay;
  } kinds[4] = {{PTDP_PARAM_EXPERT_FC1_WEIGHT, "linear_fc1.weight", PTDP_SPLIT_ROWS, PTDP_INIT_NORMAL, 1},
                {PTDP_PARAM_EXPERT_FC1_BIAS, "linear_fc1.bias", PTDP_SPLIT_ROWS, PTDP_INIT_ZEROS, 0},
                {PTDP_PARAM_EXPERT_FC2_WEIGHT, "linear_fc2.weight", PTDP_SPLIT_COLS, PTDP_INIT_NORMAL_SCALED, 1},
                {PTDP_PARAM_EXPERT_FC2_BIAS, "linear_fc2.bias", PTDP_SPLIT_NONE, PTDP_INIT_ZEROS, 0}};
  const int j = (q - 1) / 4, w = (q - 1) % 4, fc1 = w < 2, glu = fc1 && s->arch.swiglu;
  const long long grows = fc1 ? (glu ? 2 * fe : fe) : h, gcols = w == 0 ? h : w == 2 ? fe : 1;
  fill(e, s, pos, kinds[w].role, grows, gcols, grows, kinds[w].split, kinds[w].init,
       (uint32_t)(KEY_EXPERT_BASE + 4 * (KEY_EXPERTS_PER_LAYER * layer + j) + w), kinds[w].decay, 0);
  e->ndim = w % 2 == 0 ? 2 : 1;
  if (glu) { /* [gate_r; up_r] of each expert, as the dense linear_fc1 */
    e->blocks = 2;
    e->row0 = (long long)pos->tp_rank * (fe / pos->t);
    e->rows = e->lrows;
  }
  e->layer = layer;
  e->expert = j;
  snprintf(e->name, sizeof e->name, "decoder.layers.%d.mlp.experts.local_experts.%d.%s", layer, j, kinds[w].suffix);
}

/* Entries of the mixture's MLP: the router, then 4 per expert (2 without linear biases). */
static int moe_entries(const ptdp_model_shape *s) { return 1 + 4 * s->arch.moe.num_experts; }
static int moe_has(const ptdp_model_shape *s, int q) { return q == 0 || !s->arch.no_linear_bias || (q - 1) % 2 == 0; }

/* The next entry to fill: NULL when only counting (out == NULL) or when cap is exceeded
 * (*overflow set). */
static ptdp_param_info *next_entry(ptdp_param_info *out, int cap, int *n, int *overflow)
{
  int i = (*n)++;
  if (!out) return NULL;
  if (i >= cap) {
    *overflow = 1;
    return NULL;
  }
  return &out[i];
}

static void embedding_entries(const ptdp_model_shape *s, const ptdp_param_position *pos, int c, ptdp_param_info *out,
                              int cap, int *n, int *overflow)
{
  const long long Vp = ptdp_padded_vocab(s->vocab, s->vocab_divisible_by, pos->t);
  ptdp_param_info *e = next_entry(out, cap, n, overflow);
  if (e) {
    fill(e, s, pos, PTDP_PARAM_WORD_EMBEDDING, s->vocab, s->hidden, Vp, PTDP_SPLIT_ROWS, PTDP_INIT_NORMAL,
         KEY_WORD_EMBEDDING, 1, 0);
    snprintf(e->name, sizeof e->name, "embedding.word_embeddings.weight");
    e->chunk = c;
  }
  if (!ptdp_params_has_role(&s->arch, PTDP_PARAM_POSITION_EMBEDDING)) return;
  e = next_entry(out, cap, n, overflow);
  if (e) {
    fill(e, s, pos, PTDP_PARAM_POSITION_EMBEDDING, s->max_pos, s->hidden, s->max_pos, PTDP_SPLIT_NONE,
         PTDP_INIT_NORMAL, KEY_POSITION_EMBEDDING, 1, 1);
    snprintf(e->name, sizeof e->name, "embedding.position_embeddings.weight");
    e->chunk = c;
  }
}

static void head_entries(const ptdp_model_shape *s, const ptdp_param_position *pos, int c, ptdp_param_info *out,
                         int cap, int *n, int *overflow)
{
  const long long h = s->hidden, Vp = ptdp_padded_vocab(s->vocab, s->vocab_divisible_by, pos->t);
  ptdp_param_info *e = next_entry(out, cap, n, overflow);
  if (e) {
    fill(e, s, pos, PTDP_PARAM_FINAL_LN_WEIGHT, h, 1, h, PTDP_SPLIT_NONE, PTDP_INIT_ONES, KEY_FINAL_LN_WEIGHT, 0, 1);
    snprintf(e->name, sizeof e->name, "decoder.final_layernorm.weight");
    e->chunk = c;
  }
  e = ptdp_params_has_role(&s->arch, PTDP_PARAM_FINAL_LN_BIAS) ? next_entry(out, cap, n, overflow) : NULL;
  if (e) {
    fill(e, s, pos, PTDP_PARAM_FINAL_LN_BIAS, h, 1, h, PTDP_SPLIT_NONE, PTDP_INIT_ZEROS, KEY_FINAL_LN_BIAS, 0, 1);
    snprintf(e->name, sizeof e->name, "decoder.final_layernorm.bias");
    e->chunk = c;
  }
  /* tied: one chunk holding both ends needs no copy */
  if (!s->arch.untie && ptdp_params_chunk_has_embedding(pos, c)) return;
  e = next_entry(out, cap, n, overflow);
  if (e) {
    fill(e, s, pos, PTDP_PARAM_OUTPUT_LAYER, s->vocab, h, Vp, PTDP_SPLIT_ROWS, PTDP_INIT_NORMAL,
         s->arch.untie ? KEY_OUTPUT_LAYER : KEY_WORD_EMBEDDING, 1, 0);
    snprintf(e->name, sizeof e->name, "output_layer.weight");
    e->tied_copy = !s->arch.untie;
    e->chunk = c;
  }
}

/* Walk the table; with out == NULL only count. */
static int walk(const ptdp_model_shape *s, const ptdp_param_position *pos, ptdp_param_info *out, int cap)
{
  const int per = ptdp_params_layers_per_chunk(s, pos);
  int n = 0, overflow = 0;
  for (int c = 0; c < pos->v; c++) {
    if (ptdp_params_chunk_has_embedding(pos, c)) embedding_entries(s, pos, c, out, cap, &n, &overflow);
    const int l0 = ptdp_params_chunk_layer0(s, pos, c);
    for (int l = l0; l < l0 + per; l++)
      for (int r = 0; r < PTDP_PARAM_LAYER_ROLES; r++) {
        if (!ptdp_params_has_role(&s->arch, (ptdp_param_role)r)) continue;
        if (ptdp_moe_layer(&s->arch, l) && r >= PTDP_PARAM_FC1_WEIGHT) { /* the mixture's MLP instead */
          for (int q = 0; r == PTDP_PARAM_FC1_WEIGHT && q < moe_entries(s); q++) {
            if (!moe_has(s, q)) continue;
            ptdp_param_info *e = next_entry(out, cap, &n, &overflow);
            if (!e) continue;
            moe_entry(e, s, pos, l, q);
            e->chunk = c;
          }
          continue;
        }
        ptdp_param_info *e = next_entry(out, cap, &n, &overflow);
        if (!e) continue;
        layer_entry(e, s, pos, l, (ptdp_param_role)r);
        e->chunk = c;
      }
    if (ptdp_params_chunk_has_head(pos, c)) head_entries(s, pos, c, out, cap, &n, &overflow);
  }
  return overflow ? -1 : n;
}

int ptdp_params_count(const ptdp_model_shape *s, const ptdp_param_position *pos) { return walk(s, pos, NULL, 0); }

int ptdp_params_list(const ptdp_model_shape *s, const ptdp_param_position *pos, ptdp_param_info *out, int cap)
{
  return walk(s, pos, out, cap);
}
