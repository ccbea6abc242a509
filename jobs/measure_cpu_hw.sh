#!/bin/sh
# Measure this machine and write a ptdp-sim hardware file for its CPU ranks:
#   sgemm rate of one rank (OpenBLAS, THREADS threads), streaming memory bandwidth (a triad),
#   MPI shared-memory bandwidth and latency between two ranks (ping-pong).
# usage: jobs/measure_cpu_hw.sh [OUT.hw] [THREADS] [RANKS_PER_NODE]   (defaults inputs/hw/cpu-local.hw, 1, nproc)
# Needs the build (build/Makefile gives the BLAS flags).  ptdp-sim's fp32 keys are then this
# machine's: peak-tflops-32 = the measured sgemm rate, gemm-efficiency = 1 (the rate is measured).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$top/inputs/hw/cpu-local.hw}; threads=${2:-1}; rpn=${3:-$(nproc)}
blas_libs=$(sed -n 's/^BLAS_LIBS = //p' "$top/build/Makefile"); blas_cflags=$(sed -n 's/^BLAS_CFLAGS = //p' "$top/build/Makefile")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpicc -O2 -I"$top/include" -I"$top/build/include" $blas_cflags -o "$tmp/sgemm" "$top/validation/bench/sgemm_bench.c" $blas_libs -lm
gf=$(OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$tmp/sgemm" 1024 5 | sed -n 's/.* \([0-9.]*\) GFLOP\/s.*/\1/p')
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
cat > "$tmp/pingpong.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* two ranks: latency (8 bytes, half a round trip) and bandwidth (16 MiB one way) */
int main(int argc, char **argv) { MPI_Init(&argc, &argv); int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  size_t big = 1 << 24; char *buf = calloc(big, 1); double lat = 0, bw = 0;
  for (int k = 0; k < 2; k++) { size_t n = k ? big : 8; int reps = k ? 10 : 1000;
    MPI_Barrier(MPI_COMM_WORLD); double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) { if (r == 0) { MPI_Send(buf, (int)n, MPI_CHAR, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf, (int)n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
      else { MPI_Recv(buf, (int)n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, (int)n, MPI_CHAR, 0, 0, MPI_COMM_WORLD); } }
    double t = (MPI_Wtime() - t0) / reps / 2; if (k) bw = n / t / 1e9; else lat = t * 1e6; }
  if (r == 0) printf("%.3f %.3f\n", bw, lat); MPI_Finalize(); return 0; }
C
mpicc -O2 -o "$tmp/pingpong" "$tmp/pingpong.c"
set -- $(mpirun --oversubscribe -np 2 "$tmp/pingpong"); mpibw=$1; mpilat=$2
mem=$(awk '/MemTotal/ {printf "%.1f", $2 * 1024 / 1e9}' /proc/meminfo)
cat > "$out" <<HW
# $(hostname): measured by jobs/measure_cpu_hw.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)
# $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores; one rank = $threads thread(s)
name = CPU $(hostname) ($threads thread(s) per rank, $rpn ranks per node)
# sgemm n = 1024 of one rank (OpenBLAS, validation/bench/sgemm_bench.c): the rate is measured,
# so the efficiency is 1 and no tile model applies (one tile = one element)
peak-tflops-32 = $(awk "BEGIN {print $gf / 1000}")
gemm-efficiency = 1
sm-count = 1
gemm-tile-m = 1
gemm-tile-n = 1
gemm-k0 = 0
kernel-launch-us = 0
# triad a = b + s c, 3 x 64 MiB, best of 5 (one thread; ranks share it)
memory-bandwidth-gbs = $bw
memory-gb = $mem
# every rank in one node: MPI over shared memory (2-rank ping-pong, 16 MiB one way; 8-byte half round trip)
gpus-per-node = $rpn
intra-node-bandwidth-gbs = $mpibw
intra-node-latency-us = $mpilat
inter-node-bandwidth-gbs = $mpibw
inter-node-latency-us = $mpilat
nics-per-node = 1
HW
echo "wrote $out: sgemm $gf GFLOP/s, memory $bw GB/s, MPI $mpibw GB/s, $mpilat us"
