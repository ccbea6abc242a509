/* One pre-norm transformer layer with tensor and sequence parallelism, for the GPT and Llama
 * families (LN: LayerNorm or RMSNorm; the biases where the family has them; RoPE on q and k with
 * rotary positions), as ptdp_layer_describe (layer_desc.c) lists its operations:
 *
 *   x ─ LN1 ─[g]─ QKV (col-par) ─ attention core ─ proj (row-par) ─[ḡ]─ +b, dropout ─ + ─ x2
 *   x2 ─ LN2 ─[g]─ fc1 (col-par) ─ GELU ─ fc2 (row-par) ─[ḡ]─ +b, dropout ─ + ─ out
 *
 * With SwiGLU fc1 is twice as wide, each rank's rows [gate_r | up_r], and the activation
 * silu(gate) up halves it again; nothing else moves.
 *
 * Without SP: g is the identity forward / all-reduce backward, ḡ all-reduce forward / identity
 * backward (Shoeybi et al. f and g): 4 all-reduces of N h per layer and micro-batch.
 * With SP: g = all-gather (backward reduce-scatter), ḡ = reduce-scatter (backward all-gather);
 * LayerNorm and dropout act on the Nl = N / t rows of this rank, and the backward pass
 * all-gathers the stored LN outputs again for the weight gradients (as Megatron does), so SP
 * moves 10 N h (t-1)/t elements per layer and micro-batch against TP's 8 N h (t-1)/t. */
#include "model_internal.h"
#include "moe_internal.h"

#include "ptdp/error.h"
#include "ptdp/rng.h"

int ptdp_tp_gather(ptdp_gpt *m, const float *shard, float *full, int cols, int tag)
{
  return ptdp_comm_allgather_t(&m->grid->tp, shard, full, (size_t)m->sh.Nl * cols, m->cfg.dtype, (ptdp_comm_tag)tag);
}

int ptdp_tp_reduce(ptdp_gpt *m, float *full, float *shard, int cols, int tag)
{
  if (m->cfg.sequence_parallel)
    return ptdp_comm_reduce_scatter_t(&m->grid->tp, full, shard, (size_t)m->sh.Nl * cols, m->cfg.dtype,
                                      (ptdp_comm_tag)tag);
  PTDP_CALL(ptdp_comm_allreduce_sum_t(&m->grid->tp, full, (size_t)m->sh.N * cols, m->cfg.dtype, (ptdp_comm_tag)tag));
  if (shard != full) PTDP_CALL(m->be->copy(m->be, shard, full, (size_t)m->sh.N * cols * m->es));
  return 0;
}

static ptdp_dropout_key resid_key(const ptdp_gpt *m, uint32_t site, int layer, long long sample0)
{
  ptdp_dropout_key k = {.seed = m->cfg.seed, .site = site, .layer = (uint32_t)layer, .sample0 = sample0,
                        .row0 = m->sh.row0, .col0 = 0, .b = m->cfg.micro_batch, .p = m->cfg.hidden_dropout};
  return k;
}

ptdp_attn_desc ptdp_layer_attn_desc(const ptdp_gpt *m, int layer, long long sample0)
{
  ptdp_attn_desc d = {.b = m->cfg.micro_batch, .s = m->cfg.seq, .al = m->sh.al, .hd = m->sh.hd, .groups = m->sh.gl,
                      .head0 = (long long)m->tp_rank * m->sh.al};
  d.drop = (ptdp_dropout_key){.seed = m->cfg.seed, .site = PTDP_RNG_ATTN_DROP, .layer = (uint32_t)layer,
                              .sample0 = sample0, .b = m->cfg.micro_batch, .p = m->cfg.attn_dropout};
  return d;
}

/* y += b, and its gradient db += sum of dy's rows, where the layer has a bias (disable-bias-linear
 * takes them away). */
static int bias_fwd(ptdp_backend *be, float *y, const float *b, long long rows, int cols)
{
  return b ? be->bias_forward(be, y, b, rows, cols) : 0;
}
static int bias_bwd(ptdp_backend *be, const float *dy, float *db, long long rows, int cols)
{
  return db ? be->bias_backward(be, dy, db, rows, cols) : 0;
}

