#!/usr/bin/env python3
"""Compares two directories of .npy results without NumPy (the GPU machine
may have none): every REF/<name>.npy against GOT/<name>.npy, elementwise
|got - ref| <= atol + rtol * max|ref| (test/Inputs/tolerances.py's rule).

usage: compare_npy.py REF_DIR GOT_DIR TOLERANCE.json NAME
Prints one line; exits 1 on a mismatch.
"""
import ast
import json
import math
import os
import struct
import sys

FORMATS = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q", "|b1": "?"}


def load(path):
    data = open(path, "rb").read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"compare_npy: {path} is not an .npy file")
    major = data[6]
    size_bytes = 2 if major == 1 else 4
    header_len = int.from_bytes(data[8:8 + size_bytes], "little")
    start = 8 + size_bytes
    header = ast.literal_eval(data[start:start + header_len].decode("latin1"))
    fmt = FORMATS.get(header["descr"])
    if fmt is None or header["fortran_order"]:
        sys.exit(f"compare_npy: {path}: unsupported dtype {header['descr']}")
    count = math.prod(header["shape"]) if header["shape"] else 1
    body = data[start + header_len:]
    return header["shape"], struct.unpack("<%d%s" % (count, fmt),
                                          body[:count * struct.calcsize(fmt)])


def main():
    ref_dir, got_dir, tol_file, name = sys.argv[1:5]
    tol = json.load(open(tol_file))
    worst = 0.0
    names = sorted(f for f in os.listdir(ref_dir) if f.endswith(".npy"))
    if not names:
        sys.exit(f"compare_npy: {name}: no reference results in {ref_dir}")
    for f in names:
        rshape, ref = load(os.path.join(ref_dir, f))
        gshape, got = load(os.path.join(got_dir, f))
        if rshape != gshape:
            sys.exit(f"compare_npy: {name}/{f}: shape {gshape}, expected {rshape}")
        scale = max((abs(float(x)) for x in ref), default=0.0)
        bound = tol["atol"] + tol["rtol"] * scale
        for i, (r, g) in enumerate(zip(ref, got)):
            err = abs(float(g) - float(r))
            if not err <= bound:
                sys.exit(f"compare_npy: {name}/{f}[{i}]: {g} vs {r} "
                         f"(bound {bound:.3g})")
            if scale:
                worst = max(worst, err / scale)
    print(f"{name}: {len(names)} results agree (worst error / scale {worst:.1e})")


if __name__ == "__main__":
    main()
