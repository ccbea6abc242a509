#!/usr/bin/env python3
"""Logits of a Hugging Face GPT-2 directory, computed in float64 by a numpy forward pass written
from Hugging Face's GPT2LMHeadModel definition (modeling_gpt2.py: LayerNorm, Conv1D, gelu_new,
causal attention scaled by 1/sqrt(head size), logits = ln_f(x) wte^T), with the tensors read by
the independent reader st_read.py, compared with the logits ptdp computed on the same tokens.

    hf_gpt2_logits.py HF_DIR DUMP.h5 [--tol 1e-5] [--save FILE.npz]

DUMP.h5: `ptdp-train --debug-dump` of a run that started from the converted checkpoint (finetune,
no dropout): its /tokens and /step1/logits (the first micro-batch, rows in (position, sample)
order).  Error: max|ours - ref| / max|ref| over the logits (the norm of validation/reference:
fp32 matrix products over K = h..4h terms sit near 1e-6 of the scale; --tol 1e-5 leaves a factor
of ten).  Nothing here knows Megatron-core's layout: a wrong permutation of c_attn, a missing
transpose or another GELU gives errors of order 1 (the planted cases of test_convert.sh).
--save writes the tokens and these reference logits for validation/gpu/check_hf_export.py, which
repeats the comparison with transformers where it is installed.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_read  # noqa: E402


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_new(x):  # Hugging Face's NewGELUActivation
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def conv1d(x, T, name):  # Conv1D: x W + b, W stored [in, out]
    return x @ T[name + ".weight"] + T[name + ".bias"]


def attention(x, T, p, nh):  # x [b, s, h]
    b, s, h = x.shape
    hd = h // nh
    q, k, v = np.split(conv1d(x, T, p + "attn.c_attn"), 3, axis=-1)  # [q all heads | k | v]
    heads = lambda t: t.reshape(b, s, nh, hd).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    ctx = (scores / scores.sum(-1, keepdims=True)) @ v
    return conv1d(ctx.transpose(0, 2, 1, 3).reshape(b, s, h), T, p + "attn.c_proj")


def logits(T, cfg, ids):  # ids [b, s] -> [b, s, V]
    eps, nh = cfg.get("layer_norm_epsilon", 1e-5), cfg["n_head"]
    x = T["transformer.wte.weight"][ids] + T["transformer.wpe.weight"][np.arange(ids.shape[1])]
    for layer in range(cfg["n_layer"]):
        p = "transformer.h.%d." % layer
        x = x + attention(layer_norm(x, T[p + "ln_1.weight"], T[p + "ln_1.bias"], eps), T, p, nh)
        y = layer_norm(x, T[p + "ln_2.weight"], T[p + "ln_2.bias"], eps)
        x = x + conv1d(gelu_new(conv1d(y, T, p + "mlp.c_fc")), T, p + "mlp.c_proj")
    x = layer_norm(x, T["transformer.ln_f.weight"], T["transformer.ln_f.bias"], eps)
    return x @ T["transformer.wte.weight"].T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hf_dir")
    ap.add_argument("dump")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--save")
    a = ap.parse_args()
    import h5py
    with open(os.path.join(a.hf_dir, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        print("FAIL: activation_function %r is not the tanh GELU" % cfg.get("activation_function"))
        return 1
    T = {k: v.astype(np.float64) for k, v in st_read.read_dir(a.hf_dir)[0].items()}
    with h5py.File(a.dump, "r") as f:
        s, b = int(f.attrs["seq_length"]), int(f.attrs["micro_batch_size"])
        ids = np.asarray(f["tokens"])[0, :b, :s].astype(np.int64)  # micro-batch 0: samples 0 .. b-1
        ours = np.asarray(f["step1/logits"], dtype=np.float64)     # [s b, V], rows (position, sample)
    ref = logits(T, cfg, ids).transpose(1, 0, 2).reshape(s * b, -1)
    ours = ours[:, :ref.shape[1]]
    err = np.abs(ours - ref).max() / np.abs(ref).max()
    print("logits [%d x %d]: max|ptdp - numpy GPT-2| / max|ref| = %.3e (tolerance %.0e)" % (s * b, ref.shape[1], err,
                                                                                          a.tol))
    if a.save:
        np.savez(a.save, ids=ids, logits=ref.reshape(s, b, -1).transpose(1, 0, 2))
    return 0 if err <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
