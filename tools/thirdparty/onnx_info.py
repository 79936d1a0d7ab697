#!/usr/bin/env python3
"""Print a summary of ONNX files (opsets, producer, I/O with symbolic dims,
op-type histogram with domains, initializer dtypes) and, when onnxruntime is
importable, run each once on random inputs of the declared shapes
(symbolic dims: batch-like -> 2, others -> 8).

Usage: python3 tools/thirdparty/onnx_info.py FILE.onnx [...]
Needs: onnx, numpy; optional: onnxruntime.
"""
import collections
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto


def _vi(v):
    dims = []
    for d in v.type.tensor_type.shape.dim:
        if d.HasField("dim_param"):
            dims.append(d.dim_param)
        elif d.HasField("dim_value"):
            dims.append(str(d.dim_value))
        else:
            dims.append("?")
    dt = TensorProto.DataType.Name(v.type.tensor_type.elem_type).lower()
    return f"{v.name}: {dt}[{', '.join(dims)}]"


def _ops(graph, counter, sub=False):
    for n in graph.node:
        counter[(n.domain or "ai.onnx", n.op_type)] += 1
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _ops(a.g, counter, True)
            for g in a.graphs:
                _ops(g, counter, True)


def info(path):
    m = onnx.load(path, load_external_data=True)
    print(f"== {path} ({os.path.getsize(path)} bytes)")
    opsets = ", ".join(f"{o.domain or 'ai.onnx'}:{o.version}" for o in m.opset_import)
    print(f"ir_version {m.ir_version}; producer {m.producer_name} {m.producer_version}; opsets {opsets}")
    inits = {i.name for i in m.graph.initializer}
    print("inputs :", "; ".join(_vi(i) for i in m.graph.input if i.name not in inits))
    print("outputs:", "; ".join(_vi(o) for o in m.graph.output))
    c = collections.Counter()
    _ops(m.graph, c)
    print(f"nodes {sum(c.values())}; op types {len(c)}:")
    print("  " + ", ".join(f"{'' if d == 'ai.onnx' else d + '::'}{o} x{k}" for (d, o), k in sorted(c.items())))
    dts = collections.Counter(TensorProto.DataType.Name(i.data_type) for i in m.graph.initializer)
    nparam = sum(int(np.prod(i.dims)) for i in m.graph.initializer)
    print(f"initializers {len(m.graph.initializer)} ({dict(dts)}), {nparam} elements")
    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sess.get_inputs():
        shp = [d if isinstance(d, int) else (2 if "batch" in str(d).lower() else 8) for d in i.shape]
        if "int" in i.type:
            a = np.random.randint(0, 100, size=shp).astype(np.int64 if "int64" in i.type else np.int32)
            if "mask" in i.name:
                a[...] = 1
        elif "float16" in i.type:
            a = np.random.rand(*shp).astype(np.float16)
        elif "bool" in i.type:
            a = np.ones(shp, bool)
        else:
            a = np.random.rand(*shp).astype(np.float32)
        feeds[i.name] = a
    outs = sess.run(None, feeds)
    print("onnxruntime OK:", {k: v.shape for k, v in feeds.items()}, "->",
          [(o.name, r.shape, str(r.dtype)) for o, r in zip(sess.get_outputs(), outs)])


if __name__ == "__main__":
    for p in sys.argv[1:]:
        info(p)
