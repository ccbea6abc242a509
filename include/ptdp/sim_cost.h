/* ptdp-sim's cost model, the parts ptdp_sim_run (ptdp/sim.h) calls: the hardware file and its
 * provenance tags, ptdp-sim's own keys, the cost terms (GEMM, memory-bound operators, collectives
 * by topology: cost.c, collective.c) and the operators of a layer, the embedding and the head on
 * one rank (layer.c from the layer's description; layer_cpu.c for ptdp's CPU backend).  Pure: no
 * MPI, no device.
 *
 *   GEMM        t = F / (R eta w(M, N) k(K)) + launch, and never below the bytes it moves over
 *               HBM: R the device's 16-bit (or fp32) peak, eta the fraction large GEMMs reach,
 *               w the wave quantisation of (M/tm)(N/tn) output tiles over the SMs, and
 *               k(K) = K / (K + K0) the K-loop's fixed prologue/epilogue (NVIDIA, "Matrix
 *               Multiplication Background User's Guide": tile and wave quantisation);
 *   memory-bound operators   bytes moved / achievable HBM bandwidth + launch; which operators
 *               are fused is the implementation's (fusion key);
 *   collectives latency-bandwidth (alpha-beta) by topology (collective.c): a group's ranks per
 *               node and nodes from the layout, NVLink within a node, between nodes the share of
 *               the node's NICs its members have; NCCL's ring and tree (and NVLink SHARP's
 *               hierarchical all-reduce) with a latency per hop, the fastest for the size. */
#ifndef PTDP_SIM_COST_H
#define PTDP_SIM_COST_H

#include "ptdp/layer_desc.h"
#include "ptdp/model_config.h"
#include "ptdp/options.h"
#include "ptdp/params.h"

#include <stdio.h>

/* The non-GEMM operators of ptdp's CPU backend (src/backend/cpu.c, cpu_attention.c) whose cost per
 * element the hardware file gives (key cpu-NAME-ns; ptdp_sim_cpu_op_key).  Each is compute- or
 * cache-bound on a CPU (exponentials, the dropout mask's hash, column sums), not DRAM-bound. */
typedef enum {
  PTDP_SIM_CPU_ELEMENTWISE = 0, /* y += x, y += bias, copies, a mask applied: per element */
  PTDP_SIM_CPU_DROPOUT,         /* a dropout mask drawn and applied (counter-based hash): per element drawn */
  PTDP_SIM_CPU_LAYERNORM_FWD,   /* LayerNorm forward, per element of [rows, h] */
  PTDP_SIM_CPU_LAYERNORM_BWD,   /* its backward, input and parameter gradients */
  PTDP_SIM_CPU_GELU_FWD,        /* GeLU, per element */
  PTDP_SIM_CPU_GELU_BWD,
  PTDP_SIM_CPU_BIAS_GRAD,       /* a bias gradient: column sums of [rows, cols], per element */
  PTDP_SIM_CPU_SOFTMAX_FWD,     /* attention core beyond its GEMMs: causal softmax, per score element b al s s */
  PTDP_SIM_CPU_SOFTMAX_BWD,
  PTDP_SIM_CPU_XENT_FWD,        /* cross entropy's max and sum-of-exponentials passes, per logit */
  PTDP_SIM_CPU_XENT_GRAD,       /* its gradient pass (softmax - one-hot), per logit */
  PTDP_SIM_CPU_OPTIMIZER,       /* AdamW step, the gradient norm's sum of squares and clipping scale, per parameter */
  PTDP_SIM_CPU_OPS
} ptdp_sim_cpu_op;

/* Where a hardware file's value comes from (ptdp-hardware(5), PROVENANCE): the tag at the end of
 * its line, "key = value  # KIND ...".  The kind sets the value's uncertainty band (ptdp/sim.h,
 * PTDP_SIM_BAND_*): small for MEASURED, wider for DERIVED, widest for ASSUMED. */
typedef enum {
  PTDP_SIM_PROV_DEFAULT = 0, /* not in the file: the key's default */
  PTDP_SIM_PROV_UNTAGGED,    /* in a file written before the tags (none on any line): read with a warning */
  PTDP_SIM_PROV_MEASURED,    /* on a machine of ours: machine, date, command, the figure */
  PTDP_SIM_PROV_DERIVED,     /* from measured values by a stated rule */
  PTDP_SIM_PROV_ASSUMED      /* a datasheet or a published figure, with its source */
} ptdp_sim_prov;

