#!/usr/bin/env python3
"""Compares the .npy files of two directories, name for name.

usage: compare_npy.py EXPECTED_DIR ACTUAL_DIR [--tolerance KEY]
                      [--rtol R] [--atol A]

Each pair must have one shape, and |actual - expected| <= atol + rtol *
max|expected| elementwise (the scale is the tensor's largest magnitude, so
tiny elements of a large tensor are not judged on their own), with rtol and
atol from tolerances.py (--tolerance) or given directly. Prints a summary
and fails naming the first element that does not agree.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tolerances import TOLERANCES  # noqa: E402


def compare_dirs(expected, actual, rtol, atol, prog="compare_npy"):
    """Compares every .npy of `expected` with its namesake in `actual`;
    exits naming the first disagreement, else returns (files, worst error
    / scale)."""
    names = sorted(f for f in os.listdir(expected) if f.endswith(".npy"))
    if not names:
        sys.exit(f"{prog}: no .npy files in {expected}")
    worst = 0.0
    for name in names:
        e = np.load(os.path.join(expected, name)).astype(np.float64)
        path = os.path.join(actual, name)
        if not os.path.exists(path):
            sys.exit(f"{prog}: {path} is missing")
        a = np.load(path).astype(np.float64)
        if a.shape != e.shape:
            sys.exit(f"{prog}: {name}: shape {a.shape}, expected {e.shape}")
        scale = float(np.max(np.abs(e))) if e.size else 0.0
        err = np.abs(a - e)
        bound = atol + rtol * scale
        if e.size and not np.all(err <= bound):
            i = np.unravel_index(np.argmax(err - bound), e.shape)
            sys.exit(f"{prog}: {name}{list(i)}: {a[i]!r} vs expected "
                     f"{e[i]!r} (bound {bound:.3g})")
        if e.size and scale > 0:
            worst = max(worst, float(np.max(err)) / scale)
    return len(names), worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("expected")
    parser.add_argument("actual")
    parser.add_argument("--tolerance", choices=sorted(TOLERANCES))
    parser.add_argument("--rtol", type=float)
    parser.add_argument("--atol", type=float)
    args = parser.parse_args()
    tol = TOLERANCES[args.tolerance] if args.tolerance else {"rtol": 0.0, "atol": 0.0}
    rtol = tol["rtol"] if args.rtol is None else args.rtol
    atol = tol["atol"] if args.atol is None else args.atol
    files, worst = compare_dirs(args.expected, args.actual, rtol, atol)
    print(f"compare_npy: {files} files agree (worst error / scale "
          f"{worst:.2e})")


if __name__ == "__main__":
    main()
