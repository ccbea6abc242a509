/* ptdp-sim's CPU model (--fusion cpu, src/sim/layer_cpu.c) against hand computations (1 rank, no
 * MPI).  The model: one layer of h 256, a 8, s 128, b 4 (N 512 rows, hd 32), V 512, dropout 0.1,
 * fp32, on a made-up CPU whose sgemm rate is R = 100 GFLOP/s and whose operators cost the round
 * numbers of cpu_hw() per element:
 *   - a GEMM is 2 M N K / R; each other operator its elements x its time per element;
 *   - the attention core's GEMM FLOPs as the backend blocks them (128 queries a block, causal);
 *   - the attention dropout draws only the b a s (s+1) / 2 scores with key <= query;
 *   - the optimizer: parameters x cpu-optimizer-ns;
 *   - collectives: alpha-beta at the bus bandwidth of each (all-reduce, all-gather, reduce-scatter);
 *   - ranks beyond the cores: the iteration is at least the mean rank's work x ranks / cores;
 *   - the hardware file's keys; --fusion cpu with a file that has none fails. */
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include "../expect.h"
#include "sim_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ptdp_sim_hw cpu_hw(void)
{
  ptdp_sim_hw hw;
  memset(&hw, 0, sizeof hw);
  snprintf(hw.name, sizeof hw.name, "test cpu");
  hw.peak_flops_32 = 100e9;
  hw.gemm_efficiency = 1;
  hw.sm_count = hw.tile_m = hw.tile_n = 1;
  hw.memory_bandwidth = 20e9;
  hw.memory_bytes = 25e9;
  hw.gpus_per_node = 1024;
  hw.intra_bandwidth = hw.inter_bandwidth = 5e9;
  hw.intra_latency = hw.inter_latency = 1e-6;
  hw.nics_per_node = 1;
  const double ns[PTDP_SIM_CPU_OPS] = {[PTDP_SIM_CPU_ELEMENTWISE] = 0.1, [PTDP_SIM_CPU_DROPOUT] = 4,
                                       [PTDP_SIM_CPU_LAYERNORM_FWD] = 1,  [PTDP_SIM_CPU_LAYERNORM_BWD] = 3,
                                       [PTDP_SIM_CPU_GELU_FWD] = 0.5,     [PTDP_SIM_CPU_GELU_BWD] = 0.6,
                                       [PTDP_SIM_CPU_BIAS_GRAD] = 1.5,    [PTDP_SIM_CPU_SOFTMAX_FWD] = 1,
                                       [PTDP_SIM_CPU_SOFTMAX_BWD] = 0.5,  [PTDP_SIM_CPU_XENT_FWD] = 0.3,
                                       [PTDP_SIM_CPU_XENT_GRAD] = 0.25,   [PTDP_SIM_CPU_OPTIMIZER] = 4};
  for (int i = 0; i < PTDP_SIM_CPU_OPS; i++) hw.cpu_op[i] = ns[i] * 1e-9;
  hw.cores_per_node = 2;
  hw.threads_per_rank = 1;
  return hw;
}

static int parse(ptdp_args *a, const char *extra)
{
  char buf[1024];
  snprintf(buf, sizeof buf,
           "--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --max-position-embeddings 128 "
           "--vocab-size 512 --micro-batch-size 4 --global-batch-size 16 --hidden-dropout 0.1 "
           "--attention-dropout 0.1 %s",
           extra);
  return sim_test_parses(a, buf);
}

static const ptdp_sim_op *find(const ptdp_sim_oplist *l, const char *name)
{
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->op[i].name, name)) return &l->op[i];
  return NULL;
}

