"""Compare a resumed run's debug dump with an uninterrupted run's over iterations FIRST..LAST.

usage: compare_resume.py REF.h5 RESUMED.h5 FIRST LAST (--exact | --rtol R)
--exact: losses, grad norms and learning rates bit for bit, and every final parameter too.
--rtol R: losses within R relative (grad norms too).  Prints the worst relative difference."""
import sys

import h5py
import numpy as np


def main():
    ref, res, first, last, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    with h5py.File(ref, "r") as a, h5py.File(res, "r") as b:
        sl = slice(first - 1, last)
        fails = 0
        for key in ("lm_loss", "grad_norm", "lr"):
            x, y = a[key][sl], b[key][sl]
            if np.any(y == 0):
                print(f"FAIL {key}: the resumed run recorded no value for some of iterations {first}..{last}")
                fails += 1
                continue
            rel = float(np.max(np.abs(x - y) / np.abs(x)))
            print(f"{key} iterations {first}..{last}: worst relative difference {rel:.3e}")
            if mode == "--exact" and not np.array_equal(x, y):
                print(f"FAIL {key} differs: {x} vs {y}")
                fails += 1
            if mode == "--rtol" and rel > float(sys.argv[6]) and key != "lr":
                print(f"FAIL {key} beyond {sys.argv[6]}")
                fails += 1
        if mode == "--exact":
            names = []
            a["final"].visit(lambda n: names.append(n) if isinstance(a["final"][n], h5py.Dataset) else None)
            diff = [n for n in names if not np.array_equal(a["final"][n][()], b["final"][n][()])]
            print(f"final parameters: {len(names) - len(diff)} of {len(names)} tensors bit-identical")
            fails += len(diff) > 0 or len(names) == 0
    sys.exit(1 if fails else 0)


main()
