#!/usr/bin/env python3
"""Builds the GPU bundle's op cases: every function of an ops file as a CUDA
executable (--entry), with random inputs and the CPU backend's results for
them (the CPU backend is itself checked against the float64 interpreter by
test/Target/CPU/ops-cpu.test).

usage: make_op_cases.py OPS.mlir OUTDIR --bin BIN_DIR [--cuda-arch sm_90]

Writes OUTDIR/<function>/{<function>.cuda.run, in/arg<i>.npy,
cpu/result<i>.npy, tolerance.json} (inputs and tolerances as run_ops.py
makes them).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "Target", "CPU", "Inputs"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "Inputs"))
import run_ops  # noqa: E402
from run_ops import parse, write_inputs  # noqa: E402
from tolerances import TOLERANCES  # noqa: E402


def run(cmd):
    run_ops.run(cmd, prog="make_op_cases")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ops")
    ap.add_argument("out")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--cuda-arch", default="sm_90")
    a = ap.parse_args()
    compile_ = os.path.join(a.bin, "anvil-compile")
    funcs = parse(open(a.ops).read())
    for seed, (name, args, opts) in enumerate(funcs):
        d = os.path.join(a.out, name)
        for sub in ("in", "cpu"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        write_inputs(os.path.join(d, "in"), seed, args, opts)
        cpu = os.path.join(d, name + ".cpu.run")
        run([compile_, a.ops, "--entry=" + name, "--target=cpu", "-o", cpu])
        run([cpu, "--eval-inputs", os.path.join(d, "in"), "--eval-outputs",
             os.path.join(d, "cpu")])
        os.remove(cpu)
        cuda = os.path.join(d, name + ".cuda.run")
        # Each op's own precision (f32, or the bf16 and FP8 GEMMs a case
        # spells out), not CUDA's default mixed precision.
        run([compile_, a.ops, "--entry=" + name, "--target=cuda",
             "--precision=f32", "--cuda-arch=" + a.cuda_arch, "-o", cuda])
        run(["strip", cuda])
        tol = TOLERANCES[opts.get("tolerance", "f32")]
        json.dump(tol, open(os.path.join(d, "tolerance.json"), "w"))
    print(f"make_op_cases: {len(funcs)} op cases in {a.out}")


if __name__ == "__main__":
    main()
