#!/usr/bin/env python3
"""Calibrates tau of the attention kernel selector (row-wise when
rho - tau / log2(S/16)^2 < 0, kernels/include/stof/kernels/selector.hpp) on the
GPU present: times the block-wise kernel the selector would run (the Hopper
kernel on compute capability 9.0, else the sm_80 one) and the row-wise kernel
over a grid of masks (bands, random blocks, random elements, per-head windows)
and lengths at head dims 64 and 128, lists the points where the row-wise kernel
is faster, and picks the tau that loses the least time against always running
the faster kernel. Each point also records the mask's tile fill (kept entries /
the in-range area of its listed 64x64 tiles: the share of the block-wise
kernel's work that is kept), where a kernel whose work follows the kept entries
should win if anywhere.

  tools/bench/calibrate_selector.py [--lib build/lib/libstof.so] [--json F] [--quick]
"""
import argparse
import json
import math
import sys
import time

import numpy as np
from mha import block_random
from stof_ctypes import Stof, StofError

try:
    import torch
    import triton.testing
except ImportError as e:
    sys.exit(f"calibrate_selector.py needs torch and triton: {e}")

# (B, H, D, lengths)
SHAPES = [(4, 12, 64, [128, 256, 512, 1024, 2048, 4096, 8192]), (2, 32, 128, [512, 1024, 4096, 8192])]
QUICK = [(4, 12, 64, [256, 1024, 4096]), (2, 32, 128, [1024, 4096])]


def masks(s, heads):
    """(name, keep) pairs: keep [S, S], or [heads, S, S] for the per-head window."""
    i = np.arange(s)[:, None]
    j = np.arange(s)[None, :]
    diag = i == j
    if s <= 2048:
        yield "causal", j <= i
    for w in (4, 16, 64, 256):
        if 2 * w < s:
            yield f"sliding:{w}", np.abs(i - j) <= w
    nb = (s + 63) // 64
    for r in (1, 4):
        if r < nb:
            blocks = block_random(nb, r, 11)
            yield f"random:64:{r}", blocks[i // 64, j // 64] | diag
    g = np.random.default_rng(5)
    for pct in (0.5, 1, 2, 5):
        yield f"random_elem:{pct}%", (g.random((s, s), dtype=np.float32) < pct / 100) | diag
    yield "perhead_window", np.abs(i - j)[None] < (16 << (np.arange(heads) % 5))[:, None, None]
    yield "diagonal", diag


def tile_fill(keep):
    """kept entries / the in-range area of the 64x64 tiles that keep anything (over every head's pattern)."""
    k = keep if keep.ndim == 3 else keep[None]
    p, s, _ = k.shape
    nb = (s + 63) // 64
    pad = np.zeros((p, nb * 64, nb * 64), bool)
    pad[:, :s, :s] = k
    listed = pad.reshape(p, nb, 64, nb, 64).any(axis=(2, 4))
    edge = np.minimum(64, s - 64 * np.arange(nb))
    area = (listed * edge[None, :, None] * edge[None, None, :]).sum()
    return float(k.sum() / area) if area else 0.0


def lost_ms(points, tau):
    """Time lost against the faster kernel at every point when the selector uses tau."""
    t = 0.0
    for p in points:
        row = p["rho"] - tau / math.log2(p["S"] / 16) ** 2 < 0
        t += (p["row_ms"] if row else p["block_ms"]) - min(p["row_ms"], p["block_ms"])
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib")
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="fewer lengths")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("calibrate_selector.py: no CUDA device")
    try:
        stof = Stof(a.lib)
    except StofError as e:
        sys.exit(f"calibrate_selector.py: {e}")
    points = []
    t0 = time.time()
    for b, h, d, lengths in QUICK if a.quick else SHAPES:
        for s in lengths:
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
            o = torch.empty_like(q)
            for name, keep in masks(s, h):
                m = stof.mask(keep[None] if keep.ndim == 3 else keep)
                t = {}
                for kern in ("block-wise-sm90", "row-wise"):
                    fn = lambda kern=kern: stof.attention(q, k, v, o, m, 1 / math.sqrt(d), kern)  # noqa: E731
                    t[kern] = triton.testing.do_bench(fn, warmup=5, rep=30, return_mode="median")
                pt = {"B": b, "H": h, "D": d, "S": s, "mask": name, "rho": m.stats["rho"],
                      "density": m.stats["density"], "fill": tile_fill(keep), "block_ms": t["block-wise-sm90"],
                      "row_ms": t["row-wise"]}
                points.append(pt)
                print(f"[{time.time() - t0:5.1f} s] D={d} S={s} {name}: rho {pt['rho']:.4f} fill {pt['fill']:.4f} "
                      f"block {pt['block_ms']:.4f} ms row {pt['row_ms']:.4f} ms ({pt['block_ms'] / pt['row_ms']:.2f}x)",
                      file=sys.stderr, flush=True)

    tau = min((x / 100 for x in range(0, 3001, 5)), key=lambda x: (lost_ms(points, x), x))
    total = sum(min(p["row_ms"], p["block_ms"]) for p in points)
    wins = [p for p in points if p["row_ms"] < p["block_ms"]]
    print(f"row-wise faster at {len(wins)} of {len(points)} points:")
    for p in wins:
        print(f"  D={p['D']} S={p['S']} {p['mask']}: fill {p['fill']:.4f} rho {p['rho']:.4f} "
              f"{p['block_ms'] / p['row_ms']:.2f}x")
    print(f"tau fitted {tau} (time lost {lost_ms(points, tau):.4f} ms of {total:.3f} ms); current tau {stof.tau()} "
          f"loses {lost_ms(points, stof.tau()):.4f} ms")
    if a.json:
        result = {"gpu": torch.cuda.get_device_name(), "points": points, "tau_fitted": tau,
                  "loss_fitted_ms": lost_ms(points, tau), "tau_current": stof.tau(),
                  "loss_current_ms": lost_ms(points, stof.tau()), "oracle_total_ms": total}
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
