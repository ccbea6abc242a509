/* ptdp-sim's cost terms against hand computations, and the iteration's assembly (1 rank, no MPI):
 *   - ring, tree all-reduce and all-gather: the alpha-beta formulas with numbers;
 *   - a GEMM whose tiles fill exactly one wave (w = 1), then one with a column over (the best
 *     tile shape's w worked out below), K0, and the memory roofline of a skinny GEMM;
 *   - a memory-bound operator: bytes / bandwidth + launch;
 *   - p = 1: iteration = forward + backward + optimizer of m micro-batches, bubble 0; full
 *     recomputation adds exactly one forward of every layer; fp32 weights are the plan's;
 *   - p = 4, m = 8, 1F1B: the replayed bubble is at least Narayanan's (p-1)/m;
 *   - Megatron's operators by hand: the QKV bias (its own pass and its gradient's reduction),
 *     bias-dropout-add's backward with its bias gradient, the cross entropy's passes over the
 *     fp32 logits (Megatron's and ptdp-train's), the optimizer's 50 bytes per parameter in
 *     bf16 (the gradient buffer's 1/d scaling included), and the SMs a hidden collective holds;
 *   - bad input (world size not a multiple of t p) fails. */
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include "../expect.h"
#include "sim_test.h"

#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static ptdp_sim_hw gpu(void) { return sim_test_gpu(); }

static void check_terms(void)
{
  /* n 8, S 1 GB, B 100 GB/s, alpha 1 us: ring 2 (7/8) 0.01 s + 14 us; tree 2 x 0.01 + 6 us */
  EXPECT(near(ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_RING, 8, 1e9, 1e11, 1e-6), 0.0175 + 14e-6, 1e-12), "ring");
  EXPECT(near(ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_TREE, 8, 1e9, 1e11, 1e-6), 0.02 + 6e-6, 1e-12), "tree");
  EXPECT(near(ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_AUTO, 8, 1e9, 1e11, 1e-6), 0.0175 + 14e-6, 1e-12), "auto");
  EXPECT(near(ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_AUTO, 1024, 1e3, 1e11, 1e-5), 2e-8 + 20e-5, 1e-12),
         "auto picks the tree for a small message on many ranks");
  EXPECT(ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_RING, 1, 1e9, 1e11, 1e-6) == 0, "one rank");
  EXPECT(near(ptdp_sim_allgather_time(8, 1e9, 1e11, 1e-6), 0.00875 + 7e-6, 1e-12), "all-gather");

  ptdp_sim_hw hw = gpu();
  /* M 3072 = 12 x 256, N 1152 = 9 x 128: 108 tiles, one full wave: F / (R eta) + launch */
  const double M = 3072, N = 1152, K = 4096, F = 2 * M * N * K;
  EXPECT(near(ptdp_sim_gemm_time(&hw, 100e12, M, N, K, 1, 2), F / 50e12 + 1e-6, 1e-12), "one full wave");
  /* N 1153: 256x128 and 128x256 give 120 tiles, 2 waves (w 0.5004); 128x128 240 tiles, 3 waves
   * (0.6673); 128x64 24 x 19 = 456 tiles, 5 waves: w = 3072 x 1153 / (5 x 108 x 128 x 64) = 0.8007 */
  const double w = 3072.0 * 1153 / (5.0 * 108 * 128 * 64);
  EXPECT(near(ptdp_sim_gemm_time(&hw, 100e12, M, 1153, K, 1, 2), 2 * M * 1153 * K / (50e12 * w) + 1e-6, 1e-12),
         "wave quantisation, best tile shape");
  hw.gemm_k0 = 64; /* K 64: k = 1/2 */
  EXPECT(near(ptdp_sim_gemm_time(&hw, 100e12, M, N, 64, 1, 2), 2 * M * N * 64 / 25e12 + 1e-6, 1e-12), "K0");
  hw.gemm_k0 = 0;
  /* [1, 8192] x [8192, 8192] on a device of 1 EFLOP/s: the weights' read dominates:
   * (8192 + 8192^2 + 8192) 2 B / 1 TB/s */
  EXPECT(near(ptdp_sim_gemm_time(&hw, 1e18, 1, 8192, 8192, 1, 2), (8192.0 + 8192.0 * 8192 + 8192) * 2 / 1e12 + 1e-6,
              1e-12),
         "memory roofline");
  EXPECT(near(ptdp_sim_membound_time(&hw, 1e9), 1e-3 + 1e-6, 1e-12), "memory-bound operator");
}

