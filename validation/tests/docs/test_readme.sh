#!/bin/sh
# README stays true: its key table equals `ptdp-train --help`, and it names every executable.
. "$top_srcdir/validation/tests/common.sh"
sh "$top_srcdir/validation/gen_readme_keys.sh" "$top_builddir" "$top_srcdir/README" > "$TMPD/README.new"
cmp -s "$TMPD/README.new" "$top_srcdir/README"
st=$?
ok $st "README key table matches ptdp-train --help (regenerate: validation/gen_readme_keys.sh BUILD > README.new)"
[ $st -eq 0 ] || diff "$top_srcdir/README" "$TMPD/README.new" | head -n 20
for exe in ptdp-train ptdp-preprocess ptdp-generate; do
  grep -q "^$exe" "$top_srcdir/README"; ok $? "README documents $exe"
done
grep -q "validation/run_suite.sh" "$top_srcdir/.ci/run"; ok $? ".ci/run calls the README's test command"
finish