/* The rotary embedding of the query and key heads of qkv rows [rows, 3 hl] at positions
 * pos0 + r / b; inverse for the backward (the gradient of a rotation is the inverse rotation). */
static int rope(ptdp_gpt *m, float *qkv, long long rows, long long pos0, int b, int inverse)
{
  if (m->cfg.arch.position != PTDP_POS_ROPE) return 0;
  const ptdp_rope_desc d = {.rows = rows, .pos0 = pos0, .b = b, .groups = m->sh.gl, .heads_per_group = m->sh.hpg,
                            .hd = m->sh.hd, .rd = m->sh.rd, .ld = m->sh.qkv,
                            .interleaved = m->cfg.arch.rotary_interleaved};
  return m->be->rope(m->be, qkv, &d, m->work.rope, inverse);
}

/* The MLP's first half: fc1's rows [N, fc1] (+ bias) from in [N, h] and the activation act [N, fl]
 * of them, GELU or SwiGLU; GELU with its bias in the GEMM's epilogue where the backend has it. */
static int mlp_fc1_forward(ptdp_gpt *m, const ptdp_layer_params *w, long long N, const float *in, float *fc1,
                           float *act)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, fl = m->sh.fl, f1 = m->sh.fc1;
  if (!m->cfg.arch.swiglu && be->gemm_bias_gelu && w->fc1_b) /* the pre-activation kept */
    return be->gemm_bias_gelu(be, 0, 1, N, fl, h, in, h, w->fc1_w, h, w->fc1_b, fc1, act);
  PTDP_CALL(be->gemm(be, 0, 1, N, f1, h, 1.0f, in, h, w->fc1_w, h, 0.0f, fc1, f1)); /* [N, fc1] */
  PTDP_CALL(bias_fwd(be, fc1, w->fc1_b, N, f1));
  if (m->cfg.arch.swiglu) return be->swiglu_forward(be, fc1, act, N, fl);
  return be->gelu_forward(be, fc1, act, (size_t)N * fl);
}

/* Its backward to the gradient of fc1's output, dfc [N, fc1], from the activation's: dT [N, h]
 * times fc2's weight (fused with GELU's derivative and the bias gradient where the backend has
 * it).  SwiGLU puts the activation's gradient [N, fl] after dfc's rows in the work space. */
static int mlp_act_backward(ptdp_gpt *m, const ptdp_layer_params *w, const ptdp_layer_params *g,
                            const ptdp_layer_acts *a, const float *dT, float *dfc)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, fl = m->sh.fl, f1 = m->sh.fc1, N = (int)m->sh.N;
  if (!m->cfg.arch.swiglu && be->gemm_dgelu_bgrad && g->fc1_b)
    return be->gemm_dgelu_bgrad(be, 0, 0, N, fl, h, dT, h, w->fc2_w, fl, a->fc1, dfc, g->fc1_b);
  float *dact = m->cfg.arch.swiglu ? (float *)((char *)dfc + (size_t)N * f1 * m->es) : dfc;
  PTDP_CALL(be->gemm(be, 0, 0, N, fl, h, 1.0f, dT, h, w->fc2_w, fl, 0.0f, dact, fl));
  if (m->cfg.arch.swiglu) PTDP_CALL(be->swiglu_backward(be, a->fc1, dact, dfc, N, fl));
  else PTDP_CALL(be->gelu_backward(be, a->fc1, dfc, dfc, (size_t)N * fl));
  return bias_bwd(be, dfc, g->fc1_b, N, f1);
}

/* Under sequence parallelism a column-parallel GEMM's input is the all-gather of this rank's
 * rows into the work space; otherwise the rows themselves. */
static int gathered_input(ptdp_gpt *m, const ptdp_block_pass *p, const float *shard, int cols, const float **in)
{
  *in = shard;
  if (!p->sp) return 0;
  *in = p->full;
  return ptdp_comm_allgather_t(&m->grid->tp, shard, p->full, (size_t)p->Nl * cols, m->cfg.dtype, PTDP_TAG_LAYER);
}

