# figures.py: what ptdp-plot draws.  Each figure is two functions: data_NAME(rf) returns the
# numbers the figure shows (plain lists and numbers, so that --dump-data can write them and the
# tests can check them against the file) or raises Skip with the reason; draw_NAME(data, title,
# path) draws them.  This file covers loss, throughput, timers and communication; the pipeline
# and memory figures are in figures_schedule.py.  The build puts runfile.py in front.
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
except ImportError as exc:
    sys.stderr.write("%s: cannot import matplotlib (%s); install Debian's python3-matplotlib\n"
                     % (os.path.basename(sys.argv[0]), exc))
    sys.exit(2)

FIGSIZE = (16, 9)  # inches at 100 dpi: 1600 x 900 pixels
DPI = 100
plt.rcParams.update({"font.size": 13, "axes.titlesize": 14, "axes.labelsize": 13,
                     "legend.fontsize": 11, "figure.titlesize": 15, "xtick.labelsize": 12,
                     "ytick.labelsize": 12, "axes.grid": True, "grid.alpha": 0.3})
MANY_RANKS = 16  # above this, per-rank bars become min / mean / max over ranks


class Skip(Exception):
    """This figure has nothing to show (the reason is printed; the other figures go on)."""


def _list(a):
    return np.asarray(a).tolist()


def nanmax(a, axis=None):
    """Max ignoring NaN (ranks or communicators without a value); NaN where all are NaN, and no
    warning about it."""
    a = np.asarray(a, dtype=float)
    return np.fmax.reduce(a.ravel() if axis is None else a, axis=0 if axis is None else axis)


def nanmin(a, axis=None):
    a = np.asarray(a, dtype=float)
    return np.fmin.reduce(a.ravel() if axis is None else a, axis=0 if axis is None else axis)


def nanmean(a, axis):
    a = np.asarray(a, dtype=float)
    n = np.isfinite(a).sum(axis)
    return np.where(n > 0, np.where(np.isfinite(a), a, 0).sum(axis) / np.maximum(n, 1), np.nan)


def _figure(title, sub=None, **kw):
    fig, axes = plt.subplots(figsize=FIGSIZE, dpi=DPI, **kw)
    fig.suptitle(title + ("\n" + sub if sub else ""), fontweight="bold")
    return fig, axes


