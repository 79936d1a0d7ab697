"""tools/bench/e2e_table.py: the calls of one e2e.py run merged into one table.

  python3 test_e2e_table.py REPO_ROOT
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(sys.argv[1]) / "tools" / "bench" / "e2e_table.py"
HEADER = "NVIDIA H100 80GB HBM3, torch 2.11.0, transformers 5.17.0, fp16, {}; grid today; max-autotune run"


def row(tag, stofc_ms=None, flex_ms=None):
    family, b, s, mask = tag.rsplit("-", 3)
    r = {"tag": tag, "family": family, "batch": int(b[1:]), "seq": int(s[1:]), "mask": mask}
    if stofc_ms is None:
        return {**r, "status": "not run (time budget)"}
    res = {"stofc": {"status": "ok", "ms": stofc_ms, "err": 0.01, "compile_s": 5.0, "attention_share": 0.2},
           "flex": {"status": "ok", "ms": flex_ms}}
    return {**r, "results": res, "err_torch_fp16": 0.012, "ok": True}


def run(tmp, *files):
    paths = []
    for i, f in enumerate(files):
        paths.append(tmp / f"call{i}.json")
        paths[-1].write_text(json.dumps(f))
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths)], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as d:
    tmp = Path(d)
    first = {"header": HEADER.format("2026-11-27"), "rows": [row("bert-base-b8-s512-none", 2.0, 4.4),
                                                             row("gpt2-b8-s1024-causal")]}
    second = {"header": HEADER.format("2026-11-28"), "rows": [row("gpt2-b8-s1024-causal", 3.0, 4.5)]}
    r = run(tmp, first, second)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines() if l.startswith("| ")]
    assert lines[0].split(" | ")[5:7] == ["compile+Flex ms", "vs compile+Flex"], lines[0]
    assert len(lines) == 3 and "| 2.00 | 4.40 | 2.20× |" in lines[1] and "| 3.00 | 4.50 | 1.50× |" in lines[2], lines
    assert "not run" not in r.stdout

    r = run(tmp, first, second, second)
    assert r.returncode != 0 and "gpt2-b8-s1024-causal is measured in two files" in r.stderr, r.stderr

    other = {"header": HEADER.replace("H100 80GB HBM3", "H200").format("2026-11-27"), "rows": second["rows"]}
    r = run(tmp, first, other)
    assert r.returncode != 0 and "another machine" in r.stderr, r.stderr

    r = run(tmp, {"rows": []})
    assert r.returncode != 0 and "not an e2e.py --json file" in r.stderr, r.stderr
print("e2e_table: ok")
