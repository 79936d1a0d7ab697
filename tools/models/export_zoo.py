#!/usr/bin/env python3
"""Build stofc's model zoo: tiny random-weight Transformers exported to ONNX, with golden I/O.

Each family (bert, gpt2, llama, t5, vit; one function each below) is a HuggingFace model built
from a config written here (nothing is downloaded; weights come from the model's own
initialiser under torch seed 0), in eval mode, fp32, with the model's default attention
implementation. Every head has head_dim 64. Each model is exported twice:

  torchscript  torch.onnx.export(dynamo=False, opset_version=17), dynamic batch/seq axes
  dynamo       torch.onnx.export(dynamo=True,  opset_version=18), dynamic batch/seq shapes
               (graph as the exporter optimises it); llama-dynamo keeps its weights (every
               initializer of >= 1024 bytes) in model.onnx.data, every other model is one
               self-contained file. Small constants stay inline because onnxruntime cannot
               load a model whose shape-inference inputs (axes, starts, ...) are external.
               In the exporter's stack-trace metadata, site-packages paths are made
               relative and the frame of this script's wrapper is dropped, so the files
               depend neither on where the venv lives nor on this script's line numbers.
               Where the default dynamo export fails (t5: pytorch issue #136543), it is retried under
               sdpa_kernel(SDPBackend.MATH) and the CARD says so.

(ViT: only the batch axis is dynamic.) For each export the script runs onnx.checker,
runs onnxruntime (CPU, one thread) on fixed inputs (batch 2, seq 128; row 1 padded over
its last 16 positions) and saves those outputs as the expected ones. It checks ORT
against PyTorch on those inputs and on a second, differently shaped set (comparing only
non-padded positions), and the two exports of a family against each other; any
disagreement above TOL stops the script. It also runs the PyTorch model in fp16 and bf16
and stops unless those outputs are within the suggested 16-bit tolerances (TOLERANCES).
Output (re-running with the versions in requirements.txt reproduces every byte):

  OUT/<family>-<exporter>/model.onnx [model.onnx.data] inputs/*.npy expected/*.npy CARD.md
  OUT/manifest.json  OUT/README.md

Usage (from the repository root):
  python3 -m venv .venv-export
  .venv-export/bin/pip install -r tools/models/requirements.txt
  .venv-export/bin/python tools/models/export_zoo.py [--out models]
"""
import argparse
import collections
import copy
import dataclasses
import hashlib
import importlib.metadata
import json
import logging
import os
import re
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
HEAD_DIM = 64
VOCAB = 512
EXPORTERS = {"torchscript": 17, "dynamo": 18}
EXTERNAL_DATA = {("llama", "dynamo")}
EXTERNAL_THRESHOLD = 1024
PACKAGES = ("torch", "transformers", "onnx", "onnxruntime", "onnxscript", "numpy")
OUTPUT = "last_hidden_state"
# Suggested comparison tolerances (|got - expected| <= atol + rtol * |expected|), the ones
# tests/models/check_model.py uses: fp32 for stofc eval and fp32 plans, fp16 / bf16 for plans
# with 16-bit storage between kernels.
TOLERANCES = {"fp32": {"rtol": 1e-3, "atol": 1e-4},
              "fp16": {"rtol": 3e-2, "atol": 3e-2},
              "bf16": {"rtol": 6e-2, "atol": 6e-2}}
HALF = {"fp16": torch.float16, "bf16": torch.bfloat16}
DEFAULT_MODEL = "bert-torchscript"


# ---------------------------------------------------------------------------------------------
# Families: what differs between them. Text families take token ids and a padding mask,
# image families take pixels; each family function below only fills in its config.

@dataclasses.dataclass
class Family:
    name: str
    about: str
    cls: str
    config: str
    config_kwargs: dict
    model_kwargs: dict

    def hf_config(self):
        return getattr(transformers, self.config)(**self.config_kwargs)


