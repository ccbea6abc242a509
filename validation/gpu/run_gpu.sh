#!/bin/bash
# A GPU's half hour in one unattended run.  On a machine with an NVIDIA GPU
# and the CUDA toolkit but perhaps nothing else of ours (no MPI, HDF5, BLAS, autotools or
# network), from two archives made beforehand by validation/gpu/pack.sh:
#   ptdp-deps.tar.gz       Open MPI, parallel HDF5 and OpenBLAS (jobs/bundle-deps.sh)
#   ptdp-VERSION.tar.gz    `make dist`'s tarball
# it unpacks both, configures with --with-cuda, builds, runs the CUDA tests (host logic; the
# conformance suite, every operation against the CPU backend; the whole model and its parallel
# layouts against the CPU backend), compute-sanitizer memcheck and racecheck on a
# small model, and bench_gpu.sh (GEMM ceiling; 125M and 1.3B in fp32 and bf16), then prints one
# report table.  Each step has its own time budget and runs under `timeout`: a hang is a FAIL of
# that step, and the steps after it still run.  The whole run fits in BUDGET seconds (570: the
# device tool's 10 minutes less a margin for the transfers).
#
#   validation/gpu/run_gpu.sh [options] [OUT_DIR]
#     --pack DIR     where the two archives lie (default: .gpu at the top of the checkout holding
#                    this script, as pack.sh leaves them, else the current directory)
#     --deps FILE    the bundle; "none": this machine's own MPI, HDF5 and BLAS
#     --dist FILE    the tarball (default: the one ptdp-*.tar.gz in the pack directory)
#     --work DIR     scratch for the unpacked archives and the build (default /tmp/ptdp-gpu;
#                    emptied first)
#     --budget S     seconds for the whole run (default 570; refused below the least times of the
#                    steps to run, 265 s for all of them)
#     --jobs N       make -j N (default: the number of CPUs)
#     --only LIST    comma-separated steps to run (the others are SKIPs), e.g. unpack,configure,build
#     --report-only  print the report of the last run in --work again (no step runs)
#   OUT_DIR: default $OUT when set (the device machine's folder that comes back), else
#   ./ptdp-gpu-out.  It receives at most five files: report.txt (the table), report.tsv (one row
#   per step), bench.tsv (one row per measurement), logs.tar.gz (every step's log, the tests'
#   logs, config.log, the benchmark logs), gpu.txt (nvidia-smi -q); all of them rewritten after
#   every step, so a run killed from outside still leaves what it did.
# Environment: CUDA_ARCH (default: the GPU's compute capability, e.g. 90), BENCH_RUNS
#   (bench_gpu.sh's RUNS; default "125M:none:8,4 1.3B:selective:4,2,1"), BENCH_ITERS (6),
#   BENCH_PRECISIONS ("fp32 bf16"), CONFORMANCE (the conformance tests, those of the tarball
#   run: default "validation/tests/backend/test_ops validation/tests/gpu/test_cuda_ops
#   validation/tests/gpu/test_cuda_flash", the suite, its predecessor and the fused attention's
#   kernels against the CPU backend), CONFORMANCE_BACKENDS (its PTDP_TEST_BACKENDS, default "cuda?":
#   the CUDA backend alone, a SKIP with the reason where no GPU can run it; cpu and guard run in
#   every make check), STEP_BUDGETS (per-step budgets in seconds replacing those below, e.g.
#   "build=900,bench=300" on a slow machine).
# Exit status: 0 when no step failed (skips are not failures), 1 when one did, 2 bad arguments.
set -u
# a make above us (this script under make check) must not pass its flags and variables down
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
here=$(dirname "$self")

# Steps in order: name, budget (s), the least time worth starting it with (s), the step it needs.
# The budgets are ceilings (a run on an H100 should take a fraction of each); the least times of
# the steps still to come are held back from each step's budget, so a hang early leaves every
# later step at least its least time.
STEPS="preflight:20:5:-
unpack:60:10:-
configure:120:30:unpack
build:240:60:configure
build-tests:90:20:build
host:60:10:build-tests
ops:120:20:build-tests
model:150:30:build
sanitizer:120:30:build
bench:200:40:build"
FINAL_RESERVE=10 # seconds kept for the last report and log archive

