#!/usr/bin/env python3
"""anvil-plan against published MLPerf Training step times.

usage: check_plan.py ANVIL_PLAN [--markdown]

For each run of issue 11's validation table (seconds per optimizer step
from the submissions' logs; micro-batch 1, sequence parallelism and the
distributed optimizer on, no recomputation, FP8), predicts the submitted
configuration and checks it within 15%; checks the GPT-3 175B scaling from
3,584 to 10,752 GPUs (time ratio over GPU ratio) within 5 points; and
searches each run's GPU count for the fastest configuration that fits,
which must be predicted no slower than the submitted one. Prints one line
per run (or a Markdown table with --markdown) and exits 1 on a failure.
"""
import json
import subprocess
import sys

# (name, model, config, extra flags, GPUs, tp, pp, vp, cp, dp, gbs, seq,
#  published s/step)
RUNS = [
    ("GPT-3 175B, v3.1, Eos, 10,752 H100", "gpt", "gpt3-175b", [],
     10752, 4, 8, 12, 1, 336, 2688, 2048, 0.930),
    ("GPT-3 175B, v3.0, CoreWeave, 3,584 H100", "gpt", "gpt3-175b", [],
     3584, 4, 8, 12, 1, 112, 2688, 2048, 2.599),
    ("GPT-3 175B, v3.1, Eos, 512 H100", "gpt", "gpt3-175b", [],
     512, 4, 8, 12, 1, 16, 2048, 2048, 11.05),
    ("Llama 3.1 405B, v5.0, Eos, 8,192 H100", "llama", "llama3.1-405b-mlperf",
     [], 8192, 8, 8, 8, 2, 64, 1536, 8192, 5.18),
    # The same FLOPs as the fused q/k/v projection, which has no
    # tensor-parallel layout yet.
    ("Llama 2 70B LoRA, v4.0, 8 H100", "llama", "llama2-70b-lora",
     ["--set", "fused_qkv=0"], 8, 4, 1, 1, 1, 2, 8, 8192, 3.71),
]
BOUND = 0.15
SCALING_POINTS = 5.0


def plan(tool, model, config, extra, gpus, gbs, seq, fixed):
    cmd = [tool, "--model", model, "--config", config, "--gpu", "h100-sxm",
           "--gpus", str(gpus), "--gbs", str(gbs), "--seq", str(seq),
           "--mbs", "1", "--precision", "fp8", "--report=json"] + extra
    for flag, value in fixed.items():
        cmd += [f"--{flag}", str(value)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"check_plan: {' '.join(cmd)} failed:\n{p.stderr}")
    return json.loads(p.stdout)


def main():
    tool = sys.argv[1]
    markdown = "--markdown" in sys.argv
    failures = []
    rows = []
    times = {}
    for (name, model, config, extra, gpus, tp, pp, vp, cp, dp, gbs, seq,
         published) in RUNS:
        got = plan(tool, model, config, extra, gpus, gbs, seq,
                   dict(tp=tp, pp=pp, vp=vp, cp=cp, dp=dp))
        t = got["step_time_s"]
        times[gpus, model] = t
        error = t / published - 1
        if abs(error) > BOUND or not got["fits"]:
            failures.append(f"{name}: predicted {t:.3f} s, published "
                            f"{published} s ({100 * error:+.1f}%), fits "
                            f"{got['fits']}")
        best = plan(tool, model, config, extra, gpus, gbs, seq, {})["best"][0]
        if best["step_time_s"] > t * (1 + 1e-9):
            failures.append(f"{name}: the search's best "
                            f"{best['step_time_s']:.3f} s is slower than "
                            f"the submitted configuration's {t:.3f} s")
        c = best["config"]
        found = (f"tp={c['tp']} pp={c['pp']} vp={c['vp']} cp={c['cp']} "
                 f"dp={c['dp']}: {best['step_time_s']:.3f} s")
        rows.append((name, tp, pp, vp, cp, dp, published, t, error,
                     got["mfu"], got["memory_per_gpu_bytes"], found))
    # GPT-3 scaling from 3,584 to 10,752 GPUs: speed-up over 3x.
    published_eff = 2.599 / 0.930 / 3 * 100
    predicted_eff = times[3584, "gpt"] / times[10752, "gpt"] / 3 * 100
    if abs(predicted_eff - published_eff) > SCALING_POINTS:
        failures.append(f"GPT-3 scaling 3,584 -> 10,752 GPUs: predicted "
                        f"{predicted_eff:.1f}%, published {published_eff:.1f}%")
    if markdown:
        print("| run | TP/PP/VP/CP/DP | published s/step | predicted | error "
              "| MFU (FP8 peak) | memory/GPU | search's best |")
        print("|---|---|---|---|---|---|---|---|")
        for (name, tp, pp, vp, cp, dp, published, t, error, mfu, mem,
             found) in rows:
            print(f"| {name} | {tp}/{pp}/{vp}/{cp}/{dp} | {published} | "
                  f"{t:.3f} | {100 * error:+.1f}% | {100 * mfu:.1f}% | "
                  f"{mem / 1e9:.1f} GB | {found} |")
    else:
        for (name, tp, pp, vp, cp, dp, published, t, error, mfu, mem,
             found) in rows:
            print(f"check_plan: {name}: predicted {t:.3f} s, published "
                  f"{published} s ({100 * error:+.1f}%); search: {found}")
    print(f"check_plan: GPT-3 175B scaling 3,584 -> 10,752 GPUs: predicted "
          f"{predicted_eff:.1f}%, published {published_eff:.1f}%")
    for f in failures:
        print("check_plan: FAIL " + f)
    if failures:
        sys.exit(1)
    print(f"check_plan: {len(rows)} runs within {int(BOUND * 100)}%, scaling "
          f"within {SCALING_POINTS:.0f} points, every search at least as fast")


if __name__ == "__main__":
    main()
