"""stofc.Plan: a compiled plan loaded onto a GPU, run on host or device arrays."""
import ctypes
import os
from dataclasses import dataclass

from . import _lib, _tensors
from ._errors import Error


@dataclass(frozen=True)
class TensorSpec:
    """A plan input or output: name, dtype (numpy / torch name, e.g. 'float32', 'int64') and shape."""
    name: str
    dtype: str
    shape: tuple

    @property
    def itemsize(self):
        return _lib.ITEMSIZE[self.dtype]

    @property
    def nbytes(self):
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n


class Plan:
    """A plan file opened on CUDA device `device`: its kernels loaded, memory allocated, weights uploaded.

    plan.inputs / plan.outputs: the TensorSpecs, in the plan's order, at the current shapes.
    A plan compiled for shape ranges (stofc compile --shape seq=128..1024) runs any shape in them:
    plan.run takes inputs of any such shape (or set them first with plan.set_input_shape), and
    plan.ranged says whether it is one.
    plan.run(...): see Plan.run. A Plan is not for concurrent use from several threads.
    Raises stofc.Error (e.g. status 4 and "no CUDA device: ..." on a machine without a GPU)."""

    def __init__(self, path, device=0):
        self._handle = None
        path = os.fspath(path)
        lib = _lib.lib()
        handle = ctypes.c_void_p()
        _lib.check(lib.stof_plan_open(path.encode(), int(device), ctypes.byref(handle)))
        self._handle = handle
        self._lib = lib
        self.path = path
        self.device = int(device)
        num_vars = ctypes.c_size_t()
        _lib.check(lib.stof_plan_shape_ranges(handle, ctypes.byref(num_vars), None, None))
        self.ranged = num_vars.value > 0
        self._refresh()

    def _refresh(self):
        self.inputs = self._specs(self._lib.stof_plan_num_inputs, self._lib.stof_plan_input_info)
        self.outputs = self._specs(self._lib.stof_plan_num_outputs, self._lib.stof_plan_output_info)

    def set_input_shape(self, name, shape):
        """Sets input `name`'s actual shape (a plan for shape ranges); the inputs and outputs that share its
        ranges follow. Raises stofc.Error for a shape outside the ranges."""
        if self._handle is None:
            raise Error("the plan is closed")
        names = [s.name for s in self.inputs]
        if name not in names:
            raise Error(f"the plan has no input '{name}' (inputs: {', '.join(names)})")
        dims = (ctypes.c_int64 * max(1, len(shape)))(*[int(d) for d in shape])
        _lib.check(self._lib.stof_plan_set_input_shape(self._handle, names.index(name), len(shape), dims))
        self._refresh()

    def _set_shapes(self, given):
        """A ranged plan: the inputs' shapes from the arrays given."""
        if not self.ranged:
            return
        for spec in list(self.inputs):
            x = given[spec.name]
            if getattr(x, "shape", None) is None:
                import numpy as np
                x = np.asarray(x)
            shape = tuple(int(d) for d in x.shape)
            current = next(s for s in self.inputs if s.name == spec.name)
            if shape != current.shape:
                self.set_input_shape(spec.name, shape)

    def _specs(self, count_fn, info_fn):
        n = ctypes.c_size_t()
        _lib.check(count_fn(self._handle, ctypes.byref(n)))
        specs = []
        for i in range(n.value):
            info = _lib.TensorInfo()
            _lib.check(info_fn(self._handle, i, ctypes.byref(info)))
            specs.append(TensorSpec(info.name.decode(), _lib.DTYPES[info.dtype],
                                    tuple(info.dims[d] for d in range(info.rank))))
        return specs

    def close(self):
        """Frees the plan's GPU memory (waits for its work first). Idempotent."""
        if self._handle is not None:
            self._lib.stof_plan_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    def __repr__(self):
        def fmt(specs):
            return ", ".join(f"{s.name}: {s.dtype}{list(s.shape)}" for s in specs)
        return f"stofc.Plan({self.path!r}, inputs=[{fmt(self.inputs)}], outputs=[{fmt(self.outputs)}])"

    def run(self, inputs=None, outputs=None, *, stream=None, graph=False, **named):
        """Runs the plan once; returns {output name: array}.

        inputs: {name: array} or a sequence in the plan's input order; keyword arguments name inputs too.
        Every input is needed.

        Host arrays (numpy, or anything numpy can view): the run is synchronous; each input is converted
        within its kind when needed (int32 to int64, float64 to float32) and copied to the GPU, and the
        outputs come back as new numpy arrays, or into `outputs` ({name: numpy array}).

        Device arrays (torch CUDA tensors, or objects with __cuda_array_interface__, row-major, of the
        plan's exact dtype and shape): the run is enqueued on `stream` and not waited for; inputs are read
        and outputs written on the GPU with no host copy. stream: a torch.cuda.Stream, an object with
        `cuda_stream` or `__cuda_stream__`, or a raw cudaStream_t as int; default: torch's current stream
        of the plan's device for torch tensors, else the legacy default stream. outputs: {name: device
        array}; default (torch inputs only): new torch tensors on the plan's device. Keep the inputs
        unchanged until the stream has passed the run (torch's caching allocator takes care of that on
        torch's current stream).

        graph=True replays a CUDA graph of the steps (captured on the first such run)."""
        if self._handle is None:
            raise Error("the plan is closed")
        given = self._named_inputs(inputs, named)
        self._set_shapes(given)
        device_inputs = [n for n, x in given.items() if _tensors.is_device(x)]
        if device_inputs and len(device_inputs) != len(given):
            host = next(n for n in given if n not in device_inputs)
            raise Error(f"inputs mix device arrays ('{device_inputs[0]}') and host arrays ('{host}'): pass all of "
                        "them on the GPU or all on the host")
        if device_inputs:
            return self._run_device(given, outputs, stream, graph)
        return self._run_host(given, outputs, graph)

    def _named_inputs(self, inputs, named):
        if inputs is None:
            given = {}
        elif isinstance(inputs, dict):
            given = dict(inputs)
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != len(self.inputs):
                raise Error(f"{len(inputs)} inputs given; the plan takes {len(self.inputs)} "
                            f"({', '.join(s.name for s in self.inputs)})")
            given = {s.name: x for s, x in zip(self.inputs, inputs)}
        else:
            raise TypeError("inputs: a dict {name: array} or a sequence in the plan's input order")
        for name, x in named.items():
            if name in given:
                raise Error(f"input '{name}' is given twice")
            given[name] = x
        names = [s.name for s in self.inputs]
        unknown = [n for n in given if n not in names]
        if unknown:
            raise Error(f"the plan has no input '{unknown[0]}' (inputs: {', '.join(names)})")
        missing = [n for n in names if n not in given]
        if missing:
            raise Error(f"input '{missing[0]}' is missing (inputs: {', '.join(names)})")
        return {n: given[n] for n in names}

    def _outputs_dict(self, outputs):
        if outputs is None:
            return {}
        if not isinstance(outputs, dict):
            raise TypeError("outputs: a dict {output name: array}")
        names = [s.name for s in self.outputs]
        unknown = [n for n in outputs if n not in names]
        if unknown:
            raise Error(f"the plan has no output '{unknown[0]}' (outputs: {', '.join(names)})")
        return outputs

    def _run_host(self, given, outputs, graph):
        import numpy as np
        out_given = self._outputs_dict(outputs)
        lib = self._lib
        for i, spec in enumerate(self.inputs):
            a = _tensors.host_array(given[spec.name], spec, "input")
            _lib.check(lib.stof_plan_set_input(self._handle, i, a.ctypes.data, a.nbytes))
        _lib.check(lib.stof_plan_run(self._handle, 1 if graph else 0))
        result = {}
        for i, spec in enumerate(self.outputs):
            if spec.dtype == "bfloat16":
                raise Error(f"output '{spec.name}' is bfloat16, which numpy lacks: run the plan on torch CUDA tensors")
            out = out_given.get(spec.name)
            if out is None:
                out = np.empty(spec.shape, dtype=spec.dtype)
            elif (not isinstance(out, np.ndarray) or out.dtype != np.dtype(spec.dtype) or out.shape != spec.shape
                  or not out.flags.c_contiguous or not out.flags.writeable):
                raise Error(f"output '{spec.name}' must be a writable C-contiguous numpy array of "
                            f"{spec.dtype}{list(spec.shape)}")
            _lib.check(lib.stof_plan_get_output(self._handle, i, out.ctypes.data, out.nbytes))
            result[spec.name] = out
        return result

    def _run_device(self, given, outputs, stream, graph):
        out_given = self._outputs_dict(outputs)
        torch = _tensors._torch()
        uses_torch = any(_tensors.is_torch(x) for x in given.values())
        handle = self._stream_handle(stream, uses_torch)
        in_ptrs = (ctypes.c_void_p * max(1, len(self.inputs)))()
        for i, spec in enumerate(self.inputs):
            in_ptrs[i] = _tensors.device_address(given[spec.name], spec, "input", self.device)
        result = {}
        out_ptrs = (ctypes.c_void_p * max(1, len(self.outputs)))()
        for i, spec in enumerate(self.outputs):
            out = out_given.get(spec.name)
            if out is None:
                if not uses_torch:
                    raise Error(f"output '{spec.name}': pass outputs={{name: device array}} when the inputs are not "
                                "torch tensors")
                out = torch.empty(spec.shape, dtype=getattr(torch, spec.dtype), device=f"cuda:{self.device}")
                if handle != torch.cuda.current_stream(self.device).cuda_stream:
                    out.record_stream(torch.cuda.ExternalStream(handle, device=f"cuda:{self.device}"))
            elif not _tensors.is_device(out):
                raise Error(f"output '{spec.name}' is a host array; the inputs are on the GPU, so the outputs must "
                            "be too")
            out_ptrs[i] = _tensors.device_address(out, spec, "output", self.device)
            result[spec.name] = out
        _lib.check(self._lib.stof_plan_enqueue(self._handle, in_ptrs, out_ptrs, 1 if graph else 0, handle))
        return result

    def _stream_handle(self, stream, uses_torch):
        if stream is None:
            if uses_torch:
                import torch
                return torch.cuda.current_stream(self.device).cuda_stream
            return 0
        if isinstance(stream, int):
            return stream
        if hasattr(stream, "cuda_stream"):
            return int(stream.cuda_stream)
        if hasattr(stream, "__cuda_stream__"):
            return int(stream.__cuda_stream__()[1])
        if hasattr(stream, "ptr"):
            return int(stream.ptr)
        raise TypeError("stream: a torch.cuda.Stream, an object with cuda_stream or __cuda_stream__, or a "
                        "cudaStream_t as int")