usage() { sed -n '2,/^set -u/p' "$self" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; }
die_usage() { echo "run_gpu.sh: $*" >&2; echo "run_gpu.sh: --help for usage" >&2; exit 2; }

# ---------------------------------------------------------------- report
# The table: checks (report.tsv: step result seconds why), then the measurements (bench.tsv;
# a row without figures gives its reason in their place, "ptdp: error" dropped).  A why longer
# than the line is cut: report.tsv, bench.tsv and the logs hold all of it.
report() {
  local w=$1 tsv=$1/report.tsv btsv=$1/bench/bench.tsv
  echo "== ptdp GPU report: $(cat "$w/meta.txt" 2>/dev/null)"
  awk -F '\t' '{ printf "%-12s %-4s %4ss  %s\n", $1, $2, $3, substr($4, 1, 100) }' "$tsv"
  if [ -s "$btsv" ] && [ "$(wc -l < "$btsv")" -gt 1 ]; then
    echo "-- benchmarks: MFU over the card's dense bf16 peak, /gemm over the GEMM ceiling of the run's precision"
    awk -F '\t' 'NR == 1 { printf "%-5s %-4s %-9s %3s %-4s %8s %9s %7s %5s %6s  %s\n", "what", "prec", "recompute",
                             "mb", "", "step ms", "tokens/s", "TFLOP/s", "MFU%", "/gemm%", "note"; next }
                 $5 != "PASS" { why = $11; sub(/^ptdp: error( \[rank [0-9]+\])?: /, "", why)
                                printf "%-5s %-4s %-9s %3s %-4s  %s\n", $1, $2, $3, $4, $5, substr(why, 1, 100); next }
                 { printf "%-5s %-4s %-9s %3s %-4s %8s %9s %7s %5s %6s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
                          substr($11, 1, 40) }' "$btsv"
  fi
  awk -F '\t' '{ n[$2]++ } END { printf "== %d PASS, %d FAIL, %d SKIP", n["PASS"], n["FAIL"], n["SKIP"] }' "$tsv"
  echo "; logs: ${OUTD:-$w}/logs.tar.gz"
}

# copy the report and the logs to OUT_DIR (few files: the device tool brings back at most 8)
publish() {
  report "$W" > "$OUTD/report.txt" 2>&1
  cp "$W/report.tsv" "$OUTD/report.tsv"
  [ -f "$W/bench/bench.tsv" ] && cp "$W/bench/bench.tsv" "$OUTD/bench.tsv"
  [ -f "$LOGD/gpu.txt" ] && cp "$LOGD/gpu.txt" "$OUTD/gpu.txt"
  local dirs=logs
  [ -d "$W/bench" ] && dirs="logs bench"
  # shellcheck disable=SC2086
  tar czf "$OUTD/logs.tar.gz.tmp" -C "$W" $dirs 2>/dev/null &&
    mv "$OUTD/logs.tar.gz.tmp" "$OUTD/logs.tar.gz"
}

# ---------------------------------------------------------------- steps (run under timeout, as
# `run_gpu.sh --step NAME`, with the state in the environment; each writes LOGD/NAME.result:
# RESULT<tab>why)
result() { printf '%s\t%s\n' "$1" "$(printf '%s' "$2" | tr '\t\n' '  ' | sed 's/ *$//' | cut -c 1-400)" > "$LOGD/$STEP.result"; }

