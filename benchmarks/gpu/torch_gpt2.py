#!/usr/bin/env python3
"""The peer of the GPU bundle: GPT-2 training steps in PyTorch, eager and
torch.compile, on the same shapes as Anvil's executable (llm.c's GPT-2
124M: 12 layers, width 768, 12 heads, vocabulary 50257, batch 8 x 1024
tokens; AdamW), random tokens.

usage: torch_gpt2.py [--device cuda] [--steps 20] [--warmup 5]
                     [--modes eager,compile] [--dtype bf16|f32]
                     [--layers 12 --width 768 --heads 12 --vocab 50257
                      --batch 8 --seq 1024]

Prints one JSON object per mode: {"mode", "dtype", "tokens_per_s",
"step_ms", "peak_memory_bytes", "device_memory_used_bytes", "loss"};
timing covers --steps steps after --warmup (compilation happens in the
warm-up), synchronized. peak_memory_bytes is PyTorch's most allocated to
tensors; device_memory_used_bytes the device's total less its free memory
after the timed steps (the caching allocator's reserve, cuBLAS's
workspaces and the context included), what Anvil's executables report as
"device memory": each mode starts with the allocator's cache emptied.
"""
import gc
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.mlp_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)),
                                        approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, width, heads, vocab, context):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.h = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied embeddings
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]),
                               targets.view(-1))


def run(mode, a):
    if a.device == "cuda":  # the previous mode's cached blocks
        gc.collect()
        torch.cuda.empty_cache()
    torch.manual_seed(0)
    model = GPT(a.layers, a.width, a.heads, a.vocab, a.seq).to(a.device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4,
                            fused=a.device == "cuda")
    step_fn = model
    if mode == "compile":
        step_fn = torch.compile(model)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq), device=a.device)
    targets = torch.randint(0, a.vocab, (a.batch, a.seq), device=a.device)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)

    def step():
        with torch.autocast(a.device, dtype=dtype, enabled=a.dtype == "bf16"):
            loss = step_fn(tokens, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(a.warmup):
        step()
    sync()
    if a.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    sync()
    seconds = (time.perf_counter() - t0) / a.steps
    peak = torch.cuda.max_memory_allocated() if a.device == "cuda" else 0
    used = 0
    if a.device == "cuda":
        free, total = torch.cuda.mem_get_info()
        used = total - free
    return {"mode": mode, "dtype": a.dtype,
            "tokens_per_s": a.batch * a.seq / seconds,
            "step_ms": seconds * 1e3, "peak_memory_bytes": peak,
            "device_memory_used_bytes": used, "loss": float(loss)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f32"])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    a = ap.parse_args()
    for mode in a.modes.split(","):
        result = run(mode, a)
        if not math.isfinite(result["loss"]):
            raise SystemExit(f"torch_gpt2: {mode}: the loss is not finite")
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
