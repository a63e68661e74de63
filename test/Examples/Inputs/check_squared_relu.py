#!/usr/bin/env python3
"""Runs the executable of @squared_relu (examples/pass-plugin) on random
inputs and compares it with NumPy's max(x, 0)^2.

usage: check_squared_relu.py EXE WORKDIR
"""
import os
import subprocess
import sys

import numpy as np

exe, work = sys.argv[1], sys.argv[2]
inputs, outputs = os.path.join(work, "in"), os.path.join(work, "out")
os.makedirs(inputs, exist_ok=True)
os.makedirs(outputs, exist_ok=True)
x = np.random.default_rng(3).standard_normal((8, 16)).astype(np.float32)
x[0, :4] = [0.0, -0.0, np.inf, -np.inf]
np.save(os.path.join(inputs, "arg0.npy"), x)
subprocess.run([exe, "--eval-inputs", inputs, "--eval-outputs", outputs],
               check=True, capture_output=True)
got = np.load(os.path.join(outputs, "result0.npy"))
want = np.square(np.maximum(x, np.float32(0)))
if got.shape != want.shape or not np.array_equal(got, want):
    sys.exit(f"squared_relu: differs from NumPy:\n{got}\n{want}")
print(f"squared_relu: {got.size} values equal to NumPy's max(x, 0)^2")
