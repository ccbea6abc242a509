#!/bin/sh
# Regenerate the key tables of a manual page from the programs' own option tables (--help).
#   validation/gen_man_keys.sh BUILD_DIR PAGE      (prints the new page to stdout)
#   e.g. validation/gen_man_keys.sh build src/man/ptdp-train.1 > new && mv new src/man/ptdp-train.1
# A table is the text between a line '.\" keys:begin PROGRAM [HEADING]' and '.\" keys:end': it
# becomes one .TP entry per key of the table that `PROGRAM --help` prints after the line HEADING
# (without HEADING, its first table).  validation/tests/docs/test_man.sh fails when a page differs
# from what this prints, so the pages list exactly the keys the programs accept.
build=${1:?usage: gen_man_keys.sh BUILD_DIR PAGE}
page=${2:?usage: gen_man_keys.sh BUILD_DIR PAGE}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# help_table PROGRAM HEADING: the rows of the table after HEADING, header line excluded.
help_table() {
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$build/$1" --help < /dev/null |
    awk -v heading="$2" '
      heading == "" || $0 == heading { armed = 1 }
      armed && !inside && /^key +type +default +range +meaning$/ { inside = 1; next }
      inside && /^$/ { exit }
      inside { print }'
}

# to_roff: the --help rows (key type default range meaning; a range is one word or "[a, b]";
# defaults hold no blank, as every table's do) as .TP entries, roff special characters escaped.
to_roff() {
  awk '
    function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
    function text(s) { gsub(/\\/, "\\e", s); if (s ~ /^[.\047]/) s = "\\&" s; return s }
    {
      key = $1; type = $2; deflt = $3; i = 4; range = $i
      if (range ~ /^\[/) while (range !~ /\]$/ && i < NF) range = range " " $(++i)
      if (range ~ /^\[/ && range !~ /\]$/) { print "unparsed --help row: " $0 > "/dev/stderr"; bad = 1; exit 1 }
      meaning = ""
      for (j = i + 1; j <= NF; j++) meaning = meaning (j > i + 1 ? " " : "") $j
      if (deflt == "\"\"") deflt = "empty"
      detail = "default \\%" esc(deflt)
      if (type == "int" || type == "real" || type == "choice") detail = detail ", \\%" esc(range)
      print ".TP"
      print "\\fB" esc(key) "\\fR \\fI" type "\\fR (" detail ")"
      print text(meaning)
    }
    END { exit bad }'
}

awk -v dir="$tmp" '
  /^\.\\" keys:begin / { n++; sub(/^\.\\" keys:begin /, ""); print > (dir "/spec" n); close(dir "/spec" n) }' "$page"
n=0
while [ -f "$tmp/spec$((n + 1))" ]; do
  n=$((n + 1))
  read -r prog heading < "$tmp/spec$n"
  help_table "$prog" "$heading" > "$tmp/rows$n"
  [ -s "$tmp/rows$n" ] || { echo "gen_man_keys.sh: no key table in '$prog --help' after '$heading'" >&2; exit 1; }
  to_roff < "$tmp/rows$n" > "$tmp/table$n" || exit 1
done
awk -v dir="$tmp" '
  /^\.\\" keys:begin / { print; n++; f = dir "/table" n; while ((getline line < f) > 0) print line; skip = 1; next }
  /^\.\\" keys:end/ { skip = 0 }
  !skip { print }' "$page"
