/* The layer's one description (ptdp/layer_desc.h) and its readers:
 *   - for GPT and Llama layers over t in {1, 2, 4}, sequence parallelism, dropout, both attention
 *     cores and every recomputation: each tensor the memory plan keeps for a layer is saved by
 *     exactly one operation, and the description's saved bytes are the plan's held bytes of that
 *     layer (ptdp_plan_held_layer), so the memory formula and the plan count the same tensors;
 *   - the GEMMs and attention core at t = 1 are the model-FLOPs formula written out by hand
 *     (h (a + 2g) hd + 2 s a hd + a hd h + 2 or 3 h f per token);
 *   - the collectives move 8 b s h (t-1)/t elements per layer, 10 with sequence parallelism, 4
 *     more when full recomputation runs the forward again (ptdp(7), COMMUNICATION VOLUME);
 *   - the same for a mixture-of-experts layer (8 experts, top 2, of width 512, every layer): its
 *     router GEMM and the active experts' GEMMs (k of E per token), its kept tensors, and the
 *     probabilities' gradient all-reduced in the backward (2 N k elements more);
 *   - one more GEMM in a description, and nothing else edited, changes the model FLOPs, ptdp-sim's
 *     layer time and the saved bytes by exactly what that GEMM costs: the readers take the
 *     description, they do not restate the layer. */
#include "ptdp/error.h"
#include "ptdp/flops.h"
#include "ptdp/layer_desc.h"
#include "ptdp/memory_formula.h"
#include "ptdp/plan.h"
#include "ptdp/sim.h"

#include "../expect.h"
#include "sim_test.h"

#include <stdlib.h>
#include <string.h>

static ptdp_model_shape model_of(int llama)
{
  ptdp_model_shape m = {.num_layers = 4, .hidden = 256, .heads = 8, .ffn = 1024, .max_pos = 128, .vocab = 1000,
                        .vocab_divisible_by = 128};
  if (llama)
    m.arch = (ptdp_arch){.norm = PTDP_NORM_RMSNORM, .no_linear_bias = 1, .untie = 1, .position = PTDP_POS_ROPE,
                         .query_groups = 4, .swiglu = 1};
  return m;
}

/* The same, with every MLP a mixture of 8 experts of width 512, top 2 (moe 1). */
static int with_moe;
static ptdp_model_shape model(int llama)
{
  ptdp_model_shape m = model_of(llama);
  if (with_moe) {
    m.arch.moe = (ptdp_moe){.num_experts = 8, .topk = 2, .ffn = 512};
    for (int i = 0; i < m.num_layers; i++) m.arch.moe.layer[i] = 1;
  }
  return m;
}

/* The plan of stage 0's first layer against the description, for one setting. */
static void check_saved(int llama, int t, int sp, int drop, int flash, ptdp_recompute rc, int bytes)
{
  ptdp_model_shape m = model(llama);
  m.sequence_parallel = sp && t > 1;
  const ptdp_plan_config pc = {.shape = m, .pos = {.t = t, .tp_rank = 0, .p = 1, .stage = 0, .v = 1}, .seq = 128,
                               .micro_batch = 2, .hidden_dropout = drop, .attention_dropout = drop, .recompute = rc,
                               .recompute_method = PTDP_RECOMPUTE_UNIFORM, .recompute_num_layers = 1,
                               .schedule = PTDP_SCHED_1F1B, .m = 2, .bucket_elems = 1 << 20, .d = 1,
                               .dtype = bytes == 2 ? PTDP_BF16 : PTDP_F32, .flash_attention = flash};
  ptdp_plan pl;
  EXPECT(ptdp_plan_build(&pc, &pl) == 0, "plan");
  const ptdp_layer_shape ls = {.r = ptdp_rank_shape_of(&m, 128, 2, t, 0), .hidden_dropout = drop,
                               .attention_dropout = drop, .recompute = rc, .bytes = bytes, .arch = m.arch,
                               .flash_attention = flash, .moe = with_moe};
  ptdp_layer_desc d;
  ptdp_layer_describe(&ls, &d);
  /* every entry of the plan's table the layer keeps is saved by one operation, and only those */
  for (int k = 0; k < PTDP_BUF_LAYER_KINDS; k++) {
    ptdp_lop_save s;
    const int kept = ptdp_layer_activation(&ls, (ptdp_buffer_kind)k, &s);
    int savers = 0;
    for (int i = 0; i < d.n; i++)
      for (int j = 0; j < d.op[i].nsave; j++) savers += d.op[i].save[j].kind == (ptdp_buffer_kind)k;
    EXPECT(savers == kept, "%s (llama %d t %d sp %d drop %d flash %d): saved by %d operations, kept %d",
           ptdp_buffer_kind_name((ptdp_buffer_kind)k), llama, t, sp, drop, flash, savers, kept);
  }
  /* full recomputation holds the input of the group's first layer only: the plan's layer 0 */
  const double plan = (double)ptdp_plan_held_layer(&pl, 0, 0), desc = ptdp_layer_desc_saved_bytes(&d);
  EXPECT(plan == desc && desc == ptdp_layer_bytes_ptdp(&ls),
         "llama %d t %d sp %d drop %d flash %d recompute %d bytes %d: plan %.0f, description %.0f, formula %.0f", llama,
         t, sp, drop, flash, (int)rc, bytes, plan, desc, ptdp_layer_bytes_ptdp(&ls));
  ptdp_plan_free(&pl);
}

