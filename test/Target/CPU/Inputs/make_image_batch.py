#!/usr/bin/env python3
"""Writes a fixed image batch: DIR/images.npy (B, 3, S, S) f32 and
DIR/labels.npy (B,) i32 in [0, classes).

usage: make_image_batch.py DIR BATCH SIZE CLASSES"""
import sys

import numpy as np

out, b, s, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(3)
np.save(out + "/images.npy", rng.standard_normal((b, 3, s, s)).astype(np.float32))
np.save(out + "/labels.npy", rng.integers(0, k, b).astype(np.int32))
