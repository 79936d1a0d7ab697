#!/usr/bin/env python3
"""Finds where a GPU plan first departs from the reference interpreter.

  stofc eval MODEL.onnx --inputs-dir IN --dump-dir ref/
  stof-run PLAN --inputs-dir IN --dump-dir gpu/
  tools/compare_dumps.py gpu/ ref/ [--rtol 1e-3 --atol 1e-4]

Walks gpu/order.txt (tensors in step order) and prints, per tensor, the worst
absolute error against ref/<name>.npy; stops after --show mismatches.
"""
import argparse
import sys
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gpu", type=Path)
    ap.add_argument("ref", type=Path)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--show", type=int, default=5, help="stop after this many mismatching tensors")
    a = ap.parse_args()
    order = a.gpu / "order.txt"
    if not order.exists():
        sys.exit(f"{order} is missing: write the directory with stof-run --dump-dir")
    bad = 0
    for line in order.read_text().splitlines():
        step, name = line.split(" ", 1)
        ref_file = a.ref / f"{name}.npy"
        if not ref_file.exists():
            print(f"step {step:>4} {name}: no reference (a value the compiler created)")
            continue
        got, want = np.load(a.gpu / f"{name}.npy"), np.load(ref_file)
        if got.shape != want.shape:
            print(f"step {step:>4} {name}: shape {got.shape} != reference {want.shape}")
            bad += 1
        else:
            g, w = got.astype(np.float64), want.astype(np.float64)
            err = np.abs(g - w)
            outside = err > a.atol + a.rtol * np.abs(w)
            worst = np.unravel_index(int(np.argmax(err)), err.shape) if err.size else ()
            status = "MISMATCH" if outside.any() else "ok"
            print(f"step {step:>4} {name}: {status} max abs {err.max() if err.size else 0:.3g}, "
                  f"{int(outside.sum())} of {err.size} outside" + (f", worst at {worst}: {g[worst]:.6g} vs {w[worst]:.6g}"
                                                                   if outside.any() else ""))
            bad += bool(outside.any())
        if bad >= a.show:
            break
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
