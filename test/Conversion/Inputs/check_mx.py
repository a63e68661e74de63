#!/usr/bin/env python3
"""MX block quantization of a backend against a NumPy/ml_dtypes reference,
bit for bit.

usage: check_mx.py make INPUT_DIR
       check_mx.py check FORMAT DIM INPUT_DIR OUTPUT_DIR NAME

`make` writes arg0.npy, 256x64 f32 values whose blocks of 32 (along either
dimension) include: normal values at scales from 2^-120 to 2^120, all
zeros, subnormal amaxes, amaxes that are powers of two and ones just below
(where floor(log2) changes), values whose scaled magnitude passes the
format's largest (saturation), the largest f32, infinities and NaNs.

`check` recomputes anvil.fp8_quantize's definition (AnvilOps.td) for
blocks of 32 along DIM: per block X = 2^clamp(floor(log2 amax) - emax,
-127, 127) (NaN when the amax is not finite), y = f32(fp8(sat(x / X))) * X,
with the division and the product in f32 and ml_dtypes' conversion; and
compares OUTPUT_DIR/result0.npy with it: equal bits, NaN where the
reference is NaN. Prints one line; exits 1 on a difference.
"""
import sys

import ml_dtypes
import numpy as np

FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
BLOCK = 32


def make(directory):
    rng = np.random.default_rng(32)
    x = rng.standard_normal((256, 64))
    # Row groups of 8 (a block along dim 0 spans 32 rows: 4 groups).
    scales = np.exp2(rng.integers(-120, 121, (256, 1)))
    x = x * scales
    x[0:32, :] = 0.0                                    # zero blocks
    x[32:40, :] = rng.standard_normal((8, 64)) * 1e-40  # subnormal amaxes
    x[40:48, :] = np.exp2(rng.integers(-20, 20, (8, 64)))  # powers of two
    below = np.nextafter(np.float32(1.0), np.float32(0.0))
    x[48:56, :] = np.exp2(rng.integers(-20, 20, (8, 64))) * below
    x[56:64, :] = rng.choice([-1, 1], (8, 64)) * rng.uniform(1.75, 1.99, (8, 64))
    x[64, 3] = np.inf
    x[65, 40] = -np.inf
    x[66, 7] = np.nan
    x[67, :] = np.finfo(np.float32).max
    x[68, 10] = np.finfo(np.float32).tiny / 4            # one subnormal
    np.save(directory + "/arg0.npy", x.astype(np.float32))


def reference(x, fmt, dim):
    emax = {"e4m3": 8, "e5m2": 15}[fmt]
    largest = np.float32(ml_dtypes.finfo(FORMATS[fmt]).max)
    moved = np.moveaxis(x, dim, -1)
    blocks = moved.reshape(moved.shape[:-1] + (-1, BLOCK))
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(blocks), axis=-1, keepdims=True).astype(np.float64)
    _, e = np.frexp(amax)  # amax = m 2^e, m in [0.5, 1)
    exponent = np.where(amax > 0, e - 1 - emax, -127).clip(-127, 127)
    scale = np.ldexp(1.0, exponent).astype(np.float32)
    scale = np.where(np.isfinite(amax), scale, np.float32(np.nan)).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        q = (blocks / scale).astype(np.float32)
        q = np.where(np.isnan(q), q, np.clip(q, -largest, largest))
        q = q.astype(FORMATS[fmt]).astype(np.float32) * scale
    return np.moveaxis(q.reshape(moved.shape), -1, dim).astype(np.float32)


def check(fmt, dim, in_dir, out_dir, name):
    x = np.load(in_dir + "/arg0.npy")
    got = np.load(out_dir + "/result0.npy").astype(np.float32)
    ref = reference(x, fmt, dim)
    same = (got.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(got) & np.isnan(ref))
    bad = np.argwhere(~same)
    if len(bad):
        i = tuple(bad[0])
        print(f"check_mx: {name}: {len(bad)} of {x.size} differ; first at {i}: "
              f"x={x[i]!r} got {got[i]!r} want {ref[i]!r}")
        sys.exit(1)
    nan = int(np.isnan(ref).sum())
    print(f"check_mx: {name}: all {x.size} values equal the reference "
          f"({nan} NaN from non-finite blocks)")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(sys.argv[2], int(sys.argv[3]), *sys.argv[4:7])
