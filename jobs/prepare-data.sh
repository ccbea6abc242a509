#!/bin/bash
# Fetch the GPT-2 tokenizer files and the State of the Union corpus (checksums verified), and
# tokenise the corpus into Megatron's indexed format, once.
#   jobs/prepare-data.sh          (data directory: $PTDP_DATA_DIR or <repo>/data)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
data=${PTDP_DATA_DIR:-$top/data}
build=${BUILD_DIR:-$top/build}
"$top/inputs/fetch-data.sh" "$data"
if [ ! -f "$data/sotu_text_document.idx" ] && [ -x "$build/ptdp-preprocess" ]; then
  "$build/ptdp-preprocess" --input "$data/sotu.jsonl" --output-prefix "$data/sotu" \
    --vocab-file "$data/gpt2-vocab.json" --merge-file "$data/gpt2-merges.txt" --append-eod --workers "$(nproc)"
fi
