#!/usr/bin/env bash
#===- scripts/run-main.sh - set up and run Anvil's main job --------------===#
#
# The README's first command. Until the CPU backend exists, the main job runs
# the most complete pipeline there is: parse and verify a small GPT forward
# graph (examples/gpt-tiny.mlir), canonicalize and CSE it, and report its
# FLOPs, bytes and parameters through the cost interface.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ANVIL_BUILD_DIR:-$ROOT/build}"
MODEL="$ROOT/examples/gpt-tiny.mlir"
OUT="$BUILD_DIR/gpt-tiny.canonical.mlir"

"$ROOT/scripts/setup.sh"

echo
echo "Anvil main job: compile the forward graph of a one-block GPT"
echo "  input:    $MODEL"
echo "  pipeline: verify -> canonicalize -> cse -> anvil-cost-report"
"$BUILD_DIR/bin/anvil-opt" "$MODEL" --canonicalize --cse --anvil-cost-report \
  -o "$OUT"
echo "  output:   $OUT ($(grep -cE '= anvil\.[a-z_]+ ' "$OUT") anvil ops)"
echo
echo "Done: the graph verified and was simplified. Differentiation, the"
echo "optimizer and the CPU backend (training on the CPU) are later stages;"
echo "see docs/architecture.md for what exists today."
