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
