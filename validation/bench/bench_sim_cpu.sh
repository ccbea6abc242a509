#!/bin/sh
# ptdp-sim against ptdp-train on this CPU machine, in one run: for each small layout (t, p, v, d,
# recompute), train a few iterations on mock data and read the measured time per iteration (the
# median of the logged intervals after the first) and the peak held activations (max over
# ranks), then predict both with ptdp-sim, the CPU hardware file and ptdp's CPU backend as the
# modelled implementation (--fusion cpu).  Prints a markdown table.
#
# usage: validation/bench/bench_sim_cpu.sh [HW_FILE] [ITERS]
#   HW_FILE defaults to inputs/hw/cpu-local.hw (jobs/measure_cpu_hw.sh writes it on this machine)
# Run it, like the measurement of the hardware file, under the benchmark lock:
#   flock /tmp/ptdp-bench.lock validation/bench/bench_sim_cpu.sh
# Needs an idle machine: with more runnable processes than cores the times measure the other
# load, not ptdp-train; the script prints the load average beside the table and warns.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
hw=${1:-$top/inputs/hw/cpu-local.hw}; iters=${2:-12}
train=$top/build/ptdp-train; sim=$top/build/ptdp-sim
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
base="--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --max-position-embeddings 128
      --micro-batch-size 4 --global-batch-size 16 --train-iters $iters --lr-warmup-iters 1 --log-interval 2
      --run-file none"
cores=$(nproc)
load0=$(cut -d' ' -f1 /proc/loadavg)
[ "$(awk "BEGIN {print ($load0 > $cores)}")" = 1 ] &&
  echo "WARNING: load average $load0 on $cores cores: the measured times include other processes' load" >&2
echo "| layout | ranks | measured (ms) | predicted (ms) | error (%) | peak activations measured (B) | predicted (B) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
while IFS='|' read -r name np keys; do
  [ -z "$name" ] && continue
  # shellcheck disable=SC2086
  mpirun --oversubscribe -np "$np" "$train" "$top/inputs/gpt-mock.in" $base $keys < /dev/null > "$tmp/log" 2>&1 ||
    { echo "ptdp-train failed: $name" >&2; cat "$tmp/log" >&2; exit 1; }
  meas=$(sed -n 's/.*elapsed time per iteration (ms): *\([0-9.]*\).*/\1/p' "$tmp/log" | tail -n +2 | sort -n |
         awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : "nan"}')
  act=$(sed -n 's/.*peak held activations: rank 0 [0-9]* bytes (max over ranks \([0-9]*\).*/\1/p' "$tmp/log" | head -1)
  # shellcheck disable=SC2086
  "$sim" "$top/inputs/gpt-mock.in" $base $keys --world-size "$np" --hardware "$hw" --fusion cpu > "$tmp/sim"
  pred=$(sed -n 's/^iteration time (s): //p' "$tmp/sim" | awk '{print 1e3 * $1}')
  pact=$(sed -n 's/^memory peak activations, largest stage (bytes): //p' "$tmp/sim")
  err=$(awk "BEGIN {printf \"%+.1f\", 100 * ($pred - $meas) / $meas}")
  printf "| %s | %s | %s | %.1f | %s | %s | %s |\n" "$name" "$np" "$meas" "$pred" "$err" "$act" "$pact"
done <<EOF
t1 p1|1|
t1 p1, full recompute|1|--recompute-granularity full
t2 p1|2|--tensor-model-parallel-size 2
t1 p2|2|--pipeline-model-parallel-size 2
t1 p2 v2|2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
t1 p1 d2|2|
t2 p1, selective recompute|2|--tensor-model-parallel-size 2 --recompute-granularity selective
t2 p2, selective recompute|4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --recompute-granularity selective
EOF
echo "load average before / after: $load0 / $(cut -d' ' -f1 /proc/loadavg) on $cores cores"
