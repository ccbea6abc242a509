#!/usr/bin/env python3
"""Reference check of a ptdp run against the same GPT written in PyTorch (float64).

    python3 gpt_torch.py DUMP.h5 [--tol 1e-5] [--final-tol 2e-3] [--quiet]

DUMP.h5 is what `ptdp-train DECK --debug-dump DUMP.h5` writes (src/train/dump.c).  The run must
use no dropout (hidden-dropout = attention-dropout = 0): ptdp's counter-based dropout masks cannot
be reproduced here.  The model below is GPT-2 as Megatron-LM builds it, written from torch.nn
primitives (nn.Embedding, nn.Linear, F.layer_norm, F.gelu(approximate='tanh'), F.softmax with a
causal mask, F.cross_entropy) with the initial weights of /init, all in float64.  Checks:

  (a) iteration 1: the logits of the first micro-batch (/step1/logits), the loss (/lm_loss[0]) and
      the gradient of every parameter (/step1/grads, averaged over the global batch);
  (b) every iteration of the run (train-iters AdamW steps, learning rates /lr, clipping clip_grad,
      weight decay weight_decay): the loss /lm_loss[i] (and the gradient norm /grad_norm[i]);
  (c) the parameters after the last iteration (/final).

Error norm, per tensor: rel = max|ours - ref| / max|ref|.  An elementwise relative error is
meaningless for entries near zero (a gradient entry of 1e-9 computed with fp32 rounding noise
of the tensor's scale, ~1e-7 * max|g|, has a relative error of order 1); what fp32 arithmetic
promises is an error relative to the scale of the tensor.  ptdp accumulates its matrix products
in fp32 over K = h..4h (64..256 here) and its reductions over s b tokens: the rounding error of
a sum of K terms grows like sqrt(K) eps_32 ~ 16 * 6e-8 ~ 1e-6 of the scale of the terms, so a
correct fp32 implementation sits near 1e-6 and 1e-5 (the tolerance, --tol) leaves a factor of
~10 (measured: 2e-7 to 9e-7); a wrong formula gives 1e-5 or, usually, far more (see below).

Tolerance of (c), --final-tol: after n Adam steps an entry has moved by
sum_i lr_i m_hat_i / (sqrt(v_hat_i) + eps): the step is ~lr_i whatever the size of the gradient,
so fp32 noise on an entry whose true gradient is (near) zero is turned into a movement of
lr_i min(1, |noise| / eps).  The clearest case is the key part of the QKV bias: its gradient is
exactly zero (adding b_k to every key shifts a whole row of scores by q.b_k, which the softmax
ignores), so fp64 leaves it where it was while ptdp's fp32 gradient, ~1e-11, moves it by
~lr 1e-11 / 1e-8 per step.  The difference is therefore measured against the largest possible
Adam displacement, sum_i lr_i, not against the tensor's scale: the table's "scale" column for
/final is sum_i lr_i and --final-tol bounds max|diff| / sum_i lr_i.  The tiny test measures
3.7e-4 (the key bias, ~2e-6 absolute) and every other tensor < 6e-5; the default 2e-3 leaves a
factor of 5 and still catches optimizer bugs.  Measured on the tiny test by breaking the
reference on purpose: weight decay on biases and LayerNorm too gives /final 0.1 (and /grad_norm
5e-4) while the losses move only 2e-6, so (c) is what pins the weight-decay rule; no clipping
gives losses 5e-4 and /final 0.45; the exact-erf GELU instead of the tanh form gives logits
1.1e-5 and gradients 6e-5.

Mapping of ptdp's (Megatron-core) names and layouts to this module (L = layer index):

  embedding.word_embeddings.weight        [V, h]   wte.weight  (V = vocab-size, the real
                                                   vocabulary: files hold no padding rows; the
                                                   output layer is tied: logits = lnf(x) wte^T)
  embedding.position_embeddings.weight    [P, h]   wpe.weight
  decoder.layers.L.input_layernorm.{weight,bias}   [h]      blocks[L].ln1_w / ln1_b
  decoder.layers.L.self_attention.linear_qkv.weight [3h, h] blocks[L].q / k / v .weight
        rows are ordered [head][q|k|v][head_dim] (Megatron's fused layout with one query group
        per head): row  a*3*hd + j*hd + d  is output d of head a of projection j (0 q, 1 k, 2 v).
        We split it into three nn.Linear(h, h) whose rows are [head][head_dim].
  decoder.layers.L.self_attention.linear_qkv.bias   [3h]    blocks[L].q / k / v .bias (same order)
  decoder.layers.L.self_attention.linear_proj.{weight [h, h], bias [h]}  blocks[L].proj
  decoder.layers.L.pre_mlp_layernorm.{weight,bias}  [h]     blocks[L].ln2_w / ln2_b
  decoder.layers.L.mlp.linear_fc1.{weight [f, h], bias [f]} blocks[L].fc1
        (with SwiGLU [2f, h] and [2f]: the gate's f rows, then the up projection's; one
        nn.Linear(h, 2f) whose output is chunked in two)
  decoder.layers.L.mlp.linear_fc2.{weight [h, f], bias [h]} blocks[L].fc2
  decoder.final_layernorm.{weight,bias}   [h]      lnf_w / lnf_b

Every weight is stored as torch stores nn.Linear.weight: [out_features, in_features], y = x W^T + b.
Activations are [s, b, h] as in Megatron; the logits of a micro-batch, [s, b, V] flattened to
[s b, V], have rows in (position, sample) order, as /step1/logits.

Exit status: 0 if every check passes, 1 otherwise, 2 on bad input.
"""
import argparse
import math
import sys

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


