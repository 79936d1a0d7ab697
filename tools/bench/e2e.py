#!/usr/bin/env python3
"""Whole models: stofc plans against PyTorch eager and torch.compile, side by side
in one process on identical weights, inputs and masks (fp16).

Each case builds a HuggingFace model from a config (random weights, torch seed 0;
nothing is downloaded), exports it with torch.onnx.export (TorchScript exporter,
opset 17, static shapes) and compiles it with `stofc compile --precision fp16`
(the case's mask as `--mask file:M.npy`, M the same [S,S] keep mask the peers get
as a 4-D boolean attention mask; decoders intersect it with their own causal mask,
and the peers get that intersection). Every output is
compared with the model run in fp32 by PyTorch before anything is timed; an output
further from it than torch's own fp16 output by more than the tolerance is FAIL.
Times: median over the timed calls, one forward per call, each call waited for
(stofc: stof_plan_run with CUDA-graph replay; torch: forward then synchronize).

  tools/bench/e2e.py --stofc build/bin/stofc [--lib build/lib/libstof.so] [--only REGEX]
                     [--work DIR] [--json F] [--markdown F]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from mha import make_mask
from stof_ctypes import Stof

try:
    import torch
    import transformers
except ImportError as e:
    sys.exit(f"e2e.py needs torch and transformers: {e}")

# name, HF class, config class, config, batch, seq, mask (mha.make_mask name, "none", or "causal": the
# decoder's own mask). Decoders (GPT-2, LLaMA) keep their causal mask under any other mask.
BERT = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
T5 = dict(d_model=768, d_kv=64, num_heads=12, num_layers=12, d_ff=3072)
LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16, num_attention_heads=32,
             num_key_value_heads=8, max_position_embeddings=4096, use_cache=False)
DECODERS = ("GPT2Model", "LlamaModel")
CASES = [
    ("bert-base", "BertModel", "BertConfig", BERT, 8, 512, "none"),
    ("bert-base", "BertModel", "BertConfig", {**BERT, "max_position_embeddings": 2048}, 8, 2048, "sliding"),
    ("bert-base", "BertModel", "BertConfig", {**BERT, "max_position_embeddings": 2048}, 8, 2048, "longformer"),
    ("gpt2", "GPT2Model", "GPT2Config", dict(n_positions=1024, use_cache=False), 8, 1024, "causal"),
    ("llama-1.1b", "LlamaModel", "LlamaConfig", LLAMA, 1, 4096, "causal"),
    ("llama-1.1b", "LlamaModel", "LlamaConfig", LLAMA, 1, 4096, "sliding"),
    ("t5-base-encoder", "T5EncoderModel", "T5Config", T5, 8, 1024, "bigbird"),
    ("vit-base", "ViTModel", "ViTConfig", dict(image_size=224, patch_size=16), 32, 197, "none"),
]
TOL = 2e-2  # stofc's error may exceed torch fp16's by this much (max abs, on outputs of scale ~1)


class LastHidden(torch.nn.Module):
    """model(**inputs).last_hidden_state, in eval mode (torch.onnx.export restores
    the wrapper's mode on the model it wraps when it is done)."""

    def __init__(self, model, names, mask=None):
        super().__init__()
        self.model, self.names, self.mask = model, names, mask
        self.eval()

    def forward(self, *args):
        kw = dict(zip(self.names, args))
        if self.mask is not None:
            kw["attention_mask"] = self.mask
        return self.model(**kw).last_hidden_state


def build(cls, cfg_cls, cfg):
    torch.manual_seed(0)
    config = getattr(transformers, cfg_cls)(**cfg)
    kwargs = {"add_pooling_layer": False} if cls in ("BertModel", "ViTModel") else {}
    return getattr(transformers, cls)(config, **kwargs).eval()


def inputs_for(cls, model, b, s):
    rng = np.random.default_rng(1)
    if cls == "ViTModel":
        c = model.config
        return {"pixel_values": rng.standard_normal((b, c.num_channels, c.image_size, c.image_size)).astype(np.float32)}
    out = {"input_ids": rng.integers(0, model.config.vocab_size, (b, s)).astype(np.int64),
           "attention_mask": np.ones((b, s), np.int64)}
    if cls == "BertModel":
        out["token_type_ids"] = np.zeros((b, s), np.int64)
    return out


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t) * 1e3


