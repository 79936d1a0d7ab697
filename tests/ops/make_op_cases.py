#!/usr/bin/env python3
"""Generate single-op (and a few few-op) ONNX test cases with onnxruntime reference outputs.

Each case is a small graph built with onnx.helper, run through onnxruntime
(CPUExecutionProvider, graph optimizations off) on fresh random inputs. The C++
interpreter test loads every case and compares its outputs with the expected ones.

Usage:
    python tests/ops/make_op_cases.py --out DIR [--seed N] [--only REGEX]

    --seed   RNG seed; defaults to one derived from the clock and is printed, so a
             failure can be replayed with --seed N (add --only to regenerate one case).
    --only   keep only cases whose name matches REGEX (re.search). Data does not
             depend on the filter: the same seed gives the same inputs either way.

Layout:
    DIR/<case_name>/model.onnx
    DIR/<case_name>/inputs/<input_name>.npy      every graph input
    DIR/<case_name>/expected/<output_name>.npy   every graph output, from onnxruntime
    DIR/cases.json   {"seed": N, "cases": [{"name", "op", "opset", "rtol", "atol"}, ...]}

Shape-like operands (Reshape/Expand/Tile shapes, axes, starts/ends/steps, split sizes,
pads, Range bounds, ...) are initializers, since the compiler needs them at compile
time; data tensors are graph inputs. Needs only numpy, onnx and onnxruntime.
"""

import argparse
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min

TOL = {
    "ew": (1e-5, 1e-6),
    "red": (1e-4, 1e-5),
    "f16": (1e-3, 1e-3),
    "exact": (0.0, 0.0),
}


@dataclass
class Case:
    name: str
    op: str
    opset: int
    nodes: list
    inputs: dict
    outputs: list
    inits: dict = field(default_factory=dict)
    tol: str = "ew"


class Data:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def f(self, *shape, scale=1.0):
        x = np.asarray(self.rng.standard_normal(shape) * scale, np.float32)
        if x.size and not np.any(x):
            x.flat[0] = 1.0
        return x

    def pos(self, *shape, lo=0.1, hi=3.0):
        return np.asarray(self.rng.uniform(lo, hi, shape), np.float32)

    def nz(self, *shape, lo=0.5, hi=2.0):
        sign = np.where(self.rng.random(shape) < 0.5, -1.0, 1.0)
        return np.asarray(sign * self.rng.uniform(lo, hi, shape), np.float32)

    def ints_f(self, *shape, lo=-2, hi=2):
        return np.asarray(self.rng.integers(lo, hi + 1, shape), np.float32)

    def i64(self, *shape, lo=-20, hi=20):
        return np.asarray(self.rng.integers(lo, hi + 1, shape), np.int64)

    def i64_nz(self, *shape, lo=1, hi=7):
        sign = np.where(self.rng.random(shape) < 0.5, -1, 1)
        return np.asarray(sign * self.rng.integers(lo, hi + 1, shape), np.int64)

    def idx(self, *shape, dim, negative=True):
        return np.asarray(self.rng.integers(-dim if negative else 0, dim, shape), np.int64)

    def b(self, *shape):
        return np.asarray(self.rng.random(shape) < 0.5)

    def with_zeros(self, x, frac=0.2):
        x = x.copy()
        x[self.rng.random(x.shape) < frac] = 0
        return x


