/* ptdp-sim's communication by topology against hand computations (1 rank, no MPI): the test
 * cluster has 8 GPUs and 8 NICs per node, NVLink 200 GB/s and 2 us per hop, NICs 20 GB/s and
 * 5 us per hop between nodes.
 *   - placement: TP t = 16 (stride 1) spans 2 nodes of 8; a DP group of 32 with t p = 8 has one
 *     rank per node (32 nodes, one NIC each), with t p = 2 four per node (8 nodes, 4 NICs: the
 *     node's 8 shared by its 2 DP groups), with t p = 1 eight (4 nodes, all 8 NICs, NVLink-bound);
 *     a node of 4 NICs gives each of its 8 one-rank groups half a NIC;
 *   - ring and tree all-reduce with their latencies per hop (intra and inter), all-gather, the
 *     choice by size (the tree for a small message over 32 nodes, the ring for a large one),
 *     the hierarchical all-reduce of NVLink SHARP;
 *   - the DP reduction's buckets on one communication stream, ready through each chunk's last
 *     backward; the distributed optimizer's all-gather ahead of the next forward; in a run:
 *     Megatron's one exposed all-reduce, overlapped, ptdp-train's (always overlapped), the
 *     distributed optimizer's reduce-scatter + all-gather and overlap-param-gather;
 *   - the layer's TP all-reduce for t = 16 crosses the 2 nodes at the 8 NICs' rate (the tree at
 *     2 MB). */
#include "ptdp/error.h"
#include "ptdp/sim.h"

#include "../expect.h"
#include "sim_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ptdp_sim_hw gpu(void) { return sim_test_gpu(); }

static double ar(const ptdp_sim_hw *hw, const ptdp_sim_group *g, ptdp_sim_allreduce algo, double S)
{
  return ptdp_sim_collective_time(hw, g, PTDP_SIM_COLL_ALLREDUCE, algo, S, NULL);
}

static void check_placement(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_group g = ptdp_sim_group_of(&hw, 16, 1);
  EXPECT(g.g == 8 && g.k == 2 && near(g.bw, 160e9, 1e-12),
         "t 16: 8 per node, 2 nodes, 8 NICs x 20 = 160 GB/s (%d %d %g)", g.g, g.k, g.bw);
  g = ptdp_sim_group_of(&hw, 8, 1);
  EXPECT(g.g == 8 && g.k == 1 && near(g.bw, 200e9, 1e-12), "t 8: inside the node, NVLink");
  g = ptdp_sim_group_of(&hw, 32, 8);
  EXPECT(g.g == 1 && g.k == 32 && near(g.bw, 20e9, 1e-12), "d 32, t p 8: one rank per node, one NIC");
  g = ptdp_sim_group_of(&hw, 32, 2);
  EXPECT(g.g == 4 && g.k == 8 && near(g.bw, 80e9, 1e-12), "d 32, t p 2: 4 per node, 4 NICs");
  g = ptdp_sim_group_of(&hw, 32, 1);
  EXPECT(g.g == 8 && g.k == 4 && near(g.bw, 160e9, 1e-12), "d 32, t p 1: 8 per node, 8 NICs");
  hw.intra_bandwidth = 100e9;
  g = ptdp_sim_group_of(&hw, 32, 1);
  EXPECT(near(g.bw, 100e9, 1e-12), "8 NICs faster than NVLink: NVLink bounds the ring");
  hw = gpu();
  hw.nics_per_node = 4;
  g = ptdp_sim_group_of(&hw, 32, 8);
  EXPECT(near(g.bw, 10e9, 1e-12), "4 NICs for 8 one-rank groups: half a NIC each");
}

