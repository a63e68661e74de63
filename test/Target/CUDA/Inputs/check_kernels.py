#!/usr/bin/env python3
"""Checks an anvil-compile --kernel-report against the kernels it came from.

usage: check_kernels.py REPORT.json KERNELS.mlir

KERNELS.mlir is the same compilation's --emit=kernels. Every gpu.module in
it must appear in the report (ptxas assembled it), every kernel must have a
launch shape and use registers, and none may spill. The runtime's own
kernels the program's library calls launch (the flash-attention kernels)
are listed apart: each must use registers and none may spill. Prints one
summary line for FileCheck.
"""
import json
import re
import sys

report = json.load(open(sys.argv[1]))
modules = set(re.findall(r"gpu\.module @(\w+)", open(sys.argv[2]).read()))
rows = report["per_kernel"]
reported = {row["module"] for row in rows}
errors = []
if modules != reported:
    errors.append(f"gpu.modules not in the report: {sorted(modules - reported)}; "
                  f"reported but not in the IR: {sorted(reported - modules)}")
for row in rows:
    if row["registers"] <= 0 or row["blocks"] <= 0 or row["threads_per_block"] <= 0:
        errors.append(f"{row['kernel']}: no registers or launch shape: {row}")
    if row["spill_store_bytes"] or row["spill_load_bytes"]:
        errors.append(f"{row['kernel']}: spills: {row}")
library = report.get("per_library_kernel", [])
if report.get("library_kernels_not_in_report"):
    errors.append("runtime kernels the program calls are not in the runtime's "
                  f"report: {report['library_kernels_not_in_report']}")
for row in library:
    if row["registers"] <= 0:
        errors.append(f"{row['kernel']}: no registers: {row}")
    if row["spill_store_bytes"] or row["spill_load_bytes"]:
        errors.append(f"{row['kernel']}: spills: {row}")
if report["kernels"] != len(rows):
    errors.append(f"'kernels' is {report['kernels']}, but {len(rows)} are listed")
if errors:
    sys.exit("check_kernels: " + "\n".join(errors))
# The runtime's kernels: those of the report the runtime's build made for
# this chip, or none for a chip it makes PTX for (compiled on load).
runtime = (f"no report of the runtime's kernels for {report['chip']}"
           if "library_report_missing" in report else
           f"{len(library)} of the runtime's kernels, at most "
           f"{max((r['registers'] for r in library), default=0)} registers, "
           f"{report.get('library_kernels_with_spills', 0)} spilling")
print(f"{report['chip']}: {len(rows)} kernels assembled, at most "
      f"{report['max_registers']} registers, {report['kernels_with_spills']} "
      f"spilling, {report['single_thread_kernels']} on one thread, "
      f"{report['vectorized_kernels']} with vector accesses; {runtime}")
