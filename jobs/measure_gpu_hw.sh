#!/bin/sh
# Measure this machine's GPU through ptdp's CUDA backend and write a ptdp-sim hardware file
# (ptdp-hardware(5)), the twin of jobs/measure_cpu_hw.sh:
#   MEASURED on GPU 0 by a probe linked with the build's libptdp.a (bf16 storage, the path
#   ptdp-train takes on cuda): an n^3 GEMM on random inputs (gemm-efficiency: the rate over the
#   16-bit peak, divided by ptdp-sim's own wave and K terms for that shape, so that ptdp-sim
#   predicts the measured time back), a device-to-device copy (memory-bandwidth-gbs: bytes read
#   and written over the time), a one-element add issued 1000 times (kernel-launch-us), the
#   backend's fused attention forward and backward at s 2048, 16 heads of 128, causal
#   (flash-attention-efficiency-*: its causal FLOPs over the time and the peak), the SM count and
#   the device memory;
#   ASSUMED, each from an option (defaults: a DGX H100's datasheets, NVLink 4 and NDR 400 Gb/s at
#   the A100 file's achieved fractions): the peaks (from the GPU's name when it is an A100, H100
#   or H200), the node's GPUs (MEASURED when counted), NICs and their rates.  One GPU cannot
#   measure the network: measure NCCL with nccl-tests and give the rates.
#   Every value's line ends with its provenance tag (ptdp-hardware(5), PROVENANCE): MEASURED (the
#   machine word, the UTC time, this command as given, the figure the probe printed) or ASSUMED
#   (the datasheet or default it comes from, or the option that gave it).
#
# usage: jobs/measure_gpu_hw.sh [--out FILE.hw] [--build DIR] [--name TEXT] [--machine WORD]
#          [--peak-tflops-16 T] [--peak-tflops-32 T] [--gpus-per-node N] [--nics-per-node N]
#          [--intra-node-bandwidth-gbs B] [--inter-node-bandwidth-gbs B] [--gemm-n N]
#   defaults: inputs/hw/gpu-local.hw, build/, the GPU's name, HOST-GPU (the short host name, then
#   nvidia-smi's name of GPU 0 in lower case without "NVIDIA", words joined by dashes:
#   vm-h200), ...  --machine WORD replaces the whole machine word of the MEASURED tags (letters,
#   digits, . _ + -; at most 63).
# Exit: 0 written; 2 a bad argument (nothing measured); 77 no usable GPU (nothing written; on a
# CPU node use jobs/measure_cpu_hw.sh); 1 the probe failed.  NVIDIA_SMI names the nvidia-smi to
# ask, MEASURE_GPU_PROBE a program run instead of the probe built against the build (the tests:
# a mock that prints what the probe prints, so that the file is written without a GPU).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
me=measure_gpu_hw.sh
usage() {
  sed -n 's/^# \{0,1\}//; /^usage:/,/^Exit:/p' "$0"
}
bad() { echo "$me: $*" >&2; echo "$me: usage: see $me --help" >&2; exit 2; }
# quote WORD: WORD as a shell word in the tags' command (single quotes around anything but plain
# characters; the tag's double quotes cannot hold a quote, so no value may have one)
quote() {
  case $1 in
  '' | *[!A-Za-z0-9._/:=+,@-]*) printf "'%s'" "$1" ;;
  *) printf '%s' "$1" ;;
  esac
}
number() {
  echo "$2" | grep -Eq '^[0-9]+([.][0-9]+)?([eE][+-]?[0-9]+)?$' || bad "$1 wants a positive number, got '$2'"
}