def _save(fig, path):
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def log_if_wide(ax, values):
    """Log scale on AX's y when the positive VALUES span more than two decades."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size and v.max() / v.min() > 100:
        ax.set_yscale("log")
        return True
    return False


def short(x):
    """A number in at most about five characters, without exponents down to 0.001."""
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return "%.0f" % x
    if abs(x) >= 0.001:
        return "%.3g" % x
    return "%.0e" % x


def rank_colors(n):
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


# ---------------------------------------------------------------- loss
def data_loss(rf):
    met = rf.series("metrics", ["iteration", "consumed_samples", "lm_loss"])
    if met is None or "lm_loss" not in met or "iteration" not in met:
        raise Skip("no logged interval yet (/metrics is empty)")
    seq = rf.cfg("seq_length")
    d = {"iteration": _list(met["iteration"]), "train_loss": _list(met["lm_loss"]), "tokens": None,
         "eval_iteration": [], "eval_loss": [], "eval_tokens": []}
    if seq and "consumed_samples" in met:
        d["tokens"] = _list(np.asarray(met["consumed_samples"], dtype=float) * seq)
    ev = rf.series("eval", ["iteration", "lm_loss"])
    if ev is not None and "lm_loss" in ev and "iteration" in ev:
        d["eval_iteration"] = _list(ev["iteration"])
        d["eval_loss"] = _list(ev["lm_loss"])
        if d["tokens"] is not None:  # tokens consumed at each evaluation, from the training log
            d["eval_tokens"] = _list(np.interp(ev["iteration"], met["iteration"], d["tokens"]))
    return d


def draw_loss(d, title, path):
    two = d["tokens"] is not None
    fig, axes = _figure(title, "language-model loss", ncols=2 if two else 1)
    axes = np.atleast_1d(axes)
    for ax, xkey, exkey, xlabel in ((axes[0], "iteration", "eval_iteration", "iteration"),
                                    (axes[-1], "tokens", "eval_tokens", "tokens consumed")):
        if xkey == "tokens" and not two:
            continue
        x = np.asarray(d[xkey], dtype=float)
        scale, unit = (1e9, " (billions)") if x.max() >= 1e9 else \
            (1e6, " (millions)") if x.max() >= 1e6 else (1e3, " (thousands)") if x.max() >= 1e3 else (1, "")
        if xkey == "iteration":
            scale, unit = 1, ""
        ax.plot(x / scale, d["train_loss"], "-o", ms=3, lw=2, label="train (mean over the log interval)")
        if d["eval_loss"]:
            ax.plot(np.asarray(d[exkey], dtype=float) / scale, d["eval_loss"], "s--", ms=7, lw=2,
                    label="validation")
        ax.set_xlabel(xlabel + unit)
        ax.set_ylabel("lm loss (nats per token)")
        ax.set_title("against " + ("iterations" if xkey == "iteration" else "tokens"))
        ax.legend()
    if not d["eval_loss"]:
        axes[0].text(0.99, 0.98, "no evaluation yet", transform=axes[0].transAxes, ha="right", va="top")
    fig.tight_layout()
    _save(fig, path)


# ---------------------------------------------------------------- throughput
def data_throughput(rf):
    met = rf.series("metrics", ["iteration", "tokens_per_second", "tflops_per_rank", "mfu", "ms_per_iteration"])
    if met is None or "iteration" not in met or "tokens_per_second" not in met:
        raise Skip("no logged interval yet (/metrics is empty)")
    d = {k: _list(v) for k, v in met.items()}
    d["peak_flops_per_rank"] = rf.cfg("peak_flops_per_rank")
    d["world_size"] = rf.cfg("world_size")
    return d


def draw_throughput(d, title, path):
    fig, (a0, a1) = _figure(title, "throughput (model FLOPs as Narayanan et al. eq. 3)", ncols=2)
    it = d["iteration"]
    a0.plot(it, d["tokens_per_second"], "-o", ms=4, lw=2, color="C0", label="tokens/s (whole run)")
    a0.set_xlabel("iteration")
    a0.set_ylabel("tokens per second (all ranks)")
    a0.set_title("tokens/s")
    a0.set_ylim(bottom=0)
    if "ms_per_iteration" in d:
        t0 = a0.twinx()
        t0.grid(False)
        t0.plot(it, d["ms_per_iteration"], ":", lw=2, color="C3", label="ms per iteration")
        t0.set_ylabel("ms per iteration", color="C3")
        t0.set_ylim(bottom=0)
        a0.legend(handles=a0.get_lines() + t0.get_lines(), loc="lower right")
    else:
        a0.legend(loc="lower right")
    handles = []
    if "tflops_per_rank" in d:
        handles += a1.plot(it, d["tflops_per_rank"], "-o", ms=4, lw=2, color="C2",
                           label="model TFLOP/s per rank")
        a1.set_ylim(bottom=0)
    a1.set_xlabel("iteration")
    a1.set_ylabel("TFLOP/s per rank")
    mfu = np.asarray(d.get("mfu", []), dtype=float)
    if mfu.size and np.isfinite(mfu).any():
        t1 = a1.twinx()
        t1.grid(False)
        handles += t1.plot(it, 100 * mfu, "--", lw=2, color="C1",
                           label="MFU (peak %.3g TFLOP/s per rank)" % ((d["peak_flops_per_rank"] or 0) / 1e12))
        t1.set_ylabel("MFU (% of peak)", color="C1")
        t1.set_ylim(bottom=0)
        a1.set_title("TFLOP/s per rank and MFU")
    else:
        a1.set_title("TFLOP/s per rank (MFU: peak-tflops not set)")
    if handles:
        a1.legend(handles=handles, loc="lower right")
    fig.tight_layout()
    _save(fig, path)


# ---------------------------------------------------------------- per-rank bars
def grouped_bars(ax, groups, values, ylabel, unit_div=1.0):
    """Bars of VALUES [G, W] (group g, rank r) grouped by G; one bar per rank up to MANY_RANKS
    ranks, else min / mean / max over ranks; each group's largest value written above it (small
    groups beside a large one would otherwise be unreadable; the caller's title says so).  Returns the bar centres [G, bars]
    and the labels."""
    values = np.asarray(values, dtype=float) / unit_div
    G, W = values.shape
    if W <= MANY_RANKS:
        series = [("rank %d" % r, values[:, r]) for r in range(W)]
    else:
        series = [("min over ranks", nanmin(values, 1)), ("mean over ranks", nanmean(values, 1)),
                  ("max over ranks", nanmax(values, 1))]
    n = len(series)
    width = 0.8 / n
    colors = rank_colors(n)
    centres = np.zeros((G, n))
    for i, (label, v) in enumerate(series):
        x = np.arange(G) - 0.4 + width * (i + 0.5)
        centres[:, i] = x
        ax.bar(x, v, width, label=label, color=colors[i], edgecolor="black", linewidth=0.4)
    top = nanmax(values, 1)
    for g in range(G):
        if np.isfinite(top[g]):
            ax.annotate(short(top[g]), (g, top[g]), xytext=(0, 4), textcoords="offset points",
                        ha="center", va="bottom", fontsize=11 if G <= 8 else 10)
    ax.set_ylim(0, max(nanmax(top) if np.isfinite(top).any() else 0, 1e-30) * 1.12)
    ax.set_xticks(np.arange(G))
    ax.set_xticklabels(groups, rotation=20 if G > 6 else 0, ha="right" if G > 6 else "center")
    ax.set_ylabel(ylabel)
    return centres, [s[0] for s in series]


# ---------------------------------------------------------------- timers
def intervals(rf, group, column, what):
    """The series names of /group and its rows per log interval: (names, iteration [N], column [N, W, K]);
    Skip when no interval is written yet (what names the series in the message)."""
    names = rf.strings(group + "/names")
    rows = rf.rows(group + "/iteration", group + "/" + column)
    if names is None or rows is None:
        raise Skip("no %s interval yet (/%s is empty)" % (what, group))
    return (names,) + tuple(rows)


def data_timers(rf):
    names, it, ms = intervals(rf, "timers", "ms", "timer")
    return {"names": names, "iteration": _list(it), "ms": _list(ms),
            "last_iteration": int(it[-1]), "last_ms": _list(ms[-1].T)}  # last_ms [T, W]


def draw_timers(d, title, path):
    fig, (a0, a1) = _figure(title, "timers: milliseconds per iteration, per rank", ncols=2,
                            gridspec_kw={"width_ratios": [1.25, 1]})
    grouped_bars(a0, d["names"], d["last_ms"], "ms per iteration")
    a0.set_title("interval ending at iteration %d (numbers: max over ranks)" % d["last_iteration"])
    a0.legend(ncol=2 if len(d["last_ms"][0]) > 4 else 1)
    ms = np.asarray(d["ms"], dtype=float)  # [N, W, T]
    it = d["iteration"]
    for k, name in enumerate(d["names"]):
        if not np.any(ms[:, :, k]):
            continue
        c = "C%d" % (k % 10)
        a1.plot(it, nanmax(ms[:, :, k], 1), marker="o", ms=4, lw=2, color=c, label=name,
                ls="-" if k < 10 else "--")  # colours repeat after ten timers: dashed then
    a1.set_xlabel("iteration (end of the log interval)")
    a1.set_ylabel("ms per iteration")
    if not log_if_wide(a1, ms):
        a1.set_ylim(bottom=0)
    a1.set_title("over the run: max over ranks")
    a1.legend(ncol=2, loc="best")
    fig.tight_layout()
    _save(fig, path)


# ---------------------------------------------------------------- communication
def data_communication(rf):
    names, it, by = intervals(rf, "communication", "bytes", "communication")
    ana = rf.read("communication/analytical_bytes")
    return {"names": names, "iteration": _list(it), "bytes": _list(by),
            "last_iteration": int(it[-1]), "last_bytes": _list(by[-1].T),  # [C, W]
            "analytical_bytes": None if ana is None else _list(np.asarray(ana).T)}  # [C, W]


def draw_communication(d, title, path):
    fig, (a0, a1) = _figure(title, "communication: bytes sent per iteration, per rank and communicator",
                            ncols=2, gridspec_kw={"width_ratios": [1.25, 1]})
    last = np.asarray(d["last_bytes"], dtype=float)
    ana = None if d["analytical_bytes"] is None else np.asarray(d["analytical_bytes"], dtype=float)
    top = max(nanmax(last), nanmax(ana) if ana is not None else 0)
    top = top if np.isfinite(top) else 0
    div, unit = byte_unit(top)
    centres, labels = grouped_bars(a0, d["names"], last, "%s per iteration" % unit, div)
    handles, _ = a0.get_legend_handles_labels()
    if ana is not None:
        if len(labels) == ana.shape[1]:  # one bar per rank: a tick on each
            a0.scatter(centres.ravel(), (ana / div).ravel(), marker="_", s=500, linewidths=3,
                       color="black", zorder=3)
        else:
            a0.scatter(centres[:, 1], nanmax(ana, 1) / div, marker="_", s=800, linewidths=3,
                       color="black", zorder=3)
        none = [n for k, n in enumerate(d["names"]) if not np.isfinite(ana[k]).any()]
        handles.append(Line2D([], [], marker="_", ms=18, mew=3, ls="", color="black",
                              label="analytical volume" + (" (none for %s)" % ", ".join(none) if none else "")))
    a0.legend(handles=handles, ncol=2 if len(handles) > 5 else 1)
    a0.set_title("interval ending at iteration %d (bars measured; numbers: max over ranks)" % d["last_iteration"])
    by = np.asarray(d["bytes"], dtype=float)  # [N, W, C]
    it = d["iteration"]
    top = nanmax(by) if by.size else 0
    div, unit = byte_unit(top if np.isfinite(top) else 0)
    for k, name in enumerate(d["names"]):
        amax = nanmax(ana[k]) if ana is not None else np.nan
        if not np.nansum(by[:, :, k]) and not (np.isfinite(amax) and amax > 0):
            continue
        c = "C%d" % (k % 10)
        a1.plot(it, nanmax(by[:, :, k], 1) / div, "-o", ms=3, lw=2, color=c, label="%s measured" % name)
        if np.isfinite(amax):
            a1.axhline(amax / div, color=c, ls="--", lw=1.5, label="%s analytical" % name)
    a1.set_xlabel("iteration (end of the log interval)")
    a1.set_ylabel("%s per iteration (max over ranks)" % unit)
    if not log_if_wide(a1, np.concatenate([nanmax(by, 1).ravel()] + ([nanmax(ana, 1)] if ana is not None else []))):
        a1.set_ylim(bottom=0)
    a1.set_title("over the run")
    a1.legend(ncol=2, loc="best")
    fig.tight_layout()
    _save(fig, path)