#define PTDP_SIM_HW_KEYS 38 /* keys of the hardware file (ptdp_sim_hw_print_help) */

/* One value's provenance, as its tag says.  MEASURED: machine, date, basis = the command,
 * detail = the figure.  DERIVED: basis = the values it comes from, detail = the rule.  ASSUMED:
 * detail = the source. */
typedef struct {
  ptdp_sim_prov kind;
  int line;          /* of the file; 0: not given */
  char value[64];    /* the value as the file writes it (file units) */
  char machine[64];
  char date[32];
  char basis[384];
  char detail[640];
} ptdp_sim_hw_tag;

/* A cluster: one device kind, nodes of gpus-per-node devices (inputs/hw/NAME.hw; units in the
 * field names' comments are those of the file; the struct holds SI units after reading). */
typedef struct {
  char name[PTDP_OPT_STRLEN];
  double peak_flops_16;       /* FLOP/s, dense 16-bit tensor-core peak (file: TFLOP/s) */
  double peak_flops_32;       /* FLOP/s, fp32 peak (file: TFLOP/s) */
  double gemm_efficiency;     /* eta: fraction of peak a large, well-shaped GEMM reaches */
  double sm_count;            /* streaming multiprocessors (CPU: cores per rank, 1 tile each) */
  double tile_m, tile_n;      /* output tile of the GEMM library's large kernels */
  double gemm_k0;             /* K0 of k(K) = K / (K + K0) */
  double kernel_launch;       /* s per kernel (file: us) */
  double memory_bandwidth;    /* B/s achievable by streaming kernels (file: GB/s) */
  double memory_bytes;        /* device memory (file: GB = 1e9 bytes) */
  double gpus_per_node;
  double intra_bandwidth;     /* B/s per device per direction achievable by collectives in a node (file: GB/s) */
  double intra_latency;       /* s per collective step in a node (file: us) */
  double inter_bandwidth;     /* B/s per NIC per direction achievable (file: GB/s) */
  double inter_latency;       /* s per step between nodes (file: us) */
  double nics_per_node;
  /* ptdp's CPU backend (--fusion cpu; ptdp(7), PTDP-SIM ON THE CPU): s per element of each of
   * its non-GEMM operators (file: ns), measured on one rank by jobs/measure_cpu_hw.sh; 0 where
   * the file does not give it (GPU files). */
  double cpu_op[PTDP_SIM_CPU_OPS];
  double cores_per_node;      /* CPU cores the node's ranks share; 0: every rank has its own device */
  double threads_per_rank;    /* threads of the rank the file's rates were measured with */
  double intra_allgather_bandwidth;      /* B/s, bus bandwidth of the node's all-gather (file: GB/s); 0: intra */
  double intra_reduce_scatter_bandwidth; /* the same for reduce-scatter: MPI libraries pick other algorithms */
  double flash_efficiency_fwd; /* fraction of the 16-bit peak the fused (flash) attention kernel reaches on
                                * the FLOPs it does (causal: half the s x s), forward; 0: not given */
  double flash_efficiency_bwd; /* the same, backward (five s x s GEMMs: the scores recomputed) */
  int gemm_stack;             /* ptdp_sim_impl whose GEMMs gemm_efficiency describes (2021's for the
                               * A100 file, calibrated on Narayanan et al.; today's where measured) */
  int nvlink_sharp;           /* the node's switches reduce (NVSwitch 3, NCCL's NVLS): hierarchical all-reduce */
  double collective_sms;      /* SMs a running collective's kernel holds (one CTA per NCCL channel):
                               * a GEMM it overlaps runs on the others, so hiding comm of time x
                               * costs the GEMM x collective_sms / sm_count */
  /* each key's provenance, in the order of the key table (ptdp_sim_hw_key, ptdp_sim_hw_tag_of);
   * untagged: how many values a file without tags gave (ptdp-sim warns) */
  ptdp_sim_hw_tag tag[PTDP_SIM_HW_KEYS];
  int untagged;
} ptdp_sim_hw;

