#!/usr/bin/env python3
"""Counts what a step's kernels are passed: a static proxy of memory traffic.

usage: step_traffic.py STEP.mlir [FUNCTION]

STEP.mlir is `anvil-compile ... --target=cuda --emit=bufferized` (or the CPU
backend's); with `--emit=kernels` it also counts the kernel launches (a
dispatch may launch more than one kernel, or none). For every call of a
dispatch (`<fn>__dispatch_<n>`, and its copies for constant arguments,
`<fn>__dispatch_<n>_c<k>`) in FUNCTION
(default train_step), adds the sizes of the buffers the call passes, whole:
a kernel that reads two tensors and writes one counts all three, a
broadcast operand counts at its own size. It is not a measurement (a GPU
run is): it counts launches and bytes a change removes or adds, the same
way before and after. Library calls (GEMMs, attention) are counted, by
name, but not their bytes.
"""
import re
import sys

BYTES = {"f64": 8, "f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "i1": 1,
         "i8": 1, "f8E4M3FN": 1, "f8E5M2": 1, "index": 8}


def buffer_bytes(signature):
    total = 0
    for dims, elt in re.findall(r"memref<((?:\d+x)*)(\w+)", signature):
        n = 1
        for d in dims.split("x"):
            if d:
                n *= int(d)
        total += n * BYTES.get(elt, 4)
    return total


def main():
    text = open(sys.argv[1]).read()
    function = sys.argv[2] if len(sys.argv) > 2 else "train_step"
    sizes = {name: buffer_bytes(sig) for name, sig in re.findall(
        r"func\.func private @(\w+__dispatch_\w+)\((.*?)\)"
        r"(?: attributes \{[^}]*\})? \{", text)}
    start = text.find(f"func.func @{function}(")
    if start < 0:
        sys.exit(f"step_traffic: no function @{function} in {sys.argv[1]}")
    end = text.find("\n  }\n", start)
    if end < 0:
        sys.exit(f"step_traffic: @{function} has no end in {sys.argv[1]}")
    calls = re.findall(r"call @(\w+__dispatch_\w+)\(", text[start:end])
    total = sum(sizes.get(c, 0) for c in calls)
    library = re.findall(r"call @(anvil_rt_\w+)\(", text[start:end])
    counts = ", ".join(f"{library.count(name)} {name}"
                       for name in sorted(set(library)))
    print(f"step_traffic: @{function}: {len(calls)} dispatch calls, "
          f"{total / 1e9:.1f} GB of their buffers; library calls: "
          f"{counts or 'none'}")
    # At the kernels stage (`--emit=kernels`), the kernel launches: each
    # dispatch's gpu.launch_func ops once per call, and the function's own.
    if "gpu.launch_func" in text:
        launches = {}
        for m in re.finditer(r"func\.func private @(\w+__dispatch_\w+)\(",
                             text):
            body_end = text.find("\n  }\n", m.end())
            launches[m.group(1)] = text.count("gpu.launch_func", m.end(),
                                              body_end)
        direct = text.count("gpu.launch_func", start, end)
        print(f"step_traffic: @{function}: "
              f"{sum(launches.get(c, 0) for c in calls) + direct} kernel "
              f"launches")


if __name__ == "__main__":
    main()
