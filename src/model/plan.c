/* The memory plan: see include/ptdp/plan.h.  The one place that says which buffers exist and how
 * big they are; the model binds the allocations to its fields by kind (gpt_alloc.c). */
#include "ptdp/plan.h"

#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/grad_buffer.h"
#include "ptdp/shape.h"
#include "ptdp/shard_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LAYER_NAME(kind, type, field, name, part, elems, unit, when) name,
#define OTHER_NAME(kind, name) name,
static const char *kind_names[PTDP_BUF_KINDS] = {PTDP_LAYER_ACTIVATIONS(LAYER_NAME) PTDP_OTHER_BUFFERS(OTHER_NAME)};
#undef LAYER_NAME
#undef OTHER_NAME

const char *ptdp_buffer_kind_name(ptdp_buffer_kind k) { return k >= 0 && k < PTDP_BUF_KINDS ? kind_names[k] : "?"; }

ptdp_mem_class ptdp_buffer_class(const ptdp_buffer *b)
{
  if (b->held) return PTDP_MEM_ACTIVATIONS;
  if (b->kind <= PTDP_BUF_LOGITS && b->slot != PTDP_PLAN_NONE) return PTDP_MEM_TRANSIENT;
  if (b->kind <= PTDP_BUF_WORK_POSITIONS) return PTDP_MEM_WORK; /* work space and recompute scratch */
  if (b->kind <= PTDP_BUF_P2P_GRAD_RECV) return PTDP_MEM_P2P;
  if (b->kind == PTDP_BUF_PARAMS) return PTDP_MEM_PARAMS;
  if (b->kind == PTDP_BUF_GRADS) return PTDP_MEM_GRADS;
  return PTDP_MEM_OPTIMIZER;
}

static int add(ptdp_plan *pl, ptdp_buffer_kind kind, int chunk, int slot, int layer, int index, int held,
               size_t bytes)
{
  if (!bytes) return 0;
  if (pl->n == pl->cap) {
    int cap = pl->cap ? 2 * pl->cap : 256;
    ptdp_buffer *b = realloc(pl->buf, (size_t)cap * sizeof *b);
    if (!b) return PTDP_FAIL(PTDP_ERR_MEM, "out of memory (memory plan)");
    pl->buf = b;
    pl->cap = cap;
  }
  pl->buf[pl->n++] = (ptdp_buffer){.kind = kind, .chunk = chunk, .slot = slot, .layer = layer, .index = index,
                                   .held = held, .bytes = bytes};
  return 0;
}

/* This rank's sizes (ptdp/shape.h) and the bytes of one element of the storage type. */
static ptdp_rank_shape sizes_of(const ptdp_plan_config *c)
{
  return ptdp_rank_shape_of(&c->shape, c->seq, c->micro_batch, c->pos.t, c->pos.tp_rank);
}
static size_t storage_bytes(const ptdp_plan_config *c) { return ptdp_dtype_size((ptdp_dtype)c->dtype); }

/* Which parts of a layer's activation set a place holds (the parts of PTDP_LAYER_ACTIVATIONS). */
typedef enum { LAYER_ALL, LAYER_INPUT_ONLY, LAYER_NO_ATTN_CORE, LAYER_ATTN_CORE_ONLY } layer_part;
enum { PART_IN, PART_CORE, PART_REST };

static int holds_part(layer_part what, int part)
{
  switch (part) {
  case PART_IN: return what != LAYER_ATTN_CORE_ONLY;
  case PART_CORE: return what == LAYER_ALL || what == LAYER_ATTN_CORE_ONLY;
  default: return what == LAYER_ALL || what == LAYER_NO_ATTN_CORE;
  }
}

/* The buffers of one layer's activation set, part by part (input, attention core, the rest) in
 * the table's order within a part. */
