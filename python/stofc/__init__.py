"""stofc: compile ONNX Transformers into plans that run attention on sparse kernels, and run the plans.

    import stofc
    stofc.compile("model.onnx", "model.plan", shape={"batch": 1, "seq": 512}, precision="fp16", mask="sliding:64")
    plan = stofc.Plan("model.plan")
    out = plan.run(input_ids=ids, attention_mask=mask)   # numpy in, numpy out; or torch CUDA tensors in and out

`compile` runs the bundled `stofc` command-line tool; `Plan` binds the runtime's C API
(libstof, stof/c_api.h) through ctypes. Both raise stofc.Error with stofc's one-line message.
"""
from ._compile import compile, stofc_path, stof_run_path
from ._errors import Error
from ._plan import Plan, TensorSpec
from ._version import __version__

__all__ = ["compile", "Plan", "TensorSpec", "Error", "stofc_path", "stof_run_path", "__version__"]
