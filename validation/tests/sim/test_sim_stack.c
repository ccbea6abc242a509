/* ptdp-sim's modelled stacks against hand computations (1 rank, no MPI; the test device: 100
 * TFLOP/s 16-bit peak, 1 TB/s, 1 us a kernel; flash attention at 0.5 of peak forward, 0.4
 * backward):
 *   - the implementation key: each stack's defaults for the keys not given (async TP all-reduce,
 *     software-efficiency over the file's gemm-efficiency-stack), a key given kept; auto is
 *     megatron-core on a file measured with today's stack, no preset on a 2021-calibrated one;
 *   - flash attention: one kernel of 2 b al s^2 hd FLOPs forward (causal half of two GEMMs) and
 *     2.5 times that backward at the file's efficiencies; no s x s operator left; selective
 *     recomputation recomputes nothing; the plan's activations fall by the s x s tensors
 *     (fp32, no dropout: the softmax's 4 b a s^2 bytes per layer, less the 4 b a s of the lse);
 *     attention-backend auto is flash only for megatron-core; a file without the efficiencies
 *     is refused when flash is asked for;
 *   - Transformer Engine's epilogues: no QKV bias pass, bias-GeLU reduced to the pre-activation's
 *     write and read;
 *   - tp-comm-overlap: SP's forward reduce-scatter beside its GEMM shows max(x / t, x - G);
 *   - the Llama family's operators the trainer has: RMSNorm, RoPE, no biases, untied embeddings. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include "../expect.h"
#include "sim_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ptdp_sim_hw gpu(void) /* the test device (sim_test.h) with a fused attention's efficiencies */
{
  ptdp_sim_hw hw = sim_test_gpu();
  hw.flash_efficiency_fwd = 0.5;
  hw.flash_efficiency_bwd = 0.4;
  return hw;
}

static int parse(ptdp_args *a, const char *extra)
{
  char buf[1024];
  snprintf(buf, sizeof buf,
           "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --vocab-size 50000 "
           "--micro-batch-size 2 --global-batch-size 16 --bf16 --hidden-dropout 0 --attention-dropout 0 %s",
           extra);
  return sim_test_parses(a, buf);
}

/* ptdp-sim's own keys from text, resolved against hw. */
static int sim_keys(ptdp_sim_options *so, const ptdp_sim_hw *hw, const char *text)
{
  char buf[512];
  snprintf(buf, sizeof buf, "%s", text);
  char *argv[32];
  int argc = 0;
  for (char *tok = strtok(buf, " "); tok && argc < 32; tok = strtok(NULL, " ")) argv[argc++] = tok;
  ptdp_options opt;
  int err = ptdp_sim_options_init(&opt, so);
  if (!err) err = ptdp_options_parse_args(&opt, argc, argv);
  if (!err) err = ptdp_sim_options_resolve(&opt, so, hw);
  ptdp_options_free(&opt);
  return err;
}

