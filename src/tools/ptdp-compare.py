# ptdp-compare: one table with a row per run file (what a sweep's results are read with).
#
#     ptdp-compare RUNFILE... [--csv]
#
# The build puts runfile.py (RunFile, open_or_exit, human_bytes) in front of this file.
import argparse
import csv
import math

PROG = "ptdp-compare"

# (CSV name, text header, formatter for the text table); ptdp-compare(1) lists the same columns
COLUMNS = [
    ("run", "run", str),
    ("layout", "layout", str),
    ("micro_batch_size", "b", str),
    ("schedule", "schedule", str),
    ("recompute", "recompute", str),
    ("iteration", "iter", str),
    ("tokens_per_second", "tokens/s", lambda x: "%.1f" % x),
    ("tflops_per_rank", "TFLOP/s/rank", lambda x: "%.4g" % x),
    ("mfu", "MFU", lambda x: "%.3g%%" % (100.0 * x)),
    ("bubble", "bubble", lambda x: "%.3f" % x),
    ("peak_activation_bytes", "peak act.", human_bytes),
    ("train_loss", "train loss", lambda x: "%.4f" % x),
    ("val_loss", "val loss", lambda x: "%.4f" % x),
]
NOTE = ("tokens/s, TFLOP/s/rank, MFU: mean over the log intervals after the first (the first "
        "alone if there is one); bubble: measured, mean over ranks, last sampled iteration; "
        "peak act.: activations held, max over ranks; losses: last logged / last evaluation")


def _finite(x):
    return x is not None and not (isinstance(x, float) and not math.isfinite(x))


def _mean_after_first(values):
    """Mean of a per-interval series over the intervals after the first (the first includes
    start-up and warm-up); NaNs ignored; None when nothing is left."""
    if values is None or len(values) == 0:
        return None
    rest = values[1:] if len(values) > 1 else values
    rest = rest[np.isfinite(rest)]
    return float(np.mean(rest)) if len(rest) else None


def summarize(rf):
    """One row of the table for an open RunFile: a dict keyed by the CSV names, None = blank."""
    row = {c[0]: None for c in COLUMNS}
    row["run"] = rf.path  # as given: files of a sweep often share a name in different folders
    row["layout"] = rf.layout() or None
    row["micro_batch_size"] = rf.cfg("micro_batch_size")
    row["schedule"] = rf.cfg("pipeline_schedule")
    row["recompute"] = rf.cfg("recompute_granularity")
    met = rf.series("metrics", ["iteration", "lm_loss", "tokens_per_second", "tflops_per_rank", "mfu"])
    if met is not None:
        if "iteration" in met:
            row["iteration"] = int(met["iteration"][-1])
        if "lm_loss" in met:
            row["train_loss"] = float(met["lm_loss"][-1])
        for key in ("tokens_per_second", "tflops_per_rank", "mfu"):
            if key in met:
                row[key] = _mean_after_first(np.asarray(met[key], dtype=float))
    ev = rf.series("eval", ["iteration", "lm_loss"])
    if ev is not None and "lm_loss" in ev:
        row["val_loss"] = float(ev["lm_loss"][-1])
    bub = rf.rows("pipeline/iteration", "pipeline/bubble_measured")
    if bub is not None and np.ndim(bub[1]) == 2 and np.isfinite(bub[1][-1]).any():
        row["bubble"] = float(np.nanmean(bub[1][-1]))
    peak = rf.read("memory/peak_activation_bytes")
    if peak is not None and np.isfinite(per_rank(peak)).any():
        row["peak_activation_bytes"] = int(np.nanmax(per_rank(peak)))
    return {k: (v if _finite(v) else None) for k, v in row.items()}


def print_text(rows):
    cells = [[c[1] for c in COLUMNS]]
    for row in rows:
        cells.append(["" if row[name] is None else fmt(row[name]) for name, _, fmt in COLUMNS])
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    for r in cells:
        # text columns left-aligned, numbers right-aligned
        out = [(s.ljust(w) if i < 6 else s.rjust(w)) for i, (s, w) in enumerate(zip(r, widths))]
        print("  ".join(out).rstrip())
    print()
    print(NOTE)


def print_csv(rows):
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow([c[0] for c in COLUMNS])
    for row in rows:
        w.writerow(["" if row[c[0]] is None else (repr(row[c[0]]) if isinstance(row[c[0]], float)
                                                  else row[c[0]]) for c in COLUMNS])


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="One table with a row per ptdp run file: "
                                 "layout, micro-batch size, schedule, recompute, throughput, MFU, "
                                 "bubble, peak activation memory, final losses.", epilog=NOTE)
    ap.add_argument("runfiles", nargs="+", metavar="RUNFILE")
    ap.add_argument("--csv", action="store_true", help="comma-separated values (raw numbers; bytes, "
                    "fractions) instead of the aligned text table")
    args = ap.parse_args()
    rows, failed = [], 0
    for path in args.runfiles:
        try:
            with RunFile(path) as rf:
                rows.append(summarize(rf))
        except RunFileError as exc:
            sys.stderr.write("%s: %s\n" % (PROG, exc))
            failed += 1
        except (OSError, KeyError, ValueError) as exc:
            sys.stderr.write("%s: %s: cannot read the run file: %s\n" % (PROG, path, exc))
            failed += 1
    if rows:
        (print_csv if args.csv else print_text)(rows)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