def run_case(case, stofc, stof, work, reps):
    name, cls, cfg_cls, cfg, b, s, mask = case
    tag = f"{name}-b{b}-s{s}-{mask}"
    print(f"== {tag}", flush=True)
    model = build(cls, cfg_cls, cfg)
    feeds = inputs_for(cls, model, b, s)
    names = list(feeds)
    keep = make_mask(mask, s) if mask not in ("none", "causal") else None
    row = {"case": tag, "model": name, "batch": b, "seq": s, "mask": mask}

    # Export (fp32, the 2-D padding mask of ones; once per model and shape, in its own
    # directory for the external weights of large models) and compile.
    onnx_path, plan_path = work / f"{name}-b{b}-s{s}" / "model.onnx", work / f"{tag}.plan"
    if not onnx_path.exists():
        onnx_path.parent.mkdir(parents=True, exist_ok=True)
        args = tuple(torch.from_numpy(feeds[n]) for n in names)
        torch.onnx.export(LastHidden(model, names), args, str(onnx_path), dynamo=False, opset_version=17,
                          input_names=names, output_names=["last_hidden_state"])
    cmd = [stofc, "compile", onnx_path, "-o", plan_path, "--precision", "fp16"]
    cmd += [a for n, x in feeds.items() for a in ("--shape", f"{n}={'x'.join(map(str, x.shape))}")]
    if keep is not None:
        np.save(work / f"{tag}.mask.npy", keep)
        cmd += ["--mask", f"file:{work / f'{tag}.mask.npy'}"]
    t0 = time.time()
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{tag}: stofc compile failed:\n{r.stderr[-2000:]}")
    row["compile_s"] = round(time.time() - t0, 1)
    plan = stof.plan(plan_path)
    for n, x in feeds.items():
        plan.set_input(n, x)

    # PyTorch: the same model and inputs; the mask as a 4-D boolean attention mask.
    dev = "cuda"
    t_in = [torch.from_numpy(feeds[n]).to(dev) for n in names]
    mask4 = None
    if keep is not None:  # a 4-D mask replaces the model's own: a decoder's gets the causal triangle too
        mask4 = torch.from_numpy(keep & np.tril(np.ones((s, s), bool)) if cls in DECODERS else keep)
        mask4 = mask4.to(dev)[None, None].expand(b, 1, s, s)
    with torch.no_grad():
        ref = LastHidden(model.to(dev).float(), names, mask4)(*t_in).float().cpu().numpy()
        half = LastHidden(model.half(), names, mask4)
        t16 = [x.half() if x.is_floating_point() else x for x in t_in]
        eager_out = half(*t16).float().cpu().numpy()
        plan.run(True)
        stof_out = plan.output("last_hidden_state")
        err_torch = float(np.abs(eager_out - ref).max())
        err_stof = float(np.abs(stof_out - ref).max())
        row.update(err_torch_fp16=err_torch, err_stofc=err_stof, ok=err_stof <= err_torch + TOL)
        if not row["ok"]:
            print(f"   FAIL: stofc max error {err_stof:.3g} vs torch fp16 {err_torch:.3g}", flush=True)
            return row
        row["stofc_ms"] = timed(lambda: plan.run(True), 5, reps)

        def eager():
            half(*t16)
            torch.cuda.synchronize()
        row["eager_ms"] = timed(eager, 5, reps)
        compiled = torch.compile(half)
        t0 = time.time()
        compiled(*t16)
        torch.cuda.synchronize()
        row["torch_compile_s"] = round(time.time() - t0, 1)

        def comp():
            compiled(*t16)
            torch.cuda.synchronize()
        row["compile_ms"] = timed(comp, 5, reps)
    print(f"   stofc {row['stofc_ms']:.3f} ms, eager {row['eager_ms']:.3f} ms, torch.compile {row['compile_ms']:.3f} ms "
          f"(errors vs fp32: stofc {err_stof:.3g}, torch fp16 {err_torch:.3g})", flush=True)
    del plan
    torch.cuda.empty_cache()
    return row


def markdown(rows):
    lines = ["| model | B | S | mask | stofc ms | eager ms | torch.compile ms | vs eager | vs compile | "
             "max err stofc / torch fp16 | stofc compile s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r.get("ok"):
            lines.append(f"| {r['model']} | {r['batch']} | {r['seq']} | {r['mask']} | FAIL | | | | | "
                         f"{r['err_stofc']:.3g} / {r['err_torch_fp16']:.3g} | |")
            continue
        lines.append(f"| {r['model']} | {r['batch']} | {r['seq']} | {r['mask']} | {r['stofc_ms']:.2f} | "
                     f"{r['eager_ms']:.2f} | {r['compile_ms']:.2f} | {r['eager_ms'] / r['stofc_ms']:.2f}× | "
                     f"{r['compile_ms'] / r['stofc_ms']:.2f}× | {r['err_stofc']:.3g} / {r['err_torch_fp16']:.3g} | "
                     f"{r['compile_s']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stofc", required=True)
    ap.add_argument("--lib", help="libstof.so (default build/lib/libstof.so)")
    ap.add_argument("--only", default="", help="regular expression over case names (model-bB-sS-mask)")
    ap.add_argument("--work", type=Path, help="directory for models and plans (default: a temporary one)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    stof = Stof(a.lib)
    work = a.work or Path(tempfile.mkdtemp(prefix="stof-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    cases = [c for c in CASES if re.search(a.only, f"{c[0]}-b{c[4]}-s{c[5]}-{c[6]}")]
    rows = [run_case(c, a.stofc, stof, work, a.reps) for c in cases]
    head = (f"{torch.cuda.get_device_name()}, torch {torch.__version__}, transformers {transformers.__version__}, "
            f"fp16, {time.strftime('%Y-%m-%d')}. ms per forward (median); ratios: peer time / stofc time.")
    text = head + "\n\n" + markdown(rows) + "\n"
    print(text)
    if a.markdown:
        Path(a.markdown).write_text(text)
    if a.json:
        Path(a.json).write_text(json.dumps({"header": head, "rows": rows}, indent=1) + "\n")
    if not all(r.get("ok") for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
