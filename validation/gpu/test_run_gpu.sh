#!/bin/sh
# The GPU run's logic, without a GPU (README, GPUs):
#   1. run_gpu.sh's argument errors (exit 2, the reason, nothing emptied that it did not make);
#   2. a whole run on a fake ptdp tarball whose configure writes a Makefile of fake tests: the
#      bundle's env.sh reaches the tests; only the GPU tests' programs are built; PASS, SKIP
#      (with the test's reason) and FAIL are reported as the tests end; a test that hangs is a
#      FAIL of its step at that step's budget and the steps after it still run; the benchmark
#      table; OUT_DIR holds few flat files (the device tool brings back at most 8); exit 1;
#   3. a configure failure: the steps that need it skip with the reason; --report-only;
#   4. a clean run (skips only) exits 0; a budget too small for any step skips them all;
#   5. test_cuda_sanitizer.sh against a fake compute-sanitizer: "Device not supported" is a
#      SKIP with the reason, reported errors and a hang are failures, a clean run passes.
#   6. bench_gpu.sh against a fake trainer: figures from the log lines (mean of iterations
#      3..ITERS), a run out of memory tries the next micro-batch, a refused precision is a SKIP
#      with the trainer's message, a hang fails at RUN_TIMEOUT, no GPU exits 77.
. "$top_srcdir/validation/tests/common.sh"
RG=$top_srcdir/validation/gpu/run_gpu.sh
unset OUT CUDA_ARCH STEP_BUDGETS BENCH_RUNS
HANG=37 # the fake sanitizer test sleeps this long (s): no such sleep may outlive its step

# ---- the fake tarball and bundle
F=$TMPD/fake/ptdp-9.9.9
mkdir -p "$F/fake" "$F/validation/bench" "$TMPD/pack" "$TMPD/fd/prefix"
echo 'export FAKE_BUNDLE=yes' > "$TMPD/fd/prefix/env.sh"
mkdir -p "$TMPD/fd/prefix/usr/bin" && printf '#!/bin/sh\nexit 0\n' > "$TMPD/fd/prefix/usr/bin/mpicc" &&
  chmod +x "$TMPD/fd/prefix/usr/bin/mpicc" # configure is handed the bundle's MPI wrapper