static void check_counts(int llama, int t, int sp)
{
  ptdp_model_shape m = model(llama);
  m.sequence_parallel = sp;
  const ptdp_layer_shape ls = {.r = ptdp_rank_shape_of(&m, 128, 2, t, 0), .arch = m.arch, .moe = with_moe};
  ptdp_layer_desc d;
  ptdp_layer_describe(&ls, &d);
  const double N = (double)ls.r.N, h = m.hidden;
  if (t == 1) {
    const double a = m.heads, g = llama ? 4 : a, hd = h / a, f = m.ffn, s = 128;
    /* the mixture: the router h E, and k experts of width 512 per token */
    const double mlp = with_moe ? h * 8 + 2 * (llama ? 3 : 2) * h * 512 : (llama ? 3 : 2) * h * f;
    const double per_token = h * (a + 2 * g) * hd + 2 * s * a * hd + a * hd * h + mlp;
    EXPECT(ptdp_layer_desc_macs(&d) == N * per_token, "llama %d moe %d: multiply-adds %.0f, by hand %.0f", llama,
           with_moe, ptdp_layer_desc_macs(&d), N * per_token);
  }
  const double expect = t == 1 ? 0 : ls.r.sp ? 10 : 8, route = t > 1 && with_moe ? 2 * N * 2 : 0;
  EXPECT(ptdp_layer_desc_tp_elems(&d, 0) == expect * N * h + route,
         "llama %d moe %d t %d sp %d: TP elements %.0f, expected %.0f N h + %.0f", llama, with_moe, t, sp,
         ptdp_layer_desc_tp_elems(&d, 0), expect, route);
  EXPECT(ptdp_layer_desc_tp_elems(&d, 1) == (t == 1 ? 0 : expect + 4) * N * h + route, "forward again: 4 N h more");
}

static double sum(const ptdp_sim_oplist *l, int bwd)
{
  double s = 0;
  for (int i = 0; i < l->n; i++) s += bwd ? l->op[i].bwd : l->op[i].fwd;
  return s;
}

