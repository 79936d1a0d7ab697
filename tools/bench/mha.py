#!/usr/bin/env python3
"""Sparse multi-head attention: stofc's kernels against PyTorch SDPA (explicit
mask, FlashAttention-2, cuDNN) and FlexAttention with a BlockMask, side by side
in one process on identical masks and inputs (fp16 by default).

Every implementation's output is first checked against an fp32 reference; a
failing cell is reported as FAIL, never timed. Times: triton.testing.do_bench
medians (L2 flushed between runs). Effective TFLOP/s = 4·B·H·nnz(mask)·D / time.

  tools/bench/mha.py --grid targets|paper|quick [--dtype bf16] [--json F] [--markdown F]
"""
import argparse
import json
import math
import sys
import time

import numpy as np
from stof_ctypes import Stof, StofError

try:
    import torch
    import torch.nn.functional as F
    import triton.testing
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except ImportError as e:
    sys.exit(f"mha.py needs torch (with FlexAttention) and triton: {e}")

# (B, H, D, S) and the masks of each grid (see BENCHMARKS.md).
GRIDS = {
    "targets": ([(8, 12, 64, 1024), (4, 12, 64, 4096), (1, 32, 128, 8192), (2, 32, 128, 4096)],
                ["dense", "causal", "sliding", "longformer", "bigbird"]),
    "paper": ([(b, 12, 64, s) for b in (1, 8, 16) for s in (128, 256, 512, 1024, 2048, 4096)],
              ["causal", "paper_sliding", "paper_longformer", "paper_bigbird"]),
    "quick": ([(2, 12, 64, 1024), (1, 16, 128, 2048)], ["causal", "sliding", "bigbird"]),
    "headdims": ([(4, 16, d, 2048) for d in (32, 64, 80, 96, 128)], ["causal", "sliding", "bigbird"]),
}
PEERS = ["sdpa_mask", "flash", "cudnn", "flex"]


def block_random(nb, r, seed):
    """[nb, nb] bool: r distinct random block columns per block row."""
    g = np.random.default_rng(seed)
    m = np.zeros((nb, nb), bool)
    for i in range(nb):
        m[i, g.choice(nb, size=min(r, nb), replace=False)] = True
    return m


def make_mask(name, s):
    """[S, S] bool numpy keep mask (query row i, key column j)."""
    i = np.arange(s)[:, None]
    j = np.arange(s)[None, :]
    if name == "dense":
        return np.ones((s, s), bool)
    if name == "causal":
        return j <= i
    if name == "sliding":
        return np.abs(i - j) < 256
    if name == "longformer":
        return (np.abs(i - j) < 256) | (i < 64) | (j < 64)
    if name in ("bigbird", "paper_bigbird"):
        b = 64
        nb = (s + b - 1) // b
        blocks = block_random(nb, 3 if name == "bigbird" else 2, 7)
        bi, bj = i // b, j // b
        rand = blocks[np.minimum(bi, nb - 1), np.minimum(bj, nb - 1)]
        if name == "bigbird":
            return (np.abs(bi - bj) <= 1) | (bi < 2) | (bj < 2) | rand
        return (np.abs(i - j) <= 32) | (i < 32) | (j < 32) | rand
    if name == "paper_sliding":
        return (j <= i) & (i - j <= 64)
    if name == "paper_longformer":
        return (np.abs(i - j) <= 32) | (i < 32) | (j < 32)
    raise ValueError(name)


_KEEP = None  # the current row's [S, S] keep mask on the device, read by keep_mod


def keep_mod(b, h, q_idx, kv_idx):
    """FlexAttention mask_mod of the current mask (one function: no recompiles per mask)."""
    return _KEEP[q_idx, kv_idx]


def bench(fn):
    return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median")


