#!/bin/sh
# ptdp-sweep on Narayanan et al.'s 18.4B model (Table 1: 40 layers, h 6144, a 48) on 256 GPUs of
# the DGX A100 file, global batch 1024: it runs, every layout it keeps fits the usable memory,
# the HDF5 file holds as many predictions as it says fit, the best layout keeps tensor
# parallelism within a node, and each row of the job-array table, given to ptdp-sim, predicts
# the time the table says (the sweep predicts with ptdp-sim's code, nothing else).
# Last, the command line both share with every program (ptdp_cmdline): each names itself in its
# messages and --version, --help prints every table, a deck holds ptdp-sim's keys too (a fusion
# given there counts as given), and keys without effect are reported by ptdp-sim.
. "$top_srcdir/validation/tests/common.sh"
SWEEP="$top_builddir/ptdp-sweep"
SIM="$top_builddir/ptdp-sim"
HW="$top_srcdir/inputs/hw/dgx-a100-80gb.hw"
DECK="$TMPD/m18.in"
deck_of "$DECK" num-layers=40 hidden-size=6144 num-attention-heads=48 seq-length=2048 max-position-embeddings=2048 \
  vocab-size=51200 micro-batch-size=1 global-batch-size=1024 fp16=true hidden-dropout=0.1 attention-dropout=0.1
"$SWEEP" "$DECK" --hardware "$HW" --world-size 256 --top 4 --out "$TMPD/s.h5" --emit-tsv "$TMPD/s.tsv" > "$TMPD/out" 2>&1
ok $? "ptdp-sweep 18.4B on 256 GPUs"
cat "$TMPD/out"
fit=$(sed -n 's/.*; \([0-9]*\) fit with the recomputation.*/\1/p' "$TMPD/out")
best_t=$(sed -n 's/^best: t\([0-9]*\) .*/\1/p' "$TMPD/out")
[ -n "$best_t" ] && [ "$best_t" -le 8 ]
ok $? "the best layout's t ($best_t) is within a node (8 GPUs)"
grep -q "^training time for 3e+11 tokens (days): [0-9.]* (Narayanan et al. eq. 4 at the simulated rate: [0-9.]*)" "$TMPD/out"
ok $? "training time beside eq. 4"
$PYTHON3 - "$TMPD/s.h5" "$fit" <<'PY'
import sys, h5py, numpy as np
g = h5py.File(sys.argv[1], "r")["sweep"]
n = len(g["iteration_seconds"])
assert n == int(sys.argv[2]) and n > 0, "%d rows, the output says %s" % (n, sys.argv[2])
assert np.all(g["memory_bytes"][...] <= 0.95 * 80e9 * (1 + 1e-12)), "a layout over the usable memory"
t, p, d = g["tensor_model_parallel_size"][...], g["pipeline_model_parallel_size"][...], g["data_parallel_size"][...]
assert np.all(t * p * d == 256), "t p d != 256"
assert np.all(np.diff(g["iteration_seconds"][...]) >= 0), "not fastest first"
print("%d predictions, all fit, t p d = 256, fastest first" % n)
PY
ok $? "the HDF5 file: every kept layout fits, t p d = n, sorted"
[ "$(wc -l < "$TMPD/s.tsv")" -eq 5 ]
ok $? "the TSV: a header and 4 rows"
i=0
tail -n +2 "$TMPD/s.tsv" | while IFS="$(printf '\t')" read -r task pred tp pp mb gbs vl sp dopt rg rm rn; do
  got=$("$SIM" "$DECK" --hardware "$HW" --world-size 256 --tensor-model-parallel-size "$tp" --pipeline-model-parallel-size "$pp" \
    --micro-batch-size "$mb" --global-batch-size "$gbs" --num-layers-per-virtual-pipeline-stage "$vl" --sequence-parallel "$sp" \
    --use-distributed-optimizer "$dopt" --recompute-granularity "$rg" --recompute-method "$rm" --recompute-num-layers "$rn" 2>&1 |
    sed -n 's/^iteration time (s): //p')
  $PYTHON3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]) / 1e3; sys.exit(abs(a - b) > 1e-4 * b)" "$got" "$pred"
  ok $? "row $task: ptdp-sim predicts $got s, the table $pred ms"
  [ $ptdp_fail -eq 0 ] || exit 1
done
ok $? "every row of the table reproduced by ptdp-sim"
"$SWEEP" "$DECK" --hardware "$HW" --world-size 3 > "$TMPD/bad" 2>&1
[ $? -ne 0 ] && grep -q "no layout" "$TMPD/bad"
ok $? "no layout fits on 3 GPUs: one message, exit 1 ($(head -c 120 "$TMPD/bad"))"

