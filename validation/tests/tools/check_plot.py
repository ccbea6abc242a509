#!/usr/bin/env python3
"""Check what ptdp-plot drew (its --dump-data JSON) against the run file, read here with plain
h5py and nothing of ptdp-plot's code:

    check_plot.py RUNFILE DUMP.json [--all-samples]

- pipeline.png: one box per event of the last sampled iteration, every rank, with the file's
  start, end and wait (ms = 1e3 s), kind, micro-batch and chunk; every (micro-batch, chunk) has
  exactly one forward and one backward box per rank; the bubbles are the file's;
  with --all-samples the same for every pipeline-ITER.png;
- loss.png: the train loss and iterations are /metrics', tokens = consumed samples x s, the
  validation points are /eval's;
- throughput.png: tokens/s, TFLOP/s per rank and MFU are /metrics';
- memory.png: per global layer the bytes of every rank holding it, the formulas, the per-rank
  totals and the last timeline row;
- timers.png, communication.png: the last interval's values per rank and the series.
Prints one line per check; exit 1 if any fails.
"""
import json
import sys

import h5py
import numpy as np

failures = 0


def check(cond, what):
    global failures
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures += 1


def close(a, b, rtol=1e-12):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True)


def latest(its):
    """Row index of the last row of each iteration, by increasing iteration (a requeue writes
    some iterations twice; -1 marks a row not written)."""
    last = {}
    for i, it in enumerate(its):
        if it >= 0:
            last[int(it)] = i
    return [last[k] for k in sorted(last)]


def text(x):
    return x.decode().rstrip("\0") if isinstance(x, bytes) else str(x)


def check_pipeline(f, d, s, name):
    """s: the row of /pipeline to compare with"""
    its = f["pipeline/iteration"][:]
    ev = f["pipeline/events"][s]  # [W, I]
    W, I = ev.shape
    check(d is not None and d["iteration"] == int(its[s]), "%s: iteration %d" % (name, its[s]))
    if d is None:
        return
    boxes = {(b["rank"], b["item"]): b for b in d["boxes"]}
    valid = [(r, i) for r in range(W) for i in range(I)
             if ev[r, i]["kind"] in (0, 1) and np.isfinite(ev[r, i]["start"])]  # else a fill value
    check(len(d["boxes"]) == len(valid) == len(boxes),
          "%s: %d boxes for %d events (W x I = %d x %d)" % (name, len(d["boxes"]), len(valid), W, I))
    bad = 0
    for r, i in valid:
        b, e = boxes.get((r, i)), ev[r, i]
        if b is None or b["kind"] != e["kind"] or b["microbatch"] != e["microbatch"] or \
                b["chunk"] != e["chunk"] or not close([b["start_ms"], b["end_ms"], b["wait_ms"]],
                                                      1e3 * np.array([e["start"], e["end"], e["wait"]])):
            bad += 1
    check(bad == 0, "%s: every box equals its event (start, end, wait, kind, micro-batch, chunk); %d differ" % (name, bad))
    m = int(f["config"].attrs["micro_batches"])
    v = int(f["config"].attrs["virtual_pipeline_chunks"])
    cover = all(sorted((b["kind"], b["microbatch"], b["chunk"]) for b in d["boxes"] if b["rank"] == r) ==
                sorted((k, mb, c) for k in (0, 1) for mb in range(m) for c in range(v)) for r in range(W))
    check(cover, "%s: each rank has one forward and one backward box per (micro-batch, chunk), m=%d v=%d" % (name, m, v))
    meas = f["pipeline/bubble_measured"][s]
    check(close(d["bubble_measured"], meas), "%s: per-rank measured bubble %s" % (name, np.round(meas, 4)))
    check(close(d["bubble_measured_mean"], meas.mean()), "%s: mean measured bubble %.4f" % (name, meas.mean()))
    check(close(d["bubble_replayed"], f["pipeline/bubble_replayed"][s]), "%s: replayed bubble" % name)
    check(close(d["bubble_formula"], f["pipeline"].attrs["bubble_formula"]), "%s: (p-1)/(v m)" % name)