class Arch:
    """The architecture beyond the sizes, from the dump's attributes (0: GPT-2's choice)."""

    def __init__(self, at):
        self.rmsnorm = int(at.get("normalization", 0)) == 1
        self.rope = int(at.get("position_embedding_type", 0)) == 1
        self.learned_pos = int(at.get("position_embedding_type", 0)) == 0
        self.rotary_base = at.get("rotary_base", 10000.0)
        self.rotary_dim = int(at.get("rotary_dim", 0))
        self.rotary_interleaved = int(at.get("rotary_interleaved", 0)) == 1
        self.bias = int(at.get("disable_bias_linear", 0)) == 0
        self.untie = int(at.get("untie_embeddings", 0)) == 1
        self.groups = int(at.get("num_query_groups", 0))  # 0 (older dumps): one per head
        self.kv_channels = int(at.get("kv_channels", 0))  # 0 (older dumps): h / heads
        self.swiglu = int(at.get("swiglu", 0)) == 1  # fc1 [2f, h] holds [gate; up]
        # the mixture of experts (num_experts 0: dense), which layers have it (bit L of moe_layer_mask)
        self.experts = int(at.get("num_experts", 0))
        self.topk = int(at.get("moe_router_topk", 0))
        self.moe_ffn = int(at.get("moe_ffn_hidden_size", 0))
        self.sigmoid = int(at.get("moe_router_score_function", 0)) == 1
        self.pre_softmax = int(at.get("moe_router_pre_softmax", 0)) == 1
        self.topk_scaling = at.get("moe_router_topk_scaling_factor", 0.0)
        self.aux_loss = int(at.get("moe_aux_loss", 0)) == 1
        self.aux_coeff, self.z_coeff = at.get("moe_aux_loss_coeff", 0.0), at.get("moe_z_loss_coeff", 0.0)
        self.moe_mask = int(at.get("moe_layer_mask", 0))

    def moe_layer(self, L):
        return self.experts > 0 and (self.moe_mask >> L) & 1 == 1


def norm(x, w, b, eps, arch):
    """LayerNorm, or RMSNorm (x / sqrt(mean(x^2) + eps) w: no mean subtracted, no bias)."""
    if arch.rmsnorm:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def rotary(t, arch):
    """The rotary embedding of t [b, a, s, hd] at positions 0 .. s-1: the first rotary_dim columns
    of each head turn by pos base^(-2i/rd), pairs (i, i + rd/2) (Llama's rotate-half) or (2i, 2i+1)
    when interleaved (RoFormer's); angles in float64 here."""
    s, rd = t.shape[2], arch.rotary_dim
    inv = arch.rotary_base ** (-torch.arange(0, rd, 2, dtype=torch.float64) / rd)
    ang = torch.arange(s, dtype=torch.float64)[:, None] * inv[None, :]  # [s, rd/2]
    c, sn = torch.cos(ang), torch.sin(ang)
    rot, rest = t[..., :rd], t[..., rd:]
    if arch.rotary_interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        y = torch.stack([x1 * c - x2 * sn, x2 * c + x1 * sn], dim=-1).flatten(-2)
    else:
        x1, x2 = rot[..., :rd // 2], rot[..., rd // 2:]
        y = torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], dim=-1)
    return torch.cat([y, rest], dim=-1)