static void check_implementation(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  EXPECT(sim_keys(&so, &hw, "--implementation megatron-2021") == 0 && !so.async_tp_allreduce &&
             so.software_efficiency == 1 && !so.te_fused,
         "megatron-2021: no async TP all-reduce, the file's GEMM rate");
  EXPECT(sim_keys(&so, &hw, "--implementation megatron-2022") == 0 && so.async_tp_allreduce &&
             near(so.software_efficiency, 1.055, 1e-12),
         "megatron-2022 on a 2021-calibrated file: 1.055");
  EXPECT(sim_keys(&so, &hw, "--implementation megatron-2022 --software-efficiency 1.2 --async-tp-allreduce false") ==
                 0 &&
             !so.async_tp_allreduce && near(so.software_efficiency, 1.2, 1e-12),
         "keys given win over the stack's");
  EXPECT(sim_keys(&so, &hw, "") == 0 && so.implementation == PTDP_SIM_IMPL_KEYS,
         "auto on a 2021-calibrated file: no preset");
  hw.gemm_stack = PTDP_SIM_IMPL_CORE; /* a file measured with today's cuBLAS */
  EXPECT(sim_keys(&so, &hw, "") == 0 && so.implementation == PTDP_SIM_IMPL_CORE && so.te_fused,
         "auto on a file measured with today's stack: megatron-core");
  EXPECT(sim_keys(&so, &hw, "--implementation megatron-core") == 0 && so.te_fused &&
             near(so.software_efficiency, 1, 1e-12),
         "megatron-core on a file measured with its own GEMMs: 1");
  EXPECT(sim_keys(&so, &hw, "--implementation megatron-2021") == 0 && near(so.software_efficiency, 1 / 1.055, 1e-12),
         "megatron-2021 on that file: 1 / 1.055");
  EXPECT(sim_keys(&so, &hw, "--implementation keys") == 0 && so.implementation == PTDP_SIM_IMPL_KEYS &&
             so.async_tp_allreduce && so.software_efficiency == 1 && !so.te_fused,
         "implementation keys: the keys' defaults as before, whatever the file");
  ptdp_args a;
  EXPECT(parse(&a, "") == 0 && a.attention_backend == PTDP_ATTN_AUTO, "attention-backend auto by default");
  EXPECT(!ptdp_sim_flash(&a.model, &so), "auto without megatron-core: unfused");
  so.implementation = PTDP_SIM_IMPL_CORE;
  EXPECT(ptdp_sim_flash(&a.model, &so), "auto with megatron-core: flash");
  EXPECT(parse(&a, "--attention-backend unfused") == 0 && !ptdp_sim_flash(&a.model, &so), "unfused asked for");
}

static void check_flash(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_args a;
  ptdp_sim_oplist l;
  EXPECT(sim_keys(&so, &hw, "") == 0, "keys");
  EXPECT(parse(&a, "--attention-backend flash") == 0, "parse flash");
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0, "layer ops flash");
  /* b 2, al 16, s 512, hd 64: F = 2 x 2 x 16 x 512^2 x 64 = 1.0737e9 FLOPs forward */
  const double F = 2.0 * 2 * 16 * 512 * 512 * 64;
  const ptdp_sim_op *fa = find_op(&l, "flash attention");
  EXPECT(fa && near(fa->fwd, F / 50e12 + 1e-6, 1e-12) && near(fa->bwd, 2.5 * F / 40e12 + 1e-6, 1e-12) && !fa->selective,
         "flash: F / (R 0.5) forward, 2.5 F / (R 0.4) backward, not recomputed");
  EXPECT(!find_op(&l, "softmax") && !find_op(&l, "QK^T") && !find_op(&l, "attention over V"), "no s x s operator left");
  /* selective recomputation recomputes nothing with flash */
  ptdp_sim_result *r = calloc(1, sizeof *r), *u = calloc(1, sizeof *u);
  EXPECT(parse(&a, "--attention-backend flash --recompute-granularity selective") == 0, "parse");
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, r) == 0 && r->recompute == 0, "selective with flash: nothing recomputed (%g s)",
         r->recompute);
  /* memory: fp32, fusion none (the plan as ptdp-train builds it), p 1, no dropout: each layer's
   * held s x s tensor is the softmax output, 4 b a s^2 bytes, replaced by the lse's 4 b a s */
  so.fusion = PTDP_SIM_FUSION_NONE;
  EXPECT(parse(&a, "--bf16 false --attention-backend flash") == 0 && ptdp_sim_run(&a.model, &hw, &so, r) == 0,
         "run flash fp32");
  EXPECT(parse(&a, "--bf16 false --attention-backend unfused") == 0 && ptdp_sim_run(&a.model, &hw, &so, u) == 0,
         "run unfused");
  const double drop = 4 * (4.0 * 2 * 16 * 512 * 512 - 4.0 * 2 * 16 * 512);
  EXPECT(near(u->plan_peak_activations - r->plan_peak_activations, drop, 1e-12),
         "flash holds %g fewer bytes, by hand 4 layers x (4 b a s^2 - 4 b a s) = %g",
         u->plan_peak_activations - r->plan_peak_activations, drop);
  /* a file without the kernel's efficiencies cannot model it */
  hw.flash_efficiency_fwd = 0;
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, u) == 0, "unfused needs no flash efficiency");
  EXPECT(parse(&a, "--attention-backend flash") == 0 && ptdp_sim_run(&a.model, &hw, &so, r) != 0 &&
             strstr(ptdp_error_message(), "flash-attention-efficiency"),
         "flash without the file's efficiency: refused");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
  free(r);
  free(u);
}

