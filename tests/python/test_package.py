"""The installed stofc Python package (tests/python/check_package.sh installs it with pip):
import, offline compile through the package, its errors, and, where a GPU is present, plans
run on numpy arrays and on torch CUDA tensors on a stream, against onnxruntime.

Environment: STOF_TEST_WORK (scratch directory), STOF_SOURCE_DIR (the checkout)."""
import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

import stofc

WORK = Path(os.environ.get("STOF_TEST_WORK", "/tmp/stofc-python-test"))
SOURCE = Path(os.environ.get("STOF_SOURCE_DIR", Path(__file__).resolve().parents[2]))
MODEL = SOURCE / "models" / "bert-torchscript" / "model.onnx"
SHAPE = {"batch": 2, "seq": 128}


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def compile_plan(name, **kwargs):
    return stofc.compile(MODEL, WORK / f"{name}.plan", shape=SHAPE, cache_dir=WORK / "cache", quiet=True, **kwargs)


_gpu_plan = None


def gpu_plan():
    """The fp16 plan of MODEL opened on the GPU, or None where there is no GPU."""
    global _gpu_plan
    if _gpu_plan is None:
        path = compile_plan("bert_gpu", precision="fp16", mask="sliding:16")
        try:
            _gpu_plan = stofc.Plan(path)
        except stofc.Error as e:
            if e.status != 4:
                raise
            _gpu_plan = False
    return _gpu_plan or None


