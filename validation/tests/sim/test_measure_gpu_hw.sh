#!/bin/sh
# jobs/measure_gpu_hw.sh's arguments and its failures without a GPU (it measures nothing here: a
# GPU run is the script's own job).  --help prints the usage and exits 0; an unknown argument, a
# key without a value, a value that is not a number, an unknown GPU without its peaks and a
# missing build exit 2 naming what is wrong, before anything is built or measured; with no GPU
# listed (NVIDIA_SMI pointed at a program that lists none, or fails) it exits 77 saying so and
# writes nothing; validation/sim/check_gpu_prediction.sh, which needs it, skips (77).
# Planted: a copy without the number check lets '--peak-tflops-16 abc' through.
. "$top_srcdir/validation/tests/common.sh"
S="$top_srcdir/jobs/measure_gpu_hw.sh"
printf '#!/bin/sh\necho "NVIDIA H100 80GB HBM3"\n' > "$TMPD/h100-smi"
printf '#!/bin/sh\necho "Some Future GPU"\n' > "$TMPD/other-smi"
printf '#!/bin/sh\nexit 0\n' > "$TMPD/none-smi"
chmod +x "$TMPD/h100-smi" "$TMPD/other-smi" "$TMPD/none-smi"

sh "$S" --help > "$TMPD/out" 2>&1
[ $? -eq 0 ] && grep -q "^usage: jobs/measure_gpu_hw.sh \[--out FILE.hw\]" "$TMPD/out"
ok $? "--help prints the usage, exit 0"

# expect STATUS PATTERN ARGS...: the script exits STATUS and says PATTERN on stderr
expect() {
  want=$1 pattern=$2
  shift 2
  sh "$S" "$@" > "$TMPD/out" 2> "$TMPD/err"
  st=$?
  [ $st -eq "$want" ] && grep -q -- "$pattern" "$TMPD/err"
  r=$?
  [ $r -eq 0 ] || { echo "status $st (wanted $want):"; cat "$TMPD/err"; }
  return $r
}
expect 2 "unknown argument '--bogus'" --bogus
ok $? "an unknown argument: exit 2, named"
expect 2 "--out wants a value" --out
ok $? "a key without its value: exit 2"
expect 2 "--peak-tflops-16 wants a positive number, got 'abc'" --peak-tflops-16 abc
ok $? "a peak that is not a number: exit 2"
expect 2 "--gpus-per-node wants a positive number, got '-8'" --gpus-per-node -8
ok $? "a negative GPU count: exit 2"

NVIDIA_SMI="$TMPD/none-smi" expect 77 "no GPU: .* lists none" --out "$TMPD/x.hw"
ok $? "no GPU listed: exit 77, said so"
[ ! -e "$TMPD/x.hw" ]; ok $? "no GPU: nothing written"
NVIDIA_SMI="$TMPD/does-not-exist" expect 77 "no GPU" --out "$TMPD/x.hw"
ok $? "no nvidia-smi at all: exit 77"
NVIDIA_SMI="$TMPD/other-smi" expect 2 "unknown GPU 'Some Future GPU': give --peak-tflops-16" --out "$TMPD/x.hw"
ok $? "an unknown GPU without peaks: exit 2, asks for them"
NVIDIA_SMI="$TMPD/h100-smi" expect 2 "no build in $TMPD/nobuild" --build "$TMPD/nobuild" --out "$TMPD/x.hw"
ok $? "an H100 (peaks from its name) but no build: exit 2"

# the check that uses it (ptdp-sim against ptdp's own GPU step times) skips the same way
OUT="$TMPD/pred" NVIDIA_SMI="$TMPD/none-smi" sh "$top_srcdir/validation/sim/check_gpu_prediction.sh" "$top_builddir" \
  > "$TMPD/out" 2>&1
[ $? -eq 77 ] && grep -q "SKIP: no usable GPU" "$TMPD/out"; ok $? "check_gpu_prediction.sh without a GPU: exit 77, SKIP"

# planted: without the number check, 'abc' reaches the measurement (here: the missing GPU)
sed 's/^  echo "\$2" | grep -Eq .*$/  :/' "$S" > "$TMPD/planted.sh"
! cmp -s "$TMPD/planted.sh" "$S"; ok $? "planted: the number check taken out of a copy"
S="$TMPD/planted.sh"
NVIDIA_SMI="$TMPD/none-smi" expect 2 "wants a positive number" --peak-tflops-16 abc > /dev/null
[ $? -ne 0 ]; ok $? "planted: the check above catches it ('abc' no longer refused)"
finish
