/* The cost terms of ptdp-sim (ptdp/sim.h): GEMMs, memory-bound operators, collectives; the
 * hardware file and ptdp-sim's own keys. */
#include "ptdp/sim_cost.h"

#include "ptdp/backend.h"
#include "ptdp/error.h"

#include "sim_hw.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static double maxd(double x, double y) { return x > y ? x : y; }

/* Ring: 2 (n-1) steps each moving S/n (reduce-scatter, then all-gather).  Double binary tree
 * (NCCL's): every rank receives and sends the whole S once up and once down the tree, with
 * 2 log2(n) latencies.  Auto: the faster of the two (NCCL's tuner picks by size). */
double ptdp_sim_allreduce_time(ptdp_sim_allreduce algo, int n, double bytes, double bw, double alpha)
{
  if (n <= 1 || bytes <= 0) return 0;
  const double ring = 2.0 * (n - 1) / n * bytes / bw + 2.0 * (n - 1) * alpha;
  const double tree = 2.0 * bytes / bw + 2.0 * ceil(log2((double)n)) * alpha;
  if (algo == PTDP_SIM_ALLREDUCE_RING) return ring;
  if (algo == PTDP_SIM_ALLREDUCE_TREE) return tree;
  return ring < tree ? ring : tree;
}

/* All-gather (or reduce-scatter) of a tensor of S bytes in all: n - 1 steps of S/n. */
double ptdp_sim_allgather_time(int n, double bytes, double bw, double alpha)
{
  if (n <= 1 || bytes <= 0) return 0;
  return (double)(n - 1) / n * bytes / bw + (n - 1) * alpha;
}

/* F = 2 M N K per GEMM of the batch.  The library covers C with tm x tn output tiles, one SM
 * each at a time: a wave is sm tiles, and the last wave and the tiles' edges run part-empty,
 * so the useful fraction is w = M N batch / (waves sm tm tn) (tile and wave quantisation).  The
 * library's heuristic picks among its tile shapes: the largest (tm x tn), its transpose, and the
 * halves (tm/2 x tn, tm/2 x tn/2); the best w is taken.  Each tile's K loop pays a fixed
 * prologue/epilogue: k(K) = K / (K + K0).  A GEMM also moves at least its operands and result
 * through HBM (the roofline's other side). */
static double wave_efficiency(const ptdp_sim_hw *hw, double M, double N, double batch)
{
  const double shapes[4][2] = {{hw->tile_m, hw->tile_n}, {hw->tile_n, hw->tile_m},
                               {maxd(1, hw->tile_m / 2), hw->tile_n}, {maxd(1, hw->tile_m / 2), maxd(1, hw->tile_n / 2)}};
  double best = 0;
  for (int i = 0; i < 4; i++) {
    const double tm = shapes[i][0], tn = shapes[i][1];
    const double tiles = batch * ceil(M / tm) * ceil(N / tn), waves = ceil(tiles / hw->sm_count);
    best = maxd(best, M * N * batch / (waves * hw->sm_count * tm * tn));
  }
  return best;
}

double ptdp_sim_gemm_time(const ptdp_sim_hw *hw, double R, double M, double N, double K, double batch, double e)
{
  if (M <= 0 || N <= 0 || K <= 0 || batch <= 0) return 0;
  const double flops = 2.0 * M * N * K * batch;
  const double w = wave_efficiency(hw, M, N, batch), k = K / (K + hw->gemm_k0);
  const double compute = flops / (R * hw->gemm_efficiency * w * k);
  const double memory = (M * K + K * N + M * N) * batch * e / hw->memory_bandwidth;
  return maxd(compute, memory) + hw->kernel_launch;
}

double ptdp_sim_membound_time(const ptdp_sim_hw *hw, double bytes)
{
  return bytes > 0 ? bytes / hw->memory_bandwidth + hw->kernel_launch : 0;
}

double ptdp_sim_overlap_cost(const ptdp_sim_hw *hw, double hidden)
{
  return hidden > 0 && hw->sm_count > 0 ? hidden * hw->collective_sms / hw->sm_count : 0;
}

const char *ptdp_sim_component_name(ptdp_sim_component c)
{
  static const char *n[PTDP_SIM_COMPONENTS] = {"GEMMs", "attention", "memory-bound operators", "TP communication",
                                               "PP communication", "DP communication", "optimizer",
                                               "embedding all-reduce"};
  return c < PTDP_SIM_COMPONENTS ? n[c] : "?";
}

