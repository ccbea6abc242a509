#!/bin/bash
# Make what validation/gpu/run_gpu.sh needs on a GPU machine, in .gpu/ at the top of this
# checkout, and print the command that runs it there:
#   .gpu/ptdp-deps.tar.gz     jobs/bundle-deps.sh's bundle (Open MPI, parallel HDF5, OpenBLAS)
#   .gpu/ptdp-VERSION.tar.gz  `make dist` of this working tree (uncommitted edits included)
#   .gpu/make                 Debian 12's GNU make, used there only if that machine has none
# .gpu/ is listed in the checkout's .git/info/exclude: git ignores it, so the device tool sends
# it only when its call names it in carry (and nobody commits 34 MB by accident).
#
#   validation/gpu/pack.sh [--build DIR] [--deps-dir DIR] [--rebuild-deps]
#     --build DIR      a configured build of this checkout for `make dist` (default
#                      /tmp/ptdp-pack-build, copied once from /work/build-base)
#     --deps-dir DIR   bundle-deps.sh's output folder (default /tmp/ptdp-deps); its
#                      ptdp-deps.tar.gz is reused when present
#     --rebuild-deps   run bundle-deps.sh even when the bundle exists (Debian 12 + network)
# Fails when what would travel (the working tree git does not ignore, plus .gpu) passes the
# device tool's 64 MiB.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
build=/tmp/ptdp-pack-build deps=/tmp/ptdp-deps rebuild=0
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --deps-dir) deps=${2:?--deps-dir needs a directory}; shift 2 ;;
    --rebuild-deps) rebuild=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
pack=$top/.gpu
mkdir -p "$pack"

# git ignores .gpu/ (the exclude file of this checkout, also from a worktree)
exclude=$(git -C "$top" rev-parse --git-path info/exclude)
case $exclude in /*) ;; *) exclude=$top/$exclude ;; esac
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"

# 1. the bundle
if [ $rebuild = 1 ] || [ ! -f "$deps/ptdp-deps.tar.gz" ]; then
  echo "pack.sh: making the bundle in $deps (jobs/bundle-deps.sh: apt-get download, a few minutes)"
  "$top/jobs/bundle-deps.sh" "$deps"
fi
cp "$deps/ptdp-deps.tar.gz" "$pack/"

# 2. the tarball: make dist in a configured build of this checkout
if [ ! -f "$build/Makefile" ]; then
  [ -f /work/build-base/Makefile ] || { echo "pack.sh: no configured build at $build (give --build DIR)" >&2; exit 1; }
  echo "pack.sh: copying /work/build-base to $build"
  cp -a /work/build-base "$build"
fi
srcdir=$(sed -n 's/^abs_top_srcdir = //p' "$build/Makefile")
[ "$srcdir" = "$top" ] || { echo "pack.sh: $build is a build of $srcdir, not of $top" >&2; exit 1; }
rm -f "$build"/ptdp-[0-9]*.tar.gz
echo "pack.sh: make dist in $build"
make -C "$build" dist > "$build/dist.log" 2>&1 || { tail -n 20 "$build/dist.log"; echo "pack.sh: make dist failed" >&2; exit 1; }
rm -f "$pack"/ptdp-[0-9]*.tar.gz
cp "$build"/ptdp-[0-9]*.tar.gz "$pack/"

# 3. a make for a machine that has none (the one Debian 12 program we need beyond the bundle)
if [ ! -x "$pack/make" ]; then
  tmp=$(mktemp -d)
  if (cd "$tmp" && apt-get download -q make > /dev/null 2>&1) && dpkg -x "$tmp"/make_*.deb "$tmp/x"; then
    cp "$tmp/x/usr/bin/make" "$pack/make"
  else
    echo "pack.sh: warning: could not fetch Debian's make; run_gpu.sh then needs make on the GPU machine" >&2
  fi
  rm -rf "$tmp"
fi

# 4. what the device tool would send: the tree git does not ignore, and the carried .gpu
tree=$(cd "$top" && git ls-files -z -c -o --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null |
         awk '{ s += $1 } END { print s + 0 }')
carried=$(du -sb "$pack" | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "pack.sh: $(ls "$pack" | tr '\n' ' ')"
echo "pack.sh: travels: working tree $(mib "$tree") + .gpu $(mib "$carried") = $(mib $((tree + carried))) of 64 MiB"
[ $((tree + carried)) -le $((64 * 1048576)) ] || { echo "pack.sh: over the device tool's 64 MiB" >&2; exit 1; }
cat <<EOF

On the device machine (the tool's run, from the repository root):
  command:   validation/gpu/run_gpu.sh
  carry:     [".gpu"]
  timeout_s: 600
The report is printed last; report.txt, report.tsv, bench.tsv, gpu.txt and logs.tar.gz come back
from \$OUT.  Elsewhere: copy .gpu/ and run  validation/gpu/run_gpu.sh --pack DIR OUT_DIR.
EOF
