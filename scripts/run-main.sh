#!/usr/bin/env bash
#===- scripts/run-main.sh - set up and run Anvil's main job --------------===#
#
# The README's first command: set everything up, compile a small GPT into a
# CPU training executable, and train it on a text corpus that ships with
# the OS (the license texts of Debian's base-files, byte-level tokens;
# the repository's own documentation where those are missing).
#
#   ANVIL_MAIN_STEPS   training steps (600)
#   ANVIL_MAIN_SET     model fields (layers=4,width=128,context=64,...)
#   ANVIL_BUILD_DIR    build directory (build/)
#
#===----------------------------------------------------------------------===#
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${ANVIL_BUILD_DIR:-$ROOT/build}"
STEPS="${ANVIL_MAIN_STEPS:-600}"
FIELDS="${ANVIL_MAIN_SET:-layers=4,width=128,heads=4,context=64,seq_len=64,batch=8}"
WORK="$BUILD_DIR/main-job"
BIN="$BUILD_DIR/bin"

"$ROOT/scripts/setup.sh"

# A fresh run each time: the previous run's checkpoints and metrics go.
rm -rf "$WORK"
mkdir -p "$WORK"

echo
echo "Anvil main job: compile a small GPT and train it on the CPU"
echo "1. corpus: byte-level text"
corpus="$WORK/corpus.txt"
if [ -d /usr/share/common-licenses ]; then
  find /usr/share/common-licenses -type f | sort | xargs cat >"$corpus"
  echo "   /usr/share/common-licenses/* ($(wc -c <"$corpus") bytes)"
else
  cat "$ROOT"/README.md "$ROOT"/docs/*.md >"$corpus"
  echo "   README.md and docs/*.md ($(wc -c <"$corpus") bytes)"
fi
"$BIN/anvil-make-shard" "$corpus" "$WORK/data" | sed 's/^/   /'

echo "2. anvil-compile: GPT ($FIELDS) -> autodiff -> AdamW -> CPU executable"
"$BIN/anvil-compile" --model gpt --config gpt-tiny --set "$FIELDS" \
  --lr=3e-3 --warmup=30 --decay=cosine --total-steps="$STEPS" \
  --target=cpu -o "$WORK/gpt.train" --report=text | sed 's/^/   /'
echo "   wrote $WORK/gpt.train"

echo "3. train: $STEPS steps, evaluating on the held-out split"
"$WORK/gpt.train" --data "$WORK/data" --steps "$STEPS" --seed 1 \
  --log-every 50 --eval-every 200 --eval-batches 16 \
  --ckpt-dir "$WORK/ckpt" --ckpt-every 200 --log "$WORK/metrics.jsonl" |
  sed 's/^/   /'

read -r first last < <(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(rows[0]["loss"], rows[-1]["loss"])' "$WORK/metrics.jsonl")
echo
echo "Done: training loss $first -> $last over $STEPS steps."
echo "Checkpoint: $(cat "$WORK/ckpt/latest" | sed "s#^#$WORK/ckpt/#")"
echo "Metrics:    $WORK/metrics.jsonl"
echo "Resume or extend the run with:"
echo "  $WORK/gpt.train --data $WORK/data --steps N --seed 1 --ckpt-dir $WORK/ckpt --resume"
