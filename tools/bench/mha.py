#!/usr/bin/env python3
"""Sparse multi-head attention: stofc's kernels against PyTorch SDPA (explicit
mask, FlashAttention-2, cuDNN) and FlexAttention with a BlockMask on both of its
backends (Triton, and FLASH: flash-attn-4's CuTe-DSL kernels), side by side in
one process on identical masks and inputs (fp16 by default).

Every implementation's output is first checked against an fp32 reference (the
first batch, all heads); a failing cell is reported as FAIL, never timed, and one
that cannot run as error with its reason. Times: triton.testing.do_bench medians
(L2 flushed between runs); a call over 0.5 s is timed once. Effective TFLOP/s =
4·B·nnz·D / time, nnz the kept (query, key) pairs over all heads. GQA rows (H
query heads over fewer K/V heads) give SDPA K/V repeated to H heads (outside the
timed call), FlexAttention enable_gqa, stofc its kv_heads. The FLASH backend runs
when `flash_attn.cute` imports (tools/gpu/flash_wheels.sh installs it on the GPU
machine) unless --no-flash; otherwise the table says why not. "vs flex" is the
faster of the two FlexAttention backends.

Grids: targets, paper, quick, headdims (BENCHMARKS.md), element (element-sparse
masks: every 8th and 16th key, 5% random elements, a window per head) and gqa
(B 1, 32 query / 8 K/V heads, D 128, S 8192-32768).

  tools/bench/mha.py --grid targets|paper|quick|headdims|element|gqa [--dtype bf16] [--no-flash]
                     [--json F] [--markdown F] [--lib SO]
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

# (B, H, D, S[, H_kv]) and the masks of each grid (see BENCHMARKS.md).
GRIDS = {
    "targets": ([(8, 12, 64, 1024), (4, 12, 64, 4096), (1, 32, 128, 8192), (2, 32, 128, 4096)],
                ["dense", "causal", "sliding", "longformer", "bigbird"]),
    "paper": ([(b, 12, 64, s) for b in (1, 8, 16) for s in (128, 256, 512, 1024, 2048, 4096)],
              ["causal", "paper_sliding", "paper_longformer", "paper_bigbird"]),
    "quick": ([(2, 12, 64, 1024), (1, 16, 128, 2048)], ["causal", "sliding", "bigbird"]),
    "headdims": ([(4, 16, d, 2048) for d in (32, 64, 80, 96, 128)], ["causal", "sliding", "bigbird"]),
    "element": ([(8, 12, 64, 1024), (4, 12, 64, 4096), (2, 32, 128, 4096)],
                ["strided8", "strided16", "random5", "perhead_window"]),
    "gqa": ([(1, 32, 128, s, 8) for s in (8192, 16384, 32768)], ["dense", "causal", "sliding", "bigbird"]),
}
PEERS = ["sdpa_mask", "flash", "cudnn", "flex", "flex_flash"]
FLEX = ("flex", "flex_flash")


def block_random(nb, r, seed):
    """[nb, nb] bool: r distinct random block columns per block row."""
    g = np.random.default_rng(seed)
    m = np.zeros((nb, nb), bool)
    for i in range(nb):
        m[i, g.choice(nb, size=min(r, nb), replace=False)] = True
    return m


def make_mask(name, s, heads=1):
    """Bool numpy keep mask (query row i, key column j): [S, S], or [heads, S, S] for perhead_window."""
    i = np.arange(s, dtype=np.int32)[:, None]
    j = np.arange(s, dtype=np.int32)[None, :]
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
    if name in ("strided8", "strided16"):  # every 8th / 16th key from the query's own position on
        return (i - j) % int(name[7:]) == 0
    if name == "random5":  # 5% of the elements at random, and the diagonal (no empty row)
        return (np.random.default_rng(11).random((s, s)) < 0.05) | (i == j)
    if name == "perhead_window":  # head h keeps |i - j| < 16 * 2^(h mod 5)
        return np.abs(i - j)[None] < (16 << (np.arange(heads) % 5))[:, None, None]
    raise ValueError(name)


def flash_unavailable():
    """None when FlexAttention's FLASH backend can load flash-attn-4 (flash_attn.cute), else why not."""
    try:
        import flash_attn.cute  # noqa: F401
    except Exception as e:
        return f"{type(e).__name__}: {next(iter(str(e).splitlines()), '')}"
    return None