class Expert(nn.Module):
    """One expert of a mixture: the model's MLP, fc2(act(fc1 x))."""

    def __init__(self, h, ffn, arch):
        super().__init__()
        self.arch = arch
        self.fc1, self.fc2 = nn.Linear(h, 2 * ffn if arch.swiglu else ffn, arch.bias), nn.Linear(ffn, h, arch.bias)

    def forward(self, x):
        z = self.fc1(x)
        if self.arch.swiglu:
            gate, up = z.chunk(2, dim=-1)
            return self.fc2(F.silu(gate) * up)
        return self.fc2(F.gelu(z, approximate="tanh"))


class MoE(nn.Module):
    """Megatron-core's MoE layer with every expert local, dropless, written from its formulas:
    router logits l = x W_r^T [N, E] (no bias); softmax: p = softmax of the top-k logits, or with
    pre-softmax the top k of softmax(l); sigmoid: the top k of sigmoid(l) divided by their sum
    (+1e-20) when k > 1; times the top-k scaling factor; out[t] = sum_j p_tj expert_{e_tj}(x_t).
    Losses (Megatron's switch_load_balancing_loss_func and z_loss_func): aux = E coeff / (k N^2)
    sum_e (sum_t sa_te) c_e with sa = softmax(l) (sigmoid: sigmoid(l) / its sum) and c_e the
    tokens routed to e among the micro-batch's N (no gradient through the counts); z = coeff
    mean_t logsumexp(l_t)^2."""

    def __init__(self, h, arch):
        super().__init__()
        self.arch = arch
        self.router = nn.Linear(h, arch.experts, bias=False)
        self.experts = nn.ModuleList(Expert(h, arch.moe_ffn, arch) for _ in range(arch.experts))
        self.loss = 0.0

    def forward(self, y):  # y [s, b, h]
        a, E, k = self.arch, self.arch.experts, self.arch.topk
        x = y.reshape(-1, y.shape[-1])  # the N tokens in (position, sample) order
        N = x.shape[0]
        logits = self.router(x)
        if a.sigmoid:
            p, idx = torch.topk(torch.sigmoid(logits), k, dim=-1)
            if k > 1:
                p = p / (p.sum(-1, keepdim=True) + 1e-20)
        elif a.pre_softmax:
            p, idx = torch.topk(F.softmax(logits, dim=-1), k, dim=-1)
        else:
            top, idx = torch.topk(logits, k, dim=-1)
            p = F.softmax(top, dim=-1)
        if a.topk_scaling:
            p = p * a.topk_scaling
        out = torch.zeros_like(x)
        for e in range(E):
            tok, j = (idx == e).nonzero(as_tuple=True)
            if len(tok):
                out = out.index_add(0, tok, p[tok, j].unsqueeze(-1) * self.experts[e](x[tok]))
        self.loss = 0.0
        if a.aux_loss:
            sa = torch.sigmoid(logits) if a.sigmoid else F.softmax(logits, dim=-1)
            if a.sigmoid:
                sa = sa / (sa.sum(-1, keepdim=True) + 1e-20)
            counts = F.one_hot(idx, E).sum(dim=(0, 1)).to(x.dtype)
            self.loss = self.loss + (sa.sum(0) * counts).sum() * E * a.aux_coeff / (k * N * N)
        if a.z_coeff:
            self.loss = self.loss + a.z_coeff * (torch.logsumexp(logits, dim=-1) ** 2).mean()
        return out.view(y.shape)