use_env() { # the bundle's programs and libraries, the carried make when the machine has none
  [ -d "$W/tools" ] && PATH=$PATH:$W/tools
  if [ "$DEPS" != none ] && [ -f "$W/prefix/env.sh" ]; then
    # shellcheck disable=SC1091
    . "$W/prefix/env.sh"
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

step_preflight() {
  local gpus cc py p v
  { nvidia-smi -q || echo "nvidia-smi -q: failed or absent"; } > "$LOGD/gpu.txt" 2>&1
  gpus=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>&1)
  echo "GPUs: $gpus"
  for p in gcc g++ make tar gzip nvcc compute-sanitizer python3 mpicc; do
    v=$(command -v "$p" || { [ -x "/usr/local/cuda/bin/$p" ] && echo "/usr/local/cuda/bin/$p"; } || echo "absent")
    echo "$p: $v"
  done
  ldd --version 2>&1 | head -n 1
  { if command -v nvcc > /dev/null; then nvcc --version; else /usr/local/cuda/bin/nvcc --version; fi; } 2>&1 | tail -n 2
  df -h "$W" | tail -n 1
  echo "CPUs: $(nproc)"
  py=$(pick_python)
  echo "python3 with numpy and h5py (the model test's comparisons): ${py:-none}"
  for p in gcc tar gzip; do command -v "$p" > /dev/null || { result FAIL "$p is missing"; return 0; }; done
  command -v make > /dev/null || [ -x "$PACK/make" ] || { result FAIL "make is missing (pack.sh carries one)"; return 0; }
  if ! command -v nvidia-smi > /dev/null; then
    result PASS "no GPU (no nvidia-smi); the GPU steps will skip"
    return 0
  elif ! nvidia-smi -L > /dev/null 2>&1; then
    result PASS "no GPU (nvidia-smi -L: $(nvidia-smi -L 2>&1 | head -n 1)); the GPU steps will skip"
    return 0
  fi
  # "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 9.0" -> "..., 81559 MiB, driver 580.159.04, cc 9.0"
  cc=$(echo "$gpus" | head -n 1 | awk -F ', ' '{ printf "%s, %s, driver %s, cc %s", $1, $2, $3, $4 }')
  result PASS "$(echo "$gpus" | wc -l) GPU: $cc; $(nproc) CPUs${py:+; python3 ok}${py:-; no python3 with numpy and h5py: the model test will fail}"
}

pick_python() { # the first python3 that has numpy and h5py (compare_dumps.py needs both)
  local p
  for p in $(type -P -a python3) /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    [ -x "$p" ] && "$p" -c 'import numpy, h5py' 2>/dev/null && { echo "$p"; return 0; }
  done
  return 0
}

step_unpack() {
  local f
  rm -rf "$W/prefix" "$W/src" "$W/build" "$W/tools"
  mkdir -p "$W/src" || { result FAIL "cannot make $W/src"; return 0; }
  if [ "$DEPS" != none ]; then
    tar xzf "$DEPS" -C "$W" || { result FAIL "tar xzf $DEPS failed"; return 0; }
    [ -f "$W/prefix/env.sh" ] || { result FAIL "$DEPS has no prefix/env.sh (not a bundle-deps.sh bundle?)"; return 0; }
  fi
  tar xzf "$DIST" -C "$W/src" || { result FAIL "tar xzf $DIST failed"; return 0; }
  f=$(ls -d "$W"/src/*/configure 2>/dev/null | head -n 1)
  [ -n "$f" ] || { result FAIL "$DIST holds no configure script (not make dist's tarball?)"; return 0; }
  if ! command -v make > /dev/null && [ -x "$PACK/make" ]; then
    mkdir -p "$W/tools" && cp "$PACK/make" "$W/tools/make"
  fi
  result PASS "$(basename "$DIST") ($(du -h "$DIST" | cut -f1))$([ "$DEPS" != none ] &&
    echo ", $(basename "$DEPS") ($(du -h "$DEPS" | cut -f1)) -> prefix $(du -sh "$W/prefix" | cut -f1)")$([ -d "$W/tools" ] && echo ", carried make")"
}

step_configure() {
  local src arch py flags
  use_env
  src=$(dirname "$(ls -d "$W"/src/*/configure | head -n 1)")
  arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '.')}
  py=$(pick_python)
  flags="--with-cuda${arch:+ --with-cuda-arch=$arch}"
  # the bundle's MPI wrapper compiles, also where the machine's environment sets CC (the GPU
  # image sets CC=/opt/gcc/bin/gcc, with which configure finds no mpi.h): that compiler is
  # handed to the wrapper underneath (OMPI_CC)
  if [ "$DEPS" != none ] && [ -x "$W/prefix/usr/bin/mpicc" ]; then
    [ -n "${CC:-}" ] && export OMPI_CC=$CC
    [ -n "${CXX:-}" ] && export OMPI_CXX=$CXX
    export CC=$W/prefix/usr/bin/mpicc
  fi
  mkdir -p "$W/build" && cd "$W/build" || { result FAIL "cannot make $W/build"; return 0; }
  echo "CC=${CC:-} $src/configure $flags ${py:+PYTHON3=$py}"
  # shellcheck disable=SC2086
  if ! "$src/configure" $flags ${py:+PYTHON3="$py"}; then
    cp config.log "$LOGD/config.log" 2>/dev/null
    result FAIL "configure: $(grep -m 1 'error:' "$LOGD/configure.log" | sed 's/.*error: //')"
    return 0
  fi
  cp config.log "$LOGD/config.log"
  result PASS "$flags; CUDA $(sed -n 's/^CUDA_BIN = //p' Makefile | head -n 1); NCCL $(grep -q '#define PTDP_HAVE_NCCL 1' include/ptdp/config.h 2>/dev/null && echo yes || echo no)"
}