# ---- the command line (ptdp_cmdline) ----
CPU_HW="$top_srcdir/inputs/hw/cpu-local.hw"
MOCK="$top_srcdir/inputs/gpt-mock.in"
[ "$("$SIM" --version)" = "$("$TRAIN" --version | sed 's/^ptdp-train/ptdp-sim/')" ] &&
  [ "$("$SWEEP" --version | cut -d' ' -f1)" = ptdp-sweep ]
ok $? "--version names the program: $("$SIM" --version), $("$SWEEP" --version)"
"$SWEEP" --help > "$TMPD/help"
grep -q "^ptdp-sweep's keys:" "$TMPD/help" && grep -q "^ptdp-sim's keys" "$TMPD/help" &&
  grep -q "^ptdp-train's keys" "$TMPD/help" && grep -q "^emit-tsv " "$TMPD/help" && grep -q "^fusion " "$TMPD/help" &&
  grep -q "^num-layers " "$TMPD/help"
ok $? "ptdp-sweep --help prints its, ptdp-sim's and ptdp-train's tables"
"$SIM" "$MOCK" --hardware "$CPU_HW" --fusio megatron > "$TMPD/e1" 2>&1
[ $? -ne 0 ] && grep -qxF "ptdp: error: unknown key 'fusio' (command line); did you mean 'fusion'? (ptdp-sim --help lists every key)" "$TMPD/e1"
ok $? "ptdp-sim: an unknown key names ptdp-sim: $(head -1 "$TMPD/e1")"
"$SWEEP" "$DECK" --hardware "$HW" --world-size 8 --topp 3 > "$TMPD/e2" 2>&1
[ $? -ne 0 ] && grep -qxF "ptdp: error: unknown key 'topp' (command line); did you mean 'top'? (ptdp-sweep --help lists every key)" "$TMPD/e2"
ok $? "ptdp-sweep: an unknown key names ptdp-sweep: $(head -1 "$TMPD/e2")"
"$SIM" "$MOCK" --hardware "$CPU_HW" --world-size 1e1 > "$TMPD/e3" 2>&1
[ $? -ne 0 ] && grep -qF "invalid value '1e1' for world-size (command line): expected an integer in [0, 1000000000] (an integer key takes digits, not an exponent or a fraction: write 10)" "$TMPD/e3"
ok $? "ptdp-sim: an integer key with an exponent is refused: $(head -1 "$TMPD/e3")"
# a CPU node's file makes fusion cpu the default unless fusion is given, in the deck as well
t_default=$("$SIM" "$MOCK" --hardware "$CPU_HW" 2>&1 | sed -n 's/^iteration time (s): //p')
t_flag=$("$SIM" "$MOCK" --hardware "$CPU_HW" --fusion megatron 2>&1 | sed -n 's/^iteration time (s): //p')
{ cat "$MOCK"; echo "fusion = megatron"; echo "hardware = $CPU_HW"; } > "$TMPD/simkeys.in"
t_deck=$("$SIM" "$TMPD/simkeys.in" 2>&1 | sed -n 's/^iteration time (s): //p')
[ -n "$t_default" ] && [ -n "$t_flag" ] && [ "$t_flag" = "$t_deck" ] && [ "$t_flag" != "$t_default" ]
ok $? "fusion and hardware in the deck act as on the command line: $t_deck s = $t_flag s (default on a CPU file: $t_default s)"
"$SIM" "$MOCK" --hardware "$CPU_HW" --sequence-parallel > "$TMPD/w" 2>&1
[ $? -eq 0 ] && [ "$(grep -cxF "ptdp: warning: sequence-parallel is given but has no effect: tensor-model-parallel-size is 1" "$TMPD/w")" -eq 1 ]
ok $? "ptdp-sim reports a ptdp-train key without effect, as ptdp-train does"
"$SWEEP" "$DECK" --hardware "$HW" --world-size 8 --top 1 --tensor-model-parallel-size 2 --sequence-parallel \
  --global-batch-size 16 > "$TMPD/w" 2>&1
[ $? -eq 0 ] && [ "$(grep -c "^ptdp: warning" "$TMPD/w")" -eq 3 ] &&
  grep -qxF "ptdp: warning: micro-batch-size is given but has no effect: ptdp-sweep varies it" "$TMPD/w" &&
  grep -qxF "ptdp: warning: tensor-model-parallel-size is given but has no effect: ptdp-sweep varies it" "$TMPD/w" &&
  grep -qxF "ptdp: warning: sequence-parallel is given but has no effect: ptdp-sweep varies it" "$TMPD/w"
ok $? "ptdp-sweep reports the layout keys it varies as without effect (the deck's micro-batch-size too), and only those"
finish