class Block(nn.Module):
    """Pre-norm transformer layer: x + proj(attn(norm1 x)), then + fc2(gelu(fc1(norm2 x))) (or the
    mixture of experts' output)."""

    def __init__(self, h, heads, ffn, eps, arch, moe=False):
        super().__init__()
        self.h, self.heads, self.eps, self.arch = h, heads, eps, arch
        self.hd = arch.kv_channels or h // heads
        self.groups = arch.groups or heads  # key/value heads; heads // groups queries share each
        self.ln1_w = nn.Parameter(torch.ones(h))
        self.ln1_b = None if arch.rmsnorm else nn.Parameter(torch.zeros(h))
        bias, aw, kw = arch.bias, heads * self.hd, self.groups * self.hd
        self.q, self.k, self.v = nn.Linear(h, aw, bias), nn.Linear(h, kw, bias), nn.Linear(h, kw, bias)
        self.proj = nn.Linear(aw, h, bias)
        self.ln2_w = nn.Parameter(torch.ones(h))
        self.ln2_b = None if arch.rmsnorm else nn.Parameter(torch.zeros(h))
        self.moe = MoE(h, arch) if moe else None
        if not moe:
            self.fc1, self.fc2 = nn.Linear(h, 2 * ffn if arch.swiglu else ffn, bias), nn.Linear(ffn, h, bias)

    def attention(self, x):  # x [s, b, h]
        s, b, _ = x.shape

        def heads(t, n):  # [s, b, n hd] -> [b, n, s, hd]
            return t.view(s, b, n, self.hd).permute(1, 2, 0, 3)

        q, k, v = heads(self.q(x), self.heads), heads(self.k(x), self.groups), heads(self.v(x), self.groups)
        if self.arch.rope:
            q, k = rotary(q, self.arch), rotary(k, self.arch)
        hpg = self.heads // self.groups  # grouped-query attention: each key/value head serves hpg queries
        k, v = k.repeat_interleave(hpg, dim=1), v.repeat_interleave(hpg, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)  # [b, a, s, s]
        causal = torch.ones(s, s, dtype=torch.bool).triu(1)    # key after query: masked
        probs = F.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        ctx = (probs @ v).permute(2, 0, 1, 3).reshape(s, b, self.heads * self.hd)  # heads concatenated
        return self.proj(ctx)

    def forward(self, x):
        x = x + self.attention(norm(x, self.ln1_w, self.ln1_b, self.eps, self.arch))
        y = norm(x, self.ln2_w, self.ln2_b, self.eps, self.arch)
        if self.moe is not None:
            return x + self.moe(y)
        return x + self.fc2(self.activation(self.fc1(y)))

    def activation(self, z):
        """GELU (tanh form), or SwiGLU: silu(gate) * up, z's columns [gate | up] (fc1's rows
        [gate; up], Megatron's linear_fc1 with gated_linear_unit)."""
        if self.arch.swiglu:
            gate, up = z.chunk(2, dim=-1)
            return F.silu(gate) * up
        return F.gelu(z, approximate="tanh")


class GPT(nn.Module):
    def __init__(self, V, P, h, heads, ffn, layers, eps, arch):
        super().__init__()
        self.h, self.eps, self.arch = h, eps, arch
        self.wte = nn.Embedding(V, h)
        self.wpe = nn.Embedding(P, h) if arch.learned_pos else None
        self.blocks = nn.ModuleList(Block(h, heads, ffn, eps, arch, arch.moe_layer(L)) for L in range(layers))
        self.lnf_w = nn.Parameter(torch.ones(h))
        self.lnf_b = None if arch.rmsnorm else nn.Parameter(torch.zeros(h))
        self.out_w = nn.Parameter(torch.zeros(V, h)) if arch.untie else None

    def forward(self, tokens):  # tokens [s, b] -> logits [s, b, V]
        s = tokens.shape[0]
        x = self.wte(tokens)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(s))[:, None, :]
        for blk in self.blocks:
            x = blk(x)
        x = norm(x, self.lnf_w, self.lnf_b, self.eps, self.arch)
        return F.linear(x, self.out_w if self.out_w is not None else self.wte.weight)  # tied unless untied


# ---- name mapping: Megatron-core name <-> module tensors -----------------------------------------