static int add_layer(ptdp_plan *pl, layer_part what, int chunk, int slot, int layer, int index, int held)
{
  const ptdp_plan_config *c = &pl->cfg;
  const ptdp_rank_shape z = sizes_of(c);
  const size_t STORE = storage_bytes(c), F32 = sizeof(float), MASK = sizeof(uint8_t);
  const int IN = PART_IN, CORE = PART_CORE, REST = PART_REST;
  const int ALWAYS = 1, HDROP = c->hidden_dropout, FLASH = c->flash_attention, UNFUSED = !FLASH;
  const int LN = c->shape.arch.norm == PTDP_NORM_LAYERNORM;
  const int ADROP = c->attention_dropout && UNFUSED;
  /* the MLP's buffers: this layer's kind; the recomputation scratch (layer none) any layer's */
  int MOE = ptdp_moe_layer(&c->shape.arch, layer), DENSE = !MOE;
  if (layer == PTDP_PLAN_NONE) {
    MOE = DENSE = 0;
    for (int i = 0; i < c->shape.num_layers; i++) {
      MOE |= ptdp_moe_layer(&c->shape.arch, i);
      DENSE |= !ptdp_moe_layer(&c->shape.arch, i);
    }
  }
  for (int part = PART_IN; part <= PART_REST; part++) {
    if (!holds_part(what, part)) continue;
#define ADD(kind, type, field, name, p_, elems, unit, when)                                                \
    if (p_ == part && (when)) PTDP_CALL(add(pl, kind, chunk, slot, layer, index, held, (size_t)(elems) * (unit)));
    PTDP_LAYER_ACTIVATIONS(ADD)
#undef ADD
  }
  return 0;
}

/* One activation slot of chunk ch: its layers, then what the chunk's ends need. */
static int add_slot(ptdp_plan *pl, int ch, int slot)
{
  const ptdp_plan_config *c = &pl->cfg;
  const ptdp_rank_shape z = sizes_of(c);
  const int per = ptdp_params_layers_per_chunk(&c->shape, &c->pos), l0 = ptdp_params_chunk_layer0(&c->shape, &c->pos, ch);
  const int emb = ptdp_params_chunk_has_embedding(&c->pos, ch), head = ptdp_params_chunk_has_head(&c->pos, ch);
  const int none = PTDP_PLAN_NONE;
  for (int i = 0; i < per; i++) {
    int g0, g1;
    if (ptdp_recompute_group(c->recompute, c->recompute_method, c->recompute_num_layers, per, i, &g0, &g1)) {
      if (i == g0) PTDP_CALL(add_layer(pl, LAYER_INPUT_ONLY, ch, slot, l0 + i, 0, 1));
    } else {
      PTDP_CALL(add_layer(pl, c->recompute == PTDP_RECOMPUTE_SELECTIVE ? LAYER_NO_ATTN_CORE : LAYER_ALL, ch, slot,
                          l0 + i, 0, 1));
    }
  }
  /* the chunk output: held on the head chunk (final LN input); elsewhere only the send buffer
   * (Korthikanti et al. App. B: freed once sent), not held */
  PTDP_CALL(add(pl, PTDP_BUF_CHUNK_OUTPUT, ch, slot, none, 0, head, (size_t)(z.Nl * z.h) * storage_bytes(c)));
  if (emb || head) {
    PTDP_CALL(add(pl, PTDP_BUF_TOKENS, ch, slot, none, 0, 0, (size_t)z.N * sizeof(int32_t)));
    PTDP_CALL(add(pl, PTDP_BUF_TARGETS, ch, slot, none, 0, 0, (size_t)z.N * sizeof(int32_t)));
  }
  if (emb && c->hidden_dropout)
    PTDP_CALL(add(pl, PTDP_BUF_EMBEDDING_MASK, ch, slot, none, 0, 1, (size_t)(z.Nl * z.h) * sizeof(uint8_t)));
  if (head) {
    if (c->shape.arch.norm == PTDP_NORM_LAYERNORM)
      PTDP_CALL(add(pl, PTDP_BUF_FINAL_LN_MEAN, ch, slot, none, 0, 1, (size_t)z.Nl * sizeof(float)));
    PTDP_CALL(add(pl, PTDP_BUF_FINAL_LN_RSTD, ch, slot, none, 0, 1, (size_t)z.Nl * sizeof(float)));
    PTDP_CALL(add(pl, PTDP_BUF_FINAL_LN_OUT, ch, slot, none, 0, 1, (size_t)(z.Nl * z.h) * storage_bytes(c)));
    PTDP_CALL(add(pl, PTDP_BUF_LOGITS, ch, slot, none, 0, 1, (size_t)(z.N * z.vl) * storage_bytes(c)));
  }
  return 0;
}

/* Columns of the MLP's gradient work space: fc1's output gradient [N, fc1], and with SwiGLU the
 * activation's [N, fl] after it (the backward of SwiGLU reads the one and writes the other). */
static long long dfc_cols(const ptdp_rank_shape *z) { return z->fc1 == z->fl ? z->fl : z->fc1 + z->fl; }

