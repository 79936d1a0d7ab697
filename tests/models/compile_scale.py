#!/usr/bin/env python3
"""How a decoder's compile grows with the sequence length: `stofc compile` of MODEL
(batch 1, fp16, offline) at each --seq, its wall time and peak memory (that compile's
maximum resident set) logged; fails when the peak exceeds --max-rss-mb. The time is
logged against --target-s and not asserted (the machine may be shared).

  compile_scale.py --stofc build/bin/stofc --model models/llama-dynamo/model.onnx --seq 4096 --max-rss-mb 2048
"""
import argparse
import os
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
    ap.add_argument("--target-s", type=float, default=30, help="wall time a compile should stay under (logged only)")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="stofc-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    failed = []
    for seq in args.seq:
        cmd = [args.stofc, "compile", args.model, "--shape", "batch=1", "--shape", f"seq={seq}", "--precision", "fp16",
               "--offline", "--cache-dir", str(work / "cache"), "-o", str(work / f"s{seq}.plan")]
        t0 = time.monotonic()
        with open(work / f"s{seq}.log", "w+") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "STOF_LOG": "warn"})
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak (ru_maxrss, KiB on Linux)
            wall = time.monotonic() - t0
            rc = proc.returncode = os.waitstatus_to_exitcode(status)
            log.seek(0)
            out = log.read()
        rss_mb = usage.ru_maxrss / 1024
        if rc != 0:
            print(f"S={seq}: stofc failed ({rc}): {out.strip()[-400:]}")
            failed.append(seq)
            continue
        slow = f" (over the {args.target_s:.0f} s target)" if wall > args.target_s else ""
        print(f"S={seq}: {wall:.1f} s{slow}, peak RSS {rss_mb:.0f} MB (limit {args.max_rss_mb:.0f} MB)")
        if rss_mb > args.max_rss_mb:
            print(f"S={seq}: peak RSS {rss_mb:.0f} MB is over the limit of {args.max_rss_mb:.0f} MB")
            failed.append(seq)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
