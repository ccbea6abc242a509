/* The one interface between the model and a device: a table of operations.
 *
 * Model code calls only these (through ptdp_backend *be), on raw device pointers plus sizes,
 * so a CUDA backend slots in by filling the same table.  All matrices are row-major.
 * Shapes use the papers' symbols: N = tokens (s b) in a micro-batch, h hidden, al = a / t local
 * heads, hd = h / a head size, s sequence, V vocabulary.
 *
 * Storage type.  The arguments marked (S) below hold elements of the backend's storage type
 * be->dtype: weights, activations and their gradients.  Everything else is fp32 whatever the
 * storage type: LayerNorm statistics, cross-entropy statistics, the attention scratch, the
 * gradients of the parameters (Megatron's main_grad: dw, db, dwte, the C of gemm_wgrad), the
 * optimizer's master weights and moments.  The cpu and guard backends store fp32 (dtype
 * PTDP_F32); the cuda backend stores the type its options ask for (ptdp_backend_options.dtype:
 * fp32, or bf16/fp16 natively, with fp32 math inside each operation and GEMMs accumulating in
 * fp32).  Mixed precision on a backend storing fp32 wraps it (ptdp_backend_mixed_create): the
 * wrapper stores bf16 or fp16, converts (S) inputs into fp32 work space, runs the inner
 * backend's fp32 operation and rounds (S) outputs to the storage type (round to nearest even),
 * so arithmetic is fp32 and every stored value is a bf16/fp16 number; ptdp_backend_create_typed
 * chooses between the two.  A native table rounds where the wrapper does (each (S) output once,
 * from its fp32 value), except inside the unfused attention (src/backend/cuda_attention.c).
 * The (S) pointers keep the C type float * in this table; model code never does arithmetic on
 * them without the storage type's element size (ptdp_dtype_size). */
#ifndef PTDP_BACKEND_H
#define PTDP_BACKEND_H

#include "ptdp/dtype.h" /* ptdp_dtype */

#include <stddef.h>
#include <stdint.h>

/* Where dropout masks come from: element (r, c) of a [rows, cols] block whose row r is global
 * row row0 + r of a [s, b] token grid (pos = R / b, sample = sample0 + R % b) and whose
 * column c is global column col0 + c.  Masks are 1 where kept. */
typedef struct {
  uint64_t seed;
  uint32_t site, layer;
  long long sample0, row0, col0;
  int b;
  float p;
} ptdp_dropout_key;

/* Rotary position embedding (Su et al. 2021; Megatron's rope) on the query and key heads of qkv
 * rows: row r (of rows, ordered (position, sample)) is at position pos0 + r / b; a row holds
 * groups blocks of (heads_per_group + 2) heads of hd (heads_per_group queries, one key, one
 * value: Megatron's fused layout; one query per group without grouped-query attention), ld floats
 * apart.  The first rd (even) entries of each query and key head turn by the angles of the
 * table [position][rd/2][cos, sin] (fp32): pairs (i, i + rd/2), the rotate-half layout of Llama
 * and Hugging Face, or (2i, 2i + 1) when interleaved. */
typedef struct {
  long long rows, pos0;
  int b, groups, heads_per_group, hd, rd, ld, interleaved;
} ptdp_rope_desc;

/* Attention core for one micro-batch: qkv [N, (al + 2 groups) hd] with each token's row laid out
 * [groups][queries of the group, key, value][hd] (Megatron's fused layout: [al][3][hd] without
 * grouped-query attention), N rows ordered (pos, batch). */
typedef struct {
  int b, s, al, hd;
  int groups;          /* key/value groups (grouped-query attention: al / groups query heads share a
                          group's key and value; a row is then [groups][al/groups + 2][hd]); 0: al */
  long long head0;     /* global index of local head 0 (key of the dropout mask) */
  ptdp_dropout_key drop; /* attention-probability dropout (p = 0: none) */
} ptdp_attn_desc;

/* Bytes per element (4, 2, 2); 0 for a value outside the enum. */
size_t ptdp_dtype_size(ptdp_dtype t);