/* ---- the hardware file ---- */

/* The file's fields in file units, converted to SI after reading. */
typedef struct {
  char name[PTDP_OPT_STRLEN];
  double peak16, peak32, eta, sms, tm, tn, k0, launch_us, hbm, mem_gb, gpn, intra_bw, intra_lat, inter_bw, inter_lat,
    nics, coll_sms, nvls, flash_fwd, flash_bwd;
  int stack; /* an ENUM key's field */
  double cpu_ns[PTDP_SIM_CPU_OPS], cores, threads, ag_bw, rs_bw;
} hw_file;

#define HOFF(f) offsetof(hw_file, f)
static const ptdp_option hw_table[] = {
  {"name", PTDP_OPT_STRING, HOFF(name), "", 0, 0, NULL, "what the file describes", NULL},
  {"peak-tflops-16", PTDP_OPT_REAL, HOFF(peak16), "0", 0, 1e7, NULL, "TFLOP/s, dense 16-bit peak per device", NULL},
  {"peak-tflops-32", PTDP_OPT_REAL, HOFF(peak32), "0", 0, 1e7, NULL, "TFLOP/s, fp32 peak per device (rank)", NULL},
  {"gemm-efficiency", PTDP_OPT_REAL, HOFF(eta), "0.8", 0.01, 1, NULL,
   "fraction of peak a large, well-shaped GEMM reaches", NULL},
  {"sm-count", PTDP_OPT_REAL, HOFF(sms), "1", 1, 1e6, NULL, "processors a GEMM's tiles are spread over", NULL},
  {"gemm-tile-m", PTDP_OPT_REAL, HOFF(tm), "1", 1, 4096, NULL, "rows of the GEMM library's output tile", NULL},
  {"gemm-tile-n", PTDP_OPT_REAL, HOFF(tn), "1", 1, 4096, NULL, "columns of the GEMM library's output tile", NULL},
  {"gemm-k0", PTDP_OPT_REAL, HOFF(k0), "0", 0, 1e6, NULL, "K0 of the K-loop efficiency K / (K + K0)", NULL},
  {"kernel-launch-us", PTDP_OPT_REAL, HOFF(launch_us), "0", 0, 1e6, NULL, "us of fixed cost per kernel", NULL},
  {"memory-bandwidth-gbs", PTDP_OPT_REAL, HOFF(hbm), "0", 0, 1e7, NULL,
   "GB/s a streaming kernel reaches in device memory", NULL},
  {"memory-gb", PTDP_OPT_REAL, HOFF(mem_gb), "0", 0, 1e7, NULL, "GB (1e9 bytes) of device memory", NULL},
  {"gpus-per-node", PTDP_OPT_REAL, HOFF(gpn), "1", 1, 1e6, NULL, "devices (ranks) per node", NULL},
  {"intra-node-bandwidth-gbs", PTDP_OPT_REAL, HOFF(intra_bw), "0", 0, 1e7, NULL,
   "GB/s per device per direction a collective reaches within a node", NULL},
  {"intra-node-latency-us", PTDP_OPT_REAL, HOFF(intra_lat), "0", 0, 1e7, NULL, "us per collective step within a node",
   NULL},
  {"inter-node-bandwidth-gbs", PTDP_OPT_REAL, HOFF(inter_bw), "0", 0, 1e7, NULL,
   "GB/s per NIC per direction reached between nodes", NULL},
  {"inter-node-latency-us", PTDP_OPT_REAL, HOFF(inter_lat), "0", 0, 1e7, NULL, "us per step between nodes", NULL},
  {"nics-per-node", PTDP_OPT_REAL, HOFF(nics), "1", 1, 1e4, NULL, "network adapters per node for compute traffic",
   NULL},
  /* ptdp's CPU backend, --fusion cpu (jobs/measure_cpu_hw.sh times each on one rank) */
#define CPU_NS(op, key, what) {key, PTDP_OPT_REAL, HOFF(cpu_ns[op]), "0", 0, 1e6, NULL, "ns per element: " what, NULL}
  CPU_NS(PTDP_SIM_CPU_ELEMENTWISE, "cpu-elementwise-ns", "y += x, bias add, copy, mask applied"),
  CPU_NS(PTDP_SIM_CPU_DROPOUT, "cpu-dropout-ns", "dropout mask drawn (hash) and applied"),
  CPU_NS(PTDP_SIM_CPU_LAYERNORM_FWD, "cpu-layernorm-forward-ns", "LayerNorm forward"),
  CPU_NS(PTDP_SIM_CPU_LAYERNORM_BWD, "cpu-layernorm-backward-ns", "LayerNorm backward (input and parameter gradients)"),
  CPU_NS(PTDP_SIM_CPU_GELU_FWD, "cpu-gelu-forward-ns", "GeLU forward"),
  CPU_NS(PTDP_SIM_CPU_GELU_BWD, "cpu-gelu-backward-ns", "GeLU backward"),
  CPU_NS(PTDP_SIM_CPU_BIAS_GRAD, "cpu-bias-grad-ns", "bias gradient (column sums)"),
  CPU_NS(PTDP_SIM_CPU_SOFTMAX_FWD, "cpu-softmax-forward-ns", "attention core beyond its GEMMs, per score, forward"),
  CPU_NS(PTDP_SIM_CPU_SOFTMAX_BWD, "cpu-softmax-backward-ns", "attention core beyond its GEMMs, per score, backward"),
  CPU_NS(PTDP_SIM_CPU_XENT_FWD, "cpu-cross-entropy-forward-ns", "cross entropy max and sum-exp passes, per logit"),
  CPU_NS(PTDP_SIM_CPU_XENT_GRAD, "cpu-cross-entropy-grad-ns", "cross entropy gradient pass, per logit"),
  CPU_NS(PTDP_SIM_CPU_OPTIMIZER, "cpu-optimizer-ns", "AdamW, gradient sum of squares and clipping scale, per parameter"),
#undef CPU_NS
  {"cores-per-node", PTDP_OPT_REAL, HOFF(cores), "0", 0, 1e6, NULL,
   "CPU cores a node's ranks share (0: each rank has its own device)", NULL},
  {"threads-per-rank", PTDP_OPT_REAL, HOFF(threads), "1", 1, 1e6, NULL,
   "threads of the rank the file's rates were measured with", NULL},
  {"intra-node-allgather-bandwidth-gbs", PTDP_OPT_REAL, HOFF(ag_bw), "0", 0, 1e7, NULL,
   "GB/s, bus bandwidth of an all-gather within a node, --fusion cpu (0: intra-node-bandwidth-gbs)", NULL},
  {"intra-node-reduce-scatter-bandwidth-gbs", PTDP_OPT_REAL, HOFF(rs_bw), "0", 0, 1e7, NULL,
   "GB/s, bus bandwidth of a reduce-scatter within a node, --fusion cpu (0: intra-node-bandwidth-gbs)", NULL},
  {"flash-attention-efficiency-forward", PTDP_OPT_REAL, HOFF(flash_fwd), "0", 0, 1, NULL,
   "fraction of the 16-bit peak the fused (flash) attention forward reaches on its FLOPs (causal: half of "
   "the s x s); needed when the attention is flash",
   NULL},
  {"flash-attention-efficiency-backward", PTDP_OPT_REAL, HOFF(flash_bwd), "0", 0, 1, NULL,
   "the same for its backward (the scores recomputed: 2.5 forwards of FLOPs)", NULL},
  {"gemm-efficiency-stack", PTDP_OPT_ENUM, HOFF(stack), "megatron-2021", 0, 0,
   "megatron-2021|megatron-2022|megatron-core",
   "the software stack whose GEMMs gemm-efficiency describes (a measurement with today's cuBLAS: megatron-core)",
   NULL},
  {"nvlink-sharp", PTDP_OPT_REAL, HOFF(nvls), "0", 0, 1, NULL,
   "1: the node's NVSwitches reduce (NVLink SHARP, NVSwitch 3): NCCL's hierarchical all-reduce (NVLS) is "
   "considered",
   NULL},
  {"collective-sms", PTDP_OPT_REAL, HOFF(coll_sms), "0", 0, 1e6, NULL,
   "SMs a collective's kernel holds while it runs (NCCL: one CTA per channel); 0: overlap is free", NULL},
};
#define NHW ((int)(sizeof hw_table / sizeof hw_table[0]))

