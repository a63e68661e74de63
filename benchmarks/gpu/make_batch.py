#!/usr/bin/env python3
"""Writes a batch for a compiled Anvil model without NumPy (the GPU
machine may have none): one DIR/NAME.npy per input of its training step,
for the executable's --batch-dir, as scripts/synthetic-batch.py does.

  make_batch.py MODEL DIR

MODEL is a training executable (its --print-manifest is read). Inputs the
manifest gives a range (class labels, ids) get whole numbers in [0, range);
other float inputs get values in [-2, 2) that repeat every 4099 elements
(the values do not matter to throughput; writing them must be quick). Only
f32 and i32 inputs: what the image models take.
"""
import array
import json
import os
import random
import subprocess
import sys


def save(path, typecode, descr, shape, values):
    """values: an array.array of `typecode`, little-endian, in C order."""
    header = ("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }"
              % (descr, "".join(f"{d}, " for d in shape)))
    # Magic, version 1.0, header length; the header padded to 64 bytes.
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    if sys.byteorder != "little":
        values.byteswap()
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little"))
        f.write(header.encode("latin1"))
        values.tofile(f)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    model, out = sys.argv[1:]
    manifest = json.loads(subprocess.run(
        [os.path.abspath(model), "--print-manifest"], check=True,
        capture_output=True, text=True).stdout)
    os.makedirs(out, exist_ok=True)
    rng = random.Random(1)
    for b in manifest["buffers"]:
        if b["role"] != "input" or b["name"] == "dropout_seed":
            continue
        name, shape, dtype = b["name"], b["shape"], b["dtype"]
        count = 1
        for d in shape:
            count *= d
        if dtype == "i32" and "range" in b:
            values = array.array("i", (rng.randrange(b["range"])
                                       for _ in range(count)))
            save(os.path.join(out, name + ".npy"), "i", "<i4", shape, values)
        elif dtype == "f32" and "range" not in b:
            pattern = array.array("f", (rng.uniform(-2, 2)
                                        for _ in range(4099)))
            values = pattern * (count // len(pattern) + 1)
            del values[count:]
            save(os.path.join(out, name + ".npy"), "f", "<f4", shape, values)
        else:
            sys.exit(f"make_batch: input '{name}' is {dtype}"
                     f"{' with a range' if 'range' in b else ''}; this "
                     f"script writes f32 values and i32 values in a range")
        print(f"make_batch: {name} {dtype}{shape}")


if __name__ == "__main__":
    main()
