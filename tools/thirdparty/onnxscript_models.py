#!/usr/bin/env python3
"""Build the Transformer graphs that onnxscript ships as rewriter test models.

onnxscript (PyPI, MIT) carries graphs its authors transcribed from torch exports
of real HuggingFace models (onnxscript/rewriter/models/): the node structure is
theirs, only the weights are random. This script builds them with seeded,
reasonably scaled random weights (the packaged builders draw uniform [0, 1)
weights, which saturate every softmax), saves each as DEST/<family>/<name>.onnx
and writes the inputs to run it with next to
it (<name>.inputs/*.npy; tests/models/make_thirdparty_cases.py adds onnxruntime's
outputs). A model already present is kept unless --force is given.

Usage: onnxscript_models.py [DEST] [--only NAME ...] [--force]
Needs onnxscript==0.7.2 and onnx (tools/setup.sh installs them and runs this).
"""
import argparse
import importlib
import pathlib
import sys

import numpy as np

# name -> (family, module, input builder). Inputs follow each module's own get_ort_inputs.
MODELS = {
    "smollm-1layer": ("llama", "onnxscript.rewriter.models._smollm_1", lambda r: {
        "input0": r.integers(0, 49152, (1, 10)).astype(np.int64),
        "input1": np.array([[1] * 8 + [0, 0]], dtype=np.float32),  # two padded keys at the end
        "input2": np.arange(10, dtype=np.int64).reshape(1, 10),
    }),
    "whisper-tiny-encoder-1layer": ("whisper", "onnxscript.rewriter.models._whisper_encoder", lambda r: {
        "audio_features": r.standard_normal((1, 80, 3000)).astype(np.float32),
    }),
    "phi2-1layer": ("phi", "onnxscript.rewriter.models._phi2lm", lambda r: {
        "input_ids": r.integers(0, 51200, (2, 8)).astype(np.int64),
        "attention_mask": np.array([[1] * 12, [0, 0] + [1] * 10], dtype=np.int64),  # row 1: two padded past keys
        "past_key_values_key_cache_0": r.standard_normal((2, 32, 4, 80)).astype(np.float32),
        "past_key_values_value_cache_0": r.standard_normal((2, 32, 4, 80)).astype(np.float32),
    }),
    "bart-encoder-2layer": ("bart", "onnxscript.rewriter.models._bart_encoder", lambda r: {
        "input_ids": r.integers(0, 1024, (1, 16)).astype(np.int64),
    }),
}


class ScaledWeights:
    """Replaces numpy.random.rand while a packaged builder runs: vectors become
    1 + 0.1·N(0,1) (norm scales, biases), matrices N(0,1)/√fan_in (fan_in = last dim)."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def __call__(self, *shape):
        if len(shape) <= 1:
            return 1.0 + 0.1 * self.rng.standard_normal(shape)
        return self.rng.standard_normal(shape) / np.sqrt(shape[-1])


def build(name, dest, force):
    import onnx

    family, module_name, make_inputs = MODELS[name]
    out_dir = dest / family
    path = out_dir / f"{name}.onnx"
    if path.exists() and (out_dir / f"{name}.inputs").is_dir() and not force:
        print(f"  [skip] {family}/{name}.onnx (already present)")
        return
    module = importlib.import_module(module_name)
    rand = np.random.rand
    np.random.rand = ScaledWeights(20261122)
    try:
        proto = module.make_model_with_random_weights()
    finally:
        np.random.rand = rand
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx.save_model(proto, path.with_suffix(".tmp"))  # weights are Constant nodes, as the builders make them
    d = out_dir / f"{name}.inputs"
    d.mkdir(exist_ok=True)
    inputs = make_inputs(np.random.default_rng(7))
    for k, v in inputs.items():
        np.save(d / f"{k}.npy", v)
    path.with_suffix(".tmp").replace(path)
    print(f"  [build] {family}/{name}.onnx: {len(proto.graph.node)} nodes, {path.stat().st_size} bytes, inputs "
          + ", ".join(f"{k}{list(v.shape)}" for k, v in inputs.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest", nargs="?", default=str(pathlib.Path.home() / ".cache/stofc/thirdparty"))
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS), help="build only these models")
    ap.add_argument("--force", action="store_true", help="rebuild models that are already present")
    args = ap.parse_args()
    try:
        import onnxscript  # noqa: F401
    except ImportError:
        sys.exit("onnxscript_models.py: error: onnxscript is not installed (run tools/setup.sh)")
    dest = pathlib.Path(args.dest)
    print(f"onnxscript_models.py: destination {dest}")
    for name in args.only or MODELS:
        build(name, dest, args.force)


if __name__ == "__main__":
    main()
