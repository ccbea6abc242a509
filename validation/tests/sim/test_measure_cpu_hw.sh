#!/bin/sh
# jobs/measure_cpu_hw.sh run with its smallest settings (one thread, a model of b 1, s 16, h 32,
# a 2, V 64: about 15 s, most of it the fixed-size triad, optimizer and MPI measurements) writes a
# hardware file whose every value carries its provenance tag (ptdp-hardware(5), PROVENANCE):
# MEASURED ones name this machine (the default word: host, CPU, cores), the UTC time and the
# command with its defaults filled in; the keys and their tags' kinds are those of the
# hand-tagged inputs/hw/cpu-local.hw, its ASSUMED sources word for word; ptdp-sim --explain reads
# it with no UNTAGGED warning and prints every tag.  Its argument errors exit 2 before measuring.
# Planted: the written file with one tag dropped, and with another machine in one MEASURED tag,
# must fail the tag check, naming the line.
. "$top_srcdir/validation/tests/common.sh"
. "$top_srcdir/validation/tests/sim/hw_tags.sh"
S="$top_srcdir/jobs/measure_cpu_hw.sh"
command -v mpicc > /dev/null && command -v mpirun > /dev/null && command -v cc > /dev/null ||
  skip "the script needs cc, mpicc and mpirun"

sh "$S" --help > "$TMPD/out" 2>&1
[ $? -eq 0 ] && grep -q "^usage: jobs/measure_cpu_hw.sh \[--machine WORD\]" "$TMPD/out"
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
expect 2 "unknown option '--bogus'" --bogus; ok $? "an unknown option: exit 2, named"
expect 2 "THREADS wants a positive integer, got 'x'" "$TMPD/x.hw" x; ok $? "THREADS not a number: exit 2"
expect 2 "five positive integers b s h a V, got '1 16 32'" "$TMPD/x.hw" 1 1 16 32; ok $? "a model of three numbers: exit 2"
expect 2 "--machine wants one word" --machine "two words" "$TMPD/x.hw"; ok $? "a machine of two words: exit 2"
expect 2 "not a date" --machine 2026-11-29 "$TMPD/x.hw"; ok $? "a machine that reads as a date: exit 2"
expect 2 "no quotes in" "$TMPD/a\"b.hw"; ok $? "an output path with a quote (it would close the tag's): exit 2"
[ ! -e "$TMPD/x.hw" ]; ok $? "argument errors: nothing written"

# the measurement, the machine word by default
host=$(hostname | sed 's/[.].*//' | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9]\{1,\}/-/g')
out="$TMPD/cpu.hw"
sh "$S" --build "$top_builddir" "$out" 1 1 16 32 2 64 > "$TMPD/run" 2>&1
st=$?
[ $st -eq 0 ] && [ -s "$out" ]; ok $? "measure_cpu_hw.sh --build BUILD OUT 1 1 16 32 2 64: exit 0, a file written"
[ $st -eq 0 ] || { cat "$TMPD/run"; finish; }
machine=$(sed -n 's/.*  # MEASURED \([^ ]*\) .*/\1/p' "$out" | head -n 1)
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
echo "$machine" | grep -Eq "^$host-[a-z0-9.-]+-${cores}core$" && grep -q "^cores-per-node = $cores  # MEASURED " "$out"
ok $? "the default machine word is host-cpu-Ncore: '$machine' ($host, $cores cores, whatever OMP_NUM_THREADS says)"
cmd="jobs/measure_cpu_hw.sh --build $top_builddir $out 1 1 16 32 2 64"
case $top_builddir$out in *[!A-Za-z0-9._/:=+,@-]*) cmd="jobs/measure_cpu_hw.sh --build '$top_builddir' '$out' 1 1 16 32 2 64" ;; esac
check_hw_tags "$out" "$machine" "$cmd"
ok $? "every value tagged; each MEASURED tag: $machine, a UTC time, \"$cmd\", a figure"
[ "$(grep -c '  # MEASURED ' "$out")" -ge 20 ]; ok $? "the measured values are MEASURED (20 and more)"

hw_kinds "$top_srcdir/inputs/hw/cpu-local.hw" > "$TMPD/kinds.repo"
hw_kinds "$out" > "$TMPD/kinds.new"
diff "$TMPD/kinds.repo" "$TMPD/kinds.new"
ok $? "the keys, in order, and their tags' kinds are inputs/hw/cpu-local.hw's"
hw_assumed "$top_srcdir/inputs/hw/cpu-local.hw" > "$TMPD/assumed.repo"
hw_assumed "$out" > "$TMPD/assumed.new"
diff "$TMPD/assumed.repo" "$TMPD/assumed.new"
ok $? "the ASSUMED sources are inputs/hw/cpu-local.hw's, word for word"
grep -q '^inter-node-latency-us = [^ ]*  # DERIVED "intra-node-latency-us of this file (MEASURED, [0-9.]* us)" ' "$out"
ok $? "the inter-node values DERIVED from the intra-node ones"

check_explain "$out" "$machine"
ok $? "ptdp-sim --hardware OUT --explain: no UNTAGGED warning, every value printed with its tag"

# planted: one tag dropped, one MEASURED tag of another machine: the check names the line
sed 's/^\(memory-gb = [^ ]*\)  # .*/\1/' "$out" > "$TMPD/planted.hw"
! cmp -s "$out" "$TMPD/planted.hw"; ok $? "planted: memory-gb's tag dropped from a copy"
check_hw_tags "$TMPD/planted.hw" "$machine" "$cmd" > "$TMPD/planted.out"
[ $? -ne 0 ] && grep -q "planted.hw:[0-9]*: no provenance tag: memory-gb = " "$TMPD/planted.out"
ok $? "planted: the check fails naming the line: $(cat "$TMPD/planted.out")"
sed "s/^\(cores-per-node = [^ ]*  # MEASURED \)$machine /\1elsewhere /" "$out" > "$TMPD/planted.hw"
check_hw_tags "$TMPD/planted.hw" "$machine" "$cmd" > "$TMPD/planted.out"
[ $? -ne 0 ] && grep -q "planted.hw:[0-9]*: its MEASURED tag names no machine $machine: cores-per-node" "$TMPD/planted.out"
ok $? "planted: another machine in a MEASURED tag fails the check too"
finish
