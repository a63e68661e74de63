#!/usr/bin/env python3
"""Compiles each function of an .mlir file for the CPU and compares it with
the reference interpreter.

usage: run_ops.py OPS.mlir WORKDIR --bin BIN_DIR [--compile-flag=F ...]

For every `func.func @name(...)`: random inputs (seeded by the function's
position) are written as WORKDIR/name/in/arg<i>.npy, `anvil-compile
--entry=name --target=cpu` builds an executable, which runs once with
--eval-inputs; anvil-interp runs the same function on the same inputs, and
the results must agree within the tolerance the comment lines before the
function name (`// tolerance: f32-composite`; default "f32", see
test/Inputs/tolerances.py). `// int-high: N` bounds integer inputs to
[0, N); `// positive` makes float inputs positive.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "Inputs"))
from compare_npy import compare_dirs  # noqa: E402
from tolerances import TOLERANCES  # noqa: E402

FUNC = re.compile(r"func\.func @(\w+)\((.*?)\)\s*->", re.S)
ARG = re.compile(r"%\w+: tensor<([0-9x]*?)x?(f32|f64|i32|i64|i1)>")
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
          "i64": np.int64, "i1": np.bool_}


def parse(text):
    funcs = []
    for m in FUNC.finditer(text):
        before = text[:m.start()].rsplit("\n\n", 1)[-1]
        opts = dict(re.findall(r"//\s*([\w-]+)(?::\s*(\S+))?", before))
        args = []
        for shape, dtype in ARG.findall(m.group(2)):
            dims = [int(d) for d in shape.split("x") if d]
            args.append((dims, dtype))
        funcs.append((m.group(1), args, opts))
    return funcs


def write_inputs(directory, seed, args, opts):
    """Random inputs of one function, DIRECTORY/arg<i>.npy (seeded by the
    function's position): normal floats (positive with `// positive`),
    fair booleans, integers in [0, `// int-high: N`) (default 8)."""
    rng = np.random.default_rng(seed)
    for i, (dims, dtype) in enumerate(args):
        if dtype.startswith("f"):
            x = rng.standard_normal(dims)
            if "positive" in opts:
                x = np.abs(x) + 0.1
        elif dtype == "i1":
            x = rng.random(dims) < 0.5
        else:
            x = rng.integers(0, int(opts.get("int-high", 8)), dims)
        np.save(os.path.join(directory, f"arg{i}.npy"),
                np.asarray(x, dtype=DTYPES[dtype]))


def run(cmd, prog="run_ops"):
    """Runs `cmd`; exits with its output (prefixed by `prog`) if it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{prog}: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ops")
    ap.add_argument("workdir")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--compile-flag", action="append", default=[],
                    help="one more anvil-compile flag (repeatable)")
    a = ap.parse_args()
    funcs = parse(open(a.ops).read())
    for seed, (name, args, opts) in enumerate(funcs):
        d = os.path.join(a.workdir, name)
        for sub in ("in", "cpu", "ref"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        write_inputs(os.path.join(d, "in"), seed, args, opts)
        exe = os.path.join(d, name + ".run")
        run([os.path.join(a.bin, "anvil-compile"), a.ops, "--entry=" + name,
             "--target=cpu", "-o", exe] + a.compile_flag)
        run([exe, "--eval-inputs", os.path.join(d, "in"), "--eval-outputs",
             os.path.join(d, "cpu")])
        run([os.path.join(a.bin, "anvil-interp"), a.ops, "--function=" + name,
             "--inputs-dir=" + os.path.join(d, "in"),
             "--output-dir=" + os.path.join(d, "ref")])
        tol = TOLERANCES[opts.get("tolerance", "f32")]
        _, worst = compare_dirs(os.path.join(d, "ref"), os.path.join(d, "cpu"),
                                tol["rtol"], tol["atol"], prog=f"run_ops: @{name}")
        print(f"@{name}: agrees (worst error / scale {worst:.1e})")
    print(f"run_ops: {len(funcs)} functions agree")


if __name__ == "__main__":
    main()
