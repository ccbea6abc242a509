#!/usr/bin/env python3
"""Write a synthetic ptdp run file (format version 1, ptdp-runfile(5)) with h5py, for the
tests of ptdp-plot and ptdp-compare.

    make_runfile.py OUT.h5 [--tp 2 --pp 2 --dp 1 --vp 2 --sp ...] [--truth T.json]
                    [--live | --crash-after K | --crash-plain]

The numbers are plausible, not measured: the pipeline events come from simulating the named
schedule (Megatron's orders for gpipe, 1F1B and interleaved 1F1B) with a forward and backward
time per chunk and a point-to-point latency, so waits, bubbles and the memory timeline agree with
each other; activation bytes follow ptdp(7)'s per-tensor table.  --truth writes what a reader
must find (the values ptdp-compare reports), computed here from the generator's own numbers.

--live writes the first interval, switches to SWMR and prints "ready"; then each line read on
stdin appends one interval (flushed; "appended N" printed) until stdin ends or the intervals are
written.  --crash-after K writes K intervals in SWMR mode and kills itself with SIGKILL (the
file stays marked open for SWMR writing); --crash-plain is killed before SWMR mode is on (a file
that needs `h5clear -s`).
"""
import argparse
import json
import math
import os
import signal
import sys

import h5py
import numpy as np

from runfile_sim import TENSORS, layer_tensor_bytes, rank_order, simulate

TIMERS = ["forward-backward", "forward", "backward", "pipeline-wait", "tp-comm", "dp-wait", "grads-sync",
          "optimizer", "data", "checkpoint"]
COMMS = ["tp_layers", "tp_other", "pp", "dp", "embedding"]
EVENT_DTYPE = np.dtype([("start", "<f8"), ("end", "<f8"), ("wait", "<f8"), ("kind", "<i4"),
                        ("microbatch", "<i4"), ("chunk", "<i4")])
JOB_DTYPE = np.dtype([("start_time", "<f8"), ("end_time", "<f8"), ("ranks", "<i8"),
                      ("hosts", "S64"), ("layout", "S32"), ("slurm_job_id", "S16"),
                      ("slurm_array_job_id", "S16"), ("slurm_array_task_id", "S16"),
                      ("first_iteration", "<i8"), ("last_iteration", "<i8")])


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--pp", type=int, default=2)
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--vp", type=int, default=2, help="virtual pipeline chunks v")
    ap.add_argument("--sp", action="store_true", help="sequence parallelism")
    ap.add_argument("--schedule", default=None, help="gpipe|1f1b|interleaved (default from v)")
    ap.add_argument("--recompute", default="none", choices=["none", "full", "selective"])
    ap.add_argument("--micro-batches", type=int, default=4, help="m per iteration per DP rank")
    ap.add_argument("--mbs", type=int, default=1, help="micro-batch size b")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--intervals", type=int, default=6, help="log intervals N")
    ap.add_argument("--log-interval", type=int, default=2)
    ap.add_argument("--eval-interval", type=int, default=4, help="0: no evaluations")
    ap.add_argument("--samples", type=int, default=2, help="sampled iterations S (0: none)")
    ap.add_argument("--no-pipeline", action="store_true", help="leave out the /pipeline group")
    ap.add_argument("--tps", type=float, default=0, help="tokens/s after the first interval (0: from the timeline)")
    ap.add_argument("--final-loss", type=float, default=6.25)
    ap.add_argument("--final-val-loss", type=float, default=6.5)
    ap.add_argument("--peak-flops", type=float, default=1e12, help="0: unknown (MFU NaN)")
    ap.add_argument("--launches", type=int, default=1, help="rows of /jobs (a requeued run has several)")
    ap.add_argument("--requeue", action="store_true",
                    help="a second launch resumed from a checkpoint: the first launch's rows of the "
                    "intervals after it stay in the file, then the second launch's rows of the same "
                    "iterations (readers take the last row per iteration)")
    ap.add_argument("--formula-per-tensor", action="store_true",
                    help="the formulas as [K] datasets formula_bytes, formula_ptdp_bytes (default: the "
                    "totals as attributes of /memory, as ptdp-train writes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth", help="write the expected summary here (JSON)")
    ap.add_argument("--format-version", type=int, default=1)
    ap.add_argument("--live", action="store_true")
    ap.add_argument("--crash-after", type=int, default=0)
    ap.add_argument("--crash-plain", action="store_true")
    a = ap.parse_args()
    if a.requeue:
        a.launches = max(a.launches, 2)
    if a.schedule is None:
        a.schedule = "interleaved" if a.vp > 1 else "1f1b"
    return a


