#!/bin/sh
# Benchmark of data at scale.  Three parts, each also runnable alone:
#   1. the word-cache curve: GPT-2 BPE tokens/s on 100 thousand, 1 million and 10 million
#      distinct generated words (every word new, so every word a cache miss: the rate must stay
#      flat as the cache fills, empties and refills), default 64 MiB cache;
#   2. ptdp-preprocess MB/s and peak RSS by input size and workers (bench_data_preprocess.sh);
#   3. ptdp-train's start-up on a large generated corpus, cold and warm index cache
#      (bench_data_startup.sh).
# usage: validation/bench/bench_data.sh [BUILD_DIR] [DATA_DIR]   (build: make check; data: inputs/fetch-data.sh)
# environment: WORDS (default "100000 1000000 10000000"), PARTS (default "cache preprocess startup"),
#              and those of the two scripts it calls.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:-.}" && pwd)
data=${2:-${PTDP_DATA_DIR:-$src/data}}
tool="$build/validation/tests/data/tokenize_tool"
for part in ${PARTS:-cache preprocess startup}; do
  case $part in
  cache)
    [ -x "$tool" ] || { echo "bench_data.sh: build first (make check builds $tool)" >&2; exit 1; }
    [ -f "$data/gpt2-vocab.json" ] || { echo "bench_data.sh: no GPT-2 files in $data; run inputs/fetch-data.sh" >&2; exit 1; }
    echo "== word cache: GPT-2 BPE on N distinct words (each new to the cache), 64 MiB cache, 1 thread"
    first=
    for n in ${WORDS:-100000 1000000 10000000}; do
      line=$("$tool" GPT2BPETokenizer "$data/gpt2-vocab.json" "$data/gpt2-merges.txt" distinct "$n" 64)
      echo "$line"
      rate=$(echo "$line" | sed -n 's/.* \([0-9]*\) tokens\/s.*/\1/p')
      [ -n "$first" ] || first=$rate
      echo "   rate / rate at the first size = $(awk -v a="$rate" -v b="$first" 'BEGIN { printf "%.3f", a / b }')"
    done ;;
  preprocess) "$here/bench_data_preprocess.sh" "$build" ;;
  startup) "$here/bench_data_startup.sh" "$build" ;;
  *) echo "bench_data.sh: unknown part '$part' (cache, preprocess, startup)" >&2; exit 1 ;;
  esac
done