/* One hypothetical GEMM [N, h] x [h, X] added to the description, saving its output. */
static void check_extra_gemm(void)
{
  ptdp_args a;
  char line[] = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --vocab-size 50000 "
                "--micro-batch-size 2 --global-batch-size 16 --bf16 --tensor-model-parallel-size 2";
  EXPECT(sim_test_parses(&a, line) == 0, "parse");
  ptdp_sim_hw hw = sim_test_gpu();
  ptdp_sim_options so;
  ptdp_options sopt;
  ptdp_sim_options_init(&sopt, &so);
  ptdp_layer_desc d, d2;
  ptdp_sim_layer_desc(&a.model, &so, &d);
  d2 = d;
  const double rows = (double)d.shape.r.N, h = d.shape.r.h, X = 384, E = 2;
  const ptdp_layer_op extra = {.kind = PTDP_LOP_GEMM, .name = "extra GEMM", .M = rows, .N = X, .K = h, .batch = 1,
                               .weight = -1, .bias = -1, .nsave = 1,
                               .save = {{.kind = PTDP_BUF_KINDS, .elems = rows * X, .unit = PTDP_SAVE_STORE,
                                         .part = PTDP_SAVE_REST}}};
  EXPECT(ptdp_layer_desc_add(&d2, &extra) == 0, "room for one more operation");

  /* memory: its output, in the storage type */
  EXPECT(ptdp_layer_desc_saved_bytes(&d2) - ptdp_layer_desc_saved_bytes(&d) == E * rows * X, "saved bytes grow by E N X");

  /* FLOPs: 3 (forward, two backward GEMMs) x 2 x B s x L x X h per token, at t = 1 */
  const ptdp_model_shape m = ptdp_sim_model_shape(&a.model);
  const ptdp_layer_shape one = {.r = ptdp_rank_shape_of(&m, 512, 1, 1, 0), .arch = m.arch};
  ptdp_layer_desc t1, t1x;
  ptdp_layer_describe(&one, &t1);
  t1x = t1;
  ptdp_layer_op extra1 = extra;
  extra1.M = (double)one.r.N;
  ptdp_layer_desc_add(&t1x, &extra1);
  const double B = 16, S = 512, L = 4, V = 50176;
  EXPECT(ptdp_model_flops_of(16, 512, &m, 50176, &t1) == ptdp_model_flops(16, 512, &m, 50176),
         "ptdp_model_flops reads the description");
  EXPECT(near(ptdp_model_flops_of(16, 512, &m, 50176, &t1x) - ptdp_model_flops_of(16, 512, &m, 50176, &t1),
              6 * B * S * L * X * h, 1e-12),
         "model FLOPs grow by 6 B s L X h");
  (void)V;

  /* ptdp-sim: one more operator, a GEMM priced by the GEMM model; nothing else moves */
  ptdp_sim_oplist l1, l2;
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l1) == 0 && ptdp_sim_layer_ops_of(&a.model, &hw, &so, &d, &l2) == 0 &&
             l1.n == l2.n && sum(&l1, 0) == sum(&l2, 0),
         "ptdp_sim_layer_ops reads the description");
  EXPECT(ptdp_sim_layer_ops_of(&a.model, &hw, &so, &d2, &l2) == 0, "priced");
  const ptdp_sim_op *g = find_op(&l2, "extra GEMM");
  const double R = hw.peak_flops_16 * so.software_efficiency;
  const double fwd = ptdp_sim_gemm_time(&hw, R, rows, X, h, 1, E);
  const double bwd = ptdp_sim_gemm_time(&hw, R, rows, h, X, 1, E) + ptdp_sim_gemm_time(&hw, R, h, X, rows, 1, E);
  EXPECT(l2.n == l1.n + 1 && g && g->comp == PTDP_SIM_GEMM && g->fwd == fwd && g->bwd == bwd,
         "the extra GEMM is one operator with the GEMM model's times");
  EXPECT(near(sum(&l2, 0) - sum(&l1, 0), fwd, 1e-12) && near(sum(&l2, 1) - sum(&l1, 1), bwd, 1e-12),
         "the layer's forward and backward grow by exactly the GEMM's times");
  ptdp_options_free(&sopt);
}

int main(void)
{
  for (with_moe = 0; with_moe <= 1; with_moe++)
  for (int llama = 0; llama <= 1; llama++)
    for (int t = 1; t <= 4; t *= 2)
      for (int sp = 0; sp <= 1; sp++) {
        check_counts(llama, t, sp);
        for (int drop = 0; drop <= 1; drop++)
          for (int flash = 0; flash <= 1; flash++)
            for (int rc = 0; rc < 3; rc++)
              for (int bytes = 2; bytes <= 4; bytes += 2) check_saved(llama, t, sp, drop, flash, (ptdp_recompute)rc, bytes);
      }
  with_moe = 0;
  check_extra_gemm();
  return expect_summary("test_layer_desc");
}