/* One tensor's range for adamw_many (fp32): weights (or their master) p, gradient g, moments m and
 * v, n elements, weight decay wd (0 for none); w16, when not NULL, receives the updated p in the
 * call's 16-bit type (the model's stored weights), as convert would write them. */
typedef struct {
  float *p;
  const float *g;
  float *m, *v;
  size_t n;
  float wd;
  void *w16;
} ptdp_adamw_range;

typedef struct ptdp_backend ptdp_backend;
struct ptdp_backend {
  const char *name;
  void *ctx;
  ptdp_dtype dtype; /* the storage type of the (S) arguments (PTDP_F32 unless mixed precision) */
  /* 1 when the host may read and write the backend's memory directly (the CPU backend); 0 when
   * only the operations below may touch it (a GPU; the guard backend of the tests).  Host code
   * never relies on it for correctness: it moves data with to_device / to_host.  The MPI
   * transport reads it to decide whether messages must be staged through host buffers. */
  int host_accessible;
  /* Its attention operations read ptdp_attn_desc.groups (grouped-query attention); a backend
   * without it reads every row as [al][3][hd], and the model refuses grouped queries on it. */
  int grouped_attention;
  /* The CUDA stream (a cudaStream_t) every operation is issued on, in order; NULL on the CPU
   * backends.  The NCCL transport orders its own stream after it (events), not the host. */
  void *stream;

  /* ==================================================================== required operations
   * Every backend fills these (PTDP_BACKEND_OPS below lists them; PTDP_BACKEND_FILL sets them,
   * so a backend lacking one fails to compile, and ptdp_backend_check_ops refuses, at creation,
   * a table without one, naming it).  They are enough to train a GPT model in any layout. */

  /* ---- memory and streams */
  int (*alloc)(ptdp_backend *be, void **p, size_t bytes); /* zeroed */
  void (*free)(ptdp_backend *be, void *p);
  int (*memset0)(ptdp_backend *be, void *p, size_t bytes);
  int (*copy)(ptdp_backend *be, void *dst, const void *src, size_t bytes); /* device to device */
  int (*to_device)(ptdp_backend *be, void *dst, const void *src_host, size_t bytes); /* host to device */
  int (*to_host)(ptdp_backend *be, void *dst_host, const void *src, size_t bytes);   /* device to host */
  /* Wait until every operation issued so far has finished (a no-op where operations are
   * synchronous); host code calls it before it reads results fetched by to_host. */
  int (*synchronize)(ptdp_backend *be);
  /* Release the backend's own state (not the table itself; ptdp_backend_destroy does that). */
  void (*destroy)(ptdp_backend *be);

  /* ---- GEMM */
  /* C[M,N] = alpha op(A) op(B) + beta C; op(A) is [M,K], op(B) [K,N]; ld* are row strides.
   * A, B, C (S). */
  int (*gemm)(ptdp_backend *be, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc);

  /* ---- norms */
  /* y = LN(x) w + b per row of h; saves mean and 1/std per row (fp32).  x, w, bias, y (S). */
  int (*layernorm_forward)(ptdp_backend *be, const float *x, const float *w, const float *bias, float *y,
                           float *mean, float *rstd, long long rows, int h, float eps);
  /* dx = dLN/dx (overwrites), dw += , db += .  dy, x, w, dx (S); dw, db fp32. */
  int (*layernorm_backward)(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *mean,
                            const float *rstd, float *dx, float *dw, float *db, long long rows, int h);

