#!/usr/bin/env bash
#===- run.sh - the GPU bundle's checks and measurements ------------------===#
#
# On a machine with an NVIDIA GPU and the CUDA libraries (cuBLAS, the CUDA
# runtime, cuDNN 9 for the convolutions and the fused attention; CUDA_HOME,
# default /usr/local/cuda), no MLIR:
#
#   OUT=results ./run.sh
#
# The executables (bin/, ops/) travel compressed (payload.tar.xz: xz, or
# Python's tarfile where there is no xz); the first run unpacks them here.
#
# 1. the runtime's GPU tests (bin/anvil-cuda-tests, and
#    bin/anvil-cuda-graph-tests in each launch mode),
# 2. every op case against the CPU backend's results (ops/),
# 3. the tiny GPT's first 10 losses against the CPU's (ref/), in f32,
#    bf16 and with each FP8 recipe, and the tiny Llama's, ResNet's and
#    BERT's in bf16 (BERT's against the emulated grid's),
# 4. a streaming kernel's bandwidth by where its memory lives (bin/membw),
#    cuBLAS's bf16 GEMMs of GPT-2's head with the logits' rows at 50257 and
#    padded to 50304 (bin/gemmalign),
#    GPT-2 124M training (llm.c's shapes: batch 8 x 1024 tokens), in f32
#    and in bf16 mixed precision (attention fused, the default: cuDNN's on
#    bf16 tensors, and on f32 tensors: Anvil's kernels
#    (ANVIL_CUDA_ATTENTION=anvil) and cuDNN's; and decomposed; the MLP's bias and GELU in cuBLASLt's epilogues, the
#    default, and as kernels; the bf16 step replayed as a CUDA graph, the default, and
#    launched kernel by kernel, asynchronously and synchronized): tokens/s,
#    step time, MFU against the GPU's dense bf16 peak, the planned step
#    memory and the device memory in use (its total less its free memory,
#    at most, after a step), and each kernel's time over 4 steps
#    (NAME.profile.txt); GPT-2 350M in
#    bf16 and FP8; ResNet-50 in bf16 (batch 128; its "tokens/s" are
#    images/s); BERT-large in bf16 (batch 8 x 512), its attention fused
#    with the padding mask as a key bias (the default) and decomposed,
# 5. the same model in PyTorch eager and torch.compile when PyTorch is
#    installed, with the ratios (tokens/s, and device memory in use, which
#    torch_gpt2.py measures the same way) printed last.
#
# Everything goes to $OUT (default ./results); summary.txt has one line per
# check or figure. The exit status is non-zero when a check fails.
#
#===----------------------------------------------------------------------===#
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/results}"
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
failed=0
note() { echo "$*" | tee -a "$summary"; }
check() { # NAME COMMAND...: runs it, notes its last line, counts failure
  local name=$1; shift
  local log="$out/$name.log"
  if "$@" > "$log" 2>&1; then
    note "PASS $name: $(tail -1 "$log")"
  else
    note "FAIL $name: $(tail -1 "$log") (log: $log)"
    failed=$((failed + 1))
  fi
}
# The toolkit's libraries (cuBLAS in lib64; NCCL, opened at run time, in
# lib where it ships with the toolkit).
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
export LD_LIBRARY_PATH="$cuda_home/lib64:$cuda_home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Where the machine has cuDNN or NCCL only in Python's NVIDIA wheels (as
# PyTorch installs them), their lib folders come after the toolkit's.
wheel_libs="$(python3 - 2>/dev/null <<'PY'
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
dirs = sorted({d for r in roots for d in glob.glob(os.path.join(r, "nvidia", "*", "lib"))})
print(":".join(dirs))
PY
)"
[ -n "$wheel_libs" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$wheel_libs"
note "$(head -2 "$here/BUNDLE.txt" | tail -1)"
if [ -f "$here/payload.tar.xz" ] && [ ! -x "$here/bin/anvil-cuda-tests" ]; then
  if command -v xz > /dev/null; then
    tar -C "$here" -xJf "$here/payload.tar.xz"
  else
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
      "$here/payload.tar.xz" "$here"
  fi || { note "FAIL unpacking payload.tar.xz"; exit 1; }
fi
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
note "gpu: ${gpu:-unknown}"

# 1-3: correctness. First, the device opens: the tests below skip, and
# pass, where it does not.
check cuda-device-opens bash -c "'$here/bin/anvil-cuda-tests' \
  --gtest_filter=CudaDevice.LaunchesAKernel | tee /dev/stderr | \
  grep -q '^\[       OK \] CudaDevice.LaunchesAKernel' && \
  echo 'a kernel ran on the device'"
check cuda-tests "$here/bin/anvil-cuda-tests"
for mode in graph async sync; do
  check "cuda-graph-tests-$mode" env ANVIL_CUDA_LAUNCHES=$mode \
    "$here/bin/anvil-cuda-graph-tests"
done
for dir in "$here"/ops/*/; do
  name="$(basename "$dir")"
  mkdir -p "$out/ops/$name"
  check "op-$name" bash -c "'$dir/$name.cuda.run' --eval-inputs '$dir/in' \
    --eval-outputs '$out/ops/$name' > /dev/null && python3 '$here/compare_npy.py' \
    '$dir/cpu' '$out/ops/$name' '$dir/tolerance.json' '$name'"
done
# tiny_losses NAME TOLERANCE [ARGS]: bin/NAME.cuda.train's first 10 losses
# (seed 1; ARGS, one string, quoted for bash -c) against the CPU's,
# ref/NAME.cpu.jsonl, within TOLERANCE: the check NAME.
tiny_losses() {
  local name=$1 tolerance=$2 args=${3:-}
  check "$name" bash -c "'$here/bin/$name.cuda.train' --steps 10 --seed 1 \
    $args --log '$out/$name.gpu.jsonl' --log-every 1 > '$out/$name.out' && \
    python3 '$here/compare_losses.py' '$out/$name.gpu.jsonl' \
    '$here/ref/$name.cpu.jsonl' --tolerance $tolerance"
}
tiny_losses gpt-tiny f32-training

# Checkpoints written from the device's memory: 5 steps and a checkpoint,
# then a run resumed from it to step 10, whose losses are the uninterrupted
# run's (within the f32 tolerance; on the CPU, bit for bit).
check gpt-tiny-resume bash -c "rm -rf '$out/gpt-tiny-ckpt' && \
  '$here/bin/gpt-tiny.cuda.train' --steps 5 --seed 1 \
    --ckpt-dir '$out/gpt-tiny-ckpt' > '$out/gpt-tiny-resume.out' && \
  '$here/bin/gpt-tiny.cuda.train' --steps 10 --seed 1 --resume \
    --ckpt-dir '$out/gpt-tiny-ckpt' --log '$out/gpt-tiny-resumed.gpu.jsonl' \
    --log-every 1 >> '$out/gpt-tiny-resume.out' && \
  python3 '$here/compare_losses.py' '$out/gpt-tiny-resumed.gpu.jsonl' \
    '$out/gpt-tiny.gpu.jsonl' --after-step 5 --falls 2 \
    --tolerance f32-training"

# The same launched kernel by kernel (ANVIL_CUDA_LAUNCHES: the default
# replays the step as a CUDA graph from its second step; async queues every
# launch and waits at the step's end; sync waits after each): the same
# losses.
for mode in async sync; do
  check "gpt-tiny-$mode" bash -c "ANVIL_CUDA_LAUNCHES=$mode \
    '$here/bin/gpt-tiny.cuda.train' --steps 10 --seed 1 \
    --log '$out/gpt-tiny-$mode.gpu.jsonl' --log-every 1 \
    > '$out/gpt-tiny-$mode.out' && python3 '$here/compare_losses.py' \
    '$out/gpt-tiny-$mode.gpu.jsonl' '$here/ref/gpt-tiny.cpu.jsonl' \
    --tolerance f32-training"
done
# The default mode must have replayed a graph (the trainer's two generations
# of state: two graphs).
check gpt-tiny-graph bash -c "n=\$(grep -c 'captured as a CUDA graph' \
  '$out/gpt-tiny.log'); echo \"\$n graphs\"; [ \"\$n\" = 2 ]"

tiny_losses gpt-tiny-bf16 bf16-training

# The FP8 recipes: the CPU's emulation predicts the GPU's numerics (the
# FP8 training tolerance: summation order moves a value across an FP8
# rounding boundary now and then).
for recipe in current delayed mxfp8; do
  tiny_losses "gpt-tiny-fp8-$recipe" fp8-training
done

# Llama's grouped-query attention and RoPE, ResNet's convolutions (cuDNN),
# batch norm and pooling: the tiny configs' losses against the CPU's.
tiny_losses llama-tiny-bf16 bf16-training
tiny_losses resnet-tiny-bf16 bf16-training \
  "--batch-dir '$here/ref/resnet-tiny-batch'"

# BERT's padding mask as the fused attention's key bias (cuDNN's bias, or
# Anvil's kernels where cuDNN refuses it: the log says so): the tiny
# config's losses against the emulated grid's.
tiny_losses bert-tiny-bf16 bf16-training \
  "--batch-dir '$here/ref/bert-tiny-batch'"
grep -h "does not take" "$out/bert-tiny-bf16.log" 2>/dev/null | sort -u |
  tee -a "$summary"

# Where memory lives against bandwidth (membw.cu): device memory, and
# managed memory as the runtime uses it, each as a ratio to device memory.
if "$here/bin/membw" > "$out/membw.txt" 2>&1; then
  grep "^membw\|^device" "$out/membw.txt" | tee -a "$summary"
else
  note "FAIL membw: $(tail -1 "$out/membw.txt")"
  failed=$((failed + 1))
fi

# The head's bf16 GEMMs with the logits' rows at 50257 and padded to 50304
# (gemmalign.cu: anvil-cpu-pad-gemm-rows' reason), the ratio printed last.
if "$here/bin/gemmalign" > "$out/gemmalign.txt" 2>&1; then
  grep "^gemmalign:" "$out/gemmalign.txt" | tee -a "$summary"
else
  note "FAIL gemmalign: $(tail -1 "$out/gemmalign.txt")"
  failed=$((failed + 1))
fi

# 4: GPT-2 124M, f32 (gpt2) and bf16 mixed precision (gpt2-bf16); GPT-2
# 350M in bf16 and FP8.
steps="${GPT2_STEPS:-20}"
measure() { # NAME EXECUTABLE [ARGS...]: $out/NAME.json, a line of the summary
  local name=$1 exe=$2
  shift 2
  rm -f "$out/$name.json" "$out/$name.jsonl" "$out/$name.json.tmp"
  "$exe" --print-manifest > "$out/$name.manifest.json"
  if "$exe" --steps "$steps" --seed 1 --log "$out/$name.jsonl" --log-every 1 \
      "$@" > "$out/$name.out" 2>&1 &&
    python3 - "$out/$name.jsonl" "$out/$name.manifest.json" "$gpu" "$name" \
        "$out/$name.out" > "$out/$name.json.tmp" <<'PY'
import json, re, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
manifest = json.load(open(sys.argv[2]))
gpu, name = sys.argv[3], sys.argv[4]
# The trainer's "device memory: at most N bytes in use after a step".
used = re.findall(r"device memory: at most (\d+) bytes", open(sys.argv[5]).read())
# Dense bf16 peaks (NVIDIA's datasheets, FLOP/s); the first name the GPU's
# contains (the PCIe and NVL H100s before the SXM one).
peaks = {"H200": 989.4e12, "H100 PCIe": 756.5e12, "H100 NVL": 835.5e12,
         "H100": 989.4e12, "B200": 2250e12, "A100": 312e12}
peak = next((v for k, v in peaks.items() if k in gpu), None)
timed = rows[3:] if len(rows) > 5 else rows  # the first steps warm up
step_s = statistics.median(r["ms_per_step"] for r in timed) / 1e3
tokens = statistics.median(r["tokens_per_s"] for r in timed)
# The device's time a step (events around it on the step stream).
device = [r["device_ms_per_step"] for r in timed if "device_ms_per_step" in r]
device_s = statistics.median(device) / 1e3 if device else None
flops = manifest.get("flops_per_step", 0)
print(json.dumps({"model": manifest.get("model", "?"), "program": name,
                  "steps": len(rows),
                  "step_s": step_s, "device_step_s": device_s,
                  "tokens_per_s": tokens,
                  "flops_per_step": flops,
                  "mfu_vs_bf16_peak": flops / step_s / peak if peak else None,
                  "peak_bf16_flops": peak, "gpu": gpu,
                  "planned_bytes": manifest.get("planned_bytes"),
                  "device_memory_used_bytes": int(used[-1]) if used else None,
                  "final_loss": rows[-1]["loss"]}))
PY
  then
    mv "$out/$name.json.tmp" "$out/$name.json"
    note "$name: $(cat "$out/$name.json")"
    grep -E "^(step|device) memory" "$out/$name.out" | tail -2 |
      sed "s/^/$name: /" | tee -a "$summary"
  else
    note "FAIL $name: $(tail -1 "$out/$name.out")"
    failed=$((failed + 1))
  fi
}
measure gpt2 "$here/bin/gpt2-124m.cuda.train"
measure gpt2-bf16 "$here/bin/gpt2-124m-bf16.cuda.train"
# CHECK VARIANT: the losses of the bf16 step's VARIANT (measured) against
# the default's, within bf16 training's bound, as the check CHECK; false
# when either did not run.
bf16_losses() {
  [ -f "$out/gpt2-bf16.jsonl" ] && [ -f "$out/$2.jsonl" ] || return 1
  check "$1" python3 "$here/compare_losses.py" \
    "$out/gpt2-bf16.jsonl" "$out/$2.jsonl" --tolerance bf16-training
}
# The bf16 step launched kernel by kernel instead of replayed as a CUDA
# graph: queued and waited for at the step's end (async), and waited for
# after every kernel and library call (sync).
for mode in async sync; do
  ANVIL_CUDA_LAUNCHES=$mode measure "gpt2-bf16-$mode" \
    "$here/bin/gpt2-124m-bf16.cuda.train"
  # The same work in the same order: the same losses (bit for bit is the
  # expectation; the bound is bf16 training's).
  bf16_losses "gpt2-bf16-$mode-losses" "gpt2-bf16-$mode" || true
done
# The fused attention on Anvil's flash-attention kernels (on f32 tensors,
# which they read without copies) against the default, cuDNN's fused
# attention on bf16 tensors: the same model, losses within bf16 training's
# bound. A shape cuDNN does not take runs Anvil's kernels, and the log says
# so. And cuDNN on f32 tensors (their copies to bf16 and back around it)
# against bf16 tensors.
ANVIL_CUDA_ATTENTION=anvil measure gpt2-bf16-anvil-attention \
  "$here/bin/gpt2-124m-bf16-f32attention.cuda.train"
measure gpt2-bf16-f32attention "$here/bin/gpt2-124m-bf16-f32attention.cuda.train"
if bf16_losses gpt2-bf16-cudnn-attention-losses gpt2-bf16-anvil-attention; then
  grep -h "does not take" "$out/gpt2-bf16.out" | sort -u | tee -a "$summary"
fi
# Attention decomposed (the scores and probabilities stored, their
# products on cuBLAS) against the fused default: the same model, losses
# within bf16 training's bound.
measure gpt2-bf16-decomposed "$here/bin/gpt2-124m-bf16-decomposed.cuda.train"
bf16_losses gpt2-bf16-fused-losses gpt2-bf16-decomposed || true
# The MLP's bias and GELU as kernels of their own against cuBLASLt's
# GELU_AUX_BIAS and DGELU_BGRAD epilogues (the default): losses within bf16
# training's bound (the epilogues round differently).
measure gpt2-bf16-unfused "$here/bin/gpt2-124m-bf16-unfused.cuda.train"
bf16_losses gpt2-bf16-epilogue-losses gpt2-bf16-unfused || true
# Every independent dispatch a kernel of its own against the default, where
# the optimizer's same-shaped updates run as one kernel. Each value is
# computed as before (the emulated grid's losses equal the CPU's bit for
# bit); here within bf16 training's bound, as the libraries' kernels need
# not repeat their sums exactly from run to run.
measure gpt2-bf16-separate "$here/bin/gpt2-124m-bf16-separate.cuda.train"
bf16_losses gpt2-bf16-horizontal-losses gpt2-bf16-separate || true
# The kernels over the same rows apart against one kernel of a warp per row
# (anvil-row-groups): the same sums in the same order.
measure gpt2-bf16-rowsapart "$here/bin/gpt2-124m-bf16-rowsapart.cuda.train"
bf16_losses gpt2-bf16-row-group-losses gpt2-bf16-rowsapart || true
# The token embedding's gradient as the loop over the tokens (a thread per
# column, every token's row in turn) against the runtime's parallel call,
# which writes the loop's bits.
measure gpt2-bf16-embedloop "$here/bin/gpt2-124m-bf16-embedloop.cuda.train"
bf16_losses gpt2-bf16-embedding-losses gpt2-bf16-embedloop || true
# The logits' rows unpadded (50257: the head's GEMMs at an odd leading
# dimension) against rows padded to 50304 (anvil-cpu-pad-gemm-rows): the
# same values, the padding never touched.
measure gpt2-bf16-unpadded "$here/bin/gpt2-124m-bf16-unpadded.cuda.train"
bf16_losses gpt2-bf16-padding-losses gpt2-bf16-unpadded || true
# GPT-2 350M in FP8 (the blocks' linear layers; the rest bf16) against the
# same model in bf16 (issue 9's target: 1.25x).
measure gpt2-350m-bf16 "$here/bin/gpt2-350m-bf16.cuda.train"
measure gpt2-350m-fp8 "$here/bin/gpt2-350m-fp8.cuda.train"
# The delayed recipe: scales from the amax histories, so each cast can run in
# its tensor's producer, and the MLP's GELU, its codes and amax in its
# first FP8 GEMM (cuBLASLt's GELU_AUX_BIAS epilogue with an FP8 D and
# AMAX_D).
measure gpt2-350m-fp8-delayed "$here/bin/gpt2-350m-fp8-delayed.cuda.train"
# ResNet-50 in bf16, batch 128 of 224 x 224 images (written here: the
# values do not matter to its time), every convolution on cuDNN.
if python3 "$here/make_batch.py" "$here/bin/resnet50-bf16.cuda.train" \
    "$out/resnet50-batch" > "$out/resnet50-batch.log" 2>&1; then
  measure resnet50-bf16 "$here/bin/resnet50-bf16.cuda.train" \
    --batch-dir "$out/resnet50-batch"
else
  note "FAIL resnet50-batch: $(tail -1 "$out/resnet50-batch.log")"
  failed=$((failed + 1))
fi
# BERT-large in bf16 (batch 8 x 512; its "tokens/s" count every position),
# attention fused with the padding mask as its key bias (the default)
# against decomposed (the (B, H, T, T) scores and probabilities stored):
# the same model, losses within bf16 training's bound.
if python3 "$here/make_batch.py" "$here/bin/bert-large-bf16.cuda.train" \
    "$out/bert-large-batch" > "$out/bert-large-batch.log" 2>&1; then
  measure bert-large-bf16 "$here/bin/bert-large-bf16.cuda.train" \
    --batch-dir "$out/bert-large-batch"
  grep -h "does not take" "$out/bert-large-bf16.out" | sort -u |
    tee -a "$summary"
  measure bert-large-bf16-decomposed \
    "$here/bin/bert-large-bf16-decomposed.cuda.train" \
    --batch-dir "$out/bert-large-batch"
  if [ -f "$out/bert-large-bf16.jsonl" ] &&
      [ -f "$out/bert-large-bf16-decomposed.jsonl" ]; then
    check bert-large-fused-losses python3 "$here/compare_losses.py" \
      "$out/bert-large-bf16.jsonl" "$out/bert-large-bf16-decomposed.jsonl" \
      --tolerance bf16-training
  fi
else
  note "FAIL bert-large-batch: $(tail -1 "$out/bert-large-batch.log")"
  failed=$((failed + 1))
fi
# Where the time goes: each kernel's and library call's wall time over 4
# steps (ANVIL_PROFILE=1: every launch synchronized), for the next change.
for name in gpt2 gpt2-bf16; do
  exe="$here/bin/gpt2-124m.cuda.train"
  [ "$name" = gpt2-bf16 ] && exe="$here/bin/gpt2-124m-bf16.cuda.train"
  ANVIL_PROFILE=1 "$exe" --steps 4 --seed 1 > "$out/$name.profile.txt" 2>&1 ||
    note "profile of $name failed: $(tail -1 "$out/$name.profile.txt")"
done
# ratio WHAT NUMERATOR DENOMINATOR [SUFFIX]: a line of the summary with
# NUMERATOR.json's tokens/s over DENOMINATOR.json's, when both were measured.
ratio() {
  local what=$1 num="$out/$2.json" den="$out/$3.json" suffix=${4:-}
  [ -f "$num" ] && [ -f "$den" ] || return 0
  python3 - "$num" "$den" "$what" "$suffix" <<'PY' | tee -a "$summary"
import json, sys
num, den = (json.load(open(p)) for p in sys.argv[1:3])
print(f"ratio: {sys.argv[3]} tokens/s = "
      f"{num['tokens_per_s'] / den['tokens_per_s']:.3f}{sys.argv[4]}")
PY
}
ratio "Anvil bf16 / Anvil f32" gpt2-bf16 gpt2
ratio "Anvil bf16 fused attention / decomposed" gpt2-bf16 gpt2-bf16-decomposed
ratio "Anvil bf16 cuDNN attention / Anvil's attention kernels" gpt2-bf16 \
  gpt2-bf16-anvil-attention
ratio "Anvil bf16 attention on bf16 / f32 tensors (cuDNN)" gpt2-bf16 \
  gpt2-bf16-f32attention
ratio "Anvil bf16 GEMM epilogues / bias and GELU kernels" gpt2-bf16 gpt2-bf16-unfused
ratio "Anvil bf16 horizontal fusion / a kernel per dispatch" gpt2-bf16 \
  gpt2-bf16-separate
ratio "Anvil bf16 row groups / a layer norm's kernels apart" gpt2-bf16 \
  gpt2-bf16-rowsapart
ratio "Anvil bf16 embedding gradient call / loop" gpt2-bf16 \
  gpt2-bf16-embedloop
ratio "Anvil bf16 padded logits rows / unpadded" gpt2-bf16 gpt2-bf16-unpadded
ratio "Anvil bf16 CUDA graph / asynchronous launches" gpt2-bf16 gpt2-bf16-async
ratio "Anvil bf16 CUDA graph / synchronized launches" gpt2-bf16 gpt2-bf16-sync
ratio "Anvil BERT-large bf16 fused attention (key bias) / decomposed" \
  bert-large-bf16 bert-large-bf16-decomposed
ratio "Anvil GPT-2 350M fp8 / bf16" gpt2-350m-fp8 gpt2-350m-bf16 " (target 1.25)"
ratio "Anvil GPT-2 350M fp8 delayed / bf16" gpt2-350m-fp8-delayed \
  gpt2-350m-bf16 " (target 1.25)"
grep "^ratio:" "$out/gemmalign.txt" 2>/dev/null | tee -a "$summary"

# 5: PyTorch, when it is there.
if python3 -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  if python3 "$here/torch_gpt2.py" --steps "$steps" > "$out/torch.jsonl" 2> "$out/torch.log"; then
    python3 - "$out/torch.jsonl" "$out/gpt2.json" "$out/gpt2-bf16.json" \
        "$out/gpt2-bf16-async.json" <<'PY' | tee -a "$summary"
import json, os, sys
peers = [json.loads(line) for line in open(sys.argv[1])]
for path in sys.argv[2:]:
    if not os.path.exists(path):
        continue
    anvil = json.load(open(path))
    for peer in peers:
        print(f"ratio: Anvil {anvil['program']} / PyTorch {peer['mode']} "
              f"({peer['dtype']}) tokens/s = "
              f"{anvil['tokens_per_s'] / peer['tokens_per_s']:.3f} "
              f"({anvil['tokens_per_s']:.0f} / {peer['tokens_per_s']:.0f})")
        mine = anvil.get("device_memory_used_bytes")
        theirs = peer.get("device_memory_used_bytes")
        if mine and theirs:
            print(f"ratio: Anvil {anvil['program']} / PyTorch {peer['mode']} "
                  f"({peer['dtype']}) device memory in use = "
                  f"{mine / theirs:.3f} ({mine / 2**30:.2f} / "
                  f"{theirs / 2**30:.2f} GiB)")
PY
  else
    note "torch: failed ($(tail -1 "$out/torch.log"))"
  fi
else
  note "torch: not installed with CUDA here; no peer ratio"
fi
note "checks failed: $failed"
exit $((failed > 0))