class Package(unittest.TestCase):
    def test_version_matches_the_library(self):
        from stofc import _lib
        self.assertEqual(stofc.__version__, _lib.version())
        out = subprocess.run([str(stofc.stofc_path()), "--version"], capture_output=True, text=True, check=True)
        self.assertIn(stofc.__version__, out.stdout)

    def test_compile_offline_runs_sparse_attention(self):
        plan = stofc.compile(MODEL, WORK / "offline.plan", shape={"input_ids": (1, 64), "batch": 1, "seq": 64},
                             precision="fp16", mask={"0-1": "sliding:8"}, offline=True, arch="sm_80",
                             cache_dir=WORK / "cache", quiet=True)
        self.assertTrue(plan.is_file())
        info = json.loads(subprocess.run([str(stofc.stofc_path()), "inspect", str(plan), "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        self.assertEqual(info["meta"]["target_arch"], "sm_80")
        kinds = [s["kind"] for s in info["steps"]]
        self.assertEqual(kinds.count("sparse_attention"), 2)

    def test_compile_errors_carry_stofc_message(self):
        with self.assertRaisesRegex(stofc.Error, "does not exist"):
            stofc.compile(WORK / "missing.onnx")
        with self.assertRaisesRegex(stofc.Error, "MIN > MAX") as cm:
            stofc.compile(MODEL, WORK / "badrange.plan", shape={"seq": "64..16"}, offline=True, quiet=True)
        self.assertEqual(cm.exception.returncode, 1)
        self.assertFalse((WORK / "badrange.plan").exists())
        with self.assertRaises(stofc.Error) as cm:
            stofc.compile(MODEL, WORK / "x.plan", shape=SHAPE, precision="fp8", offline=True, quiet=True)
        self.assertIn("fp8", str(cm.exception))
        self.assertNotEqual(cm.exception.returncode, 0)
        with self.assertRaises(TypeError):
            stofc.compile(MODEL, shape=["batch=1"])

    def test_compile_shape_range_offline(self):
        plan = stofc.compile(MODEL, WORK / "ranged.plan", shape={"batch": "1..2", "seq": "32..128"}, precision="fp16",
                             offline=True, cache_dir=WORK / "cache", quiet=True)
        info = json.loads(subprocess.run([str(stofc.stofc_path()), "inspect", str(plan), "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        sizes = [(b["sizes"]["batch"], b["sizes"]["seq"]) for b in info["buckets"]]
        self.assertEqual(sizes, [(1, 32), (1, 64), (1, 128), (2, 32), (2, 64), (2, 128)])
        plan = stofc.compile(MODEL, WORK / "ranged2.plan", shape={"batch": 1, "seq": "32..128"}, shape_buckets=2,
                             offline=True, cache_dir=WORK / "cache", quiet=True)
        info = json.loads(subprocess.run([str(stofc.stofc_path()), "inspect", str(plan), "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        self.assertEqual(info["shape_ranges"]["vars"][0]["buckets"], [32, 48, 64, 96, 128])

    def test_compile_without_shape_uses_defaults(self):
        plan = stofc.compile(MODEL, WORK / "noshape.plan", offline=True, cache_dir=WORK / "cache", quiet=True)
        info = json.loads(subprocess.run([str(stofc.stofc_path()), "inspect", str(plan), "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        ids = next(t for t in info["tensors"] if t["name"] == "input_ids")
        self.assertEqual(ids["shape"], [1, 128])

    def test_plan_errors(self):
        with self.assertRaises(stofc.Error) as cm:
            stofc.Plan(WORK / "missing.plan")
        self.assertEqual(cm.exception.status, 5)
        self.assertIn("missing.plan", str(cm.exception))
        if gpu_plan() is None:
            with self.assertRaisesRegex(stofc.Error, "no CUDA device") as cm:
                stofc.Plan(compile_plan("bert_cpu", offline=True))
            self.assertEqual(cm.exception.status, 4)


@unittest.skipUnless(have("numpy"), "numpy is not installed")
class HostArrays(unittest.TestCase):
    def test_checked_against_the_plan(self):
        import numpy as np
        from stofc import _tensors
        spec = stofc.TensorSpec("input_ids", "int64", (2, 4))
        a = _tensors.host_array(np.ones((2, 4), np.int32), spec, "input")
        self.assertEqual((a.dtype, a.shape), (np.int64, (2, 4)))
        with self.assertRaisesRegex(stofc.Error, r"input 'input_ids' is int64\[2, 3\]; the plan takes int64\[2, 4\]"):
            _tensors.host_array(np.ones((2, 3), np.int64), spec, "input")
        with self.assertRaisesRegex(stofc.Error, "is float32; the plan takes int64"):
            _tensors.host_array(np.ones((2, 4), np.float32), spec, "input")


def bert_inputs(seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    b, s = SHAPE["batch"], SHAPE["seq"]
    mask = np.ones((b, s), np.int64)
    mask[1, -16:] = 0
    return {"input_ids": rng.integers(0, 512, (b, s), dtype=np.int64), "attention_mask": mask,
            "token_type_ids": np.zeros((b, s), np.int64)}


def onnxruntime_reference(inputs):
    import onnxruntime as ort
    sess = ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    return sess.run(["last_hidden_state"], inputs)[0]


def eval_reference(inputs, mask):
    """stofc eval with the same mask (the plan's semantics with --mask) on the inputs."""
    import numpy as np
    d = WORK / "eval_in"
    d.mkdir(parents=True, exist_ok=True)
    for k, v in inputs.items():
        np.save(d / f"{k}.npy", v)
    out = WORK / "eval_out"
    subprocess.run([str(stofc.stofc_path()), "eval", str(MODEL), "--inputs-dir", str(d), "--mask", mask,
                    "-o", str(out)], check=True, capture_output=True)
    return np.load(out / "last_hidden_state.npy")


@unittest.skipUnless(have("numpy"), "numpy is not installed")
class OnTheGpu(unittest.TestCase):
    def setUp(self):
        self.plan = gpu_plan()
        if self.plan is None:
            self.skipTest("no GPU")

    def test_numpy_against_reference(self):
        import numpy as np
        inputs = bert_inputs(1)
        out = self.plan.run(inputs)["last_hidden_state"]
        ref = eval_reference(inputs, "sliding:16")
        self.assertEqual(out.dtype, np.float32)
        np.testing.assert_allclose(out, ref, rtol=3e-2, atol=3e-2)
        again = self.plan.run(**inputs, graph=True)["last_hidden_state"]
        np.testing.assert_array_equal(again, out)

    def test_range_plan_at_two_shapes_against_reference(self):
        import numpy as np
        path = stofc.compile(MODEL, WORK / "ranged_gpu.plan", shape={"batch": "1..2", "seq": "32..128"},
                             precision="fp16", mask="sliding:16", cache_dir=WORK / "cache", quiet=True)
        with stofc.Plan(path) as plan:
            self.assertTrue(plan.ranged)
            for b, s in [(1, 50), (2, 100)]:
                full = bert_inputs(3)
                inputs = {k: np.ascontiguousarray(v[:b, :s]) for k, v in full.items()}
                out = plan.run(inputs)["last_hidden_state"]
                self.assertEqual(out.shape, (b, s, 128))
                self.assertEqual(plan.outputs[0].shape, (b, s, 128))
                np.testing.assert_allclose(out, eval_reference(inputs, "sliding:16"), rtol=3e-2, atol=3e-2)
            with self.assertRaisesRegex(stofc.Error, "outside the plan's range 32..128"):
                plan.set_input_shape("input_ids", (1, 200))

    @unittest.skipUnless(have("torch"), "torch is not installed")
    def test_torch_tensors_on_a_stream_against_onnxruntime(self):
        import numpy as np
        import torch
        full = stofc.Plan(compile_plan("bert_fp16_nomask", precision="fp16"))
        inputs = bert_inputs(2)
        ref = onnxruntime_reference(inputs)
        dev = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            out = full.run(dev)["last_hidden_state"]
            pre = torch.full(tuple(full.outputs[0].shape), float("nan"), device="cuda")
            given = full.run(dev, outputs={"last_hidden_state": pre}, graph=True)["last_hidden_state"]
        self.assertIs(given, pre)
        self.assertTrue(out.is_cuda)
        stream.synchronize()
        valid = inputs["attention_mask"].astype(bool)  # padded query rows are not compared
        np.testing.assert_allclose(out.cpu().numpy()[valid], ref[valid], rtol=3e-2, atol=3e-2)
        torch.testing.assert_close(given, out, rtol=0, atol=0)
        # An explicit raw stream handle, and the default: torch's current stream.
        out2 = full.run(dev, stream=torch.cuda.current_stream().cuda_stream)["last_hidden_state"]
        torch.cuda.synchronize()
        torch.testing.assert_close(out2, out, rtol=0, atol=0)
        with self.assertRaisesRegex(stofc.Error, "mix device arrays"):
            full.run({**dev, "input_ids": inputs["input_ids"]})
        with self.assertRaisesRegex(stofc.Error, "is int32"):
            full.run({**dev, "input_ids": dev["input_ids"].int()})
        with self.assertRaisesRegex(stofc.Error, "not contiguous"):
            full.run({**dev, "input_ids": dev["input_ids"].t().contiguous().t()})
        full.close()


if __name__ == "__main__":
    WORK.mkdir(parents=True, exist_ok=True)
    unittest.main(verbosity=2)
