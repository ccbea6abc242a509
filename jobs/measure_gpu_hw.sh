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
#   or H200), the node's GPUs, NICs and their rates.  The file marks every value MEASURED or
#   ASSUMED.  One GPU cannot measure the network: measure NCCL with nccl-tests and give the rates.
#
# usage: jobs/measure_gpu_hw.sh [--out FILE.hw] [--build DIR] [--name TEXT] [--peak-tflops-16 T]
#          [--peak-tflops-32 T] [--gpus-per-node N] [--nics-per-node N] [--intra-node-bandwidth-gbs B]
#          [--inter-node-bandwidth-gbs B] [--gemm-n N]
#   defaults: inputs/hw/gpu-local.hw, build/, the GPU's name, ...
# Exit: 0 written; 2 a bad argument (nothing measured); 77 no usable GPU (nothing written; on a
# CPU node use jobs/measure_cpu_hw.sh); 1 the probe failed.  NVIDIA_SMI names the nvidia-smi to
# ask (tests point it elsewhere).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
me=measure_gpu_hw.sh
usage() {
  sed -n 's/^# \{0,1\}//; /^usage:/,/^  defaults/p' "$0"
}
bad() { echo "$me: $*" >&2; echo "$me: usage: see $me --help" >&2; exit 2; }
number() {
  echo "$2" | grep -Eq '^[0-9]+([.][0-9]+)?([eE][+-]?[0-9]+)?$' || bad "$1 wants a positive number, got '$2'"
}

out=$top/inputs/hw/gpu-local.hw build=$top/build name="" peak16="" peak32="" gpn=""
nics=8 intra=345 inter=46 gemm_n=8192
while [ $# -gt 0 ]; do
  case $1 in
  --help | -h) usage; exit 0 ;;
  --out | --build | --name | --peak-tflops-16 | --peak-tflops-32 | --gpus-per-node | \
    --nics-per-node | --intra-node-bandwidth-gbs | --inter-node-bandwidth-gbs | --gemm-n)
    [ $# -ge 2 ] || bad "$1 wants a value"
    case $1 in
    --out) out=$2 ;;
    --build) build=$2 ;;
    --name) name=$2 ;;
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
[ -n "$gpn" ] || gpn=$(echo "$gpus" | wc -l)
# the peaks from the name (datasheets, dense, SXM), else they must be given
case $gpu in
*H100* | *H200*) d16=989 d32=67 ;;
*A100*) d16=312 d32=19.5 ;;
*) d16="" d32="" ;;
esac
[ -n "$peak16" ] || peak16=$d16
[ -n "$peak32" ] || peak32=$d32
[ -n "$peak16" ] && [ -n "$peak32" ] || bad "unknown GPU '$gpu': give --peak-tflops-16 and --peak-tflops-32"
[ -n "$name" ] || name="$gpu x $gpn (measured by $me)"
[ -f "$build/libptdp.a" ] && [ -f "$build/Makefile" ] || bad "no build in $build (give --build DIR: make there first)"

