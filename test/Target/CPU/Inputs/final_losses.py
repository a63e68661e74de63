#!/usr/bin/env python3
"""Compares where two training runs end: the mean of each run's last 10
losses (one step's loss is noisy).

usage: final_losses.py RUN.jsonl REFERENCE.jsonl NAME PERCENT

Both are --log files with --log-every 1. Exits 1 unless RUN ends within
PERCENT % of REFERENCE; prints one line.
"""
import json
import sys

run, ref, name, percent = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
a = [json.loads(l)["loss"] for l in open(run)]
b = [json.loads(l)["loss"] for l in open(ref)]
if len(a) != len(b) or len(a) < 10:
    sys.exit(f"final_losses: {name}: {len(a)} and {len(b)} steps")
end_a, end_b = sum(a[-10:]) / 10, sum(b[-10:]) / 10
diff = abs(end_a - end_b) / end_b * 100
line = (f"{name}: {len(a)} steps, final loss {end_a:.4f} against {end_b:.4f} "
        f"({diff:.2f}% apart, bound {percent:g}%)")
if diff > percent:
    sys.exit("final_losses: " + line)
print(line)
