/* ptdp's CPU backend as ptdp-sim models it (--fusion cpu): the operators src/model/layer.c and
 * head.c run through src/backend/cpu.c and cpu_attention.c for one micro-batch on one rank, in
 * layer.c's op lists.  Symbols as in layer.c: N = b s, Nl = N / t under sequence parallelism,
 * hl = h / t, fl = f / t, al = a / t, hd = h / a; fp32 throughout.
 *
 * Where a CPU differs from the GPU model of layer.c (ptdp(7), PTDP-SIM ON THE CPU):
 *  - a GEMM takes F / R, R the rate the hardware file measured for the model's linear layers
 *    through ptdp's own kernels: one layer's operands (a few MB per rank) stay in cache, so
 *    there is no DRAM roofline;
 *  - every other operator costs its elements times the time per element the hardware file
 *    measured for that operator of the backend (cpu-*-ns keys): on a CPU they are bound by
 *    arithmetic (the exponentials of GeLU, softmax and cross entropy; the dropout mask's hash)
 *    or by strided cache access (column sums), not by DRAM bandwidth;
 *  - the attention core is one kernel per (sample, head): QK^T, causal softmax, dropout, PV,
 *    no transposes; its products are blocked by 128 queries and skip the keys after the block;
 *  - collectives are blocking MPI calls over shared memory: nothing hides behind compute;
 *  - ranks beyond the cores share them (ptdp_sim_core_bound, after the replay). */
#include "ptdp/sim_cost.h"

#include "ptdp/error.h"

#include <string.h>

/* cpu_attention.c's ATTN_BLOCK: queries [q0, q0 + 128) meet keys [0, q0 + 128) */
#define CPU_ATTN_BLOCK 128.0

typedef struct {
  const ptdp_sim_hw *hw;
  double R;                                /* sgemm rate (FLOP/s) */
  ptdp_sim_dims d; /* this rank's sizes */
  int hdrop, adrop;
  double tp_bw, tp_alpha, ag_bw, rs_bw; /* all-reduce, all-gather, reduce-scatter bus bandwidths */
} cctx;

int ptdp_sim_hw_is_cpu(const ptdp_sim_hw *hw)
{
  for (int i = 0; i < PTDP_SIM_CPU_OPS; i++)
    if (hw->cpu_op[i] > 0) return 1;
  return 0;
}

static int cctx_init(cctx *c, const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o)
{
  PTDP_CHECK(ptdp_sim_hw_is_cpu(hw),
             "--fusion cpu: the hardware file %s gives no cpu-*-ns keys (jobs/measure_cpu_hw.sh writes them)",
             hw->name);
  PTDP_CHECK(!(a->fp16 || a->bf16), "--fusion cpu models ptdp's CPU backend, which trains in fp32: drop fp16/bf16");
  memset(c, 0, sizeof *c);
  c->hw = hw;
  c->d = ptdp_sim_dims_of(a);
  c->R = hw->peak_flops_32 * hw->gemm_efficiency * o->software_efficiency;
  c->hdrop = a->hidden_dropout > 0;
  c->adrop = a->attention_dropout > 0;
  const int inside = c->d.t <= hw->gpus_per_node;
  c->tp_bw = inside ? hw->intra_bandwidth : hw->inter_bandwidth;
  c->tp_alpha = inside ? hw->intra_latency : hw->inter_latency;
  c->ag_bw = inside && hw->intra_allgather_bandwidth > 0 ? hw->intra_allgather_bandwidth : c->tp_bw;
  c->rs_bw = inside && hw->intra_reduce_scatter_bandwidth > 0 ? hw->intra_reduce_scatter_bandwidth : c->tp_bw;
  return 0;
}

/* A rank that waits for a message sleeps (ptdp-train does when ranks x threads exceed the cores)
 * and gives its core away, so the replayed pipeline keeps its length until the cores are the
 * bottleneck: a node then needs at least the work of all its ranks over its cores, i.e. the
 * mean rank's work (its items, the optimizer, the reductions) x ranks x threads / cores. */
double ptdp_sim_core_sharing(const ptdp_sim_hw *hw, int world)
{
  if (hw->cores_per_node <= 0) return 1;
  const double ranks = world < hw->gpus_per_node ? world : hw->gpus_per_node;
  const double x = ranks * (hw->threads_per_rank > 0 ? hw->threads_per_rank : 1) / hw->cores_per_node;
  return x > 1 ? x : 1;
}

