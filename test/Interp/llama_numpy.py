"""An independent Llama forward pass in NumPy (float64), to check the Llama
builder through anvil-interp.

  llama_numpy.py inputs DIR [flags]   writes DIR/<name>.npy for every
      parameter (random, RMSNorm weights included) and the tokens/targets
  llama_numpy.py check DIR RESULT.npy [flags] [--rtol R]
      recomputes the loss from DIR and compares it with RESULT.npy

Written from Hugging Face transformers' LlamaForCausalLM (RMSNorm, rotary
embeddings with rotate_half pairs and the "llama3" rope scaling, grouped
query attention, SwiGLU, untied lm_head), not from Anvil's code.
"""
import argparse
import math
import sys

import numpy as np


def shapes(a):
    c, d = a.width, a.width // a.heads
    s = {"model.embed_tokens.weight": (a.vocab, c)}
    for i in range(a.layers):
        p = f"model.layers.{i}."
        s.update({
            p + "input_layernorm.weight": (c,),
            p + "self_attn.q_proj.weight": (a.heads * d, c),
            p + "self_attn.k_proj.weight": (a.kv_heads * d, c),
            p + "self_attn.v_proj.weight": (a.kv_heads * d, c),
            p + "self_attn.o_proj.weight": (c, a.heads * d),
            p + "post_attention_layernorm.weight": (c,),
            p + "mlp.gate_proj.weight": (a.ffn, c),
            p + "mlp.up_proj.weight": (a.ffn, c),
            p + "mlp.down_proj.weight": (c, a.ffn),
        })
    s.update({"model.norm.weight": (c,), "lm_head.weight": (a.vocab, c)})
    return s


def inv_freq(a):
    d = a.width // a.heads
    inv = a.theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    # transformers' _compute_llama3_parameters
    low_wavelen = a.original / a.low
    high_wavelen = a.original / a.high
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > low_wavelen, inv / a.factor, inv)
    smooth = (a.original / wavelen - a.low) / (a.high - a.low)
    smoothed = (1 - smooth) * scaled / a.factor + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return np.where(medium, smoothed, scaled)


def loss(a, v):
    b, t, c, h, kvh = a.batch, a.seq, a.width, a.heads, a.kv_heads
    d = c // h
    tok, tgt = v["tokens"], v["targets"]

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w

    freqs = np.outer(np.arange(t), inv_freq(a))  # (T, D/2)
    emb = np.concatenate([freqs, freqs], -1)  # (T, D)
    cos, sin = np.cos(emb), np.sin(emb)

    def rotate_half(x):
        return np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)

    x = v["model.embed_tokens.weight"][tok]
    mask = np.tril(np.ones((t, t), bool))
    for i in range(a.layers):
        p = f"model.layers.{i}."
        hs = rms(x, v[p + "input_layernorm.weight"])
        q = (hs @ v[p + "self_attn.q_proj.weight"].T).reshape(b, t, h, d).transpose(0, 2, 1, 3)
        k = (hs @ v[p + "self_attn.k_proj.weight"].T).reshape(b, t, kvh, d).transpose(0, 2, 1, 3)
        vv = (hs @ v[p + "self_attn.v_proj.weight"].T).reshape(b, t, kvh, d).transpose(0, 2, 1, 3)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, h // kvh, axis=1)
        vv = np.repeat(vv, h // kvh, axis=1)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        s = np.where(mask, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        pr = s / s.sum(-1, keepdims=True)
        y = (pr @ vv).transpose(0, 2, 1, 3).reshape(b, t, c)
        x = x + y @ v[p + "self_attn.o_proj.weight"].T
        hs = rms(x, v[p + "post_attention_layernorm.weight"])
        g = hs @ v[p + "mlp.gate_proj.weight"].T
        u = hs @ v[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ v[p + "mlp.down_proj.weight"].T
    logits = rms(x, v["model.norm.weight"]) @ v["lm_head.weight"].T
    m = logits.max(-1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, tgt[..., None], -1).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["inputs", "check"])
    ap.add_argument("dir")
    ap.add_argument("result", nargs="?")
    for f in ["layers", "width", "heads", "kv_heads", "ffn", "vocab", "batch", "seq"]:
        ap.add_argument("--" + f.replace("_", "-"), dest=f, type=int, required=True)
    ap.add_argument("--theta", type=float, default=500000.0)
    ap.add_argument("--factor", type=float, default=8.0)
    ap.add_argument("--low", type=float, default=1.0)
    ap.add_argument("--high", type=float, default=4.0)
    ap.add_argument("--original", type=float, default=8192.0)
    ap.add_argument("--rtol", type=float, default=1e-9)
    a = ap.parse_args()
    names = dict(shapes(a), tokens=(a.batch, a.seq), targets=(a.batch, a.seq))
    if a.mode == "inputs":
        rng = np.random.default_rng(42)
        for name, shape in names.items():
            if name in ("tokens", "targets"):
                x = rng.integers(0, a.vocab, shape).astype(np.int32)
            elif name.endswith("norm.weight"):
                x = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
            else:
                x = (0.2 * rng.standard_normal(shape)).astype(np.float32)
            np.save(f"{a.dir}/{name}.npy", x)
        return
    v = {n: np.load(f"{a.dir}/{n}.npy").astype(np.float64) for n in names}
    v["tokens"] = v["tokens"].astype(np.int64)
    v["targets"] = v["targets"].astype(np.int64)
    want = loss(a, v)
    got = float(np.load(a.result))
    if abs(got - want) > a.rtol * abs(want):
        sys.exit(f"llama_numpy: loss {got!r}, NumPy {want!r}")
    print(f"OK: loss {got:.10f} (NumPy {want:.10f})")


if __name__ == "__main__":
    main()