static void check_te_and_ub(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_args a;
  ptdp_sim_oplist l;
  EXPECT(sim_keys(&so, &hw, "--implementation megatron-core") == 0, "keys core");
  EXPECT(parse(&a, "--attention-backend flash --tensor-model-parallel-size 2 --sequence-parallel") == 0,
         "parse t 2 sp");
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0, "layer ops core");
  EXPECT(!find_op(&l, "QKV bias") && !find_op(&l, "bias-GeLU") && !find_op(&l, "context transpose"),
         "TE: bias, GeLU in the epilogues, no transpose");
  /* the pre-activation [N, f/t] = [1024, 2048] in 2 B written and read once: 4.19 MB / 1 TB/s + 1 us */
  const ptdp_sim_op *ge = find_op(&l, "GeLU epilogue (pre-activation)");
  EXPECT(ge && near(ge->fwd, 1024.0 * 2048 * 2 / 1e12 + 1e-6, 1e-12) && near(ge->bwd, ge->fwd, 1e-12),
         "GeLU epilogue: one write, one read");
  const ptdp_sim_op *rs0 = find_op(&l, "TP reduce-scatter (MLP)");
  const double rs_plain = rs0 ? rs0->fwd : -1;
  /* tp-comm-overlap: the MLP's reduce-scatter of [N, h] = 2 MB beside FC2's forward GEMM
   * [1024, 1024] x [1024, 2048]... ([N, f/t] x [f/t, h]) */
  so.tp_comm_overlap = 1;
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0, "layer ops tp-comm-overlap");
  const ptdp_sim_op *rs = find_op(&l, "TP reduce-scatter (MLP)");
  const double G = ptdp_sim_gemm_time(&hw, hw.peak_flops_16 * so.software_efficiency, 1024, 1024, 2048, 1, 2);
  EXPECT(rs && near(rs->fwd, fmax(rs_plain / 2, rs_plain - G), 1e-12) && rs->hidden > 0,
         "overlapped reduce-scatter shows max(x / t, x - G) = %g of %g (G %g)", rs ? rs->fwd : -1, rs_plain, G);
  EXPECT(parse(&a, "--attention-backend flash --tensor-model-parallel-size 2") == 0 &&
             ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0 && find_op(&l, "TP all-reduce (MLP)")->hidden == 0,
         "tp-comm-overlap without sequence parallelism: nothing overlapped (Megatron needs SP)");
}

/* The Llama family's operators the trainer has (RMSNorm, RoPE, no biases, untied embeddings):
 * no QKV bias pass, RoPE reads and writes q and k ([N, 2 h/t] in 2 B) each way, GeLU without its
 * bias reads x and writes y (backward reads x and dy, writes dx), bias-dropout-add's backward
 * without the bias gradient's read (5 x + mask), the word lookup without a position table, and
 * no tied-embedding all-reduce between the first and last stage; SwiGLU's wider FC1 and its
 * activation's passes. */