def N(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def i64(*v):
    return np.array(v, dtype=np.int64)


def s64(v):
    return np.array(v, dtype=np.int64)


def f32(v):
    return np.array(v, dtype=np.float32)


def unary_case(name, op, opset, x, tol="ew", **attrs):
    return Case(name, op, opset, [N(op, ["x"], ["y"], **attrs)], {"x": x}, ["y"], tol=tol)


def binary_case(name, op, opset, x, y, tol="ew", **attrs):
    return Case(name, op, opset, [N(op, ["x", "y"], ["z"], **attrs)], {"x": x, "y": y}, ["z"], tol=tol)


def elementwise_binary(d):
    shapes = {"same": ((2, 3, 4), (2, 3, 4)), "bcast": ((2, 3, 4), (3, 1)),
              "bcast_both": ((4, 1, 5), (1, 3, 1)), "scalar": ((2, 3, 4), ())}
    for op in ["Add", "Sub", "Mul", "Div", "Pow"]:
        for tag, (sx, sy) in shapes.items():
            x = d.pos(*sx) if op == "Pow" else d.f(*sx)
            y = d.nz(*sy) if op == "Div" else d.f(*sy)
            yield binary_case(f"{op}_f32_{tag}_op13", op, 13, x, y)
    yield Case("Pow_neg_base_exp2_op13", "Pow", 13, [N("Pow", ["x", "e"], ["y"])],
               {"x": d.f(2, 3, 4)}, ["y"], {"e": f32(2.0)})
    yield Case("Pow_neg_base_exp3_op13", "Pow", 13, [N("Pow", ["x", "e"], ["y"])],
               {"x": d.f(2, 3, 4)}, ["y"], {"e": f32(3.0)})
    yield Case("Pow_sqrt_exp_op13", "Pow", 13, [N("Pow", ["x", "e"], ["y"])],
               {"x": d.pos(2, 3, 4)}, ["y"], {"e": f32(0.5)})
    yield Case("Pow_i64_exp_op13", "Pow", 13, [N("Pow", ["x", "e"], ["y"])],
               {"x": d.f(2, 3, 4)}, ["y"], {"e": i64(2)})
    for op in ["Add", "Sub", "Mul", "Div"]:
        y = d.i64_nz(4) if op == "Div" else d.i64(4)
        yield binary_case(f"{op}_i64_bcast_op13", op, 13, d.i64(3, 4), y)
        yield binary_case(f"{op}_i64_bcast_op14", op, 14, d.i64(3, 4), y)

    for op in ["Min", "Max"]:
        ins = {"x": d.f(2, 3, 4), "y": d.f(3, 1), "w": d.f(4)}
        for n in (1, 2, 3):
            names = list(ins)[:n]
            yield Case(f"{op}_{n}in_op13", op, 13, [N(op, names, ["z"])],
                       {k: ins[k] for k in names}, ["z"])
        yield binary_case(f"{op}_i64_op13", op, 13, d.i64(3, 4), d.i64(1, 4))

    yield binary_case("Mod_i64_op13", "Mod", 13, d.i64(3, 4), d.i64_nz(4))
    yield binary_case("Mod_fmod_i64_op13", "Mod", 13, d.i64(3, 4), d.i64_nz(4), fmod=1)
    yield binary_case("Mod_fmod_f32_op13", "Mod", 13, d.f(3, 4, scale=4), d.nz(3, 1), fmod=1)

    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        yield binary_case(f"{op}_f32_op13", op, 13, d.ints_f(2, 3, 4), d.ints_f(3, 4))
        yield binary_case(f"{op}_i64_op13", op, 13, d.i64(3, 4, lo=-3, hi=3), d.i64(4, lo=-3, hi=3))
    yield binary_case("Equal_bool_op13", "Equal", 13, d.b(3, 4), d.b(4))

    for op in ["And", "Or", "Xor"]:
        yield binary_case(f"{op}_bcast_op13", op, 13, d.b(2, 3, 4), d.b(3, 1))
    yield unary_case("Not_op13", "Not", 13, d.b(3, 4))

    yield Case("Where_bcast_op13", "Where", 13, [N("Where", ["cond", "x", "y"], ["z"])],
               {"cond": d.b(2, 1, 4), "x": d.f(3, 1), "y": d.f(4)}, ["z"])
    yield Case("Where_bcast_op16", "Where", 16, [N("Where", ["cond", "x", "y"], ["z"])],
               {"cond": d.b(3, 1), "x": d.f(2, 1, 4), "y": d.f(1)}, ["z"])
    yield Case("Where_i64_op13", "Where", 13, [N("Where", ["cond", "x", "y"], ["z"])],
               {"cond": d.b(3, 4), "x": d.i64(3, 4), "y": d.i64(1, 4)}, ["z"])


def unary(d):
    s = (2, 3, 4)
    data = {
        "Sqrt": d.pos(*s), "Reciprocal": d.pos(*s), "Neg": d.f(*s), "Abs": d.f(*s),
        "Log": d.pos(*s), "Exp": d.f(*s), "Erf": d.f(*s, scale=1.5), "Tanh": d.f(*s, scale=2),
        "Relu": d.f(*s), "Sigmoid": d.f(*s, scale=3), "Sin": d.f(*s, scale=3),
        "Cos": d.f(*s, scale=3), "Sign": d.with_zeros(d.f(*s)), "Floor": d.f(*s, scale=3),
        "Ceil": d.f(*s, scale=3), "Identity": d.f(*s), "Softplus": d.f(*s, scale=30), "Softsign": d.f(*s, scale=5),
    }
    data["Floor"].flat[:3] = [-2.0, 0.0, 3.0]
    data["Ceil"].flat[:3] = [-2.0, 0.0, 3.0]
    for op, x in data.items():
        yield unary_case(f"{op}_op13", op, 13, x)
    yield unary_case("Reciprocal_neg_op13", "Reciprocal", 13, d.nz(*s))
    for op in ["Neg", "Abs", "Sign", "Identity"]:
        yield unary_case(f"{op}_i64_op13", op, 13, d.with_zeros(d.i64(3, 4)))

    x = d.f(*s)
    x[d.rng.random(s) < 0.3] = np.nan
    yield unary_case("IsNaN_op13", "IsNaN", 13, x)
    x = d.f(*s)
    x.flat[:6] = [np.inf, -np.inf, np.nan, np.inf, -np.inf, 0.0]
    yield unary_case("IsInf_op13", "IsInf", 13, x)
    yield unary_case("IsInf_pos_only_op13", "IsInf", 13, x, detect_negative=0)
    yield unary_case("IsInf_neg_only_op13", "IsInf", 13, x, detect_positive=0)

    yield unary_case("Dropout_op13", "Dropout", 13, d.f(*s))
    yield Case("Dropout_ratio_op13", "Dropout", 13, [N("Dropout", ["x", "ratio", "training"], ["y"])],
               {"x": d.f(*s)}, ["y"], {"ratio": f32(0.3), "training": np.array(False)})

    lo, hi = f32(-0.5), f32(0.7)
    yield Case("Clip_minmax_op13", "Clip", 13, [N("Clip", ["x", "min", "max"], ["y"])],
               {"x": d.f(*s)}, ["y"], {"min": lo, "max": hi})
    yield Case("Clip_min_only_op13", "Clip", 13, [N("Clip", ["x", "min"], ["y"])],
               {"x": d.f(*s)}, ["y"], {"min": lo})
    yield Case("Clip_max_only_op13", "Clip", 13, [N("Clip", ["x", "", "max"], ["y"])],
               {"x": d.f(*s)}, ["y"], {"max": hi})
    yield unary_case("Clip_none_op13", "Clip", 13, d.f(*s))

    yield unary_case("Gelu_op20", "Gelu", 20, d.f(*s, scale=2))
    yield unary_case("Gelu_tanh_op20", "Gelu", 20, d.f(*s, scale=2), approximate="tanh")


def cast(d):
    F, H, I, B = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.INT64, onnx.TensorProto.BOOL
    yield Case("Cast_f32_f16_f32_op13", "Cast", 13,
               [N("Cast", ["x"], ["h"], to=H), N("Cast", ["h"], ["y"], to=F)],
               {"x": d.f(3, 4, scale=100)}, ["y"], tol="f16")
    yield unary_case("Cast_f32_to_f16_op13", "Cast", 13, d.f(3, 4, scale=100), to=H)
    yield unary_case("Cast_f32_to_i64_op13", "Cast", 13, d.f(3, 4, scale=10), to=I)
    yield unary_case("Cast_i64_to_f32_op13", "Cast", 13, d.i64(3, 4, lo=-1000, hi=1000), to=F)
    yield unary_case("Cast_bool_to_f32_op13", "Cast", 13, d.b(3, 4), to=F)
    yield unary_case("Cast_f32_to_bool_op13", "Cast", 13, d.with_zeros(d.f(3, 4), 0.3), to=B)
    yield Case("CastLike_f32_like_i64_op15", "CastLike", 15, [N("CastLike", ["x", "like"], ["y"])],
               {"x": d.f(3, 4, scale=10), "like": d.i64(2, lo=0, hi=5)}, ["y"])
    yield Case("CastLike_i64_like_f32_op19", "CastLike", 19, [N("CastLike", ["x", "like"], ["y"])],
               {"x": d.i64(3, 4, lo=-1000, hi=1000), "like": d.f(1)}, ["y"])


def reductions(d):
    s = (2, 3, 4, 5)
    variants = {
        "axis_neg1_keep": ([-1], 1),
        "axes_0_2_nokeep": ([0, 2], 0),
        "axes_neg_multi_keep": ([-3, -1], 1),
        "all_keep": (None, 1),
        "all_nokeep": (None, 0),
    }
    for op in ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"]:
        attr_opset = None if op == "ReduceSum" else 13
        input_opset = 13 if op == "ReduceSum" else 18
        for tag, (axes, keep) in variants.items():
            if attr_opset:
                attrs = {"keepdims": keep} if axes is None else {"axes": axes, "keepdims": keep}
                yield Case(f"{op}_{tag}_op{attr_opset}", op, attr_opset, [N(op, ["x"], ["y"], **attrs)],
                           {"x": d.f(*s)}, ["y"], tol="red")
            ins, inits = (["x"], {}) if axes is None else (["x", "axes"], {"axes": i64(*axes)})
            yield Case(f"{op}_{tag}_op{input_opset}", op, input_opset, [N(op, ins, ["y"], keepdims=keep)],
                       {"x": d.f(*s)}, ["y"], inits, tol="red")
        yield Case(f"{op}_noop_empty_axes_op{input_opset}", op, input_opset,
                   [N(op, ["x"], ["y"], noop_with_empty_axes=1)], {"x": d.f(*s)}, ["y"], tol="red")
        yield Case(f"{op}_empty_axes_input_op{input_opset}", op, input_opset,
                   [N(op, ["x", "axes"], ["y"], keepdims=0)], {"x": d.f(*s)}, ["y"],
                   {"axes": np.zeros(0, np.int64)}, tol="red")

    yield unary_case("Softmax_default_op13", "Softmax", 13, d.f(*s), tol="red")
    yield unary_case("Softmax_axis1_op13", "Softmax", 13, d.f(*s), tol="red", axis=1)
    yield unary_case("Softmax_axisneg1_op13", "Softmax", 13, d.f(3, 7), tol="red", axis=-1)
    yield unary_case("Softmax_large_op13", "Softmax", 13, d.f(2, 3, 8, scale=30), tol="red")

    x = d.f(2, 3, 8, scale=2)
    yield Case("LayerNormalization_axisneg1_op17", "LayerNormalization", 17,
               [N("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1)],
               {"x": x + 3}, ["y"], {"scale": d.f(8), "bias": d.f(8)}, tol="red")
    yield Case("LayerNormalization_nobias_op17", "LayerNormalization", 17,
               [N("LayerNormalization", ["x", "scale"], ["y"], axis=-1)],
               {"x": d.f(2, 3, 8)}, ["y"], {"scale": d.f(8)}, tol="red")
    yield Case("LayerNormalization_axisneg2_eps_op17", "LayerNormalization", 17,
               [N("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-2, epsilon=1e-2)],
               {"x": d.f(2, 3, 8)}, ["y"], {"scale": d.f(3, 8), "bias": d.f(8)}, tol="red")

    for tag, attrs in {"": {}, "_exclusive": {"exclusive": 1}, "_reverse": {"reverse": 1},
                       "_exclusive_reverse": {"exclusive": 1, "reverse": 1}}.items():
        yield Case(f"CumSum_axis1{tag}_op14", "CumSum", 14, [N("CumSum", ["x", "axis"], ["y"], **attrs)],
                   {"x": d.f(2, 5, 3)}, ["y"], {"axis": s64(1)}, tol="red")
    yield Case("CumSum_axisneg1_op14", "CumSum", 14, [N("CumSum", ["x", "axis"], ["y"])],
               {"x": d.f(2, 5, 3)}, ["y"], {"axis": s64(-1)}, tol="red")
    yield Case("CumSum_i64_op14", "CumSum", 14, [N("CumSum", ["x", "axis"], ["y"])],
               {"x": d.i64(3, 6)}, ["y"], {"axis": np.array([0], np.int64)})


def linear(d):
    mm = {
        "2d": ((3, 4), (4, 5)), "3d": ((2, 3, 4), (2, 4, 5)),
        "4d_bcast": ((2, 1, 3, 4), (1, 3, 4, 5)), "3d_by_2d": ((2, 3, 4), (4, 5)),
        "2d_by_3d": ((3, 4), (2, 4, 5)), "1d_by_2d": ((4,), (4, 5)), "2d_by_1d": ((3, 4), (4,)),
        "1d_by_1d": ((4,), (4,)), "1d_by_3d": ((4,), (2, 4, 5)), "3d_by_1d": ((2, 3, 4), (4,)),
    }
    for tag, (sa, sb) in mm.items():
        yield binary_case(f"MatMul_{tag}_op13", "MatMul", 13, d.f(*sa), d.f(*sb), tol="red")
    yield Case("MatMul_weight_init_op13", "MatMul", 13, [N("MatMul", ["x", "w"], ["y"])],
               {"x": d.f(2, 3, 16)}, ["y"], {"w": d.f(16, 8)}, tol="red")

    gemm = {
        "basic": ((3, 4), (4, 5), (5,), {}),
        "transA": ((4, 3), (4, 5), (5,), {"transA": 1}),
        "transB": ((3, 4), (5, 4), (5,), {"transB": 1}),
        "transAB_alpha_beta": ((4, 3), (5, 4), (3, 5), {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}),
        "C_col": ((3, 4), (4, 5), (3, 1), {}),
        "C_scalar": ((3, 4), (4, 5), (), {"beta": -1.5}),
        "no_C": ((3, 4), (4, 5), None, {"alpha": 2.0}),
    }
    for tag, (sa, sb, sc, attrs) in gemm.items():
        inits = {"B": d.f(*sb)}
        if sc is not None:
            inits["C"] = d.f(*sc)
        yield Case(f"Gemm_{tag}_op13", "Gemm", 13, [N("Gemm", ["a", *inits], ["y"], **attrs)],
                   {"a": d.f(*sa)}, ["y"], inits, tol="red")
    yield Case("Gemm_B_input_op13", "Gemm", 13, [N("Gemm", ["a", "b", "C"], ["y"], transB=1)],
               {"a": d.f(3, 4), "b": d.f(5, 4)}, ["y"], {"C": d.f(1, 5)}, tol="red")

    conv = {
        "patch_embed": ((2, 3, 16, 16), (8, 3, 4, 4), True, {"strides": [4, 4], "kernel_shape": [4, 4]}),
        "pads1_nobias": ((2, 3, 8, 8), (4, 3, 3, 3), False, {"pads": [1, 1, 1, 1]}),
        "dilation2": ((1, 2, 10, 9), (3, 2, 3, 3), True, {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
        "stride2_asym_pads": ((1, 3, 9, 8), (4, 3, 3, 2), True, {"strides": [2, 2], "pads": [0, 1, 1, 0]}),
        "rect_stride_dil": ((2, 2, 11, 7), (5, 2, 2, 3), False, {"strides": [3, 1], "dilations": [1, 2]}),
        "1x1": ((1, 6, 5, 5), (4, 6, 1, 1), True, {}),
    }
    for tag, (sx, sw, bias, attrs) in conv.items():
        inits = {"W": d.f(*sw)}
        if bias:
            inits["B"] = d.f(sw[0])
        yield Case(f"Conv_{tag}_op13", "Conv", 13, [N("Conv", ["x", *inits], ["y"], **attrs)],
                   {"x": d.f(*sx)}, ["y"], inits, tol="red")

    convt = {
        "s2_k4_p1": ((2, 4, 5, 5), (4, 3, 4, 4), True, {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
        "s1_k3": ((1, 2, 6, 4), (2, 5, 3, 3), False, {}),
        "outpad_dil": ((1, 3, 4, 5), (3, 2, 3, 2), True, {"strides": [2, 3], "output_padding": [1, 2], "dilations": [1, 2]}),
        "group2": ((1, 4, 3, 3), (4, 3, 2, 2), True, {"group": 2, "strides": [2, 2]}),
    }
    for tag, (sx, sw, bias, attrs) in convt.items():
        inits = {"W": d.f(*sw)}
        if bias:
            inits["B"] = d.f(sw[1] * attrs.get("group", 1))
        yield Case(f"ConvTranspose_{tag}_op13", "ConvTranspose", 13, [N("ConvTranspose", ["x", *inits], ["y"], **attrs)],
                   {"x": d.f(*sx)}, ["y"], inits, tol="red")

    for opset in (15,):
        c = 5
        inits = {"scale": d.f(c), "bias": d.f(c), "mean": d.f(c), "var": d.pos(c)}
        yield Case(f"BatchNormalization_op{opset}", "BatchNormalization", opset,
                   [N("BatchNormalization", ["x", *inits], ["y"], epsilon=1e-3)], {"x": d.f(2, c, 3, 4)}, ["y"], inits,
                   tol="red")


def resize(d):
    x = d.f(2, 3, 5, 6)
    variants = {
        "cubic_half_pixel_sizes": ({"mode": "cubic", "cubic_coeff_a": -0.75}, None, (2, 3, 9, 7)),
        "cubic_exclude_outside": ({"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5}, None, (2, 3, 8, 11)),
        "linear_half_pixel_sizes": ({"mode": "linear"}, None, (2, 3, 10, 12)),
        "linear_align_corners_scales": ({"mode": "linear", "coordinate_transformation_mode": "align_corners"},
                                        (1.0, 1.0, 2.0, 1.5), None),
        "linear_pytorch_half_pixel_down": ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
                                           None, (2, 3, 3, 4)),
        "nearest_asymmetric_floor": ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                      "nearest_mode": "floor"}, (1.0, 1.0, 2.0, 2.0), None),
        "nearest_default_sizes": ({}, None, (2, 3, 7, 13)),
        "nearest_round_prefer_ceil": ({"nearest_mode": "round_prefer_ceil"}, (1.0, 1.0, 0.6, 1.7), None),
    }
    for tag, (attrs, scales, sizes) in variants.items():
        for opset in (13, 18):
            inits = {"roi": np.zeros(0, np.float32)}
            if scales is not None:
                inits["scales"] = f32(scales)
                names = ["x", "roi", "scales"]
            else:
                inits["scales"] = np.zeros(0, np.float32)
                inits["sizes"] = s64(sizes)
                names = ["x", "roi", "scales", "sizes"]
            yield Case(f"Resize_{tag}_op{opset}", "Resize", opset, [N("Resize", names, ["y"], **attrs)], {"x": x}, ["y"],
                       inits, tol="red")
    yield Case("Resize_axes_cubic_op18", "Resize", 18,
               [N("Resize", ["x", "", "", "sizes"], ["y"], mode="cubic", axes=[2, 3])], {"x": x}, ["y"],
               {"sizes": s64([8, 4])}, tol="red")


def layout(d):
    def with_inits(name, op, opset, x, inits, tol="ew", outputs=("y",), **attrs):
        nodes = [N(op, ["x", *inits], list(outputs), **attrs)]
        return Case(name, op, opset, nodes, {"x": x}, list(outputs), inits, tol)

    for opset in (13, 14):
        for tag, shape in {"zero_neg1": [0, -1], "neg1": [-1], "explicit": [3, 8], "neg1_mid": [2, -1, 2]}.items():
            yield with_inits(f"Reshape_{tag}_op{opset}", "Reshape", opset, d.f(2, 3, 4), {"shape": i64(*shape)})
    yield with_inits("Reshape_i64_op13", "Reshape", 13, d.i64(2, 3, 4), {"shape": i64(4, 0, -1)})

    yield unary_case("Transpose_default_op13", "Transpose", 13, d.f(2, 3, 4))
    yield unary_case("Transpose_0213_op13", "Transpose", 13, d.f(2, 3, 4, 5), perm=[0, 2, 1, 3])
    yield unary_case("Transpose_201_op13", "Transpose", 13, d.f(2, 3, 4), perm=[2, 0, 1])
    yield unary_case("Transpose_2d_i64_op13", "Transpose", 13, d.i64(3, 5), perm=[1, 0])
    yield unary_case("Transpose_2d_f32_op13", "Transpose", 13, d.f(70, 130), perm=[1, 0])

    for opset in (13, 21):
        for tag, axes in {"0": [0], "neg1": [-1], "1_3": [1, 3], "neg_unsorted": [-1, 0]}.items():
            yield with_inits(f"Unsqueeze_{tag}_op{opset}", "Unsqueeze", opset, d.f(2, 3, 4), {"axes": i64(*axes)})
        for tag, axes in {"2": [2], "neg1": [-1], "0_neg1": [0, -1]}.items():
            yield with_inits(f"Squeeze_{tag}_op{opset}", "Squeeze", opset, d.f(1, 3, 1, 4, 1), {"axes": i64(*axes)})
        yield unary_case(f"Squeeze_all_op{opset}", "Squeeze", opset, d.f(1, 3, 1, 4, 1))

    for axis in (0, 1, 2, -1):
        tag = "neg1" if axis < 0 else str(axis)
        yield unary_case(f"Flatten_axis{tag}_op13", "Flatten", 13, d.f(2, 3, 4, 5), axis=axis)

    slices = {
        "basic": ([1, 0], [4, 3], [0, 2], None),
        "neg_starts_ends": ([-3], [-1], [1], None),
        "step2": ([0], [7], [2], [2]),
        "neg_steps": ([-1], [INT64_MIN], [2], [-1]),
        "neg_step2": ([4, -2], [0, -7], [0, 1], [-2, -1]),
        "end_intmax": ([2], [INT64_MAX], [-1], None),
        "axes_omitted": ([1, 1], [3, 5], None, None),
        "clamp": ([-100, 1], [100, 1000], [1, 2], [1, 3]),
        "empty": ([3], [1], [0], None),
    }
    for tag, (starts, ends, axes, steps) in slices.items():
        inits = {"starts": i64(*starts), "ends": i64(*ends)}
        if axes is not None:
            inits["axes"] = i64(*axes)
        if steps is not None:
            inits.setdefault("axes", i64(*range(len(starts))))
            inits["steps"] = i64(*steps)
        yield with_inits(f"Slice_{tag}_op13", "Slice", 13, d.f(5, 6, 7), inits)

    yield Case("Concat_axisneg1_3in_op13", "Concat", 13, [N("Concat", ["x", "y", "w"], ["z"], axis=-1)],
               {"x": d.f(2, 3, 1), "y": d.f(2, 3, 4), "w": d.f(2, 3, 2)}, ["z"])
    yield Case("Concat_axis0_op13", "Concat", 13, [N("Concat", ["x", "y"], ["z"], axis=0)],
               {"x": d.f(1, 4), "y": d.f(3, 4)}, ["z"])
    yield Case("Concat_i64_op13", "Concat", 13, [N("Concat", ["x", "c"], ["z"], axis=0)],
               {"x": d.i64(2)}, ["z"], {"c": i64(-1, 7)})

    outs3 = ("y0", "y1", "y2")
    yield with_inits("Split_sizes_op13", "Split", 13, d.f(2, 6, 3), {"split": i64(2, 3, 1)}, outputs=outs3, axis=1)
    yield Case("Split_equal_op13", "Split", 13, [N("Split", ["x"], list(outs3), axis=-1)],
               {"x": d.f(2, 3, 6)}, list(outs3))
    yield with_inits("Split_sizes_op18", "Split", 18, d.f(7, 2), {"split": i64(4, 3)}, outputs=("y0", "y1"))
    yield Case("Split_num_outputs_uneven_op18", "Split", 18, [N("Split", ["x"], list(outs3), axis=1, num_outputs=3)],
               {"x": d.f(2, 7, 3)}, list(outs3))
    yield Case("Split_num_outputs_op18", "Split", 18, [N("Split", ["x"], list(outs3), axis=-1, num_outputs=3)],
               {"x": d.f(2, 3, 6)}, list(outs3))

    yield with_inits("Expand_higher_rank_op13", "Expand", 13, d.f(3, 1), {"shape": i64(2, 3, 4)})
    yield with_inits("Expand_lower_rank_op13", "Expand", 13, d.f(2, 3, 4), {"shape": i64(3, 1)})
    yield with_inits("Expand_both_ways_op13", "Expand", 13, d.f(1, 4), {"shape": i64(3, 1)})
    yield with_inits("Expand_i64_op13", "Expand", 13, d.i64(1, 3), {"shape": i64(2, 1, 1)})

    yield with_inits("Tile_op13", "Tile", 13, d.f(2, 3, 4), {"repeats": i64(2, 1, 3)})
    yield with_inits("Tile_i64_op13", "Tile", 13, d.i64(2, 3), {"repeats": i64(1, 2)})

    def gather(name, op, data, indices, **attrs):
        return Case(name, op, 13, [N(op, ["x", "indices"], ["y"], **attrs)],
                    {"x": data, "indices": indices}, ["y"])

    yield gather("Gather_axis0_op13", "Gather", d.f(5, 4, 3), d.idx(6, dim=5))
    yield gather("Gather_axis1_2d_op13", "Gather", d.f(5, 4, 3), d.idx(2, 3, dim=4), axis=1)
    yield gather("Gather_scalar_axis0_op13", "Gather", d.f(5, 4, 3), np.array(-2, np.int64))
    yield gather("Gather_scalar_axisneg1_op13", "Gather", d.f(5, 4, 3), np.array(1, np.int64), axis=-1)
    yield gather("Gather_i64_op13", "Gather", d.i64(6), d.idx(3, dim=6))
    yield gather("GatherND_tuples_op13", "GatherND", d.f(4, 5, 3), np.stack([d.idx(6, dim=4), d.idx(6, dim=5)], -1))
    yield gather("GatherND_slices_op13", "GatherND", d.f(4, 5, 3), d.idx(2, 3, 1, dim=4))
    yield gather("GatherND_batch1_op13", "GatherND", d.f(2, 5, 3), d.idx(2, 4, 1, dim=5), batch_dims=1)
    yield gather("GatherElements_axis1_op13", "GatherElements", d.f(3, 4), d.idx(3, 2, dim=4), axis=1)
    yield gather("GatherElements_axis0_op13", "GatherElements", d.f(3, 4), d.idx(2, 4, dim=3))
    yield gather("GatherElements_3d_axisneg1_op13", "GatherElements", d.f(2, 3, 4), d.idx(2, 3, 5, dim=4), axis=-1)

    def scatter(name, opset, data, idx, updates, **attrs):
        return Case(name, "ScatterND", opset, [N("ScatterND", ["x", "indices", "updates"], ["y"], **attrs)],
                    {"x": data, "indices": idx, "updates": updates}, ["y"])

    yield scatter("ScatterND_slices_op13", 13, d.f(4, 5, 6), i64(3, 0).reshape(2, 1), d.f(2, 5, 6))
    yield scatter("ScatterND_rows_op13", 13, d.f(4, 5, 6), i64(0, 1, 3, 4, 2, 0).reshape(3, 2), d.f(3, 6))
    yield scatter("ScatterND_elems_op16", 16, d.f(4, 5), i64(0, 1, 3, 4, 2, 2).reshape(3, 2), d.f(3), reduction="none")

    yield unary_case("Shape_op13", "Shape", 13, d.f(2, 3, 4, 5))
    yield unary_case("Shape_op15", "Shape", 15, d.f(2, 3, 4, 5))
    yield unary_case("Shape_start1_op15", "Shape", 15, d.f(2, 3, 4, 5), start=1)
    yield unary_case("Shape_start_end_neg_op15", "Shape", 15, d.f(2, 3, 4, 5), start=-3, end=-1)
    yield unary_case("Shape_end_clamp_op15", "Shape", 15, d.f(2, 3, 4), start=-10, end=10)
    yield unary_case("Size_op13", "Size", 13, d.f(2, 3, 4))

    t = numpy_helper.from_array
    yield Case("ConstantOfShape_float_op13", "ConstantOfShape", 13,
               [N("ConstantOfShape", ["shape"], ["y"], value=t(f32([1.5])))], {}, ["y"], {"shape": i64(2, 3)})
    yield Case("ConstantOfShape_i64_op13", "ConstantOfShape", 13,
               [N("ConstantOfShape", ["shape"], ["y"], value=t(i64(7)))], {}, ["y"], {"shape": i64(3, 1, 2)})
    yield Case("ConstantOfShape_default_op13", "ConstantOfShape", 13,
               [N("ConstantOfShape", ["shape"], ["y"])], {}, ["y"], {"shape": i64(4)})
    yield Case("ConstantOfShape_from_shape_op13", "ConstantOfShape", 13,
               [N("Shape", ["x"], ["s"]), N("ConstantOfShape", ["s"], ["c"], value=t(f32([2.0]))),
                N("Mul", ["x", "c"], ["y"])], {"x": d.f(2, 3)}, ["y"])

    yield Case("Constant_value_op13", "Constant", 13,
               [N("Constant", [], ["c"], value=t(d.f(3))), N("Add", ["x", "c"], ["y"])], {"x": d.f(2, 3)}, ["y"])
    yield Case("Constant_value_float_op13", "Constant", 13,
               [N("Constant", [], ["c"], value_float=0.25), N("Mul", ["x", "c"], ["y"])], {"x": d.f(2, 3)}, ["y"])
    yield Case("Constant_value_floats_op13", "Constant", 13,
               [N("Constant", [], ["c"], value_floats=[1.0, -2.0, 0.5]), N("Sub", ["x", "c"], ["y"])],
               {"x": d.f(2, 3)}, ["y"])
    yield Case("Constant_value_int_op13", "Constant", 13, [N("Constant", [], ["y"], value_int=-3)], {}, ["y"])
    yield Case("Constant_value_ints_op13", "Constant", 13,
               [N("Constant", [], ["s"], value_ints=[3, -1]), N("Reshape", ["x", "s"], ["y"])],
               {"x": d.f(2, 3, 2)}, ["y"])

    ranges = {"f32": (f32(1.0), f32(4.0), f32(0.5)), "f32_neg_delta": (f32(5.0), f32(1.0), f32(-1.5)),
              "i64": (s64(2), s64(17), s64(3)), "i64_neg_delta": (s64(10), s64(-3), s64(-4))}
    for tag, (a, b, c) in ranges.items():
        yield Case(f"Range_{tag}_op13", "Range", 13, [N("Range", ["start", "limit", "delta"], ["y"])],
                   {}, ["y"], {"start": a, "limit": b, "delta": c})

    trilu = {"upper": ((4, 4), None, 1), "lower": ((4, 4), None, 0), "upper_k1_rect": ((4, 6), 1, 1),
             "lower_kneg1_rect": ((6, 4), -1, 0), "upper_kneg2_batched": ((2, 5, 3), -2, 1),
             "lower_k2_batched": ((2, 3, 5), 2, 0)}
    for tag, (shape, k, upper) in trilu.items():
        yield with_inits(f"Trilu_{tag}_op14", "Trilu", 14, d.f(*shape), {} if k is None else {"k": s64(k)}, upper=upper)

    yield with_inits("Pad_op13", "Pad", 13, d.f(2, 3, 4), {"pads": i64(0, 1, 2, 1, 0, 3)})
    yield with_inits("Pad_value_op13", "Pad", 13, d.f(2, 3, 4),
                     {"pads": i64(1, 0, 0, 0, 2, 1), "constant_value": f32(1.5)})
    yield with_inits("Pad_negative_op13", "Pad", 13, d.f(3, 5), {"pads": i64(-1, 2, 0, -2)})
    yield with_inits("Pad_i64_op13", "Pad", 13, d.i64(2, 3), {"pads": i64(1, 1, 0, 2), "constant_value": i64(-9)})
    yield with_inits("Pad_op18", "Pad", 18, d.f(2, 3, 4), {"pads": i64(0, 1, 2, 1, 0, 3)})
    yield with_inits("Pad_axes_op18", "Pad", 18, d.f(2, 3, 4),
                     {"pads": i64(1, 2, 0, 3), "constant_value": f32(-1.0), "axes": i64(-1, 1)})


def chains(d):
    def layernorm(opset):
        if opset >= 18:
            mean = lambda i, o: N("ReduceMean", [i, "axes"], [o])
            inits = {"axes": i64(-1)}
        else:
            mean = lambda i, o: N("ReduceMean", [i], [o], axes=[-1])
            inits = {}
        inits.update({"two": f32(2.0), "eps": f32(1e-5), "gamma": d.f(16), "beta": d.f(16)})
        nodes = [mean("x", "mu"), N("Sub", ["x", "mu"], ["dx"]), N("Pow", ["dx", "two"], ["sq"]),
                 mean("sq", "var"), N("Add", ["var", "eps"], ["ve"]), N("Sqrt", ["ve"], ["sd"]),
                 N("Div", ["dx", "sd"], ["n"]), N("Mul", ["n", "gamma"], ["g"]), N("Add", ["g", "beta"], ["y"])]
        return Case(f"Chain_layernorm_op{opset}", "Chain", opset, nodes, {"x": d.f(2, 5, 16, scale=2) + 1}, ["y"],
                    inits, tol="red")

    yield layernorm(13)
    yield layernorm(18)
    yield Case("Chain_gelu_erf_op13", "Chain", 13,
               [N("Div", ["x", "sqrt2"], ["a"]), N("Erf", ["a"], ["e"]), N("Add", ["e", "one"], ["p"]),
                N("Mul", ["x", "p"], ["m"]), N("Mul", ["m", "half"], ["y"])],
               {"x": d.f(2, 3, 8, scale=2)}, ["y"],
               {"sqrt2": f32(np.sqrt(2.0)), "one": f32(1.0), "half": f32(0.5)})
    yield Case("Chain_gelu_tanh_op13", "Chain", 13,
               [N("Mul", ["x", "half"], ["h"]), N("Pow", ["x", "three"], ["p"]), N("Mul", ["p", "cubic"], ["c"]),
                N("Add", ["x", "c"], ["s"]), N("Mul", ["s", "k"], ["u"]), N("Tanh", ["u"], ["t"]),
                N("Add", ["t", "one"], ["a"]), N("Mul", ["h", "a"], ["y"])],
               {"x": d.f(2, 3, 8, scale=2)}, ["y"],
               {"half": f32(0.5), "three": f32(3.0), "cubic": f32(0.044715), "k": f32(np.sqrt(2 / np.pi)), "one": f32(1.0)})
    # Rotary embedding as LLaMA's exports spell it: x * cos + rotate_half(x) * sin, the halves
    # swapped by a Concat along the innermost axis (vector loads per half when the halves are
    # multiples of the vector width: d = 16; element by element at d = 12).
    for d_head in (16, 12):
        h = d_head // 2
        yield Case(f"Chain_rotary_d{d_head}_op13", "Chain", 13,
                   [N("Slice", ["x", "s0", "e0", "ax"], ["x1"]), N("Slice", ["x", "s1", "e1", "ax"], ["x2"]),
                    N("Neg", ["x2"], ["nx2"]), N("Concat", ["nx2", "x1"], ["r"], axis=-1), N("Mul", ["x", "cos"], ["a"]),
                    N("Mul", ["r", "sin"], ["b"]), N("Add", ["a", "b"], ["y"])],
                   {"x": d.f(2, 3, 5, d_head), "cos": d.f(5, d_head), "sin": d.f(5, d_head)}, ["y"],
                   {"s0": i64(0), "e0": i64(h), "s1": i64(h), "e1": i64(d_head), "ax": i64(-1)})
    # RMSNorm as LLaMA's exports spell it: dynamo (opset 18) and TorchScript (fp32 Casts, 1 / Sqrt).
    yield Case("Chain_rmsnorm_op18", "Chain", 18,
               [N("Pow", ["x", "two"], ["sq"]), N("ReduceMean", ["sq", "axes"], ["ms"]), N("Add", ["ms", "eps"], ["v"]),
                N("Sqrt", ["v"], ["sd"]), N("Reciprocal", ["sd"], ["r"]), N("Mul", ["x", "r"], ["n"]),
                N("Mul", ["w", "n"], ["y"])],
               {"x": d.f(2, 5, 16, scale=2)}, ["y"],
               {"two": f32(2.0), "axes": i64(-1), "eps": f32(1e-6), "w": d.f(16)}, tol="red")
    yield Case("Chain_rmsnorm_cast_op17", "Chain", 17,
               [N("Cast", ["x"], ["xf"], to=onnx.TensorProto.FLOAT), N("Pow", ["xf", "two"], ["sq"]),
                N("ReduceMean", ["sq"], ["ms"], axes=[-1]), N("Add", ["ms", "eps"], ["v"]), N("Sqrt", ["v"], ["sd"]),
                N("Div", ["one", "sd"], ["r"]), N("Mul", ["xf", "r"], ["n"]),
                N("Cast", ["n"], ["nc"], to=onnx.TensorProto.FLOAT), N("Mul", ["w", "nc"], ["y"])],
               {"x": d.f(2, 5, 16, scale=2)}, ["y"],
               {"two": f32(2.0), "eps": f32(1e-6), "one": f32(1.0), "w": d.f(16)}, tol="red")
    # GPT-2's Conv1D: Reshape → Gemm (bias) → Reshape, then an activation for the GEMM epilogue.
    yield Case("Chain_linear_gemm_relu_op13", "Chain", 13,
               [N("Reshape", ["x", "flat"], ["x2"]), N("Gemm", ["x2", "w", "b"], ["g"], transB=1, alpha=0.5, beta=2.0),
                N("Reshape", ["g", "back"], ["l"]), N("Relu", ["l"], ["y"])],
               {"x": d.f(2, 3, 8)}, ["y"],
               {"flat": i64(-1, 8), "back": i64(2, 3, 16), "w": d.f(16, 8), "b": d.f(16)}, tol="red")

    mask = d.b(2, 1, 4, 6)
    mask[..., 0] = True
    yield Case("Chain_attention_op13", "Chain", 13,
               [N("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), N("MatMul", ["q", "kt"], ["s"]),
                N("Mul", ["s", "scale"], ["ss"]), N("Add", ["ss", "bias"], ["sb"]),
                N("Where", ["mask", "sb", "neg"], ["sm"]), N("Softmax", ["sm"], ["p"], axis=-1),
                N("MatMul", ["p", "v"], ["y"])],
               {"q": d.f(2, 2, 4, 8), "k": d.f(2, 2, 6, 8), "v": d.f(2, 2, 6, 8),
                "bias": d.f(1, 1, 1, 6), "mask": mask}, ["y"],
               {"scale": f32(1 / np.sqrt(8)), "neg": f32(-1e9)}, tol="red")
    # One float input read by two MatMuls (cross-attention K/V projections: merged into one
    # GEMM; with a batched second weight: two GEMMs), and twice by self-attention.
    for tag, w2 in (("", d.f(32, 32, scale=0.2)), ("_batched", d.f(2, 32, 32, scale=0.2))):
        yield Case(f"Chain_shared_input_two_matmuls{tag}_op13", "Chain", 13,
                   [N("MatMul", ["x", "w1"], ["k"]), N("MatMul", ["x", "w2"], ["v"]), N("Add", ["k", "v"], ["y"])],
                   {"x": d.f(2, 64, 32)}, ["y"], {"w1": d.f(32, 32, scale=0.2), "w2": w2}, tol="red")
    yield Case("Chain_shared_input_self_attention_op13", "Chain", 13,
               [N("Transpose", ["x"], ["xt"], perm=[0, 2, 1]), N("MatMul", ["x", "xt"], ["s"]),
                N("Softmax", ["s"], ["p"], axis=-1), N("MatMul", ["p", "x"], ["y"])],
               {"x": d.f(2, 64, 32, scale=0.2)}, ["y"], tol="red")
    yield Case("Chain_shape_reshape_op13", "Chain", 13,
               [N("Shape", ["x"], ["s"]), N("Gather", ["s", "i0"], ["b"], axis=0),
                N("Unsqueeze", ["b", "ax0"], ["bu"]), N("Concat", ["bu", "m1"], ["ns"], axis=0),
                N("Reshape", ["x", "ns"], ["y"])],
               {"x": d.f(2, 3, 4)}, ["y"], {"i0": s64(0), "ax0": i64(0), "m1": i64(-1)})


def attention(d):
    """Attention whose mask is a full [B,1,S,S] model input (bool, or float 1 = keep
    made additive), with the causal pattern on top: compiled in fp16, the mask is
    converted to the sparse format on the GPU every run. Every row keeps its
    diagonal, so no row loses every key."""
    B, H, S, D = 2, 2, 80, 64
    keep = d.b(B, 1, S, S) | np.eye(S, dtype=bool)
    causal = np.tril(np.ones((S, S), dtype=bool))
    qkv = {"q": d.f(B, H, S, D), "k": d.f(B, H, S, D), "v": d.f(B, H, S, D)}
    head = [N("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), N("MatMul", ["q", "kt"], ["s0"]),
            N("Mul", ["s0", "scale"], ["s"]), N("Where", ["causal", "s", "neg_inf"], ["sc"])]
    tail = [N("Softmax", ["m"], ["p"], axis=-1), N("MatMul", ["p", "v"], ["y"])]
    inits = {"scale": f32(D ** -0.5), "causal": causal, "neg_inf": f32(-np.inf)}
    yield Case("Attention_full_bool_mask_op17", "Attention", 17, head + [N("Where", ["mask", "sc", "neg_inf"], ["m"])] + tail,
               {**qkv, "mask": keep}, ["y"], inits, tol="red")
    yield Case("Attention_full_float_mask_op17", "Attention", 17,
               head + [N("Sub", ["one", "mask"], ["inv"]), N("Mul", ["inv", "big"], ["add"]), N("Add", ["sc", "add"], ["m"])] + tail,
               {**qkv, "mask": keep.astype(np.float32)}, ["y"], {**inits, "one": f32(1.0), "big": f32(-1e9)}, tol="red")


def rotary(d):
    """Rotary embeddings that fuse-rotary makes one Rotary op of (after every other builder, so
    that the cases before keep their data for a seed): q | k | v split from one tensor, q and k
    rotated as [B,H,S,D] heads with one table [1,1,S,D] (LLaMA, grouped-query k; vector loads of
    both halves); and one tensor's [B,S,H,D] heads rotated with run-time tables per batch row
    [B,S,1,D] at head dim 12 (the halves read element by element)."""
    def rotate(n, x, dh, cos, sin):
        return [N("Slice", [x, "lo", f"mid{dh}", "axis"], [n + "_x1"]),
                N("Slice", [x, f"mid{dh}", "end", "axis"], [n + "_x2"]), N("Neg", [n + "_x2"], [n + "_nx2"]),
                N("Concat", [n + "_nx2", n + "_x1"], [n + "_rot"], axis=-1), N("Mul", [x, cos], [n + "_c"]),
                N("Mul", [n + "_rot", sin], [n + "_s"]), N("Add", [n + "_c", n + "_s"], [n])]

    B, S, H, Hk, D = 2, 5, 4, 2, 16
    inits = {"sizes": i64(H * D, Hk * D, Hk * D), "lo": i64(0), f"mid{D}": i64(D // 2), "end": i64(INT64_MAX),
             "axis": i64(-1), "cos": d.f(1, 1, S, D), "sin": d.f(1, 1, S, D),
             "q_heads": i64(B, S, H, D), "k_heads": i64(B, S, Hk, D), "v_heads": i64(B, S, Hk, D)}
    nodes = [N("Split", ["m", "sizes"], ["y_q", "y_k", "y_v"], axis=-1)]
    for n in ("q", "k", "v"):
        nodes += [N("Reshape", ["y_" + n, n + "_heads"], [n + "_r"]),
                  N("Transpose", [n + "_r"], [n if n == "v" else n + "_x"], perm=[0, 2, 1, 3])]
        if n != "v":
            nodes += rotate(n, n + "_x", D, "cos", "sin")
    yield Case("Chain_rotary_qkv_op18", "Chain", 18, nodes, {"m": d.f(B, S, (H + 2 * Hk) * D)}, ["q", "k", "v"], inits)

    D = 12
    yield Case("Chain_rotary_heads_op13", "Chain", 13,
               [N("Reshape", ["m", "heads"], ["x"])] + rotate("y", "x", D, "cos", "sin"),
               {"m": d.f(B, S, H * D), "cos": d.f(B, S, 1, D), "sin": d.f(B, S, 1, D)}, ["y"],
               {"heads": i64(B, S, H, D), "lo": i64(0), f"mid{D}": i64(D // 2), "end": i64(INT64_MAX), "axis": i64(-1)})


BUILDERS = [elementwise_binary, unary, cast, reductions, linear, resize, layout, chains, attention, rotary]


def build_model(c):
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in c.inputs.items()]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in c.inits.items()]
    graph = helper.make_graph(c.nodes, c.name, inputs, [onnx.ValueInfoProto(name=o) for o in c.outputs], inits)
    opset = [helper.make_opsetid("", c.opset)]
    model = helper.make_model(graph, opset_imports=opset, producer_name="stofc make_op_cases",
                              ir_version=max(8, helper.find_min_ir_version_for(opset)))
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    for out, inf in zip(model.graph.output, inferred.graph.output):
        out.CopyFrom(inf)
    return model


def fix_output_shapes(model, results):
    for out, r in zip(model.graph.output, results):
        tt = out.type.tensor_type
        if tt.elem_type != helper.np_dtype_to_tensor_dtype(r.dtype):
            raise RuntimeError(f"output {out.name}: declared type {tt.elem_type}, onnxruntime gave {r.dtype}")
        if tt.HasField("shape"):
            dims = [dim.dim_value if dim.HasField("dim_value") else None for dim in tt.shape.dim]
            if len(dims) != r.ndim or any(a is not None and a != b for a, b in zip(dims, r.shape)):
                raise RuntimeError(f"output {out.name}: inferred shape {dims}, onnxruntime gave {list(r.shape)}")
        out.CopyFrom(helper.make_tensor_value_info(out.name, tt.elem_type, r.shape))


def run_case(c, out_dir, so):
    model = build_model(c)
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    results = sess.run(c.outputs, c.inputs)
    fix_output_shapes(model, results)
    onnx.checker.check_model(model, full_check=True)
    case_dir = out_dir / c.name
    if case_dir.exists():
        shutil.rmtree(case_dir)
    (case_dir / "inputs").mkdir(parents=True)
    (case_dir / "expected").mkdir()
    onnx.save(model, case_dir / "model.onnx")
    for k, v in c.inputs.items():
        np.save(case_dir / "inputs" / f"{k}.npy", np.require(v, requirements="C"))
    for k, v in zip(c.outputs, results):
        np.save(case_dir / "expected" / f"{k}.npy", np.require(v, requirements="C"))
    if all(r.dtype.kind in "biu" for r in results):
        tol = "exact"
    elif any(r.dtype == np.float16 for r in results):
        tol = "f16"
    else:
        tol = c.tol
    rtol, atol = TOL[tol]
    return {"name": c.name, "op": c.op, "opset": c.opset, "rtol": rtol, "atol": atol}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()

    seed = args.seed if args.seed is not None else time.time_ns() % (2**31)
    print(f"make_op_cases: seed {seed} (replay with --seed {seed})", flush=True)
    t0 = time.time()

    d = Data(seed)
    cases = [c for b in BUILDERS for c in b(d)]
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_]+", n)]
    if dup or bad:
        sys.exit(f"bad case names: duplicate {sorted(dup)}, invalid {bad}")
    if args.only:
        cases = [c for c in cases if re.search(args.only, c.name)]

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3

    args.out.mkdir(parents=True, exist_ok=True)
    entries = []
    for c in cases:
        try:
            entries.append(run_case(c, args.out, so))
        except Exception as e:
            sys.exit(f"case {c.name} failed: {type(e).__name__}: {e}")
    (args.out / "cases.json").write_text(json.dumps({"seed": seed, "cases": entries}, indent=1) + "\n")
    print(f"make_op_cases: wrote {len(entries)} cases to {args.out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
