#!/bin/sh
# ptdp-tests(7) lists every test make check runs, and only those: the tests registered in TESTS
# by Makefile.am and every local.mk fragment it includes (conditional ones too: the CUDA, emulation
# and fuzzing tests), against the tags of the .TP entries of the page's THE TESTS section (one
# entry per test, its path as TESTS spells it).  Each test missing from the page and each entry
# naming no registered test is reported.  Also every test_* name the page mentions elsewhere
# is a test, a check program or a file of validation/.  Planted: a copy of the page with one entry
# removed, and one with an entry for a test that does not exist, must both fail, naming the test.
. "$top_srcdir/validation/tests/common.sh"
page="$top_srcdir/src/man/ptdp-tests.7"

# mk_lines FILE: FILE (relative to the source tree) with its continuation lines joined and each
# included fragment's lines in its place
mk_lines() {
  sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$top_srcdir/$1" | while IFS= read -r line; do
    case $line in
      include\ *) mk_lines "${line#include }" ;;
      *) printf '%s\n' "$line" ;;
    esac
  done
}
# mk_var NAME: the words of the variable NAME over every assignment (= and +=, in either branch of
# a conditional), with $(VAR) references expanded, one a line
mk_var() {
  mk_lines Makefile.am | awk -v want="$1" '
    { sub(/#.*/, "") }
    /^[A-Za-z0-9_]+[ \t]*\+?=/ {
      name = $0; sub(/[ \t]*\+?=.*/, "", name); val = $0; sub(/^[^=]*=/, "", val)
      if ($0 ~ /^[A-Za-z0-9_]+[ \t]*\+=/) v[name] = v[name] " " val; else v[name] = val
    }
    function expand(name, depth,   n, w, i, out, m) {
      if (depth > 10) return ""
      n = split(v[name], w, " "); out = ""
      for (i = 1; i <= n; i++)
        if (w[i] ~ /^\$\([A-Za-z0-9_]+\)$/) { m = substr(w[i], 3, length(w[i]) - 3); out = out " " expand(m, depth + 1) }
        else out = out " " w[i]
      return out
    }
    END { n = split(expand(want, 0), w, " "); for (i = 1; i <= n; i++) print w[i] }'
}
# entries PAGE: the tags of the .TP entries of PAGE's THE TESTS section, one a line
entries() {
  awk '/^\.SH / { inside = ($0 ~ /^\.SH "?THE TESTS"?$/) } inside && tp { print; tp = 0; next } inside && /^\.TP/ { tp = 1 }' "$1" |
    sed 's/\\-/-/g; s/\\f[BIRP]//g'
}
# compare PAGE: one line per difference between TESTS and PAGE's entries; nothing when they agree
compare() {
  entries "$1" | sort > "$TMPD/entries"
  sort -u "$TMPD/tests" | comm -23 - "$TMPD/entries" | sed 's/^/missing from the page: /'
  sort -u "$TMPD/tests" | comm -13 - "$TMPD/entries" | sed 's/^/not a test of TESTS: /'
  sort "$TMPD/entries" | uniq -d | sed 's/^/listed twice: /'
}

mk_var TESTS > "$TMPD/tests"
[ "$(sort -u "$TMPD/tests" | wc -l)" -ge 100 ]; ok $? "found the tests registered in TESTS: $(sort -u "$TMPD/tests" | wc -l)"
sort "$TMPD/tests" | uniq -d > "$TMPD/twice"
[ ! -s "$TMPD/twice" ]; ok $? "no test is registered twice $(cat "$TMPD/twice" | tr '\n' ' ')"
compare "$page" > "$TMPD/diff"
[ ! -s "$TMPD/diff" ]; ok $? "ptdp-tests.7 has one entry for each of the $(sort -u "$TMPD/tests" | wc -l) tests and no other"
sed 's/^/    /' "$TMPD/diff"

# every test_* name in the page is a test, a check program or a file of validation/
{ sed 's|.*/||' "$TMPD/tests"; mk_var check_PROGRAMS | sed 's|.*/||'
  find "$top_srcdir/validation" -name 'test_*' | sed 's|.*/||; p; s/\.[a-z]*$//'; } | sort -u > "$TMPD/known"
sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page" | grep -oE '\btest_[A-Za-z0-9_]+(\.(sh|py|c))?' | sort -u |
  comm -23 - "$TMPD/known" > "$TMPD/unknown"
[ ! -s "$TMPD/unknown" ]; ok $? "every test_* name in ptdp-tests.7 exists $(cat "$TMPD/unknown" | tr '\n' ' ')"

# planted: test_events.sh's entry removed; an entry for a test that was never registered
awk '/^\.TP$/ { skip = 0; held = $0; next }
     held != "" { h = held; held = ""; if ($0 == "validation/tests/parallel/test_events.sh") { skip = 1; next }; print h }
     skip && /^\./ { skip = 0 }
     !skip' "$page" > "$TMPD/planted-missing.7"
compare "$TMPD/planted-missing.7" > "$TMPD/diff"
[ "$(cat "$TMPD/diff")" = "missing from the page: validation/tests/parallel/test_events.sh" ]
ok $? "planted: the entry of test_events.sh removed is caught ($(cat "$TMPD/diff"))"
sed 's|^validation/tests/parallel/test_events.sh$|&\
named here only\
.TP\
validation/tests/parallel/test_events_gone.sh|' "$page" > "$TMPD/planted-extra.7"
compare "$TMPD/planted-extra.7" > "$TMPD/diff"
[ "$(cat "$TMPD/diff")" = "not a test of TESTS: validation/tests/parallel/test_events_gone.sh" ]
ok $? "planted: an entry for a test that does not exist is caught ($(cat "$TMPD/diff"))"
finish
