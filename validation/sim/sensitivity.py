#!/usr/bin/env python3
"""How each term (collectives by topology, the DP reduction's overlaps, the stacks of
--implementation, flash attention) moves which kind of layout: ptdp-sim's iteration time for four
kinds of layout, with one term changed at a time against a base, as a change in percent.

usage: sensitivity.py PTDP_SIM HW_DIR [--before OLD_PTDP_SIM OLD_HW_DIR]

Layouts (bf16, dropout 0.1, seq 2048, vocab 51200):
  tp-across-nodes  39.1B (Narayanan et al.'s: 48 layers, h 8192, a 64) at t 16 p 4 d 8 on 512
                   A100s, B 1536, full recomputation (t beyond the 8-GPU node);
  dp-heavy         a 6.7B model (32 layers, h 4096, a 32) at t 2 p 1 d 16 on 32 A100s, B 64, b 2
                   (small batch: the gradient reduction is a large share);
  pipeline-heavy   175B (96 layers, h 12288, a 96) at t 8 p 8 v 3 on 64 A100s, B 64, b 1
                   (Korthikanti et al.'s layout), selective recomputation and SP;
  h100-today       175B at t 4 p 8 d 32 on 1024 H100s, B 1536, b 1, v 6, SP, distributed
                   optimizer, selective recomputation.
Base: --implementation megatron-2022, no overlaps (the H100 base: megatron-2022 on the H100 file).
Terms (each alone over the base): the all-reduce algorithm fixed to the ring (what auto gains by
the tree); overlap-grad-reduce; overlap-param-gather (with it); flash attention; megatron-core
(flash attention, Transformer Engine's epilogues, its GEMM rate); tp-comm-overlap (with
megatron-core).  --before: the same base layouts on an older ptdp-sim (its own defaults; keys it
does not know left out) and its hardware files, the change of every term together.
"""
import os, subprocess, sys

LAYOUTS = {
    "tp-across-nodes": ("dgx-a100-80gb.hw", {"num-layers": 48, "hidden-size": 8192, "num-attention-heads": 64,
                                             "tensor-model-parallel-size": 16, "pipeline-model-parallel-size": 4,
                                             "world-size": 512, "global-batch-size": 1536, "micro-batch-size": 1,
                                             "recompute-granularity": "full"}),
    "dp-heavy": ("dgx-a100-80gb.hw", {"num-layers": 32, "hidden-size": 4096, "num-attention-heads": 32,
                                      "tensor-model-parallel-size": 2, "world-size": 32, "global-batch-size": 64,
                                      "micro-batch-size": 2, "recompute-granularity": "selective"}),
    "pipeline-heavy": ("dgx-a100-80gb.hw", {"num-layers": 96, "hidden-size": 12288, "num-attention-heads": 96,
                                            "tensor-model-parallel-size": 8, "pipeline-model-parallel-size": 8,
                                            "num-layers-per-virtual-pipeline-stage": 4, "world-size": 64,
                                            "global-batch-size": 64, "micro-batch-size": 1,
                                            "recompute-granularity": "selective", "sequence-parallel": "true"}),
    "h100-today": ("dgx-h100.hw", {"num-layers": 96, "hidden-size": 12288, "num-attention-heads": 96,
                                   "tensor-model-parallel-size": 4, "pipeline-model-parallel-size": 8,
                                   "num-layers-per-virtual-pipeline-stage": 2, "world-size": 1024,
                                   "global-batch-size": 1536, "micro-batch-size": 1, "sequence-parallel": "true",
                                   "use-distributed-optimizer": "true", "recompute-granularity": "selective"}),
}
COMMON = {"seq-length": 2048, "max-position-embeddings": 2048, "vocab-size": 51200, "bf16": "true",
          "hidden-dropout": 0.1, "attention-dropout": 0.1}
BASE = {"implementation": "megatron-2022"}
TERMS = [
    ("all-reduce: ring only (what auto's tree saves)", {"allreduce-algorithm": "ring"}),
    ("overlap-grad-reduce", {"overlap-grad-reduce": "true"}),
    ("overlap-grad-reduce + overlap-param-gather", {"overlap-grad-reduce": "true", "overlap-param-gather": "true"}),
    ("attention-backend flash", {"attention-backend": "flash"}),
    ("implementation megatron-core", {"implementation": "megatron-core"}),
    ("megatron-core + tp-comm-overlap", {"implementation": "megatron-core", "tp-comm-overlap": "true"}),
]


def run(exe, hw, keys):
    cmd = [exe, "--hardware", hw] + [x for k, v in keys.items() for x in ("--" + k, str(v))]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"
    vals = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    return float(vals["iteration time (s)"].split()[0]), float(vals["memory per GPU (GB)"].split()[0])


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    exe, hwdir = args[0], args[1]
    before = args[args.index("--before") + 1:args.index("--before") + 3] if "--before" in args else None
    names = list(LAYOUTS)
    base = {}
    for n in names:
        hw, keys = LAYOUTS[n]
        base[n] = run(exe, os.path.join(hwdir, hw), {**COMMON, **keys, **BASE})
    print("| term | " + " | ".join(names) + " |")
    print("| --- | " + " | ".join("---" for _ in names) + " |")
    print("| base: iteration (s), memory (GB) | " +
          " | ".join("%.3f s, %.1f GB" % base[n] if base[n][0] else base[n][1] for n in names) + " |")
    for title, extra in TERMS:
        cells = []
        for n in names:
            hw, keys = LAYOUTS[n]
            t, m = run(exe, os.path.join(hwdir, hw), {**COMMON, **keys, **BASE, **extra})
            cells.append("%+.1f%% (%.1f GB)" % (100 * (t - base[n][0]) / base[n][0], m) if t else m)
        print("| %s | %s |" % (title, " | ".join(cells)))
    if before:
        cells = []
        for n in names:
            hw, keys = LAYOUTS[n]
            t, m = run(before[0], os.path.join(before[1], hw), dict(COMMON, **keys, **{"async-tp-allreduce": "true",
                                                                              "software-efficiency": 1.055}))
            cells.append("%.3f s -> %+.1f%%" % (t, 100 * (base[n][0] - t) / t) if t else m)
        print("| before these terms (same keys; older ptdp-sim, its H100 file) -> now | %s |" % " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