  /* ---- element-wise, bias, dropout */
  /* x, y, dy, dx (S). */
  int (*gelu_forward)(ptdp_backend *be, const float *x, float *y, size_t n);
  int (*gelu_backward)(ptdp_backend *be, const float *x, const float *dy, float *dx, size_t n); /* dx = dy gelu'(x) */
  int (*bias_forward)(ptdp_backend *be, float *y, const float *bias, long long rows, int cols); /* y += b; (S) */
  int (*bias_backward)(ptdp_backend *be, const float *dy, float *db, long long rows, int cols); /* db += sum rows; dy (S), db fp32 */
  int (*add)(ptdp_backend *be, float *y, const float *x, size_t n); /* y += x; (S) */
  int (*scale)(ptdp_backend *be, float *y, float a, size_t n);      /* y *= a; fp32 (gradients) */
  /* Fill mask from the key and apply: y = x * mask / (1 - p) in place; p == 0 is a copy-free no-op.
   * x, dx (S). */
  int (*dropout_forward)(ptdp_backend *be, float *x, uint8_t *mask, long long rows, int cols, const ptdp_dropout_key *k);
  int (*dropout_backward)(ptdp_backend *be, float *dx, const uint8_t *mask, size_t n, float p);

  /* ---- attention (the softmax kept in full: the reference) */
  /* probs [b, al, s, s] softmax output; mask, probs_drop the dropout (may alias probs when p = 0);
   * ctx [N, al hd].  qkv, probs, probs_drop, ctx (S). */
  int (*attention_forward)(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *probs,
                           uint8_t *mask, float *probs_drop, float *ctx);
  /* From dctx [N, al hd] to dqkv [N, 3 hl] (overwrites); scratch of s s floats (one (sample, head)
   * pair; a backend working on several pairs at once finds its own; fp32).  qkv, probs,
   * probs_drop, dctx, dqkv (S). */
  int (*attention_backward)(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *probs,
                            const uint8_t *mask, const float *probs_drop, const float *dctx, float *dqkv,
                            float *scratch);

  /* ---- embedding */
  /* out[r] = wte[tok[r] - v0] for tokens in [v0, v0 + vl), else 0.  wte, out, dout (S); dwte fp32. */
  int (*embedding_forward)(ptdp_backend *be, const float *wte, const int32_t *tok, long long v0, long long vl,
                           float *out, long long rows, int h);
  int (*embedding_backward)(ptdp_backend *be, const float *dout, const int32_t *tok, long long v0, long long vl,
                            float *dwte, long long rows, int h);

  /* ---- cross entropy */
  /* Vocab-parallel cross entropy, in three steps around the TP reductions:
   * stats: rowmax[r] = max_j logits, tgt[r] = logit of target if it is local else 0;
   * sumexp: se[r] = sum_j exp(logits - gmax[r]);
   * grad: logits <- (softmax - onehot) * scale, in place.
   * logits (S); rowmax, tgt, gmax, se fp32; the arithmetic is fp32. */
  int (*xent_stats)(ptdp_backend *be, const float *logits, const int32_t *target, long long v0, long long rows,
                    int vl, float *rowmax, float *tgt);
  int (*xent_sumexp)(ptdp_backend *be, const float *logits, const float *gmax, long long rows, int vl, float *se);
  int (*xent_grad)(ptdp_backend *be, float *logits, const int32_t *target, long long v0, const float *gmax,
                   const float *se, long long rows, int vl, float scale);

  /* ---- optimizer */
  /* AdamW on n elements (Loshchilov & Hutter): decay applied as p -= lr wd p.  All fp32 (master). */
  int (*adamw)(ptdp_backend *be, float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
               float beta2, float eps, float wd, long long step);
  double (*sumsq)(ptdp_backend *be, const float *x, size_t n); /* in double */

  /* ---- conversions and the loss scaler */
  /* convert: dst[i] = src[i] from type st to type dt, n elements, rounded to nearest even as
   * ptdp/half.h defines it bit for bit (a same-type convert is a copy); dst and src do not
   * overlap.  The model's copy of its fp32 master weights into the stored 16-bit weights
   * (ptdp_gpt_sync_weights, ptdp_gpt_sync_shard).  unscale_check: x *= inv_scale in place (one
   * fp32 multiply per element), and the host int *found = 1 if any x[i] was inf or NaN before
   * scaling, else 0 (Megatron's _amp_foreach_non_finite_check_and_unscale_); it returns once
   * *found is known (a GPU waits).  The optimizer's unscaling of fp16 gradients under the
   * dynamic loss scaler (src/optim/optimizer.c). */
  int (*convert)(ptdp_backend *be, void *dst, ptdp_dtype dt, const void *src, ptdp_dtype st, size_t n);
  int (*unscale_check)(ptdp_backend *be, float *x, size_t n, float inv_scale, int *found);

