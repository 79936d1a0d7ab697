#!/usr/bin/env python3
"""Whole models: stofc plans against PyTorch's strongest configurations, side by side in
one process on identical weights, inputs and masks (fp16).

Each case builds a HuggingFace model from a config (random weights, torch seed 0; nothing
is downloaded), exports it on the GPU with torch.onnx.export (TorchScript exporter, opset
17, static shapes; kept in --work per model, configuration and shape) and compiles it with
`stofc compile --precision fp16` (the case's mask as `--mask file:M.npy`, M an [S,S] keep
mask). Decoders (GPT-2, LLaMA) keep their causal mask: their peers get M & causal. Peers,
all on the same fp16 model:

  eager              the model as is: SDPA attention, M as a 4-D boolean attention mask
  compile            torch.compile(model), Inductor's default mode
  reduce-overhead    torch.compile(model, mode="reduce-overhead") (CUDA-graph replay), in
                     cases of at most --reduce-overhead-tokens tokens (B·S)
  max-autotune       torch.compile(model, mode="max-autotune-no-cudagraphs"), with --max-autotune
  compile+Flex       torch.compile(model) with its attention registered through transformers'
                     AttentionInterface as flex_attention on a BlockMask of M (create_block_mask;
                     the mask_mod indexes M as a captured boolean tensor; no mask: dense), GQA
                     through enable_gqa, T5's relative position bias as a score_mod
  compile+Flex FLASH the same with kernel_options={"BACKEND": "FLASH"} (flash-attn-4), with --flex-flash

Every output is compared with the model run in fp32 by PyTorch before anything is timed; an
output further from it than the eager fp16 output by more than TOL (max abs) is FAIL and is
not timed. A peer that fails to build or run is reported with its one-line reason. Each
torch.compile peer starts from a reset Dynamo; its first call (the compilation) may take at
most --compile-timeout-s; graph breaks and skipped CUDA graphs are reported next to its time.
Times: median of --reps calls (fewer past ~5 s a peer), one forward per call, each call
waited for (stofc: stof_plan_run with CUDA-graph replay; torch: forward then synchronize).
"attention %": the share of stofc's attention steps in `stof-run PLAN --profile 20` on the
case's inputs (stof-run next to --stofc; "–" where it cannot tell).

Grids: `today` (docs/PERF.md's shapes and masks), `paper` (the STOF paper's points (B, S) =
(1, 128), (8, 512), (16, 2048) for every family, with the paper's BigBird mask; ViT-base/16
at 176², 368² and 720² pixels, i.e. 122, 530 and 2026 tokens), `all`. A case starts only
while the elapsed time plus the longest case so far (60 s before the first) is within
--budget-s; the cases left are listed with the --only expression that runs them. The JSON
and markdown files are rewritten after every case (tools/bench/e2e_table.py merges the JSON
files of several calls into one table). Progress lines carry the time.

  tools/bench/e2e.py --stofc build/bin/stofc [--lib SO] [--grid paper|today|all] [--only REGEX]
                     [--max-autotune] [--flex-flash] [--reduce-overhead-tokens N]
                     [--compile-timeout-s S] [--budget-s S|inf] [--reps N] [--work DIR]
                     [--stofc-arg ARG]... [--tuning-report [--sweep N]] [--skip-peers P,...]
                     [--json F] [--markdown F]

--tuning-report adds a table of what tuning cost and gave (see tuning_report); --sweep N
compiles with `--tune full --tune-sweep N` and adds its column: how far stage 2's choices
are from the fastest configurations of the N segments that take the most time (every
configuration of each timed), over occurrences x time.
"""
import argparse
import contextlib
import gc
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from e2e_table import NOT_RUN, PEERS, cell, markdown
from mha import flash_unavailable, make_mask
from stof_ctypes import Stof, StofError

try:
    import torch
    import transformers
    from torch._dynamo.utils import counters
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except ImportError as e:
    sys.exit(f"e2e.py needs torch (with FlexAttention) and transformers: {e}")

