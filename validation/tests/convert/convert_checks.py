#!/usr/bin/env python3
"""The checks and file edits of test_convert.sh and test_convert_bad.sh (numpy, h5py, and the
independent safetensors reader st_read.py; nothing of ptdp's).

    convert_checks.py same-model CKPT_A CKPT_B      every /model dataset of the two checkpoints'
                                                    files bit for bit equal (same names, shapes)
    convert_checks.py config HF_DIR                 config.json has GPT2LMHeadModel's keys
    convert_checks.py rounded HF32 HF16 bf16|fp16   every tensor of HF16 is the nearest-even
                                                    rounding of HF32's (numpy's own rounding)
    convert_checks.py widened HF16 HF32             every tensor of HF32 is HF16's widened exactly
    convert_checks.py hub HF_DIR OUT                OUT: HF_DIR as the hub's older files are: no
                                                    "transformer." prefix, the attention's mask
                                                    buffers, lm_head.weight (= wte), fp16
    convert_checks.py plant HF_DIR OUT KIND         OUT: HF_DIR with one planted mistake (KINDS)
    convert_checks.py edit HF_DIR KEY=JSON...       set keys of HF_DIR/config.json
    convert_checks.py unpad FILE                    rewrite FILE's header so that its data does
                                                    not start at a multiple of 8 (still valid)
"""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_read  # noqa: E402

KINDS = {
    "qkv_per_head": "c_attn's columns left in Megatron-core's per-head [q k v] order",
    "proj_untransposed": "attn.c_proj.weight stored [out, in] (not transposed as Conv1D)",
    "lm_head_untied": "lm_head.weight present and different from wte",
    "missing": "transformer.h.0.ln_2.bias left out",
    "extra": "an unknown tensor transformer.h.0.attn.q_norm.weight",
    "int32": "transformer.h.0.mlp.c_fc.bias stored as I32",
    "shape": "transformer.h.1.mlp.c_fc.weight with one column fewer",
    "duplicate": "two shards both holding transformer.wpe.weight (the index names both files)",
    "ambiguous": "h.0.ln_1.weight beside transformer.h.0.ln_1.weight, with other values (one weight, two names)",
    "nan": "transformer.h.1.mlp.c_fc.weight[3, 5] and transformer.ln_f.bias[0] NaN",
}


def ckpt_file(d):
    with open(os.path.join(d, "latest_checkpointed_iteration.txt")) as f:
        it = int(f.read().strip())
    return os.path.join(d, "iter_%07d" % it, "checkpoint.h5")


def model_datasets(path):
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        f["model"].visititems(lambda n, o: out.__setitem__(n, np.asarray(o)) if isinstance(o, h5py.Dataset) else None)
    return out


def same_model(a, b):
    A, B = model_datasets(ckpt_file(a)), model_datasets(ckpt_file(b))
    if set(A) != set(B):
        print("FAIL: different tensors: %s" % sorted(set(A) ^ set(B)))
        return 1
    bad = [n for n in A if A[n].shape != B[n].shape or not np.array_equal(A[n].view(np.uint32), B[n].view(np.uint32))]
    n = sum(x.size for x in A.values())
    print("%d /model datasets, %d elements: %d differ %s" % (len(A), n, len(bad), bad[:3]))
    return 1 if bad else 0


def config(d):
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    want = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
            "tie_word_embeddings": True}
    bad = {k: c.get(k) for k, v in want.items() if c.get(k) != v}
    for k in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "n_inner", "layer_norm_epsilon"):
        if not isinstance(c.get(k), (int, float)):
            bad[k] = c.get(k)
    print("config.json: %s" % ("the keys of GPT2LMHeadModel" if not bad else "FAIL %s" % bad))
    return 1 if bad else 0


def rounded(d32, d16, kind):
    T32, _ = st_read.read_dir(d32)
    T16, dt = st_read.read_dir(d16)
    want = "BF16" if kind == "bf16" else "F16"
    bad = [n for n in T32 if dt.get(n) != want]
    for n, x in T32.items():
        if kind == "fp16":
            r = x.astype(np.float16).astype(np.float32)  # numpy rounds to nearest even
        else:
            u = x.view(np.uint32).astype(np.uint64)
            r = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
        if n not in T16 or not np.array_equal(r.view(np.uint32), T16[n].astype(np.float32).view(np.uint32)):
            bad.append(n)
    print("%s: %d tensors, %d not the nearest-even rounding %s" % (kind, len(T32), len(bad), bad[:3]))
    return 1 if bad or set(T32) != set(T16) else 0


def widened(d16, d32):
    T16, _ = st_read.read_dir(d16)
    T32, _ = st_read.read_dir(d32)
    bad = [n for n in T16 if n not in T32 or
           not np.array_equal(T16[n].astype(np.float32).view(np.uint32), T32[n].view(np.uint32))]
    print("%d tensors, %d not widened exactly %s" % (len(T16), len(bad), bad[:3]))
    return 1 if bad or set(T16) != set(T32) else 0


