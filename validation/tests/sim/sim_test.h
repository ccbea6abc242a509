/* Shared by the simulator's unit tests (test_sim, test_sim_comm, test_sim_stack, test_sim_cpu) and
 * test_sweep_bound: the test device, whose round numbers make the hand computations of the tests
 * short, the relative comparison they use, and a command line parsed from one string. */
#ifndef PTDP_SIM_TEST_H
#define PTDP_SIM_TEST_H

#include "ptdp/args.h"
#include "ptdp/sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static inline int near(double x, double y, double rel) { return fabs(x - y) <= rel * fabs(y) + 1e-15; }

/* The operator of a list by its name, or NULL. */
static inline const ptdp_sim_op *find_op(const ptdp_sim_oplist *l, const char *name)
{
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->op[i].name, name)) return &l->op[i];
  return NULL;
}

/* 100 / 10 TFLOP/s (16 / 32 bit) at GEMM efficiency 0.5, 108 SMs, 256 x 128 tiles, 1 us launches,
 * 1 TB/s memory, 8 GPUs and 8 NICs a node, 200 GB/s + 2 us inside a node, 20 GB/s + 5 us across. */
static inline ptdp_sim_hw sim_test_gpu(void)
{
  ptdp_sim_hw hw;
  memset(&hw, 0, sizeof hw);
  snprintf(hw.name, sizeof hw.name, "test");
  hw.peak_flops_16 = 100e12;
  hw.peak_flops_32 = 10e12;
  hw.gemm_efficiency = 0.5;
  hw.sm_count = 108;
  hw.tile_m = 256;
  hw.tile_n = 128;
  hw.kernel_launch = 1e-6;
  hw.memory_bandwidth = 1e12;
  hw.memory_bytes = 80e9;
  hw.gpus_per_node = 8;
  hw.intra_bandwidth = 200e9;
  hw.intra_latency = 2e-6;
  hw.inter_bandwidth = 20e9;
  hw.inter_latency = 5e-6;
  hw.nics_per_node = 8;
  return hw;
}

/* ptdp_args_parse over the words of line (split at spaces in place, at most 64). */
static inline int sim_test_parse_line(ptdp_args *a, ptdp_options *o, char *line)
{
  char *argv[64];
  int argc = 0;
  for (char *tok = strtok(line, " "); tok && argc < 64; tok = strtok(NULL, " ")) argv[argc++] = tok;
  return ptdp_args_parse(a, o, argc, argv);
}

/* The same, the options freed: whether line parses (0) or the parser's error. */
static inline int sim_test_parses(ptdp_args *a, char *line)
{
  ptdp_options o;
  const int err = sim_test_parse_line(a, &o, line);
  ptdp_options_free(&o);
  return err;
}

#endif
