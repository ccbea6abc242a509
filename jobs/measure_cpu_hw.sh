#!/bin/sh
# Measure this machine and write a ptdp-sim hardware file for its CPU ranks (ptdp-sim --fusion cpu):
#   ptdp's CPU backend timed operator by operator on one rank of THREADS threads, with the kernels
#   ptdp-train picks (validation/bench/cpu_op_bench.c): the GEMM rate of the model's linear layers
#   and the time per element of each other operator; streaming DRAM bandwidth (a triad); MPI over
#   shared memory between two ranks (bus bandwidths of all-reduce, all-gather and reduce-scatter of
#   1 MiB, about a layer's activations; 8-byte ping-pong latency).
# usage: jobs/measure_cpu_hw.sh [OUT.hw] [THREADS [b s h a V]]
#   defaults inputs/hw/cpu-local.hw, 1, and the model of validation/bench/bench_sim_cpu.sh
#   (4 128 256 8 512): the rates are those of the model's own shapes on one rank (t = 1), so
#   measure again for a model of other shapes.
# Needs the build (make builds the operator bench there) and an idle
# machine: run it under the benchmark lock (flock /tmp/ptdp-bench.lock jobs/measure_cpu_hw.sh).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/inputs/hw/cpu-local.hw}; threads=${2:-1}; shift $(($# < 2 ? $# : 2)); shape="$*"
cores=$(nproc)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s -C "$top/build" validation/bench/cpu_op_bench > /dev/null
pin=""; command -v taskset > /dev/null && pin="taskset -c 0-$((threads - 1))"
# shellcheck disable=SC2086
$pin "$top/build/validation/bench/cpu_op_bench" "$threads" $shape > "$tmp/ops"
cat > "$tmp/triad.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* a[i] = b[i] + s c[i] over 3 x 64 MiB: 3 arrays of 8M floats moved per pass (2 reads, 1 write) */
int main(void) { size_t n = 1 << 24; float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4); double best = 1e9;
  for (size_t i = 0; i < n; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
  for (int r = 0; r < 5; r++) { struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
    clock_gettime(CLOCK_MONOTONIC, &t1); double t = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec); if (t < best) best = t; }
  printf("%.3f\n", 3.0 * n * 4 / best / 1e9 + 0 * a[n / 2]); return 0; }
C
cc -O2 -o "$tmp/triad" "$tmp/triad.c"; bw=$("$tmp/triad")
cat > "$tmp/mpi.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* two ranks: latency = half the round trip of 8 bytes; the bus bandwidth of an all-reduce,
 * all-gather and reduce-scatter of S = 1 MiB of floats in all: 2 (n-1)/n S / t for the
 * all-reduce, (n-1)/n S / t for the others (the bytes each rank moves); best of 5 rounds */
int main(int argc, char **argv) { MPI_Init(&argc, &argv); int r, g; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &g);
  const int n = 1 << 18; float *x = calloc(n, 4), *y = calloc(n, 4); char c8[8] = {0}; double lat = 1e9, t3[3] = {1e9, 1e9, 1e9};
  for (int round = 0; round < 5; round++) {
    MPI_Barrier(MPI_COMM_WORLD); double t0 = MPI_Wtime();
    for (int i = 0; i < 1000; i++) { if (r == 0) { MPI_Send(c8, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD); MPI_Recv(c8, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
      else { MPI_Recv(c8, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(c8, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD); } }
    double t = (MPI_Wtime() - t0) / 1000 / 2; if (t < lat) lat = t;
    for (int k = 0; k < 3; k++) { const int reps = 20; MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime();
      for (int i = 0; i < reps; i++) {
        if (k == 0) MPI_Allreduce(x, y, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (k == 1) MPI_Allgather(x, n / g, MPI_FLOAT, y, n / g, MPI_FLOAT, MPI_COMM_WORLD);
        else MPI_Reduce_scatter_block(x, y, n / g, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
      t = (MPI_Wtime() - t0) / reps; if (t < t3[k]) t3[k] = t; } }
  const double S = 4.0 * n, f = (g - 1.0) / g;
  if (r == 0) printf("%.4g %.4g %.4g %.3f\n", 2 * f * S / t3[0] / 1e9, f * S / t3[1] / 1e9, f * S / t3[2] / 1e9, lat * 1e6);
  MPI_Finalize(); return 0; }
C
mpicc -O2 -o "$tmp/mpi" "$tmp/mpi.c"
# this VM's shared-memory copies vary from launch to launch (the host places the two vCPUs):
# the median of three launches
for i in 1 2 3; do mpirun --oversubscribe -np 2 "$tmp/mpi"; done | sort -n > "$tmp/mpi.out"
set -- $(sed -n 2p "$tmp/mpi.out"); mpibw=$1; mpiag=$2; mpirs=$3; mpilat=$4
mem=$(awk '/MemTotal/ {printf "%.1f", $2 * 1024 / 1e9}' /proc/meminfo)
rate=$(sed -n 's/^peak-tflops-32 = //p' "$tmp/ops")
cat > "$out" <<HW
# $(hostname): measured by jobs/measure_cpu_hw.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg)
# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $cores cores; one rank = $threads thread(s).  For ptdp-sim --fusion cpu.
name = CPU $(hostname) ($threads thread(s) per rank, $cores cores)
# GEMMs at the sgemm rate R (peak-tflops-32) below (no tile model: one tile = one element, efficiency 1)
gemm-efficiency = 1
sm-count = 1
gemm-tile-m = 1
gemm-tile-n = 1
gemm-k0 = 0
kernel-launch-us = 0
$(cat "$tmp/ops")
# triad a = b + s c, 3 x 64 MiB, best of 5, one thread (GB/s): the optimizer's DRAM-bound sweep
memory-bandwidth-gbs = $bw
memory-gb = $mem
# the ranks of a run share this node's cores: ranks x threads beyond them slow every rank down
cores-per-node = $cores
threads-per-rank = $threads
# every rank of a run is on this node (mpirun --oversubscribe places any number)
gpus-per-node = 1024
# MPI over shared memory, two ranks, S = 1 MiB (a layer's activations are 0.5 MiB): bus bandwidth
# (GB/s) of an all-reduce, all-gather and reduce-scatter; 8-byte ping-pong half round trip (us);
# the median launch of three (by all-reduce)
intra-node-bandwidth-gbs = $mpibw
intra-node-allgather-bandwidth-gbs = $mpiag
intra-node-reduce-scatter-bandwidth-gbs = $mpirs
intra-node-latency-us = $mpilat
inter-node-bandwidth-gbs = $mpibw
inter-node-latency-us = $mpilat
nics-per-node = 1
HW
echo "wrote $out: sgemm $rate TFLOP/s, memory $bw GB/s, MPI all-reduce $mpibw, all-gather $mpiag, reduce-scatter $mpirs GB/s, $mpilat us"
