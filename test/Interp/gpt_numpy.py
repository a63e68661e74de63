"""An independent GPT forward pass in NumPy (float64), to check anvil-interp.

  gpt_numpy.py inputs DIR --layers L --width C --heads H --context N --vocab V --batch B --seq T
      writes DIR/<name>.npy for every parameter and input of the forward graph
      (random weights, layer norm weights and biases included, and targets
      with some positions set to the ignore index -100)
  gpt_numpy.py check DIR RESULT.npy --layers ... (same flags) [--rtol 1e-9]
      recomputes the loss from DIR and compares it with RESULT.npy

The model is written from the GPT-2 definition (pre-norm blocks, tanh GELU,
learned positions, tied output embedding, mean cross-entropy), not from
Anvil's code.
"""
import argparse
import sys

import numpy as np


def param_shapes(a):
    c = a.width
    shapes = {"wte.weight": (a.vocab, c), "wpe.weight": (a.context, c)}
    for i in range(a.layers):
        p = f"h.{i}."
        shapes.update({
            p + "ln_1.weight": (c,), p + "ln_1.bias": (c,),
            p + "attn.c_attn.weight": (c, 3 * c), p + "attn.c_attn.bias": (3 * c,),
            p + "attn.c_proj.weight": (c, c), p + "attn.c_proj.bias": (c,),
            p + "ln_2.weight": (c,), p + "ln_2.bias": (c,),
            p + "mlp.c_fc.weight": (c, 4 * c), p + "mlp.c_fc.bias": (4 * c,),
            p + "mlp.c_proj.weight": (4 * c, c), p + "mlp.c_proj.bias": (c,),
        })
    shapes.update({"ln_f.weight": (c,), "ln_f.bias": (c,)})
    return shapes


def make_inputs(a):
    rng = np.random.default_rng(1234)
    for name, shape in param_shapes(a).items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            value = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            value = 0.2 * rng.standard_normal(shape)
        np.save(f"{a.dir}/{name}.npy", value.astype(np.float32))
    tokens = rng.integers(0, a.vocab, size=(a.batch, a.seq), dtype=np.int32)
    targets = rng.integers(0, a.vocab, size=(a.batch, a.seq), dtype=np.int32)
    targets[0, :3] = -100  # ignored positions
    np.save(f"{a.dir}/tokens.npy", tokens)
    np.save(f"{a.dir}/targets.npy", targets)


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def forward(a):
    P = {n: np.load(f"{a.dir}/{n}.npy").astype(np.float64) for n in param_shapes(a)}
    tokens = np.load(f"{a.dir}/tokens.npy")
    targets = np.load(f"{a.dir}/targets.npy")
    B, T, C, H = a.batch, a.seq, a.width, a.heads
    D = C // H
    x = P["wte.weight"][tokens] + P["wpe.weight"][:T]
    causal = np.tril(np.ones((T, T), dtype=bool))
    for i in range(a.layers):
        p = f"h.{i}."
        h = layer_norm(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"])
        qkv = h @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"]
        q, k, v = np.split(qkv, 3, axis=-1)
        q, k, v = (t.reshape(B, T, H, D).transpose(0, 2, 1, 3) for t in (q, k, v))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)
        s = np.where(causal, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        att = (s / s.sum(-1, keepdims=True)) @ v
        att = att.transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + att @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"]
        h = layer_norm(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"])
        m = gelu_tanh(h @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"])
        x = x + m @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"]
    x = layer_norm(x, P["ln_f.weight"], P["ln_f.bias"])
    logits = x @ P["wte.weight"].T
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    keep = targets != -100
    picked = np.take_along_axis(logp, np.where(keep, targets, 0)[..., None], -1)[..., 0]
    return -(picked[keep]).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["inputs", "check"])
    ap.add_argument("dir")
    ap.add_argument("result", nargs="?")
    for f in ["layers", "width", "heads", "context", "vocab", "batch", "seq"]:
        ap.add_argument("--" + f, type=int, required=True)
    ap.add_argument("--rtol", type=float, default=1e-9)
    a = ap.parse_args()
    if a.mode == "inputs":
        make_inputs(a)
        return 0
    expected = forward(a)
    got = float(np.load(a.result))
    rel = abs(got - expected) / abs(expected)
    print(f"numpy loss {expected:.17g}, anvil-interp loss {got:.17g}, relative difference {rel:.3g}")
    if not rel <= a.rtol:
        print(f"FAIL: relative difference above {a.rtol}", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
