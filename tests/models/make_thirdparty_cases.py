#!/usr/bin/env python3
"""Fresh inputs and onnxruntime reference outputs for the third-party models.

For every `<models>/<family>/<name>.onnx` (tools/thirdparty/fetch.sh and
onnxscript_models.py put them there), takes the inputs the model ships with
(`<name>.inputs/*.npy`) or draws random ones for its declared inputs, and writes
a directory laid out like models/<name>/ (tests/models/check_model.py reads it):

    OUT/<family>_<name>/model.onnx                 a symbolic link to the model
    OUT/<family>_<name>/inputs/<input>.npy
    OUT/<family>_<name>/expected/<output>.npy      onnxruntime (CPU, no graph optimizations)
    OUT/cases.json   {"seed": N, "cases": [{"name", "model"}]}

Drawn inputs: symbolic dimensions are bound to batch 2 and sequence 24. Integer
inputs named like token ids get ids in [0, 1000); attention masks are ones with
the last five positions of batch row 1 padded; float inputs are standard normal.

Usage: make_thirdparty_cases.py --models DIR --out DIR [--seed N]
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ONNX_TO_NUMPY = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
                 "tensor(bool)": np.bool_, "tensor(float16)": np.float16}


def file_name(tensor_name):
    """The file stem stofc uses for a tensor name (compiler/cli/cli_args.cpp)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", tensor_name)


def make_input(rng, name, dtype, shape):
    dims = [d if isinstance(d, int) and d > 0 else (2 if i == 0 else 24) for i, d in enumerate(shape)]
    if np.issubdtype(dtype, np.integer):
        if "mask" in name:
            x = np.ones(dims, dtype)
            if len(dims) == 2 and dims[0] > 1:
                x[1, -5:] = 0
            return x
        if "type" in name:
            return np.zeros(dims, dtype)
        return rng.integers(0, 1000, dims).astype(dtype)
    if dtype == np.bool_:
        return rng.random(dims) < 0.5
    return rng.standard_normal(dims).astype(dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else time.time_ns() % (2**31)
    print(f"make_thirdparty_cases: seed {seed}", flush=True)
    rng = np.random.default_rng(seed)

    models = sorted(args.models.glob("*/*.onnx"))
    if not models:
        sys.exit(f"make_thirdparty_cases: no models under {args.models}; run tools/setup.sh (it fetches them)")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    cases = []
    for model in models:
        name = f"{model.parent.name}_{model.stem}".replace("-", "_")
        sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
        shipped = model.parent / f"{model.stem}.inputs"
        if shipped.is_dir():
            feeds = {i.name: np.load(shipped / f"{file_name(i.name)}.npy") for i in sess.get_inputs()}
        else:
            feeds = {i.name: make_input(rng, i.name, ONNX_TO_NUMPY[i.type], i.shape) for i in sess.get_inputs()}
        outs = sess.run(None, feeds)
        d = args.out / name
        for sub in ("inputs", "expected"):
            (d / sub).mkdir(parents=True, exist_ok=True)
            for f in (d / sub).glob("*.npy"):
                f.unlink()
        link = d / "model.onnx"
        link.unlink(missing_ok=True)
        link.symlink_to(model.resolve())
        for k, v in feeds.items():
            np.save(d / "inputs" / f"{file_name(k)}.npy", v)
        for o, v in zip(sess.get_outputs(), outs):
            np.save(d / "expected" / f"{file_name(o.name)}.npy", np.ascontiguousarray(v))
        cases.append({"name": name, "model": str(model.resolve())})
        print(f"  {name}: {', '.join(f'{k}{list(v.shape)}' for k, v in feeds.items())}", flush=True)
    (args.out / "cases.json").write_text(json.dumps({"seed": seed, "cases": cases}, indent=1) + "\n")


if __name__ == "__main__":
    main()
