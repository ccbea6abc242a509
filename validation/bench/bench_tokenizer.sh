#!/bin/sh
# bench_tokenizer.sh [BUILD_DIR] [DATA_DIR]: GPT-2 BPE and ByteLevel tokenizer throughput
# (tokens/s, MB/s; fresh word cache per repetition, best of 3) on the State of the Union
# corpus, and ptdp-preprocess end to end with 1 and 2 workers.  Fetch the data first:
# inputs/fetch-data.sh.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-.}
data=${2:-${PTDP_DATA_DIR:-$src/data}}
tool="$build/validation/tests/data/tokenize_tool"
[ -x "$tool" ] || { echo "bench_tokenizer.sh: build first (make check builds $tool)" >&2; exit 1; }
[ -f "$data/sotu.txt" ] || { echo "bench_tokenizer.sh: no corpus in $data; run inputs/fetch-data.sh" >&2; exit 1; }
"$tool" GPT2BPETokenizer "$data/gpt2-vocab.json" "$data/gpt2-merges.txt" bench "$data/sotu.txt" 3
"$tool" ByteLevel - - bench "$data/sotu.txt" 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-bench.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
for w in 1 2; do
  "$build/ptdp-preprocess" --input "$data/sotu.jsonl" --output-prefix "$tmp/s" --vocab-file "$data/gpt2-vocab.json" \
    --merge-file "$data/gpt2-merges.txt" --append-eod --workers $w 2>&1 | sed "s/^/workers=$w: /"
done
