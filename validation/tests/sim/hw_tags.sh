# Shell helpers for the tests of the scripts that write hardware files (jobs/measure_cpu_hw.sh,
# jobs/measure_gpu_hw.sh); source it after common.sh.  The tags are ptdp-hardware(5)'s
# PROVENANCE; the reader (src/sim/hw_tag.c) reads a file with no tags at all, so these checks are
# the strict ones: every value of a written file tagged, every MEASURED tag naming this run.

# check_hw_tags FILE MACHINE COMMAND: every value line of FILE (name aside, a label) ends with
#   # MEASURED MACHINE YYYY-MM-DDTHH:MM:SSZ "COMMAND" figure, # DERIVED "values" rule or
#   # ASSUMED source; each line that does not is printed as FILE:LINE: why: the line.  Status 0
#   when every line does (and there is at least one).
check_hw_tags() {
  M="$2" C="$3" awk '
    /^[ \t]*#/ || !/=/ { next }
    $1 == "name" { next }
    {
      n++; why = ""
      i = index($0, "  # "); tag = i ? substr($0, i + 4) : ""
      if (tag ~ /^MEASURED /) {
        want = "MEASURED " ENVIRON["M"] " "; rest = substr(tag, length(want) + 1)
        cmd = "\"" ENVIRON["C"] "\" "
        if (substr(tag, 1, length(want)) != want) why = "its MEASURED tag names no machine " ENVIRON["M"]
        else if (rest !~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z /)
          why = "its MEASURED tag names no UTC date and time"
        else if (substr(rest, 22, length(cmd)) != cmd) why = "its MEASURED tag names no command " cmd
        else if (substr(rest, 22 + length(cmd)) !~ /[^ ]/) why = "its MEASURED tag gives no figure"
      } else if (tag ~ /^DERIVED /) {
        if (tag !~ /^DERIVED "[^"]+" +[^ ]/) why = "its DERIVED tag lacks its quoted values or its rule"
      } else if (tag ~ /^ASSUMED /) {
        if (tag !~ /^ASSUMED +[^ ]/) why = "its ASSUMED tag gives no source"
      } else why = "no provenance tag"
      if (why != "") { printf "%s:%d: %s: %s\n", FILENAME, FNR, why, $0; bad++ }
    }
    END { if (!n) { print FILENAME ": no values"; bad++ } exit (bad > 0) }' "$1"
}

# hw_kinds FILE: each value line of FILE (name aside) as "key KIND", in the file's order
hw_kinds() {
  awk '/^[ \t]*#/ || !/=/ || $1 == "name" { next }
       { i = index($0, "  # "); t = i ? substr($0, i + 4) : "none"; split(t, w, " "); print $1, w[1] }' "$1"
}

# hw_assumed FILE: each ASSUMED value line of FILE as "key source", in the file's order
hw_assumed() {
  awk '/^[ \t]*#/ || !/=/ { next }
       { i = index($0, "  # ASSUMED "); if (i) print $1, substr($0, i + 12) }' "$1"
}

# check_explain FILE MACHINE: ptdp-sim --explain on a deck with --hardware FILE exits 0, warns
#   of nothing (no UNTAGGED values) and prints every value of FILE with its tag: as many
#   "+- key = value  KIND" lines as FILE has values, its MEASURED ones "on MACHINE"
check_explain() {
  "$top_builddir/ptdp-sim" "$top_srcdir/inputs/gpt-mock.in" --hardware "$1" --explain > "$TMPD/explain" 2>&1 ||
    { echo "ptdp-sim failed on $1:"; tail -n 5 "$TMPD/explain"; return 1; }
  if grep -Ei "warning|untagged" "$TMPD/explain"; then return 1; fi
  values=$(hw_kinds "$1" | wc -l) measured=$(hw_kinds "$1" | grep -c " MEASURED$")
  # the hardware section only: the lines under its heading (the range's part of --explain also
  # names values with their tags)
  awk '/^hardware values and where each comes from/ { on = 1; next } on && !/^\+- / { on = 0 } on' \
    "$TMPD/explain" > "$TMPD/explain_hw"
  shown=$(grep -Ec '^\+- [a-z0-9-]+ = [^ ]+  (MEASURED|DERIVED|ASSUMED)' "$TMPD/explain_hw")
  shown_m=$(grep -c "^+- [a-z0-9-]* = [^ ]*  MEASURED on $2 " "$TMPD/explain_hw")
  [ "$values" -gt 0 ] && [ "$shown" -eq "$values" ] && [ "$shown_m" -eq "$measured" ] ||
    { echo "--explain shows $shown tagged values of $values, $shown_m MEASURED on $2 of $measured"; return 1; }
}