BERT = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
T5 = dict(d_model=768, d_kv=64, num_heads=12, num_layers=12, d_ff=3072)
LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16, num_attention_heads=32,
             num_key_value_heads=8, use_cache=False)
# family: HF model class, config class, config, and the config key bounding the sequence length with its default
FAMILIES = {
    "bert-base": ("BertModel", "BertConfig", BERT, "max_position_embeddings", 512),
    "gpt2": ("GPT2Model", "GPT2Config", dict(use_cache=False), "n_positions", 1024),
    "llama-1.1b": ("LlamaModel", "LlamaConfig", LLAMA, "max_position_embeddings", 4096),
    "t5-base-encoder": ("T5EncoderModel", "T5Config", T5, None, 0),
    "vit-base": ("ViTModel", "ViTConfig", dict(patch_size=16), None, 0),
}
DECODERS = ("GPT2Model", "LlamaModel")


def case(family, b, s, mask, image=None):
    """One grid point; ViT's sequence is (image / 16)² patches and the class token."""
    cls, cfg_cls, cfg, pos_key, pos_default = FAMILIES[family]
    cfg = dict(cfg)
    if pos_key:
        cfg[pos_key] = max(pos_default, s)
    if image:
        cfg["image_size"] = image
        s = (image // cfg["patch_size"]) ** 2 + 1
    if mask == "causal" and cls not in DECODERS:
        raise ValueError(f"{family}: 'causal' is a decoder's own mask")
    return dict(tag=f"{family}-b{b}-s{s}-{mask}", family=family, cls=cls, cfg_cls=cfg_cls, cfg=cfg, batch=b, seq=s,
                mask=mask)


VIT_IMAGE = {128: 176, 512: 368, 2048: 720}  # 122, 530 and 2026 tokens
GRIDS = {
    "today": [case("bert-base", 8, 512, "none"), case("bert-base", 8, 2048, "sliding"),
              case("bert-base", 8, 2048, "longformer"), case("gpt2", 8, 1024, "causal"),
              case("llama-1.1b", 1, 4096, "causal"), case("llama-1.1b", 1, 4096, "sliding"),
              case("t5-base-encoder", 8, 1024, "bigbird"), case("vit-base", 32, 0, "none", image=224)],
    "paper": [case(f, b, s, "paper_bigbird", image=VIT_IMAGE[s] if f == "vit-base" else None)
              for f in FAMILIES for b, s in ((1, 128), (8, 512), (16, 2048))],
}
GRIDS["all"] = GRIDS["today"] + GRIDS["paper"]
FLEX_IMPL = "blockmask_flex"  # the FlexAttention peers' name in transformers' AttentionInterface
TOL = 2e-2  # an output's error may exceed torch fp16's by this much (max abs, on outputs of scale ~1)
T0 = time.time()


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')} +{time.time() - T0:6.1f} s] {msg}", flush=True)


def one_line(e):
    """An exception's innermost cause, on one line."""
    while e.__cause__ is not None:
        e = e.__cause__
    text = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
    return f"{type(e).__name__}: {text}"[:300]


class CompileTimeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """Raises CompileTimeout in the main thread after `seconds` (0: no limit), and again every second
    until it leaves the block (compilers swallow some exceptions)."""
    if seconds <= 0:
        yield
        return

    def expire(signum, frame):
        raise CompileTimeout(seconds)
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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


def flex_attention_forward(block_mask, kernel_options):
    """An AttentionInterface function: flex_attention over `block_mask` (None: dense).
    Under a name unknown to AttentionMaskInterface the model builds no mask of its own and
    the inputs carry no padding, so the BlockMask is the whole mask.
    query [B, H, S, D], key and value [B, H_kv, S, D] -> ([B, S, H, D], no weights)."""

    def forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, position_bias=None, **kwargs):
        if attention_mask is not None:
            raise ValueError(f"{type(module).__name__} built a mask of its own beside the BlockMask")
        if dropout:
            raise ValueError("attention dropout is on: the model is not in eval mode")
        shared = position_bias is not None and position_bias.shape[0] == 1

        def add_bias(score, b, h, q_idx, kv_idx):  # T5's relative position bias, [1 or B, H, S, S]
            return score + position_bias[0 if shared else b, h, q_idx, kv_idx]
        out = flex_attention(query, key, value, score_mod=None if position_bias is None else add_bias,
                             block_mask=block_mask, scale=scaling, enable_gqa=key.shape[1] != query.shape[1],
                             kernel_options=kernel_options)
        return out.transpose(1, 2).contiguous(), None

    return forward


