#!/bin/sh
# bench_data_preprocess.sh [BUILD_DIR] [DATA_DIR]: ptdp-preprocess (--append-eod) on generated
# JSON lines of several sizes, per tokenizer and worker count; prints MB/s, tokens/s and peak
# resident memory (the tool's own getrusage figure, and /usr/bin/time's where it exists).
# Peak memory should not grow with the size: with ByteLevel it holds the input
# window and one round's tokens; GPT-2 adds each worker's word cache, which grows with the
# distinct words seen up to the tokenizer's cache limit.
# Environment: SIZES_MB (default "100 2000"), WORKERS (default "1 2"), TOKENIZERS (default
# "GPT2BPETokenizer ByteLevel"), VOCAB_WORDS (distinct words of the generated text, default
# 100000; see gen_jsonl.py), PYTHON3 (with numpy), TMPDIR (where the input and output go;
# about 1.6 times the largest size; removed after).
# Fetch the tokenizer files first: inputs/fetch-data.sh.  Example, small:
#   SIZES_MB="20 60" validation/bench/bench_data_preprocess.sh build
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-.}
data=${2:-${PTDP_DATA_DIR:-$src/data}}
PY=${PYTHON3:-/usr/bin/python3}
pp="$build/ptdp-preprocess"
[ -x "$pp" ] || { echo "bench_data_preprocess.sh: build first ($pp missing)" >&2; exit 1; }
[ -f "$data/gpt2-vocab.json" ] || { echo "bench_data_preprocess.sh: no tokenizer in $data; run inputs/fetch-data.sh" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-bench-pp.XXXXXX"); trap 'rm -rf "$tmp"' EXIT INT TERM
timer=; [ -x /usr/bin/time ] && timer=/usr/bin/time

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "generated text: $(printf '%s' "${VOCAB_WORDS:-100000}") distinct words, Zipf 1.07 (validation/bench/gen_jsonl.py)"
printf '%-16s %8s %7s %9s %8s %12s %12s %15s\n' tokenizer "size_MB" workers seconds "MB/s" "tokens/s" "peak_RSS_MB" "time_maxrss_MB"
for mb in ${SIZES_MB:-100 2000}; do
  "$PY" "$src/validation/bench/gen_jsonl.py" "$tmp/in.jsonl" "$mb" "${VOCAB_WORDS:-100000}"
  for tok in ${TOKENIZERS:-GPT2BPETokenizer ByteLevel}; do
    for w in ${WORKERS:-1 2}; do
      $timer ${timer:+-f "maxrss %M"} "$pp" --input "$tmp/in.jsonl" --output-prefix "$tmp/out" --tokenizer-type "$tok" \
        --vocab-file "$data/gpt2-vocab.json" --merge-file "$data/gpt2-merges.txt" --append-eod --workers "$w" \
        --log-interval 0 2> "$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
      # "... in S s: R MB/s, T tokens/s[, peak RSS M MB]" (older builds print no peak RSS)
      set -- $(sed -n 's/.* in \([0-9.]*\) s: \([0-9.]*\) MB\/s, \([0-9]*\) tokens\/s.*/\1 \2 \3/p' "$tmp/log")
      [ $# -eq 3 ] || { cat "$tmp/log" >&2; exit 1; }
      rss=$(sed -n 's/.*peak RSS \([0-9]*\) MB.*/\1/p' "$tmp/log")
      maxrss=$(sed -n 's/^maxrss \([0-9]*\)/\1/p' "$tmp/log")
      printf '%-16s %8s %7s %9s %8s %12s %12s %15s\n' "$tok" "$(($(wc -c < "$tmp/in.jsonl") / 1000000))" "$w" "$1" "$2" "$3" \
        "${rss:--}" "${maxrss:+$((maxrss / 1024))}"
      rm -f "$tmp"/out_*
    done
  done
  rm -f "$tmp/in.jsonl"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