/* The implementation modelled: which operators are fused, whether DP overlaps backward. */
typedef enum { PTDP_SIM_FUSION_NONE = 0, PTDP_SIM_FUSION_MEGATRON = 1, PTDP_SIM_FUSION_CPU = 2 } ptdp_sim_fusion;
typedef enum {
  PTDP_SIM_ALLREDUCE_AUTO = 0, PTDP_SIM_ALLREDUCE_RING, PTDP_SIM_ALLREDUCE_TREE, PTDP_SIM_ALLREDUCE_HIERARCHICAL
} ptdp_sim_allreduce;

/* The software stack modelled (--implementation): what code exists (fused attention, Transformer
 * Engine's fused paths, the async TP all-reduce) and its GEMM rate; the overlap keys stay the
 * user's, opt-in as in Megatron.  KEYS: no preset, every key as given or defaulted.  AUTO (the
 * default): megatron-core on a hardware file measured with today's stack (gemm-efficiency-stack
 * megatron-core), else KEYS; ptdp_sim_options_resolve settles it. */
typedef enum {
  PTDP_SIM_IMPL_KEYS = 0, PTDP_SIM_IMPL_2021, PTDP_SIM_IMPL_2022, PTDP_SIM_IMPL_CORE, PTDP_SIM_IMPL_AUTO
} ptdp_sim_impl;

/* ptdp-sim's own keys (beside ptdp-train's). */
typedef struct {
  char hardware[PTDP_OPT_STRLEN];
  long long world_size;
  char out[PTDP_OPT_STRLEN];
  char calibrate[PTDP_OPT_STRLEN]; /* run files to fit the hardware file to (ptdp/calibrate.h), space-separated */
  int explain;
  ptdp_sim_fusion fusion;
  int scatter_gather;        /* Narayanan et al. Sec. 4.1: p2p of b s h / t per rank + NVLink all-gather */
  int overlap_grad_reduce;   /* DP reduction bucket by bucket during the backward (ptdp-train: always) */
  int overlap_param_gather;  /* distributed optimizer: parameter all-gather ahead of the next forward */
  ptdp_sim_allreduce allreduce;
  double software_efficiency; /* multiplies eta: the GEMM library and stack of the modelled run */
  double train_tokens;       /* tokens for the training-time estimate */
  double memory_margin;      /* fraction of device memory usable (allocator fragmentation, context) */
  int async_tp_allreduce;    /* backward TP all-reduce (SP: reduce-scatter) hidden behind the weight-gradient GEMM */
  ptdp_sim_impl implementation;
  int tp_comm_overlap;       /* TE userbuffers: SP's all-gather / reduce-scatter pipelined with their GEMMs */
  int te_fused;              /* set by the implementation: TE's bias and GeLU in the GEMMs' epilogues */
} ptdp_sim_options;

/* After the keys and the hardware file are read: the implementation's defaults for the keys not
 * given (opt: ptdp-sim's table, to know which were), and what follows from it. */
int ptdp_sim_options_resolve(const ptdp_options *opt, ptdp_sim_options *o, const ptdp_sim_hw *hw);
/* The hardware file o->hardware into hw, then the keys that follow from it and were not given:
 * fusion cpu for a CPU node's file (ptdp_sim_hw_is_cpu), the implementation's (ptdp_sim_options_resolve). */
int ptdp_sim_options_read_hw(const ptdp_options *opt, ptdp_sim_options *o, ptdp_sim_hw *hw);
/* Whether the modelled run uses the fused (flash) attention: attention-backend flash, or auto with
 * a stack that has it (megatron-core's). */
int ptdp_sim_flash(const ptdp_model_keys *a, const ptdp_sim_options *o);

/* Time of one collective over n ranks of S bytes on a link of bandwidth B and step latency a. */
double ptdp_sim_allreduce_time(ptdp_sim_allreduce algo, int n, double bytes, double bw, double alpha);
double ptdp_sim_allgather_time(int n, double bytes, double bw, double alpha); /* also reduce-scatter; S = full size */
/* A group of n ranks spaced stride apart in rank order, placed on nodes of gpus-per-node
 * (collective.c): g of its ranks per node, k nodes; the bus bandwidth of a ring or tree over it
 * (NVLink within a node; between nodes min(NVLink, nic_share x the NIC's rate), nic_share =
 * nics-per-node x g / gpus-per-node: every group of its kind runs at once and they share the
 * node's NICs); latency per hop inside a node and between nodes. */
