#!/bin/sh
# campaign.sh READER MINUTES [BUILDDIR]: a timed libFuzzer campaign on one reader (json, gpt2,
# mmidx, hw, deck, ckpt, runfile, safetensors, hf), for a maintainer before a release.  BUILDDIR
# (default: the current folder)
# must be configured with --enable-fuzzing (OMPI_CC=clang .../configure --enable-fuzzing) and
# the harness built (make validation/fuzz/fuzz_READER).  The committed corpus is copied, not
# grown; new inputs and any crash stay in the work folder ($PTDP_FUZZ_WORK or a new temporary
# one), whose path is printed.  Prints one line: executions, coverage (libFuzzer's cov:
# edges and ft: features), corpus size, findings; exit 1 if anything was found.
# A finding's reproducer belongs in validation/fuzz/regress/READER once its bug is fixed.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 READER MINUTES [BUILDDIR]" >&2; exit 2; }
reader=$1
minutes=$2
build=${3:-.}
src=$(cd "$(dirname "$0")" && pwd)
bin="$build/validation/fuzz/fuzz_$reader"
[ -x "$bin" ] || { echo "$0: $bin not built (make validation/fuzz/fuzz_$reader)" >&2; exit 2; }
if ! grep -q LLVMFuzzerRunDriver "$bin" 2>/dev/null; then
  echo "$0: $bin is the replay build; configure with --enable-fuzzing (clang) for a campaign" >&2
  exit 2
fi
work=${PTDP_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/ptdp-campaign-$reader.XXXXXX")}
mkdir -p "$work/corpus" "$work/artifacts"
cp "$src/corpus/$reader"/* "$src/regress/$reader"/* "$work/corpus/" 2>/dev/null || true
dict=""
[ -f "$src/dict/$reader.dict" ] && dict="-dict=$src/dict/$reader.dict"
secs=$((minutes * 60))
# Leaks are findings, except in ckpt and runfile: they start Open MPI, which leaves allocations
# of MPI_Init unreachable, and HDF5 1.10.8 leaks on its own error paths when a damaged file makes
# it give up (H5C_protect); their libraries have no frame pointers, so suppressions cannot tell
# those from ptdp's without full stacks at every allocation (five times fewer inputs a second)
asan=detect_leaks=1 leaks=1
case $reader in ckpt | runfile) asan=detect_leaks=0 leaks=0 ;; esac
# one worker: the campaign's machine may be small; -timeout: an input over 10 s is a hang
# shellcheck disable=SC2086
ASAN_OPTIONS=${ASAN_OPTIONS:-$asan} "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
  -max_len=8192 -detect_leaks=$leaks -print_final_stats=1 -artifact_prefix="$work/artifacts/" $dict "$work/corpus" \
  > "$work/log" 2>&1 || true
execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$work/log" | tail -1)
last=$(grep -E '^#[0-9]+' "$work/log" | tail -1)
cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p')
found=$(find "$work/artifacts" -type f | wc -l)
echo "fuzz_$reader: ${minutes} min, ${execs:-?} executions, cov ${cov:-?} edges, ft ${ft:-?}, corpus ${corp:-?}," \
  "$found finding(s); work folder $work"
[ "$found" -eq 0 ]
