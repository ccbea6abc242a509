#!/bin/sh
# ptdp-preprocess: output identical for any worker count and any input window (documents cut
# across windows, a pipe as input), readable by an independent Python reader, the text input
# format, clear errors (non-zero exit, no .idx left) on bad input, and peak memory that does
# not grow with the input.
. "$top_srcdir/validation/tests/common.sh"
PP="$top_builddir/ptdp-preprocess"
DUMP="$top_builddir/validation/tests/data/mmidx_dump"
PY=${PYTHON3:-/usr/bin/python3}
RD="$top_srcdir/validation/tests/data/read_mmidx.py"
bl() { "$PP" --tokenizer-type ByteLevel --log-interval 0 "$@"; }

# a few thousand documents of mixed content, as JSON lines (Python writes the JSON)
"$PY" - "$TMPD/in.jsonl" <<'PYEOF'
import json, random, sys
r = random.Random(5)
words = ["alpha", "beta", "γάμμα", "日本", "don't", "1984", "—", "\"q\"", "tab\there", "x\ny"]
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        text = " ".join(r.choice(words) for _ in range(r.randrange(0, 60)))
        f.write(json.dumps({"id": i, "text": text}, ensure_ascii=(i % 2 == 0)) + "\n")
PYEOF
bl --input "$TMPD/in.jsonl" --output-prefix "$TMPD/w1" --append-eod --workers 1; ok $? "ByteLevel, 1 worker"
bl --input "$TMPD/in.jsonl" --output-prefix "$TMPD/w4" --append-eod --workers 4; ok $? "ByteLevel, 4 workers"
cmp -s "$TMPD/w1_text_document.bin" "$TMPD/w4_text_document.bin" &&
  cmp -s "$TMPD/w1_text_document.idx" "$TMPD/w4_text_document.idx"
ok $? "--workers 1 and 4 give identical .bin and .idx"
"$DUMP" "$TMPD/w1_text_document" > "$TMPD/c.txt" && "$PY" "$RD" "$TMPD/w1_text_document" > "$TMPD/py.txt" &&
  cmp -s "$TMPD/c.txt" "$TMPD/py.txt"
ok $? "ptdp's output reads the same in the independent Python reader"
"$PY" - "$TMPD/in.jsonl" "$TMPD/c.txt" <<'PYEOF'
import json, sys
docs = [json.loads(l)["text"].encode() for l in open(sys.argv[1], encoding="utf-8")]
lines = open(sys.argv[2]).read().split("\n")
head, seqs = lines[:2], lines[2:]
assert head[0] == "dtype=uint16 sequences=%d documents=3000" % sum(1 for d in docs if d), head[0]
want = [" ".join(map(str, list(d) + [256])) for d in docs if d]
assert seqs[:len(want)] == want, "tokens differ from the document bytes + EOD"
PYEOF
ok $? "ByteLevel tokens are the UTF-8 bytes of each text plus EOD 256; empty texts are empty documents"

# plain text: documents are blocks separated by blank lines
printf 'first doc\nline two\n\n \n\nsecond doc\n\n\nthird\r\n' > "$TMPD/in.txt"
bl --input "$TMPD/in.txt" --input-format text --output-prefix "$TMPD/t" && "$DUMP" "$TMPD/t_text_document" > "$TMPD/t.txt"
ok $? "text input"
grep -q "sequences=3 documents=3" "$TMPD/t.txt" && sed -n 3p "$TMPD/t.txt" | grep -q "^102 105 114 115 116 32 100 111 99 10 108"
ok $? "text input: 3 blank-line-separated documents, newlines inside kept"

# the input is read through a window (--window-bytes, default 16 MiB): windows smaller than a
# line or a text block cut documents across refills and grow the window; the output must not
# change, nor the line numbers in messages
"$PY" - "$TMPD/in.jsonl" "$TMPD/blocks.txt" <<'PYEOF'
import json, random, sys
r = random.Random(8)
with open(sys.argv[2], "w", encoding="utf-8") as g:
    for line in open(sys.argv[1], encoding="utf-8"):
        g.write(json.loads(line)["text"].replace("\n\n", "\n") + "\n" + r.choice(["\n", "\n\n", " \r\n\n", "\t\n"]))
PYEOF
bl --input "$TMPD/blocks.txt" --input-format text --output-prefix "$TMPD/b" --append-eod
for wb in 1 7 4096; do
  for w in 1 3; do
    bl --input "$TMPD/in.jsonl" --output-prefix "$TMPD/wj" --append-eod --workers $w --window-bytes $wb &&
      bl --input "$TMPD/blocks.txt" --input-format text --output-prefix "$TMPD/wt" --append-eod --workers $w --window-bytes $wb &&
      cmp -s "$TMPD/w1_text_document.bin" "$TMPD/wj_text_document.bin" && cmp -s "$TMPD/w1_text_document.idx" "$TMPD/wj_text_document.idx" &&
      cmp -s "$TMPD/b_text_document.bin" "$TMPD/wt_text_document.bin" && cmp -s "$TMPD/b_text_document.idx" "$TMPD/wt_text_document.idx"
    ok $? "--window-bytes $wb, $w worker(s): jsonl and text outputs identical to the default window's"
  done
