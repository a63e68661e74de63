#!/usr/bin/env bash
# A CUDA executable trains as its CPU twin does: 10 steps of the same model,
# seed and synthetic data, losses compared within the f32 training
# tolerance (test/Inputs/tolerances.py: the GPU sums in other orders). Exits 77 (ctest: skipped) when the CUDA executable finds no
# GPU, saying why.
#
# usage: gpu-train.sh CUDA_EXE CPU_EXE WORKDIR
set -euo pipefail
cuda=$1 cpu=$2 work=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
set +e
"$cuda" --steps 10 --seed 1 --log "$work/gpu.jsonl" --log-every 1 \
  > "$work/gpu.out" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ]; then
  if grep -q "CUDA: " "$work/gpu.out" && ! grep -q "failed:" "$work/gpu.out"; then
    echo "gpu-train: skipped: $(grep 'CUDA: ' "$work/gpu.out" | head -1)"
    exit 77
  fi
  echo "gpu-train: the CUDA executable failed (exit $rc):"
  cat "$work/gpu.out"
  exit 1
fi
grep "^device: " "$work/gpu.out" || true
"$cpu" --steps 10 --seed 1 --threads 2 --log "$work/cpu.jsonl" --log-every 1 \
  > "$work/cpu.out"
python3 "$here/../../test/Target/CPU/Inputs/compare_losses.py" \
  "$work/gpu.jsonl" "$work/cpu.jsonl" --tolerance f32-training
