#!/bin/sh
# The BPE word cache stays bounded and keeps its cost per word constant (no cliff when it fills):
# 300,000 distinct generated words through a 4 MiB cache, which holds about 33,000 of them.
# Work is counted, not timed.  Before the fix the cache compared its allocated size (which
# emptying never shrinks) with the limit, so after the first time it filled it was emptied at
# every new word: 267,231 resets for these 300,000 words, and it held 6.5 MiB.  Now each reset
# follows a full cache's worth of new words, so resets <= words / 10,000 (a 4 MiB cache holds
# at least 10,000 words of 10 bytes: about 360 bytes each at most, counting the table at its
# least occupancy of a quarter), and the ids equal those of a cache too large ever to be emptied.
# SKIPs (77) when inputs/fetch-data.sh has not been run (data dir: $PTDP_DATA_DIR or <src>/data).
. "$top_srcdir/validation/tests/common.sh"
D=${PTDP_DATA_DIR:-$top_srcdir/data}
for f in gpt2-vocab.json gpt2-merges.txt; do
  [ -f "$D/$f" ] || skip "$D/$f missing (run inputs/fetch-data.sh)"
done
T="$top_builddir/validation/tests/data/tokenize_tool"
n=300000
"$T" GPT2BPETokenizer "$D/gpt2-vocab.json" "$D/gpt2-merges.txt" distinct $n 4 check > "$TMPD/out"
ok $? "$n distinct words, 4 MiB cache: same ids as an unbounded cache"
cat "$TMPD/out"
field() { sed -n "s/.* $1 \([0-9]*\).*/\1/p" "$TMPD/out"; }
[ "$(field misses)" = $n ]; ok $? "every word is a cache miss (misses $(field misses))"
resets=$(field resets)
[ -n "$resets" ] && [ "$resets" -ge 1 ] && [ "$resets" -le $((n / 10000)) ]
ok $? "the cache is emptied once per cache's worth of words: 1 <= resets $resets <= $((n / 10000))"
[ "$(field 'most held')" -le $((4 * 1048576)) ]; ok $? "the cache never holds more than its limit ($(field 'most held') bytes)"
"$T" GPT2BPETokenizer "$D/gpt2-vocab.json" "$D/gpt2-merges.txt" distinct 10 0.5 > "$TMPD/err" 2>&1
[ $? -ne 0 ] && grep -q "at least 1 MiB" "$TMPD/err"; ok $? "a limit under 1 MiB is refused: $(cat "$TMPD/err")"
finish
