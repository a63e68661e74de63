#!/usr/bin/env python3
"""Checks that a training run's loss fell.

usage: loss_falls.py RUN.jsonl NAME STEPS RATIO

RUN.jsonl is the executable's --log with --log-every 1. It must hold STEPS
records and the last loss must be at most RATIO times the first. Prints
"NAME: loss A -> B over N steps" for FileCheck.
"""
import json
import sys

run, name, steps, ratio = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
losses = [json.loads(line)["loss"] for line in open(run)]
print(f"{name}: loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps")
if len(losses) != steps or not losses[-1] <= ratio * losses[0]:
    sys.exit(f"{name}: expected {steps} steps ending at most {ratio} x the "
             f"first loss; got {losses}")
