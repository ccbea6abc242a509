#!/bin/sh
# The layering checker (test_layering.py) must catch an upward include: a copy of src/ and
# include/ptdp with one planted include of a higher level must fail, naming the file and line;
# a header no folder implements must fail too (test_layering.py checks the tree itself).
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../../.." && pwd)}
py=${PYTHON3:-python3}
checker="$top/validation/tests/core/test_layering.py"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-layering.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
copy() { rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/include" && cp -R "$top/src" "$tmp/tree/src" &&
         cp -R "$top/include/ptdp" "$tmp/tree/include/ptdp"; }

# plant 1: core's RNG includes the trainer (the highest C level but three)
copy || exit 99
n=$(wc -l < "$tmp/tree/src/core/rng.c")
echo '#include "ptdp/trainer.h"' >> "$tmp/tree/src/core/rng.c"
if "$py" "$checker" "$tmp/tree" > "$tmp/out" 2>&1; then echo "FAIL: an upward include in src/core/rng.c passed"; fail=1
elif ! grep -q "src/core/rng.c:$((n + 1)): .*ptdp/trainer.h of the higher level train" "$tmp/out"; then
  echo "FAIL: the message does not name src/core/rng.c:$((n + 1)):"; cat "$tmp/out"; fail=1
else echo "ok: upward include caught: $(grep rng.c "$tmp/out")"; fi

# plant 2: the run file's header includes the trainer's again (io looking up at train)
copy || exit 99
sed -i.orig 's|^#define PTDP_RUNFILE_H|&\n#include "ptdp/trainer.h"|' "$tmp/tree/include/ptdp/runfile.h"
if "$py" "$checker" "$tmp/tree" > "$tmp/out" 2>&1; then echo "FAIL: runfile.h including trainer.h passed"; fail=1
elif ! grep -q "include/ptdp/runfile.h:[0-9]*: .*(level io) includes ptdp/trainer.h" "$tmp/out"; then
  echo "FAIL: the message does not name include/ptdp/runfile.h:"; cat "$tmp/out"; fail=1
else echo "ok: io including train caught"; fi

# plant 3: a header that no folder implements
copy || exit 99
printf '#ifndef X\n#define X\n#endif\n' > "$tmp/tree/include/ptdp/orphan_plant.h"
if "$py" "$checker" "$tmp/tree" > "$tmp/out" 2>&1; then echo "FAIL: an unplaced header passed"; fail=1
elif ! grep -q "orphan_plant.h: no folder implements" "$tmp/out"; then cat "$tmp/out"; fail=1
else echo "ok: unplaced header caught"; fi
exit $fail
