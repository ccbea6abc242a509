#!/bin/sh
# ptdp-preprocess on Megatron's list-valued JSON fields (pre-split sentences).  Megatron's
# tools/preprocess_data.py writes, per key, one sequence per list item that has tokens (an
# empty item or an empty list gives none), a string being a list of one; --append-eod adds the
# EOD to the document's last sequence; any other value stops it.  Checked here byte for byte,
# .bin and .idx, against files built independently (Python's json, the UTF-8 bytes or the
# reference JavaScript GPT-2 encoder, write_mmidx.py), for one and two keys, with and without
# --append-eod; bad values fail naming the line and key; and training reads the sequences of
# such documents as Megatron's GPTDataset does (each sequence a unit, document index unused).
. "$top_srcdir/validation/tests/common.sh"
PP="$top_builddir/ptdp-preprocess"
DUMP="$top_builddir/validation/tests/data/mmidx_dump"
G="$top_builddir/validation/tests/data/gpt_data_tool"
PY=${PYTHON3:-/usr/bin/python3}
HERE="$top_srcdir/validation/tests/data"
bl() { "$PP" --tokenizer-type ByteLevel --log-interval 0 "$@"; }

# Documents with lists, strings, empty items, empty lists, two keys; some lines spaced or with
# a repeated key (Python keeps the last), written by hand.
"$PY" - "$TMPD/in.jsonl" <<'PYEOF'
import json, random, sys
r = random.Random(9)
words = ["alpha", "beta", "γάμμα", "日本", "don't", "1984", "—", "\"q\"", "tab\there", "x\ny", " ", "🎉"]
def sent():
    return " ".join(r.choice(words) for _ in range(r.randrange(0, 7)))
def field():
    return sent() if r.random() < 0.3 else [sent() for _ in range(r.randrange(0, 6))]
with open(sys.argv[1], "w", encoding="utf-8") as f:
    fixed = [{"text": ["First sentence.", " Second one.", "Third!"], "title": "A title"},
             {"text": ["", "after an empty item", ""], "title": ["", ""]},
             {"text": [], "title": "an empty list: no sequences"},
             {"text": "", "title": []},
             {"text": ["", ""], "title": ["t"]}]
    for d in fixed:
        f.write(json.dumps(d) + "\n")
    f.write('{ "title" : [ "spaced" , "out" ] , "text" : "dropped" , "text" : [ "the last" , " text wins" ] }\n')
    for i in range(600):
        f.write(json.dumps({"id": i, "text": field(), "title": field()}, ensure_ascii=(i % 2 == 0)) + "\n")
PYEOF

# expect IN PREFIX KEY EOD APPEND ENCODING: write PREFIX.bin/.idx as Megatron would for KEY;
# ENCODING is "bytes" (ByteLevel) or a JSON file mapping each text to its ids.
expect() {
  "$PY" - "$@" <<'PYEOF'
import json, sys
sys.path.insert(0, sys.argv[7])
from write_mmidx import write_docs
inp, prefix, key, eod, append, encoding = sys.argv[1:7]
ids = (lambda s: list(s.encode("utf-8"))) if encoding == "bytes" else json.load(open(encoding)).__getitem__
docs = []
for line in open(inp, encoding="utf-8"):
    v = json.loads(line)[key]
    seqs = [ids(s) for s in (v if isinstance(v, list) else [v])]
    seqs = [s for s in seqs if s]  # an item with no tokens is no sequence
    if append == "1" and seqs:
        seqs[-1] = seqs[-1] + [int(eod)]
    docs.append(seqs)
write_docs(prefix, 8, docs)  # uint16: both vocabularies are under 65,500
PYEOF
}
same() { cmp -s "$1.bin" "$2.bin" && cmp -s "$1.idx" "$2.idx"; }

for app in 0 1; do
  eodarg=; [ $app = 1 ] && eodarg=--append-eod
  for key in text title; do expect "$TMPD/in.jsonl" "$TMPD/want$app$key" $key 256 $app bytes "$HERE" || exit 1; done
  for w in 1 3; do
    bl --input "$TMPD/in.jsonl" --output-prefix "$TMPD/got$app$w" --json-keys text,title --workers $w $eodarg
    ok $? "ByteLevel, keys text,title, append-eod=$app, $w worker(s): runs"
    same "$TMPD/got${app}${w}_text_document" "$TMPD/want${app}text" &&
      same "$TMPD/got${app}${w}_title_document" "$TMPD/want${app}title"
    ok $? "ByteLevel, append-eod=$app, $w worker(s): both keys' .bin and .idx byte-identical to Megatron's"
  done
done
"$DUMP" "$TMPD/got11_text_document" | sed -n 2p | grep -q "^doc_idx: 0 3 4 4 4 4 6 "
ok $? "document index: 3 sequences, 1 (empty items dropped), 0 (empty list), 0 (empty string), 0, 2"
bl --input "$TMPD/in.jsonl" --output-prefix "$TMPD/one" --json-keys title --append-eod &&
  same "$TMPD/one_title_document" "$TMPD/want1title"
ok $? "one key of two: the same files as with both keys"
# Megatron's spelling: --json-keys takes one or more arguments (argparse nargs='+')
bl --input "$TMPD/in.jsonl" --output-prefix "$TMPD/nargs" --json-keys text title --append-eod &&
  same "$TMPD/nargs_text_document" "$TMPD/want1text" && same "$TMPD/nargs_title_document" "$TMPD/want1title"