mk() { sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/probe.c" <<'C'
/* GPU 0 through ptdp's CUDA backend in bf16: prints hardware-file lines (see measure_gpu_hw.sh). */
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
  printf("# MEASURED: ptdp's fused attention, b 1, s 2048, 16 heads of 128, causal: %.3f ms forward, "
         "%.3f ms backward\n", tf * 1e3, tb * 1e3);
  printf("flash-attention-efficiency-forward = %.3f\n", F / tf / peak);
  printf("flash-attention-efficiency-backward = %.3f\n", 2.5 * F / tb / peak);
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
  float *A = random16(be, (size_t)n * n), *B = random16(be, (size_t)n * n), *C = random16(be, (size_t)n * n);
  double t;
  for (int w = 0; w < 3; w++) CK(be->gemm(be, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n));
  TIME(20, CK(be->gemm(be, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n)), t);
  /* ptdp-sim's GEMM time at eta 1 for this shape: eta = that / the measured time */
  ptdp_sim_hw hw;
  memset(&hw, 0, sizeof hw);
  hw.gemm_efficiency = 1, hw.sm_count = pr.multiProcessorCount, hw.tile_m = 256, hw.tile_n = 128;
  hw.gemm_k0 = 64, hw.memory_bandwidth = 1e30;
  const double ideal = ptdp_sim_gemm_time(&hw, peak, n, n, n, 1, 2);
  printf("# MEASURED: %dx%dx%d bf16 GEMM, random inputs, median of 20: %.1f TFLOP/s\n", n, n, n,
         2.0 * n * n * n / t / 1e12);
  printf("gemm-efficiency = %.3f\nsm-count = %d\n", ideal / t, pr.multiProcessorCount);
  const size_t bytes = (size_t)1 << 30;
  void *x, *y;
  CK(be->alloc(be, &x, bytes));
  CK(be->alloc(be, &y, bytes));
  TIME(10, CK(be->copy(be, y, x, bytes)), t);
  printf("# MEASURED: a 1 GiB device-to-device copy, bytes read and written over its median time\n");
  printf("memory-bandwidth-gbs = %.0f\n", 2.0 * bytes / t / 1e9);
  TIME(5, for (int i = 0; i < 1000; i++) CK(be->add(be, (float *)y, (const float *)x, 1)), t);
  printf("# MEASURED: a one-element add issued 1000 times\nkernel-launch-us = %.2f\n", t / 1000 * 1e6);
  printf("# MEASURED (the device's total)\nmemory-gb = %.1f\n", pr.totalGlobalMem / 1e9);
  if (be->flash_forward && be->flash_backward) flash(be, peak);
  else printf("# the backend has no fused attention: flash-attention-efficiency-* not measured\n");
  return 0;
}
C
cc=$(mk CC)
# shellcheck disable=SC2046
if ! ${cc:-cc} -std=c11 -O2 $(mk OPENMP_CFLAGS) -D_DEFAULT_SOURCE -I"$top/include" -I"$build/include" \
  $(mk CUDA_CFLAGS) $(mk HDF5_CFLAGS) "$tmp/probe.c" -o "$tmp/probe" "$build/libptdp.a" $(mk HDF5_LIBS) \
  $(mk BLAS_LIBS) $(mk CUDA_LIBS) -lm > "$tmp/build.log" 2>&1; then
  echo "$me: cannot build the probe against $build (configured without CUDA?):" >&2
  head -n 5 "$tmp/build.log" >&2
  exit 1
fi
"$tmp/probe" "$peak16" "$gemm_n" > "$tmp/measured"
st=$?
[ $st -eq 77 ] && { echo "$me: no usable GPU through ptdp's CUDA backend; nothing written" >&2; exit 77; }
[ $st -eq 0 ] || { echo "$me: the probe failed (status $st)" >&2; exit 1; }
cat > "$out" <<HW
# $(hostname): measured by jobs/measure_gpu_hw.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ), GPU 0 of $gpn: $gpu.
# MEASURED lines come from ptdp's CUDA backend on this GPU; ASSUMED ones from this script's options.
name = $name
# ASSUMED (options or the datasheet of the GPU's name): dense 16-bit and fp32 peaks
peak-tflops-16 = $peak16
peak-tflops-32 = $peak32
# the GEMM rate is today's cuBLAS's, what megatron-core runs
gemm-efficiency-stack = megatron-core
# ASSUMED: cuBLAS's large tile and K0 (the model's inputs the efficiency above was divided by)
gemm-tile-m = 256
gemm-tile-n = 128
gemm-k0 = 64
$(cat "$tmp/measured")
# ASSUMED (options): the node and its network; one GPU cannot measure them
gpus-per-node = $gpn
intra-node-bandwidth-gbs = $intra
intra-node-latency-us = 2
inter-node-bandwidth-gbs = $inter
inter-node-latency-us = 5
nics-per-node = $nics
# ASSUMED: NCCL's channels (one SM each) on an 8-GPU NVSwitch node, as the A100 file's
collective-sms = 24
HW
echo "wrote $out ($gpu)"
