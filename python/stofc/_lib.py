"""ctypes binding of the runtime's C API (runtime/include/stof/c_api.h): the plan functions."""
import ctypes
import threading

from . import _paths
from ._errors import Error

# stof_dtype values (stof/c_api.h) and their numpy / torch names.
DTYPES = {1: "float32", 2: "float16", 3: "bfloat16", 4: "float64", 5: "int64", 6: "int32", 7: "int8", 8: "uint8",
          9: "bool"}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int8": 1, "uint8": 1,
            "bool": 1}


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("dims", ctypes.POINTER(ctypes.c_int64)), ("bytes", ctypes.c_size_t)]


_P = ctypes.c_void_p
_SIZE = ctypes.c_size_t
_SIGNATURES = {
    "stof_last_error": (ctypes.c_char_p, []),
    "stof_version": (ctypes.c_char_p, []),
    "stof_plan_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_P)]),
    "stof_plan_close": (None, [_P]),
    "stof_plan_num_inputs": (ctypes.c_int, [_P, ctypes.POINTER(_SIZE)]),
    "stof_plan_num_outputs": (ctypes.c_int, [_P, ctypes.POINTER(_SIZE)]),
    "stof_plan_input_info": (ctypes.c_int, [_P, _SIZE, ctypes.POINTER(TensorInfo)]),
    "stof_plan_output_info": (ctypes.c_int, [_P, _SIZE, ctypes.POINTER(TensorInfo)]),
    "stof_plan_set_input": (ctypes.c_int, [_P, _SIZE, _P, _SIZE]),
    "stof_plan_set_input_shape": (ctypes.c_int, [_P, _SIZE, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64)]),
    "stof_plan_shape_ranges": (ctypes.c_int, [_P, ctypes.POINTER(_SIZE), ctypes.POINTER(_SIZE), ctypes.POINTER(_SIZE)]),
    "stof_plan_run": (ctypes.c_int, [_P, ctypes.c_int]),
    "stof_plan_get_output": (ctypes.c_int, [_P, _SIZE, _P, _SIZE]),
    "stof_plan_enqueue": (ctypes.c_int, [_P, ctypes.POINTER(_P), ctypes.POINTER(_P), ctypes.c_int, _P]),
    "stof_plan_input_address": (ctypes.c_int, [_P, _SIZE, ctypes.POINTER(_P)]),
    "stof_plan_output_address": (ctypes.c_int, [_P, _SIZE, ctypes.POINTER(_P)]),
}

_lock = threading.Lock()
_lib = None


def lib():
    """libstof, loaded once (bundled in the package, or $STOFC_HOME/lib)."""
    global _lib
    with _lock:
        if _lib is None:
            path = _paths.find("lib/libstof.so")
            try:
                handle = ctypes.CDLL(str(path))
            except OSError as e:
                raise Error(f"cannot load {path}: {e} (the CUDA runtime and cuBLASLt libraries of the CUDA toolkit "
                            "stofc was built with must be installed)") from None
            for name, (restype, argtypes) in _SIGNATURES.items():
                fn = getattr(handle, name)
                fn.restype = restype
                fn.argtypes = argtypes
            _lib = handle
        return _lib


def check(status):
    """Raises stofc.Error with the C API's message when status is not STOF_OK."""
    if status != 0:
        raise Error(lib().stof_last_error().decode(errors="replace"), status=status)


def version():
    """The version of the loaded libstof."""
    return lib().stof_version().decode()