cat > "$F/configure" <<'EOF'
#!/bin/sh
src=$(cd "$(dirname "$0")" && pwd)
echo "$*" > configure.args
echo "CC=${CC:-} OMPI_CC=${OMPI_CC:-}" > configure.env
[ -z "${FAKE_CONFIGURE_FAIL:-}" ] || { echo "configure: error: planted configure failure"; exit 1; }
sed "s|@srcdir@|$src|" "$src/Makefile.tmpl" > Makefile
echo 'fake config.log' > config.log
EOF
# (recipe lines start with "> ", made tabs below)
cat > "$F/Makefile.tmpl" <<'EOF'
srcdir = @srcdir@
CUDA_BIN = /fake/cuda/bin
TESTS = validation/tests/gpu/test_cuda_host validation/tests/backend/test_ops validation/tests/backend/test_ops_plant.sh validation/tests/gpu/test_cuda_model.sh validation/tests/gpu/test_cuda_sanitizer.sh validation/tests/core/test_other
check_PROGRAMS = validation/tests/gpu/test_cuda_host validation/tests/backend/test_ops validation/tests/core/test_other
all: ptdp-train
ptdp-train:
> printf '#!/bin/sh\nexit 0\n' > $@ && chmod +x $@
validation/tests/gpu/test_cuda_host validation/tests/backend/test_ops:
> mkdir -p $(@D) && cp $(srcdir)/fake/$(@F) $@ && chmod +x $@ && echo $@ >> built.txt
validation/tests/core/test_other:
> @echo "planted: a program no GPU test needs was built" >&2; exit 1
check: all
> $(MAKE) $(check_PROGRAMS)
> @for t in $(TESTS); do b=$${t%.sh}; mkdir -p $$(dirname $$b); if [ -x $$t ]; then ./$$t; else sh $(srcdir)/fake/$$(basename $$t); fi > $$b.log 2>&1; rc=$$?; case $$rc in 0) r=PASS;; 77) r=SKIP;; *) r=FAIL;; esac; echo ":test-result: $$r" > $$b.trs; echo "$$r: $$t"; done
EOF
cat > "$F/fake/test_cuda_host" <<'EOF'
#!/bin/sh
[ "${FAKE_BUNDLE:-}" = yes ] || { echo "FAIL: the bundle's env.sh was not sourced"; exit 1; }
echo "test_cuda_host: 5 passed, 0 failed"
EOF
cat > "$F/fake/test_ops" <<'EOF'
#!/bin/sh
[ "${PTDP_TEST_BACKENDS:-}" = "cuda?" ] || { echo "FAIL: backends '${PTDP_TEST_BACKENDS:-}', not 'cuda?'"; exit 1; }
[ "${FAKE_MODE:-}" = clean ] && { echo "test_ops: 397 passed, 0 failed"; exit 0; }
echo "SKIP cuda: no usable GPU (fake)"; exit 77
EOF
printf 'echo "FAIL: planted: the planted-mistake test must not run on the GPU"; exit 1\n' > "$F/fake/test_ops_plant.sh"
cat > "$F/fake/test_cuda_model.sh" <<'EOF'
[ "${FAKE_MODE:-}" = clean ] && { echo "20 checks passed, 0 failed"; exit 0; }
echo "FAIL: planted loss mismatch"; exit 1
EOF
cat > "$F/fake/test_cuda_sanitizer.sh" <<EOF
[ "\${FAKE_MODE:-}" = clean ] && { echo "SKIP: compute-sanitizer refuses this GPU (fake)"; exit 77; }
echo "tool timeout \$PTDP_SANITIZER_TIMEOUT"
sleep $HANG
EOF
cat > "$F/validation/bench/bench_gpu.sh" <<'EOF'
#!/bin/sh
mkdir -p "$OUT"
echo "RUNS=$RUNS ITERS=$ITERS PRECISIONS=$PRECISIONS build=$1" > "$OUT/args.txt"
{ printf 'what\tprecision\trecompute\tmb\tresult\tstep_ms\ttokens_per_s\ttflops\tmfu_pct\tgemm_pct\twhy\n'
  printf 'gemm\tbf16\t-\t-\tPASS\t1.401\t-\t785.0\t79.4\t-\tn=8192, random inputs\n'
  printf '125M\tfp32\tnone\t8\tPASS\t170.2\t48131\t20.6\t2.1\t40.4\t6 iterations, mean of 3..6\n'
  printf '125M\tbf16\tnone\t-\tSKIP\t-\t-\t-\t-\t-\tptdp: error: bf16: planted refusal\n'; } > "$OUT/bench.tsv"
EOF
sed -i "s/^> /$(printf '\t')/" "$F/Makefile.tmpl"
chmod +x "$F/configure" "$F/validation/bench/bench_gpu.sh"
tar czf "$TMPD/pack/ptdp-9.9.9.tar.gz" -C "$TMPD/fake" ptdp-9.9.9
tar czf "$TMPD/pack/ptdp-deps.tar.gz" -C "$TMPD/fd" prefix
P="--pack $TMPD/pack --jobs 1"

# row STEP: "RESULT<tab>why" of report.tsv in OUT_DIR $O
row() { awk -F '\t' -v s="$1" '$1 == s { print $2 "\t" $4 }' "$O/report.tsv"; }
# expect STEP RESULT TEXT: the step's row has this result and its why contains TEXT
expect() {
  r=$(row "$1")
  case $r in "$2	"*"$3"*) ok 0 "$1: $2 ($3)" ;; *) ok 1 "$1: want $2 with '$3', got '$r'" ;; esac
}

# ---- 1. arguments
for bad in "--budget 10" "--jobs x" "--frobnicate" "--only build,nosuch" "--pack $TMPD/nowhere" "a b"; do
  # shellcheck disable=SC2086
  "$RG" $bad > "$TMPD/arg.out" 2>&1
  rc=$?
  [ $rc = 2 ] && grep -q "run_gpu.sh: " "$TMPD/arg.out"
  ok $? "bad arguments '$bad': exit 2 with a reason (got $rc: $(head -n 1 "$TMPD/arg.out"))"
done
STEP_BUDGETS=build=x "$RG" $P > "$TMPD/arg.out" 2>&1
ok $(($? != 2)) "STEP_BUDGETS=build=x: exit 2 ($(head -n 1 "$TMPD/arg.out"))"
mkdir -p "$TMPD/precious" && echo keep > "$TMPD/precious/file"
"$RG" $P --work "$TMPD/precious" "$TMPD/o0" > "$TMPD/arg.out" 2>&1
rc=$?
[ $rc = 2 ] && [ -f "$TMPD/precious/file" ]
ok $? "a --work directory run_gpu.sh did not make is refused and kept (exit $rc)"
"$RG" --help | grep -q "OUT_DIR"
ok $? "--help prints the usage"

