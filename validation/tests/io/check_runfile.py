"""Check a run file against its layout (ptdp-runfile(5)) and the run's log.

usage: check_runfile.py RUNFILE LOG --world W --intervals N --samples S --jobs J [--evals E]
Checks: every documented dataset with its shape; every (micro-batch, chunk) forward and backward
exactly once per rank per sampled iteration; the memory that ptdp-train printed ([memory] line:
rank 0's peak and the max and min over ranks, its weights, gradients and optimizer state); the
measured communication equals the analytical volume (TP in layers, PP, DP, embedding), exactly."""
import argparse
import re
import sys

import h5py
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("runfile")
ap.add_argument("log")
for k in ("world", "intervals", "samples", "jobs"):
    ap.add_argument("--" + k, type=int, required=True)
ap.add_argument("--evals", type=int, default=0)
a = ap.parse_args()
bad = []


def want(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        bad.append(what)


f = h5py.File(a.runfile, "r", swmr=True)
W, N, S = a.world, a.intervals, a.samples
cfg = f["config"].attrs
L = int(cfg["num_layers"]) // int(cfg["pipeline_model_parallel_size"])
I = 2 * int(cfg["micro_batches"]) * int(cfg["virtual_pipeline_chunks"])
T = f["timers/names"].shape[0]
shapes = {"config/hosts": (W,), "jobs": (a.jobs,), "timers/iteration": (N,), "timers/ms": (N, W, T),
          "communication/names": (5,), "communication/iteration": (N,), "communication/bytes": (N, W, 5),
          "communication/calls": (N, W, 5), "communication/analytical_bytes": (W, 5),
          "memory/tensor_names": (22,), "memory/layer_index": (W, L), "memory/layer_bytes": (W, L, 22),
          "memory/timeline_iteration": (S,), "memory/timeline": (S, W, I), "pipeline/iteration": (S,),
          "pipeline/events": (S, W, I), "pipeline/bubble_measured": (S, W), "pipeline/bubble_replayed": (S,),
          "eval/iteration": (a.evals,), "eval/lm_loss": (a.evals,), "eval/ppl": (a.evals,)}
for m in ("iteration", "consumed_samples", "lm_loss", "learning_rate", "grad_norm", "loss_scale", "skipped_iterations",
          "nan_iterations", "ms_per_iteration", "tokens_per_second", "tflops_per_rank", "mfu"):
    shapes["metrics/" + m] = (N,)
for m in ("peak_activation_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes", "allocated_bytes"):
    shapes["memory/" + m] = (W,)
for path, shape in shapes.items():
    want(path in f and f[path].shape == shape, "%s has shape %s (%s)" % (path, shape, f[path].shape if path in f else "absent"))
want(f.attrs["format"] == b"ptdp-run" and f.attrs["format_version"] == 1, "format ptdp-run, version 1")
want(np.isfinite(f["timers/ms"][()]).all(), "every rank's timers are finite")

# events: every (micro-batch, chunk) forward and backward exactly once per rank and sample
ev = f["pipeline/events"][()]
m, v = int(cfg["micro_batches"]), int(cfg["virtual_pipeline_chunks"])
full = sorted((k, mb, c) for k in (0, 1) for mb in range(m) for c in range(v))
cover = all(sorted(zip(ev["kind"][s, r], ev["microbatch"][s, r], ev["chunk"][s, r])) == full
            for s in range(S) for r in range(W))
want(cover, "events: each of the %d (micro-batch, chunk) forward and backward once per rank per sampled iteration" % (2 * m * v))
want(bool((ev["end"] >= ev["start"]).all() and (ev["wait"] >= 0).all()), "events: end >= start, wait >= 0")

# memory against the [memory] line of the log
log = open(a.log).read()
mm = re.search(r"peak held activations: rank 0 (\d+) bytes \(max over ranks (\d+), min (\d+)\).*parameters (\d+) bytes, "
               r"gradients (\d+) bytes, optimizer state (\d+) bytes", log)
peak = f["memory/peak_activation_bytes"][()]
if mm:
    r0, mx, mn, wb, gb, ob = (int(x) for x in mm.groups())
    want(peak[0] == r0 and peak.max() == mx and peak.min() == mn,
         "memory: peak activations rank 0 %d, max %d, min %d as printed" % (peak[0], peak.max(), peak.min()))
    want(f["memory/weight_bytes"][0] == wb and f["memory/gradient_bytes"][0] == gb and f["memory/optimizer_bytes"][0] == ob,
         "memory: rank 0's weights %d, gradients %d, optimizer %d bytes as printed" % (wb, gb, ob))
else:
    want(False, "the log has a [memory] line")
lb = f["memory/layer_bytes"][()]
mline = re.search(r"activations per layer per micro-batch: measured (\d+) bytes", log)
want(mline is not None and lb[0, 0].sum() == int(mline.group(1)),
     "memory: rank 0's first layer holds %d bytes by tensor, as printed" % lb[0, 0].sum())
tl = f["memory/timeline"][()]
want(bool((tl >= 0).all()) and bool((tl.max(axis=2) == peak[None, :]).all()) if S else True,
     "memory timeline: its highest point on each rank is that rank's measured peak")

# communication: measured equals analytical (TP in layers, PP, DP, embedding)
cb, an = f["communication/bytes"][-1], f["communication/analytical_bytes"][()]
for k, name in ((0, "tp_layers"), (2, "pp"), (3, "dp"), (4, "embedding")):
    want(np.array_equal(cb[:, k], an[:, k]), "communication %s: measured %s = analytical %s" % (name, cb[:, k], an[:, k]))
sys.exit(1 if bad else 0)
