#!/usr/bin/env python3
"""Memory-bound kernels: stofc's fused elementwise and row-norm kernels against
PyTorch (eager and torch.compile) on the same fp16 tensors, in one process, as
bandwidth (bytes each must move at least / time).

Each case is a small fp16 ONNX model compiled by `stofc compile --precision fp16`
into a plan of one kernel, timed with `stof-run --profile` (CUDA events, median);
its outputs are checked against `stofc eval` (the fp32 CPU interpreter) on the
same inputs (`stof-run --expect-dir`). PyTorch runs the same op with
triton.testing.do_bench; a device-to-device copy of the same bytes is the ceiling.

  tools/bench/bandwidth.py --stofc build/bin/stofc --stof-run build/bin/stof-run [--rows 16384] [--cols 4096]
                           [--work DIR] [--json F] [--markdown F]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import torch
    import torch.nn.functional as F
    import triton.testing
except ImportError as e:
    sys.exit(f"bandwidth.py needs torch and triton: {e}")

H = TensorProto.FLOAT16


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(n, H, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, H, None) for n in outputs],
                          [numpy_helper.from_array(v, n) for n, v in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def cases(m, c, rng):
    """(name, onnx model, inputs, torch function of the inputs and constants, bytes moved)."""
    x = rng.standard_normal((m, c)).astype(np.float16)
    r = rng.standard_normal((m, c)).astype(np.float16)
    b = rng.standard_normal((c,)).astype(np.float16)
    g = (1 + 0.1 * rng.standard_normal((c,))).astype(np.float16)
    n2 = 2 * m * c  # bytes of one [m, c] fp16 tensor
    out = []
    # Bias + exact GELU (BERT's FFN activation after a GEMM without an activation epilogue).
    out.append(("bias + erf-GELU", model([helper.make_node("Add", ["x", "b"], ["s"]), helper.make_node("Gelu", ["s"], ["y"])],
                                          [("x", [m, c])], ["y"], [("b", b)]),
                {"x": x}, lambda t: F.gelu(t["x"] + t["b"]), 2 * n2))
    # SwiGLU over a merged gate|up projection [m, 2c] (LLaMA's MLP).
    gu = rng.standard_normal((m, 2 * c)).astype(np.float16)
    out.append(("SwiGLU (merged gate|up)",
                model([helper.make_node("Split", ["gu", "split"], ["gate", "up"], axis=-1),
                       helper.make_node("Sigmoid", ["gate"], ["sg"]), helper.make_node("Mul", ["gate", "sg"], ["si"]),
                       helper.make_node("Mul", ["si", "up"], ["y"])], [("gu", [m, 2 * c])], ["y"],
                      [("split", np.array([c, c], np.int64))]),
                {"gu": gu}, lambda t: F.silu(t["gu"][:, :c]) * t["gu"][:, c:], 3 * n2))
    # Residual add + LayerNorm (post-norm), one output.
    out.append(("residual + LayerNorm",
                model([helper.make_node("Add", ["x", "r"], ["s"]),
                       helper.make_node("LayerNormalization", ["s", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
                      [("x", [m, c]), ("r", [m, c])], ["y"], [("g", g), ("b", b)]),
                {"x": x, "r": r}, lambda t: F.layer_norm(t["x"] + t["r"], (c,), t["g"], t["b"]), 3 * n2))

    # Residual add + RMSNorm (LLaMA's spelling) storing the sum too (pre-norm residual stream).
    def rms(t):
        s = t["x"] + t["r"]
        return s * torch.rsqrt(s.float().pow(2).mean(-1, keepdim=True) + 1e-6).half() * t["g"], s
    out.append(("residual + RMSNorm, sum stored",
                model([helper.make_node("Add", ["x", "r"], ["s"]), helper.make_node("Pow", ["s", "two"], ["s2"]),
                       helper.make_node("ReduceMean", ["s2", "axes"], ["ms"]), helper.make_node("Add", ["ms", "eps"], ["ve"]),
                       helper.make_node("Sqrt", ["ve"], ["sd"]), helper.make_node("Reciprocal", ["sd"], ["inv"]),
                       helper.make_node("Mul", ["s", "inv"], ["n"]), helper.make_node("Mul", ["g", "n"], ["y"])],
                      [("x", [m, c]), ("r", [m, c])], ["y", "s"],
                      [("g", g), ("two", np.array(2, np.float16)), ("axes", np.array([-1], np.int64)),
                       ("eps", np.array(1e-6, np.float16))]),
                {"x": x, "r": r}, rms, 4 * n2))
    return out


def torch_ms(fn):
    return triton.testing.do_bench(fn, warmup=10, rep=50)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stofc", required=True)
    ap.add_argument("--stof-run", required=True)
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="stof-bw-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    dev = "cuda"
    copy_src = torch.empty(a.rows * a.cols * 2, dtype=torch.float16, device=dev)
    copy_dst = torch.empty_like(copy_src)
    copy_tbs = 2 * copy_src.numel() * 2 / torch_ms(lambda: copy_dst.copy_(copy_src)) / 1e9
    rows = []
    for i, (name, m, feeds, tfn, nbytes) in enumerate(cases(a.rows, a.cols, rng)):
        d = work / f"case{i}"
        (d / "inputs").mkdir(parents=True, exist_ok=True)
        onnx.save(m, str(d / "model.onnx"))
        for n, v in feeds.items():
            np.save(d / "inputs" / f"{n}.npy", v)
        plan = d / "model.plan"
        r = subprocess.run([a.stofc, "compile", str(d / "model.onnx"), "-o", str(plan), "--precision", "fp16"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{name}: stofc compile failed:\n{r.stderr[-2000:]}")
        # Reference outputs from the CPU interpreter (fp32), then the plan checked against them.
        r = subprocess.run([a.stofc, "eval", str(d / "model.onnx"), "--inputs-dir", str(d / "inputs"), "-o", str(d / "expected")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{name}: stofc eval failed:\n{r.stderr[-2000:]}")
        r = subprocess.run([a.stof_run, str(plan), "--inputs-dir", str(d / "inputs"), "--expect-dir", str(d / "expected"),
                            "--rtol", "2e-2", "--atol", "2e-2", "--profile", "50", "--json"], capture_output=True, text=True)
        ok = r.returncode == 0
        row = {"case": name, "bytes": nbytes, "ok": ok}
        if ok:
            p = json.loads(r.stdout)["profile"]
            steps = [s for s in p["steps"] if s["kind"] != "copy"]
            row["stofc_us"] = 1e3 * sum(s["ms"] for s in steps)
            row["stofc_steps"] = len(steps)
            row["stofc_tbs"] = nbytes / (row["stofc_us"] * 1e-6) / 1e12
        else:
            row["error"] = (r.stderr or r.stdout)[-500:]
        t = {n: torch.from_numpy(v).to(dev) for n, v in feeds.items()}
        for init in m.graph.initializer:
            t[init.name] = torch.from_numpy(numpy_helper.to_array(init)).to(dev)
        row["torch_us"] = 1e3 * torch_ms(lambda: tfn(t))
        compiled = torch.compile(tfn)
        row["compile_us"] = 1e3 * torch_ms(lambda: compiled(t))
        rows.append(row)
        print(json.dumps(row), flush=True)
    head = (f"{torch.cuda.get_device_name()}, fp16, [{a.rows}, {a.cols}] tensors ({a.rows * a.cols * 2 / 1e6:.0f} MB each); "
            f"device-to-device copy {copy_tbs:.2f} TB/s. TB/s = bytes each implementation must move / time.")
    lines = ["| case | MB moved | stofc µs | stofc TB/s | eager µs | torch.compile µs | compile TB/s |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["ok"]:
            lines.append(f"| {r['case']} | {r['bytes'] / 1e6:.0f} | FAIL | | | | |")
            continue
        tc = f"{r['torch_us']:.1f} | {r['compile_us']:.1f} | {r['bytes'] / (r['compile_us'] * 1e-6) / 1e12:.2f}"
        lines.append(f"| {r['case']} | {r['bytes'] / 1e6:.0f} | {r['stofc_us']:.1f} ({r['stofc_steps']} step) | "
                     f"{r['stofc_tbs']:.2f} | {tc} |")
    text = head + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        Path(a.markdown).write_text(text)
    if a.json:
        Path(a.json).write_text(json.dumps({"header": head, "rows": rows}, indent=1) + "\n")
    if not all(r["ok"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