step_build() {
  use_env
  cd "$W/build" || return 1
  if make -j "$JOBS"; then
    result PASS "make -j $JOBS: ptdp-train $([ -x ptdp-train ] && echo built)"
  else
    result FAIL "make -j $JOBS: $(grep -m 1 -E 'error|Error' "$LOGD/build.log")"
  fi
}

# make-level lists of this build (automake's TESTS and check_PROGRAMS)
make_var() {
  printf 'print-ptdp-gpu-var:\n\t@echo $(%s)\n' "$1" > "$W/print.mk"
  make -s -f Makefile -f "$W/print.mk" print-ptdp-gpu-var 2>/dev/null
}

# the tests of this build matching the patterns given (shell globs on the test's name)
tests_matching() {
  local t p
  for t in $(make_var TESTS); do
    for p in "$@"; do
      # shellcheck disable=SC2254
      case $t in $p) echo "$t"; break ;; esac
    done
  done
}

# the programs among the tests given
programs_of() {
  local progs t
  progs=" $(make_var check_PROGRAMS) "
  for t in "$@"; do case $progs in *" $t "*) echo "$t" ;; esac; done
}

gpu_tests() { # every test the test steps may run, for build-tests
  tests_matching validation/tests/gpu/test_cuda_host validation/tests/gpu/test_cuda_flash $CONFORMANCE # test_cuda_flash: also the sanitizer step's
}

step_build_tests() {
  local progs
  use_env
  cd "$W/build" || return 1
  # shellcheck disable=SC2046
  progs=$(programs_of $(gpu_tests) | tr '\n' ' ')
  echo "test programs: $progs"
  [ -n "$progs" ] || { result PASS "no test program to build"; return 0; }
  # shellcheck disable=SC2086
  if make -j "$JOBS" $progs; then
    result PASS "$progs"
  else
    result FAIL "make $progs: $(grep -m 1 -E 'error|Error' "$LOGD/build-tests.log")"
  fi
}

# run_tests PATTERN...: the matching tests through automake's harness (`make check TESTS=...`,
# check_PROGRAMS limited to them so nothing else is built); the result from their .trs files
run_tests() {
  local tests progs t b r why res="" whys="" n
  use_env
  cd "$W/build" || return 1
  tests=$(tests_matching "$@" | tr '\n' ' ')
  [ -n "$tests" ] || { result SKIP "not in this tarball's tests ($*)"; return 0; }
  n=$(echo "$tests" | wc -w)
  # shellcheck disable=SC2086
  progs=$(programs_of $tests | tr '\n' ' ')
  # automake's names: a .sh or .py test's log and result drop that extension (TEST_EXTENSIONS)
  for t in $tests; do b=${t%.sh}; b=${b%.py}; rm -f "$b.log" "$b.trs"; done
  make check TESTS="$tests" check_PROGRAMS="$progs" check_LIBRARIES= check_SCRIPTS=
  for t in $tests; do
    b=${t%.sh}; b=${b%.py}
    cp "$b.log" "$LOGD/$(basename "$b").log" 2>/dev/null
    r=$(sed -n 's/^:test-result: //p' "$b.trs" 2>/dev/null | head -n 1)
    case $r in
      PASS) why=$(grep -E '[0-9]+ (checks )?passed, [0-9]+ failed' "$b.log" | tail -n 1) ;;
      SKIP) why=$(grep -m 1 "^SKIP" "$b.log" | sed "s/^SKIP:* *//" | grep . || echo "skipped (exit 77)") ;;
      "") r=FAIL why="no result in $b.trs (the harness did not finish)" ;;
      *) r=FAIL why=$(grep -m 1 -E '^FAIL|error' "$b.log" || tail -n 1 "$b.log") ;;
    esac
    [ "$n" -gt 1 ] && why="$(basename "$t"): $why"
    whys="${whys:+$whys; }$why"
    case "$res:$r" in
      *FAIL*) res=FAIL ;;
      :*) res=$r ;;
      SKIP:PASS | PASS:SKIP) res=PASS ;;
    esac
  done
  result "$res" "$whys"
}

