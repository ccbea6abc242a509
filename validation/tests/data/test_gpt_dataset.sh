#!/bin/sh
# GPT dataset through the trainer's API: identical samples from 1 and 4 ranks, cache reuse,
# blending counts that track the weights, every sample seq_length+1 tokens in range, and an
# open that reads no tokens (a sparse 256 MB .bin stays out of the page cache).
. "$top_srcdir/validation/tests/common.sh"
PP="$top_builddir/ptdp-preprocess"
G="$top_builddir/validation/tests/data/gpt_data_tool"
PY=${PYTHON3:-/usr/bin/python3}
"$PY" - "$TMPD/a.jsonl" "$TMPD/b.jsonl" <<'PYEOF'
import json, random, sys
for path, seed in zip(sys.argv[1:], (1, 2)):
    r = random.Random(seed)
    with open(path, "w") as f:
        for i in range(400):
            f.write(json.dumps({"text": "".join(r.choice("abcdefgh ") for _ in range(r.randrange(0, 300)))}) + "\n")
PYEOF
for x in a b; do
  "$PP" --tokenizer-type ByteLevel --input "$TMPD/$x.jsonl" --output-prefix "$TMPD/$x" --append-eod --log-interval 0 || exit 1
done
A="$TMPD/a_text_document" B="$TMPD/b_text_document"
$MPIRUN -n 1 "$G" "$A" 969,30,1 64 3000 100 5 1234 "$TMPD/c1" > "$TMPD/n1"; ok $? "open from 1 rank: $(head -1 "$TMPD/n1")"
$MPIRUN -n 4 "$G" "$A" 969,30,1 64 3000 100 5 1234 "$TMPD/c4" > "$TMPD/n4"; ok $? "open from 4 ranks (each rank checks its samples against rank 0)"
cmp -s "$TMPD/n1" "$TMPD/n4"; ok $? "1 rank and 4 ranks build identical indices and samples"
m=$(sed -n 's/^max_token=//p' "$TMPD/n1"); [ -n "$m" ] && [ "$m" -ge 0 ] && [ "$m" -lt 257 ]
ok $? "every token id fits the ByteLevel vocabulary (largest $m < 257)"
ls "$TMPD/c1"/gpt-train-*.idx > /dev/null 2>&1 && cmp -s "$TMPD"/c1/gpt-train-*.idx "$TMPD"/c4/gpt-train-*.idx
ok $? "index cache files written and identical"
touch -d '2000-01-01' "$TMPD"/c4/*.idx; before=$(ls -l --time-style=+%s "$TMPD"/c4 | md5sum)
$MPIRUN -n 2 "$G" "$A" 969,30,1 64 3000 100 5 1234 "$TMPD/c4" > "$TMPD/n2" && cmp -s "$TMPD/n1" "$TMPD/n2" &&
  [ "$(ls -l --time-style=+%s "$TMPD"/c4 | md5sum)" = "$before" ]
ok $? "second run reuses the cache (files untouched) with the same samples"
$MPIRUN -n 1 "$G" "$A" 969,30,1 64 3000 100 5 99 "$TMPD/c4" > "$TMPD/s99" && ! cmp -s "$TMPD/n1" "$TMPD/s99" &&
  [ "$(ls "$TMPD"/c4/gpt-train-*.idx | wc -l)" -eq 2 ]
ok $? "another seed: other samples, its own cache file"
$MPIRUN -n 2 "$G" "0.3 $A 0.7 $B" 90,10 64 2000 100 0 7 "$TMPD/c4" > "$TMPD/bl"; ok $? "blend opens: $(head -1 "$TMPD/bl")"
grep -q "split 0 samples=2000 .* from0=600 from1=1400" "$TMPD/bl"; ok $? "blend 0.3/0.7 of 2000 samples: 600 and 1400"
$MPIRUN -n 1 "$G" "0.3 $A 0.7" 969,30,1 64 10 0 0 7 "$TMPD/c4" 2> "$TMPD/err"; [ $? -ne 0 ] && grep -q "data-path" "$TMPD/err"
ok $? "malformed data-path: $(head -c 120 "$TMPD/err")"
$MPIRUN -n 2 "$G" "$TMPD/none" 969,30,1 64 10 0 0 7 "$TMPD/c4" 2> "$TMPD/err"; [ $? -ne 0 ] && grep -q "cannot open index file" "$TMPD/err"
ok $? "missing prefix: $(head -c 120 "$TMPD/err")"
# open reads no tokens: 16 documents of 2^23 uint16 tokens in a sparse .bin (no page of it is
# cached until something reads it); a scan of the .bin, as the vocabulary hint once did, would
# bring every page in.  Counted with mincore, not timed.
"$PY" - "$TMPD/sparse.idx" <<'PYEOF'
import struct, sys
S, L = 16, 1 << 23
with open(sys.argv[1], "wb") as f:
    f.write(b"MMIDIDX\0\0" + struct.pack("<QBQQ", 1, 8, S, S + 1))
    f.write(struct.pack("<%di" % S, *[L] * S) + struct.pack("<%dq" % S, *[2 * L * i for i in range(S)]))
    f.write(struct.pack("<%dq" % (S + 1), *range(S + 1)))
PYEOF
truncate -s $((2 * 16 * (1 << 23))) "$TMPD/sparse.bin"
$MPIRUN -n 2 "$G" "$TMPD/sparse" 1 65536 1 0 0 7 "$TMPD/c4" open-only > "$TMPD/sp"; rc=$?
line=$(grep "bin pages resident" "$TMPD/sp")
case "$line" in
  *"before=0 after=0 of 65536") ok $rc "open reads no token ($line)" ;;
  *"before=0 "*) ok 1 "open reads tokens of the .bin: $line" ;;
  *) ok $rc "open reads no token: not checked, this file system caches holes ($line)" ;;
esac
finish