  /* ==================================================================== optional operations
   * NULL where a backend lacks one; each says what the model does then.  Most are fusions of
   * required operations, bit for bit or to rounding as each says; the Llama family's are new
   * arithmetic, without which the model refuses an architecture that needs them. */

  /* ---- GEMM: the 16-bit weight gradient and fused epilogues */
  /* C += alpha op(A) op(B) (beta 1) with A, B (S) and C fp32: a weight's gradient accumulated
   * into its main gradient.  NULL where it is gemm (dtype PTDP_F32); call it through
   * ptdp_backend_gemm_wgrad.  A 16-bit table sets it (the wrapper's, or the cuda backend's
   * cuBLASLt product with 16-bit A, B and an fp32 C). */
  int (*gemm_wgrad)(ptdp_backend *be, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                    int lda, const float *B, int ldb, float *C, int ldc);
  /* GEMMs with their epilogue fused (cuda: cuBLASLt's BIAS, GELU_AUX_BIAS and DGELU, db by its
   * fp32 column sums); NULL: the model runs gemm and the kernels.  C [M, N] dense (ld N) =
   * op(A) op(B) (alpha 1, beta 0, lda and ldb as gemm's), then
   *   gemm_bias:        C += bias (bias [N] added to every row: gemm, then bias_forward)
   *   gemm_bias_gelu:   pre = C + bias, C = gelu(pre), pre [M, N] kept for the backward (gemm
   *                     into pre, bias_forward, gelu_forward into C)
   *   gemm_dgelu_bgrad: C = C gelu'(pre) (gelu_backward), db += the column sums of C
   *                     (bias_backward)
   * Equal to those sequences to rounding: a fused output is rounded once from fp32 where the
   * sequence stores each step.  A, B, bias, pre, C (S); db fp32. */
  int (*gemm_bias)(ptdp_backend *be, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                   const float *B, int ldb, const float *bias, float *C);
  int (*gemm_bias_gelu)(ptdp_backend *be, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                        const float *B, int ldb, const float *bias, float *pre, float *C);
  int (*gemm_dgelu_bgrad)(ptdp_backend *be, int trans_a, int trans_b, int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, const float *pre, float *C, float *db);

  /* ---- the residual stream's fusions (NULL: the model makes the separate calls) */
  /* layernorm_backward with the residual's gradient added: dx = dLN/dx + res, in one pass over dx
   * (bit for bit layernorm_backward then add in fp32; a 16-bit dx rounded once where the two round
   * twice).  res (S), not dx.  NULL: the two calls. */
  int (*layernorm_backward_add)(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *mean,
                                const float *rstd, float *dx, float *dw, float *db, long long rows, int h,
                                const float *res);
  /* dst = dropout_backward of src, src left as it was: copy then dropout_backward in one pass,
   * their bits (p 0: the copy).  dst, src (S).  NULL: the two calls. */
  int (*dropout_backward_to)(ptdp_backend *be, float *dst, const float *src, const uint8_t *mask, size_t n, float p);
  /* y [rows, cols] = dropout(y + bias) + res in one pass, mask filled from key k as
   * dropout_forward fills it: bias_forward (where bias is not NULL), dropout_forward and add in
   * one, bit for bit in fp32 (each product and sum rounded on its own), a 16-bit y rounded once
   * where the three round three times.  y, bias, res (S).  NULL: the model calls the three; a
   * GPU's three passes over the residual stream were two too many. */
  int (*bias_dropout_add)(ptdp_backend *be, float *y, const float *bias, uint8_t *mask, const ptdp_dropout_key *k,
                          const float *res, long long rows, int cols);
  /* bias_dropout_add on y [rows, h], then layernorm_forward of the result: out = LN(y) w + nb,
   * mean and rstd saved; bit for bit this backend's bias_dropout_add then layernorm_forward (y
   * written once and read back from the cache where the two passes read it from memory again).
   * y, bias, res, w, nb, out (S).  NULL: the model calls the two. */
  int (*bias_dropout_add_layernorm)(ptdp_backend *be, float *y, const float *bias, uint8_t *mask,
                                    const ptdp_dropout_key *k, const float *res, long long rows, int h,
                                    const float *w, const float *nb, float *out, float *mean, float *rstd, float eps);

