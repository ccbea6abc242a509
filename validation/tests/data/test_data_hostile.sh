#!/bin/sh
# Hostile data settings reach the GPT dataset as clear errors: a split
# with an infinite weight (1e999 was accepted as 100/0/0), strtod's forms Megatron does not
# read (exponent, hex), and sample counts beyond what the index can hold.  Each must exit
# non-zero without a signal, with a message naming the split or the count.
. "$top_srcdir/validation/tests/common.sh"
G="$top_builddir/validation/tests/data/gpt_data_tool"
"$PYTHON3" "$top_srcdir/validation/tests/data/write_mmidx.py" "$TMPD/ds" 4 > /dev/null || exit 99

LAUNCH_TIMEOUT=60
# refused NAME PHRASE SPLIT NTRAIN: gpt_data_tool on the small dataset fails naming PHRASE
refused() {
  launch 1 "$G" "$TMPD/ds" "$3" 8 "$4" 0 0 1 "$TMPD/cache-$1" > "$TMPD/$1.out" 2> "$TMPD/$1.err"
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] && grep -qF -- "$2" "$TMPD/$1.err" || { echo "rc $rc:"; cat "$TMPD/$1.err"; return 1; }
}
refused inf "split '1e999': unexpected character 'e'" 1e999 10
ok $? "split 1e999 refused (an infinite weight was 100/0/0)"
refused hex "split '0x10,1': unexpected character 'x'" 0x10,1 10
ok $? "split 0x10,1 refused (strtod read hex)"
refused digits "weight 1 is too large to be a finite number" "$(printf '9%.0s' $(seq 400))" 10
ok $? "a 400-digit weight refused as not finite"
refused samples "more than 2^50" 969,30,1 $((1 << 55))
ok $? "2^55 training samples refused before sizing the index"
launch 1 "$G" "$TMPD/ds" 98/2/0 8 10 0 0 1 "$TMPD/cache-ok" > "$TMPD/ok.out" 2>&1
ok $? "split 98/2/0 (Megatron's other form) accepted"
finish
