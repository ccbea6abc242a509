#!/bin/sh
# No file of src/, include/, validation/, jobs/, inputs/ or the README cites one of ptdp's own
# issues by its number: a user has no issue tracker with the repository, so a comment, page or
# script says what the thing is and why instead.  Each citation is reported as FILE:LINE: TEXT.
# Not citations, and allowed: another project's public issue, named with its repository
# (NVIDIA/Megatron-LM issue 1010, also when the name ends the line before), and "issue" as a verb
# followed by a count or a share ("the kernels issue 15 instructions per mma", "issue 38%").
# The files are those git knows (tracked, or new and not ignored); in a tree without git, every
# file but a build's logs and objects.  A planted citation in a copy must be caught, naming its
# file and line, and the allowed forms must pass.
. "$top_srcdir/validation/tests/common.sh"

# files ROOT: the text files to read under ROOT, one path per line relative to ROOT
files() {
  if git -C "$1" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git -C "$1" ls-files -co --exclude-standard -- src include validation jobs inputs README
  else
    (cd "$1" && find src include validation jobs inputs README -type f \
       ! -name '*.log' ! -name '*.trs' ! -name '*.o' ! -name '*.a' 2> /dev/null)
  fi
}
# citations ROOT: FILE:LINE: TEXT for each line under ROOT that cites an issue by number
citations() {
  (cd "$1" && files . | while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done |
     tr '\n' '\0' | xargs -0 -r grep -lIE '[Ii]ssues? #?[0-9]' -- |
     tr '\n' '\0' | xargs -0 -r awk '
       FNR == 1 { last = "" }
       {
         s = $0; pre = ""; hit = 0
         while (!hit && match(s, /[Ii]ssues? #?[0-9]+/)) {
           pre = pre substr(s, 1, RSTART - 1); post = substr(s, RSTART + RLENGTH)
           # the word before: on this line, or the last of the line before when only a comment
           # marker stands before it here
           n = split(pre, w, " "); prev = n ? w[n] : ""
           if (prev ~ /^(#+|\*|\/\/|;|\.\\")$/ && n == 1 || n == 0) prev = last
           sub(/^[^A-Za-z0-9]+/, "", prev)
           if (pre ~ /[A-Za-z]$/) ;                                  # a longer word (tissue)
           else if (pre ~ / $|^$/ && prev ~ /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/) ;  # owner/repo
           else if (post ~ /^[0-9.]*%/ || post ~ /^ instructions?/) ;  # a verb with a count
           else hit = 1
           pre = pre substr(s, RSTART, RLENGTH); s = post
         }
         if (hit) print FILENAME ":" FNR ": " $0
         n = split($0, w, " "); last = n ? w[n] : ""
       }')
}

citations "$top_srcdir" > "$TMPD/hits"
[ ! -s "$TMPD/hits" ]; ok $? "no file cites an issue by its number ($(wc -l < "$TMPD/hits") lines do)"
sed 's/^/    /' "$TMPD/hits"

# planted: a copy with one citation among the allowed forms must fail, naming its file and line
# (the citation is spelled in two parts so that this script does not cite one itself)
mkdir -p "$TMPD/tree/src/core" "$TMPD/tree/inputs" "$TMPD/tree/validation"
word=issue Words=Issues
printf '%s\n' "/* Checked sums (NVIDIA/Megatron-LM $word 1010 is allowed), and" \
  " * sizes a user chose (see NVIDIA/nccl-tests" " * $word 100, allowed too); the kernels $word 15 instructions" \
  " * per mma at $word 38% (verbs): allowed; a tissue 3 is no citation" > "$TMPD/tree/src/core/a.c"
cp "$TMPD/tree/src/core/a.c" "$TMPD/tree/inputs/b.in"
citations "$TMPD/tree" > "$TMPD/planted"
[ ! -s "$TMPD/planted" ]; ok $? "planted: another project's issues and 'issue' as a verb are not citations"
cat "$TMPD/planted"
printf '%s\n' "# the fix of $word 22, item 4" "# $Words 12 and 20 asked for it" >> "$TMPD/tree/inputs/b.in"
printf '%s\n' "/* $word #7 */" >> "$TMPD/tree/src/core/a.c"
printf '%s\n' "before $word 25 (s)" > "$TMPD/tree/validation/README"
citations "$TMPD/tree" | sort > "$TMPD/planted"
cat "$TMPD/planted"
[ "$(cut -d: -f1,2 "$TMPD/planted" | tr '\n' ' ')" = "inputs/b.in:5 inputs/b.in:6 src/core/a.c:5 validation/README:1 " ]
ok $? "planted: four citations caught, each by file and line"
finish
