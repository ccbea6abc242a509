#!/usr/bin/env python3
"""An independent safetensors reader, written from the format's specification alone (struct, json,
numpy: not the safetensors package, and none of ptdp's code), to check the files ptdp-convert
writes.

    st_read.py check FILE_OR_DIR...   read every file (a directory: model.safetensors, or the shards
                                      its model.safetensors.index.json names), check it, print a line
                                      per file; exit 1 naming the first violation
    st_read.py dump FILE NAME         print one tensor's shape and first values

write_file() writes a file to the same specification, for the tests' planted and hub-style
inputs (never to check ptdp's files with).

The specification (huggingface/safetensors, README "Format"): 8 bytes, N, an unsigned
little-endian 64-bit integer; N bytes, a UTF-8 JSON object that starts with '{' and may be
padded at its end with spaces (0x20); then the data.  Each key but "__metadata__" names a tensor:
{"dtype": one of the format's names, "shape": [int...], "data_offsets": [BEGIN, END]}, byte
offsets relative to the start of the data, tensors row-major little-endian; "__metadata__" maps
strings to strings.  A valid file's tensors, sorted by offset, cover the data exactly with no hole
or overlap, and END - BEGIN is the product of the shape times the element size.  As the
reference writer does, ptdp pads the header so that the data starts at a
multiple of 8 bytes: checked here too (the reader alone would accept an unpadded file).
"""
import json
import os
import struct
import sys

import numpy as np

DTYPES = {  # name: (numpy dtype or None for bfloat16, bytes)
    "BOOL": ("?", 1), "U8": ("u1", 1), "I8": ("i1", 1), "F8_E5M2": ("u1", 1), "F8_E4M3": ("u1", 1),
    "I16": ("<i2", 2), "U16": ("<u2", 2), "F16": ("<f2", 2), "BF16": (None, 2),
    "I32": ("<i4", 4), "U32": ("<u4", 4), "F32": ("<f4", 4),
    "I64": ("<i8", 8), "U64": ("<u8", 8), "F64": ("<f8", 8),
}


class Invalid(Exception):
    pass


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise Invalid("a JSON object repeats a key")
    return dict(pairs)


def _is_count(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def parse(blob, name="file", aligned=True):
    """(entries, metadata, data_start) of the bytes of a whole file; Invalid on any violation."""
    if len(blob) < 8:
        raise Invalid("%s: %d bytes, fewer than the 8 of the header length" % (name, len(blob)))
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise Invalid("%s: header length %d exceeds the file" % (name, n))
    raw = blob[8:8 + n]
    if not raw.startswith(b"{"):
        raise Invalid("%s: the header does not start with '{'" % name)
    if aligned and (8 + n) % 8:
        raise Invalid("%s: the data starts at byte %d, not a multiple of 8" % (name, 8 + n))
    stripped = raw.rstrip(b" ")
    if aligned and len(raw) - len(stripped) > 7:
        raise Invalid("%s: %d bytes of padding, more than alignment needs" % (name, len(raw) - len(stripped)))
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as e:
        raise Invalid("%s: the header is not UTF-8 JSON: %s" % (name, e))
    if not isinstance(header, dict):
        raise Invalid("%s: the header is not an object" % name)
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise Invalid("%s: __metadata__ is not an object of strings" % name)
    data_len = len(blob) - 8 - n
    entries = []
    for key, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise Invalid("%s: tensor %r: the entry is not {dtype, shape, data_offsets}" % (name, key))
        if e["dtype"] not in DTYPES:
            raise Invalid("%s: tensor %r: unknown dtype %r" % (name, key, e["dtype"]))
        shape, off = e["shape"], e["data_offsets"]
        if not (isinstance(shape, list) and all(_is_count(d) for d in shape)):
            raise Invalid("%s: tensor %r: bad shape %r" % (name, key, shape))
        if not (isinstance(off, list) and len(off) == 2 and all(_is_count(o) for o in off) and off[0] <= off[1]):
            raise Invalid("%s: tensor %r: bad data_offsets %r" % (name, key, off))
        size = DTYPES[e["dtype"]][1]
        for d in shape:
            size *= d  # Python integers: no overflow
        if size != off[1] - off[0]:
            raise Invalid("%s: tensor %r: shape and dtype make %d bytes, data_offsets hold %d"
                          % (name, key, size, off[1] - off[0]))
        entries.append((off[0], off[1], key, e["dtype"], shape))
    entries.sort()
    at = 0
    for b, e, key, _, _ in entries:
        if b != at:
            raise Invalid("%s: tensor %r starts at %d, the previous tensor ends at %d (%s)"
                          % (name, key, b, at, "overlap" if b < at else "hole"))
        at = e
    if at != data_len:
        raise Invalid("%s: the tensors end at %d, the data has %d bytes" % (name, at, data_len))
    return entries, meta or {}, 8 + n


def tensor(blob, start, entry):
    """The numpy array (float32 for BF16, widened exactly) of one entry."""
    b, e, _, dtype, shape = entry
    raw = blob[start + b:start + e]
    np_dtype = DTYPES[dtype][0]
    if np_dtype is None:  # bfloat16: the high half of a float32
        a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.frombuffer(raw, dtype=np_dtype)
    return a.reshape(shape)


def read_file(path, aligned=True):
    """{name: array}, metadata, {name: dtype} of one file."""
    with open(path, "rb") as f:
        blob = f.read()
    entries, meta, start = parse(blob, path, aligned)
    return ({en[2]: tensor(blob, start, en) for en in entries}, meta, {en[2]: en[3] for en in entries})


def read_dir(path, aligned=True):
    """All tensors of a Hugging Face model directory (one file, or the index's shards); dtypes too."""
    index = os.path.join(path, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        with open(index) as f:
            wmap = json.load(f)["weight_map"]
        files = sorted(set(wmap.values()))
    out, dtypes = {}, {}
    for name in files:
        t, _, d = read_file(os.path.join(path, name), aligned)
        for k in t:
            if k in out:
                raise Invalid("%s: tensor %r is in two files" % (path, k))
            if os.path.exists(index) and wmap.get(k) != name:
                raise Invalid("%s: the index puts %r in %r, it is in %r" % (path, k, wmap.get(k), name))
        out.update(t)
        dtypes.update(d)
    if os.path.exists(index) and set(wmap) != set(out):
        raise Invalid("%s: the index and the files name different tensors" % path)
    return out, dtypes


def write_file(path, tensors, meta=None, header_extra=None):
    """Write {name: (dtype, array)} in order; header_extra: raw entries merged into the header."""
    header, data = {}, b""
    if meta is not None:
        header["__metadata__"] = meta
    for name, (dtype, a) in tensors.items():
        if dtype == "BF16":
            u = np.asarray(a, dtype="<f4").view("<u4")
            raw = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2").tobytes()  # nearest even
        else:
            raw = np.ascontiguousarray(a, dtype=DTYPES[dtype][0]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    header.update(header_extra or {})
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def main(argv):
    if len(argv) >= 2 and argv[0] == "check":
        for p in argv[1:]:
            try:
                t, d = read_dir(p) if os.path.isdir(p) else read_file(p)[0::2]
            except Invalid as e:
                print("INVALID: %s" % e)
                return 1
            kinds = sorted(set(d.values()))
            print("%s: %d tensors (%s), %d elements" % (p, len(t), ",".join(kinds), sum(a.size for a in t.values())))
        return 0
    if len(argv) == 3 and argv[0] == "dump":
        t, _, d = read_file(argv[1])
        a = t[argv[2]]
        print(argv[2], d[argv[2]], list(a.shape), a.reshape(-1)[:8])
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