static void check_llama(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_args a;
  ptdp_sim_oplist l, e;
  EXPECT(sim_keys(&so, &hw, "") == 0, "keys");
  EXPECT(parse(&a, "--normalization RMSNorm --position-embedding-type rope --disable-bias-linear "
                   "--untie-embeddings-and-output-weights --tensor-model-parallel-size 2") == 0,
         "parse Llama-like");
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0 && ptdp_sim_embedding_ops(&a.model, &hw, &so, &e) == 0, "ops");
  const double N = 1024, hl = 512, x = N * 1024 * 2, act = N * 2048 * 2;
  const ptdp_sim_op *rope = find_op(&l, "RoPE"), *gelu = find_op(&l, "GeLU"), *bda = find_op(&l, "bias-dropout-add 1");
  EXPECT(!find_op(&l, "QKV bias") && !find_op(&l, "bias-GeLU") && find_op(&l, "rmsnorm 1"), "no bias passes, RMSNorm");
  EXPECT(rope && near(rope->fwd, 4 * N * hl * 2 / 1e12 + 1e-6, 1e-12) && near(rope->bwd, rope->fwd, 1e-12),
         "RoPE: q and k read and written");
  EXPECT(gelu && near(gelu->fwd, 2 * act / 1e12 + 1e-6, 1e-12) && near(gelu->bwd, 3 * act / 1e12 + 1e-6, 1e-12),
         "GeLU without bias: 2 and 3 passes");
  EXPECT(bda && near(bda->bwd, 5 * x / 1e12 + 1e-6, 1e-12), "dropout-add backward: no bias gradient (no dropout)");
  EXPECT(find_op(&e, "word lookup") && !find_op(&e, "word lookup + position add"), "no position table");
  /* grouped-query attention, 16 heads in 4 groups on t 2: QKV [N, (8 + 2 x 2) 64] = [N, 768] instead
   * of [N, 1536]; RoPE turns the 8 query heads and 2 key heads (640 columns) */
  EXPECT(parse(&a, "--position-embedding-type rope --group-query-attention --num-query-groups 4 "
                   "--tensor-model-parallel-size 2") == 0 && ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0,
         "parse and time GQA");
  const ptdp_sim_op *qkv = find_op(&l, "QKV GEMM"), *rope_g = find_op(&l, "RoPE");
  const double R = hw.peak_flops_16 * so.software_efficiency;
  EXPECT(qkv && near(qkv->fwd, ptdp_sim_gemm_time(&hw, R, N, 768, 1024, 1, 2), 1e-12),
         "GQA: the QKV GEMM is [N, 1024] x [1024, 768] (%g s)", qkv ? qkv->fwd : -1.0);
  EXPECT(rope_g && near(rope_g->fwd, 2 * N * 640 * 2 / 1e12 + 1e-6, 1e-12), "GQA: RoPE turns 640 columns a row");
  /* SwiGLU, f 4096 on t 2 (fl 2048): FC1 is [N, 1024] x [1024, 2 fl = 4096], [gate | up]; the
   * activation reads both halves and writes fl (3 act), its backward reads both and dy and writes
   * both gradients (5 act); FC2 stays [N, 2048] x [2048, 1024] */
  EXPECT(parse(&a, "--swiglu --ffn-hidden-size 4096 --disable-bias-linear --tensor-model-parallel-size 2") == 0 &&
             ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0,
         "parse and time SwiGLU");
  const ptdp_sim_op *fc1 = find_op(&l, "FC1 GEMM"), *fc2 = find_op(&l, "FC2 GEMM"), *glu = find_op(&l, "SwiGLU");
  EXPECT(fc1 && near(fc1->fwd, ptdp_sim_gemm_time(&hw, R, N, 4096, 1024, 1, 2), 1e-12),
         "SwiGLU: FC1 is [N, 1024] x [1024, 4096] (%g s)", fc1 ? fc1->fwd : -1.0);
  EXPECT(fc2 && near(fc2->fwd, ptdp_sim_gemm_time(&hw, R, N, 1024, 2048, 1, 2), 1e-12), "SwiGLU: FC2 as before");
  EXPECT(glu && !find_op(&l, "GeLU") && near(glu->fwd, 3 * act / 1e12 + 1e-6, 1e-12) &&
             near(glu->bwd, 5 * act / 1e12 + 1e-6, 1e-12),
         "SwiGLU: 3 passes forward, 5 backward");
  ptdp_sim_result *r = calloc(1, sizeof *r);
  so.world_size = 4;
  EXPECT(parse(&a, "--normalization RMSNorm --position-embedding-type rope --disable-bias-linear "
                   "--untie-embeddings-and-output-weights --pipeline-model-parallel-size 2") == 0 &&
             ptdp_sim_run(&a.model, &hw, &so, r) == 0 && r->comp[PTDP_SIM_EMBEDDING_AR] == 0,
         "untied: no embedding all-reduce between the stages");
  EXPECT(parse(&a, "--pipeline-model-parallel-size 2") == 0 && ptdp_sim_run(&a.model, &hw, &so, r) == 0 &&
             r->comp[PTDP_SIM_EMBEDDING_AR] > 0,
         "tied: the all-reduce is there");
  free(r);
}

int main(void)
{
  check_implementation();
  check_llama();
  check_flash();
  check_te_and_ub();
  printf("test_sim_stack: %d checks passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
