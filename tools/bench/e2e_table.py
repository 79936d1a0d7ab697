#!/usr/bin/env python3
"""tools/bench/e2e.py's results as a markdown table, from its --json files: one run, or the
calls of one run split by --only (e.g. one family per 10-minute GPU call) merged into one.

Rows keep the order of the files and, within a file, of the grid. A case that a later file
measured replaces one an earlier file left "not run (time budget)"; a case measured in two
files is an error, as are files from different GPUs, torch or transformers versions. Peers
are those any row ran, in e2e.py's order. Needs no torch.

  tools/bench/e2e_table.py RESULT.json... [--markdown F]
"""
import argparse
import json
import sys
from pathlib import Path

PEERS = {"eager": "eager", "compile": "torch.compile", "reduce_overhead": "reduce-overhead",
         "max_autotune": "max-autotune", "flex": "compile+Flex", "flex_flash": "compile+Flex FLASH"}
FLEX_PEERS = ("flex", "flex_flash")
NOT_RUN = "not run (time budget)"


def fmt_ms(ms):
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}"


def cell(r):
    """A result as a table cell: ms (with graph breaks or skipped CUDA graphs), FAIL or failed: reason."""
    if r is None:
        return "–"
    if r.get("status") == "ok":
        notes = [f"{r['graph_breaks']} graph breaks"] if r.get("graph_breaks") else []
        notes += ["CUDA graphs skipped"] if r.get("cudagraph_skips") else []
        return fmt_ms(r["ms"]) + (f" ({', '.join(notes)})" if notes else "")
    if r.get("status") == "FAIL":
        return f"FAIL (max err {r['err']:.3g})"
    return "failed: " + r.get("reason", "?").replace("|", "/")[:120]


def best(res, peers):
    ms = [res[p]["ms"] for p in peers if res.get(p, {}).get("status") == "ok"]
    return min(ms) if ms else None


def markdown(rows, peers):
    head = ["model", "B", "S", "mask", "stofc ms", *[f"{PEERS[p]} ms" for p in peers], "vs compile+Flex",
            "vs best peer", "attention %", "max err stofc / torch fp16", "stofc compile s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        first = [r["family"], str(r["batch"]), str(r["seq"]), r["mask"]]
        if "results" not in r:
            lines.append("| " + " | ".join(first + [r["status"]] + [""] * (len(head) - 5)) + " |")
            continue
        res, st = r["results"], r["results"].get("stofc", {})
        ratio = lambda t: f"{t / st['ms']:.2f}×" if t and st.get("status") == "ok" else "–"
        err = f"{st['err']:.3g} / {r['err_torch_fp16']:.3g}" if "err" in st else "–"
        attn = f"{100 * st['attention_share']:.0f}" if "attention_share" in st else "–"
        lines.append("| " + " | ".join(first + [cell(st), *[cell(res.get(p)) for p in peers],
                                                 ratio(best(res, FLEX_PEERS)), ratio(best(res, peers)), attn, err,
                                                 str(st.get("compile_s", "–"))]) + " |")
    tuned = [r for r in rows if "tuning" in r.get("results", {}).get("stofc", {})]
    if tuned:
        lines += ["", "| model | B | S | tuning s (cold) | recompile s (warm cache) | --tune off s | warm plans identical | "
                  "whole plan µs: initial scheme | + stage 1 | + stage 2 | stage 2 vs sweep | offline plan ms | "
                  "offline / tuned |", "|" + "---|" * 13]
        for r in tuned:
            st = r["results"]["stofc"]
            t = st["tuning"]
            us = [f"{t[k]:.1f}" if k in t else "–" for k in ("initial_us", "stage1_us", "final_us")]
            off = t.get("offline_ms")
            sweep = f"+{t['sweep_pct']:.1f} % ({t['sweep_segments']})" if "sweep_pct" in t else "–"
            lines.append("| " + " | ".join([r["family"], str(r["batch"]), str(r["seq"]), str(t["cold_s"]), str(t["warm_s"]),
                                           str(t.get("offline_compile_s", "–")), "yes" if t["warm_identical"] else "NO", *us, sweep, fmt_ms(off) if off else "–",
                                           f"{off / st['ms']:.2f}×" if off and st.get("ms") else "–"]) + " |")
    return "\n".join(lines)


def machine(header):
    """The part of e2e.py's header naming the GPU and the library versions."""
    return header.split(";", 1)[0].rsplit(",", 1)[0]


def merge(results):
    """[(name, {"header", "rows"})] -> (header, rows): the rows of all calls of one run."""
    header = results[0][1]["header"]
    rows, where = [], {}
    for name, res in results:
        if machine(res["header"]) != machine(header):
            sys.exit(f"e2e_table.py: {name} is from another machine or versions:\n  {machine(res['header'])}\n"
                     f"  {machine(header)} ({results[0][0]})")
        for r in res["rows"]:
            i = where.get(r["tag"])
            if i is None:
                where[r["tag"]] = len(rows)
                rows.append(r)
            elif rows[i].get("status") == NOT_RUN:
                rows[i] = r
            elif r.get("status") != NOT_RUN:
                sys.exit(f"e2e_table.py: {r['tag']} is measured in two files (the second: {name})")
    return header, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", type=Path, help="e2e.py --json files")
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args()
    loaded = []
    for p in a.results:
        try:
            loaded.append((str(p), json.loads(p.read_text())))
        except (OSError, ValueError) as e:
            sys.exit(f"e2e_table.py: {p}: {e}")
        if not {"header", "rows"} <= loaded[-1][1].keys():
            sys.exit(f"e2e_table.py: {p} is not an e2e.py --json file")
    header, rows = merge(loaded)
    peers = [p for p in PEERS if any(p in r.get("results", {}) for r in rows)]
    text = header + "\n\n" + markdown(rows, peers) + "\n"
    if a.markdown:
        a.markdown.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
