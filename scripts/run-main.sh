#!/usr/bin/env bash
#===- scripts/run-main.sh - set up and run Anvil's main job --------------===#
#
# The README's first command: compile a small GPT and train it on the CPU.
# Until the CPU backend exists, "train" means running the compiled training
# step (forward, backward, AdamW) in anvil-interp, the float64 reference
# interpreter, on a fixed synthetic batch, feeding the updated parameters
# and optimizer state back each step.
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ANVIL_BUILD_DIR:-$ROOT/build}"
CONFIG="${ANVIL_MAIN_CONFIG:-gpt-tiny}"
STEPS="${ANVIL_MAIN_STEPS:-30}"
WORK="$BUILD_DIR/main-job"
BIN="$BUILD_DIR/bin"

"$ROOT/scripts/setup.sh"
mkdir -p "$WORK/batch"

echo
echo "Anvil main job: compile a small GPT ($CONFIG) and train it on the CPU"
echo "1. anvil-compile: forward graph -> autodiff -> AdamW -> @train_step"
"$BIN/anvil-compile" --model gpt --config "$CONFIG" --emit=train-step \
  --optimizer=adamw --lr=3e-3 -o "$WORK/train_step.mlir" --report=text |
  sed 's/^/     /'
echo "   wrote $WORK/train_step.mlir"
echo "2. anvil-opt: verify, canonicalize, cse, cost"
"$BIN/anvil-opt" "$WORK/train_step.mlir" --canonicalize --cse \
  --anvil-cost-report -o "$WORK/train_step.opt.mlir" 2>&1 | sed 's/^/     /'
read -r B T V < <("$BIN/anvil-compile" --model gpt --config "$CONFIG" \
  --report=json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["batch"], r["seq_len"], r["vocab"])')
python3 "$ROOT/scripts/make_batch.py" "$WORK/batch" "$B" "$T" "$V"
echo "3. anvil-interp: $STEPS training steps on a fixed synthetic batch"
"$BIN/anvil-interp" "$WORK/train_step.opt.mlir" --function=train_step \
  --inputs-dir="$WORK/batch" --seed=1 --steps="$STEPS" | tee "$WORK/losses.txt" |
  sed 's/^/     /'
first=$(head -1 "$WORK/losses.txt" | awk '{print $4}')
last=$(tail -1 "$WORK/losses.txt" | awk '{print $4}')
echo
echo "Done: loss $first -> $last in $STEPS steps (parameters initialized from"
echo "their initializers with seed 1). The steps ran in the reference"
echo "interpreter; compiled CPU and CUDA executables are later stages (see"
echo "docs/architecture.md)."
