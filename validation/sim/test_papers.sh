#!/bin/sh
# ptdp-sim against every row of Narayanan et al. 2021 Table 1 and Korthikanti et al. 2022 Table 5
# on inputs/hw/dgx-a100-80gb.hw.  Tolerances are the regression bounds of what the model reaches
# today (README, "ptdp-sim: validation"): mean absolute error and largest error per table, in %.
. "$top_srcdir/validation/tests/common.sh"
${PYTHON3:-python3} "$top_srcdir/validation/sim/validate_papers.py" "$top_builddir/ptdp-sim" "$top_srcdir/inputs/hw" \
  --mae 4.8 --max 10
ok $? "ptdp-sim within the regression tolerances of the papers' rows"
finish
