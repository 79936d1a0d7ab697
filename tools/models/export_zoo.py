#!/usr/bin/env python3
"""Build stofc's model zoo: tiny random-weight Transformers exported to ONNX, with golden I/O.

Each family (bert, gpt2, llama, t5, vit) is built from a HuggingFace config written below
(nothing is downloaded; weights come from the model's own initialiser under torch seed 0),
in eval mode, fp32, with the model's default attention implementation. Every head has
head_dim 64. Each model is exported twice:

  torchscript  torch.onnx.export(dynamo=False, opset_version=17), dynamic batch/seq axes
  dynamo       torch.onnx.export(dynamo=True,  opset_version=18), dynamic batch/seq shapes
               (graph as the exporter optimises it); llama-dynamo keeps its weights (every
               initializer of >= 1024 bytes) in model.onnx.data, every other model is one
               self-contained file. Small constants stay inline because onnxruntime cannot
               load a model whose shape-inference inputs (axes, starts, ...) are external.
               Paths in the exporter's stack-trace metadata are made relative, so the
               files do not depend on where the repository or the venv lives.

(ViT: only the batch axis is dynamic.) For each export the script runs onnx.checker,
runs onnxruntime (CPU, one thread) on fixed inputs (batch 2, seq 128; row 1 padded over
its last 16 positions) and saves those outputs as the expected ones. It checks ORT
against PyTorch on those inputs and on a second, differently shaped set (comparing only
non-padded positions), and the two exports of a family against each other; any
disagreement above TOL stops the script. Output:

  OUT/<family>-<exporter>/model.onnx [model.onnx.data] inputs/*.npy expected/*.npy CARD.md
  OUT/manifest.json  OUT/README.md

Usage (from the repository root):
  python3 -m venv .venv-export
  .venv-export/bin/pip install -r tools/models/requirements.txt
  .venv-export/bin/python tools/models/export_zoo.py [--out models]
"""
import argparse
import collections
import importlib.metadata
import json
import logging
import os
import shutil
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
import transformers
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = Path(__file__).resolve().parents[2]
COMMAND = ".venv-export/bin/python tools/models/export_zoo.py"
SEED = 0
BATCH, SEQ, PAD = 2, 128, (0, 16)
CHECK_BATCH, CHECK_SEQ, CHECK_PAD = 3, 40, (7, 0, 13)
TOL = 1e-4
VOCAB = 512
EXPORTERS = {"torchscript": 17, "dynamo": 18}
EXTERNAL_DATA = {("llama", "dynamo")}
EXTERNAL_THRESHOLD = 1024
PACKAGES = ("torch", "transformers", "onnx", "onnxruntime", "onnxscript", "numpy")

FAMILIES = {
    "bert": dict(
        cls="BertModel",
        config="BertConfig",
        config_kwargs=dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                           intermediate_size=256, vocab_size=VOCAB, max_position_embeddings=512),
        model_kwargs=dict(add_pooling_layer=False),
        inputs=("input_ids", "attention_mask", "token_type_ids"),
        about="BERT encoder (post-LayerNorm, GELU, learned absolute positions, token types)",
    ),
    "gpt2": dict(
        cls="GPT2Model",
        config="GPT2Config",
        config_kwargs=dict(n_layer=2, n_embd=128, n_head=2, vocab_size=VOCAB, n_positions=512,
                           bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1, use_cache=False),
        model_kwargs={},
        inputs=("input_ids", "attention_mask"),
        about="GPT-2 decoder (pre-LayerNorm, causal self-attention, Conv1D projections, gelu_new)",
    ),
    "llama": dict(
        cls="LlamaModel",
        config="LlamaConfig",
        config_kwargs=dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=4,
                           num_key_value_heads=2, intermediate_size=512, vocab_size=VOCAB,
                           max_position_embeddings=512, use_cache=False),
        model_kwargs={},
        inputs=("input_ids", "attention_mask"),
        about="LLaMA decoder (RMSNorm, rotary positions, grouped-query attention 4 q / 2 kv heads, SwiGLU)",
    ),
    "t5": dict(
        cls="T5EncoderModel",
        config="T5Config",
        config_kwargs=dict(num_layers=2, d_model=128, d_kv=64, num_heads=2, d_ff=256,
                           vocab_size=VOCAB),
        model_kwargs={},
        inputs=("input_ids", "attention_mask"),
        about="T5 encoder (RMS-style T5LayerNorm, relative position bias, unscaled QK^T, ReLU FFN)",
    ),
    "vit": dict(
        cls="ViTModel",
        config="ViTConfig",
        config_kwargs=dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                           intermediate_size=256, image_size=64, patch_size=4, num_channels=3),
        model_kwargs=dict(add_pooling_layer=False),
        inputs=("pixel_values",),
        about="ViT encoder (4x4 patch Conv, CLS token, 257 tokens, pre-LayerNorm, GELU)",
    ),
}
OUTPUT = "last_hidden_state"