static int parse(ptdp_args *a, ptdp_options *o, const char *extra)
{
  char buf[1024];
  snprintf(buf, sizeof buf,
           "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --vocab-size 50000 "
           "--micro-batch-size 2 --global-batch-size 16 --bf16 %s",
           extra);
  return sim_test_parse_line(a, o, buf);
}

static void check_iteration(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_options sopt, o;
  ptdp_args a;
  ptdp_sim_result r, rf;
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  EXPECT(parse(&a, &o, "") == 0, "parse");
  ptdp_options_free(&o);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, &r) == 0, "run p 1");
  EXPECT(r.m == 8 && r.p == 1 && r.d == 1, "layout m %d", r.m);
  EXPECT(near(r.iteration, 8 * (r.stage_fwd[0] + r.stage_bwd[0]) + r.comp[PTDP_SIM_OPTIMIZER], 1e-12),
         "p 1: m (forward + backward) + optimizer: %g", r.iteration);
  EXPECT(r.bubble == 0, "no bubble with p 1");
  EXPECT(parse(&a, &o, "--recompute-granularity full") == 0, "parse");
  ptdp_options_free(&o);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, &rf) == 0, "run full recompute");
  double Lf = 0;
  for (int i = 0; i < r.layer.n; i++) Lf += r.layer.op[i].fwd;
  EXPECT(near(rf.iteration - r.iteration, 8 * 4 * Lf, 1e-9), "full recomputation: one more forward of each layer");
  EXPECT(near(rf.recompute, 8 * 4 * Lf, 1e-12), "recompute time");

  /* fp32: weights are the plan's fp32 parameter bytes, 4 per parameter */
  EXPECT(parse(&a, &o, "--bf16 false") == 0, "parse");
  ptdp_options_free(&o);
  hw.peak_flops_16 = 0;
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, &r) == 0, "run fp32");
  EXPECT(r.mem_grads == r.mem_weights && r.mem_optimizer == 2 * r.mem_weights, "fp32 Adam: moments = 2 x weights");
  hw = gpu();

  /* a small vocabulary: the head adds little, the stages are nearly alike */
  EXPECT(parse(&a, &o, "--pipeline-model-parallel-size 4 --micro-batch-size 1 --global-batch-size 8 --vocab-size 128") == 0,
         "parse");
  ptdp_options_free(&o);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, &r) == 0, "run p 4");
  EXPECT(r.bubble >= 3.0 / 8 - 1e-9 && r.bubble < 3.0 / 8 * 1.5, "bubble %g vs (p-1)/m = 0.375", r.bubble);

  so.world_size = 6;
  EXPECT(parse(&a, &o, "--tensor-model-parallel-size 4") == 0, "parse");
  ptdp_options_free(&o);
  ptdp_error_set_quiet(1);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, &r) != 0, "world 6 with t 4 must fail");
  ptdp_error_clear();
  /* t = p = 65536 (each in range) with world-size 0 made t p = 2^32 wrap to 0 in an
   * int, refused as a world size "not divisible"; the product is named instead */
  so.world_size = 0;
  EXPECT(parse(&a, &o, "--tensor-model-parallel-size 65536 --pipeline-model-parallel-size 65536 "
                       "--num-attention-heads 65536 --hidden-size 65536") == 0, "parse t = p = 65536");
  ptdp_options_free(&o);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, &r) != 0 && strstr(ptdp_error_message(), "65536 x 65536 is more ranks"),
         "t = p = 65536: refused naming the product, got '%s'", ptdp_error_message());
  ptdp_error_clear();
  ptdp_error_set_quiet(0);
}