def run_row(stof, b, h, d, s, mask_name, dtype, flex):
    keep_np = make_mask(mask_name, s)
    nnz = int(keep_np.sum())
    flops = 4.0 * b * h * nnz * d
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(b * 7919 + s * 31 + d)
    q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=dtype, generator=g) for _ in range(3))
    keep = torch.from_numpy(keep_np).to(dev)
    scale = 1.0 / math.sqrt(d)
    mask = stof.mask(keep_np)
    o = torch.empty_like(q)

    # fp32 reference on the first batch (memory) and all heads.
    qf, kf, vf = (t[:1].float() for t in (q, k, v))
    scores = (qf @ kf.transpose(-1, -2)) * scale
    ref = torch.softmax(scores.masked_fill(~keep, float("-inf")), -1) @ vf
    del scores

    impls = {}
    for kern in ("auto", "block-wise", "row-wise"):
        impls[f"stof_{kern}"] = (lambda kern=kern: stof.attention(q, k, v, o, mask, scale, kern)) , (lambda: o)
    impls["sdpa_mask"] = (lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=scale)), None
    structural = mask_name in ("dense", "causal")
    for peer, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        if structural:
            def fn(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=mask_name == "causal", scale=scale)
            impls[peer] = fn, None
    global _KEEP
    _KEEP = keep
    block_mask = create_block_mask(keep_mod, None, None, s, s, device=dev)
    impls["flex"] = (lambda: flex(q, k, v, block_mask=block_mask, scale=scale)), None

    row = {"B": b, "H": h, "D": d, "S": s, "mask": mask_name, "density": nnz / (s * s), "rho": mask.stats["rho"],
           "selected": mask.selected(), "results": {}}
    for name, (fn, out_of) in impls.items():
        try:
            o.fill_(float("nan"))
            out = fn()
            out = out_of() if out_of else out
            torch.cuda.synchronize()
            err = ((out[:1].float() - ref).norm() / ref.norm()).item()
            if not math.isfinite(err) or err > (2e-2 if dtype == torch.bfloat16 else 5e-3):
                row["results"][name] = {"status": "FAIL", "rel_error": err}
                continue
            ms = bench(fn)
            row["results"][name] = {"status": "ok", "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12, "rel_error": err}
        except (RuntimeError, StofError) as e:
            row["results"][name] = {"status": "error", "message": str(e).splitlines()[0][:200]}
    return row


def fmt_cell(r):
    if r is None:
        return "–"
    if r["status"] != "ok":
        return r["status"]
    return f"{r['ms']:.3f}/{r['tflops']:.0f}"


def table(rows):
    head = ["B", "H", "D", "S", "mask", "density", "kernel", "stofc", "block", "row", *PEERS, "vs best peer", "vs flex"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        res = r["results"]
        st = res.get("stof_auto")
        peers_ok = [res[p]["ms"] for p in PEERS if p in res and res[p]["status"] == "ok"]
        speed = lambda t: f"{t / st['ms']:.2f}×" if st and st["status"] == "ok" and t else "–"
        flex_ms = res["flex"]["ms"] if res.get("flex", {}).get("status") == "ok" else None
        lines.append("| " + " | ".join([str(r["B"]), str(r["H"]), str(r["D"]), str(r["S"]), r["mask"],
                                        f"{r['density']:.3f}", r["selected"], fmt_cell(st),
                                        fmt_cell(res.get("stof_block-wise")), fmt_cell(res.get("stof_row-wise")),
                                        *[fmt_cell(res.get(p)) for p in PEERS],
                                        speed(min(peers_ok) if peers_ok else None), speed(flex_ms)]) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=sorted(GRIDS), default="quick")
    ap.add_argument("--dtype", choices=["fp16", "bf16"], default="fp16")
    ap.add_argument("--lib", help="libstof.so (default build/lib/libstof.so)")
    ap.add_argument("--json", help="write all measurements here")
    ap.add_argument("--markdown", help="write the table here")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("mha.py: no CUDA device")
    try:
        stof = Stof(a.lib)
    except StofError as e:
        sys.exit(f"mha.py: {e}")
    dtype = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    torch._dynamo.config.cache_size_limit = 64
    flex = torch.compile(flex_attention, dynamic=False)
    shapes, masks = GRIDS[a.grid]
    rows = []
    t0 = time.time()
    for (b, h, d, s) in shapes:
        for m in masks:
            rows.append(run_row(stof, b, h, d, s, m, dtype, flex))
            r = rows[-1]["results"]
            print(f"[{time.time() - t0:6.1f} s] B={b} H={h} D={d} S={s} {m}: " +
                  ", ".join(f"{k} {fmt_cell(v)}" for k, v in r.items()), file=sys.stderr, flush=True)
            torch.cuda.empty_cache()
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": a.dtype, "grid": a.grid,
            "tau": stof.tau(), "date": time.strftime("%Y-%m-%d")}
    text = table(rows)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"{meta['gpu']}, torch {meta['torch']}, {a.dtype}, {meta['date']}. "
                    "Cells: ms / effective TFLOP/s; ratios: peer time / stofc time.\n\n" + text + "\n")


if __name__ == "__main__":
    main()
