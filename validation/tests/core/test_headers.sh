#!/bin/sh
# Every installed header compiles on its own against the installed tree: `make install` of the
# headers into a temporary DESTDIR, then for each header H there
#     CC -std=c11 -fsyntax-only -I DESTDIR/includedir <MPI, HDF5, BLAS, CUDA flags> -include ptdp/H
# (the public set: include/local.mk).  And the simulator's interface needs no MPI: ptdp/sim.h
# compiles with the bare compiler under mpicc (no MPI include path).  A failure names the header.
#
#   test_headers.sh [INCDIR]   INCDIR: check this include directory instead of installing one
#                              (test_headers_plant.sh hands it a planted copy)
set -u
top_builddir=${top_builddir:-.}
mk="$top_builddir/Makefile"
[ -f "$mk" ] || { echo "SKIP: no $mk (run from the build directory, or through make check)"; exit 77; }
var() { sed -n "s/^$1 = //p" "$mk" | head -1; }
cc=$(var CC)
flags="$(var HDF5_CFLAGS) $(var BLAS_CFLAGS) $(var CUDA_CFLAGS)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-headers.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
if [ $# -ge 1 ]; then
  inc=$1
else
  ${MAKE:-make} -s -C "$top_builddir" install-ptdpincludeHEADERS DESTDIR="$tmp/root" > "$tmp/install.log" 2>&1 ||
    { echo "FAIL: make install-ptdpincludeHEADERS:"; cat "$tmp/install.log"; exit 1; }
  inc=$(find "$tmp/root" -type d -name ptdp | head -1)
  inc=${inc%/ptdp}
fi
[ -d "$inc/ptdp" ] || { echo "FAIL: no installed headers under '$inc'"; exit 1; }
fail=0 n=0
for h in "$inc"/ptdp/*.h; do
  name=ptdp/$(basename "$h")
  n=$((n + 1))
  # shellcheck disable=SC2086
  if ! $cc -std=c11 -fsyntax-only -I"$inc" $flags -include "$name" -x c /dev/null > "$tmp/cc.log" 2>&1; then
    echo "FAIL: installed header $name does not compile on its own against $inc:"
    sed 's/^/    /' "$tmp/cc.log" | head -8
    fail=1
  fi
done
echo "$n installed headers checked, each compiled alone"
# ptdp-sim's interface without MPI: Open MPI's wrapper names its compiler (-showme:command)
bare=$($cc -showme:command 2>/dev/null) || bare=
if [ -n "$bare" ] && [ -f "$inc/ptdp/sim.h" ]; then
  if ! $bare -std=c11 -fsyntax-only -I"$inc" -include ptdp/sim.h -x c /dev/null > "$tmp/cc.log" 2>&1; then
    echo "FAIL: ptdp/sim.h needs MPI (compiled with $bare, no MPI include path):"
    sed 's/^/    /' "$tmp/cc.log" | head -8
    fail=1
  else
    echo "ok: ptdp/sim.h compiles without MPI ($bare)"
  fi
fi
exit $fail