def block_mask_of(keep, dev):
    """A BlockMask of the [S, S] keep mask (None: None); its mask_mod indexes the mask on the device."""
    if keep is None:
        return None
    keep_t = torch.from_numpy(keep).to(dev)

    def keep_mod(b, h, q_idx, kv_idx):
        return keep_t[q_idx, kv_idx]
    return create_block_mask(keep_mod, None, None, keep.shape[0], keep.shape[1], device=dev)


def build(c):
    torch.manual_seed(0)
    config = getattr(transformers, c["cfg_cls"])(**c["cfg"])
    kwargs = {"add_pooling_layer": False} if c["cls"] in ("BertModel", "ViTModel") else {}
    return getattr(transformers, c["cls"])(config, **kwargs).eval()


def inputs_for(c, model):
    rng = np.random.default_rng(1)
    b, s = c["batch"], c["seq"]
    if c["cls"] == "ViTModel":
        cfg = model.config
        return {"pixel_values": rng.standard_normal((b, cfg.num_channels, cfg.image_size, cfg.image_size)).astype(np.float32)}
    out = {"input_ids": rng.integers(0, model.config.vocab_size, (b, s)).astype(np.int64),
           "attention_mask": np.ones((b, s), np.int64)}
    if c["cls"] == "BertModel":
        out["token_type_ids"] = np.zeros((b, s), np.int64)
    return out


def export(c, model, names, args, work):
    """The fp32 model as ONNX, exported once per model class, configuration and shape (a
    directory of its own for the external weights of large models; renamed into place when done)."""
    key = hashlib.sha1(json.dumps([c["cls"], c["cfg"]], sort_keys=True).encode()).hexdigest()[:10]
    final = work / f"{c['family']}-b{c['batch']}-s{c['seq']}-{key}"
    if not (final / "model.onnx").exists():
        partial = final.with_name(final.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with torch.no_grad():
            torch.onnx.export(LastHidden(model, names), args, str(partial / "model.onnx"), dynamo=False,
                              opset_version=17, input_names=names, output_names=["last_hidden_state"])
        shutil.rmtree(final, ignore_errors=True)
        partial.rename(final)
    return final / "model.onnx"


def timed(fn, reps, max_s=5.0, warmup=5):
    """(median ms, calls): `reps` calls after `warmup`, at least 5, fewer once past max_s."""
    for _ in range(warmup):
        fn()
    t, start = [], time.perf_counter()
    while len(t) < reps and (len(t) < 5 or time.perf_counter() - start < max_s):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t) * 1e3, len(t)


def measure(call, ref, err_torch, reps, limit_s=0):
    """A peer: its first call (a torch.compile peer's compilation, within limit_s) is checked
    against the fp32 reference, then the peer is timed. call() -> the output tensor."""
    counters.clear()
    t0 = time.perf_counter()
    try:
        with time_limit(limit_s):
            out = call().float().cpu().numpy()
    except Exception as e:  # a peer that cannot build or run is reported, never dropped
        late = limit_s > 0 and time.perf_counter() - t0 >= limit_s  # the timeout may come back wrapped
        return {"status": "failed",
                "reason": f"compilation over {limit_s:g} s (--compile-timeout-s)" if late else one_line(e)}
    r = {"first_call_s": round(time.perf_counter() - t0, 1), "graph_breaks": int(counters["graph_break"].total()),
         "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"])}
    r["err"] = float(np.abs(out - ref).max())
    if not r["err"] <= err_torch + TOL:
        return {**r, "status": "FAIL"}

    def waited():
        call()
        torch.cuda.synchronize()
    try:
        r["ms"], r["calls"] = timed(waited, reps)
    except Exception as e:
        return {**r, "status": "failed", "reason": one_line(e)}
    return {**r, "status": "ok"}


