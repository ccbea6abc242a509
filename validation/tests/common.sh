# Shared helpers for shell tests; source it: . "$top_srcdir/validation/tests/common.sh"
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
: "${MPIRUN:=mpirun --oversubscribe --bind-to none}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TRAIN="$top_builddir/ptdp-train"
ptdp_fail=0
ptdp_pass=0
# ok COND-EXIT-STATUS MESSAGE: count a check
ok() { if [ "$1" -eq 0 ]; then ptdp_pass=$((ptdp_pass+1)); echo "ok: $2"; else ptdp_fail=$((ptdp_fail+1)); echo "FAIL: $2"; fi; }
# finish: exit status of the whole test (automake: 0 pass, 1 fail)
finish() { echo "$ptdp_pass checks passed, $ptdp_fail failed"; [ "$ptdp_fail" -eq 0 ]; exit $?; }
# scratch directory, removed at exit
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/ptdp-test.XXXXXX"); trap 'rm -rf "$TMPD"' EXIT
# Open MPI keeps its session directory under TMPDIR; tests running at once (make -j) would race
# creating the same one, so each test gets its own.
TMPDIR=$TMPD; export TMPDIR
# runs write files into the working directory (the run file, ptdp-run.h5): each test works in its own
cd "$TMPD" || exit 99

# launch NP COMMAND ARGS...: COMMAND on NP ranks, stdin closed, killed after $LAUNCH_TIMEOUT s
# (default 120: a hang fails the test instead of stopping the suite); its exit status
launch() {
  launch_np=$1
  shift
  timeout "${LAUNCH_TIMEOUT:-120}" $MPIRUN -n "$launch_np" "$@" < /dev/null
}
# launch_apart TAG NP COMMAND ARGS...: launch in a session directory of its own, $TMPD/ompi-TAG: runs
# started at once would race creating Open MPI's one in the shared TMPDIR
launch_apart() {
  launch_dir="$TMPD/ompi-$1"
  shift
  mkdir -p "$launch_dir"
  (TMPDIR=$launch_dir; export TMPDIR; launch "$@")
}
# train_log NAME NP FLAGS...: ptdp-train $DECK FLAGS on NP ranks, the output in $TMPD/NAME.log;
# its exit status (the caller's variables, name and np included, are left alone)
train_log() {
  train_log_name=$1 train_log_np=$2
  shift 2
  launch "$train_log_np" "$TRAIN" "$DECK" "$@" > "$TMPD/$train_log_name.log" 2>&1
}
# deck_of FILE KEY=VALUE...: FILE becomes a deck of these keys, one "KEY = VALUE" line each (a key
# given again takes the later value, in its first place)
deck_of() {
  deck_file=$1
  shift
  printf '%s\n' "$@" |
    awk '{ k = $0; sub(/=.*/, "", k); if (!(k in val)) key[n++] = k; val[k] = substr($0, length(k) + 2) }
         END { for (i = 0; i < n; i++) print key[i] " = " val[key[i]] }' > "$deck_file"
}
# write_deck FILE KEY=VALUE...: FILE becomes a deck of the small model most tests train (2 layers,
# h 64, 4 heads, s 32, micro-batch 2, global batch 4, mock data, vocabulary 300: padded to 384,
# so the embedding has padding rows at every t), each KEY=VALUE replacing a default or added
write_deck() {
  deck_file=$1
  shift
  deck_of "$deck_file" num-layers=2 hidden-size=64 num-attention-heads=4 seq-length=32 micro-batch-size=2 \
    global-batch-size=4 vocab-size=300 mock-data=true "$@"
}
# corpus_or_skip: the prepared corpus (inputs/fetch-data.sh, in $PTDP_DATA_DIR, default data/) or
# SKIP (exit 77); sets CORPUS, the flags that train inputs/gpt-tiny.in on it with its GPT-2
# tokenizer and an index cache in $TMPD
corpus_or_skip() {
  data=${PTDP_DATA_DIR:-$top_srcdir/data}
  prefix="$data/sotu_shuffled_text_document"
  [ -f "$prefix.idx" ] && [ -f "$data/gpt2-vocab.json" ] || skip "no prepared data in $data (inputs/fetch-data.sh)"
  CORPUS="$top_srcdir/inputs/gpt-tiny.in --data-path $prefix --vocab-file $data/gpt2-vocab.json"
  CORPUS="$CORPUS --merge-file $data/gpt2-merges.txt --data-cache-path $TMPD/cache"
}
# skip WHY...: this test cannot run here; say why and exit 77 (automake's SKIP)
skip() { echo "SKIP: $*"; exit 77; }
# python_or_skip MODULE...: SKIP unless $PYTHON3 imports every MODULE
python_or_skip() {
  for module in "$@"; do
    $PYTHON3 -c "import $module" 2> /dev/null || skip "$PYTHON3 cannot import $module"
  done
}
