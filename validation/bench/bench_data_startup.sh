#!/bin/sh
# Benchmark of data at scale: ptdp-train's start-up on a large indexed dataset.  Generates a corpus of
# TOKENS uint16 tokens (gen_corpus.c: lognormal document lengths of mean MEAN_DOC tokens, ids
# uniform below 50257) unless a PREFIX is given, reads its .bin once as the reference, then on
# 1 and 2 ranks starts ptdp-train (1 layer, h 64, one iteration) with the index cache cold
# (removed) and warm, and prints per run: the data set-up time ("> finished creating GPT
# datasets" line: open, build, write, map), launch to exit, and each rank's peak RSS.  A run
# on mock data (no data set-up at all) gives the start-up cost that is not the data's.
#
# usage: validation/bench/bench_data_startup.sh [BUILD_DIR [PREFIX]]   (default: the current directory)
# environment: TOKENS (1e9), MEAN_DOC (1000), SEQ (256), RANKS ("1 2"), MPIEXEC (mpirun --bind-to none),
#              TMPDIR (where the corpus and the cache go; about 2 bytes per token)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-.}" && pwd)
prefix=${2:-}
train="$build/ptdp-train"
[ -x "$train" ] || { echo "bench_data_startup.sh: no ptdp-train in $build (build it: make ptdp-train)" >&2; exit 1; }
tokens=${TOKENS:-1e9}
mean=${MEAN_DOC:-1000}
seq=${SEQ:-256}
ranks=${RANKS:-1 2}
mpiexec=${MPIEXEC:-mpirun --bind-to none}
[ "$(id -u)" = 0 ] && mpiexec="$mpiexec --allow-run-as-root"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-startup.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
     "$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load: $(uptime | sed 's/.*load average: //')"
if [ -z "$prefix" ]; then
  cc=$(sed -n 's/^CC = //p' "$build/Makefile" | head -n 1)
  ${cc:-cc} -O2 "$here/gen_corpus.c" -o "$tmp/gen_corpus" -lm
  prefix="$tmp/corpus"
  t0=$(now)
  "$tmp/gen_corpus" "$prefix" "$tokens" "$mean"
  echo "== generated in $(secs "$t0" "$(now)") s"
fi
bytes=$(stat -c %s "$prefix.bin")
echo "== corpus: $prefix.bin $bytes bytes, $prefix.idx $(stat -c %s "$prefix.idx") bytes"

# the reference: the .bin read once, from the device where it can be dropped from the page
# cache first (python3's posix_fadvise), and from the page cache
evict() {
  sync "$1" 2> /dev/null || sync
  python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' \
    "$1" 2> /dev/null
}
read_bin() {
  t0=$(now)
  cat "$prefix.bin" > /dev/null
  t=$(secs "$t0" "$(now)")
  echo "== read .bin once ($1): $t s, $(awk -v b="$bytes" -v t="$t" 'BEGIN { printf "%.0f", b / 1048576 / t }') MiB/s"
}
if evict "$prefix.bin"; then read_bin "dropped from the page cache first"; fi
read_bin "page cache"

cat > "$tmp/deck.in" <<EOF
num-layers = 1
hidden-size = 64
num-attention-heads = 2
seq-length = $seq
max-position-embeddings = $seq
vocab-size = 50257
micro-batch-size = 1
train-iters = 1
eval-iters = 1
eval-interval = 1000
log-interval = 1
split = 969,30,1
lr = 1e-4
seed = 1234
hidden-dropout = 0
attention-dropout = 0
EOF

# one run: launch to exit, the data line, each rank's peak RSS (GNU time around each rank)
run() { # ranks label extra-args...
  np=$1 label=$2
  shift 2
  rm -f "$tmp"/rss.*
  t0=$(now)
  if [ -x /usr/bin/time ]; then
    $mpiexec -np "$np" sh -c 'exec /usr/bin/time -f %M -o "$0.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" "$@"' \
      "$tmp/rss" "$train" "$tmp/deck.in" "$@" > "$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
  else
    $mpiexec -np "$np" "$train" "$tmp/deck.in" "$@" > "$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
  fi
  wall=$(secs "$t0" "$(now)")
  rss=$(for f in "$tmp"/rss.*; do [ -f "$f" ] && awk '{ printf "%.1f ", $1 / 1024 }' "$f"; done)
  data=$(sed -n 's/^> finished creating GPT datasets ... //p' "$tmp/log")
  loss=$(sed -n 's/.*lm loss: \([^ ]*\).*/\1/p' "$tmp/log" | head -n 1)
  printf '%d rank(s), %-10s launch to exit %6s s | peak RSS per rank (MiB): %s| lm loss %s\n' "$np" "$label" \
    "$wall" "${rss:-n/a }" "$loss"
  [ -n "$data" ] && echo "    $data"
  return 0
}

for np in $ranks; do
  run "$np" "mock data" --mock-data true
  rm -rf "$tmp/cache"
  run "$np" "cold cache" --data-path "$prefix" --data-cache-path "$tmp/cache"
  run "$np" "warm cache" --data-path "$prefix" --data-cache-path "$tmp/cache"
done
echo "== index cache: $(du -sk "$tmp/cache" | cut -f1) KiB in $(ls "$tmp/cache" | wc -l) files"
