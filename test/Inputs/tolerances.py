"""Anvil's numerical tolerances, in one place (DESIGN.md, "Numerics").

Compiled code is compared with the reference interpreter, which computes
every op in float64 from the same inputs. A result agrees when, elementwise,

    |actual - expected| <= atol + rtol * max|expected|

(the scale is the tensor's largest magnitude, so the tiny elements of a
large tensor are judged against the tensor, not against themselves).

Keys are "<dtype>" for single ops, "<dtype>-<what>" for longer
computations; compare_npy.py --tolerance KEY applies one.
"""

TOLERANCES = {
    # One op in f32: a few roundings of the result (elementwise math,
    # data movement, reductions and contractions over the small, odd shapes
    # of the op tests; the error of a K-term sum grows like sqrt(K) ulps).
    "f32": {"rtol": 2e-6, "atol": 0.0},
    # Composite ops decomposed into several f32 ops (softmax, norms,
    # attention, cross-entropy): each intermediate rounds once more.
    "f32-composite": {"rtol": 1e-5, "atol": 0.0},
    # Whole training runs in f32 (forward, backward, AdamW) against the
    # float64 interpreter: rounding differences compound over steps; the
    # losses of 50 steps agree to this (seen: 1.6e-6 for gpt-tiny, 4e-5
    # for the MLP, whose loss ends near 1e-3).
    "f32-training": {"rtol": 2e-4, "atol": 0.0},
    # GEMMs of 8-bit operands: exact products, but Hopper's FP8 tensor
    # cores accumulate with about 14 mantissa bits between cuBLASLt's
    # promotions to f32 (2^-14 = 6e-5 a step, over a K of 16 to 64 terms).
    "fp8-gemm": {"rtol": 1e-3, "atol": 0.0},
    # GEMMs on bf16 operands (products rounded to 8 significant bits),
    # against the float64 interpreter, which does not round them (at most
    # 2^-8 = 3.9e-3 of the value; seen 3.2e-3), or the GPU's against the
    # CPU's, whose f32 sums in other orders may round to neighbouring bf16
    # values (one unit: at most 2^-7 = 7.8e-3 of the value).
    "bf16": {"rtol": 8e-3, "atol": 0.0},
    # Attention's gradient with bf16 products, against the float64
    # interpreter: dS = P (dP - rowsum(dP P)) subtracts nearly equal terms,
    # so dP's bf16 rounding (2^-9 of dP) becomes a larger share of dS, and
    # dQ and dK sum a row of such terms (seen 1.3e-2 of the largest dQ, dK
    # with 64-wide heads and 70 keys).
    "bf16-composite": {"rtol": 3e-2, "atol": 0.0},
    # FP8 training runs against each other: 8-bit rounding turns the f32
    # differences of summation order into whole FP8 steps now and then, so
    # the same program on 1 and 2 threads already differs by 1.3e-3 over 20
    # steps (gpt-tiny, --precision=fp8); tp=2 against one process: 2.5e-3.
    "fp8-training": {"rtol": 5e-3, "atol": 0.0},
    # bf16 mixed-precision training runs against each other (the GPU's
    # against the CPU's): summation order moves a GEMM's product across a
    # bf16 rounding boundary now and then (seen over 20 steps of gpt-tiny:
    # 4.1e-5 between 1 and 2 threads; 8e-5 from the f32 run).
    "bf16-training": {"rtol": 2e-3, "atol": 0.0},
    # The float64 interpreter against itself after an exact rewrite.
    "f64": {"rtol": 1e-12, "atol": 0.0},
    # The same program on the same inputs and threads (a resumed run
    # against an uninterrupted one): bit for bit.
    "exact": {"rtol": 0.0, "atol": 0.0},
}