step_host() { run_tests validation/tests/gpu/test_cuda_host; }
step_ops() {
  PTDP_TEST_BACKENDS=$CONFORMANCE_BACKENDS
  export PTDP_TEST_BACKENDS
  # shellcheck disable=SC2086
  run_tests $CONFORMANCE
}
step_model() { run_tests validation/tests/gpu/test_cuda_model.sh; }
step_sanitizer() {
  # each of the four runs (two tools, two cases: fp32 and bf16) gets a quarter of the step, less
  # a margin for the harness
  PTDP_SANITIZER_TIMEOUT=$(((STEP_TIMEOUT - 10) / 4))
  [ "$PTDP_SANITIZER_TIMEOUT" -ge 1 ] || PTDP_SANITIZER_TIMEOUT=1
  export PTDP_SANITIZER_TIMEOUT
  run_tests validation/tests/gpu/test_cuda_sanitizer.sh
  local log=$LOGD/test_cuda_sanitizer.log
  # name each case's and tool's verdict in the why (the test prints ok:/FAIL: per run, the case
  # last in parentheses: "...: no errors (exit 0; bf16)")
  if [ -f "$log" ] && grep -q -- '--tool' "$log" && [ "$(cut -f1 "$LOGD/sanitizer.result")" != SKIP ]; then
    result "$(cut -f1 "$LOGD/sanitizer.result")" "$(grep -E '^(ok|FAIL): compute-sanitizer' "$log" |
      sed 's/^\(ok\|FAIL\): compute-sanitizer --tool \([a-z]*\).*[ (;]\([a-z0-9]*\))$/\3 \2 \1/' | tr '\n' ',' |
      sed 's/,$//; s/,/, /g')"
  fi
}

step_bench() {
  local src rc n run_timeout
  use_env
  src=$(dirname "$(ls -d "$W"/src/*/configure | head -n 1)")
  rm -rf "$W/bench"
  run_timeout=$(((STEP_TIMEOUT - 20) / 2))
  [ "$run_timeout" -ge 1 ] || run_timeout=1
  # each training run (and the GEMM probe) gets half the step at most: a hang leaves time for others;
  # PTDP_CUDA_WAITS=1: each run's log ends with the host's waits for the GPU (ptdp-gpu(7))
  PTDP_CUDA_WAITS=1 OUT=$W/bench ITERS=${BENCH_ITERS:-6} PRECISIONS=${BENCH_PRECISIONS:-fp32 bf16} \
    RUNS=${BENCH_RUNS:-125M:none:8,4 1.3B:selective:4,2,1} RUN_TIMEOUT=$run_timeout \
    "$src/validation/bench/bench_gpu.sh" "$W/build"
  rc=$?
  n=$(awk -F '\t' 'NR > 1 { n[$5]++ } END { printf "%d measured, %d failed, %d skipped", n["PASS"], n["FAIL"], n["SKIP"] }' \
        "$W/bench/bench.tsv" 2>/dev/null)
  case $rc in
    0) result PASS "$n" ;;
    77) result SKIP "$(awk -F '\t' 'NR > 1 && $5 == "SKIP" { w = $11 } END { print w }' "$W/bench/bench.tsv")" ;;
    *) result FAIL "exit $rc: ${n:-no bench.tsv}" ;;
  esac
}

# ---------------------------------------------------------------- the driver
# the least time of step NAME (its least, or its budget where STEP_BUDGETS makes that smaller)
least_of() {
  local b least budget
  least=$(echo "$STEPS" | awk -F: -v s="$1" '$1 == s { print $3 }')
  budget=$(echo "$STEPS" | awk -F: -v s="$1" '$1 == s { print $2 }')
  for b in ${STEP_BUDGETS//,/ }; do [ "${b%%=*}" = "$1" ] && budget=${b#*=}; done
  echo $((least < budget ? least : budget))
}

# whether step NAME runs (--only lists it, or there is no --only)
will_run() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }

