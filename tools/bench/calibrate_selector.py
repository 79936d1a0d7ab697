#!/usr/bin/env python3
"""Calibrates tau of the attention kernel selector (row-wise when
rho - tau / log2(S/16)^2 < 0) on the GPU present: times the block-wise and the
row-wise kernel over a grid of masks and lengths, then picks the tau that loses
the least time against always running the faster kernel.

  tools/bench/calibrate_selector.py [--lib build/lib/libstof.so] [--json F]
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

LENGTHS = [128, 256, 512, 1024, 2048, 4096, 8192]


def masks(s):
    i = np.arange(s)[:, None]
    j = np.arange(s)[None, :]
    yield "causal", j <= i
    for w in (4, 16, 32, 64, 128, 256, 512):
        if 2 * w < s:
            yield f"sliding:{w}", np.abs(i - j) <= w
    nb = (s + 63) // 64
    for r in (1, 2, 4, 8):
        if r < nb:
            blocks = block_random(nb, r, 11)
            yield f"random:64:{r}", blocks[i // 64, j // 64] | (i == j)
    yield "diagonal", i == j


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib")
    ap.add_argument("--json")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-dim", type=int, default=64)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("calibrate_selector.py: no CUDA device")
    try:
        stof = Stof(a.lib)
    except StofError as e:
        sys.exit(f"calibrate_selector.py: {e}")
    b, h, d = a.batch, a.heads, a.head_dim
    points = []
    t0 = time.time()
    for s in LENGTHS:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        for name, keep in masks(s):
            m = stof.mask(keep)
            t = {kern: triton.testing.do_bench(lambda kern=kern: stof.attention(q, k, v, o, m, 1 / math.sqrt(d), kern),
                                               warmup=5, rep=30, return_mode="median")
                 for kern in ("block-wise", "row-wise")}
            points.append({"S": s, "mask": name, "rho": m.stats["rho"], "density": m.stats["density"],
                           "block_ms": t["block-wise"], "row_ms": t["row-wise"]})
            print(f"[{time.time() - t0:5.1f} s] S={s} {name}: rho {m.stats['rho']:.4f} block {t['block-wise']:.4f} ms "
                  f"row {t['row-wise']:.4f} ms", file=sys.stderr, flush=True)

    def loss(tau):
        lost = 0.0
        for p in points:
            bound = tau / math.log2(p["S"] / 16) ** 2
            chosen = p["row_ms"] if p["rho"] - bound < 0 else p["block_ms"]
            lost += chosen - min(p["row_ms"], p["block_ms"])
        return lost

    taus = [x / 100 for x in range(0, 3001, 5)]
    best = min(taus, key=lambda x: (loss(x), x))
    total = sum(min(p["row_ms"], p["block_ms"]) for p in points)
    result = {"gpu": torch.cuda.get_device_name(), "batch": b, "heads": h, "head_dim": d, "points": points,
              "tau_fitted": best, "loss_fitted_ms": loss(best), "tau_current": stof.tau(),
              "loss_current_ms": loss(stof.tau()), "oracle_total_ms": total}
    print(f"tau fitted {best} (time lost {loss(best):.4f} ms of {total:.3f} ms); current tau {stof.tau()} "
          f"loses {loss(stof.tau()):.4f} ms")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