@dataclasses.dataclass
class TextFamily(Family):
    token_types: bool = False

    @property
    def inputs(self):
        return ("input_ids", "attention_mask") + (("token_type_ids",) if self.token_types else ())

    def make_inputs(self, batch, seq, pad, seed):
        rng = np.random.default_rng(seed)
        out = {"input_ids": rng.integers(0, VOCAB, size=(batch, seq), dtype=np.int64)}
        mask = np.ones((batch, seq), dtype=np.int64)
        for row, n in enumerate(pad):
            mask[row, seq - n:] = 0
        out["attention_mask"] = mask
        if self.token_types:
            tt = np.zeros((batch, seq), dtype=np.int64)
            tt[:, seq // 2:] = 1
            out["token_type_ids"] = tt
        return out

    def ranges(self, config):
        """Valid values of each integer input, [low, high)."""
        out = {"input_ids": [0, config.vocab_size], "attention_mask": [0, 2]}
        if self.token_types:
            out["token_type_ids"] = [0, config.type_vocab_size]
        return out

    def dynamic_axes(self):
        return {n: {0: "batch", 1: "seq"} for n in self.inputs}, {OUTPUT: {0: "batch", 1: "seq"}}

    def describe_inputs(self):
        return (f"batch {BATCH}, seq {SEQ}; attention_mask is 0 on the last {PAD[1]} positions of row 1; "
                f"numpy default_rng({SEED})."
                + (" token_type_ids: 0 on the first half, 1 on the second." if self.token_types else ""))

    expected_note = " (padded positions included)."
    check_shape = f", seq {CHECK_SEQ}, trailing padding per row {CHECK_PAD}"


@dataclasses.dataclass
class ImageFamily(Family):
    inputs = ("pixel_values",)

    def make_inputs(self, batch, seq, pad, seed):
        c = self.hf_config()
        rng = np.random.default_rng(seed)
        shape = (batch, c.num_channels, c.image_size, c.image_size)
        return {"pixel_values": rng.standard_normal(shape, dtype=np.float32)}

    def ranges(self, config):
        return {}

    def dynamic_axes(self):
        return {"pixel_values": {0: "batch"}}, {OUTPUT: {0: "batch"}}

    def describe_inputs(self):
        return f"batch {BATCH}, standard normal; numpy default_rng({SEED})."

    expected_note = "."
    check_shape = ""


def bert():
    return TextFamily(
        name="bert", cls="BertModel", config="BertConfig",
        config_kwargs=dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                           intermediate_size=256, vocab_size=VOCAB, max_position_embeddings=512),
        model_kwargs=dict(add_pooling_layer=False), token_types=True,
        about="BERT encoder (post-LayerNorm, GELU, learned absolute positions, token types)")


def gpt2():
    return TextFamily(
        name="gpt2", cls="GPT2Model", config="GPT2Config",
        config_kwargs=dict(n_layer=2, n_embd=128, n_head=2, vocab_size=VOCAB, n_positions=512,
                           bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1, use_cache=False),
        model_kwargs={},
        about="GPT-2 decoder (pre-LayerNorm, causal self-attention, Conv1D projections, gelu_new)")


def llama():
    return TextFamily(
        name="llama", cls="LlamaModel", config="LlamaConfig",
        config_kwargs=dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=4,
                           num_key_value_heads=2, intermediate_size=512, vocab_size=VOCAB,
                           max_position_embeddings=512, use_cache=False),
        model_kwargs={},
        about="LLaMA decoder (RMSNorm, rotary positions, grouped-query attention 4 q / 2 kv heads, SwiGLU)")


def t5():
    return TextFamily(
        name="t5", cls="T5EncoderModel", config="T5Config",
        config_kwargs=dict(num_layers=2, d_model=128, d_kv=64, num_heads=2, d_ff=256, vocab_size=VOCAB),
        model_kwargs={},
        about="T5 encoder (RMS-style T5LayerNorm, relative position bias, unscaled QK^T, ReLU FFN)")


def vit():
    # Patch 4 on 64x64 images: 16x16 patches + CLS = 257 tokens, so attention has a
    # real size (the zoo's sparse-mask tests need several 16-blocks) and is no multiple
    # of any block size, as with ViT-B/16 at 224x224 (197 tokens).
    return ImageFamily(
        name="vit", cls="ViTModel", config="ViTConfig",
        config_kwargs=dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                           intermediate_size=256, image_size=64, patch_size=4, num_channels=3),
        model_kwargs=dict(add_pooling_layer=False),
        about="ViT encoder (4x4 patch Conv, CLS token, 257 tokens, pre-LayerNorm, GELU)")


FAMILIES = (bert, gpt2, llama, t5, vit)


# ---------------------------------------------------------------------------------------------
# Shared helpers: build, run, export, save, check.

class LastHidden(torch.nn.Module):
    """Calls the HF model with keyword inputs and returns only last_hidden_state."""

    def __init__(self, model, names):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *args):
        return self.model(**dict(zip(self.names, args)), return_dict=True).last_hidden_state


