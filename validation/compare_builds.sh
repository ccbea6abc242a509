#!/bin/bash
# Build another commit beside the current tree and compare the losses both builds print,
# digit for digit, over layouts that cover every schedule, sequence parallelism, the distributed
# optimizer, recomputation and thread counts.  For refactors that must not change a number.
#
#   validation/compare_builds.sh --ref COMMIT [--new COMMIT | --build DIR] [--iters N] [--np-max N]
#
#   --ref COMMIT   the reference (any commit-ish); built once under build-ref/<sha>/ and reused
#   --new COMMIT   build this commit too (default: the current tree's build, --build DIR)
#   --build DIR    the current tree's build directory (default <repo>/build)
#   --iters N      iterations per run (default 6; log-interval 1)
# Every "lm loss" and "grad norm" value of the Megatron-style log lines (and validation losses,
# when there are any) must be the same text in both.  Prints one line per layout and a final
# "N layouts identical, M differ"; exits 0 only when all agree.  Results depend on the machine's
# BLAS kernels, so compare only builds run here, in one run of this script: nothing is recorded.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
ref="" new="" build="$top/build" iters=6
while [ $# -gt 0 ]; do
  case $1 in
    --ref) ref=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "compare_builds: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[ -n "$ref" ] || { echo "compare_builds: --ref COMMIT is required" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# build_commit COMMIT -> prints the path of its ptdp-train (built once per sha)
build_commit() {
  local sha dir
  sha=$(git -C "$top" rev-parse --verify "$1^{commit}" 2>/dev/null) || { echo "compare_builds: no commit '$1'" >&2; return 1; }
  dir="$top/build-ref/$sha"
  if [ ! -x "$dir/build/ptdp-train" ]; then
    echo "compare_builds: building $1 ($sha) in $dir" >&2
    rm -rf "$dir" && mkdir -p "$dir/src" "$dir/build" || return 1
    git -C "$top" archive "$sha" | tar -x -C "$dir/src" || return 1
    (cd "$dir/src" && autoreconf -fi >"$dir/build.log" 2>&1) &&
      (cd "$dir/build" && ../src/configure >>"$dir/build.log" 2>&1 && make -j"$(nproc)" ptdp-train >>"$dir/build.log" 2>&1) ||
      { echo "compare_builds: building $1 failed; see $dir/build.log" >&2; return 1; }
  fi
  echo "$dir/build/ptdp-train"
}

ref_bin=$(build_commit "$ref") || exit 1
if [ -n "$new" ]; then
  new_bin=$(build_commit "$new") || exit 1
else
  new_bin="$build/ptdp-train"
  [ -x "$new_bin" ] || { echo "compare_builds: no $new_bin (build the tree first, or give --new)" >&2; exit 1; }
fi
echo "reference: $ref_bin"
echo "new:       $new_bin"

# name | ranks | flags (on inputs/gpt-mock.in: mock data, dropout on)
layouts=(
  "1 rank|1|"
  "1 rank, 2 threads|1|--num-threads 2"
  "t2|2|--tensor-model-parallel-size 2"
  "t2 sequence parallel|2|--tensor-model-parallel-size 2 --sequence-parallel"
  "d2 distributed optimizer|2|--use-distributed-optimizer --ddp-bucket-size 5000"
  "t2 d2 SP + distributed optimizer|4|--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer"
  "p2 gpipe|2|--pipeline-model-parallel-size 2 --pipeline-schedule gpipe"
  "p2 1f1b|2|--pipeline-model-parallel-size 2"
  "p2 interleaved (v 2)|2|--pipeline-model-parallel-size 2 --num-layers 4 --num-layers-per-virtual-pipeline-stage 1"
  "p2 full recompute uniform|2|--pipeline-model-parallel-size 2 --num-layers 4 --recompute-granularity full --recompute-num-layers 2"
  "p2 full recompute block|2|--pipeline-model-parallel-size 2 --num-layers 4 --recompute-granularity full --recompute-method block"
  "t2 selective recompute|2|--tensor-model-parallel-size 2 --recompute-granularity selective"
  "t2 p2 d2|8|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2"
)

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# run BIN NP FLAGS -> the compared values, one per line
run() {
  local bin=$1 np=$2; shift 2
  TMPDIR=$(mktemp -d "$tmp/mpi.XXXXXX") mpirun --oversubscribe --bind-to none -np "$np" "$bin" "$top/inputs/gpt-mock.in" \
    --train-iters "$iters" --lr-warmup-iters 2 --log-interval 1 --num-threads 1 "$@" >"$tmp/out" 2>&1 || {
    echo "RUN FAILED (exit $?): $(grep -m1 -i error "$tmp/out")"
    return 1
  }
  grep -o -e "lm loss: [^|]*" -e "grad norm: [^|]*" -e "lm loss value: [^|]*" "$tmp/out"
}
same=0 differ=0
for l in "${layouts[@]}"; do
  IFS='|' read -r name np flags <<<"$l"
  run "$ref_bin" "$np" $flags >"$tmp/a"; ra=$?
  run "$new_bin" "$np" $flags >"$tmp/b"; rb=$?
  nl=$(grep -c "lm loss" "$tmp/a"); ng=$(grep -c "grad norm" "$tmp/a")
  if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ "$nl" -gt 0 ] && cmp -s "$tmp/a" "$tmp/b"; then
    printf "%-36s same: %d losses, %d grad norms\n" "$name" "$nl" "$ng"; same=$((same + 1))
  else
    printf "%-36s DIFFER: %s\n" "$name" "$(diff "$tmp/a" "$tmp/b" | grep -m2 '^[<>]' | tr '\n' ' ')$(cat "$tmp/a" "$tmp/b" | grep -m1 'RUN FAILED')"
    differ=$((differ + 1))
  fi
done
echo "$same layouts identical, $differ differ"
[ "$differ" -eq 0 ]
