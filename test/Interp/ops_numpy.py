"""Cross-checks anvil-interp against NumPy references on random inputs.

  ops_numpy.py ANVIL_INTERP WORKDIR

Each case writes a one-op function and its inputs (.npy), runs the
interpreter, and compares the result with a NumPy implementation written
here from the op's definition (AnvilOps.td), to 1e-10. Cases cover what the
hand-computed unit tests keep small: 1-3D grouped, strided, dilated,
asymmetrically padded (transposed) convolutions, pooling with padding,
grouped-query and cross attention with causal masks and 4-D masks, group
norm over batches and spatial positions, RoPE over several positions, and
cross-entropy on 3-D logits with smoothing and ignored labels.
"""
import itertools
import os
import subprocess
import sys

import numpy as np

INTERP, WORK = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
failures = 0
count = 0


def ty(shape, et="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def arr(v):
    return "[" + ", ".join(map(str, v)) + "]"


def run(op_text, args, result_shape, result_et="f64"):
    """args: list of (name, array, element type). Returns the result array."""
    global count
    count += 1
    d = os.path.join(WORK, f"case{count}")
    os.makedirs(d, exist_ok=True)
    sig = ", ".join(f"%{n}: {ty(a.shape, et)}" for n, a, et in args)
    rt = ty(result_shape, result_et)
    with open(os.path.join(d, "f.mlir"), "w") as f:
        f.write(f"func.func @forward({sig}) -> {rt} {{\n  %r = {op_text} -> {rt}\n"
                f"  return %r : {rt}\n}}\n")
    cmd = [INTERP, os.path.join(d, "f.mlir"), "--output-dir", os.path.join(d, "out")]
    for i, (n, a, et) in enumerate(args):
        np.save(os.path.join(d, n + ".npy"), a)
        cmd += ["--input", f"arg{i}={os.path.join(d, n + '.npy')}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        return p.stderr.strip()
    return np.load(os.path.join(d, "out", "result0.npy"))


def check(name, got, ref, tol=1e-10):
    global failures
    if isinstance(got, str):
        print("FAIL", name, got)
        failures += 1
    elif got.shape != ref.shape or not np.allclose(got, ref, rtol=tol, atol=tol):
        print("FAIL", name, "shape", got.shape, ref.shape,
              "max diff", np.max(np.abs(got - ref)) if got.shape == ref.shape else "-")
        failures += 1
    else:
        print("ok", name)


def conv_ref(x, w, b, stride, pl, ph, dil, groups):
    n, _ = x.shape[:2]
    cout, cg, k = w.shape[0], w.shape[1], w.shape[2:]
    sd = len(k)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pl[i], ph[i]) for i in range(sd)])
    out = [(x.shape[2 + i] + pl[i] + ph[i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1
           for i in range(sd)]
    y = np.zeros((n, cout, *out))
    og = cout // groups
    for bi, co in itertools.product(range(n), range(cout)):
        g = co // og
        for o in itertools.product(*[range(s) for s in out]):
            acc = b[co]
            for ci, kk in itertools.product(range(cg), itertools.product(*[range(s) for s in k])):
                idx = tuple(o[i] * stride[i] + kk[i] * dil[i] for i in range(sd))
                acc += xp[(bi, g * cg + ci) + idx] * w[(co, ci) + kk]
            y[(bi, co) + o] = acc
    return y


def conv_transpose_ref(x, w, b, stride, pl, ph, dil, op, groups):
    n, cin = x.shape[:2]
    og, k = w.shape[1], w.shape[2:]
    sd, cig = len(k), cin // groups
    out = [(x.shape[2 + i] - 1) * stride[i] - pl[i] - ph[i] + dil[i] * (k[i] - 1) + op[i] + 1
           for i in range(sd)]
    y = np.zeros((n, og * groups, *out))
    for bi, ci in itertools.product(range(n), range(cin)):
        g = ci // cig
        for i in itertools.product(*[range(s) for s in x.shape[2:]]):
            for co, kk in itertools.product(range(og), itertools.product(*[range(s) for s in k])):
                idx = tuple(i[d] * stride[d] - pl[d] + kk[d] * dil[d] for d in range(sd))
                if all(0 <= idx[d] < out[d] for d in range(sd)):
                    y[(bi, g * og + co) + idx] += x[(bi, ci) + i] * w[(ci, co) + kk]
    return y + b.reshape((1, -1) + (1,) * sd)


# Convolutions: (N, Cin, Cout, spatial, kernel, stride, pad_low, pad_high, dilation, groups)
for n, cin, cout, sp, k, st, pl, ph, dil, gr in [
        (2, 4, 6, [9], [3], [2], [1], [2], [2], 2),
        (1, 6, 4, [7, 6], [3, 2], [2, 1], [1, 0], [2, 1], [1, 2], 2),
        (2, 4, 4, [5, 5], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1], 4),
        (1, 2, 4, [4, 3, 5], [2, 2, 3], [1, 2, 1], [0, 1, 1], [1, 0, 2], [1, 1, 2], 2)]:
    x = rng.standard_normal((n, cin, *sp))
    w = rng.standard_normal((cout, cin // gr, *k))
    b = rng.standard_normal(cout)
    ref = conv_ref(x, w, b, st, pl, ph, dil, gr)
    got = run(f"anvil.conv %x, %w, %b stride {arr(st)} pad_low {arr(pl)} pad_high {arr(ph)} "
              f"dilation {arr(dil)} {{groups = {gr} : i64}} : ({ty(x.shape)}, {ty(w.shape)}, "
              f"{ty(b.shape)})", [("x", x, "f64"), ("w", w, "f64"), ("b", b, "f64")], ref.shape)
    check(f"conv {len(k)}-D groups={gr}", got, ref)
    # The transpose, with output padding where the stride allows it.
    x2 = rng.standard_normal((n, cout, *sp))
    w2 = rng.standard_normal((cout, cin // gr, *k))
    b2 = rng.standard_normal(cin)
    op = [1 if s > 1 else 0 for s in st]
    ref2 = conv_transpose_ref(x2, w2, b2, st, pl, ph, dil, op, gr)
    got2 = run(f"anvil.conv_transpose %x, %w, %b stride {arr(st)} pad_low {arr(pl)} "
               f"pad_high {arr(ph)} dilation {arr(dil)} output_padding {arr(op)} "
               f"{{groups = {gr} : i64}} : ({ty(x2.shape)}, {ty(w2.shape)}, {ty(b2.shape)})",
               [("x", x2, "f64"), ("w", w2, "f64"), ("b", b2, "f64")], ref2.shape)
    check(f"conv_transpose {len(k)}-D groups={gr}", got2, ref2)

# Pooling over 2-D windows with asymmetric padding.
x = rng.standard_normal((2, 3, 7, 6))
win, st, pl, ph = [3, 2], [2, 1], [1, 0], [1, 1]
out = [(x.shape[2 + i] + pl[i] + ph[i] - win[i]) // st[i] + 1 for i in range(2)]
mx, avg, avg_pad = (np.zeros((2, 3, *out)) for _ in range(3))
for o in itertools.product(*[range(s) for s in out]):
    r0, c0 = o[0] * st[0] - pl[0], o[1] * st[1] - pl[1]
    r = slice(max(r0, 0), min(r0 + win[0], x.shape[2]))
    c = slice(max(c0, 0), min(c0 + win[1], x.shape[3]))
    window = x[:, :, r, c]
    mx[:, :, o[0], o[1]] = window.max(axis=(2, 3))
    avg[:, :, o[0], o[1]] = window.mean(axis=(2, 3))
    avg_pad[:, :, o[0], o[1]] = window.sum(axis=(2, 3)) / (win[0] * win[1])
geometry = f"window {arr(win)} stride {arr(st)} pad_low {arr(pl)} pad_high {arr(ph)}"
check("max_pool", run(f"anvil.max_pool %x {geometry} : {ty(x.shape)}", [("x", x, "f64")], mx.shape), mx)
check("avg_pool", run(f"anvil.avg_pool %x {geometry} : {ty(x.shape)}", [("x", x, "f64")], avg.shape), avg)
check("avg_pool count_include_pad",
      run(f"anvil.avg_pool %x {geometry} {{count_include_pad}} : {ty(x.shape)}",
          [("x", x, "f64")], avg_pad.shape), avg_pad)


def attention_ref(q, k, v, causal, mask, scale):
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    out = np.zeros((b, hq, tq, v.shape[3]))
    for h in range(hq):
        kh = h // (hq // hkv)
        s = q[:, h] @ k[:, kh].transpose(0, 2, 1) * scale
        if mask is not None:
            s = s + (mask if mask.ndim == 2 else mask[:, min(h, mask.shape[1] - 1)])
        if causal:
            s = np.where(np.arange(tk)[None, :] <= np.arange(tq)[:, None] + tk - tq, s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[:, h] = (p / p.sum(-1, keepdims=True)) @ v[:, kh]
    return out


# Grouped-query (4 query heads on 2 kv heads), cross attention with more
# keys than queries (causal aligned at the bottom right), a 4-D mask.
q = rng.standard_normal((2, 4, 3, 5))
k = rng.standard_normal((2, 2, 6, 5))
v = rng.standard_normal((2, 2, 6, 4))
m = rng.standard_normal((2, 1, 3, 6))
types = f"({ty(q.shape)}, {ty(k.shape)}, {ty(v.shape)}"
qkv = [("q", q, "f64"), ("k", k, "f64"), ("v", v, "f64")]
for causal in [False, True]:
    ref = attention_ref(q, k, v, causal, None, 1 / np.sqrt(5))
    attr = "{causal}" if causal else ""
    check(f"attention gqa causal={causal}",
          run(f"anvil.attention %q, %k, %v {attr} : {types})", qkv, ref.shape), ref)
ref = attention_ref(q, k, v, True, m, 0.3)
check("attention 4-D mask, scale",
      run(f"anvil.attention %q, %k, %v mask(%m) {{causal, scale = 0.3 : f64}} : "
          f"{types}, {ty(m.shape)})", qkv + [("m", m, "f64")], ref.shape), ref)

# Group norm over 2 samples with spatial positions, scale and bias.
x = rng.standard_normal((2, 6, 3, 2))
g, bb = rng.standard_normal(6), rng.standard_normal(6)
xr = x.reshape(2, 3, -1)
ref = ((xr - xr.mean(-1, keepdims=True)) / np.sqrt(xr.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
ref = ref * g.reshape(1, 6, 1, 1) + bb.reshape(1, 6, 1, 1)
check("group_norm", run(f"anvil.group_norm %x scale(%g) bias(%b) groups = 3 : ({ty(x.shape)}, "
                        f"{ty(g.shape)}, {ty(bb.shape)})",
                        [("x", x, "f64"), ("g", g, "f64"), ("b", bb, "f64")], x.shape), ref)

# RoPE over 3 positions, both pair layouts.
x = rng.standard_normal((2, 3, 3, 6))
ang = rng.standard_normal((3, 3))
cos, sin = np.cos(ang), np.sin(ang)
for interleaved in [False, True]:
    ia = np.arange(0, 6, 2) if interleaved else np.arange(3)
    ib = ia + 1 if interleaved else ia + 3
    ref = x.copy()
    ref[..., ia] = x[..., ia] * cos - x[..., ib] * sin
    ref[..., ib] = x[..., ia] * sin + x[..., ib] * cos
    attr = "{interleaved}" if interleaved else ""
    check(f"rope interleaved={interleaved}",
          run(f"anvil.rope %x, %c, %s {attr} : ({ty(x.shape)}, {ty(cos.shape)}, {ty(sin.shape)})",
              [("x", x, "f64"), ("c", cos, "f64"), ("s", sin, "f64")], x.shape), ref)

# Cross-entropy on (B, T, C) logits with smoothing and ignored labels.
z = rng.standard_normal((2, 4, 7))
y = rng.integers(0, 7, size=(2, 4))
y[1, 2] = -1
logp = z - z.max(-1, keepdims=True)
logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
s = 0.2
per = -((1 - s) * np.take_along_axis(logp, np.maximum(y, 0)[..., None], -1)[..., 0]
        + s / 7 * logp.sum(-1))
per[y == -1] = 0.0
for red, ref in [("none", per), ("mean", np.array(per[y != -1].mean())), ("sum", np.array(per.sum()))]:
    check(f"cross_entropy {red}",
          run(f"anvil.cross_entropy {red} %z, %y {{ignore_index = -1 : i64, label_smoothing = 0.2 : f64}}"
              f" : ({ty(z.shape)}, {ty(y.shape, 'i64')})",
              [("z", z, "f64"), ("y", y, "i64")], ref.shape), ref)

print(f"{count} cases, {failures} failures")
sys.exit(1 if failures else 0)
