#!/bin/sh
# The README stays a true guide to the rest: its table names every installed executable with its
# manual page (the pages themselves: test_man.sh), it says how to read the pages from the tree
# and after make install, and .ci/run calls the test command it gives.
. "$top_srcdir/validation/tests/common.sh"
readme="$top_srcdir/README"
# every installed program and script, as the local.mk fragments declare them
exes=$(cat "$top_srcdir"/src/*/local.mk | sed -n 's/^\(dist_\)\{0,1\}bin_\(PROGRAMS\|SCRIPTS\) *+= *//p' | tr ' ' '\n' | grep . | sort -u)
[ "$(echo "$exes" | wc -l)" -ge 7 ]; ok $? "found the executables: $(echo $exes)"
for exe in $exes; do
  grep -qE "^    $exe +$exe\(1\) +[a-z]" "$readme"; ok $? "README's table names $exe with its page $exe(1)"
done
# every page the README names exists in src/man
for ref in $(grep -oE 'ptdp(-[a-z]+)?\([157]\)' "$readme" | sort -u); do
  page=$(echo "$ref" | sed 's/(\([157]\))$/.\1/')
  [ -f "$top_srcdir/src/man/$page" ]; ok $? "README's $ref is src/man/$page"
done
grep -q 'man -l src/man/' "$readme"; ok $? "README says how to read a page from the tree (man -l src/man/...)"
grep -q 'man ptdp-train' "$readme"; ok $? "README says how to read a page after make install (man ptdp-train)"
grep -q '^Layering$' "$readme"; ok $? "README has the Layering subsection"
lines=$(wc -l < "$readme")
[ "$lines" -le 450 ]; ok $? "README is short: $lines lines (at most 450; the reference is in the pages)"
grep -q "validation/run_suite.sh" "$top_srcdir/.ci/run"; ok $? ".ci/run calls the README's test command"
grep -q "^    validation/run_suite.sh " "$readme"; ok $? "README gives that command in its quick start"
finish
