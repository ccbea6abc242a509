#!/bin/bash
# Quick start: install what is missing, build, fetch and tokenise the data, run the default job.
#   jobs/quickstart.sh            (as root on a fresh Debian 12 machine)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/jobs/setup.sh" "$top/build"
"$top/jobs/prepare-data.sh"
cd "$top"
BUILD_DIR="$top/build" "$top/jobs/run-local.sh" -n 2 inputs/gpt-tiny.in
