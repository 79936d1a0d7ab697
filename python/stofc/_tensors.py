"""Arguments of Plan.run: host arrays (numpy, or anything numpy can view) and device
arrays (torch CUDA tensors, or objects with __cuda_array_interface__), checked
against the plan's dtype and shape. Device arrays are passed by address: no copy."""
from ._errors import Error

_CAI_TYPESTR = {"<f4": "float32", "<f2": "float16", "<f8": "float64", "<i8": "int64", "<i4": "int32", "|i1": "int8",
                "|u1": "uint8", "|b1": "bool", "<V2": "bfloat16"}


def _torch():
    import sys
    return sys.modules.get("torch")


def is_torch(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def is_device(x):
    """Whether x lives in GPU memory: a CUDA torch tensor, or an object with __cuda_array_interface__."""
    if is_torch(x):
        return x.is_cuda
    return hasattr(x, "__cuda_array_interface__")


def torch_dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def device_address(x, spec, what, device):
    """The device address of x after checking its dtype, shape, layout and device against spec."""
    if is_torch(x):
        dtype, shape = torch_dtype_name(x), tuple(x.shape)
        if x.device.index is not None and x.device.index != device:
            raise Error(f"{what} '{spec.name}' is on cuda:{x.device.index}; the plan runs on cuda:{device}")
        contiguous = x.is_contiguous()
        address = x.data_ptr()
    else:
        cai = x.__cuda_array_interface__
        dtype = _CAI_TYPESTR.get(cai["typestr"], cai["typestr"])
        shape = tuple(cai["shape"])
        strides = cai.get("strides")
        contiguous = strides is None or _dense_strides(shape, spec.itemsize) == tuple(strides)
        address = cai["data"][0]
        if cai["data"][1] and what == "output":
            raise Error(f"output '{spec.name}' is a read-only array")
    _check_dtype_shape(dtype, shape, spec, what)
    if not contiguous:
        raise Error(f"{what} '{spec.name}' is not contiguous (row-major); pass .contiguous()")
    return address


def host_array(x, spec, what):
    """x as a C-contiguous numpy array of spec's dtype and shape (no copy when it already is one)."""
    import numpy as np
    if spec.dtype == "bfloat16":
        raise Error(f"{what} '{spec.name}' is bfloat16, which numpy lacks: pass a torch CUDA tensor")
    if is_torch(x):
        x = x.detach().numpy()
    a = np.asarray(x)
    want = np.dtype(spec.dtype)
    if a.dtype != want:
        if not np.can_cast(a.dtype, want, casting="same_kind") or a.dtype.kind != want.kind:
            raise Error(f"{what} '{spec.name}' is {a.dtype}; the plan takes {spec.dtype}{list(spec.shape)}")
        a = a.astype(want)
    _check_dtype_shape(str(a.dtype), tuple(a.shape), spec, what)
    return np.ascontiguousarray(a)


def _dense_strides(shape, itemsize):
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _check_dtype_shape(dtype, shape, spec, what):
    if dtype != spec.dtype or tuple(shape) != tuple(spec.shape):
        raise Error(f"{what} '{spec.name}' is {dtype}{list(shape)}; the plan takes {spec.dtype}{list(spec.shape)}")
