#!/usr/bin/env bash
#===- benchmarks/gpu/bundle.sh - what a GPU machine runs, built here -----===#
#
# Builds, on the CPU build machine (MLIR and the CUDA toolkit, no GPU), a
# folder a machine with an NVIDIA GPU and the CUDA libraries runs without
# MLIR: run.sh there checks correctness against the CPU references made
# here and measures GPT-2 124M training (f32 and bf16) and GPT-2 350M (bf16
# and FP8).
#
#   benchmarks/gpu/bundle.sh [OUT_DIR]     (default: build/gpu-bundle)
#
#   bin/gpt-tiny.cuda.train, bin/gpt2-124m.cuda.train   CUDA executables
#   bin/gpt-tiny-bf16.cuda.train,         the same in bf16 mixed precision
#   bin/gpt2-124m-bf16.cuda.train         (--precision=bf16: cuBLAS's bf16
#                                         GEMMs on the tensor cores)
#   bin/gpt2-124m-bf16-decomposed.cuda.train,  the bf16 step with attention
#   bin/gpt2-124m-bf16-unfused.cuda.train      decomposed, and with the MLP's
#                                         bias and GELU as kernels
#                                         (--gemm-epilogues=off)
#   bin/gpt2-124m-bf16-separate.cuda.train  the bf16 step with every
#                                         dispatch a kernel of its own
#                                         (--horizontal-fusion=off)
#   bin/gpt2-124m-bf16-rowsapart.cuda.train  the bf16 step with a layer
#                                         norm's kernels apart
#                                         (--row-groups=0)
#   bin/gpt2-124m-bf16-embedloop.cuda.train  the bf16 step with the token
#                                         embedding's gradient as the loop
#                                         (--library-embedding-grads=off)
#   bin/gpt2-124m-bf16-unpadded.cuda.train  the bf16 step with the logits'
#                                         rows unpadded (50257: ld odd)
#                                         (--pad-gemm-rows=off)
#   bin/gpt2-124m-bf16-f32attention.cuda.train  the bf16 step with attention
#                                         on f32 tensors
#                                         (--attention-bf16-tensors=off)
#   bin/gpt2-350m-{bf16,fp8}.cuda.train   GPT-2 350M in bf16 and in FP8 (the
#                                         blocks' linear layers; the rest bf16)
#   bin/gpt2-350m-fp8-delayed.cuda.train  the same in FP8 with the delayed
#                                         recipe (the MLP's GELU, its codes
#                                         and amax in its first FP8 GEMM)
#   bin/gpt-tiny-fp8-<recipe>.cuda.train  the tiny GPT in FP8 (current,
#                                         delayed, mxfp8: the CPU's exact
#                                         emulation's kernels)
#   bin/llama-tiny-bf16.cuda.train,       the tiny Llama (grouped-query
#   bin/resnet-tiny-bf16.cuda.train       attention, RoPE) and ResNet
#                                         (convolutions on cuDNN), bf16
#   bin/resnet50-bf16.cuda.train          ResNet-50, batch 128, bf16
#   bin/bert-tiny-bf16.cuda.train         the tiny BERT (its padding mask the
#                                         fused attention's key bias), bf16
#   bin/bert-large-bf16.cuda.train,       BERT-large (batch 8 x 512), bf16,
#   bin/bert-large-bf16-decomposed.cuda.train  attention fused with the key
#                                         bias (the default) and decomposed
#   bin/anvil-cuda-tests                  the runtime's GPU tests
#   bin/anvil-cuda-graph-tests            the step stream and the step's
#                                         CUDA graphs (anvil_rt_run_step)
#   bin/membw                             a streaming kernel's bandwidth in
#                                         device and managed memory
#                                         (membw.cu)
#   ops/<op>/                             every function of the op tests
#                                         (test/Target/CPU/Inputs/ops.mlir) as
#                                         a CUDA executable, its inputs and
#                                         the CPU backend's results
#   ref/gpt-tiny.cpu.jsonl                the CPU's losses of the tiny GPT's
#                                         first 10 steps (seed 1)
#   ref/gpt-tiny-bf16.cpu.jsonl,          the same in bf16 and FP8
#   ref/gpt-tiny-fp8-<recipe>.cpu.jsonl
#   ref/llama-tiny-bf16.cpu.jsonl,        the tiny Llama's and ResNet's in
#   ref/resnet-tiny-bf16.cpu.jsonl        bf16 (ResNet's on the images of
#   ref/resnet-tiny-batch/                ref/resnet-tiny-batch)
#   ref/bert-tiny-bf16.cpu.jsonl,         the tiny BERT's on the emulated grid
#   ref/bert-tiny-batch/                  (CUDA's kernels on the CPU), on the
#                                         batch of ref/bert-tiny-batch
#   kernels/gpt2-124m.<arch>.json         ptxas -v of every GPT-2 kernel (f32)
#   kernels/gpt2-124m-bf16.<arch>.json    the same of the bf16 step (measured)
#   run.sh, torch_gpt2.py                 the run and its peer
#   make_batch.py                         ResNet-50's batch, written there
#   compare_losses.py, tolerances.py      the tests' loss comparison
#   compare_npy.py                        .npy comparison without NumPy
#
# bin/ and ops/ are packed into payload.tar.xz (the executables share the
# runtime's code, which xz stores once), which run.sh unpacks on its first
# run. ANVIL_BUILD_DIR (build/) and ANVIL_CUDA_ARCH (sm_90) choose the build
# and the GPU. The folder must stay under 64 MiB; the script checks.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${ANVIL_BUILD_DIR:-$ROOT/build}"
OUT="${1:-$BUILD/gpu-bundle}"
ARCH="${ANVIL_CUDA_ARCH:-sm_90}"
BIN="$BUILD/bin"
HERE="$ROOT/benchmarks/gpu"