def megatron_views(model, which, heads):
    """{Megatron name: tensor} built from the module's parameters (which = 'data' or 'grad'),
    in Megatron's layouts (fused QKV rows [head][q|k|v][head_dim]); tensors the architecture does
    not have (biases of RMSNorm or of disable-bias-linear, the position table with rotary
    positions, the untied output layer of a tied model) are left out."""
    get = (lambda p: p.detach()) if which == "data" else (lambda p: p.grad.detach())
    out = {"embedding.word_embeddings.weight": get(model.wte.weight),
           "decoder.final_layernorm.weight": get(model.lnf_w)}
    opt = {"embedding.position_embeddings.weight": model.wpe.weight if model.wpe is not None else None,
           "decoder.final_layernorm.bias": model.lnf_b, "output_layer.weight": model.out_w}
    out.update({n: get(p) for n, p in opt.items() if p is not None})
    for L, blk in enumerate(model.blocks):
        pre = "decoder.layers.%d." % L
        hd, h, g = blk.hd, blk.h, blk.groups
        hpg = heads // g
        w = torch.cat([get(blk.q.weight).view(g, hpg, hd, h), get(blk.k.weight).view(g, 1, hd, h),
                       get(blk.v.weight).view(g, 1, hd, h)], dim=1)  # [g, hpg + 2, hd, h]
        out[pre + "input_layernorm.weight"] = get(blk.ln1_w)
        out[pre + "self_attention.linear_qkv.weight"] = w.reshape(-1, h)
        out[pre + "self_attention.linear_proj.weight"] = get(blk.proj.weight)
        out[pre + "pre_mlp_layernorm.weight"] = get(blk.ln2_w)
        if blk.moe is not None:
            out[pre + "mlp.router.weight"] = get(blk.moe.router.weight)
            for e, ex in enumerate(blk.moe.experts):
                q = pre + "mlp.experts.local_experts.%d." % e
                out[q + "linear_fc1.weight"], out[q + "linear_fc2.weight"] = get(ex.fc1.weight), get(ex.fc2.weight)
                if blk.arch.bias:
                    out[q + "linear_fc1.bias"], out[q + "linear_fc2.bias"] = get(ex.fc1.bias), get(ex.fc2.bias)
        else:
            out[pre + "mlp.linear_fc1.weight"] = get(blk.fc1.weight)
            out[pre + "mlp.linear_fc2.weight"] = get(blk.fc2.weight)
        if blk.ln1_b is not None:
            out[pre + "input_layernorm.bias"] = get(blk.ln1_b)
            out[pre + "pre_mlp_layernorm.bias"] = get(blk.ln2_b)
        if blk.arch.bias:
            bb = torch.cat([get(blk.q.bias).view(g, hpg, hd), get(blk.k.bias).view(g, 1, hd),
                            get(blk.v.bias).view(g, 1, hd)], dim=1)       # [g, hpg + 2, hd]
            out[pre + "self_attention.linear_qkv.bias"] = bb.reshape(-1)
            out[pre + "self_attention.linear_proj.bias"] = get(blk.proj.bias)
            if blk.moe is None:
                out[pre + "mlp.linear_fc1.bias"] = get(blk.fc1.bias)
                out[pre + "mlp.linear_fc2.bias"] = get(blk.fc2.bias)
    return out


