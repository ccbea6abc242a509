#!/bin/sh
# Benchmark of the CUDA emulation: one training iteration of inputs/gpt-mock.in (2 layers, h 128, s 64,
# global batch 16 in 4 micro-batches) on the emulated CUDA backend (validation/emu/ptdp-train-emu
# --backend cuda: every kernel run thread by thread as fibers, every access of kernel code
# checked) against the same binary's CPU backend, 1 rank, 1 thread, on this machine.  Prints the
# mean time per iteration of iterations 2..ITERS for each and their ratio.  The bound it is held
# to: under 5 s per emulated iteration on one core (make check runs the emulation on every model
# test, so its speed is the suite's).
#
# usage: validation/bench/bench_emu.sh [BUILD_DIR]   (default: the current directory)
# environment: MPIEXEC (default mpirun), ITERS (5)
set -e
build=$(cd "${1:-.}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
deck="$here/../../inputs/gpt-mock.in"
train="$build/validation/emu/ptdp-train-emu"
[ -x "$train" ] || { echo "bench_emu.sh: no $train (build it: make validation/emu/ptdp-train-emu)" >&2; exit 1; }
iters=${ITERS:-5}
mpiexec=${MPIEXEC:-mpirun}
[ "$(id -u)" = 0 ] && mpiexec="$mpiexec --allow-run-as-root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load: $(uptime | sed 's/.*load average: //')"
for be in cpu cuda; do
  (cd "$tmp" && OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $mpiexec -np 1 "$train" "$deck" --backend "$be" \
     --train-iters "$iters" --lr-warmup-iters 1 --log-interval 1 --run-file none --num-threads 1) > "$tmp/$be.log" 2>&1 ||
    { tail -20 "$tmp/$be.log"; echo "bench_emu.sh: the $be run failed" >&2; exit 1; }
  sed -n 's/.*iteration *\([0-9]*\)\/.*elapsed time per iteration (ms): *\([0-9.]*\).*/\1 \2/p' "$tmp/$be.log" |
    awk -v be="$be" '$1 >= 2 { s += $2; n++ } END { printf "%s %.1f\n", be, s / n }' >> "$tmp/means"
done
awk '{ t[$1] = $2 } END {
  printf "%-22s %12s\n", "backend", "ms/iteration"
  printf "%-22s %12.1f\n", "cpu (host BLAS)", t["cpu"]
  printf "%-22s %12.1f\n", "cuda (emulated)", t["cuda"]
  printf "emulated / cpu: %.1fx; bound: under 5000 ms per emulated iteration: %s\n", t["cuda"] / t["cpu"],
         t["cuda"] < 5000 ? "met" : "NOT met" }' "$tmp/means"