# ---- 2. a run with a pass, skips, a failure and a hang
O=$TMPD/o1
start=$(date +%s)
STEP_BUDGETS=sanitizer=4 "$RG" $P --work "$TMPD/w1" "$O" > "$TMPD/run1.out" 2>&1
rc=$?
ok $((rc != 1)) "a run with failures exits 1 (got $rc) in $(($(date +%s) - start)) s"
expect preflight PASS "GPU"
expect unpack PASS "ptdp-9.9.9.tar.gz"
expect configure PASS "--with-cuda"
expect build PASS "make -j 1"
expect build-tests PASS "validation/tests/backend/test_ops"
expect host PASS "5 passed, 0 failed"
expect ops SKIP "cuda: no usable GPU (fake)"
expect model FAIL "planted loss mismatch"
expect sanitizer FAIL "timed out after 4 s"
expect bench PASS "2 measured, 0 failed, 1 skipped"
t=$(awk -F '\t' '$1 == "sanitizer" { print $3 }' "$O/report.tsv")
[ "$t" -le 10 ]
ok $? "the hung step ended at its budget (4 s + 5 s for the kill; took $t s)"
sleep 1
ps -eo args | grep -q "^sleep $HANG\$"
ok $((! $?)) "no process of the hung step is left"
grep -qx validation/tests/backend/test_ops "$TMPD/w1/build/built.txt" &&
  grep -qx validation/tests/gpu/test_cuda_host "$TMPD/w1/build/built.txt"
ok $? "the GPU tests' programs were built"
! grep -q test_other "$TMPD/w1/build/built.txt" && ! grep -q "planted: a program" "$TMPD/w1/logs/"*.log
ok $? "no other test program was built"
grep -q "RUNS=125M:none:8,4 1.3B:selective:4,2,1 ITERS=6 PRECISIONS=fp32 bf16" "$TMPD/w1/bench/args.txt"
ok $? "bench_gpu.sh got the run's configs ($(cat "$TMPD/w1/bench/args.txt"))"
files=$(ls -A "$O" | tr '\n' ' ')
[ "$(ls -A "$O" | wc -l)" -le 8 ] && [ -z "$(find "$O" -mindepth 1 -type d)" ]
ok $? "OUT_DIR: at most 8 files, no folders ($files)"
tar tzf "$O/logs.tar.gz" | grep -q "logs/test_cuda_model.log" && tar tzf "$O/logs.tar.gz" | grep -q "logs/sanitizer.log" &&
  tar xzOf "$O/logs.tar.gz" logs/test_cuda_sanitizer.log | grep -q "tool timeout"
ok $? "logs.tar.gz holds the steps' and the tests' logs, the hung test's too"
tail -n 1 "$TMPD/run1.out" | grep -q "^== 7 PASS, 2 FAIL, 1 SKIP; logs: $O/logs.tar.gz"
ok $? "the report is printed last: $(tail -n 1 "$TMPD/run1.out")"
grep -q "^125M  fp32 none        8 PASS    170.2     48131    20.6   2.1   40.4  6 iterations" "$O/report.txt" &&
  grep -q "^125M  bf16 none        - SKIP  bf16: planted refusal" "$O/report.txt"
ok $? "the benchmark table: figures, and the refused precision with the trainer's reason"
[ "$ptdp_fail" = 0 ] || cat "$O/report.txt"
grep -q "^sanitizer    FAIL " "$O/report.txt"
ok $? "report.txt has the checks' table"
"$RG" --work "$TMPD/w1" --report-only "$O" | sed '$d' > "$TMPD/again.txt"
sed '$d' "$O/report.txt" | cmp -s - "$TMPD/again.txt"
ok $? "--report-only prints the same report"

# ---- 3. configure fails: what needs it skips, with the reason
O=$TMPD/o2
FAKE_CONFIGURE_FAIL=1 "$RG" $P --work "$TMPD/w2" "$O" > "$TMPD/run2.out" 2>&1
rc=$?
ok $((rc != 1)) "a failed configure: exit 1 (got $rc)"
expect configure FAIL "planted configure failure"
expect build SKIP "needs configure"
expect host SKIP "needs build-tests"
expect bench SKIP "needs build"