void ptdp_sim_hw_print_help(FILE *out)
{
  hw_file f;
  ptdp_options o = {.table = hw_table, .count = NHW, .target = &f};
  ptdp_options_print_help(&o, out);
}

_Static_assert(NHW == PTDP_SIM_HW_KEYS, "PTDP_SIM_HW_KEYS (ptdp/sim.h) counts the hardware file's keys");

const char *ptdp_sim_hw_key(int i) { return i >= 0 && i < NHW ? hw_table[i].name : "?"; }
const char *ptdp_sim_hw_default(int i) { return i >= 0 && i < NHW ? hw_table[i].deflt : "?"; }

int ptdp_sim_hw_read(const char *path, ptdp_sim_hw *hw)
{
  hw_file f;
  ptdp_options o;
  memset(&f, 0, sizeof f);
  memset(hw, 0, sizeof *hw);
  PTDP_CALL(ptdp_options_init(&o, hw_table, NHW, &f));
  int err = ptdp_options_read_deck(&o, path);
  if (!err) err = ptdp_sim_hw_tags_read(path, &o, hw); /* each value's provenance (hw_tag.c) */
  ptdp_options_free(&o);
  PTDP_CALL(err);
  PTDP_CHECK(f.peak16 > 0 || f.peak32 > 0, "hardware file %s: give peak-tflops-16 or peak-tflops-32", path);
  PTDP_CHECK(f.hbm > 0, "hardware file %s: memory-bandwidth-gbs is missing", path);
  PTDP_CHECK(f.mem_gb > 0, "hardware file %s: memory-gb is missing", path);
  PTDP_CHECK(f.intra_bw > 0, "hardware file %s: intra-node-bandwidth-gbs is missing", path);
  PTDP_CHECK(f.inter_bw > 0 || f.gpn >= 1e5, "hardware file %s: inter-node-bandwidth-gbs is missing", path);
  snprintf(hw->name, sizeof hw->name, "%s", f.name[0] ? f.name : path);
  hw->peak_flops_16 = f.peak16 * 1e12;
  hw->peak_flops_32 = f.peak32 * 1e12;
  hw->gemm_efficiency = f.eta;
  hw->sm_count = f.sms;
  hw->tile_m = f.tm;
  hw->tile_n = f.tn;
  hw->gemm_k0 = f.k0;
  hw->kernel_launch = f.launch_us * 1e-6;
  hw->memory_bandwidth = f.hbm * 1e9;
  hw->memory_bytes = f.mem_gb * 1e9;
  hw->gpus_per_node = f.gpn;
  hw->intra_bandwidth = f.intra_bw * 1e9;
  hw->intra_latency = f.intra_lat * 1e-6;
  hw->inter_bandwidth = f.inter_bw * 1e9;
  hw->inter_latency = f.inter_lat * 1e-6;
  hw->nics_per_node = f.nics;
  for (int i = 0; i < PTDP_SIM_CPU_OPS; i++) hw->cpu_op[i] = f.cpu_ns[i] * 1e-9;
  hw->cores_per_node = f.cores;
  hw->threads_per_rank = f.threads;
  hw->intra_allgather_bandwidth = f.ag_bw * 1e9;
  hw->intra_reduce_scatter_bandwidth = f.rs_bw * 1e9;
  PTDP_CHECK(f.coll_sms < f.sms, "hardware file %s: collective-sms (%g) must be below sm-count (%g)", path, f.coll_sms,
             f.sms);
  hw->collective_sms = f.coll_sms;
  hw->nvlink_sharp = f.nvls >= 0.5;
  hw->flash_efficiency_fwd = f.flash_fwd;
  hw->flash_efficiency_bwd = f.flash_bwd;
  hw->gemm_stack = (int)f.stack + PTDP_SIM_IMPL_2021;
  return 0;
}

