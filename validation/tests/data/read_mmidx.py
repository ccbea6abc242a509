#!/usr/bin/env python3
"""read_mmidx.py PREFIX: an independent reader of Megatron's MMIDIDX .idx/.bin (written from
the documented layout, not from ptdp's code); prints the same text as mmidx_dump."""
import struct
import sys

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
          8: np.uint16}


def main(prefix):
    with open(prefix + ".idx", "rb") as f:
        idx = f.read()
    assert idx[:9] == b"MMIDIDX\x00\x00", "bad magic"
    (version,) = struct.unpack("<Q", idx[9:17])
    assert version == 1
    dtype = DTYPES[idx[17]]
    seqs, docs = struct.unpack("<QQ", idx[18:34])
    off = 34
    lengths = np.frombuffer(idx, np.int32, seqs, off)
    off += 4 * seqs
    pointers = np.frombuffer(idx, np.int64, seqs, off)
    off += 8 * seqs
    doc_idx = np.frombuffer(idx, np.int64, docs, off)
    assert off + 8 * docs == len(idx)
    data = np.memmap(prefix + ".bin", dtype=np.uint8, mode="r") if seqs else np.zeros(0, np.uint8)
    print("dtype=%s sequences=%d documents=%d" % (np.dtype(dtype).name, seqs, docs - 1))
    print("doc_idx:" + "".join(" %d" % v for v in doc_idx))
    size = np.dtype(dtype).itemsize
    for n, p in zip(lengths, pointers):
        toks = np.frombuffer(bytes(data[p:p + n * size]), dtype)
        print(" ".join(str(int(t)) for t in toks))


if __name__ == "__main__":
    main(sys.argv[1])
