# Shared by the equivalence tests: source it after writing the deck to $DECK.
#   train NAME NP [FLAGS...]   train on NP ranks with --debug-dump $TMPD/NAME.h5
#   compare NAME REF GROUPS    compare_dumps.py of NAME against REF (losses and GROUPS)
# Tolerances: PTDP_EQUIV_LOSS_TOL (default 1e-5: losses and first-step gradients),
# PTDP_EQUIV_PARAM_TOL (default 1e-4: parameters after the last step).
# Why: losses (every iteration) and the first step's gradients: 1e-5 relative, as the
# issue asks (measured: losses 4e-8, gradients 7e-7: float32 sums in another order).  Parameters
# after 20 AdamW steps: 1e-4 of the tensor's largest entry.  AdamW divides each entry's step by
# sqrt(v), so an entry whose gradient is near the rounding level of its tensor moves by up to lr
# per step in a direction the rounding decides; the 1e-7-level gradient differences of another
# summation order become 1e-5-level parameter differences for such entries.  Measured worst over
# all layouts: 5.4e-5 (pipeline, t2 p2); d=2, whose only change is the order in which two
# micro-batches' gradients are added, already differs by 8e-6.  (The thread count changes no
# bits: the tests check that a 2-thread run equals the 1-thread run exactly.)
LOSS_TOL=${PTDP_EQUIV_LOSS_TOL:-1e-5}
PARAM_TOL=${PTDP_EQUIV_PARAM_TOL:-1e-4}
CMP="$PYTHON3 $top_srcdir/validation/tests/compare_dumps.py --loss-rtol $LOSS_TOL --grad-tol $LOSS_TOL --param-tol $PARAM_TOL"

train() {
  name=$1 np=$2
  shift 2
  start=$(date +%s)
  timeout 120 $MPIRUN -n "$np" "$TRAIN" "$DECK" --debug-dump "$TMPD/$name.h5" "$@" < /dev/null > "$TMPD/$name.log" 2>&1
  rc=$?
  ok $rc "train $name ($np ranks: $*) in $(($(date +%s) - start)) s"
  [ $rc -eq 0 ] || tail -20 "$TMPD/$name.log"
  return $rc
}

: > "$TMPD/worst"
compare() {
  $CMP --groups "$3" "$TMPD/$1.h5" "$TMPD/$2.h5" > "$TMPD/$1-vs-$2.cmp" 2>&1
  rc=$?
  sed 's/^/  /' "$TMPD/$1-vs-$2.cmp"
  ok $rc "$1 equals $2 (losses, $3)"
  printf '%-12s vs %-8s %s\n' "$1" "$2" "$(grep '^WORST' "$TMPD/$1-vs-$2.cmp" | sed 's/^WORST[A-Z_]* //' | tr '\n' ' ')" >> "$TMPD/worst"
}
