#!/bin/sh
# The manual pages stay true and readable:
#  - every page renders without a single warning (groff -man -ww, or man --warnings);
#  - every installed executable has a section-1 page, and every page is installed;
#  - each generated key table equals what its program's --help prints (validation/gen_man_keys.sh);
#  - the counts the pages state match the code (the trainer's timers, test_bad_input.sh's cases);
#  - each check catches a planted mistake: a key table off by one default, a bad macro.
. "$top_srcdir/validation/tests/common.sh"
man_dir="$top_srcdir/src/man"
pages=$(ls "$man_dir"/*.[157] 2> /dev/null)
[ -n "$pages" ]; ok $? "found the pages in src/man: $(for p in $pages; do basename "$p"; done | tr '\n' ' ')"

# render PAGE: the warnings formatting PAGE prints (nothing when it is clean)
if command -v groff > /dev/null 2>&1; then
  render() { groff -man -t -ww -z -Tutf8 "$1" 2>&1; }
elif command -v man > /dev/null 2>&1; then
  render() { MANWIDTH=80 man --warnings -E UTF-8 -l "$1" 2>&1 > /dev/null; }
else
  echo "neither groff nor man is installed (Debian: apt-get install groff-base man-db): SKIP"
  exit 77
fi
for p in $pages; do
  render "$p" > "$TMPD/warn"
  [ ! -s "$TMPD/warn" ]; ok $? "$(basename "$p") renders without warnings"
  [ -s "$TMPD/warn" ] && head -n 5 "$TMPD/warn"
done
# the checker sees a planted mistake: an undefined macro and a stray escape
{ cat "$man_dir/ptdp-train.1"; printf '.BOGUS\nfoo\\q\n'; } > "$TMPD/planted.1"
render "$TMPD/planted.1" > "$TMPD/warn"
[ -s "$TMPD/warn" ]; ok $? "planted: a page with an undefined macro is caught ($(head -n 1 "$TMPD/warn"))"

# every executable make install puts in bin has a page, and every page is installed and carried by make dist
exes=$(cat "$top_srcdir"/src/*/local.mk | sed -n 's/^\(dist_\)\{0,1\}bin_\(PROGRAMS\|SCRIPTS\) *+= *//p' | tr ' ' '\n' | grep . | sort -u)
[ "$(echo "$exes" | wc -l)" -ge 7 ]; ok $? "found the executables: $(echo $exes)"
for exe in $exes; do
  [ -f "$man_dir/$exe.1" ]; ok $? "$exe has a manual page (src/man/$exe.1)"
done
for p in $pages; do
  grep -q "src/man/$(basename "$p")" "$man_dir/local.mk"; ok $? "$(basename "$p") is in dist_man_MANS (src/man/local.mk)"
done

# every cross-reference NAME(S) in the pages names a page of src/man
refs=$(cat $pages | sed 's/\\-/-/g; s/\\f[BIRP]//g' | grep -oE 'ptdp(-[a-z]+)? ?\([157]\)' | tr -d ' ' | sort -u)
[ -n "$refs" ]; ok $? "found the pages' cross-references"
for ref in $refs; do
  [ -f "$man_dir/$(echo "$ref" | sed 's/(\([157]\))$/.\1/')" ]; ok $? "the pages' reference $ref is a page of src/man"
done

# the generated key tables
for p in $(grep -l '^\.\\" keys:begin' $pages); do
  sh "$top_srcdir/validation/gen_man_keys.sh" "$top_builddir" "$p" > "$TMPD/new" 2> "$TMPD/gen.err"
  cmp -s "$TMPD/new" "$p"
  st=$?
  ok $st "$(basename "$p"): key tables equal the programs' --help (regenerate: validation/gen_man_keys.sh BUILD $p)"
  [ $st -eq 0 ] || { cat "$TMPD/gen.err"; diff "$p" "$TMPD/new" | head -n 20; }
done
# planted: one default changed in the page's table must make the comparison fail
sed '/^\.\\" keys:begin/,/^\.\\" keys:end/ s/^\(\\fBnum\\-layers\\fR .*default \\%\)2,/\13,/' \
  "$man_dir/ptdp-train.1" > "$TMPD/planted-keys.1"
! cmp -s "$TMPD/planted-keys.1" "$man_dir/ptdp-train.1"; ok $? "planted: num-layers' default changed from 2 to 3 in a copy"
sh "$top_srcdir/validation/gen_man_keys.sh" "$top_builddir" "$TMPD/planted-keys.1" > "$TMPD/new" &&
  ! cmp -s "$TMPD/new" "$TMPD/planted-keys.1" && cmp -s "$TMPD/new" "$man_dir/ptdp-train.1"
ok $? "planted: the changed default is caught, and regenerating restores the page"

# the other programs' pages describe their own keys by hand: each key of the program's own table
# (the first that --help prints) must appear in its page as --KEY
for prog in ptdp-generate ptdp-preprocess ptdp-sim ptdp-sweep ptdp-convert; do
  keys=$("$top_builddir/$prog" --help < /dev/null 2> /dev/null | awk '/^key +type +default/ { n++; next } n == 1 && NF == 0 { exit } n == 1 { print $1 }')
  [ -n "$keys" ]; ok $? "$prog --help lists its keys: $(echo $keys)"
  text=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$man_dir/$prog.1")
  for k in $keys; do
    echo "$text" | grep -q -- "--$k\b"; ok $? "$prog.1 describes --$k"
  done
done

# counts stated in the pages
timers=$(sed -n 's/.*ptdp_events_register([^"]*"\([a-z-]*\)".*/\1/p' "$top_srcdir"/src/train/*.c)
[ "$(echo "$timers" | wc -w)" -ge 6 ]; ok $? "found the trainer's timers: $(echo $timers)"
block=$(sed -n '/^\[timers\]/,/^\[comm\]/p' "$man_dir/ptdp-train.1" | tr '\n' ' ' | sed 's/\\-/-/g')
for t in $timers; do
  echo "$block" | grep -q -- " $t[ ,(]"; ok $? "ptdp-train.1's [timers] line names the timer $t"
done
nt=$(echo "$timers" | wc -w)
words="zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
word=$(echo "$words" | cut -d' ' -f$((nt + 1)))
echo "$block" | grep -q "of the $word timers"; ok $? "ptdp-train.1 says 'the $word timers' ($nt registered)"
nbad=$(grep -c '^bad ' "$top_srcdir/validation/tests/test_bad_input.sh")
nwarn=$(grep -c '^warns ' "$top_srcdir/validation/tests/test_bad_input.sh")
sed -n '/^validation\/tests\/test_bad_input.sh$/{n;p;}' "$man_dir/ptdp-tests.7" |
  grep -q "^$nbad malformed .*(and $nwarn keys given without effect)"
ok $? "ptdp-tests.7 counts test_bad_input.sh's $nbad malformed inputs and $nwarn warnings"
finish