done
cat "$TMPD/blocks.txt" | bl --input /dev/stdin --input-format text --output-prefix "$TMPD/p" --append-eod --window-bytes 1000 &&
  cmp -s "$TMPD/b_text_document.bin" "$TMPD/p_text_document.bin" && cmp -s "$TMPD/b_text_document.idx" "$TMPD/p_text_document.idx"
ok $? "input from a pipe: the same output"

# bad input: clear message, non-zero exit, no .idx
bad() { # bad NAME EXPECTED-TEXT ARGS...: must fail, print EXPECTED-TEXT, leave no PREFIX_text_document.idx
  name=$1 want=$2; shift 2
  bl --output-prefix "$TMPD/bad" "$@" 2> "$TMPD/err"; rc=$?
  [ $rc -ne 0 ] && grep -q "$want" "$TMPD/err" && [ ! -e "$TMPD/bad_text_document.idx" ] &&
    [ ! -e "$TMPD/bad_text_document.idx.tmp" ]
  ok $? "$name: exit $rc, '$(head -c 150 "$TMPD/err" | tr '\n' ' ')'"
}
printf '{"text": "a"}\n{"text": "b"}\n{"text": "c"\n{"text": "d"}\n' > "$TMPD/m.jsonl"
bad "malformed JSON line" "line 3: malformed JSON" --input "$TMPD/m.jsonl"
bad "malformed JSON line, 5-byte window" "line 3: malformed JSON" --input "$TMPD/m.jsonl" --window-bytes 5
bl --input "$TMPD/m.jsonl" --output-prefix "$TMPD/skip" --skip-bad-lines 2> "$TMPD/err" &&
  "$DUMP" "$TMPD/skip_text_document" | grep -q "documents=3" && grep -q "skipped 1 bad" "$TMPD/err"
ok $? "--skip-bad-lines skips line 3 and keeps 3 documents"
printf '{"text": "a"}\n{"body": "b"}\n' > "$TMPD/k.jsonl"
bad "missing key" "line 2: key 'text' is missing" --input "$TMPD/k.jsonl"
printf '{"text": 5}\n' > "$TMPD/k.jsonl"
bad "non-string value" "key 'text' is a number, not a string or a list of strings" --input "$TMPD/k.jsonl"
printf '{"text": "ok \377 bad"}\n' > "$TMPD/u.jsonl"
bad "invalid UTF-8" "invalid UTF-8 byte 0xff" --input "$TMPD/u.jsonl"
printf '{"text": "\\ud800 lone"}\n' > "$TMPD/u.jsonl"
bad "lone surrogate escape" "unpaired high surrogate" --input "$TMPD/u.jsonl"
: > "$TMPD/e.jsonl"
bad "empty input" "is empty" --input "$TMPD/e.jsonl"
printf '\n\n  \n' > "$TMPD/e.jsonl"
bad "blank input" "holds no documents" --input "$TMPD/e.jsonl"
bad "missing input" "cannot open input" --input "$TMPD/nope.jsonl"
bl --input "$TMPD/in.jsonl" --output-prefix "$TMPD/no/such/dir/x" 2> "$TMPD/err"; [ $? -ne 0 ] && grep -q "cannot create" "$TMPD/err"
ok $? "unwritable output: $(head -c 120 "$TMPD/err")"
"$PP" --input x --output-prefix y --tokenizer-type GPT2BPETokenizer 2> "$TMPD/err"; [ $? -ne 0 ] && grep -q "vocab-file" "$TMPD/err"
ok $? "GPT2BPETokenizer without --vocab-file"
"$PP" --bogus 2> /dev/null; [ $? -eq 2 ]; ok $? "unknown option fails with argparse's exit status 2"
"$PP" --input x --output-prefix y --workers 1e1 2> "$TMPD/err"; [ $? -eq 2 ] &&
  grep -qF "invalid value '1e1' for workers (command line): expected an integer in [1, 256] (an integer key takes digits, not an exponent or a fraction: write 10)" "$TMPD/err"
ok $? "an integer with an exponent is refused naming the key: $(head -c 150 "$TMPD/err")"
"$PP" --input x --output-prefix y --wrokers 2 2> "$TMPD/err"; [ $? -eq 2 ] &&
  grep -qF "unknown key 'wrokers' (command line); did you mean 'workers'? (ptdp-preprocess --help lists every key)" "$TMPD/err"
ok $? "a misspelt key names ptdp-preprocess and the nearest key: $(head -c 150 "$TMPD/err")"
"$PP" --input x --output-prefix y --input-format csv 2> "$TMPD/err"; [ $? -eq 2 ] &&
  grep -qF "invalid value 'csv' for input-format (command line): expected one of jsonl|text" "$TMPD/err"