def run_case(c, a, stof, work, flash_reason):
    tag, b, s, mask = c["tag"], c["batch"], c["seq"], c["mask"]
    row = {k: c[k] for k in ("tag", "family", "batch", "seq", "mask")}
    res = row["results"] = {}
    dev = "cuda"
    log(f"== {tag}: building the model")
    model = build(c).to(dev)
    feeds = inputs_for(c, model)
    names = list(feeds)
    t_in = [torch.from_numpy(feeds[n]).to(dev) for n in names]
    keep = make_mask(mask, s) if mask not in ("none", "causal") else None  # stofc's --mask
    full = keep  # the peers' whole mask: decoders keep their causal mask
    if c["cls"] in DECODERS:
        tril = np.tril(np.ones((s, s), bool))
        full = tril if keep is None else keep & tril

    # stofc: export (fp32), compile, then run below with the peers.
    plan, stage = None, "ONNX export"
    try:
        log(f"{tag}: exporting ONNX")
        onnx_path = export(c, model, names, tuple(t_in), work)
        stage = "stofc compile"
        cmd = [a.stofc, "compile", onnx_path, "-o", work / f"{tag}.plan", "--precision", "fp16", *a.stofc_arg]
        if a.sweep:
            cmd += ([] if tune_arg(a.stofc_arg) else ["--tune", "full"]) + ["--tune-sweep", str(a.sweep)]
        cmd += [x for n, v in feeds.items() for x in ("--shape", f"{n}={'x'.join(map(str, v.shape))}")]
        if keep is not None:
            np.save(work / f"{tag}.mask.npy", keep)
            cmd += ["--mask", f"file:{work / f'{tag}.mask.npy'}"]
        log(f"{tag}: stofc compile")
        t0 = time.time()
        r = subprocess.run([str(x) for x in cmd], capture_output=True, text=True)
        if r.returncode != 0:
            (work / f"{tag}.stofc.log").write_text(r.stderr)
            lines = r.stderr.strip().splitlines() or ["(no message)"]
            first = next((ln for ln in lines if ln.startswith("stofc: ")), lines[-1])
            raise StofError(f"{first} (whole log: {work / f'{tag}.stofc.log'})")
        res["stofc"] = {"compile_s": round(time.time() - t0, 1)}
        (work / f"{tag}.stofc.log").write_text(r.stderr)
        tuning = [ln.split("] ", 1)[-1] for ln in r.stderr.splitlines() if "tuning" in ln or "fusion:" in ln]
        if tuning:
            res["stofc"]["tuning_log"] = tuning
        if a.tuning_report:
            tuning_report(res["stofc"], cmd, r.stderr, work / f"{tag}.plan")
        stage = "plan"
        plan = stof.plan(work / f"{tag}.plan")
        for n, v in feeds.items():
            plan.set_input(n, v)
        off_plan = None
        if a.tuning_report:
            off_plan = stof.plan(work / f"{tag}.plan.off")
            for n, v in feeds.items():
                off_plan.set_input(n, v)
    except Exception as e:
        res["stofc"] = {"status": "failed", "reason": f"{stage}: {one_line(e)}"}

    mask4 = None if keep is None else torch.from_numpy(full).to(dev)[None, None].expand(b, 1, s, s)
    with torch.no_grad():
        ref = LastHidden(model, names, mask4)(*t_in).float().cpu().numpy()
        eager = LastHidden(model.half(), names, mask4)
        t16 = [x.half() if x.is_floating_point() else x for x in t_in]
        err_torch = float(np.abs(eager(*t16).float().cpu().numpy() - ref).max())
        row["err_torch_fp16"] = err_torch

        if plan is not None:
            st = res["stofc"]
            try:
                plan.run(True)
                st["err"] = float(np.abs(plan.output("last_hidden_state") - ref).max())
                st["status"] = "ok" if st["err"] <= err_torch + TOL else "FAIL"
                if st["status"] == "ok":
                    st["ms"], st["calls"] = timed(lambda: plan.run(True), a.reps)
                    share = attention_share(Path(a.stofc).with_name("stof-run"), work / f"{tag}.plan", feeds, work, tag)
                    if share is not None:
                        st["attention_share"] = round(share, 3)
                if off_plan is not None:
                    off_plan.run(True)
                    st["tuning"]["offline_err"] = float(np.abs(off_plan.output("last_hidden_state") - ref).max())
                    st["tuning"]["offline_ms"], _ = timed(lambda: off_plan.run(True), a.reps)
            except StofError as e:
                st.update(status="failed", reason=one_line(e))
        log(f"{tag}: stofc {cell(res['stofc'])}")
        if "eager" not in a.skip_peers:
            res["eager"] = measure(lambda: eager(*t16), ref, err_torch, a.reps)
            log(f"{tag}: eager {cell(res['eager'])}")

        def compiled(module, **kw):
            torch._dynamo.reset()
            fn = torch.compile(module, **kw)
            return lambda: fn(*t16)
        modes = {"compile": {}, "reduce_overhead": {"mode": "reduce-overhead"},
                 "max_autotune": {"mode": "max-autotune-no-cudagraphs"}}
        for peer, kw in modes.items():
            if peer in a.skip_peers:
                continue
            if peer == "reduce_overhead" and b * s > a.reduce_overhead_tokens:
                continue
            if peer == "max_autotune" and not a.max_autotune:
                continue
            res[peer] = measure(compiled(eager, **kw), ref, err_torch, a.reps, a.compile_timeout_s)
            log(f"{tag}: {PEERS[peer]} {cell(res[peer])}")

        for peer, options in (("flex", None), ("flex_flash", {"BACKEND": "FLASH"})):
            if (peer == "flex_flash" and not a.flex_flash) or peer in a.skip_peers:
                continue
            if peer == "flex_flash" and flash_reason:
                res[peer] = {"status": "failed", "reason": f"FLASH backend unavailable: {flash_reason}"}
            else:
                try:
                    block_mask = block_mask_of(full, dev)
                    transformers.AttentionInterface.register(FLEX_IMPL, flex_attention_forward(block_mask, options))
                    model.set_attn_implementation(FLEX_IMPL)
                    if model.config._attn_implementation != FLEX_IMPL:
                        raise RuntimeError(f"{c['cls']} does not dispatch attention through AttentionInterface")
                    res[peer] = measure(compiled(LastHidden(model, names)), ref, err_torch, a.reps, a.compile_timeout_s)
                except Exception as e:
                    res[peer] = {"status": "failed", "reason": one_line(e)}
            log(f"{tag}: {PEERS[peer]} {cell(res[peer])}")
    row["ok"] = res["stofc"].get("status") == "ok"
    return row


