#!/usr/bin/env python3
"""Writes a synthetic batch for a compiled Anvil model, one DIR/NAME.npy per
input of its training step, for the executable's --batch-dir:

  synthetic-batch.py MODEL DIR [--seed N]

MODEL is a training executable (its --print-manifest is read) or a manifest
JSON file. Inputs the manifest gives a range (embedding ids, class labels,
masked positions, 0/1 click labels) get whole numbers drawn uniformly from
[0, range) in the input's dtype; other float inputs get standard normal
values. Integer inputs without a range are an error: nothing says which
values are valid. The runtime feeds `dropout_seed` itself, and 'tokens' and
'targets' of language models when no --batch-dir is given.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
          "i64": np.int64}


def manifest(model):
    if model.endswith(".json"):
        with open(model) as f:
            return json.load(f)
    out = subprocess.run([os.path.abspath(model), "--print-manifest"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="training executable or manifest .json")
    p.add_argument("dir", help="output directory (created)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    written = []
    for b in manifest(a.model)["buffers"]:
        if b["role"] != "input" or b["name"] == "dropout_seed":
            continue
        name, shape, dtype = b["name"], tuple(b["shape"]), b["dtype"]
        if dtype not in DTYPES:
            sys.exit(f"synthetic-batch: input '{name}' has dtype {dtype}; "
                     f"this script writes {', '.join(DTYPES)}")
        if "range" in b:
            values = rng.integers(0, b["range"], shape)
        elif dtype.startswith("f"):
            values = rng.standard_normal(shape)
        else:
            sys.exit(f"synthetic-batch: integer input '{name}' has no range "
                     f"in the manifest; write it yourself")
        np.save(os.path.join(a.dir, name + ".npy"),
                np.asarray(values, dtype=DTYPES[dtype]))
        written.append(f"{name} {dtype}{list(shape)}")
    print("synthetic-batch: wrote " + "; ".join(written))


if __name__ == "__main__":
    main()