typedef struct {
  int n, g, k;
  double bw, nvlink_bw, nic_share;
  double alpha_intra, alpha_inter;
} ptdp_sim_group;
typedef enum { PTDP_SIM_COLL_ALLREDUCE = 0, PTDP_SIM_COLL_ALLGATHER, PTDP_SIM_COLL_REDUCE_SCATTER } ptdp_sim_coll;
ptdp_sim_group ptdp_sim_group_of(const ptdp_sim_hw *hw, int n, int stride);
/* A collective of S bytes (the full tensor) over the group; all-reduce by algo (auto: the
 * fastest NCCL considers), all-gather and reduce-scatter by ring; *chosen (may be NULL) says
 * which algorithm was timed. */
double ptdp_sim_collective_time(const ptdp_sim_hw *hw, const ptdp_sim_group *gr, ptdp_sim_coll kind,
                                ptdp_sim_allreduce algo, double bytes, ptdp_sim_allreduce *chosen);
/* A stage's times from the replay that its DP reduction needs (s from the iteration's start). */
#define PTDP_SIM_MAX_CHUNKS 64
typedef struct {
  double end;                      /* its last item ends */
  double first_start, first_fwd;   /* its first item (a forward) starts, and lasts */
  int v;                           /* model chunks */
  double bwd_start[PTDP_SIM_MAX_CHUNKS], bwd_end[PTDP_SIM_MAX_CHUNKS]; /* each chunk's last backward item */
} ptdp_sim_stage_times;
/* The overlapped DP reduction of np parameters, v chunks of np / v each in buckets of bucket
 * elements (elem_bytes each); chunk c's buckets ready evenly through [t0[c], t1[c]], the last at
 * t1[c], their collectives one after another: when the last ends (*busy: their summed time). */
double ptdp_sim_bucket_finish(const ptdp_sim_hw *hw, const ptdp_sim_group *g, ptdp_sim_coll kind,
                              ptdp_sim_allreduce algo, double np, double bucket, double elem_bytes, int v,
                              const double *t0, const double *t1, double *busy);
/* The distributed optimizer's parameter all-gather overlapped with the next forward
 * (overlap-param-gather): the first chunk's buckets, bucket j needed (j - 1) / nb of the way
 * through the forward item of duration fwd that starts slack after the gather does; the time
 * the forward waits (*busy: every chunk's gathers' summed time). */
double ptdp_sim_gather_exposed(const ptdp_sim_hw *hw, const ptdp_sim_group *g, double np, double bucket,
                               double elem_bytes, int v, double slack, double fwd, double *busy);
/* One GEMM C[M,N] += A[M,K] B[K,N], batch of them, elements of e bytes, peak R (FLOP/s). */
double ptdp_sim_gemm_time(const ptdp_sim_hw *hw, double R, double M, double N, double K, double batch, double e);
/* A memory-bound operator moving bytes. */
double ptdp_sim_membound_time(const ptdp_sim_hw *hw, double bytes);
/* What hiding a collective of time x behind compute still costs that compute: x c / sm-count,
 * the SMs the collective holds (ptdp(7), THE SIMULATOR'S COST MODEL). */
double ptdp_sim_overlap_cost(const ptdp_sim_hw *hw, double hidden);

/* Times are seconds of one micro-batch on one rank. */
typedef enum {
  PTDP_SIM_GEMM = 0, PTDP_SIM_ATTENTION, PTDP_SIM_MEMBOUND, PTDP_SIM_TP, PTDP_SIM_PP, PTDP_SIM_DP,
  PTDP_SIM_OPTIMIZER, PTDP_SIM_EMBEDDING_AR, PTDP_SIM_COMPONENTS
} ptdp_sim_component;
const char *ptdp_sim_component_name(ptdp_sim_component c);

/* One operator or collective of a layer (or of the embedding / head). */
typedef struct {
  const char *name;
  ptdp_sim_component comp;
  double fwd, bwd;     /* forward, backward (s), exposed */
  double hidden;       /* backward communication hidden behind this layer's compute (s) */
  int selective;       /* recomputed by selective recomputation (attention core) */
} ptdp_sim_op;

#define PTDP_SIM_MAX_OPS 40
typedef struct {
  int n;
  ptdp_sim_op op[PTDP_SIM_MAX_OPS];
} ptdp_sim_oplist;

/* One rank's sizes (ptdp_rank_shape of ptdp/shape.h, the model's own) as the cost models use
 * them: N = b s tokens, Nl = N / t under sequence parallelism, hl = al hd, fl = f / t, al = a / t,
 * hd = h / a (or kv-channels), vl = V' / t, qkv = (al + 2 gl) hd the QKV width (3 hl without
 * grouped-query attention). */
