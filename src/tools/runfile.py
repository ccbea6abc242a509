# runfile.py: reading a ptdp run file (format version 1, ptdp-runfile(5)) for ptdp-plot and
# ptdp-compare.  The build puts this file in front of each tool's own source (src/tools/local.mk),
# so an installed tool is one self-contained script.
#
# A run file may belong to a run that is still going (its datasets grow while we read: open with
# swmr=True and refresh each dataset before reading it; rows of datasets flushed together may
# differ by one, so series that belong together are cut to their common length) or to one that
# was killed (the file stays marked as open for writing: swmr=True still opens it if the run had
# switched to SWMR mode, otherwise only `h5clear -s FILE` helps).
import os
import sys

import numpy as np

try:
    import h5py
except ImportError as exc:  # checked here so that the message names the Debian package
    sys.stderr.write("%s: cannot import h5py (%s); install Debian's python3-h5py\n"
                     % (os.path.basename(sys.argv[0]), exc))
    sys.exit(2)

FORMAT = "ptdp-run"
FORMAT_VERSIONS = (1,)


class RunFileError(Exception):
    """A run file that cannot be read: the message says why and what to do."""


def _text(value):
    """An HDF5 string (fixed-length, NUL-padded: bytes in h5py) or number as Python text."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.rstrip(b"\0").decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return _text(value[()])
    return value if isinstance(value, str) else str(value)


def _scalar(value):
    """An attribute as int, float or text."""
    if isinstance(value, np.ndarray) and value.shape in ((), (1,)):
        value = value.reshape(())[()]
    if isinstance(value, (bytes, np.bytes_, str)):
        return _text(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _open(path):
    """h5py.File on PATH for reading: SWMR first (a run going on or killed after its first
    flush), then a plain open (a file written without SWMR)."""
    if not os.path.exists(path):
        raise RunFileError("%s: no such file" % path)
    if os.path.isdir(path):
        raise RunFileError("%s: is a directory, not a run file" % path)
    errors = []
    for kwargs in ({"swmr": True}, {}):
        try:
            return h5py.File(path, "r", **kwargs)
        except OSError as exc:
            errors.append(str(exc))
    text = " / ".join(errors)
    if "signature" in text:
        raise RunFileError("%s: not an HDF5 file (so not a ptdp run file)" % path)
    if "already open for write" in text or "SWMR" in text:
        raise RunFileError(
            "%s: the file is still marked as open for writing (its run was killed before the "
            "file switched to SWMR mode, or another program holds it open).  If no run writes "
            "it any more, clear the mark with `h5clear -s %s` (Debian package hdf5-tools) and "
            "try again.  (HDF5 said: %s)" % (path, path, errors[-1]))
    raise RunFileError("%s: cannot open: %s" % (path, errors[-1]))


def latest_rows(iterations):
    """Indices of the rows to use, in increasing iteration: the last row of each iteration (a
    requeued run appends again the iterations between its checkpoint and the kill,
    ptdp-runfile(5)), leaving out rows not written yet (iteration -1, the fill value)."""
    last = {}
    for i, it in enumerate(np.asarray(iterations).tolist()):
        if it >= 0:
            last[it] = i
    return np.array([last[it] for it in sorted(last)], dtype=np.int64)


def per_rank(values):
    """A per-rank array as float with the file's missing markers (-1 for integers, NaN) as NaN."""
    v = np.asarray(values, dtype=float)
    return np.where(v < 0, np.nan, v)