# ---------------------------------------------------------------- the whole run
class Run:
    def __init__(self, a):
        self.a = a
        self.rng = np.random.default_rng(a.seed)
        t, p, d, v = a.tp, a.pp, a.dp, a.vp
        self.W = t * p * d
        self.m = a.micro_batches
        self.gbs = a.mbs * self.m * d
        mult = 128 * t
        self.padded = (a.vocab + mult - 1) // mult * mult
        s, h, L = a.seq, a.hidden, a.layers
        self.flops = 72.0 * self.gbs * s * L * h * h * (1 + s / (6.0 * h) + self.padded / (12.0 * L * h))
        self.stage = [r // (t * d) for r in range(self.W)]  # tp-dp-pp order: PP slowest
        self.lpc = L // (p * v)  # layers per chunk
        self.layer_bytes_one = layer_tensor_bytes(a, paper=False)
        self.iterations = [a.log_interval * (i + 1) for i in range(a.intervals)]
        self.sample_iters = self.pick_samples()
        self.build_samples()
        self.build_metrics()

    def pick_samples(self):
        n = min(self.a.samples, self.a.intervals)
        if n <= 0:
            return []
        idx = np.unique(np.linspace(0, self.a.intervals - 1, n).round().astype(int))
        return [self.iterations[i] for i in idx]

    def chunk_bytes(self, stage, chunk):
        """Activation bytes one (micro-batch, chunk) holds on a stage; the last virtual stage also
        holds the logits [s b, V/t] fp32."""
        a = self.a
        b = self.lpc * self.layer_bytes_one.sum()
        if chunk * a.pp + stage == a.pp * a.vp - 1:
            b += 4.0 * a.seq * a.mbs * self.padded / a.tp
        return b

    def build_samples(self):
        a = self.a
        p, v, m = a.pp, a.vp, self.m
        orders = [rank_order(a.schedule, p, v, m, s) for s in range(p)]
        self.items = len(orders[0])
        t_fwd = 0.002 * self.lpc * (2.0 if a.recompute == "none" else 1.9)
        t_bwd = 2.0 * t_fwd * (1.33 if a.recompute == "full" else 1.0)
        self.events, self.timeline, self.bubble = [], [], []
        for _ in self.sample_iters:
            rows = simulate(orders, p, v, t_fwd, t_bwd, 0.0002, self.rng, 0.05)
            ev = np.zeros((self.W, self.items), dtype=EVENT_DTYPE)
            tl = np.zeros((self.W, self.items), dtype=np.int64)
            bub = np.zeros(self.W)
            for r in range(self.W):
                sr = rows[self.stage[r]]
                jitter = 1.0 + 0.01 * self.rng.uniform(-1, 1)
                held = 0.0
                for i, (st, en, wt, kind, mb, c) in enumerate(sr):
                    ev[r, i] = (st * jitter, en * jitter, wt * jitter, kind, mb, c)
                    held += self.chunk_bytes(self.stage[r], c) * (1 if kind == 0 else -1)
                    tl[r, i] = int(round(held))
                waits = ev[r]["wait"].sum()
                bub[r] = waits / ((ev[r]["end"] - ev[r]["start"]).sum() - waits)
            self.events.append(ev)
            self.timeline.append(tl)
            self.bubble.append(bub)
        ideal = simulate(orders, p, v, t_fwd, t_bwd, 0.0, self.rng, 0.0)
        span = max(r[-1][1] for r in ideal)
        busy = m * v * (t_fwd + t_bwd)
        self.bubble_replayed = (span - busy) / busy
        self.peak_act = np.zeros(self.W, dtype=np.int64)
        for r in range(self.W):  # the peak of the whole schedule, sampled or not
            held, peak = 0.0, 0.0
            for kind, mb, c in orders[self.stage[r]]:
                held += self.chunk_bytes(self.stage[r], c) * (1 if kind == 0 else -1)
                peak = max(peak, held)
            self.peak_act[r] = int(round(peak))
        self.span = span

    def build_metrics(self):
        a = self.a
        N = a.intervals
        tokens = self.gbs * a.seq
        ms = (self.span * 1.15 + 0.004) * 1000.0
        tps = a.tps if a.tps > 0 else tokens / (ms / 1000.0)
        ms = tokens / tps * 1000.0
        tps_series = np.full(N, tps)
        tps_series[0] = tps * 0.6  # the first interval pays for the warm-up
        self.metrics = {}
        it = np.array(self.iterations, dtype=np.int64)
        self.metrics["iteration"] = it
        self.metrics["consumed_samples"] = it * self.gbs
        x = np.arange(N) / max(N - 1, 1)
        start = math.log(a.vocab)
        loss = a.final_loss + (start - a.final_loss) * np.exp(-4 * x) + 0.03 * self.rng.standard_normal(N)
        loss[-1] = a.final_loss
        self.metrics["lm_loss"] = loss
        self.metrics["learning_rate"] = 3e-4 * np.minimum(1.0, (it / it[-1]) * 4) * (0.5 + 0.5 * np.cos(np.pi * x))
        self.metrics["grad_norm"] = 1.5 * np.exp(-x) + 0.2
        self.metrics["loss_scale"] = np.ones(N)
        self.metrics["skipped_iterations"] = np.zeros(N, dtype=np.int64)
        self.metrics["nan_iterations"] = np.zeros(N, dtype=np.int64)
        self.metrics["tokens_per_second"] = tps_series
        self.metrics["ms_per_iteration"] = tokens / tps_series * 1000.0
        tfl = self.flops / (self.metrics["ms_per_iteration"] / 1000.0) / self.W / 1e12
        self.metrics["tflops_per_rank"] = tfl
        self.metrics["mfu"] = tfl * 1e12 / a.peak_flops if a.peak_flops > 0 else np.full(N, np.nan)
        self.ms = ms
        ev_it = [i for i in self.iterations if a.eval_interval > 0 and i % a.eval_interval == 0]
        self.eval_iter = np.array(ev_it, dtype=np.int64)
        vl = np.interp(self.eval_iter, it, loss) + 0.2
        if len(vl):
            vl[-1] = a.final_val_loss
        self.eval_loss = vl
        self.build_timers_comm()

    def build_timers_comm(self):
        a = self.a
        N, W = a.intervals, self.W
        fb = self.span * 1000.0
        self.timers = np.zeros((N, W, len(TIMERS)))
        for r in range(W):
            wait = self.bubble[-1][r] / (1 + self.bubble[-1][r]) * fb if self.bubble else 0.0
            fwd = (fb - wait) / 3
            base = [fb, fwd, 2 * fwd, wait, 0.12 * fb if a.tp > 1 else 0.0, 0.3 if a.dp > 1 else 0.0, 0.4, 2.5,
                    0.15, 0.0]
            for n in range(N):
                self.timers[n, r] = np.array(base) * (1 + 0.05 * self.rng.uniform(-1, 1, len(TIMERS)))
        s, b, h, t = a.seq, a.mbs, a.hidden, a.tp
        lpr = a.layers // a.pp
        tp_per_layer = (10 if a.sp else 8) * b * s * h * (t - 1) / t * 4
        params = 4.0 * (12 * h * h * lpr / t + self.padded * h / t)
        self.analytical = np.zeros((W, len(COMMS)))
        for r in range(W):
            st = self.stage[r]
            act = 4.0 * b * s * h / (t if a.sp else 1)
            pp_sends = 2 * self.m * a.vp - (self.m if st == 0 else 0) - (self.m if st == a.pp - 1 else 0)
            self.analytical[r] = [tp_per_layer * lpr * self.m, np.nan,  # tp_other: not modelled
                                  act * pp_sends if a.pp > 1 else 0.0,
                                  2.0 * (a.dp - 1) / a.dp * params,
                                  4.0 * self.padded * h / t if a.pp > 1 and st in (0, a.pp - 1) else 0.0]
        measured = self.analytical.copy()
        measured[:, 1] = 3 * 4.0 * s * b * (t - 1) / t * (self.stage[0] == a.pp - 1) if t > 1 else 0.0
        for r in range(W):  # the cross entropy's three reductions on the last stage
            measured[r, 1] = 3 * 2.0 * (t - 1) / t * 4 * s * b if t > 1 and self.stage[r] == a.pp - 1 else 0.0
        self.comm_bytes = np.repeat(measured[None], N, axis=0)
        self.comm_calls = np.repeat((measured[None] > 0) * np.array([4.0 * lpr * self.m, 3.0 * self.m, 2.0 * self.m * a.vp,
                                                                     3.0, 1.0]), N, axis=0)

    def truth(self):
        """What ptdp-compare must report for this file."""
        a = self.a
        tps = self.metrics["tokens_per_second"]
        tfl = self.metrics["tflops_per_rank"]
        mfu = self.metrics["mfu"]
        rest = slice(1, None) if len(tps) > 1 else slice(None)
        layout = "t%d p%d d%d v%d%s" % (a.tp, a.pp, a.dp, a.vp, " sp" if a.sp else "")
        return {"run": os.path.basename(a.out), "layout": layout, "micro_batch_size": a.mbs,
                "schedule": a.schedule, "recompute": a.recompute,
                "tokens_per_second": float(np.mean(tps[rest])),
                "tflops_per_rank": float(np.mean(tfl[rest])),
                "mfu": float(np.mean(mfu[rest])) if a.peak_flops > 0 else None,
                "bubble": float(np.mean(self.bubble[-1])) if self.bubble and not a.no_pipeline else None,
                "peak_activation_bytes": int(self.peak_act.max()),
                "train_loss": float(self.metrics["lm_loss"][-1]),
                "val_loss": float(self.eval_loss[-1]) if len(self.eval_loss) else None}


# ---------------------------------------------------------------- writing
def sarr(strings, n=None):
    n = n or max(1, max(len(s) for s in strings))
    return np.array([s.encode() for s in strings], dtype="S%d" % n)


def grow(f, name, shape_tail, dtype):
    return f.create_dataset(name, shape=(0,) + tuple(shape_tail), maxshape=(None,) + tuple(shape_tail),
                            chunks=(16,) + tuple(shape_tail), dtype=dtype)


def write_static(f, run):
    a = run.a
    f.attrs["format"] = np.bytes_(b"ptdp-run")
    f.attrs["format_version"] = np.int64(a.format_version)
    f.attrs["ptdp_version"] = np.bytes_(b"0.1.0")
    f.attrs["created"] = np.bytes_(b"2025-01-01T00:00:00Z")
    c = f.create_group("config")
    keys = {"num-layers": a.layers, "hidden-size": a.hidden, "num-attention-heads": a.heads,
            "seq-length": a.seq, "micro-batch-size": a.mbs, "global-batch-size": run.gbs,
            "tensor-model-parallel-size": a.tp, "pipeline-model-parallel-size": a.pp,
            "num-layers-per-virtual-pipeline-stage": run.lpc if a.vp > 1 else 0,
            "pipeline-schedule": a.schedule, "sequence-parallel": "true" if a.sp else "false",
            "recompute-granularity": a.recompute, "log-interval": a.log_interval,
            "train-iters": run.iterations[-1], "mock-data": "true"}
    for k, v in keys.items():
        c.attrs[k] = np.bytes_(str(v).encode())
    ints = {"world_size": run.W, "tensor_model_parallel_size": a.tp, "pipeline_model_parallel_size": a.pp,
            "virtual_pipeline_chunks": a.vp, "data_parallel_size": a.dp, "micro_batches": run.m,
            "num_layers": a.layers, "hidden_size": a.hidden, "seq_length": a.seq,
            "micro_batch_size": a.mbs, "global_batch_size": run.gbs, "vocab_size": a.vocab,
            "padded_vocab_size": run.padded, "sequence_parallel": int(a.sp),
            "use_distributed_optimizer": 0}
    for k, v in ints.items():
        c.attrs[k] = np.int64(v)
    c.attrs["pipeline_schedule"] = np.bytes_(a.schedule.encode())
    c.attrs["recompute_granularity"] = np.bytes_(a.recompute.encode())
    c.attrs["model_flops_per_iteration"] = np.float64(run.flops)
    c.attrs["peak_flops_per_rank"] = np.float64(a.peak_flops)
    c.attrs["build"] = np.bytes_(b"mpicc -O3 (synthetic fixture)")
    c.attrs["blas"] = np.bytes_(b"OpenBLAS")
    c.create_dataset("hosts", data=sarr(["node%02d" % (r // 4) for r in range(run.W)], 32))
    write_memory(f, run)
    cm = f.create_group("communication")
    cm.create_dataset("names", data=sarr(COMMS, 16))
    cm.create_dataset("analytical_bytes", data=run.analytical)
    f.create_group("timers").create_dataset("names", data=sarr(TIMERS, 32))
    if not a.no_pipeline:
        pg = f.create_group("pipeline")
        pg.attrs["bubble_formula"] = np.float64((a.pp - 1) / (a.vp * run.m))


def write_memory(f, run):
    a = run.a
    g = f.create_group("memory")
    g.create_dataset("tensor_names", data=sarr(TENSORS, 32))
    L = a.layers // a.pp
    idx = np.full((run.W, L), -1, dtype=np.int64)
    lb = np.full((run.W, L, len(TENSORS)), -1, dtype=np.int64)
    for r in range(run.W):
        for c in range(a.vp):
            for l in range(run.lpc):
                idx[r, c * run.lpc + l] = (c * a.pp + run.stage[r]) * run.lpc + l
                lb[r, c * run.lpc + l] = run.layer_bytes_one.round().astype(np.int64)
    g.create_dataset("layer_index", data=idx)
    g.create_dataset("layer_bytes", data=lb)
    if a.formula_per_tensor:
        g.create_dataset("formula_bytes", data=layer_tensor_bytes(a, paper=True))
        g.create_dataset("formula_ptdp_bytes", data=run.layer_bytes_one)
    else:
        g.attrs["formula_layer_bytes_paper"] = np.float64(layer_tensor_bytes(a, paper=True).sum())
        g.attrs["formula_layer_bytes_ptdp"] = np.float64(run.layer_bytes_one.sum())
    h, t = a.hidden, a.tp
    weights = np.array([4 * (12 * h * h * L // t + (run.padded * h // t if run.stage[r] in (0, a.pp - 1) else 0))
                        for r in range(run.W)], dtype=np.int64)
    g.create_dataset("peak_activation_bytes", data=run.peak_act)
    g.create_dataset("weight_bytes", data=weights)
    g.create_dataset("gradient_bytes", data=weights)
    g.create_dataset("optimizer_bytes", data=2 * weights)
    g.create_dataset("allocated_bytes", data=run.peak_act + 4 * weights + 1_000_000)


def create_growing(f, run):
    a = run.a
    W, I = run.W, run.items
    j = f.create_dataset("jobs", shape=(0,), maxshape=(None,), chunks=(4,), dtype=JOB_DTYPE)
    m = f.create_group("metrics")
    for k, v in run.metrics.items():
        grow(m, k, (), v.dtype)
    e = f.create_group("eval")
    for k, dt in (("iteration", np.int64), ("lm_loss", np.float64), ("ppl", np.float64)):
        grow(e, k, (), dt)
    grow(f["timers"], "iteration", (), np.int64)
    grow(f["timers"], "ms", (W, len(TIMERS)), np.float64)
    grow(f["memory"], "timeline_iteration", (), np.int64)
    grow(f["memory"], "timeline", (W, I), np.int64)
    for k in ("iteration",):
        grow(f["communication"], k, (), np.int64)
    grow(f["communication"], "bytes", (W, len(COMMS)), np.float64)
    grow(f["communication"], "calls", (W, len(COMMS)), np.float64)
    if not a.no_pipeline:
        grow(f["pipeline"], "iteration", (), np.int64)
        grow(f["pipeline"], "events", (W, I), EVENT_DTYPE)
        grow(f["pipeline"], "bubble_measured", (W,), np.float64)
        grow(f["pipeline"], "bubble_replayed", (), np.float64)
    return j


def append(ds, row):
    n = ds.shape[0]
    ds.resize(n + 1, axis=0)
    ds[n] = row


def write_jobs(f, run, upto):
    """One row per launch; launches split the intervals written so far evenly."""
    a = run.a
    j = f["jobs"]
    rows = []
    per = max(1, a.intervals // a.launches)
    for k in range(a.launches):
        lo = k * per
        if lo >= upto:
            break
        hi = upto - 1 if k == a.launches - 1 else min(upto - 1, lo + per - 1)
        layout = "t%d p%d d%d v%d%s" % (a.tp, a.pp, a.dp, a.vp, " sp" if a.sp else "")
        rows.append((1.7e9 + 1000 * k, 1.7e9 + 1000 * k + 60 * (hi - lo + 1), run.W, b"node00",
                     layout.encode(), b"4242" if k else b"", b"", b"",
                     run.iterations[lo] - a.log_interval, run.iterations[hi]))
    j.resize(len(rows), axis=0)
    j[:] = np.array(rows, dtype=JOB_DTYPE)


def write_interval(f, run, n, stale=False):
    """Append log interval n (and its evaluation and sample, if any) and flush.  stale: rows of a
    launch killed after its last checkpoint, other numbers that a requeue's rows supersede."""
    it = run.iterations[n]
    x = 2.0 if stale else 1.0
    for k, v in run.metrics.items():
        append(f["metrics"][k], v[n] + 0.7 if stale and k == "lm_loss" else
               v[n] / x if stale and k in ("tokens_per_second", "tflops_per_rank", "mfu") else v[n])
    append(f["timers/iteration"], it)
    append(f["timers/ms"], run.timers[n] * x)
    append(f["communication/iteration"], it)
    append(f["communication/bytes"], run.comm_bytes[n] * x)
    append(f["communication/calls"], run.comm_calls[n])
    for e, ei in enumerate(run.eval_iter):
        if ei == it:
            append(f["eval/iteration"], ei)
            append(f["eval/lm_loss"], run.eval_loss[e] + (0.7 if stale else 0))
            append(f["eval/ppl"], math.exp(run.eval_loss[e]))
    if it in run.sample_iters:
        s = run.sample_iters.index(it)
        append(f["memory/timeline_iteration"], it)
        append(f["memory/timeline"], run.timeline[s] * int(x))
        if not run.a.no_pipeline:
            ev = run.events[s].copy()
            for field in ("start", "end", "wait"):
                ev[field] *= x
            append(f["pipeline/iteration"], it)
            append(f["pipeline/events"], ev)
            append(f["pipeline/bubble_measured"], run.bubble[s] * x)
            append(f["pipeline/bubble_replayed"], run.bubble_replayed)
    write_jobs(f, run, n + 1)
    f.flush()


def intervals_in_order(a):
    """(interval, stale) in the order the rows are written: with --requeue the first launch
    checkpoints after interval N/2 - 1, logs two more intervals and is killed; the second
    launch logs from interval N/2 on."""
    if not a.requeue:
        return [(n, False) for n in range(a.intervals)]
    c = a.intervals // 2
    return [(n, False) for n in range(c)] + [(n, True) for n in range(c, min(c + 2, a.intervals))] + \
        [(n, False) for n in range(c, a.intervals)]


def main():
    a = parse_args()
    run = Run(a)
    if a.truth:
        with open(a.truth, "w") as fp:
            json.dump(run.truth(), fp, indent=1)
    f = h5py.File(a.out, "w", libver="latest")
    write_static(f, run)
    create_growing(f, run)
    order = intervals_in_order(a)
    if a.crash_plain:
        write_interval(f, run, *order[0])
        os.kill(os.getpid(), signal.SIGKILL)
    if a.live or a.crash_after:
        first = max(1, a.crash_after) if a.crash_after else 1
        f.swmr_mode = True
        for n, stale in order[:first]:
            write_interval(f, run, n, stale)
        if a.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)
        print("ready", flush=True)
        k = first
        while k < len(order) and sys.stdin.readline():
            write_interval(f, run, *order[k])
            k += 1
            print("appended %d" % k, flush=True)
        f.close()
        return
    for n, stale in order:
        write_interval(f, run, n, stale)
    f.close()


if __name__ == "__main__":
    main()
