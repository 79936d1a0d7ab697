#!/usr/bin/env python3
"""End-to-end checks of one exported model directory (models/<name>/: model.onnx,
inputs/*.npy, expected/*.npy from onnxruntime).

  eval     stofc eval on the CPU reference interpreter against expected/
  compile  stofc compile --offline --arch ARCH, then stofc inspect on the plan
  run      stofc compile for the GPU present, then stof-run --expect-dir (prints
           "STOF-SKIP: ..." and succeeds where no GPU exists; CTest reports a skip)

`compile` of a 16-bit plan checks that it has one sparse_attention step per
attention layer (--layers) and no softmax kernel, and with --max-steps-per-layer N at most N
plan steps from one attention step to the next. With --mask SPEC, plans are
compiled with that mask, and `run` compares with `stofc eval --mask SPEC` (the
reference interpreter applying the same mask) instead of expected/.

Input shapes come from the files in inputs/. Tolerances: fp32 plans (fp32 everywhere but
the sparse attention kernels' fp16 operands) rtol 5e-3 atol 5e-3; fp16 / bf16 plans (16-bit
storage between kernels, fp32 arithmetic) rtol 3e-2 atol 3e-2 and 6e-2.
"""

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

TOLERANCE = {"fp32": (5e-3, 5e-3), "fp16": (3e-2, 3e-2), "bf16": (6e-2, 6e-2)}


def shapes(model_dir):
    args = []
    for f in sorted((model_dir / "inputs").glob("*.npy")):
        shape = np.load(f, mmap_mode="r").shape
        args += ["--shape", f"{f.stem}={'x'.join(str(d) for d in shape)}"]
    return args


