"""Helpers of make_runfile.py: the pipeline schedules' work orders, a simulation of their
timeline, and the activation bytes of one layer by ptdp(7)'s table (ACTIVATION MEMORY)."""
import numpy as np

TENSORS = ["layer_input", "ln1_mean", "ln1_rstd", "ln1_out", "qkv", "attn_probs",
           "attn_dropout_mask", "attn_probs_dropped", "attn_context", "attn_resid_mask",
           "ln2_input", "ln2_mean", "ln2_rstd", "ln2_out", "fc1_out", "gelu_out", "mlp_resid_mask"]


# ---------------------------------------------------------------- the schedule and its timeline
def rank_order(schedule, p, v, m, stage):
    """Work items of one pipeline stage, in order: (kind 0 forward / 1 backward, micro-batch, chunk)."""
    if schedule == "gpipe":
        return [(0, i, 0) for i in range(m)] + [(1, i, 0) for i in range(m)]
    total = m * v
    if schedule == "1f1b":
        warm = min(p - stage - 1, m)
    else:  # Megatron's interleaved 1F1B: more warmup forwards, chunk changes every p items
        warm = min((p - stage - 1) * 2 + (v - 1) * p, total)

    def fwd(k):
        return (0, (k // (p * v)) * p + k % p, (k // p) % v)

    def bwd(k):
        return (1, (k // (p * v)) * p + k % p, v - 1 - (k // p) % v)
    items = [fwd(k) for k in range(warm)]
    for i in range(total - warm):
        items += [fwd(warm + i), bwd(i)]
    items += [bwd(k) for k in range(total - warm, total)]
    return items


def simulate(orders, p, v, t_fwd, t_bwd, latency, rng, noise):
    """Run every stage's items with their dependencies (forward of virtual stage k after k-1's on
    the previous stage, backward after k+1's); return per stage the event rows (start, end, wait,
    kind, mb, chunk), every time in seconds since the stage's iteration began."""
    ptr = [0] * p
    free = [0.0] * p
    done = {}
    rows = [[] for _ in range(p)]
    last = p * v - 1
    while any(ptr[s] < len(orders[s]) for s in range(p)):
        moved = False
        for s in range(p):
            if ptr[s] >= len(orders[s]):
                continue
            kind, mb, c = orders[s][ptr[s]]
            k = c * p + s
            dep = ((0, mb, k - 1) if k > 0 else None) if kind == 0 else \
                ((1, mb, k + 1) if k < last else (0, mb, k))
            if dep is not None and dep not in done:
                continue
            ready = 0.0
            if dep is not None:
                dep_stage = dep[2] % p
                ready = done[dep] + (latency if dep_stage != s else 0.0)
            start = free[s]
            wait = max(0.0, ready - start)
            base = t_fwd if kind == 0 else t_bwd
            compute = base * (1.0 + noise * rng.uniform(-1, 1))
            end = start + wait + compute
            done[(kind, mb, k)] = end
            free[s] = end
            rows[s].append((start, end, wait, kind, mb, c))
            ptr[s] += 1
            moved = True
        assert moved, "schedule deadlocked"
    return rows


# ------------------------------------------------------------- activation bytes (ptdp(7)'s table)
def layer_tensor_bytes(a, paper):
    """Bytes one layer holds per micro-batch, per tensor, on one rank: ptdp's fp32 count or the
    paper's (2-byte activations, 1-byte masks; Korthikanti et al. Table 2)."""
    t, s, b, h, heads = a.tp, a.seq, a.mbs, a.hidden, a.heads
    n = s * b
    nl = n / t if a.sp else n
    f = 4 * h
    w = 2 if paper else 4
    att = heads * s * s * b / t
    d = {"layer_input": w * nl * h, "ln1_mean": 0 if paper else 4 * nl,
         "ln1_rstd": 0 if paper else 4 * nl, "ln1_out": w * nl * h, "qkv": 3 * w * n * h / t,
         "attn_probs": w * att, "attn_dropout_mask": att, "attn_probs_dropped": w * att,
         "attn_context": w * n * h / t, "attn_resid_mask": nl * h, "ln2_input": w * nl * h,
         "ln2_mean": 0 if paper else 4 * nl, "ln2_rstd": 0 if paper else 4 * nl,
         "ln2_out": w * nl * h, "fc1_out": w * n * f / t, "gelu_out": w * n * f / t,
         "mlp_resid_mask": nl * h}
    if a.recompute == "selective":
        for k in ("attn_probs", "attn_dropout_mask", "attn_probs_dropped"):
            d[k] = 0
    elif a.recompute == "full":
        d = {k: (v if k == "layer_input" else 0) for k, v in d.items()}
    return np.array([d[k] for k in TENSORS], dtype=np.float64)