# seconds that the steps after NAME (those that will run) need at least; "-": all of them
reserve_after() {
  local s found=0 r=0
  [ "$1" = - ] && found=1
  for s in $(echo "$STEPS" | cut -d: -f1); do
    if [ $found = 1 ] && will_run "$s"; then r=$((r + $(least_of "$s"))); fi
    [ "$s" = "$1" ] && found=1
  done
  echo $r
}

# record NAME RESULT SECONDS WHY: a row of the report, a progress line, OUT_DIR refreshed
record() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$W/report.tsv"
  printf '[%3ds] %-12s %-4s %4ss  %s\n' "$(($(date +%s) - T0))" "$1" "$2" "$3" "$(echo "$4" | cut -c 1-120)"
  publish
}

result_of() { awk -F '\t' -v s="$1" '$1 == s { r = $2 } END { print r }' "$W/report.tsv"; }

run_step() {
  local name=$1 budget=$2 least=$3 needs=$4 left t rc t0 res why b
  for b in ${STEP_BUDGETS//,/ }; do [ "${b%%=*}" = "$name" ] && budget=${b#*=}; done
  [ "$least" -le "$budget" ] || least=$budget
  if ! will_run "$name"; then
    record "$name" SKIP 0 "not in --only $ONLY"
    return
  fi
  if [ "$needs" != - ] && [ "$(result_of "$needs")" != PASS ]; then
    record "$name" SKIP 0 "needs $needs, which did not pass ($(result_of "$needs"))"
    return
  fi
  left=$((DEADLINE - $(date +%s) - $(reserve_after "$name") - FINAL_RESERVE))
  t=$((budget < left ? budget : left))
  if [ "$t" -lt "$least" ]; then
    record "$name" SKIP 0 "no time left (${left} s of the run's ${BUDGET} s budget for a step that needs ${least} s)"
    return
  fi
  rm -f "$LOGD/$name.result"
  : > "$W/stamp"
  t0=$(date +%s)
  STEP=$name STEP_TIMEOUT=$t timeout -k 5 "$t" bash "$self" --step "$name" > "$LOGD/$name.log" 2>&1 < /dev/null
  rc=$?
  # the tests' logs as they are, also of a test the timeout cut short
  [ -d "$W/build/validation" ] &&
    find "$W/build/validation" -name '*.log' -newer "$W/stamp" -exec cp {} "$LOGD/" \; 2>/dev/null
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    res=FAIL why="timed out after $t s (budget $budget s): $(tail -n 1 "$LOGD/$name.log" | cut -c 1-200)"
  elif [ -f "$LOGD/$name.result" ]; then
    res=$(cut -f1 "$LOGD/$name.result") why=$(cut -f2- "$LOGD/$name.result")
  else
    res=FAIL why="exit $rc without a result: $(tail -n 1 "$LOGD/$name.log" | cut -c 1-200)"
  fi
  record "$name" "$res" "$(($(date +%s) - t0))" "$why"
}

# ---- inner mode: one step, under timeout, state in the environment
if [ "${1:-}" = --step ]; then
  STEP=$2
  cd "$W" || exit 1
  "step_${STEP//-/_}"
  exit 0
fi

# ---- arguments
PACK="" DEPS="" DIST="" W=/tmp/ptdp-gpu BUDGET=570 JOBS=$(nproc 2>/dev/null || echo 4) ONLY="" OUTD="" report_only=0
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --pack | --deps | --dist | --work | --budget | --jobs | --only)
      [ $# -ge 2 ] || die_usage "$1 needs a value"
      case $1 in
        --pack) PACK=$2 ;; --deps) DEPS=$2 ;; --dist) DIST=$2 ;; --work) W=$2 ;;
        --budget) BUDGET=$2 ;; --jobs) JOBS=$2 ;; --only) ONLY=$2 ;;
      esac
      shift 2 ;;
    --report-only) report_only=1; shift ;;
    -*) die_usage "unknown option $1" ;;
    *) [ -z "$OUTD" ] || die_usage "one OUT_DIR only (got $OUTD and $1)"; OUTD=$1; shift ;;
  esac
