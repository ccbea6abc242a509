#!/usr/bin/env python3
"""Compare two ptdp debug dumps (debug-dump = FILE): a run under test against a reference run.

    compare_dumps.py TEST.h5 REFERENCE.h5 [--loss-rtol 1e-5] [--param-tol 1e-5] [--groups final] [--top 8]

Checks (the layout of the file is described in src/train/dump.c):
  /lm_loss          per iteration, |a - b| / |b| <= loss-rtol
  /GROUP/NAME       for each GROUP (default: final), every parameter tensor,
                    max|a - b| / max|b| <= param-tol  (the error relative to the tensor's scale,
                    so entries near zero do not blow the ratio up)
Tensors whose first dimension is the padded vocabulary may differ in length between layouts
(padding is a multiple of make-vocab-size-divisible-by x t); then the real vocabulary rows
(attribute vocab_size) are compared.  A tensor or group present in one file only is a failure.

Prints a table of the worst cases and machine-readable lines
    WORST loss_rel=R (iteration I) param_rel=R (NAME)
    WORST_GROUP GROUP rel=R (NAME)          (one per group)
and exits 0 if every check passes, 1 if any fails, 2 on a usage or file error.
"""
import argparse
import sys

import numpy as np

try:
    import h5py
except ImportError:  # the harness runs us under $PYTHON3, which has h5py
    print("compare_dumps.py: needs h5py (run it with the suite's PYTHON3)", file=sys.stderr)
    sys.exit(2)


def rel_loss(a, b):
    """Per-iteration relative difference |a-b|/|b| (absolute where b is 0)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = np.where(b != 0, np.abs(b), 1.0)
    return np.abs(a - b) / scale


def tensor_rel(a, b):
    """max|a-b| / max|b| over the tensor (max|a-b| if b is all zeros); also the max |a-b|."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return (diff / scale if scale > 0 else diff), diff, scale


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("test", help="dump of the run under test")
    ap.add_argument("reference", help="dump of the reference run (e.g. one rank)")
    ap.add_argument("--loss-rtol", type=float, default=1e-5, help="relative tolerance on /lm_loss (default 1e-5)")
    ap.add_argument("--param-tol", type=float, default=1e-5,
                    help="tolerance on max|a-b|/max|b| per parameter tensor (default 1e-5)")
    ap.add_argument("--grad-tol", type=float, default=1e-5,
                    help="tolerance max|a-b|/max|b| for the step1/grads group (default 1e-5)")
    ap.add_argument("--groups", default="final",
                    help="comma-separated groups of parameter tensors to compare (default final; e.g. final,init)")
    ap.add_argument("--top", type=int, default=8, help="rows of the worst-case table (default 8)")
    args = ap.parse_args(argv)

    try:
        fa = h5py.File(args.test, "r")
        fb = h5py.File(args.reference, "r")
    except OSError as e:
        print(f"compare_dumps.py: cannot open a dump: {e}", file=sys.stderr)
        return 2

    failures = []
    rows = []  # (rel, what, shape, max|a-b|, scale, tol)

    # ---- per-iteration loss
    worst_loss, worst_it = 0.0, 0
    if "lm_loss" not in fa or "lm_loss" not in fb:
        failures.append("/lm_loss missing from " + (args.test if "lm_loss" not in fa else args.reference))
    else:
        la, lb = fa["lm_loss"][()], fb["lm_loss"][()]
        if la.shape != lb.shape:
            failures.append(f"/lm_loss has {la.shape[0]} iterations in the test, {lb.shape[0]} in the reference")
        else:
            if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
                failures.append("/lm_loss holds non-finite values")
            r = rel_loss(la, lb)
            if r.size:
                i = int(np.nanargmax(r)) if np.any(np.isfinite(r)) else 0
                worst_loss, worst_it = float(r[i]), i + 1
                for k in range(r.size):
                    rows.append((float(r[k]), f"lm_loss[iteration {k + 1}]", "", abs(la[k] - lb[k]), abs(lb[k]),
                                 args.loss_rtol))
                bad = np.nonzero(~(r <= args.loss_rtol))[0]
                if bad.size:
                    failures.append(f"/lm_loss differs at {bad.size} of {r.size} iterations (first: {bad[0] + 1}, "
                                    f"test {la[bad[0]]:.9g} vs reference {lb[bad[0]]:.9g})")

    # ---- parameter tensors
    vocab = int(fb.attrs.get("vocab_size", 0)) or int(fa.attrs.get("vocab_size", 0))
    worst_param, worst_name = 0.0, "-"
    group_worst = {}
    for g in [s for s in args.groups.split(",") if s]:
        if g not in fa or g not in fb:
            failures.append(f"group /{g} missing from " + (args.test if g not in fa else args.reference))
            continue
        names_a, names_b = set(fa[g].keys()), set(fb[g].keys())
        for n in sorted(names_a ^ names_b):
            failures.append(f"/{g}/{n} only in " + (args.test if n in names_a else args.reference))
        for n in sorted(names_a & names_b):
            a, b = fa[g][n][()], fb[g][n][()]
            note = ""
            if a.shape != b.shape:
                if a.ndim == b.ndim and a.shape[1:] == b.shape[1:] and vocab and min(a.shape[0], b.shape[0]) >= vocab:
                    a, b = a[:vocab], b[:vocab]
                    note = f" (first {vocab} rows)"
                else:
                    failures.append(f"/{g}/{n}: shape {a.shape} in the test, {b.shape} in the reference")
                    continue
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                failures.append(f"/{g}/{n}: non-finite values")
                continue
            rel, diff, scale = tensor_rel(a, b)
            tol = args.grad_tol if g.startswith("step1") else args.param_tol
            rows.append((rel, f"/{g}/{n}{note}", "x".join(map(str, a.shape)), diff, scale, tol))
            if rel > worst_param:
                worst_param, worst_name = rel, f"/{g}/{n}"
            if rel >= group_worst.get(g, (-1.0, ""))[0]:
                group_worst[g] = (rel, n)
            if not rel <= tol:
                failures.append(f"/{g}/{n}: max|a-b|/max|b| = {rel:.3e} > {tol:g}")

    # ---- report
    rows.sort(key=lambda r: -r[0] if np.isfinite(r[0]) else -np.inf)
    print(f"compare {args.test}\n   with {args.reference}")
    print(f"  {'relative':>10} {'max|a-b|':>10} {'scale':>10} {'tol':>8}  {'':4} what")
    for rel, what, shape, diff, scale, tol in rows[: args.top]:
        flag = "ok" if rel <= tol else "FAIL"
        print(f"  {rel:10.3e} {diff:10.3e} {scale:10.3e} {tol:8.1e}  {flag:4} {what} {shape}")
    print(f"WORST loss_rel={worst_loss:.3e} (iteration {worst_it}) param_rel={worst_param:.3e} ({worst_name})")
    for g, (rel, n) in group_worst.items():
        print(f"WORST_GROUP {g} rel={rel:.3e} ({n})")
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