/* AdamW reads and writes the parameter and both moments and reads the gradient, with a square
 * root and a division per element; the gradient norm reads the gradient once more.  On a CPU the
 * arithmetic, not the 32 bytes per parameter, sets the pace (validation/bench/README.md). */
double ptdp_sim_cpu_optimizer_time(const ptdp_sim_hw *hw, double np) { return np * hw->cpu_op[PTDP_SIM_CPU_OPTIMIZER]; }

/* Per (sample, head): QK^T and PV each 2 (q1 - q0) q1 hd over query blocks; backward dP and dQ
 * the same, dV and dK each 2 (k1 - k0)(s - k0) hd over key blocks. */
void ptdp_sim_cpu_attention_flops(double s, double hd, double *fwd, double *bwd)
{
  double f = 0, g = 0;
  for (double q0 = 0; q0 < s; q0 += CPU_ATTN_BLOCK) {
    const double q1 = q0 + CPU_ATTN_BLOCK < s ? q0 + CPU_ATTN_BLOCK : s;
    f += 2 * (q1 - q0) * q1 * hd;        /* one of the two products */
    g += 2 * (q1 - q0) * (s - q0) * hd;  /* one of dV, dK */
  }
  *fwd = 2 * f;
  *bwd = 2 * f + 2 * g;
}

static ptdp_sim_op *add(ptdp_sim_oplist *l, const char *name, ptdp_sim_component comp, double fwd, double bwd, int sel)
{
  static ptdp_sim_op spare; /* never read: the list is sized for every caller below */
  if (l->n >= PTDP_SIM_MAX_OPS) return &spare;
  l->op[l->n] = (ptdp_sim_op){.name = name, .comp = comp, .fwd = fwd, .bwd = bwd, .selective = sel};
  return &l->op[l->n++];
}

/* n elements through operator op; a GEMM C[M,N] = A[M,K] B[K,N] */
static double per(const cctx *c, ptdp_sim_cpu_op op, double n) { return n * c->hw->cpu_op[op]; }
static double gemm(const cctx *c, double M, double N, double K) { return 2 * M * N * K / c->R; }
static void linear(const cctx *c, ptdp_sim_oplist *l, const char *name, double M, double N, double K)
{
  add(l, name, PTDP_SIM_GEMM, gemm(c, M, N, K), gemm(c, M, K, N) + gemm(c, K, N, M), 0);
}

/* Collectives of S bytes over the t ranks, alpha-beta as ptdp_sim_allreduce_time and
 * ptdp_sim_allgather_time, each at the bus bandwidth the MPI library reaches for it (its
 * algorithms differ: on the machine of validation/bench/README.md its reduce-scatter is two
 * orders of magnitude slower than its all-gather) */
static double allreduce(const cctx *c, double bytes)
{
  return ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_RING, c->d.t, bytes, c->tp_bw, c->tp_alpha);
}
static double gather(const cctx *c, double bytes)
{
  return ptdp_sim_allgather_time(c->d.t, bytes, c->ag_bw, c->tp_alpha);
}
static double scatter(const cctx *c, double bytes)
{
  return ptdp_sim_allgather_time(c->d.t, bytes, c->rs_bw, c->tp_alpha);
}
/* ptdp_tp_reduce: SP a reduce-scatter; else an all-reduce and the copy of [N, h] out */
static double tp_reduce(const cctx *c)
{
  const double full = c->d.N * c->d.h * 4;
  return c->d.sp ? scatter(c, full) : allreduce(c, full) + per(c, PTDP_SIM_CPU_ELEMENTWISE, c->d.N * c->d.h);
}

/* The column-parallel input: forward SP all-gather; backward the input gradient's reduction and,
 * with SP, the input gathered again for the weight gradient */
static void column_input(const cctx *c, ptdp_sim_oplist *l, const char *name)
{
  const double full = c->d.N * c->d.h * 4;
  if (c->d.t > 1) add(l, name, PTDP_SIM_TP, c->d.sp ? gather(c, full) : 0, tp_reduce(c) + (c->d.sp ? gather(c, full) : 0), 0);
}

/* After a row-parallel GEMM: reduction, bias, dropout, residual add; backward: copy, mask,
 * bias gradient, and (SP) the all-gather of the output gradient */
