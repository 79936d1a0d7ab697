#!/usr/bin/env python3
"""Per-step profiles of the same models compiled by several stofc builds, side by side.

Takes the models tools/bench/e2e.py exported into its --work directory
(<model>-b<B>-s<S>-<config hash>/model.onnx, static shapes, and <case>.mask.npy for
masked cases),
compiles each case with every `--build LABEL=DIR` (DIR/bin/stofc, fp16, the case's
mask) and runs `DIR/bin/stof-run PLAN --profile N --json` (random inputs), then
prints the time per kind of step (gemm, sparse_attention, elementwise, layout,
reduction, ...) for each build and the change of the non-GEMM, non-attention steps.

  tools/bench/profile_compare.py --work DIR --build before=OLD --build after=build-gpu
                                 [--only REGEX] [--runs 20] [--json F] [--markdown F]
"""
import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

MEMORY_BOUND = ("elementwise", "layout", "reduction")  # the steps downstream fusion removes or speeds up


def profile(build, onnx, mask, plan, runs):
    cmd = [str(build / "bin" / "stofc"), "compile", str(onnx), "-o", str(plan), "--precision", "fp16"]
    if mask.exists():
        cmd += ["--mask", f"file:{mask}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    r = subprocess.run([str(build / "bin" / "stof-run"), str(plan), "--profile", str(runs), "--json"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"stof-run {plan} --profile failed:\n{r.stderr[-2000:]}")
    p = json.loads(r.stdout)["profile"]
    return {"total_ms": p["total_ms"], "steps": len(p["steps"]),
            "by_kind": {k: v["ms"] for k, v in p["by_kind"].items()},
            "kind_steps": {k: v["steps"] for k, v in p["by_kind"].items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="tools/bench/e2e.py's --work directory")
    ap.add_argument("--build", action="append", required=True, help="LABEL=DIR with DIR/bin/stofc and DIR/bin/stof-run")
    ap.add_argument("--only", default="", help="regular expression over case names (model-bB-sS-mask)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    builds = [(b.split("=", 1)[0], Path(b.split("=", 1)[1])) for b in a.build]
    labels = {label for label, _ in builds}
    plans = sorted(a.work.glob("*.plan"))  # e2e.py leaves <case>.plan beside the models; ours are <case>.<label>.plan
    cases = [p.stem for p in plans if p.stem.rsplit(".", 1)[-1] not in labels and re.search(a.only, p.stem)]
    if not cases:
        sys.exit(f"no e2e cases in {a.work} match '{a.only}' (run tools/bench/e2e.py --work {a.work} first)")
    rows = []
    for case in cases:
        models = sorted(a.work.glob(re.sub(r"-[^-]+$", "", case) + "-*/model.onnx"), key=lambda p: p.stat().st_mtime)
        if not models:
            sys.exit(f"{case}: no exported model in {a.work}")
        row = {"case": case}
        for label, build in builds:
            row[label] = profile(build, models[-1], a.work / f"{case}.mask.npy",
                                 a.work / f"{case}.{label}.plan", a.runs)
        rows.append(row)
        print(json.dumps(row), flush=True)
    kinds = sorted({k for r in rows for label, _ in builds for k in r[label]["by_kind"]})
    lines = ["| case | build | steps | total ms | " + " | ".join(f"{k} ms" for k in kinds) + " | memory-bound ms |",
             "|---|---|---|---|" + "---|" * len(kinds) + "---|"]
    for r in rows:
        base = None
        for label, _ in builds:
            p = r[label]
            mb = sum(p["by_kind"].get(k, 0.0) for k in MEMORY_BOUND)
            change = "" if base is None else f" ({(mb - base) / base * 100:+.0f}%)" if base else ""
            base = mb if base is None else base
            cells = " | ".join(f"{p['by_kind'].get(k, 0.0):.3f} ({p['kind_steps'].get(k, 0)})" for k in kinds)
            lines.append(f"| {r['case']} | {label} | {p['steps']} | {p['total_ms']:.3f} | {cells} | {mb:.3f}{change} |")
    text = ("Median of the per-step times (CUDA events) over " + str(a.runs) + " runs; `kind ms (steps)`; memory-bound = "
            + ", ".join(MEMORY_BOUND) + ", its change against the first build.\n\n" + "\n".join(lines) + "\n")
    print(text)
    if a.markdown:
        Path(a.markdown).write_text(text)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
