#!/bin/bash
# A sweep's run files gathered into one table, measured beside predicted.
#   jobs/slurm/collect.sh TABLE.tsv [SWEEP_DIR] [--markdown]
# TABLE.tsv is the table sweep.sbatch ran (ptdp-sweep --emit-tsv); task i's run file is
# SWEEP_DIR/TASK/run.h5 (default SWEEP_DIR: TABLE without .tsv).  Measured: the median over the
# run's log intervals of ms per iteration, leaving out the first interval (start-up), taking the
# last row of an iteration logged twice (a requeue repeats the iterations after the last
# checkpoint).  A task without a run file is listed as missing.  Needs python3 with h5py.
set -euo pipefail
md=0; pos=()
for a in "$@"; do case $a in --markdown) md=1 ;; *) pos+=("$a") ;; esac; done
[ ${#pos[@]} -ge 1 ] || { echo "usage: jobs/slurm/collect.sh TABLE.tsv [SWEEP_DIR] [--markdown]" >&2; exit 2; }
tsv=${pos[0]}
dir=${pos[1]:-${tsv%.tsv}}
exec "${PYTHON3:-python3}" - "$tsv" "$dir" "$md" <<'PY'
import csv, math, os, sys
import h5py

tsv, sweep_dir, md = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rows = list(csv.DictReader(open(tsv), delimiter="\t"))
cols = ["task", "layout", "predicted ms", "measured ms", "measured/predicted", "iterations", "last lm loss", "launches"]
out = []
for r in rows:
    path = os.path.join(sweep_dir, r["task"], "run.h5")
    pred = float(r["predicted_ms_per_iteration"])
    if not os.path.exists(path):
        out.append([r["task"], "", "%.4g" % pred, "missing", "", "", "", ""])
        continue
    with h5py.File(path, "r", swmr=True) as f:
        c = f["config"].attrs
        layout = "t%d p%d d%d v%d b%d" % tuple(int(c[k]) for k in ("tensor_model_parallel_size",
            "pipeline_model_parallel_size", "data_parallel_size", "virtual_pipeline_chunks", "micro_batch_size"))
        its, ms, loss = f["metrics/iteration"][...], f["metrics/ms_per_iteration"][...], f["metrics/lm_loss"][...]
        last = {}
        for i, (it, t, l) in enumerate(zip(its, ms, loss)):
            last[int(it)] = (float(t), float(l))   # a later row of the same iteration wins
        order = sorted(last)
        times = [last[i][0] for i in order[1:]] or [last[i][0] for i in order]
        times.sort()
        meas = times[len(times) // 2] if times else math.nan
        launches = len(f["jobs"]) if "jobs" in f else 0
    out.append([r["task"], layout, "%.4g" % pred, "%.4g" % meas, "%.2f" % (meas / pred) if pred > 0 else "",
                str(order[-1] if order else 0), "%.4f" % last[order[-1]][1] if order else "", str(launches)])
if md:
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    for o in out:
        print("| " + " | ".join(o) + " |")
else:
    w = [max(len(c), *(len(o[i]) for o in out)) if out else len(c) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w[i]) for i, c in enumerate(cols)))
    for o in out:
        print("  ".join(x.ljust(w[i]) for i, x in enumerate(o)))
PY