static void check_algorithms(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_allreduce pick;
  /* t 16, S 100 MB: ring 2 (15/16) S / 160 GB/s + 2 [(16 - 2) 2 us + (2 - 1) 5 us] */
  ptdp_sim_group g = ptdp_sim_group_of(&hw, 16, 1);
  const double ring16 = 2 * 15.0 / 16 * 1e8 / 160e9 + 2 * (14 * 2e-6 + 5e-6);
  const double tree16 = 2 * 1e8 / 160e9 + 2 * (7 * 2e-6 + 1 * 5e-6); /* chain of 8, log2(2) = 1 */
  EXPECT(near(ar(&hw, &g, PTDP_SIM_ALLREDUCE_RING, 1e8), ring16, 1e-12), "t 16 ring");
  EXPECT(near(ar(&hw, &g, PTDP_SIM_ALLREDUCE_TREE, 1e8), tree16, 1e-12), "t 16 tree");
  EXPECT(near(ptdp_sim_collective_time(&hw, &g, PTDP_SIM_COLL_ALLREDUCE, PTDP_SIM_ALLREDUCE_AUTO, 1e8, &pick), ring16,
              1e-12) &&
             pick == PTDP_SIM_ALLREDUCE_RING,
         "t 16 auto: the ring for 100 MB");
  EXPECT(near(ptdp_sim_collective_time(&hw, &g, PTDP_SIM_COLL_ALLGATHER, PTDP_SIM_ALLREDUCE_AUTO, 1e8, NULL),
              15.0 / 16 * 1e8 / 160e9 + 14 * 2e-6 + 5e-6, 1e-12),
         "t 16 all-gather: one pass of the ring");

  /* d 32 over 32 nodes (t p 8): every hop between nodes */
  g = ptdp_sim_group_of(&hw, 32, 8);
  const double ring32 = 2 * 31.0 / 32 * 1e9 / 20e9 + 2 * 31 * 5e-6;
  EXPECT(near(ar(&hw, &g, PTDP_SIM_ALLREDUCE_AUTO, 1e9), ring32, 1e-12), "d 32, t p 8: the ring for 1 GB");
  /* 100 kB: ring 2 (31/32) 1e5 / 20e9 + 310 us; tree 2e5 / 20e9 + 2 x 5 x 5 us (log2 32 = 5) */
  EXPECT(near(ptdp_sim_collective_time(&hw, &g, PTDP_SIM_COLL_ALLREDUCE, PTDP_SIM_ALLREDUCE_AUTO, 1e5, &pick),
              2e5 / 20e9 + 50e-6, 1e-12) &&
             pick == PTDP_SIM_ALLREDUCE_TREE,
         "d 32, 100 kB: the tree");
  /* d 32 over 8 nodes (t p 2): 80 GB/s; 24 hops in nodes, 7 between per pass */
  g = ptdp_sim_group_of(&hw, 32, 2);
  EXPECT(
      near(ar(&hw, &g, PTDP_SIM_ALLREDUCE_RING, 1e9), 2 * 31.0 / 32 * 1e9 / 80e9 + 2 * (24 * 2e-6 + 7 * 5e-6), 1e-12),
      "d 32, t p 2: ring at 4 NICs");
  /* hierarchical: reduce-scatter and all-gather over the node's 4 at 200 GB/s (3/4 S each, 3
   * hops), then each rank's quarter all-reduced over the 8 nodes on its own NIC (20 GB/s):
   * ring 2 (7/8) 2.5e8 / 20e9 + 14 x 5 us (the tree's 2 x 2.5e8 / 20e9 + 30 us is slower) */
  const double hier = 2 * (0.75 * 1e9 / 200e9 + 3 * 2e-6) + 2 * 7.0 / 8 * 2.5e8 / 20e9 + 14 * 5e-6;
  EXPECT(near(ar(&hw, &g, PTDP_SIM_ALLREDUCE_HIERARCHICAL, 1e9), hier, 1e-12), "hierarchical by hand");
  EXPECT(
      near(ar(&hw, &g, PTDP_SIM_ALLREDUCE_AUTO, 1e9), 2 * 31.0 / 32 * 1e9 / 80e9 + 2 * (24 * 2e-6 + 7 * 5e-6), 1e-12),
      "auto without NVLink SHARP never picks the hierarchical one");
  /* d 32 over 4 nodes (t p 1): 160 GB/s, 28 hops in nodes and 3 between */
  g = ptdp_sim_group_of(&hw, 32, 1);
  EXPECT(
      near(ar(&hw, &g, PTDP_SIM_ALLREDUCE_RING, 1e9), 2 * 31.0 / 32 * 1e9 / 160e9 + 2 * (28 * 2e-6 + 3 * 5e-6), 1e-12),
      "d 32, t p 1: ring at 8 NICs");
  EXPECT(ar(&hw, &g, PTDP_SIM_ALLREDUCE_RING, 0) == 0 &&
             ar(&hw, &(ptdp_sim_group){.n = 1}, PTDP_SIM_ALLREDUCE_RING, 1) == 0,
         "nothing to move, or one rank: no time");
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

/* t 16 on 8-GPU nodes: the attention's TP all-reduce of [b s, h] = [1024, 1024] in 2 B (2 MB)
 * crosses 2 nodes at 8 NICs (160 GB/s), not one NIC's 20 GB/s; at this size the tree's 38 us of
 * latency beat the ring's 66 us: 2 S / 160 GB/s + 2 (7 x 2 + 5) us = 64.2 us (ring 90.6 us) */
static void check_tp_across_nodes(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_options sopt, o;
  ptdp_args a;
  ptdp_sim_oplist layer;
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  EXPECT(parse(&a, &o, "--tensor-model-parallel-size 16") == 0, "parse t 16");
  ptdp_options_free(&o);
  EXPECT(ptdp_sim_layer_ops(&a.model, &hw, &so, &layer) == 0, "layer ops t 16");
  const double S = 1024.0 * 1024 * 2, want = 2 * S / 160e9 + 2 * (7 * 2e-6 + 5e-6);
  const ptdp_sim_op *op = find_op(&layer, "TP all-reduce (attention)");
  EXPECT(op && near(op->fwd, want, 1e-12), "t 16 attention all-reduce %g, by hand %g", op ? op->fwd : -1, want);
}

/* The bucketed DP reduction on two ranks of a node (200 GB/s, 2 us a hop): an all-reduce of S
 * bytes is S / 200 GB/s + 4 us, an all-gather 0.5 S / 200 GB/s + 2 us. */
static void check_buckets(void)
{
  ptdp_sim_hw hw = gpu();
  const ptdp_sim_group g = ptdp_sim_group_of(&hw, 2, 1);
  /* 1e8 fp32 gradients in buckets of 4e7: 160, 160 and 80 MB, 0.804, 0.804 and 0.404 ms, ready
   * at 1/3, 2/3 and 1 of a 1 ms backward: they end at 1.1373, 1.9413, 2.3453 ms */
  const double t0 = 0, t1 = 1e-3;
  double busy = 0;
  const double fin = ptdp_sim_bucket_finish(&hw, &g, PTDP_SIM_COLL_ALLREDUCE, PTDP_SIM_ALLREDUCE_RING, 1e8, 4e7, 4, 1,
                                            &t0, &t1, &busy);
  EXPECT(near(fin, 1e-3 / 3 + 2 * 0.804e-3 + 0.404e-3, 1e-12), "three buckets end at %g s", fin);
  EXPECT(near(busy, 2.012e-3, 1e-12), "their collectives take 2.012 ms together");
  /* two chunks of 5e7 (buckets 4e7 and 1e7: 0.804 and 0.204 ms), chunk 1's last backward
   * [0, 1] ms, chunk 0's [2, 3] ms: chunk 1's end at 1.304 ms, chunk 0's at 2.5 + 0.804 =
   * 3.304 (it waits for its first bucket), then 3.508 */
  const double s2[2] = {2e-3, 0}, e2[2] = {3e-3, 1e-3};
  const double fin2 =
      ptdp_sim_bucket_finish(&hw, &g, PTDP_SIM_COLL_ALLREDUCE, PTDP_SIM_ALLREDUCE_RING, 1e8, 4e7, 4, 2, s2, e2, NULL);
  EXPECT(near(fin2, 3.508e-3, 1e-12), "two chunks: %g s", fin2);
  /* the parameter all-gather (2 B) ahead of a 0.3 ms forward that starts 0.1 ms after it:
   * buckets of 80, 80, 40 MB take 0.202, 0.202, 0.102 ms; bucket j is needed at 0.1 + 0.1 (j-1)
   * ms; done at 0.202, 0.404, 0.506: the forward waits max(0.102, 0.204, 0.206) = 0.206 ms */
  const double w = ptdp_sim_gather_exposed(&hw, &g, 1e8, 4e7, 2, 1, 0.1e-3, 0.3e-3, &busy);
  EXPECT(near(w, 0.206e-3, 1e-12) && near(busy, 0.506e-3, 1e-12), "gather exposed %g, busy %g", w, busy);
}

/* The DP reduction in a run (p 1, d 2 on one node): Megatron's default (one all-reduce of the
 * fp32 gradient buffer after the backward, all exposed), overlapped (less exposed, the rest
 * hidden), the distributed optimizer (reduce-scatter of 4 B, all-gather of 2 B per parameter). */
static void check_dp_in_run(void)
{
  ptdp_sim_hw hw = gpu();
  ptdp_sim_options so;
  ptdp_options sopt, o;
  ptdp_args a;
  ptdp_sim_result *r = calloc(1, sizeof *r), *ro = calloc(1, sizeof *ro);
  ptdp_sim_options_init(&sopt, &so);
  ptdp_options_free(&sopt);
  so.world_size = 2;
  EXPECT(parse(&a, &o, "--ddp-bucket-size 1000000") == 0, "parse d 2");
  ptdp_options_free(&o);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, r) == 0, "run d 2");
  const double np = r->mem_weights / 2;
  const ptdp_sim_group g = ptdp_sim_group_of(&hw, 2, 1);
  const double ar = ptdp_sim_collective_time(&hw, &g, PTDP_SIM_COLL_ALLREDUCE, PTDP_SIM_ALLREDUCE_AUTO, np * 4, NULL);
  EXPECT(near(r->comp[PTDP_SIM_DP], ar, 1e-12) && r->hidden[PTDP_SIM_DP] == 0, "not overlapped: one all-reduce, %g s",
         r->comp[PTDP_SIM_DP]);
  so.overlap_grad_reduce = 1;
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, ro) == 0, "run d 2 overlapped");
  EXPECT(ro->comp[PTDP_SIM_DP] < r->comp[PTDP_SIM_DP] && ro->hidden[PTDP_SIM_DP] > 0 &&
             near(ro->iteration - ro->comp[PTDP_SIM_DP], r->iteration - r->comp[PTDP_SIM_DP], 1e-12),
         "overlapped: %g exposed, %g hidden (was %g)", ro->comp[PTDP_SIM_DP], ro->hidden[PTDP_SIM_DP],
         r->comp[PTDP_SIM_DP]);
  so.fusion = PTDP_SIM_FUSION_NONE; /* ptdp-train's own implementation overlaps whatever the key */
  so.overlap_grad_reduce = 0;
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, ro) == 0 && ro->hidden[PTDP_SIM_DP] > 0, "ptdp-train's implementation overlaps");
  so.fusion = PTDP_SIM_FUSION_MEGATRON;
  EXPECT(parse(&a, &o, "--use-distributed-optimizer") == 0, "parse distributed optimizer");
  ptdp_options_free(&o);
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, r) == 0, "run d 2 distributed optimizer");
  const double rs =
      ptdp_sim_collective_time(&hw, &g, PTDP_SIM_COLL_REDUCE_SCATTER, PTDP_SIM_ALLREDUCE_AUTO, np * 4, NULL);
  const double ag = ptdp_sim_collective_time(&hw, &g, PTDP_SIM_COLL_ALLGATHER, PTDP_SIM_ALLREDUCE_AUTO, np * 2, NULL);
  EXPECT(near(r->comp[PTDP_SIM_DP], rs + ag, 1e-12), "distributed optimizer: reduce-scatter + all-gather, %g s",
         r->comp[PTDP_SIM_DP]);
  so.overlap_param_gather = 1;
  EXPECT(ptdp_sim_run(&a.model, &hw, &so, ro) == 0 && ro->comp[PTDP_SIM_DP] < r->comp[PTDP_SIM_DP],
         "overlap-param-gather hides part of the gather: %g < %g", ro->comp[PTDP_SIM_DP], r->comp[PTDP_SIM_DP]);
  free(r);
  free(ro);
}

int main(void)
{
  check_placement();
  check_algorithms();
  check_tp_across_nodes();
  check_buckets();
  check_dp_in_run();
  printf("test_sim_comm: %d checks passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
