"""stofc.compile: the bundled `stofc compile` command line, run as a subprocess."""
import os
import subprocess
import sys
from pathlib import Path

from . import _paths
from ._errors import Error


def stofc_path():
    """Path of the bundled stofc tool."""
    return _paths.find("bin/stofc")


def stof_run_path():
    """Path of the bundled stof-run tool."""
    return _paths.find("bin/stof-run")


def _shape_args(shape):
    if shape is None:
        return []
    if not isinstance(shape, dict):
        raise TypeError("shape: a dict {input or dimension name: size}, e.g. {'batch': 1, 'seq': 128} or "
                        "{'input_ids': (1, 128)}")
    args = []
    for name, dims in shape.items():
        if isinstance(dims, int):
            text = str(dims)
        elif isinstance(dims, (tuple, list)) and all(isinstance(d, int) for d in dims):
            text = "x".join(str(d) for d in dims)
        elif isinstance(dims, str):
            text = dims
        else:
            raise TypeError(f"shape['{name}']: an int, a tuple of ints or a string such as '2x128', not {dims!r}")
        args += ["--shape", f"{name}={text}"]
    return args


def _mask_args(mask):
    if mask is None:
        return []
    if isinstance(mask, str):
        return ["--mask", mask]
    if isinstance(mask, dict):
        return [a for layers, spec in mask.items() for a in ("--mask", f"{layers}={spec}")]
    if isinstance(mask, (list, tuple)):
        return [a for spec in mask for a in ("--mask", spec)]
    raise TypeError("mask: a spec string ('sliding:64'), a list of them, or a dict {layers: spec} ({'0-3': 'causal'})")


def _failure_message(lines, returncode):
    """stofc's error line without its prefix; else its first line of output."""
    for line in reversed(lines):
        for prefix in ("stofc: error: ", "stofc: internal error: "):
            if line.startswith(prefix):
                return line[len(prefix):]
    first = next((line for line in lines if line and not line.startswith("Run with --help")), "")
    return first or f"stofc exited with status {returncode}"


def compile(model, output=None, *, shape=None, shape_buckets=None, precision=None, mask=None, arch=None,
            offline=False, attention_kernel=None, cache_dir=None, jobs=None, verbose=False, quiet=False, extra_args=(),
            env=None):
    """Compiles an ONNX model into a plan file with the bundled `stofc compile`; returns the plan's Path.

    model: the .onnx file. output: the plan file (default: <model stem>.plan beside the model).
    shape: {input name: dims or dimension name: size}, e.g. {"batch": 1, "seq": 128} or {"input_ids": (1, 128)};
    a string size "MIN..MAX" compiles a plan for the whole range ({"seq": "128..1024"}, see Plan)
    (--shape); shape_buckets: buckets per doubling of a range (--shape-buckets, default 1).
    precision: "fp32", "fp16" or "bf16". mask: a mask spec ("sliding:64"), a list of specs, or
    {layers: spec} per layer ({"0-5": "causal"}) (--mask). arch: "sm_80", "sm_90", ... offline=True: do not
    touch a GPU (compile for arch, default sm_90). attention_kernel: "auto", "block-wise" or "row-wise".
    cache_dir: the kernel cache. jobs: parallel NVRTC compilations. verbose: stofc -v. extra_args: more
    command-line arguments, as a list of strings. env: extra environment variables (STOF_LOG, ...).
    stofc's output (warnings, progress, the summary) is copied to sys.stderr as it comes, unless quiet.
    A failure raises stofc.Error with stofc's message and exit status."""
    model = Path(model)
    if not model.is_file():
        raise Error(f"model {model} does not exist or is not a file")
    output = Path(output) if output is not None else model.with_suffix(".plan")
    cmd = [str(stofc_path())] + (["-v"] if verbose else []) + ["compile", str(model), "-o", str(output)]
    cmd += _shape_args(shape) + _mask_args(mask)
    for flag, value in (("--shape-buckets", shape_buckets), ("--precision", precision), ("--arch", arch),
                        ("--attention-kernel", attention_kernel), ("--cache-dir", cache_dir), ("--jobs", jobs)):
        if value is not None:
            cmd += [flag, str(value)]
    if offline:
        cmd.append("--offline")
    cmd += [str(a) for a in extra_args]
    lines = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=None if env is None else {**os.environ, **env}) as proc:
        for line in proc.stdout:
            if not quiet:
                sys.stderr.write(line)
                sys.stderr.flush()
            lines.append(line.strip())
        returncode = proc.wait()
    if returncode != 0:
        raise Error(_failure_message(lines, returncode), returncode=returncode)
    return output