def build(fam):
    config = fam.hf_config()
    torch.manual_seed(SEED)
    model = getattr(transformers, fam.cls)(config, **fam.model_kwargs)
    return model.eval().float()


def architecture(model):
    c = model.config
    heads = c.num_attention_heads
    arch = {"layers": c.num_hidden_layers, "hidden": c.hidden_size, "heads": heads,
            "kv_heads": getattr(c, "num_key_value_heads", None) or heads,
            "head_dim": getattr(c, "head_dim", None) or c.hidden_size // heads,
            "attn_implementation": c._attn_implementation}
    if arch["head_dim"] != HEAD_DIM:
        raise SystemExit(f"{type(model).__name__}: head_dim {arch['head_dim']}, want {HEAD_DIM}")
    return arch


def torch_run(model, fam, inputs, dtype=torch.float32):
    def tensor(x):
        t = torch.from_numpy(x)
        return t.to(dtype) if t.is_floating_point() else t

    with torch.no_grad():
        out = model(**{n: tensor(inputs[n]) for n in fam.inputs}).last_hidden_state
    return out.float().numpy()


def export(model, fam, exporter, inputs):
    names = fam.inputs
    wrapped = LastHidden(model, names).eval()
    args = tuple(torch.from_numpy(inputs[n]) for n in names)
    in_axes, out_axes = fam.dynamic_axes()
    if exporter == "torchscript":
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"stof-zoo-{fam.name}-{os.getpid()}.onnx"
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
        return clean_stack_traces(program.model_proto), note
    return clean_stack_traces(program.model_proto), None


def clean_stack_traces(proto):
    """Makes the exporter's stack traces independent of where things live and of this script:
    site-packages paths become relative, and the frame of LastHidden.forward (this file, whose
    line numbers change with every edit) is dropped."""
    site = f"{Path(torch.__file__).parents[1]}/"
    here = Path(__file__).resolve()

    def own(frame):
        m = re.match(r'\s*File "([^"]+)"', frame)
        return m is not None and Path(m.group(1)).resolve() == here

    for node in proto.graph.node:
        for prop in node.metadata_props:
            if prop.key.endswith("stack_trace"):
                frames = re.split(r'(?m)^(?=\s*File ")', prop.value)
                prop.value = "".join(f for f in frames if not own(f)).lstrip().replace(site, "")
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


def within(got, ref, rows, rtol, atol):
    if rows is not None:
        got, ref = got[rows], ref[rows]
    return bool(np.all(np.abs(got - ref) <= atol + rtol * np.abs(ref)))


def half_errors(model, fam, golden, ref):
    """max |PyTorch in fp16 / bf16 - PyTorch in fp32| over non-padded positions; each must lie
    within the suggested tolerance for that precision, or the suggestion is wrong."""
    out, rows = {}, valid_rows(golden)
    for prec, dtype in HALF.items():
        got = torch_run(copy.deepcopy(model).to(dtype), fam, golden, dtype)
        out[prec] = max_err(got, ref, rows)
        if not within(got, ref, rows, **TOLERANCES[prec]):
            raise SystemExit(f"{fam.name}: PyTorch {prec} is outside the suggested {prec} tolerance "
                             f"{TOLERANCES[prec]} (max abs {out[prec]:.3g})")
    return out


def io_desc(vis, ranges=None, golden=None):
    out = {}
    for vi in vis:
        t = vi.type.tensor_type
        io = {"dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name,
              "shape": [d.dim_param if d.HasField("dim_param") else d.dim_value for d in t.shape.dim]}
        if golden is not None:
            io["golden_shape"] = list(golden[vi.name].shape)
        if ranges and vi.name in ranges:
            io["range"] = ranges[vi.name]
        out[vi.name] = io
    return out


