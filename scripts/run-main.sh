#!/usr/bin/env bash
#===- scripts/run-main.sh - set up and run Anvil's main job --------------===#
#
# The README's first command. Until the CPU backend exists, the main job runs
# the most complete pipeline there is: build the forward graph of a small
# GPT from the model zoo (anvil-compile), then verify, canonicalize and CSE
# it and report its FLOPs, bytes and parameters (anvil-opt).
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ANVIL_BUILD_DIR:-$ROOT/build}"
CONFIG="${ANVIL_MAIN_CONFIG:-gpt-tiny}"
FORWARD="$BUILD_DIR/$CONFIG.forward.mlir"
OUT="$BUILD_DIR/$CONFIG.canonical.mlir"

"$ROOT/scripts/setup.sh"

echo
echo "Anvil main job: compile the forward graph of a small GPT ($CONFIG)"
echo "1. anvil-compile --model gpt --config $CONFIG --emit=forward"
"$BUILD_DIR/bin/anvil-compile" --model gpt --config "$CONFIG" \
  --emit=forward -o "$FORWARD" --report=text | sed 's/^/     /'
echo "   wrote $FORWARD"
echo "2. anvil-opt: verify -> canonicalize -> cse -> anvil-cost-report"
"$BUILD_DIR/bin/anvil-opt" "$FORWARD" --canonicalize --cse \
  --anvil-cost-report -o "$OUT" 2>&1 | sed 's/^/     /'
echo "   wrote $OUT ($(grep -cE '= anvil\.[a-z_]+ ' "$OUT") anvil ops)"
echo
echo "Done: the GPT forward graph was built, verified and simplified."
echo "Differentiation, the optimizer and the CPU backend (training on the"
echo "CPU) are later stages; docs/architecture.md says what exists today."
