#!/bin/sh
# Regenerate the key table of README from `ptdp-train --help`.
#   validation/gen_readme_keys.sh BUILD_DIR [README]   (prints the new README to stdout)
build=${1:?usage: gen_readme_keys.sh BUILD_DIR [README]}
readme=${2:-$(dirname "$0")/../README}
help=$(mktemp); trap 'rm -f "$help"' EXIT
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$build/ptdp-train" --help | sed -n '/^key /,$p' | sed 's/^/    /' > "$help"
awk -v helpfile="$help" '
  /<!-- keys:begin -->/ { print; while ((getline line < helpfile) > 0) print line; skip = 1; next }
  /<!-- keys:end -->/ { skip = 0 }
  !skip { print }' "$readme"
