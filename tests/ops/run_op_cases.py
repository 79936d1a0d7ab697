#!/usr/bin/env python3
"""Every single-op case (make_op_cases.py) through stofc compile, and on a GPU
through stof-run against onnxruntime's outputs.

  compile  stofc compile --offline --arch ARCH for each case (every template
           instance the cases need goes through NVRTC)
  run      compile for the GPU present and stof-run --expect-dir; prints
           "STOF-SKIP: ..." and succeeds where no GPU exists
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np


def shapes(case):
    args = []
    for f in sorted((case / "inputs").glob("*.npy")):
        shape = np.load(f, mmap_mode="r").shape
        if shape:  # rank-0 inputs are fixed by the model
            args += ["--shape", f"{f.stem}={'x'.join(str(d) for d in shape)}"]
    return args


# fp32 plans run attention on the fp16 sparse kernels (fp16 copies of Q, K, V, fp32
# accumulation): about 1e-3 relative error (README, --precision), as the zoo's fp32 runs allow.
FP32_ATTENTION_TOLERANCE = (5e-3, 1e-3)


def check(case, a):
    plan = a.work / f"{case.name}.plan"
    rtol, atol = a.rtol, a.atol
    if a.precision == "fp32" and case.name.startswith("Attention_"):
        rtol, atol = max(rtol, FP32_ATTENTION_TOLERANCE[0]), max(atol, FP32_ATTENTION_TOLERANCE[1])
    cmd = [a.stofc, "compile", case / "model.onnx", "-o", plan, "--precision", a.precision, *shapes(case), "-j", "1"]
    cmd += ["--offline", "--arch", a.arch] if a.mode == "compile" else []
    cmds = [cmd]
    if a.mode == "run":
        cmds.append([a.stof_run, plan, "--inputs-dir", case / "inputs", "--expect-dir", case / "expected",
                     "--rtol", str(rtol), "--atol", str(atol)])
    for c in cmds:
        r = subprocess.run([str(x) for x in c], capture_output=True, text=True)
        if r.returncode != 0:
            how = f"signal {-r.returncode}" if r.returncode < 0 else f"exit code {r.returncode}"
            return f"{case.name}: {' '.join(str(x) for x in c[:2])} failed ({how}):\n{(r.stdout + r.stderr).strip()}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["compile", "run"])
    ap.add_argument("cases", type=Path, help="directory written by make_op_cases.py")
    ap.add_argument("--stofc", required=True)
    ap.add_argument("--stof-run")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--only", default="", help="regular expression: run only the cases whose name matches")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    if a.mode == "run" and (shutil.which("nvidia-smi") is None or
                            subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0):
        print("STOF-SKIP: no GPU on this machine")
        return
    a.work.mkdir(parents=True, exist_ok=True)
    cases = sorted(d for d in a.cases.iterdir() if (d / "model.onnx").exists() and re.search(a.only, d.name))
    if not cases:
        sys.exit(f"no cases in {a.cases}")
    with ThreadPoolExecutor(a.jobs) as pool:
        failures = [f for f in pool.map(lambda c: check(c, a), cases) if f]
    for f in failures:
        print(f, "\n")
    print(f"{len(cases) - len(failures)} of {len(cases)} op cases passed ({a.mode}, {a.precision})")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
