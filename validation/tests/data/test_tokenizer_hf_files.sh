#!/bin/sh
# Crafted tokenizer.json files (as issue 22 did for vocab.json): a small valid byte-level file
# and a small SentencePiece-style one encode as expected, and each file with one defect is
# refused with a message naming it (duplicated token or id, a merge naming an unknown token or
# making one, an incomplete byte alphabet, WordPiece and Unigram models, an unsupported
# normalizer, pre-tokenizer or pattern, a pattern that backtracks exponentially, an added
# token whose id contradicts the vocabulary, ids far beyond the vocabulary, not JSON).  Needs
# only /usr/bin/python3 (writes the files).
. "$top_srcdir/validation/tests/common.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY not found"
T="$top_builddir/validation/tests/data/tokenize_tool"

# write NAME EDIT: tokenizer.json in $TMPD/NAME from the small byte-level file changed by the
# Python statement EDIT (on j, the file as a dict; A(s) writes s in GPT-2's byte alphabet)
write() {
  mkdir -p "$TMPD/$1"
  "$PY" - "$TMPD/$1/tokenizer.json" "$2" <<'EOF'
import json, sys
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
u = dict(zip(bs, map(chr, cs)))
A = lambda s: "".join(u[b] for b in s.encode())
vocab = {u[b]: b for b in range(256)}
merges = []
for a, b in [("a", "b"), ("ab", "c"), (" ", "t"), ("h", "e"), (" t", "he")]:
    if A(b) not in vocab:
        vocab[A(b)] = len(vocab)
    merges.append(A(a) + " " + A(b))
    vocab[A(a + b)] = len(vocab)
j = {"version": "1.0", "normalizer": None, "decoder": {"type": "ByteLevel"},
     "added_tokens": [{"id": len(vocab), "content": "<|endoftext|>", "special": True}],
     "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
         {"type": "Split", "pattern": {"Regex": "(?i:'s)| ?\\p{L}+|\\s+(?!\\S)|\\s+|\\p{N}{1,3}|[^\\s\\p{L}\\p{N}]+"},
          "behavior": "Isolated", "invert": False},
         {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]},
     "model": {"type": "BPE", "vocab": vocab, "merges": merges}}
exec(sys.argv[2])
open(sys.argv[1], "w").write(json.dumps(j) if isinstance(j, dict) else j)
EOF
}
# refused NAME TEXT EDIT: the file is refused with a message holding TEXT
refused() {
  write "$1" "$3"
  printf 'abc the' > "$TMPD/text"
  "$T" HuggingFaceTokenizer "$TMPD/$1" - encode "$TMPD/text" > /dev/null 2> "$TMPD/$1.err"
  rc=$?
  [ "$rc" -ne 0 ] && grep -q -- "$2" "$TMPD/$1.err"
  ok $? "$1: refused, saying '$2' (exit $rc: $(head -c 200 "$TMPD/$1.err"))"
}

write valid "pass"
printf 'abc the abcabc<|endoftext|>1234' > "$TMPD/text"
# ids: the bytes are 0-255, then ab = 256, abc = 257, " t" = 258, he = 259, " the" = 260, <|endoftext|> = 261;
# pieces "abc", " the", " abcabc" (ab, ab, then abc, abc), the added token, "123", "4"
got=$("$T" HuggingFaceTokenizer "$TMPD/valid" - encode "$TMPD/text" | tr '\n' ' ')
[ "$got" = "257 260 32 257 257 261 49 50 51 52 " ]
ok $? "valid byte-level file: 'abc the abcabc<|endoftext|>1234' -> $got"
"$T" HuggingFaceTokenizer "$TMPD/valid" - roundtrip "$TMPD/text"; ok $? "valid byte-level file: decode(encode(x)) == x"

# a small SentencePiece-style file: characters, byte fallback, Prepend and Replace
mkdir -p "$TMPD/sp"
"$PY" - "$TMPD/sp/tokenizer.json" <<'EOF'
import json, sys
v = {"<unk>": 0, "<s>": 1, "</s>": 2}
for b in range(256):
    v["<0x%02X>" % b] = len(v)
for t in ["\u2581", "t", "h", "e", "\u2581t", "he", "\u2581the", "\u2581\u2581"]:
    v[t] = len(v)
j = {"added_tokens": [{"id": 2, "content": "</s>", "special": True}],
     "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
     "pre_tokenizer": None,
     "decoder": {"type": "Sequence", "decoders": [{"type": "Strip", "content": " ", "start": 1}]},
     "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "vocab": v,
               "merges": ["\u2581 t", "h e", "\u2581t he", "\u2581 \u2581"]}}
