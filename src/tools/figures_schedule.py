# figures_schedule.py: ptdp-plot's pipeline timeline and activation-memory figures (data_NAME /
# draw_NAME pairs, as in figures.py, which the build puts in front of this file).

CHUNK_HATCH = ["", "//", "\\\\", "xx", "..", "++", "oo", "**"]
MAX_TIMELINE_RANKS = 32  # above this the pipeline figure shows the first rank of each stage


def _lighten(color, amount):
    """COLOR mixed with white: amount 0 keeps it, 1 gives white."""
    r, g, b, _ = matplotlib.colors.to_rgba(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount, 1.0)


def microbatch_colors(m):
    """One saturated colour per micro-batch (forward boxes lighten it): tab10, or beyond ten
    evenly spaced hues (tab20's pale half would read as forward boxes)."""
    if m <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(m)]
    return [matplotlib.colors.hsv_to_rgb((i / m, 0.8, 0.85)) for i in range(m)]


def rank_stage(rf, r):
    """Pipeline stage of world rank R from the grid and parallel-order, or None."""
    t, p, d = (rf.cfg(k) for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                   "data_parallel_size"))
    if None in (t, p, d):
        return None
    if rf.cfg("parallel-order", "tp-dp-pp") == "tp-pp-dp":
        return (r // t) % p
    return r // (t * d)


# ---------------------------------------------------------------- pipeline
def pipeline_samples(rf):
    rows = rf.rows("pipeline/iteration", "pipeline/events")
    if rows is None:
        raise Skip("no sampled pipeline iteration in the file (p = 1, or none sampled yet)")
    return rows


def data_pipeline(rf, sample=-1):
    """The boxes of one sampled iteration (default the last): every event of every rank, times
    in ms since the iteration began on that rank; with the bubbles measured, replayed and by
    formula."""
    its, ev = pipeline_samples(rf)
    iteration = int(its[sample])
    e = ev[sample]  # [W, I] compound: start, end, wait (s), kind, microbatch, chunk
    W = e.shape[0]
    stages = [rank_stage(rf, r) for r in range(W)]
    ranks = list(range(W))
    if W > MAX_TIMELINE_RANKS and None not in stages:  # one row per stage: its first rank
        ranks = [stages.index(s) for s in sorted(set(stages))]
    boxes = []
    for r in ranks:
        for i in range(e.shape[1]):
            x = e[r, i]
            if not (np.isfinite(x["start"]) and np.isfinite(x["end"])) or int(x["kind"]) not in (0, 1):
                continue  # an unused row (a rank with fewer items)
            boxes.append({"rank": r, "item": i, "kind": int(x["kind"]), "microbatch": int(x["microbatch"]),
                          "chunk": int(x["chunk"]), "start_ms": 1e3 * float(x["start"]),
                          "end_ms": 1e3 * float(x["end"]), "wait_ms": 1e3 * float(x["wait"])})
    if not boxes:
        raise Skip("the sampled iteration %d has no events" % iteration)
    d = {"iteration": iteration, "ranks": ranks, "world_size": W, "boxes": boxes,
         "stages": [stages[r] for r in ranks],
         "bubble_measured": None, "bubble_measured_mean": None, "bubble_replayed": None,
         "bubble_formula": rf.attr("pipeline", "bubble_formula"),
         "virtual_chunks": int(rf.cfg("virtual_pipeline_chunks", 1) or 1)}
    meas = rf.rows("pipeline/iteration", "pipeline/bubble_measured")
    if meas is not None and iteration in meas[0]:
        allr = np.asarray(meas[1][list(meas[0]).index(iteration)], dtype=float)
        d["bubble_measured"] = _list(allr[ranks])
        d["bubble_measured_mean"] = float(np.nanmean(allr))  # over every rank, as ptdp-compare
    rep = rf.rows("pipeline/iteration", "pipeline/bubble_replayed")
    if rep is not None and iteration in rep[0]:
        d["bubble_replayed"] = float(rep[1][list(rep[0]).index(iteration)])
    return d


def _pipeline_legend(ax, d, colors):
    handles = [Patch(facecolor=_lighten("C0", 0.55), edgecolor="black", label="forward (light)"),
               Patch(facecolor="C0", edgecolor="black", label="backward (dark)"),
               Patch(facecolor="0.85", edgecolor="0.5", hatch="...", label="blocked (waiting for a neighbour)")]
    chunks = sorted({b["chunk"] for b in d["boxes"]})
    if len(chunks) > 1:
        handles += [Patch(facecolor="white", edgecolor="black", hatch=CHUNK_HATCH[c % len(CHUNK_HATCH)],
                          label="chunk %d" % c) for c in chunks]
    if len(colors) <= 12:
        handles += [Patch(facecolor=c, edgecolor="black", label="micro-batch %d" % i) for i, c in enumerate(colors)]
    else:
        handles.append(Patch(facecolor="white", edgecolor="white", label="colour: micro-batch"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=min(len(handles), 8),
              fontsize=11, frameon=False)


def draw_pipeline(d, title, path):
    W = len(d["ranks"])
    row = {r: i for i, r in enumerate(d["ranks"])}
    m = 1 + max(b["microbatch"] for b in d["boxes"])
    colors = microbatch_colors(m)
    span = max(b["end_ms"] for b in d["boxes"])
    fig, ax = _figure(title, "pipeline schedule of iteration %d: one row per rank, time since the "
                      "iteration began on that rank" % d["iteration"])
    ms_per_px = span * 1.12 / (0.85 * FIGSIZE[0] * DPI)  # the axes take about 85% of the width
    for b in d["boxes"]:
        y = row[b["rank"]]
        c = colors[b["microbatch"]]
        if b["wait_ms"] > 0:
            ax.barh(y, b["wait_ms"], left=b["start_ms"], height=0.36, color="0.85", edgecolor="0.5",
                    hatch="...", linewidth=0.5)
        left = b["start_ms"] + b["wait_ms"]
        width = b["end_ms"] - left
        face = _lighten(c, 0.55) if b["kind"] == 0 else c
        ax.barh(y, width, left=left, height=0.8, color=face, edgecolor="black", linewidth=0.6,
                hatch=CHUNK_HATCH[b["chunk"] % len(CHUNK_HATCH)])
        label = ("F" if b["kind"] == 0 else "B") + str(b["microbatch"])
        if d["virtual_chunks"] > 1:
            label += ".%d" % b["chunk"]
        if width >= ms_per_px * (8.5 * len(label) + 4):  # about 8.5 px a character at 10 pt bold
            ax.text(left + width / 2, y, label, ha="center", va="center", fontsize=10,
                    color="black" if b["kind"] == 0 else "white", fontweight="bold",
                    bbox=dict(boxstyle="square,pad=0.1", fc=face, ec="none"))
    meas = d["bubble_measured"]
    for i in range(W):
        if meas is not None and np.isfinite(meas[i]):
            ax.text(span * 1.01, i, "bubble %.3f" % meas[i], va="center", fontsize=11)
    ax.set_xlim(0, span * 1.12)
    ax.set_ylim(W - 0.5, -0.5)  # rank 0 on top, as in the papers' figures
    ax.set_yticks(range(W))
    ax.set_yticklabels(["rank %d" % r + ("" if s is None else " (stage %d)" % s)
                        for r, s in zip(d["ranks"], d["stages"])])
    ax.set_xlabel("time since the iteration began on the rank (ms)")
    ax.grid(axis="y", alpha=0)
    notes = []
    if W < d["world_size"]:
        notes.append("first rank of each stage (of %d ranks)" % d["world_size"])
    if meas is not None:
        notes.append("measured bubble (blocked / compute) mean over ranks %.3f" % d["bubble_measured_mean"])
    if d["bubble_replayed"] is not None:
        notes.append("replayed %.3f" % d["bubble_replayed"])
    if d["bubble_formula"] is not None:
        notes.append("(p-1)/(v m) = %.3f" % d["bubble_formula"])
    ax.set_title(";  ".join(notes))
    _pipeline_legend(ax, d, colors)
    fig.tight_layout()
    _save(fig, path)


# ---------------------------------------------------------------- memory
def _per_layer(rf):
    """Measured bytes per global layer [G, K] (max and min over the ranks holding it), the
    layers' indices, and the tensor names; None when absent."""
    names, idx, lb = rf.strings("memory/tensor_names"), rf.read("memory/layer_index"), rf.read("memory/layer_bytes")
    if names is None or idx is None or lb is None:
        return None
    layers = sorted({int(g) for g in np.ravel(idx) if g >= 0})
    if not layers:
        return None
    hi = np.zeros((len(layers), len(names)))
    lo = np.full((len(layers), len(names)), np.inf)
    where = {g: i for i, g in enumerate(layers)}
    for r in range(idx.shape[0]):
        for l in range(idx.shape[1]):
            g = int(idx[r, l])
            if g < 0:
                continue
            v = np.asarray(lb[r, l], dtype=float)
            hi[where[g]] = np.maximum(hi[where[g]], v)
            lo[where[g]] = np.minimum(lo[where[g]], v)
    return layers, names, hi, lo


# the formulas for one layer: per tensor ([K] datasets) or only the total (attributes of /memory)
FORMULAS = (("paper", "memory/formula_bytes", "formula_layer_bytes_paper"),
            ("ptdp", "memory/formula_ptdp_bytes", "formula_layer_bytes_ptdp"))
PER_RANK = ("peak_activation_bytes", "weight_bytes", "gradient_bytes", "optimizer_bytes", "allocated_bytes",
            "peak_bytes")


def data_memory(rf):
    d = {"layers": None, "tensor_names": None, "layer_bytes_max": None, "layer_bytes_min": None,
         "formula": {}, "per_rank": {}, "timeline": None}
    pl = _per_layer(rf)
    if pl is not None:
        layers, names, hi, lo = pl
        d.update(layers=layers, tensor_names=names, layer_bytes_max=_list(hi), layer_bytes_min=_list(lo))
        for key, dataset, attr in FORMULAS:
            v = rf.read(dataset)
            total = rf.attr("memory", attr)
            if v is not None:
                d["formula"][key] = {"per_tensor": _list(v), "total": float(np.sum(v))}
            elif total is not None and np.isfinite(total):
                d["formula"][key] = {"per_tensor": None, "total": float(total)}
    for k in PER_RANK:
        v = rf.read("memory/" + k)
        if v is not None and np.isfinite(per_rank(v)).any():
            d["per_rank"][k] = _list(per_rank(v))
    tl = rf.rows("memory/timeline_iteration", "memory/timeline")
    if tl is not None:
        d["timeline"] = {"iteration": int(tl[0][-1]), "bytes": _list(per_rank(tl[1][-1]))}  # [W, I], NaN: none
    if pl is None and not d["per_rank"] and tl is None:
        raise Skip("no activation-memory statistics in the file (/memory is empty)")
    return d


def _draw_layers(ax, lax, d):
    names = d["tensor_names"]
    hi = np.asarray(d["layer_bytes_max"])
    rows = [hi[i] for i in range(len(d["layers"]))]
    labels = ["%d" % g for g in d["layers"]]
    totals = []  # formulas known only as a total: one plain bar each
    for key, label in (("ptdp", "ptdp\nformula"), ("paper", "paper\nformula")):
        f = d["formula"].get(key)
        if f is not None and f["per_tensor"] is not None:
            rows.append(np.asarray(f["per_tensor"], dtype=float))
            labels.append(label)
        elif f is not None:
            totals.append((label, f["total"]))
    rows = np.array(rows)
    div, unit = byte_unit(max([rows.sum(1).max()] + [t for _, t in totals]))
    keep = [k for k in range(len(names)) if np.any(rows[:, k] > 0)]
    cmap = plt.get_cmap("tab20")
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for j, k in enumerate(keep):
        ax.bar(x, rows[:, k] / div, 0.75, bottom=bottom, color=cmap(j % 20), edgecolor="black",
               linewidth=0.3, label=names[k])
        bottom += rows[:, k] / div
    for j, (label, total) in enumerate(totals):
        ax.bar(len(rows) + j, total / div, 0.75, color="0.8", edgecolor="black", hatch="//",
               label="formula total" if j == 0 else None)
        labels.append(label)
    x = np.arange(len(rows) + len(totals))
    bottom = np.concatenate([bottom, [t / div for _, t in totals]])
    nl = len(d["layers"])
    if nl < len(x):
        ax.axvline(nl - 0.5, color="black", lw=1.5, ls="--")
    if len(x) <= 24:
        for xi, tot in zip(x, bottom):
            ax.text(xi, tot, "%.3g" % tot, ha="center", va="bottom", fontsize=10)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=11 if len(x) <= 16 else 8)
    ax.set_xlabel("global layer index (measured, max over the ranks holding it) | one layer by\n"
                  "ptdp's fp32 count and by Korthikanti et al.'s formula (2-byte activations)")
    ax.set_ylabel("%s per layer per micro-batch" % unit)
    ax.set_title("activations held for the backward pass, by tensor")
    lax.axis("off")
    h, l = ax.get_legend_handles_labels()
    lax.legend(h[::-1], l[::-1], loc="center left", fontsize=10, title="tensor", frameon=False)


def _draw_ranks(ax, d):
    pr = d["per_rank"]
    parts = [(k, lab) for k, lab in (("weight_bytes", "weights"), ("gradient_bytes", "gradients"),
                                     ("optimizer_bytes", "optimizer state"),
                                     ("peak_activation_bytes", "activations at peak")) if k in pr]
    W = len(next(iter(pr.values())))
    total = np.zeros(W)
    for k, _ in parts:
        total += np.nan_to_num(np.asarray(pr[k], dtype=float))
    top = nanmax([nanmax(total)] + [nanmax(pr[k]) for k in ("allocated_bytes", "peak_bytes") if k in pr])
    div, unit = byte_unit(top)
    bottom = np.zeros(W)
    colors = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a"]  # Dark2: apart from the tensors' tab20
    for j, (k, lab) in enumerate(parts):
        v = np.asarray(pr[k], dtype=float) / div
        ax.bar(np.arange(W), v, 0.7, bottom=bottom, label=lab, color=colors[j], edgecolor="black", linewidth=0.4)
        bottom += v
    for k, label, color in (("allocated_bytes", "allocated (plan)", "black"), ("peak_bytes", "total at peak", "0.4")):
        if k in pr:
            ax.scatter(np.arange(W), np.asarray(pr[k], dtype=float) / div, marker="_", s=600,
                       linewidths=3, color=color, zorder=3, label=label)
    ax.set_xticks(np.arange(W))
    ax.set_xlabel("rank")
    ax.set_ylabel(unit)
    ax.set_ylim(0, top / div * 1.45)  # room for the legend above the bars
    ax.set_title("memory per rank")
    ax.legend(fontsize=10, ncol=2, loc="upper center")


def _draw_timeline(ax, d, peaks):
    tl = np.asarray(d["timeline"]["bytes"], dtype=float)  # [W, I]
    div, unit = byte_unit(nanmax(tl) if np.isfinite(tl).any() else 0)
    groups = {}  # ranks with the same timeline (e.g. the TP ranks of a stage) share one line
    for r in range(tl.shape[0]):
        if np.isfinite(tl[r]).any():
            groups.setdefault(tuple(np.nan_to_num(tl[r], nan=-1.0)), []).append(r)
    colors = rank_colors(len(groups))
    positive = tl[tl > 0]
    # a last stage holding the logits can dwarf the others: then a log axis, zero drawn at a floor
    floor = positive.min() / 2 / div if positive.size and positive.max() / positive.min() > 30 else 0
    for j, (_, ranks) in enumerate(groups.items()):
        row = tl[ranks[0]]
        label = ("rank %d" if len(ranks) == 1 else "ranks %s") % (ranks[0] if len(ranks) == 1 else
                                                                  ", ".join(map(str, ranks)))
        y = np.maximum(np.concatenate([[0], row, row[-1:]]) / div, floor)  # repeated: the last level shows
        x = np.concatenate([np.arange(len(row) + 1), [len(row) + 0.6]])
        ax.step(x, y, where="post", lw=2.2, color=colors[j], label=label)
        if peaks is not None and len(groups) <= 8 and np.isfinite(peaks[ranks[0]]):
            ax.axhline(peaks[ranks[0]] / div, color=colors[j], ls=":", lw=1.2)
    ax.set_xlabel("schedule item on the rank (forward or backward of one micro-batch and chunk), "
                  "iteration %d" % d["timeline"]["iteration"])
    ax.set_ylabel("%s held" % unit + (" (log scale)" if floor else ""))
    ax.set_title("activation memory timeline: bytes held after each item" +
                 (" (dotted: the rank's peak)" if peaks is not None and len(groups) <= 8 else ""))
    ax.set_xlim(0, tl.shape[1] + 0.6)
    if floor:
        ax.set_yscale("log")
        ax.set_ylim(bottom=floor)
    else:
        ax.set_ylim(bottom=0)
    ax.legend(ncol=max(1, min(4, len(groups) // 4 + 1)), fontsize=10, loc="upper right")


def draw_memory(d, title, path):
    fig = plt.figure(figsize=(FIGSIZE[0], FIGSIZE[1] * 1.15), dpi=DPI)
    fig.suptitle(title + "\nactivation memory", fontweight="bold")
    gs = fig.add_gridspec(2, 3, width_ratios=[2.4, 0.55, 1.3], height_ratios=[1.15, 1])
    if d["layers"] is not None:
        _draw_layers(fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1]), d)
    if d["per_rank"]:
        _draw_ranks(fig.add_subplot(gs[0, 2]), d)
    if d["timeline"] is not None:
        _draw_timeline(fig.add_subplot(gs[1, :]), d, d["per_rank"].get("peak_activation_bytes"))
    fig.tight_layout()
    _save(fig, path)