for tool in "$BIN/anvil-compile" "$BUILD/runtime/anvil-cuda-tests" \
    "$BUILD/runtime/anvil-cuda-graph-tests" "$BIN/anvil-membw" \
    "$BIN/anvil-gemmalign"; do
  [ -x "$tool" ] || { echo "bundle.sh: no $tool: build Anvil with CUDA first" \
    "(scripts/setup.sh; the toolkit at /usr/local/cuda)" >&2; exit 1; }
done
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/ref" "$OUT/kernels" "$OUT/ops"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "bundle: CUDA executables for $ARCH"
"$BIN/anvil-compile" --model gpt --config gpt-tiny --precision=f32 \
  --target=cuda --cuda-arch="$ARCH" -o "$OUT/bin/gpt-tiny.cuda.train"
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=f32 \
  --target=cuda --cuda-arch="$ARCH" -o "$OUT/bin/gpt2-124m.cuda.train" \
  --kernel-report="$OUT/kernels/gpt2-124m.$ARCH.json"
"$BIN/anvil-compile" --model gpt --config gpt-tiny --precision=bf16 \
  --target=cuda --cuda-arch="$ARCH" -o "$OUT/bin/gpt-tiny-bf16.cuda.train"
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --target=cuda --cuda-arch="$ARCH" -o "$OUT/bin/gpt2-124m-bf16.cuda.train" \
  --kernel-report="$OUT/kernels/gpt2-124m-bf16.$ARCH.json"
# The same step with attention decomposed (products, softmax and their
# gradients as GEMMs and kernels), against the fused default.
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --attention=decomposed --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/gpt2-124m-bf16-decomposed.cuda.train"
# The same step with attention on f32 tensors (rounded as the kernels load
# them), against bf16 tensors (the default, which cuDNN reads in place).
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --attention-bf16-tensors=off --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/gpt2-124m-bf16-f32attention.cuda.train"
# The same step with the MLP's bias and GELU as kernels of their own,
# against cuBLASLt's epilogues (the default).
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --gemm-epilogues=off --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/gpt2-124m-bf16-unfused.cuda.train"
# The same step with each independent dispatch a kernel of its own, against
# the optimizer's same-shaped updates merged (the default).
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --horizontal-fusion=off --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/gpt2-124m-bf16-separate.cuda.train"
# The same step with the kernels over the same rows (a layer norm's sums,
# statistics and rows) apart, against one kernel of a warp per row.
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --row-groups=0 --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/gpt2-124m-bf16-rowsapart.cuda.train"
# The same step with the token embedding's gradient as the loop over the
# tokens (a thread per column), against the runtime's parallel call.
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --library-embedding-grads=off --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/gpt2-124m-bf16-embedloop.cuda.train"
# The same step with the logits' rows of 50257 (the head's GEMMs at an odd
# leading dimension, the logits' kernels a point a thread), against rows
# padded to 50304.
"$BIN/anvil-compile" --model gpt --config gpt2-124m --precision=bf16 \
  --pad-gemm-rows=off --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/gpt2-124m-bf16-unpadded.cuda.train"
