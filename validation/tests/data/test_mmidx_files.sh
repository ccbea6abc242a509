#!/bin/sh
# Megatron MMIDIDX files on disk: files from an independent Python writer read correctly in
# ptdp, for every integer dtype; hand-corrupted files each fail with a clear message.
. "$top_srcdir/validation/tests/common.sh"
DUMP="$top_builddir/validation/tests/data/mmidx_dump"
PY=${PYTHON3:-/usr/bin/python3}
W="$top_srcdir/validation/tests/data/write_mmidx.py"
for code in 8 4 1 2 3 5; do
  "$PY" "$W" "$TMPD/p$code" $code > "$TMPD/want" && "$DUMP" "$TMPD/p$code" > "$TMPD/got" && cmp -s "$TMPD/want" "$TMPD/got"
  ok $? "Python-written file, dtype code $code, reads the same in ptdp"
done
"$PY" "$W" "$TMPD/g" 8 > /dev/null
# corrupt copies: NAME EXPECTED-TEXT PYTHON-EXPRESSION-ON-(idx: bytearray, bin: bytearray)
corrupt() {
  cp "$TMPD/g.idx" "$TMPD/c.idx"; cp "$TMPD/g.bin" "$TMPD/c.bin"
  "$PY" - "$TMPD/c" "$3" <<'PYEOF'
import struct, sys
p, code = sys.argv[1], sys.argv[2]
idx = bytearray(open(p + ".idx", "rb").read()); bin = bytearray(open(p + ".bin", "rb").read())
exec(code)
open(p + ".idx", "wb").write(idx); open(p + ".bin", "wb").write(bin)
PYEOF
  "$DUMP" "$TMPD/c" > /dev/null 2> "$TMPD/err"; rc=$?
  [ $rc -ne 0 ] && grep -q "$2" "$TMPD/err" && grep -q "c.idx" "$TMPD/err"
  ok $? "$1: $(head -c 160 "$TMPD/err")"
}
corrupt "magic" "magic" "idx[0:1] = b'N'"
corrupt "version" "version 7" "idx[9:17] = struct.pack('<Q', 7)"
corrupt "dtype" "dtype code 11" "idx[17] = 11"
corrupt "sequence count" "need" "idx[18:26] = struct.pack('<Q', struct.unpack('<Q', idx[18:26])[0] - 1)"
corrupt "document count" "claims" "idx[26:34] = struct.pack('<Q', 1 << 40)"
corrupt "negative length" "negative length" "idx[34:38] = struct.pack('<i', -1)"
corrupt "length vs pointer" "starts at byte" "idx[34:38] = struct.pack('<i', 8)"
corrupt "truncated .idx" "claims\|is .* bytes" "del idx[-5:]"
corrupt "trailing bytes in .idx" "need" "idx += b'xx'"
corrupt "truncated .bin" "runs past the end" "del bin[-3:]"
corrupt "longer .bin" "describes" "bin += b'zz'"
corrupt "document indices out of order" "decrease" "n = struct.unpack('<Q', idx[18:26])[0]; o = 34 + 12 * n; idx[o + 16:o + 24] = struct.pack('<q', 0)"
corrupt "last document index" "last document index" "idx[-8:] = struct.pack('<q', 3)"
corrupt "empty .idx" "shorter than" "idx = bytearray()"
rm -f "$TMPD/c.bin"; "$DUMP" "$TMPD/c" 2> "$TMPD/err"; [ $? -ne 0 ] && grep -q "cannot open data file" "$TMPD/err"
ok $? "missing .bin: $(cat "$TMPD/err")"
finish
