#!/usr/bin/env python3
"""Compares the losses of a compiled training run with anvil-interp's.

usage: compare_losses.py RUN.jsonl INTERP.txt --tolerance KEY [--falls F]
                         [--after-step N]

RUN.jsonl is the executable's --log (one record per step, --log-every 1);
INTERP.txt is `anvil-interp --steps N` output ("step k: loss x"), or
another run's .jsonl log (the reference run, say a single-process one). Every
step's loss must agree within the tolerance (test/Inputs/tolerances.py,
relative to the interpreter's loss), and the final loss must be below F
times the first (default 1: it fell). With --after-step N, the reference's
steps up to N are left out (a run resumed from step N's checkpoint).
"""
import argparse
import json
import os
import re
import sys

# tolerances.py: test/Inputs in the tree, beside this file in the GPU bundle.
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "..", "..", "..", "Inputs"), here]
from tolerances import TOLERANCES  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("interp")
    ap.add_argument("--tolerance", required=True, choices=sorted(TOLERANCES))
    ap.add_argument("--falls", type=float, default=1.0)
    ap.add_argument("--after-step", type=int, default=0)
    a = ap.parse_args()
    run = {}
    for line in open(a.run):
        r = json.loads(line)
        run[r["step"]] = r["loss"]
    ref = {}
    for line in open(a.interp):
        if a.interp.endswith(".jsonl"):  # another run's log: the reference
            r = json.loads(line)
            ref[r["step"]] = r["loss"]
            continue
        m = re.match(r"step (\d+): loss (\S+)", line)
        if m:
            ref[int(m.group(1))] = float(m.group(2))
    ref = {step: loss for step, loss in ref.items() if step > a.after_step}
    if sorted(run) != sorted(ref):
        sys.exit(f"compare_losses: steps differ: run {sorted(run)[:5]}..., "
                 f"interpreter {sorted(ref)[:5]}...")
    tol = TOLERANCES[a.tolerance]
    worst = 0.0
    for step in sorted(ref):
        err = abs(run[step] - ref[step])
        bound = tol["atol"] + tol["rtol"] * abs(ref[step])
        if err > bound:
            sys.exit(f"compare_losses: step {step}: loss {run[step]!r}, "
                     f"interpreter {ref[step]!r} (bound {bound:.3g})")
        worst = max(worst, err / abs(ref[step]))
    steps = sorted(ref)
    first, last = run[steps[0]], run[steps[-1]]
    if not last < a.falls * first:
        sys.exit(f"compare_losses: the loss went {first} -> {last}, "
                 f"expected below {a.falls} x {first}")
    print(f"compare_losses: {len(steps)} steps agree (worst relative error "
          f"{worst:.1e}); loss {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
