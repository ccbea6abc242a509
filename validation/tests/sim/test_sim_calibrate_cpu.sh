#!/bin/sh
# ptdp-sim --calibrate on this machine's CPU: jobs/calibrate.sh runs its four short calibration
# runs (t1, t1 with full recomputation, t2, d2) of a tiny model and fits a BASE file to them;
# then five layouts the fit never saw (p2, p2 v2, t2 with sequence parallelism, t2 with selective
# recomputation, t2 p2 on 4 ranks) are measured here and predicted with the fitted file.
#
# BASE is inputs/hw/cpu-local.hw with every value the fit scales made 10x too fast (GEMM rate and
# bandwidths x 10, times per element / 10): a fit that ignores the runs, or moves the wrong way,
# predicts at least 10x too fast whatever the load (a busy machine only makes runs slower).
# The bound: the median over the five held-out layouts of |ln(predicted / measured)| under ln 3
# (within a factor 3), and below BASE's.  Why so loose: this 2-core machine is shared by several
# developers; at a load average of 20 we measured single held-out layouts off by up to 7x (a
# 4-rank run timed faster than its 2-rank part) while the median stayed within 1.4x to 1.9x (at a load average of 11 to 20).  A quiet
# machine does far better (validation/bench/README.md, calibration); the median tolerates two
# disturbed layouts out of five.  Planting a fit that returns BASE's values unchanged fails the
# median check (BASE is 10x off), as validation/bench/README.md records.
. "$top_srcdir/validation/tests/common.sh"
SIM="$top_builddir/ptdp-sim"
DECK="$top_srcdir/inputs/gpt-mock.in"
MODEL="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
       --micro-batch-size 2 --global-batch-size 8 --vocab-size 512 --lr-warmup-iters 1"
# BASE: the fitted keys 10x too fast, every tag kept
awk '/^(cpu-[a-z-]*-ns|gemm-efficiency|intra-node-[a-z-]*bandwidth-gbs) = / {
       k = $1; v = $3; sub(/^[^=]*= *[^ ]* */, ""); f = (k ~ /-ns$/) ? v / 10 : v * 10
       if (k == "gemm-efficiency") { f = v; }   # at most 1: the peak takes the factor below
       printf "%s = %.6g  %s\n", k, f, $0; next }
     /^peak-tflops-32 = / { k = $1; v = $3; sub(/^[^=]*= *[^ ]* */, ""); printf "%s = %.6g  %s\n", k, v * 10, $0; next }
     { print }' "$top_srcdir/inputs/hw/cpu-local.hw" > "$TMPD/base.hw"
"$SIM" "$DECK" $MODEL --hardware "$TMPD/base.hw" > /dev/null
ok $? "BASE (cpu-local.hw 10x too fast) reads"
# shellcheck disable=SC2086
ITERS=5 BUILD_DIR=$top_builddir OUT_DIR=$TMPD/cal LAUNCH=mpirun "$top_srcdir/jobs/calibrate.sh" \
  "$TMPD/base.hw" "$TMPD/mine.hw" "$DECK" $MODEL > "$TMPD/cal.log" 2>&1
rc=$?
cat "$TMPD/cal.log"
ok $rc "jobs/calibrate.sh: four runs and the fit"
[ $rc -eq 0 ] || finish
host=$(hostname)
grep -q "^cpu-dropout-ns = .*# MEASURED $host" "$TMPD/mine.hw"
ok $? "MINE: a fitted value tagged MEASURED on $host"
grep -q "^memory-gb = 25.3  # MEASURED vm-epyc-2core" "$TMPD/mine.hw"
ok $? "MINE: a value not fitted keeps BASE's line"
# held-out layouts: measured here (the median interval after the first), predicted with MINE and BASE
echo "| held-out layout | ranks | measured (ms) | MINE (ms) | error | BASE (ms) |"
: > "$TMPD/err"
while IFS='|' read -r name np keys; do
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 launch "$np" "$TRAIN" "$DECK" $MODEL $keys --train-iters 5 --log-interval 1 --run-file none \
    > "$TMPD/$name.log" 2>&1 || { cat "$TMPD/$name.log"; ok 1 "$name ran"; continue; }
  meas=$(sed -n 's/.*elapsed time per iteration (ms): *\([0-9.]*\).*/\1/p' "$TMPD/$name.log" | tail -n +2 | sort -n |
         awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : 0}')
  # shellcheck disable=SC2086
  mine=$("$SIM" "$DECK" $MODEL $keys --world-size "$np" --hardware "$TMPD/mine.hw" | sed -n 's/^iteration time (s): //p')
  # shellcheck disable=SC2086
  base=$("$SIM" "$DECK" $MODEL $keys --world-size "$np" --hardware "$TMPD/base.hw" | sed -n 's/^iteration time (s): //p')
  awk -v n="$name" -v np="$np" -v m="$meas" -v p="$mine" -v b="$base" 'BEGIN {
    printf "| %s | %s | %.1f | %.1f | %+.0f%% | %.1f |\n", n, np, m, 1e3 * p, 100 * (1e3 * p - m) / m, 1e3 * b }'
  awk -v m="$meas" -v p="$mine" -v b="$base" 'BEGIN { x = log(1e3 * p / m); y = log(1e3 * b / m)
    printf "%.6f %.6f\n", x < 0 ? -x : x, y < 0 ? -y : y }' >> "$TMPD/err"
done <<EOF
p2|2|--pipeline-model-parallel-size 2
p2 v2|2|--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1
t2 sp|2|--tensor-model-parallel-size 2 --sequence-parallel
t2 selective|2|--tensor-model-parallel-size 2 --recompute-granularity selective
t2 p2|4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2
EOF
med() { sort -n | awk '{v[NR] = $1} END {print NR ? v[int((NR + 1) / 2)] : 99}'; }
mm=$(cut -d' ' -f1 "$TMPD/err" | med); mb=$(cut -d' ' -f2 "$TMPD/err" | med)
echo "median |ln(predicted / measured)| over the held-out layouts: MINE $mm (x$(awk "BEGIN {printf \"%.2f\", exp($mm)}")), BASE $mb (x$(awk "BEGIN {printf \"%.2f\", exp($mb)}")); load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$(awk "BEGIN {print ($mm < log(3))}")" = 1 ]
ok $? "held-out layouts: the median within a factor 3 of measured"
[ "$(awk "BEGIN {print ($mm < $mb)}")" = 1 ]
ok $? "held-out layouts: the calibrated file better than BASE"
finish
