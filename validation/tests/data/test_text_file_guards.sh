#!/bin/sh
# Files ptdp reads whole (ptdp/textfile.h) must be regular files of bounded size: a tokenizer.json
# that is /dev/zero, a FIFO with no writer, or a sparse file past the 1 GiB limit, and GPT-2's
# vocab.json and merges.txt as /dev/zero or a FIFO, are refused at once with a message naming the
# file and what it is (or its size and the limit), through the tokenizer (tokenize_tool) and
# through ptdp-preprocess; none is read until memory runs out or waited on.
. "$top_srcdir/validation/tests/common.sh"
T="$top_builddir/validation/tests/data/tokenize_tool"
PRE="$top_builddir/ptdp-preprocess"
printf 'abc' > "$TMPD/text"

# refused NAME PATTERN COMMAND...: exits non-zero within 30 s with a message matching PATTERN
refused() {
  refused_name=$1 refused_pattern=$2
  shift 2
  timeout 30 "$@" > /dev/null 2> "$TMPD/$refused_name.err" < /dev/null
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q -- "$refused_pattern" "$TMPD/$refused_name.err"
  ok $? "$refused_name: refused (exit $rc): $(grep -m 1 error "$TMPD/$refused_name.err" | cut -c 1-170)"
}

mkdir -p "$TMPD/zero" "$TMPD/fifo" "$TMPD/huge"
ln -s /dev/zero "$TMPD/zero/tokenizer.json"
mkfifo "$TMPD/fifo/tokenizer.json"
truncate -s 1073741825 "$TMPD/huge/tokenizer.json" # 1 GiB + 1 byte, sparse: no disk taken
refused zero "zero/tokenizer.json' is a character device, not a regular file" \
  "$T" HuggingFaceTokenizer "$TMPD/zero" - encode "$TMPD/text"
refused fifo "fifo/tokenizer.json' is a FIFO, not a regular file" \
  "$T" HuggingFaceTokenizer "$TMPD/fifo" - encode "$TMPD/text"
refused huge "huge/tokenizer.json' has 1073741825 bytes, more than the 1073741824" \
  "$T" HuggingFaceTokenizer "$TMPD/huge" - encode "$TMPD/text"
mkdir -p "$TMPD/dir/tokenizer.json"
refused directory "dir/tokenizer.json' is a directory, not a regular file" \
  "$T" HuggingFaceTokenizer "$TMPD/dir" - encode "$TMPD/text"
refused gpt2-vocab "vocabulary file '/dev/zero' is a character device" \
  "$T" GPT2BPETokenizer /dev/zero "$TMPD/fifo/tokenizer.json" encode "$TMPD/text"
/usr/bin/python3 "$top_srcdir/validation/tests/data/write_vocab.py" good "$TMPD/vocab.json" "$TMPD/merges.txt" > /dev/null ||
  skip "/usr/bin/python3 could not write a vocabulary"
refused gpt2-merges "merge file '$TMPD/fifo/tokenizer.json' is a FIFO" \
  "$T" GPT2BPETokenizer "$TMPD/vocab.json" "$TMPD/fifo/tokenizer.json" encode "$TMPD/text"
printf '{"text": "abc"}\n' > "$TMPD/in.jsonl"
refused preprocess "fifo/tokenizer.json' is a FIFO, not a regular file" \
  "$PRE" --input "$TMPD/in.jsonl" --output-prefix "$TMPD/out" --tokenizer-type HuggingFaceTokenizer \
  --tokenizer-model "$TMPD/fifo/tokenizer.json"
finish
