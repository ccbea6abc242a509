#!/bin/bash
# Quick start: install what is missing, build, fetch and tokenise the data, run the default job,
# save its model and print a sample of text from it.
#   jobs/quickstart.sh            (as root on a fresh Debian 12 machine)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/jobs/setup.sh" "$top/build"
"$top/jobs/prepare-data.sh"
cd "$top"
BUILD_DIR="$top/build" "$top/jobs/run-local.sh" -n 2 inputs/gpt-tiny.in --save checkpoints/gpt-tiny
# a sample from the model just trained (the continuation on stdout; ptdp-generate(1))
prompt="The state of the Union is"
echo "A sample from checkpoints/gpt-tiny, continuing \"$prompt\":"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe --bind-to none -n 2 "$top/build/ptdp-generate" --load checkpoints/gpt-tiny --prompt "$prompt" \
  --num-tokens-to-generate 48 --top-p 0.9 --temperature 0.8
# the run file of the job (a rerun, resuming from no checkpoint, keeps the earlier one as run-1.h5, ...)
runfile=checkpoints/gpt-tiny/run.h5
echo
echo "Everything the run measured is in its run file $runfile; plot it with:"
echo "  build/ptdp-plot $runfile        (PNGs in ${runfile%.h5}-plots/)"