def load_megatron(model, group, heads):
    """Copy the datasets of an HDF5 group (Megatron names and layouts) into the module: the
    inverse of megatron_views."""
    def t(name):
        return torch.from_numpy(np.asarray(group[name], dtype=np.float64))

    with torch.no_grad():
        model.wte.weight.copy_(t("embedding.word_embeddings.weight"))
        if model.wpe is not None:
            model.wpe.weight.copy_(t("embedding.position_embeddings.weight"))
        if model.out_w is not None:
            model.out_w.copy_(t("output_layer.weight"))
        model.lnf_w.copy_(t("decoder.final_layernorm.weight"))
        if model.lnf_b is not None:
            model.lnf_b.copy_(t("decoder.final_layernorm.bias"))
        for L, blk in enumerate(model.blocks):
            pre = "decoder.layers.%d." % L
            hd, h, g = blk.hd, blk.h, blk.groups
            hpg = heads // g
            w = t(pre + "self_attention.linear_qkv.weight").view(g, hpg + 2, hd, h)
            blk.q.weight.copy_(w[:, :hpg].reshape(-1, h))
            blk.k.weight.copy_(w[:, hpg].reshape(-1, h))
            blk.v.weight.copy_(w[:, hpg + 1].reshape(-1, h))
            blk.ln1_w.copy_(t(pre + "input_layernorm.weight"))
            blk.proj.weight.copy_(t(pre + "self_attention.linear_proj.weight"))
            blk.ln2_w.copy_(t(pre + "pre_mlp_layernorm.weight"))
            if blk.moe is not None:
                blk.moe.router.weight.copy_(t(pre + "mlp.router.weight"))
                for e, ex in enumerate(blk.moe.experts):
                    q = pre + "mlp.experts.local_experts.%d." % e
                    ex.fc1.weight.copy_(t(q + "linear_fc1.weight"))
                    ex.fc2.weight.copy_(t(q + "linear_fc2.weight"))
                    if blk.arch.bias:
                        ex.fc1.bias.copy_(t(q + "linear_fc1.bias"))
                        ex.fc2.bias.copy_(t(q + "linear_fc2.bias"))
            else:
                blk.fc1.weight.copy_(t(pre + "mlp.linear_fc1.weight"))
                blk.fc2.weight.copy_(t(pre + "mlp.linear_fc2.weight"))
            if blk.ln1_b is not None:
                blk.ln1_b.copy_(t(pre + "input_layernorm.bias"))
                blk.ln2_b.copy_(t(pre + "pre_mlp_layernorm.bias"))
            if blk.arch.bias:
                bb = t(pre + "self_attention.linear_qkv.bias").view(g, hpg + 2, hd)
                blk.q.bias.copy_(bb[:, :hpg].reshape(-1))
                blk.k.bias.copy_(bb[:, hpg].reshape(-1))
                blk.v.bias.copy_(bb[:, hpg + 1].reshape(-1))
                blk.proj.bias.copy_(t(pre + "self_attention.linear_proj.bias"))
                if blk.moe is None:
                    blk.fc1.bias.copy_(t(pre + "mlp.linear_fc1.bias"))
                    blk.fc2.bias.copy_(t(pre + "mlp.linear_fc2.bias"))


def no_decay_names(model):
    """Biases and norm parameters: no weight decay (as Megatron and ptdp); the untied output layer
    out_w decays like the other weights."""
    norms = ("ln1_w", "ln1_b", "ln2_w", "ln2_b", "lnf_w", "lnf_b")
    return {n for n, p in model.named_parameters() if n.endswith("bias") or n.split(".")[-1] in norms}


# ---- one iteration -------------------------------------------------------------------------------

def iteration(model, samples, b, s, vocab):
    """Forward and backward of one global batch, samples [B, s+1] in consumption order.  As ptdp
    (and Megatron): micro-batch j holds samples j b .. j b + b - 1; its loss is the mean cross
    entropy over its s b tokens; the iteration's loss and gradient are the mean over the
    micro-batches (gradient accumulation with each micro-batch's loss scaled by 1 / m).
    Returns (loss, logits of micro-batch 0 as [s b, vocab] in (position, sample) order)."""
    B = samples.shape[0]
    m = B // b
    total, first = 0.0, None
    for j in range(m):
        mb = samples[j * b:(j + 1) * b]                    # [b, s+1]
        tokens, targets = mb[:, :s].t(), mb[:, 1:s + 1].t()  # [s, b]: inputs first s, targets last s
        logits = model(tokens)[:, :, :vocab]               # [s, b, vocab]: padding excluded, as ptdp
        loss = F.cross_entropy(logits.reshape(s * b, -1), targets.reshape(s * b))
        # the mixtures' load-balancing and z losses join the training loss (not the reported one)
        extra = sum(blk.moe.loss for blk in model.blocks if blk.moe is not None)
        ((loss + extra) / m).backward()
        total += loss.item() / m
        if j == 0:
            first = logits.detach().reshape(s * b, -1)
    return total, first


# ---- comparison ----------------------------------------------------------------------------------

