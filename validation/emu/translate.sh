#!/bin/sh
# translate.sh SRC.cu OUT.cc [SED-EXPR]: a .cu file as C++ for the CUDA emulation (or a header
# the kernels include, SRC.h to OUT.h: the race detector's planted copy of cuda_device.h).
# Line for line (a #line directive keeps the .cu's file name and line numbers in compiler
# messages and in the race detector's reports); the only rewrites are CUDA's launch syntax,
#     kernel<<<grid, block, shmem, stream>>>(args)  ->  PTDP_EMU_LAUNCH(kernel, grid, ...)(args)
# (one launch per line), and a dynamic shared array declared in a kernel,
#     extern __shared__ T name[];  ->  T *const name = (T *)emu_dynamic_shared();
# SED-EXPR, when given, is applied first: the tests' planted mutations.  Each LINE after it
# (translate.sh SRC.cu OUT.cc SED-EXPR LINE...) is a fixed string the mutation rewrites, which must
# occur exactly once in SRC.cu: else the mutant would be the original (a plant that proves
# nothing) and the build stops, naming the string.
set -eu
src=$1 out=$2 extra=${3:-}
[ $# -gt 3 ] && shift 3 || set --
for line in "$@"; do
  n=$(grep -cF -- "$line" "$src" || true)
  if [ "$n" != 1 ]; then
    echo "translate.sh: '$line' occurs $n times in $src (want 1): update the mutation (validation/emu/*.mk)" >&2
    exit 1
  fi
done
tmp="$out.tmp"
{
  echo '#include "emu_device.h"'
  echo "#line 1 \"$src\""
  if [ -n "$extra" ]; then sed -e "$extra" "$src"; else cat "$src"; fi |
    sed -e 's/\([A-Za-z_][A-Za-z_0-9]*\)<<<\(.*\)>>>(/PTDP_EMU_LAUNCH(\1, \2)(/' \
        -e 's/extern[ ]*__shared__[ ]*\(.*[^ ]\)[ ][ ]*\([A-Za-z_][A-Za-z_0-9]*\)[ ]*\[\][ ]*;/\1 *const \2 = (\1 *)emu_dynamic_shared();/'
} > "$tmp"
if grep -n '<<<' "$tmp" >&2; then
  echo "translate.sh: $src: a kernel launch the emulation cannot translate (one launch per line, kernel<<<...>>>(...))" >&2
  rm -f "$tmp"; exit 1
fi
mv "$tmp" "$out"
