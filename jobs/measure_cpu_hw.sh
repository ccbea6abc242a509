#!/bin/sh
# Measure this machine and write a ptdp-sim hardware file for its CPU ranks (ptdp-sim --fusion cpu):
#   ptdp's CPU backend timed operator by operator on one rank of THREADS threads, with the kernels
#   ptdp-train picks (validation/bench/cpu_op_bench.c): the GEMM rate of the model's linear layers
#   and the time per element of each other operator; streaming DRAM bandwidth (a triad); MPI over
#   shared memory between two ranks (bus bandwidths of all-reduce, all-gather and reduce-scatter of
#   1 MiB, about a layer's activations; 8-byte ping-pong latency).
#   Every value's line ends with its provenance tag (ptdp-hardware(5), PROVENANCE): MEASURED (the
#   machine word, the UTC time, this command with every default filled in, the figure), DERIVED
#   (the inter-node values: this file's intra-node ones, one node) or ASSUMED (the CPU model's
#   fixed values).
# usage: jobs/measure_cpu_hw.sh [--machine WORD] [--build DIR] [OUT.hw] [THREADS [b s h a V]]
#   defaults: HOST-CPU-Ncore (the short host name, /proc/cpuinfo's model name in lower case
#   without (R), "Processor", "CPU" or the clock, words joined by dashes, then the core count:
#   vm-intel-xeon-2core), build/, inputs/hw/cpu-local.hw, 1, and the model of
#   validation/bench/bench_sim_cpu.sh (4 128 256 8 512): the rates are those of the model's own
#   shapes on one rank (t = 1), so measure again for a model of other shapes.  --machine WORD
#   replaces the whole machine word of the MEASURED tags (letters, digits, . _ + -; at most 63).
# Exit: 0 written; 2 a bad argument (nothing measured); 1 a measurement failed.
# Needs the build (make builds the operator bench there) and an idle
# machine: run it under the benchmark lock (flock /tmp/ptdp-bench.lock jobs/measure_cpu_hw.sh).
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
me=measure_cpu_hw.sh
usage() { sed -n 's/^# \{0,1\}//; /^usage:/,/^Exit:/p' "$0"; }
bad() { echo "$me: $*" >&2; echo "$me: usage: see $me --help" >&2; exit 2; }
# quote WORD: WORD as a shell word in the tags' command (single quotes around anything but plain
# characters; the tag's own double quotes cannot hold a quote, so no value may have one)
quote() {
  case $1 in
  '' | *[!A-Za-z0-9._/:=+,@-]*) printf "'%s'" "$1" ;;
  *) printf '%s' "$1" ;;
  esac
}
noquote() { case $2 in *[\"\']*) bad "$1: no quotes in '$2' (it goes into the tags' quoted command)" ;; esac; }
machine="" build=$top/build opts=""
while [ $# -gt 0 ]; do
  case $1 in
  --help | -h) usage; exit 0 ;;
  --machine | --build)
    [ $# -ge 2 ] || bad "$1 wants a value"
    noquote "$1" "$2"
    if [ "$1" = --machine ]; then machine=$2; else build=$2; fi
    opts="$opts $1 $(quote "$2")"
    shift 2 ;;
  --) shift; break ;;
  -*) bad "unknown option '$1'" ;;
  *) break ;;
  esac
