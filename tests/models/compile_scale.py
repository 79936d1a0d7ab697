#!/usr/bin/env python3
"""How a decoder's compile grows with the sequence length: `stofc compile` of MODEL
(batch 1, fp16, offline) at each --seq, its wall time and peak memory (the child's
maximum resident set) logged; fails when the peak exceeds --max-rss-mb.

  compile_scale.py --stofc build/bin/stofc --model models/llama-dynamo/model.onnx --seq 4096 --max-rss-mb 2048
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stofc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--seq", type=int, nargs="+", required=True)
    ap.add_argument("--max-rss-mb", type=float, required=True, help="peak resident memory allowed per compile")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="stofc-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = []
    for seq in args.seq:
        cmd = [args.stofc, "compile", args.model, "--shape", "batch=1", "--shape", f"seq={seq}", "--precision", "fp16",
               "--offline", "--cache-dir", str(work / "cache"), "-o", str(work / f"s{seq}.plan")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "STOF_LOG": "warn"})
        wall = time.monotonic() - t0
        # ru_maxrss of RUSAGE_CHILDREN is the largest child so far (KiB on Linux): compiles run in
        # increasing S, so each peak is its own unless an earlier one was larger.
        rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            print(f"S={seq}: stofc failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
            failed.append(seq)
            continue
        note = "" if rss_mb * 1024 > before else " (peak of an earlier compile)"
        print(f"S={seq}: {wall:.1f} s, peak RSS {rss_mb:.0f} MB{note}")
        if rss_mb > args.max_rss_mb:
            print(f"S={seq}: peak RSS {rss_mb:.0f} MB is over the limit of {args.max_rss_mb:.0f} MB")
            failed.append(seq)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