/* Megatron's async TP all-reduce: the column-parallel input gradient's all-reduce hides behind
 * the weight-gradient GEMM; what it hides is what the 2021 schedule (no overlap) exposes. */
static void check_async_tp(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_options sopt, o;
  ptdp_args a;
  ptdp_sim_oplist on, off;
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  EXPECT(parse(&a, &o, "--tensor-model-parallel-size 2") == 0, "parse");
  ptdp_options_free(&o);
  so.async_tp_allreduce = 1;
  ptdp_sim_layer_ops(&a.model, &hw, &so, &on);
  so.async_tp_allreduce = 0;
  ptdp_sim_layer_ops(&a.model, &hw, &so, &off);
  const double N = 2.0 * 512, h = 1024, wgrad = ptdp_sim_gemm_time(&hw, hw.peak_flops_16, h, 3 * h / 2, N, 1, 2);
  const double ar = ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_RING, 2, N * h * 2, hw.intra_bandwidth, hw.intra_latency);
  EXPECT(off.op[1].hidden == 0 && near(off.op[1].bwd, ar, 1e-12), "no overlap: the all-reduce shows whole");
  EXPECT(near(on.op[1].hidden, fmin(ar, wgrad), 1e-12) && near(on.op[1].bwd + on.op[1].hidden, ar, 1e-12),
         "async: min(all-reduce, wgrad GEMM) hidden, %g of %g", on.op[1].hidden, ar);
}

/* The memory-bound terms of Megatron's implementation, bytes counted by hand (b 2, s 512, h 1024,
 * t 2, bf16; the test device streams 1 TB/s and launches in 1 us). */
static void check_megatron_ops(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_options sopt, o;
  ptdp_args a;
  ptdp_sim_oplist layer, head;
  ptdp_sim_result *r = calloc(1, sizeof *r);
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  EXPECT(parse(&a, &o, "--tensor-model-parallel-size 2") == 0, "parse");
  ptdp_options_free(&o);
  ptdp_sim_layer_ops(&a.model, &hw, &so, &layer);
  ptdp_sim_head_ops(&a.model, &hw, &so, &head);
  /* QKV bias: forward reads and writes [N, 3h/t] = [1024, 1536] in 2 B (6.29 MB); backward
   * reads it once for the bias gradient */
  const double qkv = 1024.0 * 1536 * 2;
  const ptdp_sim_op *bias = find_op(&layer, "QKV bias");
  EXPECT(bias && near(bias->fwd, 2 * qkv / 1e12 + 1e-6, 1e-12) && near(bias->bwd, qkv / 1e12 + 1e-6, 1e-12),
         "QKV bias: 2 and 1 passes over [N, 3h/t]");
  /* cross entropy over z = N V'/t = 1024 x 25088 logits (V' = 50176: 50000 padded to a
   * multiple of 128 x 2): forward e + 36 = 38 B each, backward
   * e + 12 = 14 B each */
  const double z = 1024.0 * 25088;
  const ptdp_sim_op *ce = find_op(&head, "cross entropy");
  EXPECT(ce && near(ce->fwd, 38 * z / 1e12 + 1e-6, 1e-12) && near(ce->bwd, 14 * z / 1e12 + 1e-6, 1e-12),
         "cross entropy: 38 and 14 bytes per logit");

  /* bias-dropout-add backward: read dy and the 1-byte mask, write dx, the residual stream's add
   * (3 passes), and the bias gradient's reduction over the tokens (one read): 6 x + mask */
  const double x = 1024.0 * 1024 * 2, mask = a.hidden_dropout > 0 ? 1024.0 * 1024 : 0;
  const ptdp_sim_op *bda = find_op(&layer, "bias-dropout-add 1");
  EXPECT(bda && near(bda->bwd, (6 * x + mask) / 1e12 + 1e-6, 1e-12), "bias-dropout-add backward: 6 x + mask");
  /* ptdp-train's own cross entropy (fusion none): e + 16 forward, 4 + e backward */
  so.fusion = PTDP_SIM_FUSION_NONE;
  ptdp_sim_head_ops(&a.model, &hw, &so, &head);
  ce = find_op(&head, "cross entropy");
  EXPECT(ce && near(ce->fwd, 18 * z / 1e12 + 1e-6, 1e-12) && near(ce->bwd, 6 * z / 1e12 + 1e-6, 1e-12),
         "cross entropy, fusion none: 18 and 6 bytes per logit");
  so.fusion = PTDP_SIM_FUSION_MEGATRON;

  /* a hidden collective holds 27 of the 108 SMs: hiding x costs the GEMM x / 4 */
  so.async_tp_allreduce = 1;
  hw.collective_sms = 27;
  ptdp_sim_layer_ops(&a.model, &hw, &so, &layer);
  const double N = 2.0 * 512, h = 1024, wgrad = ptdp_sim_gemm_time(&hw, hw.peak_flops_16, h, 3 * h / 2, N, 1, 2);
  const double ar = ptdp_sim_allreduce_time(PTDP_SIM_ALLREDUCE_RING, 2, N * h * 2, hw.intra_bandwidth, hw.intra_latency);
  const ptdp_sim_op *f = find_op(&layer, "TP f (QKV input)");
  EXPECT(near(ptdp_sim_overlap_cost(&hw, 1e-3), 0.25e-3, 1e-12), "overlap cost: x 27 / 108");
  EXPECT(f && near(f->hidden, fmin(ar, wgrad), 1e-12) && near(f->bwd, ar - f->hidden + f->hidden / 4, 1e-12),
         "hidden all-reduce: a quarter of it still shows");
  hw.collective_sms = 0;

  /* p 1, bf16: the optimizer step moves 50 B per parameter held (norm 4, Adam 28, copy 6, zero
   * 4, the gradient buffer divided by d 8); weights are 2 B each */
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, r) == 0, "run t 2");
  EXPECT(near(r->comp[PTDP_SIM_OPTIMIZER], r->mem_weights / 2 * 50 / 1e12 + 1e-6, 1e-9),
         "optimizer: 50 B per parameter, %g s", r->comp[PTDP_SIM_OPTIMIZER]);
  free(r);
}