open(sys.argv[1], "w").write(json.dumps(j))
EOF
printf 'the  thé</s>x' > "$TMPD/text"
# "▁the▁▁thé", </s>, "▁x": ▁the = 265; then ▁ ▁ t h é, where "▁ t" (rank 0) merges before "▁ ▁" (rank 3):
# ▁ = 259, ▁t = 263, h = 261, é = <0xC3> <0xA9> = 198 172; </s> = 2; ▁ = 259, x = <0x78> = 123
got=$("$T" HuggingFaceTokenizer "$TMPD/sp" - encode "$TMPD/text" | tr '\n' ' ')
[ "$got" = "265 259 263 261 198 172 2 259 123 " ]; ok $? "SentencePiece-style file: 'the  thé</s>x' -> $got"
# (after an added token the Prepend normalizer adds a space again, as Hugging Face's does: text
# without added tokens round-trips)
printf 'the  thé x\t\377' > "$TMPD/text"
"$T" HuggingFaceTokenizer "$TMPD/sp" - roundtrip "$TMPD/text"; ok $? "SentencePiece-style file: decode(encode(x)) == x"

refused dup_id "is given to two tokens" 'j["model"]["vocab"][A("zz")] = 5'
refused id_gap_far "far beyond" 'j["model"]["vocab"][A("zz")] = 100000'
refused merge_unknown "the first part is not a token" 'j["model"]["merges"].append(A("qq") + " " + A("a"))'
refused merge_result "their concatenation is not a token" 'j["model"]["merges"].append(A("a") + " " + A("a"))'
refused merge_form "is not two tokens separated by one space" 'j["model"]["merges"].append("a")'
refused merge_pair "is not a pair of two strings" 'j["model"]["merges"].append(["a", "b", "c"])'
refused byte_alphabet "lacks the one-byte token for byte 0x41" \
  'del j["model"]["vocab"][A("A")]; j["model"]["merges"] = []'
refused alphabet_form "not written in GPT-2's byte alphabet" 'j["model"]["vocab"]["a b"] = 300'
refused wordpiece "model type 'WordPiece' is not supported" 'j["model"]["type"] = "WordPiece"'
refused unigram "model type 'Unigram' is not supported" 'j["model"]["type"] = "Unigram"'
refused nfkc "normalizer 'NFKC' is not supported" 'j["normalizer"] = {"type": "NFKC"}'
refused whitespace "pre_tokenizer 'Whitespace' is not supported" 'j["pre_tokenizer"] = {"type": "Whitespace"}'
SPLIT='j["pre_tokenizer"]["pretokenizers"][0]'
refused lookbehind "the group '(?<' is not supported" "$SPLIT"'["pattern"]["Regex"] = "(?<=a)b|."'
refused possessive "possessive quantifiers are not supported" "$SPLIT"'["pattern"]["Regex"] = "a++|."'
refused script "only general categories" "$SPLIT"'["pattern"]["Regex"] = "\\p{Han}+|."'
refused empty_match "can match the empty string" "$SPLIT"'["pattern"]["Regex"] = "a*"'
refused behavior "behavior 'MergedWithNext' is not supported" "$SPLIT"'["behavior"] = "MergedWithNext"'
refused added_id "has id 7 but model.vocab gives it id" 'j["added_tokens"] = [{"id": 7, "content": "a"}]'
refused suffix "end_of_word_suffix '</w>' is not supported" 'j["model"]["end_of_word_suffix"] = "</w>"'
refused not_json "is not a JSON object" 'j = "{\"model\": "'
# a key given twice (Python's json keeps the last, a lookup would take the first), at the top and
# inside model.vocab: refused, naming the file, the key and both byte offsets
refused key_twice "key_twice/tokenizer.json': the file: the key \"added_tokens\" appears twice in one object: at byte 1 and at byte" \
  'j = json.dumps(j).replace("{", "{\"added_tokens\": [], ", 1)'
refused token_twice "the key \"zz\" appears twice in one object: at byte [0-9]* and at byte [0-9]*" \
  'j = json.dumps(j).replace("\"vocab\": {", "\"vocab\": {\"zz\": 300, \"zz\": 301, ", 1)'
refused no_model "has no model" 'del j["model"]'

# a pattern that backtracks exponentially stops with a message instead of running for years
write backtrack 'j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a|a|a)*b|."'
head -c 60 /dev/zero | tr '\0' a > "$TMPD/text"
timeout 60 "$T" HuggingFaceTokenizer "$TMPD/backtrack" - encode "$TMPD/text" > /dev/null 2> "$TMPD/bt.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "backtracks too much" "$TMPD/bt.err"
ok $? "(a|a|a)*b on 60 a's: stopped with a message (exit $rc)"
finish