typedef struct {
  double N, Nl, s, b, h, hl, fl, al, hd, vl, qkv;
  int t, sp;
} ptdp_sim_dims;
/* The vocabulary a prediction assumes when the deck gives none: GPT-2's. */
#define PTDP_SIM_DEFAULT_VOCAB 50257
/* The model the keys make (ptdp_model_config_of on t p ranks, ptdp-sim's default vocabulary when
 * none is given) and its shape. */
ptdp_model_config ptdp_sim_model_config(const ptdp_model_keys *a);
ptdp_model_shape ptdp_sim_model_shape(const ptdp_model_keys *a);
ptdp_sim_dims ptdp_sim_dims_of(const ptdp_model_keys *a);

/* What one layer, the embedding and the head cost on one rank for one micro-batch. */
int ptdp_sim_layer_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_oplist *ops);
/* The layer the keys describe (ptdp_layer_describe on TP rank 0), and the GPU cost model's
 * operators for a given description d: one or more per operation, priced by its kind. */
void ptdp_sim_layer_desc(const ptdp_model_keys *a, const ptdp_sim_options *o, ptdp_layer_desc *d);
int ptdp_sim_layer_ops_of(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o,
                          const ptdp_layer_desc *d, ptdp_sim_oplist *ops);
int ptdp_sim_embedding_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_oplist *ops);
int ptdp_sim_head_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_oplist *ops);

/* ptdp's CPU backend (layer_cpu.c, --fusion cpu): the same op lists for the operators it runs. */
int ptdp_sim_cpu_layer_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_oplist *ops);
int ptdp_sim_cpu_embedding_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_oplist *ops);
int ptdp_sim_cpu_head_ops(const ptdp_model_keys *a, const ptdp_sim_hw *hw, const ptdp_sim_options *o, ptdp_sim_oplist *ops);
/* The optimizer step of a rank updating np parameters (--fusion cpu): np x cpu-optimizer-ns. */
double ptdp_sim_cpu_optimizer_time(const ptdp_sim_hw *hw, double np);
/* Ranks sharing a node's cores: max(1, ranks x threads / cores), ranks = min(world, gpus-per-node);
 * 1 when the file gives no cores-per-node. */
double ptdp_sim_core_sharing(const ptdp_sim_hw *hw, int world);
/* The attention core's GEMM FLOPs for one (sample, head) pair, forward and backward, as the CPU
 * backend blocks them (causal: query block [q0, q1) meets keys [0, q1)). */
void ptdp_sim_cpu_attention_flops(double s, double hd, double *fwd, double *bwd);
/* Whether the file gives any cpu-*-ns key (a CPU node's file: ptdp-sim then defaults to --fusion cpu). */
int ptdp_sim_hw_is_cpu(const ptdp_sim_hw *hw);
/* The hardware-file key of a CPU operator (cpu-layernorm-forward-ns, ...). */
const char *ptdp_sim_cpu_op_key(ptdp_sim_cpu_op op);

/* Read a hardware file (key = value  # PROVENANCE; keys: ptdp_sim_hw_print_help; tags:
 * ptdp-hardware(5)).  A file with a tag on any line must tag every value but name; a malformed
 * tag is an error naming FILE:LINE.  A file with no tag at all (written before the tags) is
 * read, its values UNTAGGED and counted in hw->untagged. */
int ptdp_sim_hw_read(const char *path, ptdp_sim_hw *hw);
void ptdp_sim_hw_print_help(FILE *out);
/* The name of key i of the file (0 <= i < PTDP_SIM_HW_KEYS), and the provenance of a key (NULL:
 * no such key). */
const char *ptdp_sim_hw_key(int i);
const ptdp_sim_hw_tag *ptdp_sim_hw_tag_of(const ptdp_sim_hw *hw, const char *key);
const char *ptdp_sim_prov_name(ptdp_sim_prov kind);
/* --explain's hardware part: every key with its value and provenance. */
void ptdp_sim_hw_explain(const ptdp_sim_hw *hw, FILE *out);
/* ptdp-sim's own keys: defaults, parse (argv after the deck and train keys are split out). */
int ptdp_sim_options_init(ptdp_options *opt, ptdp_sim_options *o);

#endif