/* --out: /pipeline/events holds every rank's 2 m v items; the latest end is the replay's makespan. */
static void check_events(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_options sopt, o;
  ptdp_args a;
  ptdp_sim_result *r = calloc(1, sizeof *r);
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  EXPECT(parse(&a, &o, "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1") == 0, "parse");
  so.world_size = 4;
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, r) == 0, "run p 2 v 2 d 2");
  const char *path = "test_sim_out.h5";
  EXPECT(ptdp_sim_write_runfile(path, &a.model, &o, &hw, &so, r) == 0, "write the run file");
  ptdp_options_free(&o);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), ds = H5Dopen2(f, "/pipeline/events", H5P_DEFAULT);
  hid_t sp = H5Dget_space(ds);
  hsize_t dims[3] = {0, 0, 0};
  H5Sget_simple_extent_dims(sp, dims, NULL);
  EXPECT(dims[0] == 1 && dims[1] == 4 && (int)dims[2] == 2 * r->m * r->v, "events [1, W, 2 m v]");
  hid_t et = H5Tcreate(H5T_COMPOUND, sizeof(double));
  H5Tinsert(et, "end", 0, H5T_NATIVE_DOUBLE);
  double *end = calloc(dims[1] * dims[2], sizeof *end), last = 0;
  H5Dread(ds, et, H5S_ALL, H5S_ALL, H5P_DEFAULT, end);
  for (hsize_t i = 0; i < dims[1] * dims[2]; i++) last = end[i] > last ? end[i] : last;
  EXPECT(near(last, r->pipeline_time, 1e-12), "last event end %g = replay makespan %g", last, r->pipeline_time);
  free(end);
  H5Tclose(et);
  H5Sclose(sp);
  H5Dclose(ds);
  H5Fclose(f);
  remove(path);
  free(r);
}

int main(void)
{
  check_terms();
  check_iteration();
  check_events();
  check_async_tp();
  check_megatron_ops();
  printf("test_sim: %d checks passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