/* A row-parallel GEMM writes partial sums over TP: into the destination itself, all-reduced in
 * place, or under sequence parallelism into the work space, reduce-scattered into the
 * destination's rows. */
static float *partial_target(const ptdp_block_pass *p, float *dst) { return p->sp ? p->full : dst; }

static int reduce_partial(ptdp_gpt *m, const ptdp_block_pass *p, float *dst, int cols)
{
  if (p->sp)
    return ptdp_comm_reduce_scatter_t(&m->grid->tp, p->full, dst, (size_t)p->Nl * cols, m->cfg.dtype, PTDP_TAG_LAYER);
  return ptdp_comm_allreduce_sum_t(&m->grid->tp, dst, (size_t)p->N * cols, m->cfg.dtype, PTDP_TAG_LAYER);
}

int ptdp_gpt_block_forward(ptdp_gpt *m, int layer, const ptdp_layer_params *w, const ptdp_block_pass *p,
                           const ptdp_layer_acts *a, float *out)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, hl = m->sh.hl, fl = m->sh.fl, qkv = m->sh.qkv;
  const long long N = p->N, Nl = p->Nl;
  const float *in;

  /* attention block */
  PTDP_CALL(m->passes.norm_forward(m, a->x, w->ln1_w, w->ln1_b, a->ln1_out, a->ln1_mean, a->ln1_rstd, Nl));
  PTDP_CALL(gathered_input(m, p, a->ln1_out, h, &in));
  if (be->gemm_bias && w->qkv_b) /* the bias in the GEMM's epilogue (cuBLASLt BIAS) */
    PTDP_CALL(be->gemm_bias(be, 0, 1, N, qkv, h, in, h, w->qkv_w, h, w->qkv_b, a->qkv));
  else {
    PTDP_CALL(be->gemm(be, 0, 1, N, qkv, h, 1.0f, in, h, w->qkv_w, h, 0.0f, a->qkv, qkv)); /* [N, (al + 2 gl) hd] */
    PTDP_CALL(bias_fwd(be, a->qkv, w->qkv_b, N, qkv));
  }
  PTDP_CALL(rope(m, a->qkv, N, p->pos0, p->b, 0));
  PTDP_CALL(p->attention(p, m, layer, a)); /* ctx [N, hl] */
  PTDP_CALL(be->gemm(be, 0, 1, N, h, hl, 1.0f, a->ctx, hl, w->proj_w, hl, 0.0f, partial_target(p, a->x2), h));
  PTDP_CALL(reduce_partial(m, p, a->x2, h)); /* [Nl, h] */
  ptdp_dropout_key k1 = resid_key(m, PTDP_RNG_ATTN_RESID, layer, p->sample0);
  /* the residual into the second norm (one pass where the backend fuses them) */
  PTDP_CALL(m->passes.residual_norm(m, a->x2, w->proj_b, a->mask1, &k1, a->x, Nl, w->ln2_w, w->ln2_b, a->ln2_out,
                                    a->ln2_mean, a->ln2_rstd));

  /* MLP block (a mixture of experts in its layers: moe.c) */
  PTDP_CALL(gathered_input(m, p, a->ln2_out, h, &in));
  if (ptdp_moe_layer(&m->cfg.arch, layer))
    PTDP_CALL(ptdp_moe_forward(m, layer, w, a, in, partial_target(p, out)));
  else {
    PTDP_CALL(mlp_fc1_forward(m, w, N, in, a->fc1, a->gelu));
    PTDP_CALL(be->gemm(be, 0, 1, N, h, fl, 1.0f, a->gelu, fl, w->fc2_w, fl, 0.0f, partial_target(p, out), h));
  }
  PTDP_CALL(reduce_partial(m, p, out, h));
  ptdp_dropout_key k2 = resid_key(m, PTDP_RNG_MLP_RESID, layer, p->sample0);
  PTDP_CALL(m->passes.residual(m, out, w->fc2_b, a->mask2, &k2, a->x2, Nl));
  return 0;
}

/* Training's attention core: the backend's causal attention over the micro-batch, keeping the
 * probabilities (and their dropout) for the backward pass. */
