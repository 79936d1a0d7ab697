"""ctypes binding of stofc's C API (runtime/include/stof/c_api.h): plans (host numpy
inputs and outputs) and the sparse attention kernels on torch CUDA tensors. The
structures mirror the header."""
import ctypes
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
KERNEL = {"auto": -1, "block-wise": 0, "row-wise": 1, "block-wise-sm90": 2}
DTYPE = {"float16": 2, "bfloat16": 3}


class AttnTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("stride_b", ctypes.c_int64), ("stride_h", ctypes.c_int64),
                ("stride_s", ctypes.c_int64)]


class AttentionParams(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("batch", ctypes.c_int32), ("heads", ctypes.c_int32),
                ("kv_heads", ctypes.c_int32), ("seq_q", ctypes.c_int32), ("seq_k", ctypes.c_int32),
                ("head_dim", ctypes.c_int32), ("q", AttnTensor), ("k", AttnTensor), ("v", AttnTensor),
                ("o", AttnTensor), ("scale", ctypes.c_float), ("mask", ctypes.c_void_p),
                ("key_valid", ctypes.c_void_p), ("bias", ctypes.c_void_p), ("bias_stride_h", ctypes.c_int64),
                ("bias_stride_s", ctypes.c_int64), ("kernel", ctypes.c_int32), ("block_m", ctypes.c_int32)]


class MaskStats(ctypes.Structure):
    _fields_ = [("rows", ctypes.c_int32), ("cols", ctypes.c_int32), ("tile_m", ctypes.c_int32),
                ("tile_n", ctypes.c_int32), ("mask_batch", ctypes.c_int32), ("mask_heads", ctypes.c_int32),
                ("nnz", ctypes.c_int64), ("density", ctypes.c_double), ("empty_tiles", ctypes.c_int64),
                ("full_tiles", ctypes.c_int64), ("partial_tiles", ctypes.c_int64), ("rho", ctypes.c_double)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("bytes", ctypes.c_size_t)]


class StofError(RuntimeError):
    pass


class Stof:
    def __init__(self, lib=None):
        path = Path(lib) if lib else ROOT / "build" / "lib" / "libstof.so"
        if not path.exists():
            raise StofError(f"{path} not found: build the project (target 'stof') or pass --lib")
        self.lib = ctypes.CDLL(str(path))
        self.lib.stof_last_error.restype = ctypes.c_char_p
        self.lib.stof_attention_selector_tau.restype = ctypes.c_double
        self.lib.stof_attention_select_rho.argtypes = [ctypes.c_double, ctypes.c_int32]
        self.lib.stof_mask_destroy.argtypes = [ctypes.c_void_p]

    def _check(self, status):
        if status != 0:
            raise StofError(self.lib.stof_last_error().decode())

    def plan(self, path, device=0):
        return Plan(self, path, device)

    def tau(self):
        return self.lib.stof_attention_selector_tau()

    def mask(self, keep, tile=64):
        """keep: bool/uint8 array [S_q, S_k] or [MB, MH, S_q, S_k] (host)."""
        keep = np.ascontiguousarray(np.asarray(keep, dtype=np.uint8))
        if keep.ndim == 2:
            keep = keep[None, None]
        mb, mh, rows, cols = keep.shape
        handle = ctypes.c_void_p()
        self._check(self.lib.stof_mask_from_dense(keep.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), mb, mh, rows,
                                                  cols, tile, tile, ctypes.byref(handle)))
        return Mask(self, handle)

    def attention(self, q, k, v, o, mask, scale, kernel="auto", stream=None):
        """q, o: [B, H, S_q, D]; k, v: [B, H_kv, S_k, D] torch CUDA tensors (strided, unit stride on D)."""
        def view(t):
            return AttnTensor(t.data_ptr(), t.stride(0), t.stride(1), t.stride(2))
        p = AttentionParams(DTYPE[str(q.dtype).split(".")[-1]], q.shape[0], q.shape[1], k.shape[1], q.shape[2],
                            k.shape[2], q.shape[3], view(q), view(k), view(v), view(o), scale, mask.handle, None, None,
                            0, 0, KERNEL[kernel], 0)
        self._check(self.lib.stof_attention(ctypes.byref(p), ctypes.c_void_p(stream or 0)))


class Mask:
    def __init__(self, stof, handle):
        self.stof, self.handle = stof, handle
        s = MaskStats()
        stof._check(stof.lib.stof_mask_get_stats(handle, ctypes.byref(s)))
        self.stats = {f: getattr(s, f) for f, _ in MaskStats._fields_}
        fold = ctypes.c_int32()
        stof._check(stof.lib.stof_mask_get_fold(handle, ctypes.byref(fold)))
        self.fold = fold.value  # the period of its folded form (stof/mask_fold.hpp); 1: none

    def selected(self):
        """The selector's kernel, and the fold the mask runs with (no key_valid or bias given)."""
        k = ctypes.c_int32()
        self.stof._check(self.stof.lib.stof_attention_select(self.handle, self.stats["cols"], ctypes.byref(k)))
        kernel = "row-wise" if k.value == 1 else "block-wise"
        return kernel if self.fold == 1 else f"{kernel}, folded {self.fold}"

    def __del__(self):
        if getattr(self, "handle", None):
            self.stof.lib.stof_mask_destroy(self.handle)
            self.handle = None


class Plan:
    """A plan opened on a device: set_input(name, array), run(graph), output(name)."""

    def __init__(self, stof, path, device=0):
        self.stof, self.handle = stof, ctypes.c_void_p()
        stof._check(stof.lib.stof_plan_open(str(path).encode(), device, ctypes.byref(self.handle)))

    def _index(self, fn, name):
        i = ctypes.c_size_t()
        self.stof._check(fn(self.handle, name.encode(), ctypes.byref(i)))
        return i

    def set_input(self, name, array):
        a = np.ascontiguousarray(array)
        self.stof._check(self.stof.lib.stof_plan_set_input(self.handle, self._index(self.stof.lib.stof_plan_find_input, name),
                                                           a.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(a.nbytes)))

    def run(self, graph=True):
        self.stof._check(self.stof.lib.stof_plan_run(self.handle, 1 if graph else 0))

    def output(self, name, dtype=np.float32):
        i = self._index(self.stof.lib.stof_plan_find_output, name)
        info = TensorInfo()
        self.stof._check(self.stof.lib.stof_plan_output_info(self.handle, i, ctypes.byref(info)))
        out = np.empty([info.dims[k] for k in range(info.rank)], dtype=dtype)
        if out.nbytes != info.bytes:
            raise StofError(f"output {name}: {info.bytes} bytes, not {out.nbytes} as {np.dtype(dtype).name}")
        self.stof._check(self.stof.lib.stof_plan_get_output(self.handle, i, out.ctypes.data_as(ctypes.c_void_p),
                                                            ctypes.c_size_t(out.nbytes)))
        return out

    def __del__(self):
        if getattr(self, "handle", None):
            self.stof.lib.stof_plan_close(self.handle)
            self.handle = None