def file_list(d):
    return [{"path": p.relative_to(d).as_posix(), "bytes": p.stat().st_size,
             "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
            for p in sorted(d.rglob("*")) if p.is_file()]


def versions():
    return {p: importlib.metadata.version(p) for p in PACKAGES}


def sig(x):
    return float(f"{x:.3g}")


# ---------------------------------------------------------------------------------------------
# CARD.md, manifest.json, README.md

def write_card(d, entry, vers, fam, errors):
    exporter = entry["exporter"]
    lines = [f"# {entry['name']}", ""]
    lines.append(f"Tiny random-weight {fam.about}: `transformers.{fam.cls}`, "
                 f"attention implementation `{entry['architecture']['attn_implementation']}`, eval mode, fp32, "
                 f"torch seed {SEED}.")
    lines += ["", "## Config", "",
              f"`{fam.config}({', '.join(f'{k}={v!r}' for k, v in fam.config_kwargs.items())})`"
              + (f", `{fam.cls}(config, {', '.join(f'{k}={v!r}' for k, v in fam.model_kwargs.items())})`"
                 if fam.model_kwargs else ""), ""]
    wrapper = ("`model` is a wrapper that calls the HF model with the inputs as keyword arguments and "
               "returns `last_hidden_state`; `args` are the inputs in the order listed below")
    if exporter == "torchscript":
        how = ("`torch.onnx.export(model, args, f, dynamo=False, opset_version=17, "
               "input_names=..., output_names=['last_hidden_state'], dynamic_axes=...)`")
    else:
        how = ("`torch.onnx.export(model, args, dynamo=True, opset_version=18, "
               "input_names=..., output_names=['last_hidden_state'], dynamic_shapes=...)` "
               "(default optimize=True), saved with `onnx.save_model`")
        if entry["external_data"]:
            how += (" with `save_as_external_data=True, all_tensors_to_one_file=True, "
                    f"location='model.onnx.data', size_threshold={EXTERNAL_THRESHOLD}`: every tensor of "
                    f"at least {EXTERNAL_THRESHOLD} bytes (all weights) lives in `model.onnx.data`, the small "
                    "shape/axes/scalar constants stay inline (with size_threshold=0 onnxruntime 1.30 refuses "
                    "the model: shape inference cannot read external ReduceMean/Slice/Unsqueeze axes)")
        how += ("; the exporter's node metadata is kept, with site-packages paths in its stack traces "
                "made relative and the wrapper's own frame dropped")
    lines += ["## Export", "", f"Exporter `{exporter}`, ai.onnx opset {entry['opset']}: {how}. {wrapper}.", ""]
    if entry.get("note"):
        lines += [f"Note: {entry['note']}.", ""]
    lines += [f"Made by `{COMMAND}` (from the repository root; builds the whole zoo).", "",
              "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".", ""]
    lines += ["## I/O", ""]
    for kind in ("inputs", "outputs"):
        for name, io in entry[kind].items():
            rng = f", values in [{io['range'][0]}, {io['range'][1]})" if "range" in io else ""
            lines.append(f"- {kind[:-1]} `{name}`: {io['dtype']} {io['shape']}{rng}")
    tol = TOLERANCES
    lines += ["", f"`inputs/*.npy`: {fam.describe_inputs()}",
              f"`expected/last_hidden_state.npy`: onnxruntime CPUExecutionProvider output for them"
              f"{fam.expected_note}", "",
              "## Check", "",
              f"max |ORT - PyTorch| over non-padded positions: {errors['torch']:.3g} "
              f"(golden inputs), {errors['torch_reshaped']:.3g} (batch {CHECK_BATCH}{fam.check_shape}); "
              f"all positions: {errors['torch_all']:.3g}.", "",
              f"Suggested tolerances (atol + rtol * |expected|): fp32 rtol {tol['fp32']['rtol']:g} atol "
              f"{tol['fp32']['atol']:g}; fp16 rtol {tol['fp16']['rtol']:g} atol {tol['fp16']['atol']:g}; "
              f"bf16 rtol {tol['bf16']['rtol']:g} atol {tol['bf16']['atol']:g}. The PyTorch model run "
              f"entirely in fp16 is off by at most {errors['fp16']:.3g} on the golden inputs, in bf16 by "
              f"{errors['bf16']:.3g} (non-padded positions).", "",
              f"## Op types ({sum(entry['op_types'].values())} nodes)", "",
              ", ".join(f"{op} {n}" for op, n in entry["op_types"].items()), ""]
    (d / "CARD.md").write_text("\n".join(lines))


def write_manifest(out, entries, vers):
    manifest = {
        "about": "stofc model zoo: tiny random-weight HuggingFace Transformers exported to ONNX; "
                 "see README.md. Shapes name dynamic axes by string; golden_shape is the shape of "
                 "inputs/<name>.npy; range is [low, high) for integer inputs; tolerances are "
                 "atol + rtol * |expected|.",
        "command": COMMAND,
        "versions": vers,
        "default": DEFAULT_MODEL,
        "models": entries,
    }
    text = json.dumps(manifest, indent=2)
    # Lists of scalars (shapes, ranges) on one line.
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + ", ".join(
        x.strip() for x in m.group(1).split(",")) + "]", text)
    (out / "manifest.json").write_text(text + "\n")


def write_readme(out, entries, vers):
    done = [e for e in entries if "skipped" not in e]
    total = sum(f["bytes"] for e in done for f in e["files"])
    tol = TOLERANCES
    lines = ["# Model zoo", "",
             "Tiny random-weight HuggingFace Transformers (head_dim 64, 2 layers) exported to ONNX by "
             "both PyTorch exporters, with fixed inputs and onnxruntime outputs. Each directory holds "
             "`model.onnx` (llama-dynamo also `model.onnx.data`), `inputs/<name>.npy`, "
             "`expected/last_hidden_state.npy` and a `CARD.md` (config, export call, I/O, checks, op "
             "types); `manifest.json` lists them all: files with sizes and sha256, inputs with dtype, "
             "shape, golden shape and the valid range of integer inputs, outputs, architecture, "
             "suggested tolerances.", "",
             "| dir | family | exporter | opset | layers x heads x head_dim (kv heads) | tokens | nodes | bytes |",
             "|---|---|---|---|---|---|---|---|"]
    for e in entries:
        if "skipped" in e:
            lines.append(f"| `{e['name']}` | {e['family']} | {e['exporter']} | {e['opset']} | | | "
                         f"skipped: {e['skipped'].splitlines()[-1]} | |")
            continue
        a = e["architecture"]
        tokens = e["outputs"][OUTPUT]["golden_shape"][1]
        lines.append(f"| `{e['name']}` | {e['family']} | {e['exporter']} | {e['opset']} | "
                     f"{a['layers']} x {a['heads']} x {a['head_dim']} ({a['kv_heads']}) | {tokens} | "
                     f"{sum(e['op_types'].values())} | {sum(f['bytes'] for f in e['files']):,} |")
    lines += ["", f"{len(done)} models, {total:,} bytes ({total / 2**20:.1f} MiB) in all.", "",
              "## Inputs and outputs", "",
              f"Text models take `input_ids` (int64 [batch, seq], values in [0, {VOCAB})) and "
              "`attention_mask` (int64 [batch, seq], 1 = token, 0 = padding); bert also "
              "`token_type_ids` (values in [0, 2)). The stored inputs are batch "
              f"{BATCH}, seq {SEQ}, with row 1 padded over its last {PAD[1]} positions. ViT takes "
              "`pixel_values` (float32 [batch, 3, 64, 64], standard normal) and yields 257 tokens "
              "(16 x 16 patches of 4 x 4 pixels + CLS; patch 4 rather than 16 so that attention has a "
              "real size for the sparse-mask tests, and one that is no multiple of a block size). "
              "Every model outputs `last_hidden_state` (float32 [batch, tokens, hidden]). The "
              "expected outputs cover padded positions too: they are what onnxruntime computes there.",
              "",
              "Decoder masks (gpt2, llama: causal) and position schemes (learned, rotary, T5 relative "
              "bias) are the models' own. llama has grouped-query attention (4 query heads, 2 key/value "
              "heads); both exports repeat K and V across the groups (`Expand`) before the attention "
              "MatMul, so at the attention itself there are 4 key/value heads.", "",
              "## Checking a model", "",
              "```sh",
              f"build/bin/stofc eval models/{DEFAULT_MODEL}/model.onnx --inputs-dir models/{DEFAULT_MODEL}/inputs \\",
              f"    --expect-dir models/{DEFAULT_MODEL}/expected --rtol {tol['fp32']['rtol']:g} "
              f"--atol {tol['fp32']['atol']:g}",
              "tools/test.sh -R zoo_        # every model: eval, offline compile, GPU runs where a GPU exists",
              "```", "",
              "Suggested tolerances (|got - expected| <= atol + rtol * |expected|, as in "
              "`tests/models/check_model.py`): fp32 rtol "
              f"{tol['fp32']['rtol']:g} atol {tol['fp32']['atol']:g}; fp16 rtol {tol['fp16']['rtol']:g} "
              f"atol {tol['fp16']['atol']:g}; bf16 rtol {tol['bf16']['rtol']:g} atol {tol['bf16']['atol']:g}. "
              "The script checks that PyTorch itself, run entirely in fp16 or bf16, stays within the 16-bit "
              "ones; each CARD gives that error.", "",
              f"`{DEFAULT_MODEL}` is the default model (README quickstart, `tools/quickstart.sh`): BERT is "
              "the STOF paper's main workload, a padded encoder exercises the padding mask, and the "
              "TorchScript exporter's opset-17 graphs are what most published ONNX Transformers look like.",
              ""]
    notes = [f"- `{e['name']}`: {e['note']}." for e in done if e.get("note")]
    notes += [f"- `{e['name']}`: not exported: {e['skipped'].splitlines()[-1]}" for e in entries if "skipped" in e]
    if notes:
        lines += ["## Notes", ""] + notes + [""]
    lines += ["## Regenerating", "",
              "From the repository root; needs PyPI once, no GPU, ~2 minutes:", "",
              "```sh", "python3 -m venv .venv-export",
              ".venv-export/bin/pip install -r tools/models/requirements.txt", COMMAND, "```", "",
              "The script rewrites every model directory, `manifest.json` and this file. Made with "
              + ", ".join(f"{k} {v}" for k, v in vers.items()) + ". Re-running with these versions "
              "reproduces every file byte for byte (seeded weights and inputs, single-threaded "
              "onnxruntime, stack traces free of local paths).", ""]
    (out / "README.md").write_text("\n".join(lines))


# ---------------------------------------------------------------------------------------------

def run_family(fam, out, vers):
    model = build(fam)
    arch = architecture(model)
    golden = fam.make_inputs(BATCH, SEQ, PAD, SEED)
    reshaped = fam.make_inputs(CHECK_BATCH, CHECK_SEQ, CHECK_PAD, SEED + 1)
    ref = {"golden": torch_run(model, fam, golden), "reshaped": torch_run(model, fam, reshaped)}
    half = half_errors(model, fam, golden, ref["golden"])
    print(f"{fam.name}: max|torch 16-bit - torch fp32| " + ", ".join(f"{k} {v:.3g}" for k, v in half.items()))
    entries, outputs = [], {}
    for exporter, opset in EXPORTERS.items():
        name = f"{fam.name}-{exporter}"
        d = out / name
        shutil.rmtree(d, ignore_errors=True)
        external = (fam.name, exporter) in EXTERNAL_DATA
        entry = {"name": name, "family": fam.name, "exporter": exporter, "opset": opset}
        try:
            proto, note = export(model, fam, exporter, golden)
        except Exception:
            entry["skipped"] = traceback.format_exc(limit=3).strip()
            print(f"{name}: export failed\n{entry['skipped']}", file=sys.stderr)
            entries.append(entry)
            continue
        d.mkdir(parents=True)
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
                  "torch_reshaped": max_err(got_reshaped, ref["reshaped"], valid_rows(reshaped)), **half}
        print(f"{name}: max|ORT-torch| {errors['torch']:.3g} (all positions {errors['torch_all']:.3g}), "
              f"reshaped {errors['torch_reshaped']:.3g}")
        if errors["torch"] > TOL or errors["torch_reshaped"] > TOL:
            raise SystemExit(f"{name}: ORT disagrees with PyTorch")
        (d / "inputs").mkdir()
        (d / "expected").mkdir()
        for n in fam.inputs:
            np.save(d / "inputs" / f"{n}.npy", np.ascontiguousarray(golden[n]))
        np.save(d / "expected" / f"{OUTPUT}.npy", np.ascontiguousarray(got))
        if note:
            entry["note"] = note
        entry.update(inputs=io_desc(loaded.graph.input, fam.ranges(model.config), golden),
                     outputs=io_desc(loaded.graph.output, None, {OUTPUT: got}),
                     architecture=arch, external_data=external,
                     tolerances=TOLERANCES,
                     max_abs_err_vs_torch=sig(errors["torch"]),
                     max_abs_err_torch_half={k: sig(v) for k, v in half.items()},
                     op_types=op_types(loaded))
        write_card(d, entry, vers, fam, errors)
        entry["files"] = file_list(d)
        entries.append(entry)
        outputs[exporter] = got
    if len(outputs) == 2:
        a, b = outputs.values()
        rows = valid_rows(golden)
        cross, cross_all = max_err(a, b, rows), max_err(a, b, None)
        print(f"{fam.name}: max|torchscript-dynamo| {cross:.3g} (all positions {cross_all:.3g})")
        if cross > TOL:
            raise SystemExit(f"{fam.name}: the two exports disagree")
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
    entries = []
    for family in FAMILIES:
        entries += run_family(family(), args.out, vers)
    write_manifest(args.out, entries, vers)
    write_readme(args.out, entries, vers)


if __name__ == "__main__":
    main()
