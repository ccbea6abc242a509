#!/usr/bin/env python3
"""ptdp-convert's export checked by Hugging Face's own packages: the GPU machines' image
has safetensors and transformers, which this machine has not.

    check_hf_export.py HF_DIR REF.npz [--tol 1e-4] [--device cuda|cpu]

HF_DIR and REF.npz come from validation/tests/convert/test_convert.sh run with
PTDP_HF_EXPORT_KEEP=DIR (on a machine with MPI and HDF5): DIR/hf is the fp32 export of the tiny
GPT it trains, DIR/hf-bf16 its bf16 export, DIR/ref.npz the first micro-batch's tokens (ids
[b, s]) and the logits [b, s, V] that both ptdp (to 1e-5) and the numpy GPT-2 of
hf_gpt2_logits.py compute on them; test_convert_llama.sh with the same variable adds
DIR/llama-hf and DIR/llama-ref.npz, a tiny Llama (RMSNorm, rope, SwiGLU, grouped-query
attention, untied) and the logits of hf_llama_logits.py.  Carry DIR to the GPU machine and run
this there, once for each pair.  Checks:
  1. safetensors.safe_open reads every file of HF_DIR (and of HF_DIR-bf16 when present) and its
     tensors equal, bit for bit, what our independent reader (validation/tests/convert/st_read.py)
     reads: two readers, one written by Hugging Face;
  2. transformers' AutoModelForCausalLM.from_pretrained(HF_DIR) is the class config.json names
     (GPT2LMHeadModel, LlamaForCausalLM) and loads every weight (no missing or unexpected keys
     but buffers: GPT-2's attention masks, Llama's rotary inv_freq) and its
     logits on the tokens equal REF's to --tol (max|diff| / max|ref|; 1e-4: a GPU's fp32 GEMMs
     without TF32, summing h..4h terms in another order, sit near 1e-6, and an error of layout
     gives order 1); AutoTokenizer loads the tokenizer's files when HF_DIR has them.
Exit 0 when all pass, 1 naming a failure, 77 when safetensors, transformers or torch is missing.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "convert"))
import st_read  # noqa: E402


def same_tensors(hf_dir):
    from safetensors import safe_open
    ours, _ = st_read.read_dir(hf_dir)
    seen = 0
    for path in sorted(glob.glob(os.path.join(hf_dir, "*.safetensors"))):
        with safe_open(path, framework="pt") as f:  # torch: numpy has no bfloat16
            for name in f.keys():
                theirs = f.get_tensor(name).float().numpy()  # widening is exact
                mine = ours[name]
                if mine.shape != theirs.shape or not np.array_equal(
                        np.asarray(mine, dtype=np.float32).view(np.uint32),
                        np.asarray(theirs, dtype=np.float32).view(np.uint32)):
                    print("FAIL: %s: safetensors and st_read.py read different %s" % (path, name))
                    return False
                seen += 1
    print("ok: safetensors reads %d tensors of %s, bit for bit what st_read.py reads" % (seen, hf_dir))
    return seen == len(ours)


def transformers_logits(hf_dir, ref, tol, device):
    import torch
    import transformers
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, info = transformers.AutoModelForCausalLM.from_pretrained(hf_dir, torch_dtype=torch.float32,
                                                                    output_loading_info=True)
    with open(os.path.join(hf_dir, "config.json")) as f:
        want_class = json.load(f)["architectures"][0]
    buffers = ("attn.bias", "masked_bias", "rotary_emb.inv_freq")
    bad = [k for k in list(info["missing_keys"]) + list(info["unexpected_keys"]) if not k.endswith(buffers)]
    if type(model).__name__ != want_class or bad:
        print("FAIL: %s loads as %s; missing or unexpected weights %s" % (hf_dir, type(model).__name__, bad[:5]))
        return False
    model = model.to(device).eval()
    ids = torch.from_numpy(ref["ids"]).to(device)
    with torch.no_grad():
        got = model(ids).logits.double().cpu().numpy()
    want = ref["logits"]
    err = np.abs(got - want).max() / np.abs(want).max()
    print("%s: transformers' logits [%s] against ptdp's reference: max|diff| / max|ref| = %.3e (tolerance %.0e)"
          % ("ok" if err <= tol else "FAIL", "x".join(map(str, got.shape)), err, tol))
    if os.path.exists(os.path.join(hf_dir, "vocab.json")) or os.path.exists(os.path.join(hf_dir, "tokenizer.json")):
        tok = transformers.AutoTokenizer.from_pretrained(hf_dir)
        print("ok: AutoTokenizer loads %s (%d tokens)" % (type(tok).__name__, len(tok)))
    return err <= tol


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hf_dir")
    ap.add_argument("ref")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--device", default=None)
    a = ap.parse_args()
    try:
        import safetensors  # noqa: F401
        import torch
        import transformers  # noqa: F401
    except ImportError as e:
        print("SKIP: %s" % e)
        return 77
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    good = same_tensors(a.hf_dir)
    bf16 = a.hf_dir.rstrip("/") + "-bf16"
    if os.path.isdir(bf16):
        good = same_tensors(bf16) and good
    good = transformers_logits(a.hf_dir, np.load(a.ref), a.tol, device) and good
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