for precision in bf16 fp8 fp8=delayed; do
  name=${precision/=/-}
  "$BIN/anvil-compile" --model gpt --config gpt2-350m --precision=$precision \
    --target=cuda --cuda-arch="$ARCH" -o "$OUT/bin/gpt2-350m-$name.cuda.train"
done
for recipe in current delayed mxfp8; do
  "$BIN/anvil-compile" --model gpt --config gpt-tiny --precision=fp8=$recipe \
    --target=cuda --cuda-arch="$ARCH" -o "$OUT/bin/gpt-tiny-fp8-$recipe.cuda.train"
done
# Llama (grouped-query attention, RoPE) and ResNet (convolutions on cuDNN):
# the tiny configs against the CPU's losses; ResNet-50's throughput.
"$BIN/anvil-compile" --model llama --config llama-tiny --target=cuda \
  --cuda-arch="$ARCH" -o "$OUT/bin/llama-tiny-bf16.cuda.train"
"$BIN/anvil-compile" --model resnet --config resnet-tiny --target=cuda \
  --cuda-arch="$ARCH" -o "$OUT/bin/resnet-tiny-bf16.cuda.train"
"$BIN/anvil-compile" --model resnet --config resnet50 --set batch=128 \
  --target=cuda --cuda-arch="$ARCH" -o "$OUT/bin/resnet50-bf16.cuda.train"
# BERT: its padding mask is the fused attention's key bias (cuDNN's bias);
# the tiny config against the emulated grid's losses, BERT-large's
# throughput fused and decomposed.
"$BIN/anvil-compile" --model bert --config bert-tiny --target=cuda \
  --cuda-arch="$ARCH" -o "$OUT/bin/bert-tiny-bf16.cuda.train"
"$BIN/anvil-compile" --model bert --config bert-large --target=cuda \
  --cuda-arch="$ARCH" -o "$OUT/bin/bert-large-bf16.cuda.train"
"$BIN/anvil-compile" --model bert --config bert-large --attention=decomposed \
  --target=cuda --cuda-arch="$ARCH" \
  -o "$OUT/bin/bert-large-bf16-decomposed.cuda.train"
cp "$BUILD/runtime/anvil-cuda-tests" "$BUILD/runtime/anvil-cuda-graph-tests" \
  "$OUT/bin/"