ok $? "--json-keys text title (Megatron's nargs='+'): the same files as text,title"

# GPT-2, every distinct text encoded by the reference JavaScript encoder
D=${PTDP_DATA_DIR:-$top_srcdir/data}
if [ -f "$D/gpt2-vocab.json" ] && [ -f "$D/gpt-3-encoder/Encoder.js" ] && command -v node > /dev/null 2>&1; then
  "$PY" - "$TMPD/in.jsonl" "$TMPD/texts.json" <<'PYEOF'
import json, sys
texts = set()
for line in open(sys.argv[1], encoding="utf-8"):
    for v in json.loads(line).values():
        if isinstance(v, str): texts.add(v)
        elif isinstance(v, list): texts.update(v)
json.dump(sorted(texts), open(sys.argv[2], "w"))
PYEOF
  cat > "$TMPD/enc.js" <<'JSEOF'
const path = require('path'), fs = require('fs');
const { encode } = require(path.resolve(process.argv[2], 'Encoder.js'));
const texts = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const ids = {};
for (const t of texts) ids[t] = encode(t);
fs.writeFileSync(process.argv[4], JSON.stringify(ids));
JSEOF
  node "$TMPD/enc.js" "$D/gpt-3-encoder" "$TMPD/texts.json" "$TMPD/ids.json" &&
    expect "$TMPD/in.jsonl" "$TMPD/gwant_text" text 50256 1 "$TMPD/ids.json" "$HERE" &&
    expect "$TMPD/in.jsonl" "$TMPD/gwant_title" title 50256 1 "$TMPD/ids.json" "$HERE" &&
    "$PP" --input "$TMPD/in.jsonl" --output-prefix "$TMPD/g" --json-keys "text title" --vocab-file "$D/gpt2-vocab.json" \
      --merge-file "$D/gpt2-merges.txt" --append-eod --workers 2 --log-interval 0 &&
    same "$TMPD/g_text_document" "$TMPD/gwant_text" && same "$TMPD/g_title_document" "$TMPD/gwant_title"
  ok $? "GPT-2, keys text,title, append-eod, 2 workers: byte-identical to Megatron's (JavaScript encoder per item)"
else
  echo "note: $D or node missing; GPT-2 list checks skipped"
fi

# values that are neither a string nor a list of strings: Megatron stops; so does ptdp, naming
# the line and key (--skip-bad-lines skips the line instead)
for v in '5' 'null' 'true' '{"a": "b"}' '["a", 3]' '["a", ["b"]]' '["a", null]'; do
  printf '{"text": ["fine"], "title": "ok"}\n{"text": ["ok"], "title": %s}\n' "$v" > "$TMPD/bad.jsonl"
  bl --input "$TMPD/bad.jsonl" --output-prefix "$TMPD/bad" --json-keys text,title 2> "$TMPD/err"; rc=$?
  [ $rc -ne 0 ] && grep -q "line 2: key 'title'.*not a string" "$TMPD/err" && [ ! -e "$TMPD/bad_text_document.idx" ] &&
    [ ! -e "$TMPD/bad_title_document.idx" ]
  ok $? "title = $v: exit $rc, '$(sed 's/.*line 2/line 2/' "$TMPD/err" | head -c 110)'"
done
bl --input "$TMPD/bad.jsonl" --output-prefix "$TMPD/skip" --json-keys text,title --skip-bad-lines 2> /dev/null &&
  "$DUMP" "$TMPD/skip_text_document" | head -1 | grep -q "sequences=1 documents=1"
ok $? "--skip-bad-lines drops the bad line from every key's output"

# Training: Megatron's GPTDataset splits and shuffles sequences, not documents (its
# numel_low_level_dataset is the sequence count), and so does ptdp's.  Documents of several
# sequences therefore give the samples of the same sequences written one per document.
"$PY" - "$TMPD/L.jsonl" "$TMPD/S.jsonl" <<'PYEOF'
import json, random, sys
r = random.Random(3)
with open(sys.argv[1], "w") as fl, open(sys.argv[2], "w") as fs:
    for i in range(300):
        items = ["".join(r.choice("abcdefgh ") for _ in range(r.randrange(0, 80))) for _ in range(r.randrange(0, 5))]
        fl.write(json.dumps({"text": items}) + "\n")
        for t in items:
            if t: fs.write(json.dumps({"text": t}) + "\n")
PYEOF
bl --input "$TMPD/L.jsonl" --output-prefix "$TMPD/L" && bl --input "$TMPD/S.jsonl" --output-prefix "$TMPD/S" &&
  cmp -s "$TMPD/L_text_document.bin" "$TMPD/S_text_document.bin" &&
  ! cmp -s "$TMPD/L_text_document.idx" "$TMPD/S_text_document.idx"
ok $? "list file and one-sentence-per-line file: same .bin, different document index"
$MPIRUN -n 2 "$G" "$TMPD/L_text_document" 969,30,1 64 500 20 5 1234 "$TMPD/cL" > "$TMPD/nL" &&
  $MPIRUN -n 1 "$G" "$TMPD/S_text_document" 969,30,1 64 500 20 5 1234 "$TMPD/cS" > "$TMPD/nS" && cmp -s "$TMPD/nL" "$TMPD/nS"
ok $? "training reads documents of several sequences as Megatron does: same samples ($(head -1 "$TMPD/nL"))"
finish
