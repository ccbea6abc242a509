#!/bin/sh
# Damaged and hostile checkpoints: each one must be refused with a message that names what is
# wrong, a non-zero exit, no signal and no hang.
#   attributes rewritten with the wrong shape or class (h5py): iteration as an array of 4,
#   format_version as an array, a model key (hidden_size) as an array, iteration as a real, the
#   optimizer's step as a string, an /args value as an array of strings (read with
#   use-checkpoint-args), a dataset's checksum as an
#   array; each message names the attribute;
#   single flipped bytes: 12 positions spread over the file's first 64 KiB (the metadata: the
#   superblock, object headers, B-trees and heaps, checksummed in the 1.10 format ptdp writes)
#   and 4 inside the tensor data (our checksums); a run that loads anyway must be one whose byte was unused, so it
#   then gives the undamaged checkpoint's losses.
. "$top_srcdir/validation/tests/common.sh"
DECK="$TMPD/h.in"
write_deck "$DECK" lr=1e-3 log-interval=1 run-file=none
train_log save 1 --train-iters 2 --save "$TMPD/ck"
ok $? "a checkpoint to damage"
train_log good 1 --train-iters 3 --load "$TMPD/ck"
ok $? "the undamaged checkpoint loads"
good=$(grep -E "^ iteration +3/" "$TMPD/good.log" | sed 's/.*lm loss: \([^ ]*\) .*/\1/')
CK="$TMPD/ck/iter_0000002/checkpoint.h5"

# load DIR: a run from a damaged copy; sets rc and leaves the log in $TMPD/out.log
load() {
  dir=$1
  shift
  train_log out 1 --train-iters 3 --load "$dir" "$@"
  rc=$?
}
mutate() { # NAME PYTHON-STATEMENTS (f is the open h5py File)
  rm -rf "$TMPD/bad" && cp -r "$TMPD/ck" "$TMPD/bad"
  $PYTHON3 - "$TMPD/bad/iter_0000002/checkpoint.h5" "$2" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+")
exec(sys.argv[2])
f.close()
PY
}
while IFS='|' read -r name want flags stmt; do
  [ -n "$name" ] || continue
  mutate "$name" "$stmt"
  # shellcheck disable=SC2086
  load "$TMPD/bad" $flags
  [ $rc -ne 0 ] && [ $rc -lt 124 ] && grep -q "$want" "$TMPD/out.log"
  ok $? "$name: refused (exit $rc) naming it: $(grep -o "error: .*" "$TMPD/out.log" | head -n 1 | cut -c1-150)"
done <<'CASES'
iteration as an array|attribute 'iteration'||del f.attrs["iteration"]; f.attrs["iteration"] = np.arange(4, dtype=np.int64)
format_version as an array|attribute 'format_version'||del f.attrs["format_version"]; f.attrs["format_version"] = np.ones(3, dtype=np.int64)
hidden_size as an array|attribute 'hidden_size'||g = f["model"]; del g.attrs["hidden_size"]; g.attrs["hidden_size"] = np.full(2, 64, dtype=np.int64)
iteration as a real|attribute 'iteration'||del f.attrs["iteration"]; f.attrs["iteration"] = 2.0
optimizer step as a string|attribute 'step'||g = f["optimizer"]; del g.attrs["step"]; g.attrs["step"] = np.bytes_("2")
an /args value as an array|attribute 'hidden-size'|--use-checkpoint-args|g = f["args"]; del g.attrs["hidden-size"]; g.attrs["hidden-size"] = np.array([b"64", b"64"])
a checksum as an array|attribute 'checksum'||d = f["model/decoder/final_layernorm/weight"]; c = d.attrs["checksum"]; del d.attrs["checksum"]; d.attrs["checksum"] = np.array([c, c], dtype=np.uint64)
CASES

# single flipped bytes
size=$(wc -c < "$CK")
data=$($PYTHON3 -c "
import h5py; f = h5py.File('$CK', 'r'); print(f['model/embedding/word_embeddings/weight'].id.get_offset())")
signals=0 refused=0 loaded=0 wrong=0
for pos in $($PYTHON3 -c "
import random; random.seed(7)
print(' '.join(str(p) for p in sorted(random.sample(range(0, min(65536, $size)), 12)) + [str($data + 4 * k * 1999) for k in range(4)]))"); do
  rm -rf "$TMPD/bad" && cp -r "$TMPD/ck" "$TMPD/bad"
  $PYTHON3 -c "
f = open('$TMPD/bad/iter_0000002/checkpoint.h5', 'r+b'); f.seek($pos); b = f.read(1); f.seek($pos); f.write(bytes([b[0] ^ 0x10]))"
  load "$TMPD/bad"
  if [ $rc -ge 124 ]; then signals=$((signals + 1)); echo "byte $pos: exit $rc"; tail -3 "$TMPD/out.log"
  elif [ $rc -ne 0 ]; then refused=$((refused + 1))
  else
    loaded=$((loaded + 1))
    l=$(grep -E "^ iteration +3/" "$TMPD/out.log" | sed 's/.*lm loss: \([^ ]*\) .*/\1/')
    [ "$l" = "$good" ] || { wrong=$((wrong + 1)); echo "byte $pos: loaded with loss $l, undamaged $good"; }
  fi
done
echo "16 flipped bytes: $refused refused, $loaded loaded (unused bytes), $signals ended by a signal or timeout, $wrong loaded wrong numbers"
[ $signals -eq 0 ]; ok $? "no flipped byte crashes or hangs the loader"
[ $wrong -eq 0 ]; ok $? "no flipped byte loads into other numbers"
[ $refused -ge 4 ]; ok $? "every flipped data byte is refused (at least 4 refusals: $refused)"
finish
