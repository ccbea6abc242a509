#!/bin/sh
# Checkpoint save and load rates beside the raw bandwidth of the same bytes, the same ranks and
# the same file system, measured in the same run (io_bench.c).  Model: 8 layers, h 1024, GPT-2
# vocabulary: 151 M parameters, 1.83 GB of parameters and Adam state (fp32).  Layouts: 1 rank;
# 2 ranks (d 2, distributed optimizer); 4 ranks (t 2, d 2, distributed optimizer); on request
# (LAYOUTS=t4) 4 ranks at t 4, where every rank's row-parallel slices are exchanged.  Each round of
# a layout: train 1 iteration and save; io_bench writes the number of bytes the save wrote twice
# (plain MPI-IO write + sync, and streamed as ptdp's save writes: write-back started per block);
# all three files are dropped from the page cache (posix_fadvise DONTNEED: no privilege needed);
# the checkpoint is loaded (no iteration); io_bench reads its two files back, one through the
# page cache and one with O_DIRECT (as ptdp's load reads).  Every read comes from the device, as
# a requeued job on another node reads a checkpoint, and seconds after its file was written.  The
# raw write rate is the better of io_bench's two writes, the raw read rate the better of its two
# reads.  ROUNDS rounds; it prints the best rate of each with their ratios, and the median over
# rounds of each round's own ratios (the raw figures vary from round to round with what the host
# caches); `sync` runs before each timed write so that none waits for another's dirty pages.
# usage: validation/bench/bench_checkpoint.sh [BUILD_DIR] [DIR]   (DIR: where files go, default /tmp)
# environment: MPIEXEC (default below), LAYOUTS ("1 2 4"; or t4), LAYERS (8), HIDDEN (1024),
#              ROUNDS (2: best of)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-.}" && pwd)
dir=$(mktemp -d "${2:-/tmp}/ptdp-ckbench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# single_copy_mechanism none: on this project's VMs Open MPI's default (cma) costs about 0.7 s the
# first time a process moves 0.3 GB through it (a load's all-gather over d; README of this folder)
mpiexec=${MPIEXEC:-mpirun --bind-to none --oversubscribe --mca btl_vader_single_copy_mechanism none}
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mk() { sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1; }
iob="$build/io_bench"
[ -x "$iob" ] && [ "$iob" -nt "$here/io_bench.c" ] || $(mk CC) -O2 "$here/io_bench.c" -o "$iob"
cat > "$dir/deck.in" <<DECK
num-layers = ${LAYERS:-8}
hidden-size = ${HIDDEN:-1024}
num-attention-heads = 16
seq-length = 32
micro-batch-size = 1
train-iters = 1
mock-data = true
vocab-size = 50257
hidden-dropout = 0
attention-dropout = 0
DECK
echo "== $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; file system of $dir: $(df -T "$dir" | awk 'NR == 2 { print $2 }')"
# best of ROUNDS rounds of (raw write and read, save, load): the disk is shared and noisy
rate() { echo "$1" | sed -n "s/.*$2[^(]*(\([0-9.]*\) GB\/s).*/\1/p"; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 > b + 0) ? a : b }'; }
for layout in ${LAYOUTS:-1 2 4}; do
  case $layout in
    1) np=1 lay="" ;;
    2) np=2 lay="--use-distributed-optimizer" ;;
    4) np=4 lay="--tensor-model-parallel-size 2 --use-distributed-optimizer" ;;
    t4) np=4 lay="--tensor-model-parallel-size 4" ;;
    *) echo "bench_checkpoint: unknown layout '$layout' in LAYOUTS (1, 2, 4 or t4)" >&2; exit 2 ;;
  esac
  echo "== $np rank(s) $lay"
  bs=0 bl=0 bw=0 bp=0 br=0 bb=0 bd=0 ratios=""
  for round in $(seq "${ROUNDS:-2}"); do
    rm -rf "$dir/ck"
    sync # each timed step starts with no dirty pages of earlier ones waiting for the disk
    $mpiexec -np "$np" "$build/ptdp-train" "$dir/deck.in" $lay --save "$dir/ck" > "$dir/save.log" 2>&1 ||
      { tail "$dir/save.log"; exit 1; }
    bytes=$(stat -c %s "$dir/ck/iter_0000001/checkpoint.h5")
    sync
    rawsave=$($mpiexec -np "$np" "$iob" write "$dir/raw.bin" "$bytes")
    # every file is read from the device, each a while after it was written
    "$iob" --evict "$dir/ck/iter_0000001/checkpoint.h5" "$dir/raw.bin" "$dir/raw.bin.plain"
    $mpiexec -np "$np" "$build/ptdp-train" "$dir/deck.in" $lay --load "$dir/ck" > "$dir/load.log" 2>&1 ||
      { tail "$dir/load.log"; exit 1; }
    rawload=$($mpiexec -np "$np" "$iob" read "$dir/raw.bin" "$bytes")
    save=$(grep '^\[checkpoint\] saved' "$dir/save.log")
    load=$(grep '^\[checkpoint\] loaded' "$dir/load.log")
    rm -rf "$dir/ck" "$dir/raw.bin" "$dir/raw.bin.plain"
    raw="$rawsave $rawload"
    echo "   round $round: $save"
    echo "   round $round: $rawsave"
    echo "   round $round: $load"
    echo "   round $round: $rawload"
    bs=$(max $bs "$(rate "$save" saved)"); bl=$(max $bl "$(rate "$load" loaded)")
    bp=$(max $bp "$(rate "$raw" "plain write")"); bw=$(max $bw "$(rate "$raw" "streamed write")")
    rb=$(rate "$raw" "buffered read"); rd=$(rate "$raw" "direct read"); rr=$(max "$rb" "${rd:-0}")
    bb=$(max $bb "$rb"); bd=$(max $bd "${rd:-0}"); br=$(max $br "$rr")
    # this round's own ratios: save over the better raw write, load over the raw read
    ratios="$ratios$(awk -v s="$(rate "$save" saved)" -v l="$(rate "$load" loaded)" -v p="$(rate "$raw" "plain write")" \
      -v w="$(rate "$raw" "streamed write")" -v r="$rr" \
      'BEGIN { printf "%.4f %.4f\n", s / (w > p ? w : p), l / r }')
"
  done
  awk -v s=$bs -v l=$bl -v w=$bw -v p=$bp -v r=$br -v rb=$bb -v rd=$bd -v np=$np 'BEGIN {
    b = w > p ? w : p
    printf "   best: save %.3f GB/s, raw write+sync %.3f GB/s (plain %.3f, streamed %.3f): %.0f%% (of plain %.0f%%);  load %.3f GB/s, raw read %.3f GB/s (buffered %.3f, direct %.3f): %.0f%% (of buffered %.0f%%)\n",
      s, b, p, w, 100 * s / b, 100 * s / p, l, r, rb, rd, 100 * l / r, 100 * l / rb }'
  # the median over rounds of each round's ratio: no round's lucky raw figure meets another's save
  med() { printf "%s" "$ratios" | awk -v c="$1" '{ print $c }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  awk -v s="$(med 1)" -v l="$(med 2)" -v n="$(printf "%s" "$ratios" | wc -l)" 'BEGIN {
    printf "   median over %d rounds of each round\047s own ratio: save / raw write %.0f%%;  load / raw read %.0f%%\n", n, 100 * s, 100 * l }'
done
