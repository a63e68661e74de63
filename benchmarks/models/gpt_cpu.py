#!/usr/bin/env python3
"""GPT training throughput on this machine's CPU: Anvil against the machine's
SGEMM rate and against peer frameworks, all measured in the same run.

usage: benchmarks/models/gpt_cpu.py [--build DIR] [--steps N]
           [--layers 6] [--width 512] [--heads 8] [--context 256] [--batch 8]

The model is GPT-2's architecture (pre-norm blocks, learned positions,
tanh-GELU MLP, tied embeddings, GPT-2's vocabulary of 50,257 tokens,
AdamW) at the given size; every framework trains the same model on the
same batch shape with f32 everywhere.

1. Ceiling: anvil-sgemm-rate, i.e. OpenBLAS SGEMM through the same runtime
   call the compiled step makes, on this model's largest GEMM shapes; the
   best rate is the ceiling.
2. Anvil: anvil-compile --target=cpu (timed), then the executable trains
   on synthetic tokens; per-step times come from its metrics log (the
   first step is dropped as warm-up) and the median is reported.
3. JAX (XLA on the CPU) and PyTorch eager, where installed: the same model
   written for each, the same step (forward, backward, AdamW), timed by
   median step after a warm-up (and, for JAX, its jit compile time).

The last lines print the ratios. FLOPs per step are Anvil's own count
(the cost interface summed over the step), used for every framework.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode:
        sys.exit(f"gpt_cpu: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


def sgemm_ceiling(build, c, tokens, vocab):
    shapes = [(tokens, 3 * c, c), (tokens, 4 * c, c), (tokens, c, 4 * c),
              (tokens, vocab, c)]
    args = [str(x) for s in shapes for x in s]
    out = run([os.path.join(build, "bin", "anvil-sgemm-rate")] + args)
    rates = [float(line.split(": ")[1].split()[0]) for line in out.splitlines()]
    for line in out.splitlines():
        print("  " + line)
    return max(rates)


def anvil(build, a, work):
    exe = os.path.join(work, "gpt.train")
    fields = (f"layers={a.layers},width={a.width},heads={a.heads},"
              f"context={a.context},seq_len={a.context},batch={a.batch},"
              f"dropout=0")
    t0 = time.perf_counter()
    report = run([os.path.join(build, "bin", "anvil-compile"), "--model",
                  "gpt", "--config", "gpt2-124m", "--set", fields, "--lr=3e-4",
                  "--target=cpu", "-o", exe, "--report=json"])
    compile_s = time.perf_counter() - t0
    r = json.loads(report)
    log = os.path.join(work, "metrics.jsonl")
    run([exe, "--steps", str(a.steps + 1), "--log-every", "1", "--log", log,
         "--seed", "1"])
    rows = [json.loads(line) for line in open(log)][1:]
    ms = statistics.median(row["ms_per_step"] for row in rows)
    manifest = json.loads(run([exe, "--print-manifest"]))
    return {"compile_s": compile_s, "ms": ms, "losses": [x["loss"] for x in rows],
            "flops": manifest["flops_per_step"], "planned_bytes":
            manifest["planned_bytes"], "dispatches": r["dispatches_per_step"],
            "vocab": r["vocab"], "parameters": r["parameters"]}


def jax_peer(a, vocab):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    C, H, T, B, L = a.width, a.heads, a.context, a.batch, a.layers
    D = C // H
    key = jax.random.PRNGKey(0)

    def normal(k, shape, std=0.02):
        return std * jax.random.normal(k, shape, jnp.float32)

    keys = iter(jax.random.split(key, 8 + 8 * L))
    params = {"wte": normal(next(keys), (vocab, C)),
              "wpe": normal(next(keys), (T, C)),
              "lnf_g": jnp.ones(C), "lnf_b": jnp.zeros(C), "h": []}
    for _ in range(L):
        params["h"].append({
            "ln1_g": jnp.ones(C), "ln1_b": jnp.zeros(C),
            "attn_w": normal(next(keys), (C, 3 * C)), "attn_b": jnp.zeros(3 * C),
            "proj_w": normal(next(keys), (C, C)), "proj_b": jnp.zeros(C),
            "ln2_g": jnp.ones(C), "ln2_b": jnp.zeros(C),
            "fc_w": normal(next(keys), (C, 4 * C)), "fc_b": jnp.zeros(4 * C),
            "mp_w": normal(next(keys), (4 * C, C)), "mp_b": jnp.zeros(C)})

    def ln(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * g + b

    mask = jnp.tril(jnp.ones((T, T), bool))

    def loss_fn(p, tokens, targets):
        x = p["wte"][tokens] + p["wpe"][None]
        for blk in p["h"]:
            h = ln(x, blk["ln1_g"], blk["ln1_b"])
            qkv = h @ blk["attn_w"] + blk["attn_b"]
            q, k, v = jnp.split(qkv.reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4), 3)
            s = (q[0] @ k[0].swapaxes(-1, -2)) / math.sqrt(D)
            s = jnp.where(mask, s, -jnp.inf)
            y = jax.nn.softmax(s, -1) @ v[0]
            x = x + y.transpose(0, 2, 1, 3).reshape(B, T, C) @ blk["proj_w"] + blk["proj_b"]
            h = ln(x, blk["ln2_g"], blk["ln2_b"])
            h = jax.nn.gelu(h @ blk["fc_w"] + blk["fc_b"], approximate=True)
            x = x + h @ blk["mp_w"] + blk["mp_b"]
        logits = ln(x, p["lnf_g"], p["lnf_b"]) @ p["wte"].T
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.take_along_axis(logp, targets[..., None], -1).mean()

    def step(p, m, v, t, tokens, targets):
        loss, g = jax.value_and_grad(loss_fn)(p, tokens, targets)
        t = t + 1
        b1, b2, lr, wd, eps = 0.9, 0.999, 3e-4, 0.0, 1e-8
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * (m / c1 / (jnp.sqrt(v / c2) + eps) + wd * p),
            p, m, v)
        return p, m, v, t, loss

    jstep = jax.jit(step, donate_argnums=(0, 1, 2))
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    m, v, t = zeros, jax.tree_util.tree_map(jnp.zeros_like, params), 0.0
    tokens = jax.random.randint(next(keys), (B, T), 0, vocab)
    targets = jnp.roll(tokens, -1, axis=1)
    t0 = time.perf_counter()
    params, m, v, t, loss = jstep(params, m, v, t, tokens, targets)
    loss.block_until_ready()
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        params, m, v, t, loss = jstep(params, m, v, t, tokens, targets)
        loss.block_until_ready()
        times.append(time.perf_counter() - t0)
    return {"name": f"JAX {jax.__version__} (XLA CPU)", "compile_s": compile_s,
            "ms": 1e3 * statistics.median(times)}


def torch_peer(a, vocab):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    C, H, T, B, L = a.width, a.heads, a.context, a.batch, a.layers
    D = C // H
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(C), torch.nn.LayerNorm(C)
            self.attn, self.proj = torch.nn.Linear(C, 3 * C), torch.nn.Linear(C, C)
            self.fc, self.mp = torch.nn.Linear(C, 4 * C), torch.nn.Linear(4 * C, C)

        def forward(self, x):
            q, k, v = self.attn(self.ln1(x)).split(C, dim=2)
            q, k, v = (z.view(B, T, H, D).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.mp(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(vocab, C)
            self.wpe = torch.nn.Embedding(T, C)
            self.h = torch.nn.ModuleList(Block() for _ in range(L))
            self.lnf = torch.nn.LayerNorm(C)

        def forward(self, tokens, targets):
            x = self.wte(tokens) + self.wpe(torch.arange(T))
            for blk in self.h:
                x = blk(x)
            logits = self.lnf(x) @ self.wte.weight.T
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.0)
    tokens = torch.randint(0, vocab, (B, T))
    targets = torch.roll(tokens, -1, 1)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        opt.step()

    step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"name": f"PyTorch {torch.__version__} eager", "compile_s": None,
            "ms": 1e3 * statistics.median(times)}


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    tokens = a.batch * a.context
    print(f"GPT {a.layers} layers, width {a.width}, {a.heads} heads, context "
          f"{a.context}, batch {a.batch} ({tokens} tokens per step), f32, "
          f"{os.cpu_count()} CPU threads")
    with tempfile.TemporaryDirectory() as work:
        print("Anvil:")
        an = anvil(a.build, a, work)
        vocab = an["vocab"]
        print(f"  parameters {an['parameters']:,}, vocabulary {vocab}, "
              f"{an['flops'] / 1e9:.1f} GFLOP per step (cost interface), "
              f"{an['dispatches']} dispatches, workspace "
              f"{an['planned_bytes'] / 2**20:.0f} MiB")
        print(f"  compile {an['compile_s']:.1f} s; step {an['ms']:.0f} ms "
              f"(median of {a.steps}), loss {an['losses'][0]:.3f} -> "
              f"{an['losses'][-1]:.3f}")
        print("SGEMM ceiling (anvil-sgemm-rate, this model's GEMM shapes):")
        ceiling = sgemm_ceiling(a.build, a.width, tokens, vocab)
        peers = []
        for fn in (jax_peer, torch_peer):
            p = fn(a, vocab)
            if p:
                peers.append(p)
                extra = (f", jit compile {p['compile_s']:.1f} s"
                         if p["compile_s"] is not None else "")
                print(f"{p['name']}: step {p['ms']:.0f} ms (median of "
                      f"{a.steps}){extra}")
        if not peers:
            print("peers: neither JAX nor PyTorch is installed "
                  "(pip install jax; see benchmarks/README.md)")

    gflops = an["flops"] / (an["ms"] / 1e3) / 1e9
    print()
    print(f"anvil: {tokens / (an['ms'] / 1e3):.0f} tokens/s, {gflops:.1f} "
          f"GFLOP/s, {gflops / ceiling:.2f} x the SGEMM rate ({ceiling:.1f} "
          f"GFLOP/s)")
    for p in peers:
        print(f"anvil / {p['name']}: {p['ms'] / an['ms']:.2f} x its tokens/s")


if __name__ == "__main__":
    main()