_KEEP = None  # the current row's keep mask on the device ([S, S] or [H, S, S]), read by the mask_mods


def keep_mod(b, h, q_idx, kv_idx):
    """FlexAttention mask_mod of the current mask (one function: no recompiles per mask)."""
    return _KEEP[q_idx, kv_idx]


def keep_mod_per_head(b, h, q_idx, kv_idx):
    return _KEEP[h, q_idx, kv_idx]


def bench(fn):
    """Median ms: do_bench; a call over 0.5 s (the row-wise kernel on long dense rows) is timed once."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    once = start.elapsed_time(end)
    return once if once > 500 else triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median")


def reference(q, k, v, keep, scale):
    """fp32 attention of q [1, H, S, D] over k, v [1, H_kv, S, D] under keep ([S, S] or [H, S, S]),
    a few heads at a time (at most ~4 GB of scores)."""
    h, s = q.shape[1], q.shape[2]
    kf, vf = (t[0].float().repeat_interleave(h // t.shape[1], 0) for t in (k, v))
    drop = ~keep
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    step = max(1, int(4e9 // (s * s * 4)))
    for h0 in range(0, h, step):
        hs = slice(h0, min(h, h0 + step))
        scores = (q[0, hs].float() @ kf[hs].transpose(-1, -2)) * scale
        scores.masked_fill_(drop[hs] if drop.dim() == 3 else drop, float("-inf"))
        out[0, hs] = torch.softmax(scores, -1) @ vf[hs]
        del scores
    return out


def run_row(stof, b, h, hkv, d, s, mask_name, dtype, flex, flash):
    keep_np = make_mask(mask_name, s, h)
    per_head = keep_np.ndim == 3
    nnz = int(keep_np.sum()) * (1 if per_head else h)  # kept (query, key) pairs over all heads
    flops = 4.0 * b * nnz * d
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(b * 7919 + s * 31 + d)
    q = torch.randn(b, h, s, d, device=dev, dtype=dtype, generator=g)
    k, v = (torch.randn(b, hkv, s, d, device=dev, dtype=dtype, generator=g) for _ in range(2))
    keep = torch.from_numpy(keep_np).to(dev)
    scale = 1.0 / math.sqrt(d)
    mask = stof.mask(keep_np[None] if per_head else keep_np)
    o = torch.empty_like(q)
    ref = reference(q[:1], k[:1], v[:1], keep, scale)
    gqa = hkv != h
    ke, ve = (t.repeat_interleave(h // hkv, 1) for t in (k, v)) if gqa else (k, v)  # SDPA's K/V

    impls = {}
    for kern in ("auto", "block-wise", "block-wise-sm90", "row-wise"):
        impls[f"stof_{kern}"] = (lambda kern=kern: stof.attention(q, k, v, o, mask, scale, kern)) , (lambda: o)
    impls["sdpa_mask"] = (lambda: F.scaled_dot_product_attention(q, ke, ve, attn_mask=keep, scale=scale)), None
    structural = mask_name in ("dense", "causal")
    for peer, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        if structural:
            def fn(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, ke, ve, is_causal=mask_name == "causal", scale=scale)
            impls[peer] = fn, None
    global _KEEP
    _KEEP = keep
    block_mask = create_block_mask(keep_mod_per_head if per_head else keep_mod, None, h if per_head else None, s, s,
                                   device=dev)
    impls["flex"] = (lambda: flex(q, k, v, block_mask=block_mask, scale=scale, enable_gqa=gqa)), None
    if flash:
        impls["flex_flash"] = (lambda: flex(q, k, v, block_mask=block_mask, scale=scale, enable_gqa=gqa,
                                            kernel_options={"BACKEND": "FLASH"})), None

    row = {"B": b, "H": h, "H_kv": hkv, "D": d, "S": s, "mask": mask_name, "density": float(keep_np.mean()),
           "rho": mask.stats["rho"], "selected": mask.selected(), "results": {}}
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
        except Exception as e:  # an implementation that cannot run this row is reported with its reason
            while e.__cause__ is not None:
                e = e.__cause__
            row["results"][name] = {"status": "error",
                                    "message": f"{type(e).__name__}: {next(iter(str(e).splitlines()), '')}"[:200]}
    return row


def fmt_cell(r):
    if r is None:
        return "–"
    if r["status"] == "unavailable":
        return "n/a"
    if r["status"] != "ok":
        return r["status"]
    return f"{r['ms']:.3f}/{r['tflops']:.0f}"


def table(rows):
    head = ["B", "H", "D", "S", "mask", "density", "kernel", "stofc", "block", "sm90", "row", *PEERS, "vs best peer",
            "vs flex"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        res = r["results"]
        st = res.get("stof_auto")
        peers_ok = [res[p]["ms"] for p in PEERS if p in res and res[p]["status"] == "ok"]
        speed = lambda t: f"{t / st['ms']:.2f}×" if st and st["status"] == "ok" and t else "–"
        flex_ok = [res[p]["ms"] for p in FLEX if res.get(p, {}).get("status") == "ok"]
        heads = str(r["H"]) if r.get("H_kv", r["H"]) == r["H"] else f"{r['H']}/{r['H_kv']}"
        lines.append("| " + " | ".join([str(r["B"]), heads, str(r["D"]), str(r["S"]), r["mask"],
                                        f"{r['density']:.3f}", r["selected"], fmt_cell(st),
                                        fmt_cell(res.get("stof_block-wise")), fmt_cell(res.get("stof_block-wise-sm90")),
                                        fmt_cell(res.get("stof_row-wise")),
                                        *[fmt_cell(res.get(p)) for p in PEERS],
                                        speed(min(peers_ok) if peers_ok else None),
                                        speed(min(flex_ok) if flex_ok else None)]) + " |")
    return "\n".join(lines)


def errors(rows):
    """Each implementation's distinct errors, with the rows they stopped."""
    seen = {}
    for r in rows:
        for name, res in r["results"].items():
            if res["status"] == "error":
                seen.setdefault((name, res["message"]), []).append(f"B={r['B']} S={r['S']} D={r['D']} {r['mask']}")
    lines = [f"- {name} on {len(where)} rows ({where[0]}, ...): {msg}" if len(where) > 1 else
             f"- {name} ({where[0]}): {msg}" for (name, msg), where in seen.items()]
    return "\n\nErrors:\n" + "\n".join(lines) if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=sorted(GRIDS), default="quick")
    ap.add_argument("--dtype", choices=["fp16", "bf16"], default="fp16")
    ap.add_argument("--no-flash", action="store_true", help="leave out FlexAttention's FLASH backend")
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
    torch._dynamo.config.recompile_limit = 256  # a compilation per shape and backend
    torch._dynamo.config.fail_on_recompile_limit_hit = True  # never a silent fallback to eager FlexAttention
    flex = torch.compile(flex_attention, dynamic=False)
    flash = "FLASH backend not run (--no-flash)" if a.no_flash else flash_unavailable()
    flash = f"FLASH backend unavailable: {flash}" if flash and not a.no_flash else flash
    print(flash or "FLASH backend: flash_attn.cute imports", file=sys.stderr, flush=True)
    shapes, masks = GRIDS[a.grid]
    rows = []
    t0 = time.time()
    for (b, h, d, s, *kv) in shapes:
        hkv = kv[0] if kv else h
        for m in masks:
            rows.append(run_row(stof, b, h, hkv, d, s, m, dtype, flex, flash is None))
            r = rows[-1]["results"]
            if flash:
                r["flex_flash"] = {"status": "unavailable"}
            print(f"[{time.strftime('%H:%M:%S')} +{time.time() - t0:6.1f} s] B={b} H={h}/{hkv} D={d} S={s} {m}: " +
                  ", ".join(f"{k} {fmt_cell(v)}" for k, v in r.items()), file=sys.stderr, flush=True)
            torch.cuda.empty_cache()
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "dtype": a.dtype, "grid": a.grid,
            "tau": stof.tau(), "date": time.strftime("%Y-%m-%d"), "flex_flash": flash or "run"}
    text = table(rows) + errors(rows)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"{meta['gpu']}, torch {meta['torch']}, {a.dtype}, {meta['date']}; {flash or 'FLASH backend run'}. "
                    "Cells: ms / effective TFLOP/s; ratios: peer time / stofc time (vs flex: the faster "
                    "FlexAttention backend).\n\n" + text + "\n")


if __name__ == "__main__":
    main()
