#!/usr/bin/env python3
"""Writes a fixed batch for examples/mlp.mlir: DIR/x.npy (16, 12) f32 and
DIR/y.npy (16,) i32 labels that depend on x (so the loss can fall)."""
import sys

import numpy as np

rng = np.random.default_rng(7)
x = rng.standard_normal((16, 12)).astype(np.float32)
y = (np.argmax(x[:, :5], axis=1)).astype(np.int32)
np.save(sys.argv[1] + "/x.npy", x)
np.save(sys.argv[1] + "/y.npy", y)