  /* ---- the Llama family (NULL: the backend has none; the model refuses an architecture that
   * needs them, by the operation's name).  PTDP_BACKEND_LLAMA_OPS lists the five a backend fills
   * together; the two fusions after them are optional apart. */
  /* RMSNorm: y = x rstd w, rstd = 1 / sqrt(mean(x^2) + eps) per row (fp32); backward
   * dx = rstd (g - x rstd^2 mean(g x)), g = dy w, dw += sum_rows dy x rstd.  x, w, y, dy, dx (S);
   * rstd, dw fp32.  rope: the rotation of ptdp_rope_desc in place on qkv (S); inverse 1 turns the
   * other way (the backward of a rotation is its inverse). */
  int (*rmsnorm_forward)(ptdp_backend *be, const float *x, const float *w, float *y, float *rstd, long long rows,
                         int h, float eps);
  int (*rmsnorm_backward)(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                          float *dx, float *dw, long long rows, int h);
  int (*rope)(ptdp_backend *be, float *qkv, const ptdp_rope_desc *d, const float *table, int inverse);
  /* SwiGLU (Shazeer 2020; Megatron's --swiglu).  x [rows, 2 f] is fc1's output, each row
   * [gate (f) | up (f)] (a TP rank's own slices of the gate and the up projection: Megatron's
   * chunk of linear_fc1's output in two); y [rows, f] = silu(gate) up, silu(g) = g sigmoid(g).
   * Backward overwrites dx [rows, 2 f] from dy [rows, f]:
   * dgate = dy up sigmoid(g) (1 + g (1 - sigmoid(g))), dup = dy silu(g).  x, y, dy, dx (S). */
  int (*swiglu_forward)(ptdp_backend *be, const float *x, float *y, long long rows, int f);
  int (*swiglu_backward)(ptdp_backend *be, const float *x, const float *dy, float *dx, long long rows, int f);
  /* rmsnorm_backward with the residual's gradient added, as layernorm_backward_add: dx = dRMS/dx +
   * res in one pass.  NULL: the two calls. */
  int (*rmsnorm_backward_add)(ptdp_backend *be, const float *dy, const float *x, const float *w, const float *rstd,
                              float *dx, float *dw, long long rows, int h, const float *res);
  /* bias_dropout_add then rmsnorm_forward of the result, as bias_dropout_add_layernorm (bit for
   * bit this backend's two).  NULL: the two calls. */
  int (*bias_dropout_add_rmsnorm)(ptdp_backend *be, float *y, const float *bias, uint8_t *mask,
                                  const ptdp_dropout_key *k, const float *res, long long rows, int h, const float *w,
                                  float *out, float *rstd, float eps);

  /* ---- fused (flash) attention (NULL: the backend has none; --attention-backend auto then takes
   * attention_forward/backward).  The same function as those two (causal softmax of
   * Q K^T / sqrt(hd), dropout with the same mask bits from d->drop, times V) without keeping the
   * s x s probabilities: forward writes ctx [N, al hd] and lse [b, al, s], each query row's
   * log-sum-exp of its scaled causal scores (fp32: the softmax is exp(S - lse)); backward
   * recomputes the probabilities from qkv and lse, takes D = rowsum(dctx * ctx) from the saved
   * ctx, and overwrites dqkv [N, 3 hl].  Equal to the unfused pair to rounding (their order of
   * sums differs).  qkv, ctx, dctx, dqkv (S); lse fp32.  Forward and backward both or neither. */
  int (*flash_forward)(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, float *ctx, float *lse);
  /* Whether the fused kernels take attention d (head size, counts); NULL: every shape. */
  int (*flash_supports)(const ptdp_backend *be, const ptdp_attn_desc *d);
  int (*flash_backward)(ptdp_backend *be, const ptdp_attn_desc *d, const float *qkv, const float *ctx,
                        const float *lse, const float *dctx, float *dqkv);

