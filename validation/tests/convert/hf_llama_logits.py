#!/usr/bin/env python3
"""Logits of a Hugging Face LlamaForCausalLM directory, computed in float64 by a numpy forward pass
written from Hugging Face's definition (modeling_llama.py: RMSNorm, rotary embedding with
rotate_half over the whole head, grouped-query attention by repeating each key/value head for its
num_attention_heads / num_key_value_heads queries, softmax scaled by 1/sqrt(head_dim), the MLP
down(silu(gate(x)) * up(x)), no biases, lm_head or the tied embedding), with the tensors read by
the independent reader st_read.py, compared with the logits ptdp computed on the same tokens.

    hf_llama_logits.py HF_DIR DUMP.h5 [--tol 1e-5] [--save FILE.npz]

DUMP.h5, the error norm and the tolerance as hf_gpt2_logits.py: `ptdp-train --debug-dump` of a run
from the converted checkpoint (finetune, no dropout), its /tokens and /step1/logits; max|ours -
ref| / max|ref| <= 1e-5 (fp32 sums near 1e-6 of the scale).  Nothing here knows Megatron-core's
layout: q rows in the interleaved rotation's order, gate and up exchanged or another rotary base
give errors of order 1 (the planted cases of test_convert_llama.sh).  --save writes the tokens and
these logits for validation/gpu/check_hf_export.py.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_read  # noqa: E402


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rotate_half(x):  # (x1, x2) -> (-x2, x1), the halves of each head
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rotary(x, theta):  # x [b, heads, s, hd]: position p turns pair (i, i + hd/2) by p theta^(-2i/hd)
    s, hd = x.shape[2], x.shape[3]
    inv = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.arange(s, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)  # [s, hd]
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def attention(x, T, p, cfg):  # x [b, s, h]
    b, s, h = x.shape
    nh, nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads") or cfg["num_attention_heads"]
    hd = cfg.get("head_dim") or h // nh
    theta = cfg.get("rope_theta", 10000.0)

    def heads(t, n):  # [b, s, n hd] -> [b, n, s, hd]
        return t.reshape(b, s, n, hd).transpose(0, 2, 1, 3)

    q = rotary(heads(x @ T[p + "self_attn.q_proj.weight"].T, nh), theta)
    k = rotary(heads(x @ T[p + "self_attn.k_proj.weight"].T, nkv), theta)
    v = heads(x @ T[p + "self_attn.v_proj.weight"].T, nkv)
    k, v = np.repeat(k, nh // nkv, axis=1), np.repeat(v, nh // nkv, axis=1)  # repeat_kv
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    ctx = (scores / scores.sum(-1, keepdims=True)) @ v
    return ctx.transpose(0, 2, 1, 3).reshape(b, s, nh * hd) @ T[p + "self_attn.o_proj.weight"].T


def silu(x):
    return x / (1.0 + np.exp(-x))


def logits(T, cfg, ids):  # ids [b, s] -> [b, s, V]
    eps = cfg.get("rms_norm_eps", 1e-6)
    x = T["model.embed_tokens.weight"][ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        x = x + attention(rms_norm(x, T[p + "input_layernorm.weight"], eps), T, p, cfg)
        y = rms_norm(x, T[p + "post_attention_layernorm.weight"], eps)
        mlp = silu(y @ T[p + "mlp.gate_proj.weight"].T) * (y @ T[p + "mlp.up_proj.weight"].T)
        x = x + mlp @ T[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, T["model.norm.weight"], eps)
    out = T["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else T["lm_head.weight"]
    return x @ out.T


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
    if cfg.get("hidden_act", "silu") != "silu" or cfg.get("rope_scaling") or cfg.get("attention_bias") or \
            cfg.get("mlp_bias"):
        print("FAIL: config.json asks for what this forward does not compute (hidden_act, rope_scaling, biases)")
        return 1
    T = {k: v.astype(np.float64) for k, v in st_read.read_dir(a.hf_dir)[0].items()}
    with h5py.File(a.dump, "r") as f:
        s, b = int(f.attrs["seq_length"]), int(f.attrs["micro_batch_size"])
        ids = np.asarray(f["tokens"])[0, :b, :s].astype(np.int64)  # micro-batch 0: samples 0 .. b-1
        ours = np.asarray(f["step1/logits"], dtype=np.float64)     # [s b, V], rows (position, sample)
    ref = logits(T, cfg, ids).transpose(1, 0, 2).reshape(s * b, -1)
    ours = ours[:, :ref.shape[1]]
    err = np.abs(ours - ref).max() / np.abs(ref).max()
    print("logits [%d x %d]: max|ptdp - numpy Llama| / max|ref| = %.3e (tolerance %.0e)" % (s * b, ref.shape[1], err,
                                                                                          a.tol))
    if a.save:
        np.savez(a.save, ids=ids, logits=ref.reshape(s, b, -1).transpose(1, 0, 2))
    return 0 if err <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