done
[[ $BUDGET =~ ^[0-9]+$ ]] && [ "$BUDGET" -ge 60 ] || die_usage "--budget: seconds, 60 or more (got $BUDGET)"
[[ $JOBS =~ ^[0-9]+$ ]] && [ "$JOBS" -ge 1 ] || die_usage "--jobs: a positive number (got $JOBS)"
for s in ${ONLY//,/ }; do
  echo "$STEPS" | grep -q "^$s:" || die_usage "--only: no step $s (steps: $(echo "$STEPS" | cut -d: -f1 | tr '\n' ' '))"
done
STEP_BUDGETS=${STEP_BUDGETS:-}
for b in ${STEP_BUDGETS//,/ }; do
  echo "$STEPS" | grep -q "^${b%%=*}:" && [[ ${b#*=} =~ ^[0-9]+$ ]] ||
    die_usage "STEP_BUDGETS: '$b' is not STEP=SECONDS with a step of: $(echo "$STEPS" | cut -d: -f1 | tr '\n' ' ')"
done
# a budget below the least times of the steps to run would skip every one of them: refused
need=$(($(reserve_after -) + FINAL_RESERVE))
[ "$BUDGET" -ge "$need" ] ||
  die_usage "--budget $BUDGET: the steps to run need at least $need s (their least times and $FINAL_RESERVE s for the report; fewer steps with --only, or smaller ones with STEP_BUDGETS)"
OUTD=${OUTD:-${OUT:-$PWD/ptdp-gpu-out}}
if [ $report_only = 1 ]; then
  [ -f "$W/report.tsv" ] || die_usage "--report-only: no report.tsv in $W"
  report "$W"
  exit 0
fi
if [ -z "$PACK" ]; then
  top=$(cd "$here/../.." && pwd)
  if [ -d "$top/.gpu" ]; then PACK=$top/.gpu; else PACK=$PWD; fi
fi
DEPS=${DEPS:-$PACK/ptdp-deps.tar.gz}
if [ -z "$DIST" ]; then
  DIST=$(ls "$PACK"/ptdp-[0-9]*.tar.gz 2>/dev/null | head -n 1)
  [ -n "$DIST" ] || die_usage "no ptdp-VERSION.tar.gz in $PACK (make it with validation/gpu/pack.sh, or give --dist)"
fi
[ "$DEPS" = none ] || [ -f "$DEPS" ] || die_usage "no bundle $DEPS (jobs/bundle-deps.sh makes it; --deps none uses this machine's libraries)"
[ -f "$DIST" ] || die_usage "no tarball $DIST"
DIST=$(realpath "$DIST") PACK=$(realpath "$PACK")
[ "$DEPS" = none ] || DEPS=$(realpath "$DEPS")
CONFORMANCE=${CONFORMANCE:-validation/tests/backend/test_ops validation/tests/gpu/test_cuda_ops validation/tests/gpu/test_cuda_flash}
CONFORMANCE_BACKENDS=${CONFORMANCE_BACKENDS:-cuda?}
# the work directory is emptied: only one this script made (its marker file), or a new one
if [ -e "$W" ] && [ ! -f "$W/.ptdp-gpu-work" ] && [ -n "$(ls -A "$W" 2>/dev/null)" ]; then
  die_usage "--work $W exists, is not empty and was not made by run_gpu.sh: not emptying it"
fi
rm -rf "$W" && mkdir -p "$W/logs" "$OUTD" && : > "$W/.ptdp-gpu-work" || die_usage "cannot make $W/logs and $OUTD"
W=$(realpath "$W") OUTD=$(realpath "$OUTD") LOGD=$W/logs
rm -f "$OUTD/report.txt" "$OUTD/report.tsv" "$OUTD/bench.tsv" "$OUTD/logs.tar.gz" "$OUTD/gpu.txt"
export W OUTD LOGD PACK DEPS DIST JOBS CONFORMANCE CONFORMANCE_BACKENDS BENCH_RUNS BENCH_ITERS BENCH_PRECISIONS CUDA_ARCH
: > "$W/report.tsv"
T0=$(date +%s)
DEADLINE=$((T0 + BUDGET))
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $(basename "$DIST"), deps $(basename "$DEPS"), budget $BUDGET s" > "$W/meta.txt"
echo "run_gpu.sh: $(cat "$W/meta.txt"); work $W; report in $OUTD"
while IFS=: read -r name budget least needs; do
  run_step "$name" "$budget" "$least" "$needs"
done <<< "$STEPS"
echo
report "$W"
! grep -q $'\tFAIL\t' "$W/report.tsv"
