#!/bin/sh
# bench_flash_gpu.sh without a GPU: its argument checks (exit 2) and its exit 77 when nvidia-smi
# lists no GPU; and, where this build has CUDA but the machine no GPU, the probe built against the
# build (flash_gpu_bench.c compiles and links with libptdp.a) and its own exit 77 from the CUDA
# runtime, behind an nvidia-smi that lists a GPU.  On a machine with a GPU that last part is the
# benchmark itself, so it is left to validation/bench/README.md's command.  Then the whole script
# on the emulated GPU (PROBE): its table, and its agreement check seen to pass and to fail.
. "$top_srcdir/validation/tests/common.sh"
b=$top_srcdir/validation/bench/bench_flash_gpu.sh
sh "$b" > out 2>&1; rc=$?
ok $((rc == 2 ? 0 : 1)) "no build directory: exit 2 (got $rc)"
sh "$b" "$TMPD" > out 2>&1; rc=$?
ok $((rc == 2 ? 0 : 1)) "a directory without a build: exit 2 (got $rc)"
grep -q 'no build in' out; ok $? "the message says so"
NVIDIA_SMI=false sh "$b" "$top_builddir" > out 2>&1; rc=$?
ok $((rc == 77 ? 0 : 1)) "nvidia-smi lists no GPU: exit 77 (got $rc)"
grep -q 'no GPU' out; ok $? "the message says so"
if grep -q '^CUDA_LIBS = .*cudart' "$top_builddir/Makefile" && ! nvidia-smi -L > /dev/null 2>&1; then
  printf '#!/bin/sh\necho "Planted GPU, 0.0, 0 MHz, 0 MHz"\n' > fake-smi
  chmod +x fake-smi
  NVIDIA_SMI=$TMPD/fake-smi OUT=$TMPD/o REPS=10 sh "$b" "$top_builddir" > out 2>&1; rc=$?
  cat out
  ok $((rc == 77 ? 0 : 1)) "a listed GPU the runtime cannot use: the probe builds and says 77 (got $rc)"
  test -x o/flash_gpu_bench; ok $? "the probe was built against the build's libptdp.a"
fi
# the script's logic end to end on the emulated GPU (flash_gpu_bench_emu: the probe linked with the
# CUDA emulation; its times mean nothing): both sets run, the table and the agreement are printed
emu=$top_builddir/validation/bench/flash_gpu_bench_emu
printf '#!/bin/sh\necho "Emulated GPU, 0.0, 0 MHz, 0 MHz"\n' > emu-smi
chmod +x emu-smi
PROBE=$emu NVIDIA_SMI=$TMPD/emu-smi OUT=$TMPD/e REPS=10 SHAPES="1:1:70:64 1:2:33:128" sh "$b" "$top_builddir" > out 2>&1
rc=$?
cat out
ok $((rc == 0 ? 0 : 1)) "on the emulated GPU: exit 0 (got $rc)"
test "$(grep -c '^\(wmma\|mma\) ' out)" = 4; ok $? "a line per set and shape"
test "$(grep -c 'speed-up of mma over wmma' out)" = 2 && test "$(grep -c ': agree$' out)" = 2
ok $? "a speed-up and an agreement per shape"
test "$(wc -l < e/bench_flash.tsv)" = 6; ok $? "the TSV holds 6 rows"
# the agreement check fails when the sets differ at all (DIFF_MAX 0: at hd 128 ctx and dqkv differ
# by rounding, as above)
PROBE=$emu NVIDIA_SMI=$TMPD/emu-smi OUT=$TMPD/e REPS=10 SHAPES="1:2:33:128" DIFF_MAX=0 sh "$b" "$top_builddir" > out 2>&1
rc=$?
cat out
ok $((rc == 1 ? 0 : 1)) "sets further apart than DIFF_MAX: exit 1 (got $rc)"
grep -q 'DIFFER' out; ok $? "the line says DIFFER"
finish