static void row_output(const cctx *c, ptdp_sim_oplist *l, const char *coll, const char *bda)
{
  const double x = c->d.Nl * c->d.h, full = c->d.N * c->d.h * 4;
  if (c->d.t > 1) add(l, coll, PTDP_SIM_TP, tp_reduce(c), c->d.sp ? gather(c, full) : 0, 0);
  const double fwd = per(c, PTDP_SIM_CPU_ELEMENTWISE, 2 * x) + (c->hdrop ? per(c, PTDP_SIM_CPU_DROPOUT, x) : 0);
  const double bwd = per(c, PTDP_SIM_CPU_ELEMENTWISE, (c->hdrop ? 2 : 1) * x) + per(c, PTDP_SIM_CPU_BIAS_GRAD, x);
  add(l, bda, PTDP_SIM_MEMBOUND, fwd, bwd, 0);
}

/* LayerNorm over [Nl, h]; its backward adds the residual stream's gradient (one y += x) */
static void layernorm(const cctx *c, ptdp_sim_oplist *l, const char *name, int residual)
{
  const double x = c->d.Nl * c->d.h;
  add(l, name, PTDP_SIM_MEMBOUND, per(c, PTDP_SIM_CPU_LAYERNORM_FWD, x),
      per(c, PTDP_SIM_CPU_LAYERNORM_BWD, x) + (residual ? per(c, PTDP_SIM_CPU_ELEMENTWISE, x) : 0), 0);
}

/* The names this model gives the operations it prices together: a column-parallel GEMM with the
 * bias pass after it (priced whether or not the layer has a bias), the residual's bias, dropout
 * and add. */
static const char *cpu_name(const ptdp_layer_op *op)
{
  static const char *const names[][2] = {{"QKV GEMM", "QKV GEMM + bias"}, {"FC1 GEMM", "FC1 GEMM + bias"},
                                         {"bias-dropout-add 1", "bias, dropout, add 1"},
                                         {"bias-dropout-add 2", "bias, dropout, add 2"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(op->name, names[i][0])) return names[i][1];
  return op->name;
}

/* The layer's operations (ptdp_layer_describe) as ptdp's CPU backend runs them. */
static int cpu_layer(const cctx *c, const ptdp_layer_desc *d, ptdp_sim_oplist *l)
{
  l->n = 0;
  for (int i = 0; i < d->n; i++) {
    const ptdp_layer_op *op = &d->op[i];
    switch (op->kind) {
    case PTDP_LOP_NORM: layernorm(c, l, op->name, 1); break; /* RMSNorm at LayerNorm's measured cost */
    case PTDP_LOP_TP_IN: column_input(c, l, op->name); break;
    case PTDP_LOP_GEMM:
      if (op->row_parallel) {
        add(l, op->name, PTDP_SIM_GEMM, op->batch * gemm(c, op->M, op->N, op->K),
            op->batch * (gemm(c, op->M, op->K, op->N) + gemm(c, op->K, op->N, op->M)), 0);
      } else { /* with its bias add; backward with the bias gradient over [M, N] */
        const double n = op->M * op->N;
        add(l, cpu_name(op), PTDP_SIM_GEMM, op->batch * gemm(c, op->M, op->N, op->K) + per(c, PTDP_SIM_CPU_ELEMENTWISE, n),
            op->batch * (gemm(c, op->M, op->K, op->N) + gemm(c, op->K, op->N, op->M)) + per(c, PTDP_SIM_CPU_BIAS_GRAD, n),
            0);
      }
      break;
    case PTDP_LOP_BIAS: break; /* in its GEMM's entry */
    case PTDP_LOP_ROPE: break; /* not in this model: the hardware file measures no rotary kernel */
    case PTDP_LOP_ATTENTION: {
      /* one kernel per (sample, head): QK^T, causal softmax, dropout, PV */
      const double pairs = op->batch, s = op->M;
      const double S2 = pairs * s * s, causal = pairs * s * (s + 1) / 2; /* scores; those with key <= query */
      double ff, fb;
      ptdp_sim_cpu_attention_flops(s, op->K, &ff, &fb);
      add(l, "attention GEMMs (QK^T, PV)", PTDP_SIM_ATTENTION, pairs * ff / c->R, pairs * fb / c->R, 1);
      add(l, "causal softmax", PTDP_SIM_ATTENTION, per(c, PTDP_SIM_CPU_SOFTMAX_FWD, S2),
          per(c, PTDP_SIM_CPU_SOFTMAX_BWD, S2), 1);
      /* the mask is drawn for keys <= query only; backward applies it */
      if (c->adrop)
        add(l, "attention dropout", PTDP_SIM_ATTENTION, per(c, PTDP_SIM_CPU_DROPOUT, causal),
            per(c, PTDP_SIM_CPU_ELEMENTWISE, causal), 1);
      break;
    }
    /* SwiGLU: one exponential per output element as GELU, timed with GELU's measured costs */
    case PTDP_LOP_ACTIVATION: {
      const double act = op->M * op->N;
      add(l, op->name, PTDP_SIM_MEMBOUND, per(c, PTDP_SIM_CPU_GELU_FWD, act), per(c, PTDP_SIM_CPU_GELU_BWD, act), 0);
      break;
    }
    case PTDP_LOP_TP_OUT:
      PTDP_CHECK(i + 1 < d->n && d->op[i + 1].kind == PTDP_LOP_RESIDUAL,
                 "the layer's description has no residual after %s", op->name);
      row_output(c, l, op->name, cpu_name(&d->op[i + 1]));
      break;
    case PTDP_LOP_RESIDUAL: break; /* with its TP_OUT */
    /* the mixture's routing and permutations: element-wise passes over their rows */
    case PTDP_LOP_ROUTE:
    case PTDP_LOP_PERMUTE:
      add(l, op->name, PTDP_SIM_MEMBOUND, per(c, PTDP_SIM_CPU_ELEMENTWISE, op->M * op->N),
          per(c, PTDP_SIM_CPU_ELEMENTWISE, op->M * op->N), 0);
      break;
    default: PTDP_CHECK(0, "ptdp-sim's CPU model has no cost for the layer's operation %s", op->name);
    }
  }
  return 0;
}

int ptdp_sim_cpu_layer_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                           ptdp_sim_oplist *l)
{
  cctx c;
  PTDP_CALL(cctx_init(&c, a, hw, o));
  ptdp_layer_desc d;
  ptdp_sim_layer_desc(a, o, &d);
  return cpu_layer(&c, &d, l);
}