def copy_dir(src, out):
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(src, out)
    for f in os.listdir(out):
        if f.endswith(".safetensors") or f.endswith(".index.json"):
            os.remove(os.path.join(out, f))
    T, dt = st_read.read_dir(src)
    with open(os.path.join(src, "config.json")) as f:
        return T, dt, json.load(f)


def hub(src, out):
    T, _, c = copy_dir(src, out)
    s, tensors = c["n_positions"], {}
    for n, x in T.items():
        tensors[n[len("transformer."):]] = ("F16", x)
        if n.endswith("ln_1.weight"):  # the causal mask buffer older GPT-2 files carry
            tensors[n[len("transformer."):-len("ln_1.weight")] + "attn.bias"] = ("F32", np.tril(np.ones((1, 1, s, s))))
    tensors["lm_head.weight"] = ("F16", T["transformer.wte.weight"])
    st_read.write_file(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
    return 0


def plant(src, out, kind):
    T, dt, c = copy_dir(src, out)
    tensors = {n: (dt[n], x) for n, x in T.items()}
    h, a = c["n_embd"], c["n_head"]
    extra = None
    if kind == "qkv_per_head":
        for n, (d, x) in tensors.items():
            if "c_attn" in n:  # column j h + a' hd + i  ->  a' 3 hd + j hd + i
                hd = h // a
                perm = [(col % h) // hd * 3 * hd + col // h * hd + col % hd for col in range(3 * h)]
                y = np.empty_like(x)
                y[..., perm] = x
                tensors[n] = (d, y)
    elif kind == "proj_untransposed":
        n = "transformer.h.0.attn.c_proj.weight"
        tensors[n] = (dt[n], T[n].T.copy())
    elif kind == "lm_head_untied":
        tensors["lm_head.weight"] = ("F32", T["transformer.wte.weight"] + 1)
    elif kind == "missing":
        del tensors["transformer.h.0.ln_2.bias"]
    elif kind == "extra":
        tensors["transformer.h.0.attn.q_norm.weight"] = ("F32", np.ones(h))
    elif kind == "int32":
        n = "transformer.h.0.mlp.c_fc.bias"
        tensors[n] = ("I32", T[n].astype(np.int32))
    elif kind == "shape":
        n = "transformer.h.1.mlp.c_fc.weight"
        tensors[n] = (dt[n], T[n][:, :-1].copy())
    elif kind == "ambiguous":
        n = "transformer.h.0.ln_1.weight"
        tensors[n[len("transformer."):]] = (dt[n], T[n] + 1)
    elif kind == "nan":
        for n, at in (("transformer.h.1.mlp.c_fc.weight", (3, 5)), ("transformer.ln_f.bias", (0,))):
            x = T[n].copy()
            x[at] = np.nan
            tensors[n] = (dt[n], x)
    elif kind == "duplicate":
        names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
        st_read.write_file(os.path.join(out, names[0]), tensors, {"format": "pt"})
        wpe = "transformer.wpe.weight"
        st_read.write_file(os.path.join(out, names[1]), {wpe: tensors[wpe]}, {"format": "pt"})
        wmap = {n: names[1] if n == wpe else names[0] for n in tensors}
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": wmap}, f)
        print("planted %s: %s" % (kind, KINDS[kind]))
        return 0
    else:
        print("unknown kind %r: %s" % (kind, ", ".join(KINDS)))
        return 2
    st_read.write_file(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"}, extra)
    print("planted %s: %s" % (kind, KINDS[kind]))
    return 0


def edit(d, pairs):
    p = os.path.join(d, "config.json")
    with open(p) as f:
        c = json.load(f)
    for kv in pairs:
        k, v = kv.split("=", 1)
        c[k] = json.loads(v)
    with open(p, "w") as f:
        json.dump(c, f, indent=2)
    return 0


def unpad(path):
    with open(path, "rb") as f:
        b = f.read()
    n = int.from_bytes(b[:8], "little")
    h = b[8:8 + n].rstrip(b" ")
    if (8 + len(h)) % 8 == 0:
        h += b" "
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b[8 + n:])
    return 0


def main(argv):
    cmds = {"same-model": (same_model, 2), "config": (config, 1), "rounded": (rounded, 3), "widened": (widened, 2),
            "hub": (hub, 2), "plant": (plant, 3), "unpad": (unpad, 1)}
    if argv and argv[0] == "edit" and len(argv) >= 3:
        return edit(argv[1], argv[2:])
    if not argv or argv[0] not in cmds or len(argv) - 1 != cmds[argv[0]][1]:
        print(__doc__)
        return 2
    return cmds[argv[0]][0](*argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