# ---- 4. a clean run exits 0; --deps none uses no bundle; no time for any step: all skip
O=$TMPD/o3
# the GPU image sets CC to a plain compiler, which finds no mpi.h: the bundle's wrapper must win,
# with that compiler underneath (seen on this workplace's H200, 2026-11-26)
CC=/opt/fake/gcc FAKE_MODE=clean "$RG" $P --work "$TMPD/w3" "$O" > "$TMPD/run3.out" 2>&1
rc=$?
ok $rc "a run with passes and skips only exits 0 (got $rc)"
e=$(cat "$TMPD/w3/build/configure.env" 2>&1)
[ "$e" = "CC=$(realpath "$TMPD/w3")/prefix/usr/bin/mpicc OMPI_CC=/opt/fake/gcc" ]
ok $? "configure runs with the bundle's mpicc, the environment's CC underneath (got: $e)"
expect ops PASS "test_ops: 397 passed, 0 failed"
expect sanitizer SKIP "compute-sanitizer refuses this GPU (fake)"
O=$TMPD/o5
"$RG" $P --work "$TMPD/w5" --deps none --only preflight,unpack,configure,build,build-tests,host "$O" > "$TMPD/run5.out" 2>&1
expect host FAIL "env.sh was not sourced" # the fake test asks for the bundle: --deps none has none
e=$(cat "$TMPD/w5/build/configure.env" 2>&1)
[ "$e" = "CC=${CC:-} OMPI_CC=${OMPI_CC:-}" ]
ok $? "--deps none: configure runs with the environment's CC as it is (got: $e)"
expect model SKIP "not in --only"
O=$TMPD/o4
# a budget below the steps' least times would skip them all (a GPU call spent for nothing, seen
# with --budget 210): refused before anything runs; with --only the steps left out need nothing
"$RG" $P --work "$TMPD/w4" --budget 210 "$O" > "$TMPD/run4.out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- "--budget 210: the steps to run need at least 265 s" "$TMPD/run4.out" && [ ! -e "$TMPD/w4" ]
ok $? "a budget below the steps' least times: exit 2 with the reason, nothing made (got $rc: $(head -n 1 "$TMPD/run4.out"))"
"$RG" $P --work "$TMPD/w4" --budget 60 --only preflight,unpack "$O" > "$TMPD/run4.out" 2>&1
ok $? "--budget 60 with --only preflight,unpack (25 s needed): runs"
expect unpack PASS "ptdp-9.9.9.tar.gz"
expect bench SKIP "not in --only"

# ---- 5. the sanitizer test's verdicts (a fake trainer, launcher and compute-sanitizer)
S=$TMPD/sb
mkdir -p "$S/bin"
printf '#!/bin/sh\nexit 0\n' > "$S/ptdp-train"
# the launcher: drops its own options (-n 1, -np 1, --allow-run-as-root) up to the program
printf '#!/bin/sh\nwhile [ $# -gt 0 ] && [ ! -x "$1" ]; do shift; done\nexec "$@"\n' > "$S/mpirun"
cat > "$S/bin/compute-sanitizer" <<'EOF'
#!/bin/sh
case $FAKE_CS in
  unsupported) echo "========= Error: Device not supported. Please refer to the documentation"; exit 1 ;;
  errors) echo "========= Invalid __global__ write of size 4 bytes"; echo "========= ERROR SUMMARY: 1 error"; exit 3 ;;
  hang) sleep 60 ;;
  *) echo "========= ERROR SUMMARY: 0 errors"
     for a; do :; done # the last argument: the program, for test_cuda_flash (which takes none)
     case $a in *test_cuda_flash) "$a" ;; esac ;;
esac
EOF
# bf16's racecheck runs test_cuda_flash; FAKE_FLASH=fail: its own checks fail
mkdir -p "$S/validation/tests/gpu"
cat > "$S/validation/tests/gpu/test_cuda_flash" <<'EOF'
#!/bin/sh
if [ "${FAKE_FLASH:-}" = fail ]; then echo "test_cuda_flash: 9 checks passed, 1 failed"; exit 1; fi
echo "test_cuda_flash: 10 checks passed, 0 failed"
EOF
chmod +x "$S/ptdp-train" "$S/mpirun" "$S/bin/compute-sanitizer" "$S/validation/tests/gpu/test_cuda_flash"
cs() {
  FAKE_CS=$1 PTDP_SANITIZER_TIMEOUT=2 top_builddir=$S MPIRUN=$S/mpirun PATH=$S/bin:$PATH \
    sh "$top_srcdir/validation/tests/gpu/test_cuda_sanitizer.sh" > "$TMPD/cs-$1.out" 2>&1
}
cs unsupported
rc=$?
[ $rc = 77 ] && grep -q "^SKIP: compute-sanitizer --tool memcheck refuses this GPU: Error: Device not supported" "$TMPD/cs-unsupported.out"
ok $? "sanitizer: 'Device not supported' is a SKIP with the reason (exit $rc: $(grep -m 1 SKIP "$TMPD/cs-unsupported.out"))"
cs errors
rc=$?
ok $((rc != 1)) "sanitizer: reported errors fail the test (exit $rc)"
cs hang
rc=$?
[ $rc = 1 ] && grep -q "timed out after 2 s" "$TMPD/cs-hang.out"
ok $? "sanitizer: a hang fails at PTDP_SANITIZER_TIMEOUT (exit $rc)"
cs clean
ok $? "sanitizer: a clean run passes"
[ "$(grep -c '^ok: compute-sanitizer --tool .*; bf16)$' "$TMPD/cs-clean.out")" = 2 ]
ok $? "sanitizer: the bf16 case (the mma flash kernels) runs under both tools"
FAKE_FLASH=fail cs clean
rc=$?
[ $rc = 1 ] && grep -q "racecheck: no errors (exit 1; bf16)" "$TMPD/cs-clean.out"
ok $? "sanitizer: test_cuda_flash failing its own checks under racecheck fails the test (exit $rc)"

