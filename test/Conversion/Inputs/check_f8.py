#!/usr/bin/env python3
"""The 8-bit float conversions of a backend against ml_dtypes, bit for bit.

usage: check_f8.py make INPUT_DIR
       check_f8.py check FORMAT INPUT_DIR OUTPUT_DIR NAME

`make` writes arg0.npy: 1,067,584 f32 values: every bf16 value (65,536 bit
patterns: zeros, subnormals, infinities and NaNs included), 1,000,000
random ones (half uniform over all 2^32 bit patterns, half spread over the
8-bit formats' ranges, 2^-24 to 2^18, both signs), every E4M3FN and E5M2
value, every midpoint between neighbours (the ties of round to nearest
even) and the f32 values either side of each midpoint.

`check` compares OUTPUT_DIR/result0.npy, the executable's (or the
interpreter's) f32 -> FORMAT -> f32, with ml_dtypes' conversion of the input
saturated as anvil.cast defines (clamped to the largest finite value;
infinities too; NaN stays NaN): equal bits, or NaN where the reference is
NaN. Prints one line; exits 1 on a difference.
"""
import sys

import ml_dtypes
import numpy as np

N = 1067584
FORMATS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def make(directory):
    rng = np.random.default_rng(8)
    bf16 = (np.arange(65536, dtype=np.uint32) << 16).view(np.float32)
    uniform = rng.integers(0, 2**32, 500000, dtype=np.uint64).astype(np.uint32)
    spread = (rng.choice([-1.0, 1.0], 500000)
              * np.exp2(rng.uniform(-24, 18, 500000))).astype(np.float32)
    grids = []
    for fmt in FORMATS.values():
        values = np.arange(256, dtype=np.uint8).view(fmt).astype(np.float32)
        finite = np.sort(np.unique(values[np.isfinite(values)]))
        ties = (finite[:-1] + finite[1:]) / 2
        grids += [values, ties, np.nextafter(ties, np.float32(-np.inf)),
                  np.nextafter(ties, np.float32(np.inf))]
    x = np.concatenate([bf16, uniform.view(np.float32), spread] + grids)
    x = np.concatenate([x, np.zeros(N - len(x), np.float32)]).astype(np.float32)
    assert len(x) == N, len(x)
    np.save(directory + "/arg0.npy", x)


def check(fmt_name, in_dir, out_dir, name):
    fmt = FORMATS[fmt_name]
    x = np.load(in_dir + "/arg0.npy")
    got = np.load(out_dir + "/result0.npy").astype(np.float32)
    largest = float(ml_dtypes.finfo(fmt).max)
    with np.errstate(invalid="ignore"):  # NaN inputs
        want = np.clip(x, -largest, largest).astype(fmt).astype(np.float32)
    nan = np.isnan(want)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (nan & np.isnan(got))
    if not same.all():
        bad = np.flatnonzero(~same)[:5]
        sys.exit(f"check_f8: {name}: {(~same).sum()} of {N} differ, e.g. "
                 + ", ".join(f"{x[i]!r} -> {got[i]!r} (ml_dtypes {want[i]!r})"
                             for i in bad))
    print(f"check_f8: {name}: all {N} conversions equal ml_dtypes' "
          f"({nan.sum()} NaN)")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(*sys.argv[2:6])
