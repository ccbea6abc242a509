#!/bin/sh
# jobs/measure_gpu_hw.sh's arguments and its failures without a GPU (it measures nothing here: a
# GPU run is the script's own job).  --help prints the usage and exits 0; an unknown argument, a
# key without a value, a value that is not a number, an unknown GPU without its peaks and a
# missing build exit 2 naming what is wrong, before anything is built or measured; with no GPU
# listed (NVIDIA_SMI pointed at a program that lists none, or fails) it exits 77 saying so and
# writes nothing; validation/sim/check_gpu_prediction.sh, which needs it, skips (77).
# Then the file it writes, with a mock probe (MEASURE_GPU_PROBE: a program printing what the
# probe prints on an H200, the figures of inputs/hw/h200-ptdp.hw) and a mock nvidia-smi naming an
# H200: every value carries its provenance tag (ptdp-hardware(5), PROVENANCE), the MEASURED ones
# naming the machine (--machine h200, or by default host-h200), the UTC time and the command as
# given; the keys and their tags' kinds are those of the hand-tagged inputs/hw/h200-ptdp.hw, its
# ASSUMED sources word for word (but collective-sms's, which cites the A100 file for the NCCL log
# rather than the thread it was posted in); ptdp-sim --explain reads it with no UNTAGGED warning;
# options given on the command line turn their values' tags into "ASSUMED given to ...".
# Planted: a copy without the number check lets '--peak-tflops-16 abc' through; a copy that writes
# nics-per-node without its tag fails the tag check, naming the line.
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/sim/hw_tags.sh"
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

# the file written: a mock probe prints what the probe prints, with inputs/hw/h200-ptdp.hw's figures
cat > "$TMPD/probe" <<'P'
#!/bin/sh
# a mock of measure_gpu_hw.sh's probe: PEAK GEMM_N -> the probe's lines (an H200's figures)
cat <<L
# CUDA runtime 13.0
# ${2}x${2}x${2} bf16 GEMM, random inputs, median of 20: 752.5 TFLOP/s
gemm-efficiency = 0.778  # ${2}^3 bf16 GEMM, random inputs, median of 20: 752.5 TFLOP/s = 0.778 x $1 x w 0.985 x k 0.992
sm-count = 132  # the device's multiProcessorCount: 132
# a 1 GiB device-to-device copy, bytes read and written over its median time
memory-bandwidth-gbs = 4207  # a 1 GiB device-to-device copy: 4207 GB/s
# a one-element add issued 1000 times
kernel-launch-us = 3.45  # a one-element add issued 1000 times: 3.45 us each
# the device's total
memory-gb = 150.1  # the device's totalGlobalMem: 150.1e9 bytes
# ptdp's fused attention, b 1 h 16 s 2048 hd 128, causal, median of 10: 0.305 ms forward, 0.839 ms backward
flash-attention-efficiency-forward = 0.057  # ptdp's fused attention, b 1 h 16 s 2048 hd 128, causal, median of 10: 0.305 ms forward, 56.3 TFLOP/s = 0.057 x $1
flash-attention-efficiency-backward = 0.052  # ptdp's fused attention, b 1 h 16 s 2048 hd 128, causal, median of 10: 0.839 ms backward, 51.2 TFLOP/s = 0.052 x $1
L
P
printf '#!/bin/sh\necho "NVIDIA H200"\n' > "$TMPD/h200-smi"
chmod +x "$TMPD/probe" "$TMPD/h200-smi"
# run OUT ARGS...: the script with the mocks, --out OUT ARGS...
run() {
  run_out=$1
  shift
  NVIDIA_SMI="$TMPD/h200-smi" MEASURE_GPU_PROBE="$TMPD/probe" sh "$S" --out "$run_out" "$@" > "$TMPD/run" 2>&1 ||
    { cat "$TMPD/run"; return 1; }
}
out="$TMPD/gpu.hw"
run "$out" --machine h200 --build "$TMPD/nobuild"
ok $? "the mock probe on a mock H200: exit 0, no build needed"
cmd="jobs/measure_gpu_hw.sh --out $out --machine h200 --build $TMPD/nobuild"
case $out in *[!A-Za-z0-9._/:=+,@-]*) cmd="jobs/measure_gpu_hw.sh --out '$out' --machine h200 --build '$TMPD/nobuild'" ;; esac
check_hw_tags "$out" h200 "$cmd"
ok $? "every value tagged; each MEASURED tag: h200, a UTC time, \"$cmd\", a figure"
hw_kinds "$top_srcdir/inputs/hw/h200-ptdp.hw" > "$TMPD/kinds.repo"
hw_kinds "$out" > "$TMPD/kinds.new"
diff "$TMPD/kinds.repo" "$TMPD/kinds.new"
ok $? "the keys, in order, and their tags' kinds are inputs/hw/h200-ptdp.hw's"
hw_assumed "$top_srcdir/inputs/hw/h200-ptdp.hw" | grep -v '^collective-sms ' > "$TMPD/assumed.repo"
hw_assumed "$out" | grep -v '^collective-sms ' > "$TMPD/assumed.new"
diff "$TMPD/assumed.repo" "$TMPD/assumed.new"
ok $? "the ASSUMED sources are inputs/hw/h200-ptdp.hw's, word for word (collective-sms's aside)"
grep -q '^gemm-efficiency = 0.778  # MEASURED h200 [^ ]* "[^"]*" 8192^3 bf16 GEMM, random inputs, median of 20: 752.5 TFLOP/s = 0.778 x 989 x w 0.985 x k 0.992$' "$out"
ok $? "the probe's figure follows the command, as in inputs/hw/h200-ptdp.hw"
check_explain "$out" h200
ok $? "ptdp-sim --hardware OUT --explain: no UNTAGGED warning, every value printed with its tag"