done
noquote OUT "${1:-}"
shown=${1:-inputs/hw/cpu-local.hw}; out=${1:-$top/inputs/hw/cpu-local.hw}; threads=${2:-1}
shift $(($# < 2 ? $# : 2)); shape=${*:-4 128 256 8 512}
echo "$threads" | grep -Eq '^[1-9][0-9]*$' || bad "THREADS wants a positive integer, got '$threads'"
echo "$shape" | grep -Eq '^[1-9][0-9]*( [1-9][0-9]*){4}$' || bad "the model wants five positive integers b s h a V, got '$shape'"
# the node's cores (GNU nproc would answer OMP_NUM_THREADS, which says nothing of the node)
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
if [ -z "$machine" ]; then
  # the CPU's words: AMD EPYC 7B13 64-Core Processor -> amd-epyc-7b13
  cpu=$(printf '%s\n' "${model:-cpu}" | sed -e 's/([A-Za-z]*)//g; s/@.*//; s/[0-9]*-Core//g; s/ Processor//g; s/ CPU//g' |
    tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9.]\{1,\}/-/g; s/^-//; s/-$//')
  host=$(hostname | sed 's/[.].*//' | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g')
  machine=$(printf '%s-%s-%score' "$host" "${cpu:-cpu}" "$cores" | cut -c1-63)
fi
if ! echo "$machine" | grep -Eq '^[A-Za-z0-9][A-Za-z0-9._+-]{0,62}$' ||
  echo "$machine" | grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}'; then
  bad "--machine wants one word of letters, digits, . _ + - (at most 63, not a date), got '$machine'"
fi
# the command that measured every MEASURED value, each default filled in: it measures again
cmd="jobs/measure_cpu_hw.sh$opts $(quote "$shown") $threads $shape"
[ ${#cmd} -lt 384 ] || bad "the command is too long for a tag (383 characters): give a shorter OUT or --build"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -f "$build/Makefile" ] || bad "no build in $build (give --build DIR: configure there first)"
make -s -C "$build" validation/bench/cpu_op_bench > /dev/null || exit 1
pin=""; command -v taskset > /dev/null && pin="taskset -c 0-$((threads - 1))"
# shellcheck disable=SC2086
$pin "$build/validation/bench/cpu_op_bench" "$threads" $shape > "$tmp/ops"
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
when=$(date -u +%Y-%m-%dT%H:%M:%SZ)
M="MEASURED $machine $when \"$cmd\""
per="one rank of $threads thread"; [ "$threads" = 1 ] || per="${per}s"
# the bench's lines tagged: its rate and its times per element, each with what it timed (the
# words of inputs/hw/cpu-local.hw; a key the bench adds later: its comment line's)
M="$M" PER="$per" awk '
  BEGIN {
    d["cpu-elementwise-ns"] = "y += x on [N, h]"
    d["cpu-dropout-ns"] = "dropout mask drawn and applied on [N, h], p 0.1"
    d["cpu-layernorm-forward-ns"] = "LayerNorm forward on [N, h]"
    d["cpu-layernorm-backward-ns"] = "LayerNorm backward on [N, h]"
    d["cpu-gelu-forward-ns"] = "GeLU forward on [N, 4h]"
    d["cpu-gelu-backward-ns"] = "GeLU backward on [N, 4h]"
    d["cpu-bias-grad-ns"] = "the bias gradients of one layer"
    d["cpu-softmax-forward-ns"] = "attention core forward less its GEMMs at R, per score"
    d["cpu-softmax-backward-ns"] = "attention core backward less its GEMMs at R, per score"
    d["cpu-cross-entropy-forward-ns"] = "cross entropy max and sum-exp passes on [N, V]"
    d["cpu-cross-entropy-grad-ns"] = "cross entropy gradient pass on [N, V]"
    d["cpu-optimizer-ns"] = "AdamW step, gradient sum of squares and clipping scale, 4 Mi parameters"
    tag = "  # " ENVIRON["M"] " validation/bench/cpu_op_bench, "
  }
  /^#/ { print; what = substr($0, 3); next }
  $2 == "=" && $1 == "peak-tflops-32" {
    printf "%s%sthe twelve linear-layer GEMMs together: %.5g GFLOP/s\n", $0, tag, $3 * 1000; next
  }
  $2 == "=" { print $0 tag (($1 in d) ? d[$1] : what) ", " ENVIRON["PER"] ": " $3 " ns per element"; next }
  { print }' "$tmp/ops" > "$tmp/ops.tagged"
A="ASSUMED the CPU model of measure_cpu_hw.sh"
one="DERIVED \"intra-node-bandwidth-gbs of this file (MEASURED, $mpibw GB/s)\" the same: one node, no network to measure (every rank of a run is on this node)"
onelat="DERIVED \"intra-node-latency-us of this file (MEASURED, $mpilat us)\" the same: one node, no network to measure (every rank of a run is on this node)"
via="over shared memory, two ranks, bus bandwidth"
cat > "$out" <<HW
# $(hostname): measured by jobs/measure_cpu_hw.sh on $when, load average $(cut -d' ' -f1-3 /proc/loadavg)
# $model, $cores cores; one rank = $threads thread(s).  For ptdp-sim --fusion cpu.
# Each value's line ends with its provenance (ptdp-hardware(5), PROVENANCE); the machine word
# $machine names this machine (hostname $(hostname)).
name = CPU $(hostname) ($threads thread(s) per rank, $cores cores)
# GEMMs at the sgemm rate R (peak-tflops-32) below (no tile model: one tile = one element, efficiency 1)
gemm-efficiency = 1  # $A (ptdp(7), PTDP-SIM ON THE CPU): no tile model, GEMMs at the measured rate R
sm-count = 1  # $A: no tile model (one tile = one element)
gemm-tile-m = 1  # $A: no tile model (one tile = one element)
gemm-tile-n = 1  # $A: no tile model (one tile = one element)
gemm-k0 = 0  # $A: no K-loop term
kernel-launch-us = 0  # $A: no launch cost (the per-element times hold what a call costs)
$(cat "$tmp/ops.tagged")
# triad a = b + s c, 3 x 64 MiB, best of 5, one thread (GB/s): the optimizer's DRAM-bound sweep
memory-bandwidth-gbs = $bw  # $M triad a = b + s c, 3 x 64 MiB, best of 5, one thread: $bw GB/s
memory-gb = $mem  # $M /proc/meminfo MemTotal: ${mem}e9 bytes
# the ranks of a run share this node's cores: ranks x threads beyond them slow every rank down
cores-per-node = $cores  # $M nproc: $cores
threads-per-rank = $threads  # $M the command's THREADS (default 1): the rates above were measured with $threads thread$([ "$threads" = 1 ] || echo s) per rank
# every rank of a run is on this node (mpirun --oversubscribe places any number)
gpus-per-node = 1024  # $A: every rank of a run on this node (mpirun --oversubscribe places any number)
# MPI over shared memory, two ranks, S = 1 MiB (a layer's activations are 0.5 MiB): bus bandwidth
# (GB/s) of an all-reduce, all-gather and reduce-scatter; 8-byte ping-pong half round trip (us);
# the median launch of three (by all-reduce)
intra-node-bandwidth-gbs = $mpibw  # $M MPI_Allreduce of 1 MiB $via, the median launch of three: $mpibw GB/s
intra-node-allgather-bandwidth-gbs = $mpiag  # $M MPI_Allgather of 1 MiB $via: $mpiag GB/s
intra-node-reduce-scatter-bandwidth-gbs = $mpirs  # $M MPI_Reduce_scatter_block of 1 MiB $via: $mpirs GB/s
intra-node-latency-us = $mpilat  # $M 8-byte MPI ping-pong over shared memory, half the round trip: $mpilat us
inter-node-bandwidth-gbs = $mpibw  # $one
inter-node-latency-us = $mpilat  # $onelat
nics-per-node = 1  # $A: one node, one network adapter (no network is used)
HW
echo "wrote $out: sgemm $rate TFLOP/s, memory $bw GB/s, MPI all-reduce $mpibw, all-gather $mpiag, reduce-scatter $mpirs GB/s, $mpilat us"