def run(cmd):
    """Runs cmd, its output passed through; returns that output (stdout and stderr)."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    r = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        sys.exit(f"command failed with exit code {r.returncode}")
    return r.stdout


def gpu_present():
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["eval", "compile", "run"])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("--stofc", required=True)
    ap.add_argument("--stof-run")
    ap.add_argument("--work", type=Path, required=True, help="directory for plans and outputs")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--precision", default="fp32", choices=sorted(TOLERANCE))
    ap.add_argument("--mask", help="attention mask spec for compile and the reference")
    ap.add_argument("--attention-kernel", default="auto", help="stofc compile --attention-kernel")
    ap.add_argument("--layers", type=int, default=2, help="attention layers the model has")
    ap.add_argument("--max-steps-per-layer", type=int,
                    help="compile: at most this many plan steps from one attention step to the next")
    a = ap.parse_args()
    d = a.model_dir
    a.work.mkdir(parents=True, exist_ok=True)
    model = d / "model.onnx"
    if a.mode == "eval":
        run([a.stofc, "eval", model, "--inputs-dir", d / "inputs", "--expect-dir", d / "expected",
             "--rtol", "1e-3", "--atol", "1e-4"])
        return
    tag = f"{d.name}.{a.precision}" + (f".{a.mask.replace(':', '_')}" if a.mask else "")
    tag += "" if a.attention_kernel == "auto" else f".{a.attention_kernel}"
    plan = a.work / f"{tag}.{a.arch if a.mode == 'compile' else 'gpu'}.plan"
    mask = ["--mask", a.mask] if a.mask else []
    kernel = ["--attention-kernel", a.attention_kernel]
    if a.mode == "compile":
        run([a.stofc, "compile", model, "-o", plan, "--offline", "--arch", a.arch, "--precision", a.precision,
             *shapes(d), *mask, *kernel])
        run([a.stofc, "inspect", plan])
        # Every precision runs attention on the sparse kernels.
        report = json.loads(subprocess.run([a.stofc, "inspect", plan, "--json"], capture_output=True, check=True).stdout)
        steps = report["steps"]
        # An offline plan's fusion segments were decided by the cost model or the rules.
        sources = {s["source"] for s in report["segments"]}
        if not report["segments"] or not sources <= {"model", "rule"} or "model" not in sources:
            sys.exit(f"offline plan segments: sources {sorted(sources)} (want model and rule only)")
        attention = sum(s["kind"] == "sparse_attention" for s in steps)
        softmax = [s["kernel"] for s in steps if "softmax" in s["kernel"]]
        if attention != a.layers or softmax:
            sys.exit(f"{attention} sparse_attention steps (want {a.layers}), softmax kernels {softmax}")
        print(f"{attention} sparse_attention steps, no softmax kernel")
        if a.max_steps_per_layer is not None:
            at = [i for i, s in enumerate(steps) if s["kind"] == "sparse_attention"]
            per_layer = [j - i for i, j in zip(at, at[1:])]
            if not per_layer or max(per_layer) > a.max_steps_per_layer:
                sys.exit(f"steps per layer {per_layer} (want at most {a.max_steps_per_layer})")
            print(f"steps per layer {per_layer} (at most {a.max_steps_per_layer})")
        return
    if not gpu_present():
        print("STOF-SKIP: no GPU on this machine")
        return
    rtol, atol = TOLERANCE[a.precision]
    log = run([a.stofc, "compile", model, "-o", plan, "--precision", a.precision, *shapes(d), *mask, *kernel])
    expected = d / "expected"
    if a.mask:
        expected = a.work / f"{tag}.reference"
        run([a.stofc, "eval", model, "--inputs-dir", d / "inputs", *mask, "--output-dir", expected])
    outputs = {}
    for mode, graph in (("plain", []), ("graph", ["--graph"])):
        out_dir = a.work / f"{tag}.{mode}"
        run([a.stof_run, plan, "--inputs-dir", d / "inputs", "--expect-dir", expected, "--rtol", str(rtol),
             "--atol", str(atol), "--output-dir", out_dir, *graph])
        outputs[mode] = {f.name: np.load(f) for f in sorted(out_dir.glob("*.npy"))}
    # A replayed CUDA graph runs the same kernels on the same data: outputs are bit-identical.
    if outputs["plain"].keys() != outputs["graph"].keys() or not outputs["plain"]:
        sys.exit(f"plain and graph runs wrote different outputs: {sorted(outputs['plain'])} vs {sorted(outputs['graph'])}")
    for name, x in outputs["plain"].items():
        if x.tobytes() != outputs["graph"][name].tobytes():
            sys.exit(f"{name}: CUDA graph replay differs from plain launches")
    print(f"plain and graph outputs bit-identical ({len(outputs['plain'])} outputs)")
    # --profile times every step of the plan, and the outputs still match.
    steps = json.loads(subprocess.run([a.stofc, "inspect", plan, "--json"], capture_output=True, check=True).stdout)["steps"]
    report = json.loads(subprocess.run([a.stof_run, plan, "--inputs-dir", d / "inputs", "--expect-dir", expected, "--rtol",
                                        str(rtol), "--atol", str(atol), "--profile", "3", "--json"],
                                       capture_output=True, check=True).stdout)
    prof = report["profile"]
    if (not report["ok"] or [s["step"] for s in prof["steps"]] != list(range(len(steps)))
            or [s["kernel"] for s in prof["steps"]] != [s["kernel"] for s in steps]
            or not all(s["ms"] > 0 for s in prof["steps"])
            or abs(sum(x["ms"] for x in prof["by_kind"].values()) - prof["total_ms"]) > 1e-6 * prof["total_ms"]):
        sys.exit(f"stof-run --profile: unexpected report {json.dumps(report)[:2000]}")
    print(f"profile: {len(steps)} steps, {prof['total_ms']:.3f} ms")
    # Compiled on the GPU: the segments the search timed were measured there, or, where the
    # final check timed the cost-model plan fastest and kept it, are the cost model's.
    sources = {s["source"] for s in json.loads(subprocess.run([a.stofc, "inspect", plan, "--json"], capture_output=True,
                                                              check=True).stdout)["segments"]}
    timed = {"model"} if "kept: the cost-model plan" in log else {"measured", "cache"}
    if not sources & timed or sources - timed - {"rule"}:
        sys.exit(f"plan compiled on the GPU: segment sources {sorted(sources)} (want {' or '.join(sorted(timed))}, and rule)")
    print(f"segment sources: {', '.join(sorted(sources))}")


if __name__ == "__main__":
    main()