const char *ptdp_sim_cpu_op_key(ptdp_sim_cpu_op op)
{
  for (int i = 0; i < NHW; i++)
    if (hw_table[i].offset == HOFF(cpu_ns[0]) + (size_t)op * sizeof(double)) return hw_table[i].name;
  return "?";
}

double *ptdp_sim_hw_field(ptdp_sim_hw *hw, const char *key)
{
  static const struct {
    const char *key;
    size_t off;
  } f[] = {
#define F(k, field) {k, offsetof(ptdp_sim_hw, field)}
    F("peak-tflops-16", peak_flops_16), F("peak-tflops-32", peak_flops_32), F("gemm-efficiency", gemm_efficiency),
    F("gemm-k0", gemm_k0), F("kernel-launch-us", kernel_launch), F("memory-bandwidth-gbs", memory_bandwidth),
    F("intra-node-bandwidth-gbs", intra_bandwidth), F("intra-node-latency-us", intra_latency),
    F("inter-node-bandwidth-gbs", inter_bandwidth), F("inter-node-latency-us", inter_latency),
    F("intra-node-allgather-bandwidth-gbs", intra_allgather_bandwidth),
    F("intra-node-reduce-scatter-bandwidth-gbs", intra_reduce_scatter_bandwidth),
    F("flash-attention-efficiency-forward", flash_efficiency_fwd),
    F("flash-attention-efficiency-backward", flash_efficiency_bwd), F("collective-sms", collective_sms),
#undef F
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (!strcmp(f[i].key, key)) return (double *)((char *)hw + f[i].off);
  for (int op = 0; op < PTDP_SIM_CPU_OPS; op++)
    if (!strcmp(ptdp_sim_cpu_op_key((ptdp_sim_cpu_op)op), key)) return &hw->cpu_op[op];
  return NULL;
}

/* ---- ptdp-sim's own keys ---- */

#define SOFF(f) offsetof(ptdp_sim_options, f)
static const ptdp_option sim_table[] = {
  {"hardware", PTDP_OPT_STRING, SOFF(hardware), "", 0, 0, NULL, "hardware file (inputs/hw/NAME.hw)", NULL},
  {"world-size", PTDP_OPT_INT, SOFF(world_size), "0", 0, 1e9, NULL,
   "devices (ranks) n = t p d; 0 means tensor x pipeline size (d = 1)", NULL},
  {"out", PTDP_OPT_STRING, SOFF(out), "", 0, 0, NULL, "write the prediction as a run file (HDF5) here", NULL},
  {"calibrate", PTDP_OPT_LIST, SOFF(calibrate), "", 0, 0, NULL,
   "run files of short ptdp-train runs: fit the hardware file's efficiency and bandwidth keys to them and write "
   "the calibrated file to --out (ptdp-sim(1), CALIBRATION); no deck",
   NULL},
  {"explain", PTDP_OPT_BOOL, SOFF(explain), "false", 0, 0, NULL,
   "print one iteration as a tree: stage, layer, operator, collective", NULL},
  {"fusion", PTDP_OPT_ENUM, SOFF(fusion), "megatron", 0, 0, "none|megatron|cpu",
   "fused operators of the modelled implementation: none, Megatron's (LayerNorm, scale-mask-softmax, "
   "bias-GeLU, bias-dropout-add), or ptdp's CPU backend (its attention core fused; per-element costs from "
   "the hardware file's cpu-*-ns keys)",
   NULL},
  {"scatter-gather", PTDP_OPT_BOOL, SOFF(scatter_gather), "true", 0, 0, NULL,
   "pipeline messages split over the t ranks and all-gathered over NVLink (Narayanan et al. Sec. 4.1)", NULL},
  {"overlap-grad-reduce", PTDP_OPT_BOOL, SOFF(overlap_grad_reduce), "false", 0, 0, NULL,
   "Megatron's: the DP reduction runs bucket by bucket (ddp-bucket-size) as each model chunk's last backward "
   "makes its gradients, only the rest exposed (ptdp-train, fusion none or cpu, always overlaps)",
   NULL},
  {"overlap-param-gather", PTDP_OPT_BOOL, SOFF(overlap_param_gather), "false", 0, 0, NULL,
   "Megatron's: the distributed optimizer's parameter all-gather runs bucket by bucket ahead of the next "
   "iteration's first forward instead of after the step",
   NULL},
  {"async-tp-allreduce", PTDP_OPT_BOOL, SOFF(async_tp_allreduce), "true", 0, 0, NULL,
   "backward TP all-reduce (SP: reduce-scatter) of a column-parallel GEMM's input gradient overlapped with its "
   "weight-gradient GEMM (Megatron since late 2021; false for 2021's Megatron)",
   NULL},
  {"allreduce-algorithm", PTDP_OPT_ENUM, SOFF(allreduce), "auto", 0, 0, "auto|ring|tree|hierarchical",
   "all-reduce algorithm of every group that crosses nodes (DP, TP beyond a node): ring, NCCL's tree (a chain "
   "in the node, a double binary tree between nodes), hierarchical (reduce-scatter in the node, all-reduce between "
   "nodes, all-gather; NVLink SHARP's), or the fastest NCCL considers for the size",
   NULL},
  {"software-efficiency", PTDP_OPT_REAL, SOFF(software_efficiency), "1", 0.01, 2, NULL,
   "multiplies the hardware file's gemm-efficiency (the modelled stack's GEMMs against the file's stack; an "
   "implementation sets it: 2021's 1, 2022's and megatron-core's 1.055, over the file's gemm-efficiency-stack; "
   "ptdp(7), VALIDATION OF THE SIMULATOR)",
   NULL},
  {"implementation", PTDP_OPT_ENUM, SOFF(implementation), "auto", 0, 0,
   "keys|megatron-2021|megatron-2022|megatron-core|auto",
   "the stack modelled, setting the keys not given: megatron-2021 (no async TP all-reduce, unfused attention), "
   "megatron-2022 (async TP all-reduce, its GEMM rate), megatron-core (as 2022, plus flash attention for "
   "attention-backend auto, Transformer Engine's bias and GeLU in the GEMMs' epilogues); keys: none; auto: "
   "megatron-core on a hardware file measured with today's stack (gemm-efficiency-stack megatron-core), else keys",
   NULL},
  {"tp-comm-overlap", PTDP_OPT_BOOL, SOFF(tp_comm_overlap), "false", 0, 0, NULL,
   "Megatron's (Transformer Engine's userbuffers, sequence parallel, TP within a node): each TP all-gather and "
   "reduce-scatter pipelined with its GEMM in t chunks",
   NULL},
  {"train-tokens", PTDP_OPT_REAL, SOFF(train_tokens), "300e9", 0, 1e18, NULL,
   "tokens for the training-time estimate (Narayanan et al. eq. 4 beside the simulated rate)", NULL},
  {"memory-margin", PTDP_OPT_REAL, SOFF(memory_margin), "0.95", 0.1, 1, NULL,
   "fraction of device memory a run may use (allocator, library work space)", NULL},
};
#define NSIM ((int)(sizeof sim_table / sizeof sim_table[0]))

int ptdp_sim_options_init(ptdp_options *opt, ptdp_sim_options *o)
{
  memset(o, 0, sizeof *o);
  return ptdp_options_init(opt, sim_table, NSIM, o);
}

/* The GEMM rate of each stack against 2021's (on which the A100 file is calibrated): 2022's from
 * Korthikanti et al. Table 4's layer (ptdp(7), VALIDATION OF THE SIMULATOR); megatron-core's
 * taken as 2022's (no measurement on the A100 says otherwise). */
static double stack_gemm_rate(int impl) { return impl == PTDP_SIM_IMPL_2021 ? 1.0 : 1.055; }

int ptdp_sim_options_resolve(const ptdp_options *opt, ptdp_sim_options *o, const ptdp_sim_hw *hw)
{
  if (o->implementation == PTDP_SIM_IMPL_AUTO)
    o->implementation = hw->gemm_stack == PTDP_SIM_IMPL_CORE ? PTDP_SIM_IMPL_CORE : PTDP_SIM_IMPL_KEYS;
  const ptdp_sim_impl im = o->implementation;
  o->te_fused = im == PTDP_SIM_IMPL_CORE;
  if (im == PTDP_SIM_IMPL_KEYS) return 0;
  if (!ptdp_options_given(opt, "async-tp-allreduce")) o->async_tp_allreduce = im != PTDP_SIM_IMPL_2021;
  if (!ptdp_options_given(opt, "software-efficiency"))
    o->software_efficiency =
      stack_gemm_rate(im) / stack_gemm_rate(hw->gemm_stack ? hw->gemm_stack : PTDP_SIM_IMPL_2021);
  return 0;
}

int ptdp_sim_options_read_hw(const ptdp_options *opt, ptdp_sim_options *o, ptdp_sim_hw *hw)
{
  PTDP_CALL(ptdp_sim_hw_read(o->hardware, hw));
  if (hw->untagged)
    fprintf(stderr,
            "ptdp: warning: hardware file %s has no provenance tags (written before them?): its %d values are read "
            "as UNTAGGED; end each value's line with # MEASURED, # DERIVED or # ASSUMED (ptdp-hardware(5), "
            "PROVENANCE)\n",
            o->hardware, hw->untagged);
  /* a CPU node's file (jobs/measure_cpu_hw.sh) describes ptdp's CPU backend: model it unless told otherwise */
  if (!ptdp_options_given(opt, "fusion") && ptdp_sim_hw_is_cpu(hw)) o->fusion = PTDP_SIM_FUSION_CPU;
  return ptdp_sim_options_resolve(opt, o, hw); /* the implementation's defaults */
}

int ptdp_sim_flash(const ptdp_model_keys *a, const ptdp_sim_options *o)
{
  return a->attention_backend == PTDP_ATTN_FLASH ||
         (a->attention_backend == PTDP_ATTN_AUTO && o->implementation == PTDP_SIM_IMPL_CORE);
}