  /* ---- cross entropy with fewer reads of the logits, and the loss on the device */
  /* Under tensor parallelism, the statistics of one read of the logits: lmax[r] = the slice's row
   * max, lsum[r] = sum_j exp(logits - lmax[r]) (its own max: no reduction needed first), tgt as
   * xent_stats; then, once gmax is lmax's MAX over TP, xent_rescale: lsum[r] *= exp(lmax[r] -
   * gmax[r]) in place (0 where lmax[r] is -inf: a slice of padding columns only), whose SUM over
   * TP is xent_sumexp's se to rounding.  Two reads of the logits (this and xent_grad) where stats
   * and sumexp make three.  All fp32 but logits (S); both or neither (NULL: xent_stats and
   * xent_sumexp). */
  int (*xent_stats_local)(ptdp_backend *be, const float *logits, const int32_t *target, long long v0, long long rows,
                          int vl, float *lmax, float *lsum, float *tgt);
  int (*xent_rescale)(ptdp_backend *be, float *lsum, const float *lmax, const float *gmax, long long rows);
  /* Where one rank holds every column of the logits (t = 1, so gmax is rowmax): stats, sumexp
   * and grad in one call, their outputs bit for bit (rowmax, se, tgt; logits <- (softmax -
   * onehot) scale).  NULL: the three calls; a GPU reads the logits once instead of three times
   * where a row fits in registers. */
  int (*xent_fused)(ptdp_backend *be, float *logits, const int32_t *target, long long v0, long long rows, int vl,
                    float *rowmax, float *se, float *tgt, float scale);
  /* The micro-batch's mean loss from the statistics above (after their TP reductions), left where
   * the backend keeps its data: *loss = (float)(sum_r (log(se[r]) + gmax[r] - tgt[r]) / rows), the
   * terms and their sum in double (the CPU's in row order; a GPU's in a fixed tree order, the same
   * bits on every run).  gmax, se, tgt, loss fp32.  NULL: the model copies the statistics to the
   * host and sums there, so the host waits for the device once per micro-batch; with it the host
   * reads the losses once per pipeline run, ptdp_gpt_take_losses. */
  int (*xent_loss)(ptdp_backend *be, const float *gmax, const float *se, const float *tgt, long long rows,
                   float *loss);

  /* ---- the optimizer over every tensor at once */
  /* adamw over count ranges at once, from gradients times gscale (the clipping factor, 1 for
   * none): each element bit for bit what scale(g, gscale) and then adamw on its range give (one
   * fp32 multiply, then the same arithmetic), g itself left as it was; and a range's w16 (t16:
   * bf16 or fp16) bit for bit what convert(w16, t16, p, fp32, n) gives after it (the copy back to
   * the stored weights, in the same pass).  NULL: the caller scales, calls adamw per range and
   * converts; a GPU's one launch per tensor was 148 launches a step of GPT 125M and 292 of
   * 1.3B. */
  int (*adamw_many)(ptdp_backend *be, const ptdp_adamw_range *r, int count, ptdp_dtype t16, float gscale, float lr,
                    float beta1, float beta2, float eps, long long step);
  /* out[i] = sumsq(x[i], n[i]) bit for bit, i < count, with one wait for all of them (a GPU's
   * gradient norm is one sum per tensor: one host synchronisation per tensor was 148 waits per
   * step of GPT 125M).  NULL: the caller calls sumsq per array. */
  int (*sumsq_many)(ptdp_backend *be, const float *const *x, const size_t *n, int count, double *out);
};

/* The required operations of the table above, listed once, in its order.  A backend fills its
 * table with PTDP_BACKEND_FILL(be, prefix): be->op = prefix_op for each op, so a backend that
 * lacks a function fails to compile; ptdp_backend_check_ops checks a table at creation. */
