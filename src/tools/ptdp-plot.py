# ptdp-plot: PNG figures of one run file.
#
#     ptdp-plot RUNFILE [-o DIR] [--all-samples] [--dump-data FILE.json]
#
# The build puts runfile.py, figures.py and figures_schedule.py in front of this file.
import argparse
import json
import traceback

PROG = "ptdp-plot"
# (file, data function, draw function, what it shows): ptdp-plot(1) lists the same
FIGURES = [
    ("loss.png", data_loss, draw_loss, "train and validation loss against iterations and tokens"),
    ("throughput.png", data_throughput, draw_throughput, "tokens/s, TFLOP/s per rank and MFU"),
    ("pipeline.png", data_pipeline, draw_pipeline, "per-rank schedule of the last sampled iteration"),
    ("memory.png", data_memory, draw_memory, "activations per layer beside the formula, per rank, timeline"),
    ("timers.png", data_timers, draw_timers, "ms per iteration per timer per rank"),
    ("communication.png", data_communication, draw_communication, "bytes per communicator per rank"),
]


def default_dir(runfile):
    base = runfile[:-3] if runfile.endswith(".h5") else runfile
    return base + "-plots"


def parse_args():
    ap = argparse.ArgumentParser(prog=PROG, description="Write PNG figures of a ptdp run file: " +
                                 "; ".join("%s (%s)" % (f[0], f[3]) for f in FIGURES) + ".")
    ap.add_argument("runfile", metavar="RUNFILE")
    ap.add_argument("-o", "--output-dir", metavar="DIR",
                    help="where the PNGs go (default: RUNFILE without .h5, plus -plots)")
    ap.add_argument("--all-samples", action="store_true",
                    help="also pipeline-ITER.png for every sampled iteration, not only the last")
    ap.add_argument("--dump-data", metavar="FILE",
                    help="also write the numbers each figure draws to FILE as JSON")
    return ap.parse_args()


def main():
    args = parse_args()
    rf = open_or_exit(args.runfile, PROG)
    out = args.output_dir or default_dir(args.runfile)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        sys.stderr.write("%s: cannot create the output directory %s: %s\n" % (PROG, out, exc))
        sys.exit(1)
    title = rf.title()
    dump, failed = {}, 0
    jobs = [(name, data, draw) for name, data, draw, _ in FIGURES]
    if args.all_samples:
        try:
            its, _ = pipeline_samples(rf)
            for s, it in enumerate(its):
                jobs.append(("pipeline-%d.png" % it, lambda r, s=s: data_pipeline(r, s), draw_pipeline))
        except Skip:
            pass
    for name, data_fn, draw_fn in jobs:
        path = os.path.join(out, name)
        try:
            d = data_fn(rf)
            dump[name] = d
            draw_fn(d, title, path)
            print("%s: wrote %s" % (PROG, path))
        except Skip as why:
            dump[name] = None
            print("%s: %s skipped: %s" % (PROG, name, why))
        except Exception as exc:  # a figure that fails must not stop the others
            failed += 1
            traceback.print_exc()
            sys.stderr.write("%s: %s failed: %s: %s\n" % (PROG, name, type(exc).__name__, exc))
    rf.close()
    if args.dump_data:
        with open(args.dump_data, "w") as fp:
            json.dump({"runfile": args.runfile, "title": title, "figures": dump}, fp, allow_nan=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