def check_series(f, figs):
    rows = latest(f["metrics/iteration"][:])
    met = {k: f["metrics"][k][:][rows] for k in f["metrics"]}
    d = figs["loss.png"]
    seq = int(f["config"].attrs["seq_length"])
    check(close(d["iteration"], met["iteration"]) and close(d["train_loss"], met["lm_loss"]),
          "loss.png: train loss at iterations %s (%d rows in the file)" % (met["iteration"].tolist(),
                                                                           len(f["metrics/iteration"])))
    check(close(d["tokens"], met["consumed_samples"] * seq), "loss.png: tokens = consumed samples x %d" % seq)
    ev = latest(f["eval/iteration"][:])
    check(close(d["eval_iteration"], f["eval/iteration"][:][ev]) and close(d["eval_loss"], f["eval/lm_loss"][:][ev]),
          "loss.png: %d validation points" % len(ev))
    d = figs["throughput.png"]
    for k in ("tokens_per_second", "tflops_per_rank", "mfu", "ms_per_iteration"):
        check(close(d[k], met[k]), "throughput.png: %s" % k)
    d = figs["timers.png"]
    ms = f["timers/ms"][:][latest(f["timers/iteration"][:])]
    check(d["names"] == [text(x) for x in f["timers/names"][:]], "timers.png: names %s" % d["names"])
    check(close(d["last_ms"], ms[-1].T) and close(d["ms"], ms), "timers.png: last interval [T, W] and series [N, W, T]")
    d = figs["communication.png"]
    by = f["communication/bytes"][:][latest(f["communication/iteration"][:])]
    check(close(d["last_bytes"], by[-1].T) and close(d["bytes"], by), "communication.png: bytes, last and series")
    check(close(d["analytical_bytes"], f["communication/analytical_bytes"][:].T), "communication.png: analytical volume")


def check_memory(f, d):
    g = f["memory"]
    idx, lb = g["layer_index"][:], g["layer_bytes"][:]
    layers = sorted({int(x) for x in idx.ravel() if x >= 0})
    check(d["layers"] == layers, "memory.png: global layers %s" % layers)
    ok = True
    for j, L in enumerate(layers):
        held = np.array([lb[r, l] for r in range(idx.shape[0]) for l in range(idx.shape[1]) if idx[r, l] == L])
        ok &= close(d["layer_bytes_max"][j], held.max(0)) and close(d["layer_bytes_min"][j], held.min(0))
    check(ok, "memory.png: bytes per layer per tensor = the ranks holding the layer (max and min)")
    check(d["tensor_names"] == [text(x) for x in g["tensor_names"][:]], "memory.png: %d tensor names" % len(d["tensor_names"]))
    for key, ds, attr in (("paper", "formula_bytes", "formula_layer_bytes_paper"),
                          ("ptdp", "formula_ptdp_bytes", "formula_layer_bytes_ptdp")):
        f_ = d["formula"].get(key)
        if ds in g:
            check(f_ is not None and close(f_["per_tensor"], g[ds][:]), "memory.png: %s formula per tensor" % key)
        else:
            check(f_ is not None and f_["per_tensor"] is None and close(f_["total"], g.attrs[attr]),
                  "memory.png: %s formula total %.0f" % (key, g.attrs[attr]))
    for k in ("peak_activation_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes", "allocated_bytes"):
        if k in g:
            v = g[k][:].astype(float)
            check(close(d["per_rank"][k], np.where(v < 0, np.nan, v)), "memory.png: %s per rank" % k)
    s = latest(g["timeline_iteration"][:])[-1]
    tl = g["timeline"][s].astype(float)
    check(d["timeline"]["iteration"] == int(g["timeline_iteration"][s]) and
          close(d["timeline"]["bytes"], np.where(tl < 0, np.nan, tl)), "memory.png: timeline of the last sample")


def main():
    runfile, dump = sys.argv[1], sys.argv[2]
    figs = json.load(open(dump))["figures"]
    with h5py.File(runfile, "r", swmr=True) as f:
        samples = latest(f["pipeline/iteration"][:])
        check_pipeline(f, figs["pipeline.png"], samples[-1], "pipeline.png")
        if "--all-samples" in sys.argv:
            for s in samples:
                name = "pipeline-%d.png" % f["pipeline/iteration"][s]
                check(name in figs, "%s drawn" % name)
                check_pipeline(f, figs.get(name), s, name)
        check_series(f, figs)
        check_memory(f, figs["memory.png"])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