class RunFile:
    """One run file, opened for reading.  Missing or empty parts read as None, never raise."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.h5 = _open(path)
        root = self.h5.attrs
        fmt = _text(root["format"]) if "format" in root else None
        if fmt != FORMAT:
            self.h5.close()
            raise RunFileError("%s: not a ptdp run file (an HDF5 file, but %s)" % (
                path, "without the root attribute format" if fmt is None else
                "its root attribute format is %r, not %r" % (fmt, FORMAT)))
        version = _scalar(root["format_version"]) if "format_version" in root else None
        if version not in FORMAT_VERSIONS:
            self.h5.close()
            raise RunFileError("%s: run file format_version %r is not one this tool reads (%s); "
                               "use the ptdp-plot/ptdp-compare of the ptdp that wrote it"
                               % (path, version, ", ".join(str(v) for v in FORMAT_VERSIONS)))
        self.version = version
        cfg = self.h5["config"].attrs if "config" in self.h5 else {}
        self.config = {k: _scalar(cfg[k]) for k in cfg}

    def close(self):
        self.h5.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---------------------------------------------------------------- raw access
    def read(self, name):
        """The whole dataset NAME as an array (refreshed first when the file is open for SWMR),
        or None when it is absent or has no rows."""
        if name not in self.h5:
            return None
        ds = self.h5[name]
        if not isinstance(ds, h5py.Dataset):
            return None
        try:
            ds.refresh()
        except Exception:  # not opened for SWMR: nothing to refresh
            pass
        if ds.shape is None or (len(ds.shape) > 0 and ds.shape[0] == 0):
            return None
        return ds[()]

    def strings(self, name):
        """A dataset of fixed-length strings as a list of str, or None."""
        data = self.read(name)
        return None if data is None else [_text(s) for s in np.atleast_1d(data)]

    def attr(self, name, key, default=None):
        if name not in self.h5 or key not in self.h5[name].attrs:
            return default
        return _scalar(self.h5[name].attrs[key])

    def series(self, group, fields):
        """Columns FIELDS of a 1-D group (/metrics, /eval) cut to their common length, one row
        per iteration (see latest_rows), as a dict; fields that are absent are left out; None
        when no field has a row."""
        cols = {f: self.read("%s/%s" % (group, f)) for f in fields}
        cols = {f: np.asarray(c) for f, c in cols.items() if c is not None}
        if not cols:
            return None
        n = min(len(c) for c in cols.values())
        if n == 0:
            return None
        if "iteration" in cols:
            keep = latest_rows(cols["iteration"][:n])
            return {f: c[keep] for f, c in cols.items()} if len(keep) else None
        return {f: c[:n] for f, c in cols.items()}

    def rows(self, index_name, data_name):
        """(iteration [n], data [n, ...]) for a dataset indexed by an iteration dataset, cut to
        their common length, one row per iteration (see latest_rows); None when either is absent
        or empty."""
        it, data = self.read(index_name), self.read(data_name)
        if it is None or data is None:
            return None
        n = min(len(it), len(data))
        keep = latest_rows(np.asarray(it[:n]))
        return (np.asarray(it)[keep], data[keep]) if len(keep) else None

    # ---------------------------------------------------------------- the run's description
    def cfg(self, key, default=None):
        return self.config.get(key, default)

    def layout(self):
        """'t2 p2 d1 v2 sp' as the last launch's /jobs row says (it names distopt too), else
        from /config; '' when neither has it."""
        jobs = self.read("jobs")
        if jobs is not None and jobs.dtype.names and "layout" in jobs.dtype.names:
            text = _text(jobs["layout"][-1])
            if text:
                return text
        t, p, d = (self.cfg(k) for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                         "data_parallel_size"))
        if None not in (t, p, d):
            v = self.cfg("virtual_pipeline_chunks", 1) or 1
            sp = " sp" if int(self.cfg("sequence_parallel", 0) or 0) else ""
            dist = " distopt" if int(self.cfg("use_distributed_optimizer", 0) or 0) else ""
            return "t%d p%d d%d v%d%s%s" % (t, p, d, v, sp, dist)
        return ""

    def title(self):
        """The run named for a figure title: file, layout, schedule, micro-batches, recompute."""
        parts = [self.name, self.layout()]
        sched = self.cfg("pipeline_schedule")
        if sched and (self.cfg("pipeline_model_parallel_size", 1) or 1) > 1:
            parts.append(str(sched))
        b, m = self.cfg("micro_batch_size"), self.cfg("micro_batches")
        if b is not None:
            parts.append("b=%s" % b + (" m=%s" % m if m is not None else ""))
        rec = self.cfg("recompute_granularity")
        if rec and rec != "none":
            parts.append("recompute %s" % rec)
        return "  |  ".join(p for p in parts if p)


def open_or_exit(path, prog):
    """RunFile(path), or a one-line message on stderr and exit status 1."""
    try:
        return RunFile(path)
    except RunFileError as exc:
        sys.stderr.write("%s: %s\n" % (prog, exc))
        sys.exit(1)
    except (OSError, KeyError, ValueError) as exc:
        sys.stderr.write("%s: %s: cannot read the run file: %s\n" % (prog, path, exc))
        sys.exit(1)


def human_bytes(n):
    """1536 -> '1.5 KiB'."""
    if n is None or not np.isfinite(n):
        return ""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return ""


def byte_unit(maximum):
    """(divisor, name) of the binary unit that suits values up to MAXIMUM."""
    for power, name in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if maximum >= 1024 ** power:
            return 1024.0 ** power, name
    return 1.0, "B"