out=$top/inputs/hw/gpu-local.hw build=$top/build name="" machine="" peak16="" peak32="" gpn=""
nics="" intra="" inter="" gemm_n=8192 opts=""
while [ $# -gt 0 ]; do
  case $1 in
  --help | -h) usage; exit 0 ;;
  --out | --build | --name | --machine | --peak-tflops-16 | --peak-tflops-32 | --gpus-per-node | \
    --nics-per-node | --intra-node-bandwidth-gbs | --inter-node-bandwidth-gbs | --gemm-n)
    [ $# -ge 2 ] || bad "$1 wants a value"
    case $2 in *[\"\']*) bad "$1: no quotes in '$2' (it goes into the tags' quoted command)" ;; esac
    opts="$opts $1 $(quote "$2")"
    case $1 in
    --out) out=$2 ;;
    --build) build=$2 ;;
    --name) name=$2 ;;
    --machine) machine=$2 ;;
    --peak-tflops-16) number "$1" "$2"; peak16=$2 ;;
    --peak-tflops-32) number "$1" "$2"; peak32=$2 ;;
    --gpus-per-node) number "$1" "$2"; gpn=$2 ;;
    --nics-per-node) number "$1" "$2"; nics=$2 ;;
    --intra-node-bandwidth-gbs) number "$1" "$2"; intra=$2 ;;
    --inter-node-bandwidth-gbs) number "$1" "$2"; inter=$2 ;;
    --gemm-n) number "$1" "$2"; gemm_n=$2 ;;
    esac
    shift 2 ;;
  *) bad "unknown argument '$1'" ;;
  esac
done

# A GPU, or say clearly why not (before building anything)
smi=${NVIDIA_SMI:-nvidia-smi}
gpus=$("$smi" --query-gpu=name --format=csv,noheader 2> /dev/null) || gpus=""
if [ -z "$gpus" ]; then
  echo "$me: no GPU: '$smi' lists none (this script measures an NVIDIA GPU through ptdp's CUDA" \
    "backend; on a CPU node, jobs/measure_cpu_hw.sh); nothing written" >&2
  exit 77
fi
gpu=$(echo "$gpus" | head -n 1)
A="ASSUMED measure_gpu_hw.sh's"
# given: the ASSUMED tag of a value given on the command line
given() { echo "ASSUMED given to measure_gpu_hw.sh ($1 $2; source not recorded)"; }
if [ -n "$gpn" ]; then
  gpn_tag=$(given --gpus-per-node "$gpn")
else
  gpn=$(echo "$gpus" | wc -l) gpn_tag=""
fi
# the peaks from the name (datasheets, dense, SXM), else they must be given
case $gpu in
*H200*) d16=989 d32=67 ds="NVIDIA H200 Tensor Core GPU datasheet" kind=H200 ;;
*H100*) d16=989 d32=67 ds="NVIDIA H100 Tensor Core GPU datasheet, SXM" kind=H100 ;;
*A100*) d16=312 d32=19.5 ds="NVIDIA A100 Tensor Core GPU datasheet" kind=A100 ;;
*) d16="" d32="" ds="" kind="" ;;
esac
if [ -n "$peak16" ]; then p16_tag=$(given --peak-tflops-16 "$peak16"); else
  peak16=$d16 p16_tag="$A peaks for an $kind ($ds: 1979 TFLOP/s BF16 with sparsity, 989 dense)"
  [ "$kind" = A100 ] && p16_tag="$A peaks for an A100 ($ds: BF16 312 TFLOP/s dense)"
fi
if [ -n "$peak32" ]; then p32_tag=$(given --peak-tflops-32 "$peak32"); else
  peak32=$d32 p32_tag="$A peaks for an $kind ($ds: FP32 $d32 TFLOP/s)"
fi
[ -n "$peak16" ] && [ -n "$peak32" ] || bad "unknown GPU '$gpu': give --peak-tflops-16 and --peak-tflops-32"
[ -n "$name" ] || name="$gpu x $gpn (measured by $me)"
if [ -z "$machine" ]; then
  # NVIDIA H100 80GB HBM3 on host vm -> vm-h100-80gb-hbm3
  word=$(echo "$gpu" | sed 's/NVIDIA//g' | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9.]\{1,\}/-/g; s/^-//; s/-$//')
  host=$(hostname | sed 's/[.].*//' | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g')
  machine=$(printf '%s-%s' "$host" "${word:-gpu}" | cut -c1-63)
fi
if ! echo "$machine" | grep -Eq '^[A-Za-z0-9][A-Za-z0-9._+-]{0,62}$' ||
  echo "$machine" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}'; then
  bad "--machine wants one word of letters, digits, . _ + - (at most 63, not a date), got '$machine'"