#define PTDP_BACKEND_OPS(X, P)                                                                            \
  X(P, alloc) X(P, free) X(P, memset0) X(P, copy) X(P, to_device) X(P, to_host) X(P, synchronize)           \
  X(P, destroy) X(P, gemm) X(P, layernorm_forward) X(P, layernorm_backward) X(P, gelu_forward)             \
  X(P, gelu_backward) X(P, bias_forward) X(P, bias_backward) X(P, add) X(P, scale) X(P, dropout_forward)   \
  X(P, dropout_backward) X(P, attention_forward) X(P, attention_backward) X(P, embedding_forward)          \
  X(P, embedding_backward) X(P, xent_stats) X(P, xent_sumexp) X(P, xent_grad) X(P, adamw) X(P, sumsq)      \
  X(P, convert) X(P, unscale_check)
#define PTDP_BACKEND_SET_OP_(P, op) be_->op = P##_##op;
#define PTDP_BACKEND_FILL(be, P)                                                                          \
  do {                                                                                                    \
    ptdp_backend *be_ = (be);                                                                             \
    PTDP_BACKEND_OPS(PTDP_BACKEND_SET_OP_, P)                                                             \
  } while (0)
/* The Llama family's optional operations (NULL where a backend lacks them; the model refuses the
 * architecture by the operation's name), listed once: a backend that has them all fills them with
 * PTDP_BACKEND_FILL_LLAMA(be, prefix) (be->op = prefix_op). */
#define PTDP_BACKEND_LLAMA_OPS(X, P)                                                                      \
  X(P, rmsnorm_forward) X(P, rmsnorm_backward) X(P, rope) X(P, swiglu_forward) X(P, swiglu_backward)
#define PTDP_BACKEND_FILL_LLAMA(be, P)                                                                    \
  do {                                                                                                    \
    ptdp_backend *be_ = (be);                                                                             \
    PTDP_BACKEND_LLAMA_OPS(PTDP_BACKEND_SET_OP_, P)                                                       \
  } while (0)
/* PTDP_ERR_INTERNAL naming the first required operation a backend's table lacks, or an optional
 * one it has without its partner (both or neither: flash_forward and flash_backward,
 * xent_stats_local and xent_rescale, rmsnorm_forward and rmsnorm_backward, swiglu_forward and
 * swiglu_backward). */
int ptdp_backend_check_ops(const ptdp_backend *be);

/* be->gemm_wgrad, or be->gemm with beta 1 where it is NULL. */
int ptdp_backend_gemm_wgrad(ptdp_backend *be, int trans_a, int trans_b, int M, int N, int K, float alpha,
                            const float *A, int lda, const float *B, int ldb, float *C, int ldc);

/* What a backend needs from the program to set itself up.  The CPU backend (and the guard
 * backend, which runs it) sets the process's threads from these: see include/ptdp/cpu_threads.h. */
typedef struct {
  int num_threads;   /* per rank; 0: OMP_NUM_THREADS, else the CPUs bound, else cores / ranks_on_node */
  int ranks_on_node; /* ranks sharing this node's cores (MPI_COMM_TYPE_SHARED) */
  int report;        /* 1 on the rank that prints set-up warnings */
  int local_rank;    /* this rank's place among them: the CUDA backend's GPU is local_rank mod GPUs */
  int device;        /* key device: a GPU index for every rank of the node; -1: from local_rank */
  /* The storage type asked for (0, PTDP_F32, unless set): a backend that stores it natively
   * does (cuda: bf16, fp16); the others store fp32 whatever it says.  ptdp_backend_create_typed
   * sets it and wraps what comes back in fp32. */
  ptdp_dtype dtype;
} ptdp_backend_options;

/* The backends, the one place their names are written: PTDP_BACKEND_CHOICES lists them in the
 * order of ptdp_backend_kind, as the option parser's choices ("a|b|c", the position of a name
 * being its kind: ptdp/options.h), so a key of type choice stores a ptdp_backend_kind. */
