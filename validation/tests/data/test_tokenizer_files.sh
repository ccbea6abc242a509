#!/bin/sh
# Hostile GPT-2 tokenizer files (issue 22 item 3): small crafted vocabularies and merge files
# (write_vocab.py), each with one defect, must be refused with a message naming the file and
# the token or id, a non-zero exit and no signal; the well-formed one encodes "abba cab" as BPE
# should and round-trips.  The real GPT-2 files pass the same checks (test_tokenizer_gpt2.sh).
. "$top_srcdir/validation/tests/common.sh"
T="$top_builddir/validation/tests/data/tokenize_tool"
PP="$top_builddir/ptdp-preprocess"
W="$top_srcdir/validation/tests/data/write_vocab.py"
printf 'abba cab' > "$TMPD/text"

# refused KIND PHRASE: the tokenizer refuses KIND's files, naming the file and PHRASE
refused() {
  "$PYTHON3" "$W" "$1" "$TMPD/$1.json" "$TMPD/$1.txt" > "$TMPD/$1.rule" || return 1
  timeout 30 "$T" GPT2BPETokenizer "$TMPD/$1.json" "$TMPD/$1.txt" encode "$TMPD/text" > "$TMPD/$1.out" 2> "$TMPD/$1.err"
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] && [ ! -s "$TMPD/$1.out" ] && grep -qF -- "$2" "$TMPD/$1.err" || {
    echo "rc $rc, stderr:"; cat "$TMPD/$1.err"; return 1; }
}

"$PYTHON3" "$W" good "$TMPD/good.json" "$TMPD/good.txt" > /dev/null
ids=$("$T" GPT2BPETokenizer "$TMPD/good.json" "$TMPD/good.txt" encode "$TMPD/text" | tr '\n' ' ')
# a b b a -> (a b) b a -> ab (b a); ' ' c a b -> (' ' c) a b -> ' c' ab
[ "$ids" = "256 257 258 256 " ]; ok $? "well-formed files: 'abba cab' -> ab ba ' c' ab = 256 257 258 256 (got $ids)"
"$T" GPT2BPETokenizer "$TMPD/good.json" "$TMPD/good.txt" roundtrip "$TMPD/text"
ok $? "well-formed files: decode(encode(x)) == x"

# a token given twice as a key (json.load keeps the last id, a lookup the first): refused by the reader
sed 's/^{/{"ab": 7, /' "$TMPD/good.json" > "$TMPD/key_twice.json"
timeout 30 "$T" GPT2BPETokenizer "$TMPD/key_twice.json" "$TMPD/good.txt" encode "$TMPD/text" > /dev/null 2> "$TMPD/kt.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] &&
  grep -q "vocabulary file '$TMPD/key_twice.json': the key \"ab\" appears twice in one object: at byte 1 and at byte [0-9]" "$TMPD/kt.err"
ok $? "a token given twice refused, naming the file, the token and both places (exit $rc: $(head -c 300 "$TMPD/kt.err"))"

refused dup_id "vocabulary file '$TMPD/dup_id.json': id 64 is given to two tokens"
ok $? "duplicated id 64 ('a' and 'b') refused, naming the file, the id and the tokens"
# the planted defect is one the old rule (largest id + 1 == number of tokens) let through
[ "$(cat "$TMPD/dup_id.rule")" = old_rule_passes ]; ok $? "dup_id satisfies the old rule: only the new check catches it"
refused gap "vocabulary file '$TMPD/gap.json': ids must be 0..259, one per token, but no token has id 259"
ok $? "a gap in the ids refused, naming the missing id"
refused huge_id "no token has id 259 (largest id 1073741823)"
ok $? "id 2^30 - 1 in a 260-token file refused before sizing tables by it"
refused no_byte "vocabulary file '$TMPD/no_byte.json' lacks the one-byte token for byte 0x00"
ok $? "incomplete byte alphabet refused, naming the byte"
[ "$(cat "$TMPD/no_byte.rule")" = old_rule_passes ]; ok $? "no_byte keeps ids 0..n-1"
refused merge_part "merge file '$TMPD/merge_part.txt' line 5: merge 'q@ a': 'q@' is not a token"
ok $? "a merge naming a missing token refused, naming the line and the token"
refused merge_join "merge file '$TMPD/merge_join.txt' line 5: merge 'c a': its result 'ca' is not a token"
ok $? "a merge whose result is not a token refused"

# ptdp-preprocess with the duplicated id exits non-zero writing nothing (it wrote wrong ids)
printf '{"text": "abba cab"}\n' > "$TMPD/in.jsonl"
timeout 60 "$PP" --input "$TMPD/in.jsonl" --output-prefix "$TMPD/out" --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$TMPD/dup_id.json" --merge-file "$TMPD/dup_id.txt" --log-interval 0 > /dev/null 2> "$TMPD/pp.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] && grep -qF "id 64 is given to two tokens" "$TMPD/pp.err" && [ ! -e "$TMPD/out_text_document.bin" ]
ok $? "ptdp-preprocess refuses the duplicated id (exit $rc), no output"
finish