/* Word lookup [N, h] (rows of this rank's vocabulary slice), its reduction over TP, position
 * lookup and add, dropout; backward: mask, position and word scatter-adds (SP: the gradient
 * all-gathered first) */
int ptdp_sim_cpu_embedding_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                               ptdp_sim_oplist *l)
{
  cctx c;
  PTDP_CALL(cctx_init(&c, a, hw, o));
  l->n = 0;
  const double x = c.d.Nl * c.d.h, full = c.d.N * c.d.h;
  add(l, "word lookup + position add", PTDP_SIM_MEMBOUND, per(&c, PTDP_SIM_CPU_ELEMENTWISE, full + 2 * x),
      per(&c, PTDP_SIM_CPU_ELEMENTWISE, full + x), 0);
  if (c.d.t > 1)
    add(l, c.d.sp ? "TP reduce-scatter (embedding)" : "TP all-reduce (embedding)", PTDP_SIM_TP, tp_reduce(&c),
        c.d.sp ? gather(&c, full * 4) : 0, 0);
  if (c.hdrop)
    add(l, "embedding dropout", PTDP_SIM_MEMBOUND, per(&c, PTDP_SIM_CPU_DROPOUT, x),
        per(&c, PTDP_SIM_CPU_ELEMENTWISE, x), 0);
  return 0;
}

/* Final LayerNorm, (SP: all-gather), logits [N, h] x [h, vl], the cross entropy's passes (all in
 * the forward: the gradient is written in place of the logits), its two small all-reduces (max;
 * sum-exp with the target logit); backward the logits' GEMMs and the reduction of dG */
int ptdp_sim_cpu_head_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                          ptdp_sim_oplist *l)
{
  cctx c;
  PTDP_CALL(cctx_init(&c, a, hw, o));
  l->n = 0;
  layernorm(&c, l, "final layernorm", 0);
  column_input(&c, l, "TP f (logits input)");
  linear(&c, l, "logits GEMM", c.d.N, c.d.vl, c.d.h);
  const double z = c.d.N * c.d.vl;
  add(l, "cross entropy", PTDP_SIM_MEMBOUND, per(&c, PTDP_SIM_CPU_XENT_FWD, z) + per(&c, PTDP_SIM_CPU_XENT_GRAD, z), 0,
      0);
  if (c.d.t > 1)
    add(l, "TP all-reduces (cross entropy)", PTDP_SIM_TP, allreduce(&c, c.d.N * 4) + allreduce(&c, 2 * c.d.N * 4), 0, 0);
  return 0;
}