WHOLE_PLAN = re.compile(r"initial scheme ([0-9.]+) us, after stage 1 (?:([0-9.]+) us|not timed), after stage 2 ([0-9.]+) us")
SWEEP = re.compile(r"tuning sweep: stage 2 within (-?[0-9.]+) % of the sweep on the ([0-9]+) most expensive segments")


def tune_arg(args):
    """The --tune value among stofc compile arguments, or None."""
    for i, x in enumerate(args):
        if x == "--tune" and i + 1 < len(args):
            return args[i + 1]
        if x.startswith("--tune="):
            return x.split("=", 1)[1]
    return None


def without_tuning(cmd):
    """cmd without its --tune and --tune-sweep options (either spelling)."""
    out, skip = [], False
    for x in cmd:
        if skip:
            skip = False
        elif x in ("--tune", "--tune-sweep"):
            skip = True
        elif not x.startswith(("--tune=", "--tune-sweep=")):
            out.append(x)
    return out


def tuning_report(st, cmd, log_text, plan_path):
    """What tuning cost and gave: the search's whole-plan times, a recompile with the warm
    tuning cache (its time, and whether two warm compiles give the same bytes) and an
    offline (--tune off) plan beside the tuned one (timed with the others)."""
    m = WHOLE_PLAN.search(log_text)
    rep = {"cold_s": st["compile_s"]}
    if m:
        rep.update(initial_us=float(m[1]), final_us=float(m[3]))
        if m[2]:
            rep["stage1_us"] = float(m[2])
    m = SWEEP.search(log_text)
    if m:
        rep.update(sweep_pct=float(m[1]), sweep_segments=int(m[2]))
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    warm = []
    for i in range(2):
        c = [str(x) for x in cmd]
        c[c.index("-o") + 1] = f"{plan_path}.warm{i}"
        t0 = time.time()
        subprocess.run(c, capture_output=True, check=True, env=env)
        warm.append(time.time() - t0)
    rep["warm_s"] = round(min(warm), 2)
    rep["warm_identical"] = Path(f"{plan_path}.warm0").read_bytes() == Path(f"{plan_path}.warm1").read_bytes()
    c = without_tuning([str(x) for x in cmd]) + ["--tune", "off"]
    c[c.index("-o") + 1] = f"{plan_path}.off"
    t0 = time.time()
    subprocess.run(c, capture_output=True, check=True)
    rep["offline_compile_s"] = round(time.time() - t0, 2)
    st["tuning"] = rep


