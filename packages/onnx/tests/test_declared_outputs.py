"""Graph outputs come back as the model declares them: ``OnnxModel.run`` returns each as a numpy
array of its ONNX element type (what onnxruntime's ``InferenceSession.run`` returns), whatever dtype
the device computed in, and refuses, naming the output, a value the declared type cannot hold;
``forward`` casts on the device where the backend has the declared dtype."""

from __future__ import annotations

import os
import subprocess
import sys

import burn
import burn_onnx
import numpy as np
import pytest
from burn_onnx_tests._util import make_model, reference
from onnx import TensorProto, helper


def _argmax_model() -> bytes:
    x = np.zeros((2, 3), np.float32)
    out = [helper.make_tensor_value_info("y", TensorProto.INT64, [2])]
    return make_model(
        [helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)], {"x": x}, ["y"], output_infos=out
    )


def test_argmax_comes_back_int64(device):
    feeds = {"x": np.array([[1.0, 5.0, 2.0], [7.0, -1.0, 0.0]], np.float32)}
    model = burn_onnx.load(_argmax_model(), device=device)
    (got,) = model.run(**feeds)
    (want,) = reference(_argmax_model(), feeds)
    assert got.dtype == want.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    if burn.int64 in device.backend.dtypes:  # forward keeps the declared dtype on the device too
        assert model(**feeds).dtype is burn.int64


def test_uint16_output_is_returned_as_uint16(device):
    a = np.array([1, 300, 65000], np.uint16)
    out = [helper.make_tensor_value_info("y", TensorProto.UINT16, [3])]
    data = make_model([helper.make_node("Add", ["a", "a"], ["y"])], {"a": a}, ["y"], output_infos=out)
    ok = np.array([1, 300, 30000], np.uint16)
    (got,) = burn_onnx.load(data, device=device).run(a=ok)
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, reference(data, {"a": ok})[0])


def test_a_value_the_declared_type_cannot_hold_names_the_output(device):
    """uint16 computes in int32 in burn (no uint16 dtype): 65000 + 65000 does not wrap there, and the
    declared uint16 cannot hold it, so ``run`` refuses instead of returning onnxruntime's wrapped value
    silently differently."""
    a = np.array([1, 300, 65000], np.uint16)
    out = [helper.make_tensor_value_info("total", TensorProto.UINT16, [3])]
    data = make_model([helper.make_node("Add", ["a", "a"], ["total"])], {"a": a}, ["total"], output_infos=out)
    with pytest.raises(
        burn_onnx.OnnxRuntimeError, match=r"output 'total' is declared uint16, but holds 130000"
    ):
        burn_onnx.load(data, device=device).run(a=a)


_PORTABLE = """
import warnings, numpy as np, burn, burn_onnx
from onnx import TensorProto as T, helper
warnings.simplefilter("ignore")
g = helper.make_graph(
    [helper.make_node("Mul", ["a", "a"], ["y"]), helper.make_node("Mul", ["f", "f"], ["z"])], "g",
    [helper.make_tensor_value_info("a", T.INT64, [2]), helper.make_tensor_value_info("f", T.DOUBLE, [2])],
    [helper.make_tensor_value_info("y", T.INT64, [2]), helper.make_tensor_value_info("z", T.DOUBLE, [2])],
)
m = burn_onnx.load(helper.make_model(g).SerializeToString(), device="wgpu")
dev = burn.device("wgpu")
y, z = m(a=np.array([3, -40000]), f=np.array([0.5, 3.0]))
ry, rz = m.run(a=np.array([3, -40000]), f=np.array([0.5, 3.0]))
print(y.dtype.name, z.dtype.name, ry.dtype, rz.dtype, ry.tolist(), rz.tolist())
"""


def test_portable_wgpu_returns_the_declared_64_bit_types():
    """Browser-portable wgpu has no int64/float64: the graph computes in int32/float32 and ``run`` returns
    the declared int64/float64 (fresh process: the mode is read when the first device is built)."""
    if not any(i.name == "wgpu" and i.available for i in burn.backends()):
        pytest.skip("wgpu is not available")
    env = {**os.environ, "BURN_WGPU_PORTABLE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _PORTABLE], capture_output=True, text=True, timeout=300, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "int32 float32 int64 float64 [9, 1600000000] [0.25, 9.0]"