class LastHidden(torch.nn.Module):
    """Calls the HF model with keyword inputs and returns only last_hidden_state."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args)), return_dict=True).last_hidden_state


def build(family):
    spec = FAMILIES[family]
    config = getattr(transformers, spec["config"])(**spec["config_kwargs"])
    torch.manual_seed(SEED)
    model = getattr(transformers, spec["cls"])(config, **spec["model_kwargs"])
    return model.eval().float()


def make_inputs(family, batch, seq, pad, seed):
    rng = np.random.default_rng(seed)
    if family == "vit":
        return {"pixel_values": rng.standard_normal((batch, 3, 64, 64), dtype=np.float32)}
    out = {"input_ids": rng.integers(0, VOCAB, size=(batch, seq), dtype=np.int64)}
    mask = np.ones((batch, seq), dtype=np.int64)
    for row, n in enumerate(pad):
        mask[row, seq - n:] = 0
    out["attention_mask"] = mask
    if "token_type_ids" in FAMILIES[family]["inputs"]:
        tt = np.zeros((batch, seq), dtype=np.int64)
        tt[:, seq // 2:] = 1
        out["token_type_ids"] = tt
    return out


def torch_run(model, family, inputs):
    names = FAMILIES[family]["inputs"]
    with torch.no_grad():
        return model(**{n: torch.from_numpy(inputs[n]) for n in names}).last_hidden_state.numpy()


def dynamic_dims(family):
    if family == "vit":
        return {"pixel_values": {0: "batch"}}, {OUTPUT: {0: "batch"}}
    axes = {n: {0: "batch", 1: "seq"} for n in FAMILIES[family]["inputs"]}
    return axes, {OUTPUT: {0: "batch", 1: "seq"}}


def export(model, family, exporter, inputs):
    names = FAMILIES[family]["inputs"]
    wrapped = LastHidden(model, names).eval()
    args = tuple(torch.from_numpy(inputs[n]) for n in names)
    in_axes, out_axes = dynamic_dims(family)
    if exporter == "torchscript":
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"stof-zoo-{family}-{os.getpid()}.onnx"
        try:
            torch.onnx.export(wrapped, args, str(path), dynamo=False, opset_version=17,
                              input_names=list(names), output_names=[OUTPUT],
                              dynamic_axes={**in_axes, **out_axes})
            return onnx.load(str(path)), None
        finally:
            path.unlink(missing_ok=True)
    dims = {"batch": torch.export.Dim("batch", min=1, max=64),
            "seq": torch.export.Dim("seq", min=2, max=512)}
    shapes = [{axis: dims[d] for axis, d in in_axes[n].items()} for n in names]

    def dynamo_export():
        return torch.onnx.export(wrapped, args, dynamo=True, opset_version=18,
                                 input_names=list(names), output_names=[OUTPUT],
                                 dynamic_shapes=(tuple(shapes),), report=False, verbose=False)

    try:
        program = dynamo_export()
    except Exception as e:
        cause = next((line for line in str(e).splitlines() if line.startswith("<class ")), type(e).__name__)
        if "Cannot view a tensor" in cause:
            cause += ("; pytorch issue #136543: the SDPA fake kernel's output strides differ from its "
                      "decomposition's, so a reshape recorded as a view fails to re-trace")
        note = (f"the default dynamo export fails ({cause}); this graph was exported under "
                "`torch.nn.attention.sdpa_kernel(SDPBackend.MATH)`")
        with sdpa_kernel(SDPBackend.MATH):
            program = dynamo_export()
        return relative_stack_traces(program.model_proto), note
    return relative_stack_traces(program.model_proto), None


def relative_stack_traces(proto):
    prefixes = sorted({f"{Path(torch.__file__).parents[1]}/", f"{ROOT}/"}, key=len, reverse=True)
    for node in proto.graph.node:
        for prop in node.metadata_props:
            if prop.key.endswith("stack_trace"):
                for prefix in prefixes:
                    prop.value = prop.value.replace(prefix, "")
    return proto


def save(proto, path, external):
    if external:
        onnx.save_model(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=EXTERNAL_THRESHOLD)
    else:
        onnx.save_model(proto, str(path))


def op_types(proto):
    counts = collections.Counter()

    def walk(graph):
        for node in graph.node:
            key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
            counts[key] += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)
                for g in attr.graphs:
                    walk(g)

    walk(proto.graph)
    for fn in proto.functions:
        for node in fn.node:
            counts[f"{fn.domain}.{fn.name}/{node.op_type}"] += 1
    return dict(sorted(counts.items()))


def ort_session(path):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def valid_rows(inputs):
    if "attention_mask" not in inputs:
        return None
    return inputs["attention_mask"].astype(bool)


def max_err(a, b, rows):
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(diff.max() if rows is None else diff[rows].max())


def io_desc(vis):
    out = {}
    for vi in vis:
        t = vi.type.tensor_type
        out[vi.name] = {
            "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name,
            "shape": [d.dim_param if d.HasField("dim_param") else d.dim_value for d in t.shape.dim],
        }
    return out


def versions():
    return {p: importlib.metadata.version(p) for p in PACKAGES}


def write_card(d, entry, vers, spec, errors):
    family, exporter = entry["family"], entry["exporter"]
    lines = [f"# {entry['dir']}", ""]
    lines.append(f"Tiny random-weight {spec['about']}: `transformers.{spec['cls']}`, "
                 f"attention implementation `{entry['attn_implementation']}`, eval mode, fp32, "
                 f"torch seed {SEED}.")
    lines += ["", "## Config", "",
              f"`{spec['config']}({', '.join(f'{k}={v!r}' for k, v in spec['config_kwargs'].items())})`"
              + (f", `{spec['cls']}(config, {', '.join(f'{k}={v!r}' for k, v in spec['model_kwargs'].items())})`"
                 if spec["model_kwargs"] else ""), ""]
    wrapper = ("`model` is a wrapper that calls the HF model with the inputs as keyword arguments and "
               "returns `last_hidden_state`; `args` are the inputs in the order listed below")
    if exporter == "torchscript":
        how = ("`torch.onnx.export(model, args, f, dynamo=False, opset_version=17, "
               "input_names=..., output_names=['last_hidden_state'], dynamic_axes=...)`")
    else:
        how = ("`torch.onnx.export(model, args, dynamo=True, opset_version=18, "
               "input_names=..., output_names=['last_hidden_state'], dynamic_shapes=...)` "
               "(default optimize=True), saved with `onnx.save_model`")
        if entry.get("external_data"):
            how += (" with `save_as_external_data=True, all_tensors_to_one_file=True, "
                    f"location='model.onnx.data', size_threshold={EXTERNAL_THRESHOLD}`: every tensor of "
                    f"at least {EXTERNAL_THRESHOLD} bytes (all weights) lives in `model.onnx.data`, the small "
                    "shape/axes/scalar constants stay inline (with size_threshold=0 onnxruntime 1.30 refuses "
                    "the model: shape inference cannot read external ReduceMean/Slice/Unsqueeze axes)")
        how += ("; the exporter's node metadata is kept, with file paths in its stack traces made "
                "relative to site-packages or the repository")
    lines += ["## Export", "", f"Exporter `{exporter}`, ai.onnx opset {entry['opset']}: {how}. {wrapper}.", ""]
    if entry.get("note"):
        lines += [f"Note: {entry['note']}.", ""]
    lines += [f"Made by `{COMMAND}` (from the repository root; builds the whole zoo).", "",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".", ""]
    if "skipped" in entry:
        lines += ["## Skipped", "", "The exporter failed; no model is stored:", "", "```",
                  entry["skipped"], "```", ""]
        (d / "CARD.md").write_text("\n".join(lines))
        return
    lines += ["## I/O", ""]
    for kind in ("inputs", "outputs"):
        for name, io in entry[kind].items():
            lines.append(f"- {kind[:-1]} `{name}`: {io['dtype']} {io['shape']}")
    lines += ["", f"`inputs/*.npy`: batch {BATCH}" + (", standard normal" if family == "vit" else
              f", seq {SEQ}; attention_mask is 0 on the last {PAD[1]} positions of row 1")
              + f"; numpy default_rng({SEED})." +
              (" token_type_ids: 0 on the first half, 1 on the second." if family == "bert" else ""),
              "`expected/last_hidden_state.npy`: onnxruntime CPUExecutionProvider output for them"
              + ("." if family == "vit" else " (padded positions included)."), "",
              "## Check", "",
              f"max |ORT - PyTorch| over non-padded positions: {errors['torch']:.3g} "
              f"(golden inputs), {errors['torch_reshaped']:.3g} (batch {CHECK_BATCH}"
              + ("" if family == "vit" else f", seq {CHECK_SEQ}, trailing padding per row {CHECK_PAD}") + "); all positions: "
              f"{errors['torch_all']:.3g}.", "",
              f"## Op types ({sum(entry['op_types'].values())} nodes)", "",
              ", ".join(f"{op} {n}" for op, n in entry["op_types"].items()), ""]
    (d / "CARD.md").write_text("\n".join(lines))


def write_readme(out, manifest, vers):
    lines = ["# Model zoo", "",
             "Tiny random-weight HuggingFace Transformers (head_dim 64) exported to ONNX by both "
             "PyTorch exporters, with fixed inputs and onnxruntime outputs. Each directory holds "
             "`model.onnx` (llama-dynamo also `model.onnx.data`), `inputs/<name>.npy`, "
             "`expected/last_hidden_state.npy` and a `CARD.md`; `manifest.json` lists them all.", "",
             "| dir | family | exporter | opset | external data | nodes |",
             "|---|---|---|---|---|---|"]
    for e in manifest:
        if "skipped" in e:
            lines.append(f"| `{e['dir']}` | {e['family']} | {e['exporter']} | {e['opset']} | | skipped: "
                         f"{e['skipped'].splitlines()[-1]} |")
        else:
            lines.append(f"| `{e['dir']}` | {e['family']} | {e['exporter']} | {e['opset']} | "
                         f"{'yes' if e['external_data'] else 'no'} | {sum(e['op_types'].values())} |")
    lines += ["", "Regenerate (from the repository root; needs PyPI once, no GPU, ~2 minutes):", "",
              "```sh", "python3 -m venv .venv-export",
              ".venv-export/bin/pip install -r tools/models/requirements.txt", COMMAND, "```", "",
              "Made with " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ". Re-running with "
              "these versions reproduces the files byte for byte.", ""]
    (out / "README.md").write_text("\n".join(lines))


def run_family(family, out, vers):
    spec = FAMILIES[family]
    model = build(family)
    golden = make_inputs(family, BATCH, SEQ, PAD, SEED)
    reshaped = make_inputs(family, CHECK_BATCH, CHECK_SEQ, CHECK_PAD, SEED + 1)
    ref = {"golden": torch_run(model, family, golden), "reshaped": torch_run(model, family, reshaped)}
    entries, outputs = [], {}
    for exporter, opset in EXPORTERS.items():
        name = f"{family}-{exporter}"
        d = out / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        external = (family, exporter) in EXTERNAL_DATA
        entry = {"dir": name, "family": family, "exporter": exporter, "opset": opset,
                 "attn_implementation": model.config._attn_implementation}
        try:
            proto, note = export(model, family, exporter, golden)
        except Exception:
            entry["skipped"] = traceback.format_exc(limit=3).strip()
            print(f"{name}: export failed\n{entry['skipped']}", file=sys.stderr)
            write_card(d, entry, vers, spec, None)
            entries.append(entry)
            continue
        path = d / "model.onnx"
        save(proto, path, external)
        onnx.checker.check_model(str(path))
        onnx.checker.check_model(onnx.load(str(path)), full_check=True)
        loaded = onnx.load(str(path), load_external_data=False)
        sess = ort_session(path)
        got = sess.run([OUTPUT], golden)[0]
        got_reshaped = sess.run([OUTPUT], reshaped)[0]
        errors = {"torch": max_err(got, ref["golden"], valid_rows(golden)),
                  "torch_all": max_err(got, ref["golden"], None),
                  "torch_reshaped": max_err(got_reshaped, ref["reshaped"], valid_rows(reshaped))}
        print(f"{name}: max|ORT-torch| {errors['torch']:.3g} (all positions {errors['torch_all']:.3g}), "
              f"reshaped {errors['torch_reshaped']:.3g}")
        if errors["torch"] > TOL or errors["torch_reshaped"] > TOL:
            raise SystemExit(f"{name}: ORT disagrees with PyTorch")
        (d / "inputs").mkdir()
        (d / "expected").mkdir()
        for n in spec["inputs"]:
            np.save(d / "inputs" / f"{n}.npy", np.ascontiguousarray(golden[n]))
        np.save(d / "expected" / f"{OUTPUT}.npy", np.ascontiguousarray(got))
        if note:
            entry["note"] = note
        entry.update(inputs=io_desc(loaded.graph.input), outputs=io_desc(loaded.graph.output),
                     external_data=external, op_types=op_types(loaded),
                     max_abs_err_vs_torch=float(f"{errors['torch']:.3g}"))
        write_card(d, entry, vers, spec, errors)
        entries.append(entry)
        outputs[exporter] = got
    if len(outputs) == 2:
        a, b = outputs.values()
        rows = valid_rows(golden)
        cross, cross_all = max_err(a, b, rows), max_err(a, b, None)
        print(f"{family}: max|torchscript-dynamo| {cross:.3g} (all positions {cross_all:.3g})")
        if cross > TOL:
            raise SystemExit(f"{family}: the two exports disagree")
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "models", help="output directory (default: models/)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    vers = versions()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for family in FAMILIES:
        manifest += run_family(family, args.out, vers)
    for e in manifest:
        e.pop("attn_implementation")
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    write_readme(args.out, manifest, vers)


if __name__ == "__main__":
    main()