static int train_attention(const ptdp_block_pass *p, ptdp_gpt *m, int layer, const ptdp_layer_acts *a)
{
  ptdp_attn_desc d = ptdp_layer_attn_desc(m, layer, p->sample0);
  if (m->cfg.flash_attention) return m->be->flash_forward(m->be, &d, a->qkv, a->ctx, a->lse);
  return m->be->attention_forward(m->be, &d, a->qkv, a->probs, a->attn_mask, a->probs_drop, a->ctx);
}

int ptdp_layer_forward(ptdp_gpt *m, int chunk, int i, const ptdp_layer_acts *a, float *out, long long sample0)
{
  const ptdp_block_pass p = {.N = m->sh.N, .Nl = m->sh.Nl, .sp = m->cfg.sequence_parallel, .full = m->work.full_a,
                             .sample0 = sample0, .pos0 = 0, .b = m->cfg.micro_batch, .attention = train_attention};
  return ptdp_gpt_block_forward(m, m->chunks[chunk].layer0 + i, &m->chunks[chunk].layers[i].w, &p, a, out);
}

/* The mixture's backward (moe.c) from the gradient of its reduced output, full rows in fa (under
 * sequence parallelism gathered there; else the shard buffer dz, copied there), where the partial
 * input gradient goes; its input gathered again into fb under sequence parallelism. */
static int moe_backward(ptdp_gpt *m, int layer, const ptdp_layer_params *w, const ptdp_layer_params *g,
                        const ptdp_layer_acts *a, const float *dz, float *fa, float *fb)
{
  const float *in = a->ln2_out;
  if (m->cfg.sequence_parallel) {
    PTDP_CALL(ptdp_tp_gather(m, a->ln2_out, fb, m->cfg.hidden, PTDP_TAG_LAYER));
    in = fb;
  } else
    PTDP_CALL(m->be->copy(m->be, fa, dz, (size_t)m->sh.N * m->cfg.hidden * m->es));
  return ptdp_moe_backward(m, layer, w, g, a, fa, in, fa);
}