fi
# the command that measured every MEASURED value, as given
cmd="jobs/measure_gpu_hw.sh$opts"
[ ${#cmd} -lt 384 ] || bad "the command is too long for a tag (383 characters): give a shorter --out or --build"
# the node's values: the options', else the defaults (a DGX H100's), each with its tag
if [ -n "$nics" ]; then nics_tag=$(given --nics-per-node "$nics"); else
  nics=8 nics_tag="$A default: a DGX H100's 8 x ConnectX-7 (NVIDIA DGX H100 datasheet)"
fi
if [ -n "$intra" ]; then intra_tag=$(given --intra-node-bandwidth-gbs "$intra"); else
  intra=345
  intra_tag="$A default: NVLink 4's 450 GB/s per direction x 0.77, the A100 file's achieved fraction (as inputs/hw/dgx-h200.hw)"
fi
if [ -n "$inter" ]; then inter_tag=$(given --inter-node-bandwidth-gbs "$inter"); else
  inter=46
  inter_tag="$A default: ConnectX-7 NDR 400 Gb/s = 50 GB/s x 0.92, the A100 file's NCCL fraction (source not recorded)"
fi
probe=${MEASURE_GPU_PROBE:-}
if [ -z "$probe" ]; then
  [ -f "$build/libptdp.a" ] && [ -f "$build/Makefile" ] || bad "no build in $build (give --build DIR: make there first)"
fi

mk() { sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/probe.c" <<'C'
/* GPU 0 through ptdp's CUDA backend in bf16: prints hardware-file lines, each value's followed by
 * "  # " and the figure it measured (measure_gpu_hw.sh puts MEASURED, the machine, the date and
 * the command between them), and "# CUDA runtime X.Y" for the stack's tag. */
#include "ptdp/backend.h"
#include "ptdp/error.h"
#include "ptdp/sim.h"
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmp(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
#define CK(x)                                                                                     \
  do {                                                                                            \
    if (x) {                                                                                      \
      fprintf(stderr, "probe: %s: %s\n", #x, ptdp_error_message());                               \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)
/* n random bf16 values in [-1, 1) (zeros would overstate the rate: less power, higher clocks) */
static float *random16(ptdp_backend *be, size_t n)
{
  void *d;
  uint16_t *h = malloc(n * 2);
  uint32_t x = 12345u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    const float f = (x >> 8) / 8388608.0f - 1;
    uint32_t u;
    memcpy(&u, &f, 4);
    h[i] = (uint16_t)(u >> 16);
  }
  CK(be->alloc(be, &d, n * 2));
  CK(be->to_device(be, d, h, n * 2));
  free(h);
  return d;
}
/* the median of reps timings of stmt, each between two synchronisations */
#define TIME(reps, stmt, med)                                                                     \
  do {                                                                                            \
    double t_[64];                                                                                \
    CK(be->synchronize(be));                                                                      \
    for (int r_ = 0; r_ < (reps); r_++) {                                                         \
      const double t0_ = now();                                                                   \
      stmt;                                                                                       \
      CK(be->synchronize(be));                                                                    \
      t_[r_] = now() - t0_;                                                                       \
    }                                                                                             \
    qsort(t_, (reps), sizeof t_[0], cmp);                                                         \
    med = t_[(reps) / 2];                                                                         \
  } while (0)
static void flash(ptdp_backend *be, double peak)
{
  ptdp_attn_desc d;
  memset(&d, 0, sizeof d);
  d.b = 1, d.s = 2048, d.al = 16, d.hd = 128;
  const size_t N = (size_t)d.b * d.s, w = (size_t)d.al * d.hd;
  float *qkv = random16(be, N * 3 * w), *ctx = random16(be, N * w), *dctx = random16(be, N * w);
  float *dq = random16(be, N * 3 * w), *lse;
  CK(be->alloc(be, (void **)&lse, (size_t)d.b * d.al * d.s * 4));
  double tf, tb;
  TIME(10, CK(be->flash_forward(be, &d, qkv, ctx, lse)), tf);
  TIME(10, CK(be->flash_backward(be, &d, qkv, ctx, lse, dctx, dq)), tb);
  const double F = 2.0 * d.b * d.al * (double)d.s * d.s * d.hd; /* the causal half of QK^T and PV */
  const char *what = "ptdp's fused attention, b 1 h 16 s 2048 hd 128, causal, median of 10";
  printf("# %s: %.3f ms forward, %.3f ms backward\n", what, tf * 1e3, tb * 1e3);
  printf("flash-attention-efficiency-forward = %.3f  # %s: %.3f ms forward, %.1f TFLOP/s = %.3f x %g\n", F / tf / peak,
         what, tf * 1e3, F / tf / 1e12, F / tf / peak, peak / 1e12);
  printf("flash-attention-efficiency-backward = %.3f  # %s: %.3f ms backward, %.1f TFLOP/s = %.3f x %g\n",
         2.5 * F / tb / peak, what, tb * 1e3, 2.5 * F / tb / 1e12, 2.5 * F / tb / peak, peak / 1e12);
}
int main(int argc, char **argv)
{
  if (argc < 3) return 1;
  const double peak = atof(argv[1]) * 1e12;
  const int n = atoi(argv[2]);
  ptdp_backend_options opt = {.num_threads = 1, .ranks_on_node = 1, .report = 1, .device = -1};
  ptdp_backend *be;
  int native = 0;
  struct cudaDeviceProp pr;
  if (ptdp_backend_create_typed(PTDP_BACKEND_CUDA, &opt, PTDP_BF16, &be, &native) ||
      cudaGetDeviceProperties(&pr, 0) != cudaSuccess) {
    fprintf(stderr, "probe: %s\n", ptdp_error_message());
    return 77;
  }
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  printf("# CUDA runtime %d.%d\n", rt / 1000, rt % 1000 / 10);
  float *A = random16(be, (size_t)n * n), *B = random16(be, (size_t)n * n), *C = random16(be, (size_t)n * n);
  double t;
  for (int w = 0; w < 3; w++) CK(be->gemm(be, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n));
  TIME(20, CK(be->gemm(be, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n)), t);
  /* ptdp-sim's GEMM time at eta 1 for this shape: eta = that / the measured time */
  ptdp_sim_hw hw;
  memset(&hw, 0, sizeof hw);
  hw.gemm_efficiency = 1, hw.sm_count = pr.multiProcessorCount, hw.tile_m = 256, hw.tile_n = 128;
  hw.gemm_k0 = 64, hw.memory_bandwidth = 1e30;
  const double ideal = ptdp_sim_gemm_time(&hw, peak, n, n, n, 1, 2), flops = 2.0 * n * n * n;
  const double k = n / (n + hw.gemm_k0), w = flops / (peak * ideal) / k; /* its wave and K terms */
  printf("# %dx%dx%d bf16 GEMM, random inputs, median of 20: %.1f TFLOP/s\n", n, n, n, flops / t / 1e12);
  printf("gemm-efficiency = %.3f  # %d^3 bf16 GEMM, random inputs, median of 20: %.1f TFLOP/s = %.3f x %g x w %.3f x "
         "k %.3f\n", ideal / t, n, flops / t / 1e12, ideal / t, peak / 1e12, w, k);
  printf("sm-count = %d  # the device's multiProcessorCount: %d\n", pr.multiProcessorCount, pr.multiProcessorCount);
  const size_t bytes = (size_t)1 << 30;
  void *x, *y;
  CK(be->alloc(be, &x, bytes));
  CK(be->alloc(be, &y, bytes));
  TIME(10, CK(be->copy(be, y, x, bytes)), t);
  printf("# a 1 GiB device-to-device copy, bytes read and written over its median time\n");
  printf("memory-bandwidth-gbs = %.0f  # a 1 GiB device-to-device copy: %.0f GB/s\n", 2.0 * bytes / t / 1e9,
         2.0 * bytes / t / 1e9);
  TIME(5, for (int i = 0; i < 1000; i++) CK(be->add(be, (float *)y, (const float *)x, 1)), t);
  printf("# a one-element add issued 1000 times\nkernel-launch-us = %.2f  # a one-element add issued 1000 times: "
         "%.2f us each\n", t / 1000 * 1e6, t / 1000 * 1e6);
  printf("# the device's total\nmemory-gb = %.1f  # the device's totalGlobalMem: %.1fe9 bytes\n",
         pr.totalGlobalMem / 1e9, pr.totalGlobalMem / 1e9);
  if (be->flash_forward && be->flash_backward) flash(be, peak);
  else printf("# the backend has no fused attention: flash-attention-efficiency-* not measured\n");
  return 0;
}
C
if [ -z "$probe" ]; then
  cc=$(mk CC)
  # shellcheck disable=SC2046
  if ! ${cc:-cc} -std=c11 -O2 $(mk OPENMP_CFLAGS) -D_DEFAULT_SOURCE -I"$top/include" -I"$build/include" \
    $(mk CUDA_CFLAGS) $(mk HDF5_CFLAGS) "$tmp/probe.c" -o "$tmp/probe" "$build/libptdp.a" $(mk HDF5_LIBS) \
    $(mk BLAS_LIBS) $(mk CUDA_LIBS) -lm > "$tmp/build.log" 2>&1; then
    echo "$me: cannot build the probe against $build (configured without CUDA?):" >&2
    head -n 5 "$tmp/build.log" >&2
    exit 1
  fi
  probe=$tmp/probe
fi
"$probe" "$peak16" "$gemm_n" > "$tmp/measured"
st=$?
[ $st -eq 77 ] && { echo "$me: no usable GPU through ptdp's CUDA backend; nothing written" >&2; exit 77; }
[ $st -eq 0 ] || { echo "$me: the probe failed (status $st)" >&2; exit 1; }
when=$(date -u +%Y-%m-%dT%H:%M:%SZ)
M="MEASURED $machine $when \"$cmd\""
# the probe's values tagged: "key = value  # figure" becomes "key = value  # MEASURED ... figure"
M="$M" awk '
  /^#/ { print; next }
  / = / { i = index($0, "  # ")
    if (!i) { print "a value without its figure: " $0 > "/dev/stderr"; bad = 1; next }
    print substr($0, 1, i + 3) ENVIRON["M"] " " substr($0, i + 4); next }
  { print }
  END { exit bad }' "$tmp/measured" > "$tmp/tagged" ||
  { echo "$me: the probe printed a value without its figure; nothing written" >&2; exit 1; }
cuda=$(sed -n 's/^# CUDA runtime //p' "$tmp/measured")
[ -n "$gpn_tag" ] || gpn_tag="$M the GPUs nvidia-smi listed: $gpn"
cat > "$out" <<HW
# $(hostname): measured by jobs/measure_gpu_hw.sh on $when, GPU 0 of $gpn: $gpu.
# MEASURED values come from ptdp's CUDA backend on this GPU; ASSUMED ones from this script's
# options or defaults.  Each value's line ends with its provenance (ptdp-hardware(5),
# PROVENANCE); the machine word $machine names this machine (hostname $(hostname)).
name = $name
# dense 16-bit and fp32 peaks, from the GPU's name or the options
peak-tflops-16 = $peak16  # $p16_tag
peak-tflops-32 = $peak32  # $p32_tag
# the GEMM rate is today's cuBLAS's, what megatron-core runs
gemm-efficiency-stack = megatron-core  # ASSUMED the probe's GEMMs are today's cuBLASLt (CUDA ${cuda:-version not printed}), taken as the GEMMs megatron-core runs
# cuBLAS's large tile and K0 (the model's inputs the efficiency below was divided by)
gemm-tile-m = 256  # $A, the A100 file's tile (NVIDIA Matrix Multiplication Background User's Guide, for Ampere)
gemm-tile-n = 128  # $A, the A100 file's tile (NVIDIA Matrix Multiplication Background User's Guide, for Ampere)
gemm-k0 = 64  # $A, the A100 file's K0 (two 32-deep main-loop stages; a modelling choice)
$(grep -v '^# CUDA runtime ' "$tmp/tagged")
# the node and its network: one GPU cannot measure them
gpus-per-node = $gpn  # $gpn_tag
intra-node-bandwidth-gbs = $intra  # $intra_tag
intra-node-latency-us = 2  # $A default, the A100 file's (source not recorded)
inter-node-bandwidth-gbs = $inter  # $inter_tag
inter-node-latency-us = 5  # $A default, the A100 file's (source not recorded)
nics-per-node = $nics  # $nics_tag
# NCCL's channels (one SM each) on an 8-GPU NVSwitch node
collective-sms = 24  # ASSUMED the A100 node's NCCL channels (NCCL_DEBUG=INFO "Channel 23/24" on an HGX A100, as inputs/hw/dgx-a100-80gb.hw cites)
HW
echo "wrote $out ($gpu)"