def attention_share(stof_run, plan_path, feeds, work, tag):
    """The attention steps' share of the plan's step times (stof-run --profile on the case's
    inputs), or None with the reason logged."""
    d = work / f"{tag}.inputs"
    d.mkdir(exist_ok=True)
    for n, v in feeds.items():
        np.save(d / f"{n}.npy", v)
    try:
        r = subprocess.run([str(stof_run), str(plan_path), "--inputs-dir", str(d), "--profile", "20", "--json"],
                           capture_output=True, text=True, timeout=300)
        prof = json.loads(r.stdout)["profile"]
        attn = sum(v["ms"] for k, v in prof["by_kind"].items() if "attention" in k)
        return attn / prof["total_ms"]
    except Exception as e:
        log(f"{tag}: no attention share: {one_line(e)}")
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stofc", required=True)
    ap.add_argument("--lib", help="libstof.so (default build/lib/libstof.so)")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="paper")
    ap.add_argument("--only", default="", help="regular expression over case names (model-bB-sS-mask)")
    ap.add_argument("--max-autotune", action="store_true", help='add torch.compile(mode="max-autotune-no-cudagraphs")')
    ap.add_argument("--flex-flash", action="store_true", help="add compile+Flex with the FLASH backend (flash-attn-4)")
    ap.add_argument("--reduce-overhead-tokens", type=int, default=1024, metavar="N",
                    help='torch.compile(mode="reduce-overhead") in cases of at most N tokens, B·S (default 1024)')
    ap.add_argument("--compile-timeout-s", type=float, default=300, metavar="S",
                    help="limit of a torch.compile peer's first call, its compilation (default 300; 0: none)")
    ap.add_argument("--budget-s", type=float, default=540, metavar="S",
                    help="start a case only while the elapsed time plus the longest case so far is within S "
                         "(default 540, for one 10-minute GPU call; inf: no limit)")
    ap.add_argument("--work", type=Path, help="directory for models and plans (default: a temporary one)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--stofc-arg", action="append", default=[], metavar="ARG",
                    help="an extra `stofc compile` argument (repeatable), e.g. --stofc-arg=--tune=full")
    ap.add_argument("--tuning-report", action="store_true",
                    help="per case also: a warm recompile (time, byte-identical), an offline plan's time, the search's "
                         "whole-plan times (needs a GPU to tune on: stofc's default --tune fast)")
    ap.add_argument("--sweep", type=int, default=0, metavar="N",
                    help="compile with --tune full --tune-sweep N: every configuration of the N costliest segments "
                         "timed after stage 2, reported against stage 2's choices (the tuning report's sweep column)")
    ap.add_argument("--skip-peers", default="", type=lambda v: [p for p in v.split(",") if p],
                    help=f"comma-separated peers not to run ({', '.join(PEERS)})")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    if a.sweep < 0:
        sys.exit(f"e2e.py: --sweep {a.sweep}: give a number of segments (1 or more)")
    if a.sweep and tune_arg(a.stofc_arg) not in (None, "full"):
        sys.exit(f"e2e.py: --sweep needs stofc's --tune full, but --stofc-arg gives --tune {tune_arg(a.stofc_arg)}")
    if not torch.cuda.is_available():
        sys.exit("e2e.py: no CUDA device")
    try:
        stof = Stof(a.lib)
    except StofError as e:
        sys.exit(f"e2e.py: {e}")
    work = a.work or Path(tempfile.mkdtemp(prefix="stof-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    cases = [c for c in GRIDS[a.grid] if re.search(a.only, c["tag"])]
    if not cases:
        sys.exit(f"e2e.py: no case of grid '{a.grid}' matches --only '{a.only}'")
    torch._dynamo.config.fail_on_recompile_limit_hit = True  # never a silent fallback to eager
    flash_reason = flash_unavailable() if a.flex_flash else None
    unknown = [p for p in a.skip_peers if p not in PEERS]
    if unknown:
        sys.exit(f"e2e.py: --skip-peers: unknown peer {', '.join(unknown)} (peers: {', '.join(PEERS)})")
    peers = [p for p in PEERS if (p != "max_autotune" or a.max_autotune) and (p != "flex_flash" or a.flex_flash)
             and p not in a.skip_peers]
    if a.reduce_overhead_tokens <= 0 and "reduce_overhead" in peers:
        peers.remove("reduce_overhead")
    notes = [f"grid {a.grid}", f"reduce-overhead at B·S ≤ {a.reduce_overhead_tokens}" if "reduce_overhead" in peers
             else "reduce-overhead not run", "max-autotune " + ("run" if a.max_autotune else "not run (--max-autotune)"),
             "FLASH backend " + (("unavailable: " + flash_reason if flash_reason else "run") if a.flex_flash
                                 else "not run (--flex-flash)")]
    head = (f"{torch.cuda.get_device_name()}, torch {torch.__version__}, transformers {transformers.__version__}, "
            f"fp16, {time.strftime('%Y-%m-%d')}; {'; '.join(notes)}. ms per forward (median); ratios: peer time / "
            "stofc time (compile+Flex: the faster backend).")
    log(f"{len(cases)} cases; {head}; time budget {a.budget_s:g} s")

    rows, durations = [], []

    def write():
        text = head + "\n\n" + markdown(rows, peers) + "\n"
        if a.markdown:
            Path(a.markdown).write_text(text)
        if a.json:
            Path(a.json).write_text(json.dumps({"header": head, "rows": rows}, indent=1) + "\n")
        return text

    for c in cases:
        if time.time() - T0 + max(durations, default=60.0) > a.budget_s:
            rows.append({**{k: c[k] for k in ("tag", "family", "batch", "seq", "mask")}, "status": NOT_RUN})
            continue
        t0 = time.time()
        try:
            rows.append(run_case(c, a, stof, work, flash_reason))
        except Exception as e:  # e.g. out of memory in the reference: the case is reported, the grid goes on
            rows.append({**{k: c[k] for k in ("tag", "family", "batch", "seq", "mask")}, "status": "error: " + one_line(e)})
        torch._dynamo.reset()  # the case's compiled models, CUDA graphs and plan go
        gc.collect()
        torch.cuda.empty_cache()
        durations.append(time.time() - t0)
        log(f"{c['tag']}: done in {durations[-1]:.0f} s")
        write()
    print(write())
    left = [r["tag"] for r in rows if r.get("status") == NOT_RUN]
    if left:
        log(f"time budget: {len(left)} cases not run; run them with --only '^({'|'.join(map(re.escape, left))})$'")
    if not all(r.get("ok") for r in rows if r.get("status") != NOT_RUN):
        sys.exit(1)


if __name__ == "__main__":
    main()