static void check_terms(void)
{
  double f, b;
  /* s 128: one block, QK^T and PV each 2 x 128 x 128 x 32 = 1048576; backward four such */
  ptdp_sim_cpu_attention_flops(128, 32, &f, &b);
  EXPECT(f == 2 * 1048576.0 && b == 4 * 1048576.0, "attention FLOPs s 128: %g %g", f, b);
  /* s 256: blocks [0,128) meet 128 keys, [128,256) 256: one product 2 x 32 x 128 x (128 + 256);
   * dV (and dK): keys [0,128) meet 256 queries, [128,256) 128: the same sum */
  ptdp_sim_cpu_attention_flops(256, 32, &f, &b);
  EXPECT(f == 2 * 3145728.0 && b == 4 * 3145728.0, "attention FLOPs s 256 (causal blocks): %g %g", f, b);

  ptdp_sim_hw hw = cpu_hw();
  EXPECT(ptdp_sim_core_sharing(&hw, 4) == 2 && ptdp_sim_core_sharing(&hw, 2) == 1 && ptdp_sim_core_sharing(&hw, 1) == 1,
         "4 ranks on 2 cores share them 2 ways; 2 or 1 do not");
  hw.threads_per_rank = 2;
  EXPECT(ptdp_sim_core_sharing(&hw, 2) == 2, "2 ranks x 2 threads on 2 cores");
  hw.cores_per_node = 0;
  EXPECT(ptdp_sim_core_sharing(&hw, 64) == 1, "no cores-per-node (a GPU file): no sharing");
  hw = cpu_hw();
  EXPECT(near(ptdp_sim_cpu_optimizer_time(&hw, 1e6), 4e-3, 1e-12), "optimizer: 1e6 parameters x 4 ns");

  /* the bound: 4 ranks, 2 stages busy 1.0 and 0.6 s, optimizer 0.1 s: mean work 0.9 s, x 4 / 2 */
  ptdp_sim_result *r = calloc(1, sizeof *r);
  r->world = 4;
  r->p = 2;
  r->iteration = 1.2;
  r->comp[PTDP_SIM_OPTIMIZER] = 0.1;
  const double busy[2] = {1.0, 0.6};
  ptdp_sim_core_bound(&hw, busy, r);
  EXPECT(near(r->cores_bound, 1.8, 1e-12) && near(r->iteration, 1.8, 1e-12), "cores bound %g", r->cores_bound);
  r->world = 2;
  r->iteration = 1.2;
  ptdp_sim_core_bound(&hw, busy, r);
  EXPECT(r->cores_bound == 0 && r->iteration == 1.2, "2 ranks on 2 cores: no bound");
  free(r);
}

static void check_ops(void)
{
  ptdp_sim_hw hw = cpu_hw();
  ptdp_sim_options so;
  ptdp_options sopt;
  ptdp_args a;
  ptdp_sim_oplist l;
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  so.fusion = PTDP_SIM_FUSION_CPU;
  EXPECT(parse(&a, "") == 0, "parse");
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0, "layer ops");
  const double N = 512, h = 256, fl = 1024, scores = 4 * 8 * 128 * 128.0, causal = 4 * 8 * 128 * 129 / 2.0;
  const ptdp_sim_op *op = find(&l, "layernorm 1");
  EXPECT(op && near(op->fwd, N * h * 1e-9, 1e-12) && near(op->bwd, N * h * 3.1e-9, 1e-12),
         "LayerNorm: N h x 1 ns; backward N h x (3 + 0.1 for the residual add)");
  op = find(&l, "QKV GEMM + bias");
  EXPECT(op && near(op->fwd, 2 * N * 3 * h * h / 100e9 + N * 3 * h * 0.1e-9, 1e-12) &&
           near(op->bwd, 2 * (2 * N * 3 * h * h / 100e9) + N * 3 * h * 1.5e-9, 1e-12),
         "QKV: 2 N 3h h / R + bias add; backward two GEMMs + bias gradient");
  op = find(&l, "attention GEMMs (QK^T, PV)");
  EXPECT(op && near(op->fwd, 32 * 2097152.0 / 100e9, 1e-12) && op->selective, "attention GEMMs: b a pairs x FLOPs / R");
  op = find(&l, "causal softmax");
  EXPECT(op && near(op->fwd, scores * 1e-9, 1e-12) && near(op->bwd, scores * 0.5e-9, 1e-12), "softmax per score");
  op = find(&l, "attention dropout");
  EXPECT(op && near(op->fwd, causal * 4e-9, 1e-12) && near(op->bwd, causal * 0.1e-9, 1e-12),
         "attention dropout: the b a s (s+1)/2 causal scores drawn");
  op = find(&l, "GeLU");
  EXPECT(op && near(op->fwd, N * fl * 0.5e-9, 1e-12) && near(op->bwd, N * fl * 0.6e-9, 1e-12), "GeLU per element");
  op = find(&l, "bias, dropout, add 1");
  EXPECT(op && near(op->fwd, N * h * (0.2 + 4) * 1e-9, 1e-12) && near(op->bwd, N * h * (0.2 + 1.5) * 1e-9, 1e-12),
         "bias, dropout, add: 2 passes + a mask drawn; backward copy, mask, bias gradient");
  EXPECT(find(&l, "TP f (QKV input)") == NULL, "t 1: no collectives");

  EXPECT(ptdp_sim_head_ops(&a.model, &hw, &so, &l) == 0, "head ops");
  op = find(&l, "cross entropy");
  EXPECT(op && near(op->fwd, N * 512 * 0.55e-9, 1e-12) && op->bwd == 0, "cross entropy: all its passes in the forward");

  /* t 2: the all-reduce of [N, h] fp32 (ring over 2: S / B + 2 alpha) and the copy out */
  EXPECT(parse(&a, "--tensor-model-parallel-size 2") == 0, "parse t 2");
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0, "layer ops t 2");
  op = find(&l, "TP all-reduce (MLP)");
  const double ar = N * h * 4 / 5e9 + 2e-6 + N * h * 0.1e-9;
  EXPECT(op && near(op->fwd, ar, 1e-12) && op->bwd == 0, "TP all-reduce %g vs %g", op ? op->fwd : -1, ar);
  op = find(&l, "TP f (MLP input)");
  EXPECT(op && op->fwd == 0 && near(op->bwd, ar, 1e-12) && op->hidden == 0, "f backward: blocking, nothing hidden");

  /* sequence parallelism: the reduce-scatter and the all-gather of [N, h] fp32 over 2 ranks,
   * (1/2) S / B + alpha each, at their own bus bandwidths (1 and 10 GB/s here) */
  hw.intra_reduce_scatter_bandwidth = 1e9;
  hw.intra_allgather_bandwidth = 10e9;
  EXPECT(parse(&a, "--tensor-model-parallel-size 2 --sequence-parallel") == 0, "parse t 2 SP");
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &l) == 0, "layer ops t 2 SP");
  const double rs = N * h * 4 / 2 / 1e9 + 1e-6, ag = N * h * 4 / 2 / 10e9 + 1e-6;
  op = find(&l, "TP reduce-scatter (MLP)");
  EXPECT(op && near(op->fwd, rs, 1e-12) && near(op->bwd, ag, 1e-12), "SP row output: reduce-scatter, all-gather back");
  op = find(&l, "TP f (MLP input)");
  EXPECT(op && near(op->fwd, ag, 1e-12) && near(op->bwd, rs + ag, 1e-12),
         "SP column input: all-gather; backward reduce-scatter and the input gathered again");
  hw = cpu_hw();

  /* one rank: the iteration is m (forward + backward) + the optimizer of every parameter */
  ptdp_sim_result *r = calloc(1, sizeof *r);
  EXPECT(parse(&a, "") == 0, "parse");
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, r) == 0, "run");
  const double params = 12 * 4 * h * h + 13 * 4 * h + (512 + 128) * h + 2 * h;
  EXPECT(near(r->comp[PTDP_SIM_OPTIMIZER], params * 4e-9, 1e-12), "optimizer %g", r->comp[PTDP_SIM_OPTIMIZER]);
  EXPECT(near(r->iteration, 4 * (r->stage_fwd[0] + r->stage_bwd[0]) + params * 4e-9, 1e-12), "iteration");
  EXPECT(r->cores_bound == 0, "one rank on two cores");
  free(r);

  /* a GPU file (no cpu-*-ns keys) under --fusion cpu is refused */
  ptdp_sim_hw gpu = cpu_hw();
  memset(gpu.cpu_op, 0, sizeof gpu.cpu_op);
  EXPECT(ptdp_sim_hw_is_cpu(&hw) && !ptdp_sim_hw_is_cpu(&gpu), "a CPU file is one with cpu-*-ns keys");
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_sim_layer_ops(&a.model, &gpu, &so, &l) != 0, "--fusion cpu needs the cpu-*-ns keys");
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
}

