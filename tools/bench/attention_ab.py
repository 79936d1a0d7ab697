#!/usr/bin/env python3
"""One attention kernel from several libstof.so builds, interleaved in one process on the same inputs.

Every build runs each case once on the same random fp16 data (seed 1) into a NaN-poisoned output;
the outputs of all builds must be bit-identical (a kernel change that moves results is not a pure
speed change), or with --max-diff X within X of the first build's everywhere (a column then shows
the largest difference).
Then each build is timed in --rounds interleaved rounds (triton's do_bench; each build first in
one round in turn) and the best time is kept;
beside each speed, the range of the per-round speeds shows the run's noise. Dense and causal cases
also time cuDNN (SDPA) on the same inputs.

  tools/bench/attention_ab.py --build main=build-gpu/lib/libstof.so --build new=OTHER/lib/libstof.so
                              [--kernel block-wise-sm90] [--only REGEX] [--rounds N] [--max-diff X]
                              [--markdown F]
"""
import argparse
import math
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
import triton.testing

from mha import make_mask
from stof_ctypes import KERNEL, Stof

# (B, H, H_kv, D, S, mask)
CASES = [(1, 32, 8, 64, 4096, "causal"), (8, 12, 12, 64, 1024, "causal"), (4, 12, 12, 64, 4096, "causal"),
         (4, 12, 12, 64, 4096, "dense"), (4, 12, 12, 64, 4096, "sliding"), (4, 12, 12, 64, 4096, "longformer"),
         (4, 12, 12, 64, 4096, "bigbird"), (8, 12, 12, 64, 2048, "sliding"), (1, 32, 32, 128, 8192, "causal"),
         (2, 32, 32, 128, 4096, "causal"), (1, 32, 32, 128, 8192, "longformer"), (1, 32, 32, 128, 8192, "dense"),
         (1, 32, 32, 128, 8192, "sliding"), (16, 12, 12, 64, 2048, "paper_bigbird"),
         (1, 12, 12, 64, 4096, "paper_longformer"), (8, 12, 12, 64, 512, "paper_bigbird"),
         (8, 12, 12, 64, 2048, "paper_bigbird"), (16, 12, 12, 64, 2048, "paper_longformer"),
         (16, 12, 12, 64, 2048, "paper_sliding"), (8, 12, 12, 64, 4096, "paper_bigbird"),
         (1, 12, 12, 64, 2048, "paper_longformer"), (1, 12, 12, 64, 2048, "paper_bigbird"),
         (1, 12, 12, 64, 4096, "paper_bigbird"), (8, 12, 12, 64, 1024, "dense"), (2, 32, 32, 128, 4096, "dense")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", required=True, metavar="LABEL=LIB",
                    help="a libstof.so to time; the first is the baseline (give two or more)")
    ap.add_argument("--kernel", default="block-wise-sm90", choices=list(KERNEL))
    ap.add_argument("--only", default="", metavar="REGEX", help="cases whose name (e.g. B4-H12-D64-S4096-causal) matches")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds per case (default 3)")
    ap.add_argument("--max-diff", type=float, default=0.0, metavar="X",
                    help="accept outputs within X (absolute) of the first build's (default 0: bit-identical)")
    ap.add_argument("--case", action="append", default=[], metavar="B,H,H_KV,D,S,MASK",
                    help="time this case instead of the built-in list (repeatable; e.g. 2,32,32,128,4096,dense)")
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args()
    cases = CASES
    if a.case:
        try:
            cases = [(*map(int, c.split(",")[:5]), c.split(",")[5]) for c in a.case]
            for _, h, _, _, _, m in cases:
                make_mask(m, 128, h)
        except (ValueError, IndexError):
            sys.exit("attention_ab.py: --case takes B,H,H_KV,D,S,MASK (five integers and a mask name of mha.py)")
    builds = dict(b.split("=", 1) for b in a.build)
    if len(builds) < 2 or any(not Path(p).is_file() for p in builds.values()):
        sys.exit("attention_ab.py: give two or more --build LABEL=LIB with distinct labels and existing files")
    if a.rounds < 1:
        sys.exit("attention_ab.py: --rounds must be at least 1")
    libs = {n: Stof(p) for n, p in builds.items()}
    names = list(libs)
    head = ["B", "H / KV", "D", "S", "mask", *[f"{n} µs" for n in names], *[f"{n} speed" for n in names[1:]], "cuDNN µs"]
    if a.max_diff > 0:
        head.append("max diff")
    lines = [torch.cuda.get_device_name(), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    print("\n".join(lines), flush=True)
    for b, h, hkv, d, s, m in cases:
        if not re.search(a.only, f"B{b}-H{h}-D{d}-S{s}-{m}"):
            continue
        keep = make_mask(m, s, h)
        g = torch.Generator(device="cuda").manual_seed(1)
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.float16, generator=g)
        k, v = (torch.randn(b, hkv, s, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(2))
        scale = 1 / math.sqrt(d)
        masks = {n: L.mask(keep) for n, L in libs.items()}
        outs = {}
        for n, L in libs.items():
            outs[n] = torch.full_like(q, float("nan"))
            L.attention(q, k, v, outs[n], masks[n], scale, a.kernel)
        torch.cuda.synchronize()
        for n in names:
            if torch.isnan(outs[n]).any():
                sys.exit(f"attention_ab.py: B{b} H{h} D{d} S{s} {m}: {n} left NaN in its output")
        diff = 0.0
        for n in names[1:]:
            diff = max(diff, (outs[n].float() - outs[names[0]].float()).abs().max().item())
            if diff > a.max_diff:
                sys.exit(f"attention_ab.py: B{b} H{h} D{d} S{s} {m}: {n}'s output differs from {names[0]}'s "
                         f"by up to {diff:.3g}" + (f" (--max-diff {a.max_diff})" if a.max_diff > 0 else ""))
        times = {n: [] for n in names}
        for r in range(a.rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:  # each build first in turn
                L = libs[n]
                times[n].append(triton.testing.do_bench(
                    lambda: L.attention(q, k, v, outs[n], masks[n], scale, a.kernel), warmup=20, rep=100) * 1e3)
        best = {n: min(t) for n, t in times.items()}
        cudnn = ""
        if m in ("causal", "dense"):
            ke, ve = (x.repeat_interleave(h // hkv, 1) for x in (k, v))
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                t = triton.testing.do_bench(lambda: F.scaled_dot_product_attention(
                    q, ke, ve, is_causal=m == "causal", scale=scale), warmup=20, rep=100)
            cudnn = f"{t * 1e3:.1f}"
        def speed(n):
            rounds = [t0 / t for t0, t in zip(times[names[0]], times[n])]
            return f"{best[names[0]] / best[n]:.3f}× ({min(rounds):.2f}–{max(rounds):.2f})"

        row = [b, f"{h} / {hkv}", d, s, m, *[f"{best[n]:.1f}" for n in names], *[speed(n) for n in names[1:]], cudnn]
        if a.max_diff > 0:
            row.append(f"{diff:.2g}")
        lines.append("| " + " | ".join(map(str, row)) + " |")
        print(lines[-1], flush=True)
    if a.markdown:
        a.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