/* Work space shared by every micro-batch, the recomputation scratch and the p2p buffers. */
static int add_work(ptdp_plan *pl)
{
  const ptdp_plan_config *c = &pl->cfg;
  const ptdp_rank_shape z = sizes_of(c);
  const int none = PTDP_PLAN_NONE;
  const size_t F = sizeof(float), S = storage_bytes(c);
  const struct { ptdp_buffer_kind k; long long n; size_t unit; } w[] = {
    {PTDP_BUF_WORK_FULL_A, z.N * z.h, S},     {PTDP_BUF_WORK_FULL_B, z.N * z.h, S},
    {PTDP_BUF_WORK_SHARD_A, z.Nl * z.h, S},   {PTDP_BUF_WORK_SHARD_B, z.Nl * z.h, S},
    {PTDP_BUF_WORK_SHARD_C, z.Nl * z.h, S},   {PTDP_BUF_WORK_DQKV, z.N * z.qkv, S},
    {PTDP_BUF_WORK_DCTX, z.N * z.hl, S},      {PTDP_BUF_WORK_DFC, z.N * dfc_cols(&z), S},
    {PTDP_BUF_WORK_ATTN, c->flash_attention ? 0 : z.s * z.s, F}, {PTDP_BUF_WORK_XENT, 4 * z.N, F},
    {PTDP_BUF_WORK_LOSSES, c->m > 0 ? c->m : 1, F}, /* each micro-batch's loss, read once a run */
    {PTDP_BUF_WORK_GRAD_A, z.Nl * z.h, S},    {PTDP_BUF_WORK_GRAD_B, z.Nl * z.h, S},
    {PTDP_BUF_WORK_POSITIONS, z.Nl, sizeof(int32_t)},
    {PTDP_BUF_WORK_ROPE, c->shape.arch.position == PTDP_POS_ROPE ? (long long)c->shape.max_pos * z.rd : 0, F}};
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
    PTDP_CALL(add(pl, w[i].k, none, none, none, 0, 0, (size_t)w[i].n * w[i].unit));
  if (z.E > 0) { /* the mixture's rows in expert order, an expert's fc1 gradient, the router's */
    const struct { ptdp_buffer_kind k; long long n; size_t unit; } x[] = {
      {PTDP_BUF_WORK_MOE_ROWS_A, z.Nk * z.h, S}, {PTDP_BUF_WORK_MOE_ROWS_B, z.Nk * z.h, S},
      {PTDP_BUF_WORK_MOE_DFC, z.Nk * (z.efc1 == z.efl ? z.efl : z.efc1 + z.efl), S},
      {PTDP_BUF_WORK_MOE_ROUTER, z.N * z.E + z.Nk, F}};
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
      PTDP_CALL(add(pl, x[i].k, none, none, none, 0, 0, (size_t)x[i].n * x[i].unit));
  }
  const int per = ptdp_params_layers_per_chunk(&c->shape, &c->pos);
  const int nrec = ptdp_recompute_scratch_layers(c->recompute, c->recompute_method, c->recompute_num_layers, per);
  for (int j = 0; j < nrec; j++)
    PTDP_CALL(add_layer(pl, c->recompute == PTDP_RECOMPUTE_FULL ? LAYER_ALL : LAYER_ATTN_CORE_ONLY, none, none, none,
                        j, 0));
  if (c->pos.p > 1) {
    for (int ch = 0; ch < c->pos.v; ch++)
      for (int s = 0; s < pl->slots; s++)
        PTDP_CALL(add(pl, PTDP_BUF_P2P_GRAD_SEND, ch, s, none, 0, 0, (size_t)(z.Nl * z.h) * S));
    for (int b = 0; b < 2; b++) PTDP_CALL(add(pl, PTDP_BUF_P2P_GRAD_RECV, none, none, none, b, 0, (size_t)(z.Nl * z.h) * S));
  }
  return 0;
}

/* Parameters, gradients and optimizer state: sizes from the flat-buffer layout. */
int ptdp_plan_master_sharded(const ptdp_plan_config *c)
{
  return c->dtype != PTDP_F32 && !c->inference && c->distributed_optimizer && c->d > 1;
}