typedef enum { PTDP_BACKEND_CPU = 0, PTDP_BACKEND_GUARD = 1, PTDP_BACKEND_CUDA = 2 } ptdp_backend_kind;
#define PTDP_BACKEND_CHOICES "cpu|guard|cuda"

/* The attention core (Megatron's key attention-backend): flash, the backend's fused kernels
 * (flash_forward/backward); unfused, the softmax kept in full (attention_forward/backward, the
 * reference); auto, flash on a GPU backend that has it, else unfused (the CPU backends keep the
 * reference by default: their fused path saves memory, not time). */
typedef enum { PTDP_ATTN_FLASH = 0, PTDP_ATTN_UNFUSED = 1, PTDP_ATTN_AUTO = 2 } ptdp_attention_backend;
#define PTDP_ATTENTION_BACKEND_CHOICES "flash|unfused|auto"
/* *flash = 1 when `choice` runs the fused attention on be for attention d (its shape: the
 * backend's flash_supports may decline it); PTDP_ERR_INPUT when flash is asked of a backend
 * without it, or for a shape it declines. */
int ptdp_backend_use_flash(const ptdp_backend *be, ptdp_attention_backend choice, const ptdp_attn_desc *d,
                           int *flash);

/* A backend by name:
 *   "cpu"    OpenBLAS + OpenMP on the host;
 *   "guard"  the CPU backend's operations on memory the host cannot touch outside them (a test
 *            tool: host code that reads or writes backend memory directly dies of SIGSEGV);
 *   "cuda"   one NVIDIA GPU per rank (ptdp/cuda.h); a build without CUDA, or a node without a
 *            GPU, is a PTDP_ERR_INPUT error saying which;
 * opt NULL means {0, 1, 0, 0, -1}.  An unknown name is a PTDP_ERR_INPUT error listing the valid ones. */
int ptdp_backend_create(const char *name, const ptdp_backend_options *opt, ptdp_backend **be);
/* The same by kind (a choice key's value). */
int ptdp_backend_create_kind(ptdp_backend_kind kind, const ptdp_backend_options *opt, ptdp_backend **be);
/* A backend of kind storing t, the one place that decides how: natively where the backend can
 * (opt->dtype = t asked of it; cuda stores bf16 and fp16), else the mixed-precision wrapper
 * around its fp32 table (cpu, guard).  *native (may be NULL): 1 when the table stores t itself
 * (fp32 included), 0 when wrapped.  opt as for ptdp_backend_create_kind (its dtype ignored). */
int ptdp_backend_create_typed(ptdp_backend_kind kind, const ptdp_backend_options *opt, ptdp_dtype t,
                              ptdp_backend **be, int *native);
/* The CPU backend alone, leaving the process's threads as they are. */
int ptdp_backend_cpu_create(ptdp_backend **be);
/* Mixed precision: a backend storing dtype t (PTDP_BF16 or PTDP_F16) on top of inner, a backend
 * of dtype PTDP_F32 that it now owns (destroying the wrapper destroys inner).  Its table keeps
 * inner's name ("cpu", "cuda"...), host_accessible and stream; memory operations (alloc, free,
 * memset0, copy, to_device, to_host, synchronize) and the fp32-only operations (scale, adamw,
 * sumsq, convert, unscale_check) are inner's; the others convert as the comment at the top of
 * this file says, in fp32 work space the wrapper allocates from inner and keeps (its high-water
 * mark: ptdp_backend_mixed_work_bytes).  t == PTDP_F32 returns inner itself.  On error inner
 * is destroyed too and *out is NULL. */
int ptdp_backend_mixed_create(ptdp_backend *inner, ptdp_dtype t, ptdp_backend **out);
/* Bytes of fp32 work space a mixed-precision wrapper holds now (0 for any other backend). */
size_t ptdp_backend_mixed_work_bytes(const ptdp_backend *be);
/* "fp32", "bf16", "fp16". */
const char *ptdp_dtype_name(ptdp_dtype t);

/* be->destroy, then the table; sets *be to NULL. */
void ptdp_backend_destroy(ptdp_backend **be);

#endif
