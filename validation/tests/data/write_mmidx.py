#!/usr/bin/env python3
"""write_mmidx.py PREFIX DTYPE_CODE: an independent writer of Megatron's MMIDIDX .idx/.bin,
written from the documented layout (9-byte magic, u64 version 1, u8 dtype code, u64 sequence
count, u64 document-index count, int32 lengths, int64 byte pointers, int64 document indices).

Writes a fixed small dataset (documents with several sequences and an empty document) and
prints what mmidx_dump should print.  Other tests import write_docs(prefix, code, docs) to
write documents of their own (a document: a list of sequences, a sequence: a list of ids)."""
import struct
import sys

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}


def write_docs(prefix, code, docs):
    """Write PREFIX.bin/.idx holding docs (lists of sequences of token ids) in dtype code."""
    dtype = DTYPES[code]
    lengths, doc_idx = [], [0]
    with open(prefix + ".bin", "wb") as f:
        for d in docs:
            for s in d:
                f.write(np.asarray(s, dtype).tobytes())
                lengths.append(len(s))
            doc_idx.append(len(lengths))
    size = np.dtype(dtype).itemsize
    nbytes = np.asarray(lengths, np.int64) * size
    pointers = (np.cumsum(nbytes) - nbytes).astype(np.int64)  # byte offset of each sequence
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", code))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(np.asarray(lengths, np.int32).tobytes())
        f.write(pointers.tobytes())
        f.write(np.asarray(doc_idx, np.int64).tobytes())
    return lengths, doc_idx


def main(prefix, code):
    dtype = DTYPES[code]
    rng = np.random.default_rng(1234)
    hi = 120 if code in (1, 2) else 30000
    # documents as lists of sequences
    docs = [[rng.integers(0, hi, 7), rng.integers(0, hi, 1)], [], [rng.integers(0, hi, 300)],
            [rng.integers(0, hi, 0), rng.integers(0, hi, 5), rng.integers(0, hi, 2)]]
    lengths, doc_idx = write_docs(prefix, code, docs)
    print("dtype=%s sequences=%d documents=%d" % (np.dtype(dtype).name, len(lengths), len(docs)))
    print("doc_idx:" + "".join(" %d" % v for v in doc_idx))
    for d in docs:
        for s in d:
            print(" ".join(str(int(t)) for t in np.asarray(s, dtype)))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