host=$(hostname | sed 's/[.].*//' | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g')
run "$out" --gpus-per-node 8 --peak-tflops-16 1000 --intra-node-bandwidth-gbs 400 --name "eight H200s" &&
  check_hw_tags "$out" "$host-h200" "jobs/measure_gpu_hw.sh --out $(case $out in *[!A-Za-z0-9._/:=+,@-]*) echo "'$out'" ;; *) echo "$out" ;; esac) --gpus-per-node 8 --peak-tflops-16 1000 --intra-node-bandwidth-gbs 400 --name 'eight H200s'"
ok $? "by default the machine is host-h200 ($host-h200); a --name with spaces quoted in the command"
grep -q '^gpus-per-node = 8  # ASSUMED given to measure_gpu_hw.sh (--gpus-per-node 8; source not recorded)$' "$out" &&
  grep -q '^peak-tflops-16 = 1000  # ASSUMED given to measure_gpu_hw.sh (--peak-tflops-16 1000; ' "$out" &&
  grep -q '^intra-node-bandwidth-gbs = 400  # ASSUMED given to measure_gpu_hw.sh (--intra-node-bandwidth-gbs 400; ' "$out" &&
  grep -q '^peak-tflops-32 = 67  # ASSUMED measure_gpu_hw.sh.s peaks for an H200 ' "$out"
ok $? "values given as options: ASSUMED, naming the option; the others keep their sources"
NVIDIA_SMI="$TMPD/h200-smi" MEASURE_GPU_PROBE="$TMPD/probe" expect 2 "--machine wants one word" --machine "a b" --out "$TMPD/x.hw"
ok $? "a machine of two words: exit 2"
NVIDIA_SMI="$TMPD/h200-smi" MEASURE_GPU_PROBE="$TMPD/probe" expect 2 "no quotes in" --name 'a "b"' --out "$TMPD/x.hw"
ok $? "a value with a quote (it would close the tag's command): exit 2"
printf '#!/bin/sh\necho "sm-count = 132"\n' > "$TMPD/bare-probe"
chmod +x "$TMPD/bare-probe"
NVIDIA_SMI="$TMPD/h200-smi" MEASURE_GPU_PROBE="$TMPD/bare-probe" expect 1 "without its figure" --out "$TMPD/x.hw"
ok $? "a probe value without its figure: exit 1"
[ ! -e "$TMPD/x.hw" ]; ok $? "... and nothing written"

# planted: a copy that writes nics-per-node without its tag: the tag check names the line
sed 's/^\(nics-per-node = \$nics\)  # .*/\1/' "$S" > "$TMPD/planted-tag.sh"
! cmp -s "$TMPD/planted-tag.sh" "$S"; ok $? "planted: nics-per-node's tag taken out of a copy"
NVIDIA_SMI="$TMPD/h200-smi" MEASURE_GPU_PROBE="$TMPD/probe" sh "$TMPD/planted-tag.sh" --out "$TMPD/planted.hw" --machine h200 > /dev/null 2>&1
check_hw_tags "$TMPD/planted.hw" h200 "jobs/measure_gpu_hw.sh --out $TMPD/planted.hw --machine h200" > "$TMPD/planted.out"
[ $? -ne 0 ] && grep -q "planted.hw:[0-9]*: no provenance tag: nics-per-node = 8$" "$TMPD/planted.out"
ok $? "planted: the check fails naming the line: $(cat "$TMPD/planted.out")"

# planted: without the number check, 'abc' reaches the measurement (here: the missing GPU)
sed 's/^  echo "\$2" | grep -Eq .*$/  :/' "$S" > "$TMPD/planted.sh"
! cmp -s "$TMPD/planted.sh" "$S"; ok $? "planted: the number check taken out of a copy"
S="$TMPD/planted.sh"
NVIDIA_SMI="$TMPD/none-smi" expect 2 "wants a positive number" --peak-tflops-16 abc > /dev/null
[ $? -ne 0 ]; ok $? "planted: the check above catches it ('abc' no longer refused)"
finish