int ptdp_layer_backward(ptdp_gpt *m, int chunk, int i, const ptdp_layer_acts *a, const float *dout, float *dx,
                        long long sample0)
{
  ptdp_backend *be = m->be;
  const int h = m->cfg.hidden, N = m->sh.N, Nl = m->sh.Nl, sp = m->cfg.sequence_parallel;
  const int layer = m->chunks[chunk].layer0 + i;
  const ptdp_layer_params w = m->chunks[chunk].layers[i].w, g = m->chunks[chunk].layers[i].g;
  float *fa = m->work.full_a, *fb = m->work.full_b;
  float *dz = m->work.shard_a, *dx2 = m->work.shard_b, *dln = m->work.shard_c;
  const size_t nlh = (size_t)Nl * h;

  /* MLP block: out = x2 + dropout(fc2(gelu(fc1(LN2(x2)))) + b2) */
  PTDP_CALL(m->passes.dropout_backward_to(m, dz, dout, a->mask2, nlh));
  PTDP_CALL(bias_bwd(be, dz, g.fc2_b, Nl, h));
  const float *dT = dz; /* gradient of the row-parallel output, full rows */
  if (sp) {
    PTDP_CALL(ptdp_tp_gather(m, dz, fa, h, PTDP_TAG_LAYER));
    dT = fa;
  }
  if (ptdp_moe_layer(&m->cfg.arch, layer)) /* the mixture of experts: partial dIn into fa */
    PTDP_CALL(moe_backward(m, layer, &w, &g, a, dz, fa, fb));
  else {
    PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, h, m->sh.fl, N, 1.0f, dT, h, a->gelu, m->sh.fl, g.fc2_w, m->sh.fl)); /* dW2 += dT^T G */
    PTDP_CALL(mlp_act_backward(m, &w, &g, a, dT, m->work.dfc)); /* dF [N, fc1] */
    const float *in = a->ln2_out;
    if (sp) {
      PTDP_CALL(ptdp_tp_gather(m, a->ln2_out, fb, h, PTDP_TAG_LAYER));
      in = fb;
    }
    const int f1 = m->sh.fc1;
    PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, f1, h, N, 1.0f, m->work.dfc, f1, in, h, g.fc1_w, h)); /* dW1 += dF^T in */
    PTDP_CALL(be->gemm(be, 0, 0, N, h, f1, 1.0f, m->work.dfc, f1, w.fc1_w, h, 0.0f, fa, h)); /* partial dIn */
  }
  PTDP_CALL(ptdp_tp_reduce(m, fa, dln, h, PTDP_TAG_LAYER));
  PTDP_CALL(m->passes.norm_backward_add(m, dln, a->x2, w.ln2_w, a->ln2_mean, a->ln2_rstd, dx2, g.ln2_w, g.ln2_b, Nl, dout));

  /* attention block: x2 = x + dropout(proj(attn(QKV(LN1(x)))) + bp) */
  PTDP_CALL(m->passes.dropout_backward_to(m, dz, dx2, a->mask1, nlh));
  PTDP_CALL(bias_bwd(be, dz, g.proj_b, Nl, h));
  dT = dz;
  if (sp) {
    PTDP_CALL(ptdp_tp_gather(m, dz, fa, h, PTDP_TAG_LAYER));
    dT = fa;
  }
  PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, h, m->sh.hl, N, 1.0f, dT, h, a->ctx, m->sh.hl, g.proj_w, m->sh.hl));
  PTDP_CALL(be->gemm(be, 0, 0, N, m->sh.hl, h, 1.0f, dT, h, w.proj_w, m->sh.hl, 0.0f, m->work.dctx, m->sh.hl));
  ptdp_attn_desc d = ptdp_layer_attn_desc(m, layer, sample0);
  if (m->cfg.flash_attention)
    PTDP_CALL(be->flash_backward(be, &d, a->qkv, a->ctx, a->lse, m->work.dctx, m->work.dqkv));
  else
    PTDP_CALL(be->attention_backward(be, &d, a->qkv, a->probs, a->attn_mask, a->probs_drop, m->work.dctx,
                                     m->work.dqkv, m->work.attn));
  PTDP_CALL(rope(m, m->work.dqkv, N, 0, m->cfg.micro_batch, 1));
  PTDP_CALL(bias_bwd(be, m->work.dqkv, g.qkv_b, N, m->sh.qkv));
  /* The key bias's gradient is exactly zero: softmax is invariant to adding one number to a
   * query's row of scores, and a key bias adds q . b_k to the whole row.  In floating point the
   * sum is rounding noise (~1e-11) that Adam would turn into lr-sized steps; store the zero.
   * Not with rotary positions: the key bias then turns with its key's position, and q . R b_k
   * differs along the row. */
  if (g.qkv_b && m->cfg.arch.position != PTDP_POS_ROPE)
    for (int gg = 0; gg < m->sh.gl; gg++) /* each group's key head follows its hpg queries */
      PTDP_CALL(be->memset0(be, g.qkv_b + ((size_t)gg * (m->sh.hpg + 2) + m->sh.hpg) * m->sh.hd,
                            sizeof(float) * (size_t)m->sh.hd));
  const float *in = a->ln1_out;
  if (sp) {
    PTDP_CALL(ptdp_tp_gather(m, a->ln1_out, fb, h, PTDP_TAG_LAYER));
    in = fb;
  }
  PTDP_CALL(ptdp_backend_gemm_wgrad(be, 1, 0, m->sh.qkv, h, N, 1.0f, m->work.dqkv, m->sh.qkv, in, h, g.qkv_w, h));
  PTDP_CALL(be->gemm(be, 0, 0, N, h, m->sh.qkv, 1.0f, m->work.dqkv, m->sh.qkv, w.qkv_w, h, 0.0f, fa, h));
  PTDP_CALL(ptdp_tp_reduce(m, fa, dln, h, PTDP_TAG_LAYER));
  PTDP_CALL(m->passes.norm_backward_add(m, dln, a->x, w.ln1_w, a->ln1_mean, a->ln1_rstd, dx, g.ln1_w, g.ln1_b, Nl, dx2));
  return 0;
}