# ---- 6. bench_gpu.sh's verdicts (a fake trainer: log lines of 100*i ms and 10*i TFLOP/s)
cat > "$S/fake-train" <<'EOF'
#!/bin/sh
mb=1 prec=fp32 iters=3 rc=none
while [ $# -gt 0 ]; do
  case $1 in
    --micro-batch-size) mb=$2; shift ;; --train-iters) iters=$2; shift ;;
    --bf16) prec=bf16; shift ;; --recompute-granularity) rc=$2; shift ;;
  esac
  shift
done
[ -n "${FAKE_NOGPU:-}" ] && { echo "ptdp: error [rank 0]: backend = cuda: no usable GPU on this node (fake)"; exit 1; }
[ $prec = bf16 ] && { echo "ptdp: error: bf16: the CUDA backend trains in fp32 only so far (fake)"; exit 1; }
[ "$mb" -gt 2 ] && { echo "ptdp: error [rank 0]: GPU 0 out of memory allocating 12345 bytes (fake)"; exit 1; }
[ $rc = full ] && sleep 30
i=1
while [ $i -le "$iters" ]; do
  echo " iteration $i/ $iters | elapsed time per iteration (ms): $((100 * i)).0 | throughput per GPU (TFLOP/s/GPU): $((10 * i)).0 |"
  i=$((i + 1))
done
EOF
chmod +x "$S/fake-train"
bench() {
  OUT=$TMPD/b-$1 GEMM_N=0 ITERS=4 PEAK=100 RUN_TIMEOUT=2 TRAIN=$S/fake-train MPIEXEC=$S/mpirun PRECISIONS="fp32 bf16" \
    RUNS="tiny:none:4,2 tiny:selective:8 tiny:full:1" sh "$top_srcdir/validation/bench/bench_gpu.sh" "$S" > "$TMPD/b-$1.out" 2>&1
}
printf 'CC = cc\n' > "$S/Makefile"
bench run
rc=$?
ok $((rc != 1)) "bench: a failed run makes the exit 1 (got $rc)"
brow() { awk -F '\t' -v w="$2" -v p="$3" -v r="$4" '$1 == w && $2 == p && $3 == r' "$TMPD/b-$1/bench.tsv" | cut -f 4-11; }
[ "$(brow run tiny fp32 none)" = "2	PASS	350.0	731	35.0	35.0	-	4 iterations, mean of 3..4" ]
ok $? "bench: mean of iterations 3..4 at the first micro-batch that fits (got '$(brow run tiny fp32 none)')"
brow run tiny fp32 selective | grep -q "^8	FAIL	.*out of memory"
ok $? "bench: out of memory at the last micro-batch is a FAIL with the reason"
brow run tiny fp32 full | grep -q "^1	FAIL	.*timed out after 2 s"
ok $? "bench: a hang fails at RUN_TIMEOUT"
[ "$(brow run tiny bf16 none | cut -f 2,8)" = "SKIP	ptdp: error: bf16: the CUDA backend trains in fp32 only so far (fake)" ]
ok $? "bench: a refused precision is a SKIP with the trainer's message"
FAKE_NOGPU=1 bench nogpu
rc=$?
[ $rc = 77 ] && grep -q "SKIP: .*no usable GPU" "$TMPD/b-nogpu.out"
ok $? "bench: no GPU: exit 77 with the reason (got $rc)"
finish