class Table:
    def __init__(self, quiet):
        self.rows, self.failed, self.quiet = [], 0, quiet
        self.worst = {}

    def add(self, kind, name, ours, ref, tol, scale=None, unit="max|ref|"):
        ours = np.asarray(ours, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if ours.shape != ref.shape:
            self.rows.append((kind, name, float("nan"), float("nan"), float("inf"), tol, "FAIL (shape %s vs %s)"
                              % (ours.shape, ref.shape)))
            self.failed += 1
            return
        diff = float(np.max(np.abs(ours - ref))) if ours.size else 0.0
        if scale is None:
            scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        rel = diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
        ok = rel <= tol and np.all(np.isfinite(ours))
        self.failed += not ok
        self.rows.append((kind, name, diff, scale, rel, tol, "ok" if ok else "FAIL"))
        if rel >= self.worst.get(kind, (-1, ""))[0]:
            self.worst[kind] = (rel, name)

    def print(self):
        w = max(len(r[1]) for r in self.rows)
        print("%-6s %-*s %12s %12s %12s %9s  %s" % ("check", w, "tensor", "max|diff|", "scale", "relative", "tol", ""))
        for kind, name, diff, scale, rel, tol, st in self.rows:
            if self.quiet and st == "ok":
                continue
            print("%-6s %-*s %12.4e %12.4e %12.4e %9.1e  %s" % (kind, w, name, diff, scale, rel, tol, st))
        print("worst relative error per check:")
        for kind, (rel, name) in self.worst.items():
            print("  %-6s %.3e  (%s)" % (kind, rel, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump", help="HDF5 file written by ptdp-train --debug-dump")
    ap.add_argument("--tol", type=float, default=1e-5, help="relative tolerance of logits, losses, gradients")
    ap.add_argument("--final-tol", type=float, default=2e-3,
                    help="tolerance of the final parameters, as max|diff| / sum of the learning rates")
    ap.add_argument("--quiet", action="store_true", help="print only failing rows and the summary")
    ap.add_argument("--weights", metavar="CHECKPOINT",
                    help="take the initial weights from this ptdp checkpoint file (its /model group, Megatron-core "
                         "names as paths) instead of the dump's /init, and check that they are the weights the run "
                         "started from (a run with load and finetune)")
    args = ap.parse_args()

    f = h5py.File(args.dump, "r")
    at = {k: float(v) for k, v in f.attrs.items()}
    if at.get("hidden_dropout", 0) != 0 or at.get("attention_dropout", 0) != 0:
        print("error: the run used dropout; the reference needs hidden-dropout = attention-dropout = 0")
        return 2
    L, h, a = int(at["num_layers"]), int(at["hidden_size"]), int(at["num_attention_heads"])
    ffn, s, b = int(at["ffn_hidden_size"]), int(at["seq_length"]), int(at["micro_batch_size"])
    P, B = int(at["max_position_embeddings"]), int(at["global_batch_size"])
    vocab = int(at["vocab_size"])
    V = f["init"]["embedding.word_embeddings.weight"].shape[0]  # the real vocabulary: no padding in files
    eps, iters = at["layernorm_epsilon"], int(at["train_iters"])
    tokens = torch.from_numpy(np.asarray(f["tokens"], dtype=np.int64))  # [iters, B, s+1]
    lm_loss, lrs, gnorm = (np.asarray(f[k], dtype=np.float64) for k in ("lm_loss", "lr", "grad_norm"))
    print("reference check of %s: %d layers, h %d, %d heads, ffn %d, s %d, b %d, B %d, vocab %d, %d iterations"
          % (args.dump, L, h, a, ffn, s, b, B, V, iters))
    print("architecture: %s, %s positions%s, %s, %s" % (
        "RMSNorm" if at.get("normalization", 0) == 1 else "LayerNorm",
        {0: "learned", 1: "rotary", 2: "no"}[int(at.get("position_embedding_type", 0))],
        " (base %g, %d columns, %s)" % (at.get("rotary_base", 0), int(at.get("rotary_dim", 0)),
                                        "interleaved" if at.get("rotary_interleaved", 0) else "rotate-half")
        if at.get("position_embedding_type", 0) == 1 else "",
        "no linear biases" if at.get("disable_bias_linear", 0) else "linear biases",
        "untied output layer" if at.get("untie_embeddings", 0) else "tied output layer"))
    if at.get("swiglu", 0):
        print("SwiGLU MLP: fc1 [2 x %d, %d] = [gate; up]" % (ffn, h))
    if at.get("num_experts", 0):
        print("mixture of experts: %d experts of width %d, top %d, %s%s, aux-loss coeff %g, z-loss coeff %g, layers %s"
              % (int(at["num_experts"]), int(at["moe_ffn_hidden_size"]), int(at["moe_router_topk"]),
                 "sigmoid" if at.get("moe_router_score_function", 0) == 1 else
                 ("pre-softmax" if at.get("moe_router_pre_softmax", 0) else "softmax"),
                 " scaled by %g" % at["moe_router_topk_scaling_factor"] if at.get("moe_router_topk_scaling_factor")
                 else "", at.get("moe_aux_loss_coeff", 0), at.get("moe_z_loss_coeff", 0),
                 [L for L in range(L) if (int(at.get("moe_layer_mask", 0)) >> L) & 1]))
    if at.get("num_query_groups", a) != a:
        g = int(at["num_query_groups"])
        print("grouped-query attention: %d key/value groups of %d query heads" % (g, a // g))

    arch = Arch(at)
    model = GPT(V, P, h, a, ffn, L, eps, arch)
    if args.weights:
        ck = h5py.File(args.weights, "r")
        load_megatron(model, {n: ck["model/" + n.replace(".", "/")] for n in f["init"].keys()}, a)
        print("initial weights from the checkpoint %s (iteration %d)" % (args.weights, int(ck.attrs["iteration"])))
    else:
        load_megatron(model, f["init"], a)
    # sanity: the mapping round-trips
    back = megatron_views(model, "data", a)
    for name, t in back.items():
        if not np.array_equal(t.numpy(), np.asarray(f["init"][name], dtype=np.float64)):
            print("error: %s differs from the dump's /init%s" % (name, " (the checkpoint's weights are not the ones "
                  "the run started from)" if args.weights else ": the name/layout mapping does not round-trip"))
            return 2
    if set(back) != set(f["init"].keys()):
        print("error: parameter sets differ: %s" % sorted(set(back) ^ set(f["init"].keys())))
        return 2

    nd = no_decay_names(model)
    named = list(model.named_parameters())
    groups = [{"params": [p for n, p in named if n not in nd], "weight_decay": at["weight_decay"]},
              {"params": [p for n, p in named if n in nd], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=0.0, betas=(at["adam_beta1"], at["adam_beta2"]), eps=at["adam_eps"])
    params = [p for _, p in named]
    clip = at["clip_grad"]
    tab = Table(args.quiet)

    for it in range(iters):
        opt.zero_grad(set_to_none=False)
        loss, logits0 = iteration(model, tokens[it], b, s, vocab)
        if it == 0:
            tab.add("logits", "step1/logits", np.asarray(f["step1/logits"])[:, :vocab], logits0, args.tol)
            tab.add("loss", "lm_loss[1]", lm_loss[0], loss, args.tol)
            grads = megatron_views(model, "grad", a)
            for name in sorted(grads):
                tab.add("grad", name, f["step1/grads"][name], grads[name], args.tol)
        else:
            tab.add("loss", "lm_loss[%d]" % (it + 1), lm_loss[it], loss, args.tol)
        # global-norm clipping: coeff = clip / (norm + 1e-6), applied when < 1 (torch's rule too)
        norm = float(torch.nn.utils.clip_grad_norm_(params, clip)) if clip > 0 else \
            math.sqrt(sum(float((p.grad ** 2).sum()) for p in params))
        tab.add("norm", "grad_norm[%d]" % (it + 1), gnorm[it], norm, args.tol)
        for g in opt.param_groups:
            g["lr"] = float(lrs[it])  # the rate ptdp used at this iteration
        opt.step()

    if "final" in f:
        sum_lr = float(np.sum(lrs))
        final = megatron_views(model, "data", a)
        for name in sorted(final):
            tab.add("final", name, f["final"][name], final[name], args.final_tol, scale=sum_lr)
    tab.print()
    if "final" in f:
        fin = [r for r in tab.rows if r[0] == "final"]
        worst = max(fin, key=lambda r: r[2])
        print("final parameters: max|diff| = %.3e on %s, = %.3e x sum(lr) (sum(lr) = %.3e); relative to the"
              " tensor's max|ref|: %.3e" % (worst[2], worst[1], worst[4], float(np.sum(lrs)),
                                            worst[2] / float(np.max(np.abs(final[worst[1]].numpy())))))
    n = len(tab.rows)
    print("%d passed, %d failed" % (n - tab.failed, tab.failed))
    return 1 if tab.failed else 0


if __name__ == "__main__":
    sys.exit(main())
