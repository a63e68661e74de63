#!/usr/bin/env python3
"""Compares a GPU training run's losses with the CPU reference run's.

usage: compare_losses.py GPU.jsonl CPU.jsonl [--rtol R]

Both are an executable's --log with --log-every 1 over the same steps, seed
and data. Every step's loss must agree within R (relative; default 2e-4,
the f32 training tolerance of test/Inputs/tolerances.py: the GPU sums in
other orders). Prints one line; exits 1 on a mismatch.
"""
import argparse
import json
import sys

ap = argparse.ArgumentParser()
ap.add_argument("gpu")
ap.add_argument("cpu")
ap.add_argument("--rtol", type=float, default=2e-4)
a = ap.parse_args()
gpu = {r["step"]: r["loss"] for r in map(json.loads, open(a.gpu))}
cpu = {r["step"]: r["loss"] for r in map(json.loads, open(a.cpu))}
if sorted(gpu) != sorted(cpu) or not gpu:
    sys.exit(f"compare_losses: steps differ: GPU {sorted(gpu)}, CPU {sorted(cpu)}")
worst = max(abs(gpu[s] - cpu[s]) / abs(cpu[s]) for s in cpu)
steps = sorted(cpu)
line = (f"{len(steps)} steps, worst relative difference {worst:.1e} "
        f"(bound {a.rtol:g}); GPU loss {gpu[steps[0]]:.4f} -> {gpu[steps[-1]]:.4f}")
if worst > a.rtol:
    sys.exit("compare_losses: FAILED: " + line)
print("compare_losses: agree: " + line)
