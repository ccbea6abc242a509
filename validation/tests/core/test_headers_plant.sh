#!/bin/sh
# test_headers.sh must catch an installed header that does not compile alone: the installed
# headers with ptdp/error.h made to include ptdp/config.h (not installed: the mistake this test
# was written for) must fail naming ptdp/error.h; ptdp/sim.h made to include <mpi.h> must fail
# the simulator's no-MPI check; the unplanted copy must pass.
set -u
top_builddir=${top_builddir:-.}
here=$(cd "$(dirname "$0")" && pwd)
check="$here/test_headers.sh"
[ -f "$top_builddir/Makefile" ] || { echo "SKIP: no $top_builddir/Makefile"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-headers-plant.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
${MAKE:-make} -s -C "$top_builddir" install-ptdpincludeHEADERS DESTDIR="$tmp/root" > "$tmp/install.log" 2>&1 ||
  { echo "FAIL: make install-ptdpincludeHEADERS:"; cat "$tmp/install.log"; exit 1; }
inst=$(find "$tmp/root" -type d -name ptdp | head -1)
fail=0
copy() { rm -rf "$tmp/inc" && mkdir -p "$tmp/inc" && cp -R "$inst" "$tmp/inc/ptdp"; }

copy || exit 99
sh "$check" "$tmp/inc" > "$tmp/out" 2>&1 || { echo "FAIL: the unplanted headers fail:"; cat "$tmp/out"; exit 1; }

copy || exit 99
sed -i.orig 's|^#define PTDP_ERROR_H$|&\n#include "ptdp/config.h"|' "$tmp/inc/ptdp/error.h"
grep -q 'ptdp/config.h' "$tmp/inc/ptdp/error.h" || { echo "FAIL: could not plant into error.h"; exit 1; }
rm -f "$tmp/inc/ptdp/error.h.orig"
if sh "$check" "$tmp/inc" > "$tmp/out" 2>&1; then echo "FAIL: error.h including the uninstalled config.h passed"; fail=1
elif ! grep -q "FAIL: installed header ptdp/error.h does not compile" "$tmp/out"; then
  echo "FAIL: the failure does not name ptdp/error.h:"; cat "$tmp/out"; fail=1
else echo "ok: caught: $(grep -c 'does not compile' "$tmp/out") headers fail, ptdp/error.h named"; fi

copy || exit 99
sed -i.orig 's|^#define PTDP_SIM_H$|&\n#include <mpi.h>|' "$tmp/inc/ptdp/sim.h"
grep -q 'mpi.h' "$tmp/inc/ptdp/sim.h" || { echo "FAIL: could not plant into sim.h"; exit 1; }
rm -f "$tmp/inc/ptdp/sim.h.orig"
if sh "$check" "$tmp/inc" > "$tmp/out" 2>&1; then
  if grep -q 'compiles without MPI' "$tmp/out"; then echo "FAIL: sim.h including <mpi.h> passed"; fail=1
  else echo "ok: (no bare compiler known: the no-MPI check did not run)"; fi
elif ! grep -q "FAIL: ptdp/sim.h needs MPI" "$tmp/out"; then echo "FAIL: the failure does not say sim.h needs MPI:"
  cat "$tmp/out"; fail=1
else echo "ok: sim.h needing MPI caught"; fi
exit $fail