ok $? "input-format is a choice: $(head -c 150 "$TMPD/err")"
bl --input "$TMPD/in.jsonl" --output "$TMPD/abbr" --append --workers 1 && cmp -s "$TMPD/w1_text_document.bin" "$TMPD/abbr_text_document.bin" &&
  cmp -s "$TMPD/w1_text_document.idx" "$TMPD/abbr_text_document.idx"
ok $? "unique prefixes stand for their keys, as argparse takes them (--output, --append)"
"$PP" --in x --output-prefix y 2> "$TMPD/err"; [ $? -eq 2 ] &&
  grep -qF "ambiguous key 'in' (command line): it abbreviates input, input-format" "$TMPD/err"
ok $? "an ambiguous prefix is refused naming its keys: $(head -c 150 "$TMPD/err")"
"$PP" --output-prefix y 2> "$TMPD/err"; [ $? -eq 2 ] && grep -qF -- "--input FILE is required" "$TMPD/err"
ok $? "--input is required"
[ "$("$PP" --version | cut -d' ' -f1)" = ptdp-preprocess ]; ok $? "--version: $("$PP" --version)"
"$PP" --help > "$TMPD/help"
for o in input output-prefix tokenizer-type vocab-file merge-file json-keys input-format append-eod skip-bad-lines workers \
  log-interval window-bytes; do
  grep -q "^$o " "$TMPD/help" || { echo "--help lacks $o"; false; } || break
done
ok $? "--help lists every option"

# Peak memory must not grow with the input.  60 MB and 20 MB (its first third) of short JSON
# lines (~55 bytes, 1.1 M documents): reading the whole input into memory (or mapping it) would
# add 40 MB, holding the output 80 MB, holding the index in memory (12 bytes per sequence, 8
# per document) about 15 MB.  What legitimately stays is one window, one round's tokens and
# the tokenizer, the same for both sizes (measured: equal to the MB), so a margin of 8 MB
# catches any state of 0.2 bytes per input byte or 8 bytes per document.
"$PY" - "$TMPD/m60.jsonl" <<'PYEOF'
import json, random, sys
r = random.Random(11)
words = ["the", "of", "and", "data", "γάμμα", "日本", "don't", "1984", "x\ny", "corpus", "model", "scale"]
pool = [json.dumps({"text": " ".join(r.choice(words) for _ in range(r.randrange(0, 12)))}) + "\n" for _ in range(4000)]
open(sys.argv[1], "w").write("".join(r.choices(pool, k=60_000_000 // 55)))
PYEOF
head -n $(($(wc -l < "$TMPD/m60.jsonl") / 3)) "$TMPD/m60.jsonl" > "$TMPD/m20.jsonl"
# (under --enable-sanitizers, ASan's quarantine of freed blocks would grow with the input: off here)
rss() {
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0:thread_local_quarantine_size_kb=0" \
    bl --input "$1" --output-prefix "$TMPD/rss" --append-eod 2>&1 | sed -n 's/.*peak RSS \([0-9]*\) MB.*/\1/p'
}
r20=$(rss "$TMPD/m20.jsonl"); r60=$(rss "$TMPD/m60.jsonl")
[ -n "$r20" ] && [ -n "$r60" ] && [ $((r60 - r20)) -lt 8 ]
ok $? "peak RSS $r20 MB on $(($(wc -c < "$TMPD/m20.jsonl") / 1000000)) MB of input, $r60 MB on $(($(wc -c < "$TMPD/m60.jsonl") / 1000000)) MB (margin 8 MB)"
rm -f "$TMPD"/m20.jsonl "$TMPD"/m60.jsonl "$TMPD"/rss_*

# GPT-2 on the real corpus when it has been fetched
D=${PTDP_DATA_DIR:-$top_srcdir/data}
if [ -f "$D/sotu.jsonl" ] && [ -f "$D/gpt2-vocab.json" ]; then
  for w in 1 2; do
    "$PP" --input "$D/sotu.jsonl" --output-prefix "$TMPD/s$w" --vocab-file "$D/gpt2-vocab.json" \
      --merge-file "$D/gpt2-merges.txt" --append-eod --workers $w --log-interval 0 || break
  done
  cmp -s "$TMPD/s1_text_document.bin" "$TMPD/s2_text_document.bin" && cmp -s "$TMPD/s1_text_document.idx" "$TMPD/s2_text_document.idx"
  ok $? "GPT-2 on sotu.jsonl: identical for 1 and 2 workers"
  "$DUMP" "$TMPD/s1_text_document" | head -1 | grep -q "dtype=uint16 sequences=233 documents=233"
  ok $? "GPT-2 on sotu.jsonl: 233 documents, uint16"
else
  echo "note: $D not fetched; GPT-2 preprocessing checks skipped"
fi
finish
