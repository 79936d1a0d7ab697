#!/usr/bin/env python3
"""End-to-end checks of one exported model directory (models/<name>/: model.onnx,
inputs/*.npy, expected/*.npy from onnxruntime).

  eval     stofc eval on the CPU reference interpreter against expected/
  compile  stofc compile --offline --arch ARCH, then stofc inspect on the plan
  run      stofc compile for the GPU present, then stof-run --expect-dir (prints
           "STOF-SKIP: ..." and succeeds where no GPU exists; CTest reports a skip)

Input shapes come from the files in inputs/. Tolerances: fp32 rtol 1e-3 atol 1e-4;
fp16 / bf16 plans (16-bit storage between kernels, fp32 arithmetic) rtol 3e-2 atol 3e-2.
"""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

TOLERANCE = {"fp32": (1e-3, 1e-4), "fp16": (3e-2, 3e-2), "bf16": (6e-2, 6e-2)}


def shapes(model_dir):
    args = []
    for f in sorted((model_dir / "inputs").glob("*.npy")):
        shape = np.load(f, mmap_mode="r").shape
        args += ["--shape", f"{f.stem}={'x'.join(str(d) for d in shape)}"]
    return args


def run(cmd):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    r = subprocess.run([str(c) for c in cmd])
    if r.returncode != 0:
        sys.exit(f"command failed with exit code {r.returncode}")


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
    ap.add_argument("--extra", nargs="*", default=[], help="more stofc compile arguments")
    a = ap.parse_args()
    d = a.model_dir
    a.work.mkdir(parents=True, exist_ok=True)
    model = d / "model.onnx"
    if a.mode == "eval":
        run([a.stofc, "eval", model, "--inputs-dir", d / "inputs", "--expect-dir", d / "expected",
             "--rtol", "1e-3", "--atol", "1e-4"])
        return
    plan = a.work / f"{d.name}.{a.precision}.{a.arch if a.mode == 'compile' else 'gpu'}.plan"
    if a.mode == "compile":
        run([a.stofc, "compile", model, "-o", plan, "--offline", "--arch", a.arch, "--precision", a.precision,
             *shapes(d), *a.extra])
        run([a.stofc, "inspect", plan])
        return
    if not gpu_present():
        print("STOF-SKIP: no GPU on this machine")
        return
    rtol, atol = TOLERANCE[a.precision]
    run([a.stofc, "compile", model, "-o", plan, "--precision", a.precision, *shapes(d), *a.extra])
    outputs = {}
    for mode, graph in (("plain", []), ("graph", ["--graph"])):
        out_dir = a.work / f"{d.name}.{a.precision}.{mode}"
        run([a.stof_run, plan, "--inputs-dir", d / "inputs", "--expect-dir", d / "expected", "--rtol", str(rtol),
             "--atol", str(atol), "--output-dir", out_dir, *graph])
        outputs[mode] = {f.name: np.load(f) for f in sorted(out_dir.glob("*.npy"))}
    # A replayed CUDA graph runs the same kernels on the same data: outputs are bit-identical.
    if outputs["plain"].keys() != outputs["graph"].keys() or not outputs["plain"]:
        sys.exit(f"plain and graph runs wrote different outputs: {sorted(outputs['plain'])} vs {sorted(outputs['graph'])}")
    for name, x in outputs["plain"].items():
        if x.tobytes() != outputs["graph"][name].tobytes():
            sys.exit(f"{name}: CUDA graph replay differs from plain launches")
    print(f"plain and graph outputs bit-identical ({len(outputs['plain'])} outputs)")


if __name__ == "__main__":
    main()
