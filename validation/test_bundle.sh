#!/bin/bash
# Check jobs/bundle-deps.sh's prefix the way a GPU node would use it: build ptdp from its
# `make dist` tarball with nothing but the prefix (and a compiler, make, and CUDA if present),
# then train a few iterations on 2 ranks with the relocated mpirun.
#   validation/test_bundle.sh BUNDLE_DIR DIST_TARBALL [WORK_DIR]     (as root, on Linux)
# BUNDLE_DIR is bundle-deps.sh's OUT_DIR (its ptdp-deps.tar.gz is unpacked afresh into WORK_DIR,
# somewhere else than where it was made, so relocation is tested).  Runs in a private mount
# namespace (unshare -m) in which every system copy of what the bundle holds is hidden: the
# Open MPI, HDF5, OpenBLAS and PMIx directories under /usr and /etc, and each library or program
# file of the same name, so nothing can come from the system by accident.  The environment is
# emptied (env -i) but for PATH=/usr/bin:/bin and what prefix/env.sh sets.
set -euo pipefail
bundle=$(cd "${1:?usage: test_bundle.sh BUNDLE_DIR DIST_TARBALL [WORK]}" && pwd)
dist=$(realpath "${2:?usage: test_bundle.sh BUNDLE_DIR DIST_TARBALL [WORK]}")
work=${3:-$(mktemp -d /tmp/ptdp-bundle-test.XXXXXX)}
mkdir -p "$work" && work=$(cd "$work" && pwd)
src=$(basename "$dist" .tar.gz)
if [ "${PTDP_BUNDLE_INNER:-0}" != 1 ]; then
  rm -rf "$work/prefix" "$work/$src"
  tar xzf "$bundle/ptdp-deps.tar.gz" -C "$work"
  tar xzf "$dist" -C "$work"
  exec unshare -m env PTDP_BUNDLE_INNER=1 "$0" "$bundle" "$dist" "$work"
fi

# ---- inside the namespace: hide the system's copies
L=usr/lib/x86_64-linux-gnu
hidden=0
for d in /$L/openmpi /$L/hdf5 /$L/openblas-pthread /$L/pmix2 /$L/libfabric /$L/ucx /usr/include/hdf5 \
         /usr/include/x86_64-linux-gnu/openblas-pthread /usr/share/openmpi /etc/openmpi /$L/pkgconfig; do
  [ -d "$d" ] && mount -t tmpfs none "$d" && hidden=$((hidden + 1))
done
for f in "$work"/prefix/$L/* "$work"/prefix/usr/bin/*; do
  sys=/${f#"$work"/prefix/}
  [ -d "$f" ] && continue
  if [ -e "$sys" ] && [ ! -d "$sys" ]; then mount --bind /dev/null "$sys" && hidden=$((hidden + 1)); fi
done
echo "test_bundle: $hidden system paths hidden"
[ ! -s /$L/libmpi.so.40 ] || { echo "test_bundle: FAIL: the system's libmpi is still visible" >&2; exit 1; }

run() { env -i PATH=/usr/bin:/bin HOME="$work" bash -c "source '$work/prefix/env.sh' && cd '$work/$src' && $1"; }
run 'echo "mpicc: $(command -v mpicc)"; mpicc -showme; echo "mpirun: $(command -v mpirun)"; mpirun --version | head -n 1'
run "./configure ${CONFIGURE_FLAGS:-} > configure.out 2>&1 || { tail -n 30 configure.out; exit 1; }; sed -n '/configured/,\$p' configure.out"
run 'make -j"$(nproc)" > make.out 2>&1 || { tail -n 30 make.out; exit 1; }; echo "make: ok"'
run 'ldd ptdp-train | grep -E "mpi|hdf5|openblas|pmix|not found"'
if run 'ldd ptdp-train' | grep -q 'not found'; then echo "test_bundle: FAIL: unresolved libraries" >&2; exit 1; fi
run 'export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;
     mpirun --oversubscribe -np 2 ./ptdp-train inputs/gpt-mock.in --train-iters 3 --lr-warmup-iters 0 --run-file none' \
  > "$work/train.out" 2>&1 || { tail -n 30 "$work/train.out"; echo "test_bundle: FAIL: training run" >&2; exit 1; }
grep -E "^ *iteration|iter" "$work/train.out" | tail -n 3
echo "test_bundle: PASS (bundle $(du -sh "$work/prefix" | cut -f1) unpacked, tarball $(du -h "$bundle/ptdp-deps.tar.gz" | cut -f1))"