static void check_file(void)
{
  const char *path = "test_sim_cpu.hw";
  FILE *f = fopen(path, "w");
  EXPECT(f != NULL, "write %s", path);
  if (!f) return;
  fprintf(f, "peak-tflops-32 = 0.2\nmemory-bandwidth-gbs = 20\nmemory-gb = 8\nintra-node-bandwidth-gbs = 5\n"
             "inter-node-bandwidth-gbs = 5\ncpu-dropout-ns = 4\ncpu-optimizer-ns = 4.5\ncores-per-node = 2\n");
  fclose(f);
  ptdp_sim_hw hw;
  EXPECT(ptdp_sim_hw_read(path, &hw) == 0, "read");
  EXPECT(near(hw.cpu_op[PTDP_SIM_CPU_DROPOUT], 4e-9, 1e-12) && near(hw.cpu_op[PTDP_SIM_CPU_OPTIMIZER], 4.5e-9, 1e-12) &&
           hw.cpu_op[PTDP_SIM_CPU_GELU_FWD] == 0 && hw.cores_per_node == 2 && hw.threads_per_rank == 1,
         "cpu keys in ns, unset ones 0, threads-per-rank 1 by default");
  EXPECT(!strcmp(ptdp_sim_cpu_op_key(PTDP_SIM_CPU_DROPOUT), "cpu-dropout-ns") &&
           !strcmp(ptdp_sim_cpu_op_key(PTDP_SIM_CPU_LAYERNORM_BWD), "cpu-layernorm-backward-ns"),
         "key names");
  remove(path);
}

int main(void)
{
  check_terms();
  check_ops();
  check_file();
  printf("test_sim_cpu: %d checks passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