# Where memory lives against a streaming kernel's bandwidth, and cuBLAS's
# bf16 GEMMs of GPT-2's head at the logits' odd and padded leading
# dimensions (what anvil-cpu-pad-gemm-rows changes): built with the
# project (benchmarks/CMakeLists.txt).
cp "$BIN/anvil-membw" "$OUT/bin/membw"
cp "$BIN/anvil-gemmalign" "$OUT/bin/gemmalign"
strip "$OUT"/bin/*

echo "bundle: the op cases"
python3 "$HERE/make_op_cases.py" "$ROOT/test/Target/CPU/Inputs/ops.mlir" \
  "$OUT/ops" --bin "$BIN" --cuda-arch="$ARCH"

echo "bundle: the CPU reference of the tiny GPT"
"$BIN/anvil-compile" --model gpt --config gpt-tiny --target=cpu \
  -o "$work/gpt-tiny.cpu.train"
"$work/gpt-tiny.cpu.train" --steps 10 --seed 1 --threads 2 \
  --log "$OUT/ref/gpt-tiny.cpu.jsonl" --log-every 1 > /dev/null
"$BIN/anvil-compile" --model gpt --config gpt-tiny --precision=bf16 \
  --gemm-epilogues=on --target=cpu -o "$work/gpt-tiny-bf16.cpu.train"
"$work/gpt-tiny-bf16.cpu.train" --steps 10 --seed 1 --threads 2 \
  --log "$OUT/ref/gpt-tiny-bf16.cpu.jsonl" --log-every 1 > /dev/null
# What CUDA runs: with its GEMM epilogues (the delayed recipe's MLP GELU in
# its first FP8 GEMM).
for recipe in current delayed mxfp8; do
  "$BIN/anvil-compile" --model gpt --config gpt-tiny --precision=fp8=$recipe \
    --gemm-epilogues=on --target=cpu -o "$work/gpt-tiny-fp8-$recipe.cpu.train"
  "$work/gpt-tiny-fp8-$recipe.cpu.train" --steps 10 --seed 1 --threads 2 \
    --log "$OUT/ref/gpt-tiny-fp8-$recipe.cpu.jsonl" --log-every 1 > /dev/null
done

"$BIN/anvil-compile" --model llama --config llama-tiny --precision=bf16 \
  --target=cpu -o "$work/llama-tiny-bf16.cpu.train"
"$work/llama-tiny-bf16.cpu.train" --steps 10 --seed 1 --threads 2 \
  --log "$OUT/ref/llama-tiny-bf16.cpu.jsonl" --log-every 1 > /dev/null
"$BIN/anvil-compile" --model resnet --config resnet-tiny --precision=bf16 \
  --library-convs=on --target=cpu -o "$work/resnet-tiny-bf16.cpu.train"
python3 "$HERE/make_batch.py" "$work/resnet-tiny-bf16.cpu.train" \
  "$OUT/ref/resnet-tiny-batch" > /dev/null
"$work/resnet-tiny-bf16.cpu.train" --steps 10 --seed 1 --threads 2 \
  --batch-dir "$OUT/ref/resnet-tiny-batch" \
  --log "$OUT/ref/resnet-tiny-bf16.cpu.jsonl" --log-every 1 > /dev/null

"$BIN/anvil-compile" --model bert --config bert-tiny --precision=bf16 \
  --attention=fused --emulate-cuda-grid --target=cpu \
  -o "$work/bert-tiny-bf16.cpu.train"
python3 "$HERE/make_batch.py" "$work/bert-tiny-bf16.cpu.train" \
  "$OUT/ref/bert-tiny-batch" > /dev/null
"$work/bert-tiny-bf16.cpu.train" --steps 10 --seed 1 --threads 2 \
  --batch-dir "$OUT/ref/bert-tiny-batch" \
  --log "$OUT/ref/bert-tiny-bf16.cpu.jsonl" --log-every 1 > /dev/null

cp "$HERE/run.sh" "$HERE/compare_npy.py" "$HERE/torch_gpt2.py" \
  "$HERE/make_batch.py" \
  "$ROOT/test/Target/CPU/Inputs/compare_losses.py" \
  "$ROOT/test/Inputs/tolerances.py" "$OUT/"
commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
{
  echo "Anvil GPU bundle"
  echo "built: $(date -u +%Y-%m-%dT%H:%MZ), commit $commit, $ARCH"
  echo "run: OUT=<results dir> ./run.sh"
} > "$OUT/BUNDLE.txt"

echo "bundle: packing bin/ and ops/"
tar -C "$OUT" -cf - bin ops | xz -9 -T2 > "$OUT/payload.tar.xz"
rm -rf "$OUT/bin" "$OUT/ops"

bytes=$(du -sb "$OUT" | cut -f1)
limit=$((64 * 1024 * 1024))
echo "bundle: $OUT, $((bytes / 1024)) KiB"
if [ "$bytes" -ge "$limit" ]; then
  echo "bundle.sh: the bundle is over 64 MiB" >&2
  exit 1
fi
