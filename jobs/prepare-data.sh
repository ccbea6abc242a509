#!/bin/bash
# Fetch the GPT-2 tokenizer files and the State of the Union corpus (checksums verified), and
# tokenise the corpus into Megatron's indexed format, once.
#   jobs/prepare-data.sh          (data directory: $PTDP_DATA_DIR or <repo>/data)
# The addresses come in year order; Megatron's split takes consecutive documents, so the
# validation split would be the latest decade alone.  The documents are shuffled first, with a
# fixed random source, so every split spans the whole period and every machine gets the same
# files: data/sotu_shuffled_text_document.{bin,idx}.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
data=${PTDP_DATA_DIR:-$top/data}
build=${BUILD_DIR:-$top/build}
"$top/inputs/fetch-data.sh" "$data"
if [ ! -f "$data/sotu_shuffled_text_document.idx" ]; then
  [ -x "$build/ptdp-preprocess" ] || { echo "prepare-data: build ptdp first ($build/ptdp-preprocess is missing)" >&2; exit 1; }
  shuf --random-source=<(yes ptdp-sotu) "$data/sotu.jsonl" > "$data/sotu_shuffled.jsonl.tmp"
  mv "$data/sotu_shuffled.jsonl.tmp" "$data/sotu_shuffled.jsonl"
  "$build/ptdp-preprocess" --input "$data/sotu_shuffled.jsonl" --output-prefix "$data/sotu_shuffled" \
    --vocab-file "$data/gpt2-vocab.json" --merge-file "$data/gpt2-merges.txt" --append-eod --workers "$(nproc)"
fi