static int add_state(ptdp_plan *pl)
{
  const ptdp_plan_config *c = &pl->cfg;
  const int none = PTDP_PLAN_NONE, n = ptdp_params_count(&c->shape, &c->pos);
  ptdp_param_info *params;
  PTDP_CALLOC(params, n > 0 ? n : 1, sizeof *params);
  ptdp_params_list(&c->shape, &c->pos, params, n);
  ptdp_grad_layout L;
  int err = ptdp_grad_layout_build(params, n, c->bucket_elems, c->d, &L);
  free(params);
  PTDP_CALL(err);
  const size_t flat = (size_t)L.total * sizeof(float), wt = (size_t)L.total * ptdp_dtype_size((ptdp_dtype)c->dtype);
  const int dist = c->distributed_optimizer && c->d > 1;
  const size_t state = (size_t)ptdp_shard_state_elems(&L, dist, c->d) * sizeof(float);
  /* bf16/fp16: the fp32 master weights, sharded like the moments by the distributed optimizer */
  const size_t master = ptdp_plan_master_sharded(c) ? state : flat;
  ptdp_grad_layout_free(&L);
  PTDP_CALL(add(pl, PTDP_BUF_PARAMS, none, none, none, 0, 0, wt)); /* the model's weights */
  if (c->inference) return 0;
  if (c->dtype != PTDP_F32) PTDP_CALL(add(pl, PTDP_BUF_MASTER_PARAMS, none, none, none, 0, 0, master));
  PTDP_CALL(add(pl, PTDP_BUF_GRADS, none, none, none, 0, 0, flat));
  PTDP_CALL(add(pl, PTDP_BUF_ADAM_M, none, none, none, 0, 0, state));
  PTDP_CALL(add(pl, PTDP_BUF_ADAM_V, none, none, none, 0, 0, state));
  if (dist) PTDP_CALL(add(pl, PTDP_BUF_GRAD_SHARD, none, none, none, 0, 0, state));
  return 0;
}

/* Walk this stage's schedule: a slot's held bytes count from its forward to its backward. */
static int walk_schedule(ptdp_plan *pl, int *slots)
{
  const ptdp_plan_config *c = &pl->cfg;
  ptdp_schedule s;
  size_t *held;
  PTDP_CALLOC(held, c->pos.v, sizeof *held);
  for (int ch = 0; ch < c->pos.v; ch++) held[ch] = ptdp_plan_held_per_slot(pl, ch);
  int err = ptdp_schedule_build(c->schedule, c->pos.stage, c->pos.p, c->pos.v, c->m, &s);
  if (err) {
    free(held);
    return err;
  }
  *slots = ptdp_schedule_max_in_flight(&s);
  size_t busy = 0, peak = 0;
  for (int i = 0; i < s.count; i++) {
    if (s.items[i].kind == PTDP_WORK_FORWARD) {
      busy += held[s.items[i].chunk];
      peak = busy > peak ? busy : peak;
    } else {
      busy -= held[s.items[i].chunk];
    }
  }
  pl->peak_activations = peak;
  ptdp_schedule_free(&s);
  free(held);
  return 0;
}

int ptdp_plan_build(const ptdp_plan_config *cfg, ptdp_plan *pl)
{
  memset(pl, 0, sizeof *pl);
  pl->cfg = *cfg;
  int slots;
  PTDP_CALL(walk_schedule(pl, &slots)); /* slots first: the buffers depend on them */
  pl->slots = slots;
  for (int ch = 0; ch < cfg->pos.v; ch++)
    for (int s = 0; s < slots; s++) PTDP_CALL(add_slot(pl, ch, s));
  PTDP_CALL(add_work(pl));
  PTDP_CALL(add_state(pl));
  PTDP_CALL(walk_schedule(pl, &slots));
  for (int i = 0; i < pl->n; i++) {
    pl->total[ptdp_buffer_class(&pl->buf[i])] += pl->buf[i].bytes;
    pl->allocated += pl->buf[i].bytes;
  }
  for (int ch = 0; ch < cfg->pos.v; ch++) {
    size_t h = ptdp_plan_held_per_slot(pl, ch);
    pl->held_per_slot_max = h > pl->held_per_slot_max ? h : pl->held_per_slot_max;
  }
  pl->peak = pl->allocated - pl->total[PTDP_MEM_ACTIVATIONS] + pl->peak_activations;
  return 0;
}

void ptdp_plan_free(ptdp_plan *pl)
{
  free(pl->buf);
  memset(pl, 0, sizeof *pl);
}

size_t ptdp_plan_held_per_slot(const ptdp_plan *pl, int chunk)
{
  size_t s = 0;
  for (int i = 0; i < pl->n; i++)
    if (pl->buf[i].held && pl->buf[i].chunk == chunk && pl->buf[i].slot == 0) s += pl->buf[i].bytes;
  return s;
}

size_t ptdp_plan_held_layer(const ptdp_plan *pl, int chunk, int layer)
{
  size_t s = 0;
  for (int i = 0; i < pl->n; i++)
    if (pl->buf[i].held && pl->buf[i].chunk == chunk && pl->buf[i].slot == 0 && pl->buf[i].layer == layer)
      s += pl->buf[i].bytes;
  return s;
}
