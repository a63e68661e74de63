#!/usr/bin/env bash
# A CUDA executable trains as its CPU twin does: 10 steps of the same model,
# seed and synthetic data, losses compared within the training tolerance
# TOLERANCE (test/Inputs/tolerances.py; default f32-training: the GPU sums
# in other orders; bf16-training for mixed precision, CUDA's default).
# Exits 77 (ctest: skipped) when the CUDA executable finds no GPU, saying
# why.
#
# With RANKS > 1 (executables compiled with a mesh of that many ranks) both
# run under ANVIL_RUN (anvil-run) -n RANKS, one GPU per rank, the CUDA
# executable's collectives over NCCL; exits 77 when the machine has fewer
# GPUs than ranks.
#
# usage: gpu-train.sh CUDA_EXE CPU_EXE WORKDIR [RANKS]
set -euo pipefail
cuda=$1 cpu=$2 work=$3 ranks=${4:-1}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
launch=()
if [ "$ranks" -gt 1 ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU " || true)
  if [ "${gpus:-0}" -lt "$ranks" ]; then
    echo "gpu-train: skipped: $ranks ranks need $ranks GPUs, this machine" \
      "has ${gpus:-0}"
    exit 77
  fi
  launch=("${ANVIL_RUN:?ANVIL_RUN must name anvil-run}" -n "$ranks")
fi
set +e
"${launch[@]}" "$cuda" --steps 10 --seed 1 --log "$work/gpu.jsonl" --log-every 1 \
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
grep "^device: \|ranks, mesh" "$work/gpu.out" || true
"${launch[@]}" "$cpu" --steps 10 --seed 1 --threads 2 --log "$work/cpu.jsonl" \
  --log-every 1 > "$work/cpu.out"
python3 "$here/../../test/Target/CPU/Inputs/compare_losses.py" \
  "$work/gpu.jsonl" "$work/cpu.jsonl" --tolerance "${TOLERANCE:-f32-training}"
