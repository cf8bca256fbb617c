"""Models whose outputs are declared uint8, int8 or int16 give that dtype on every device (wgpu stores
those dtypes widened and reads them back as declared), with onnxruntime's values exactly."""

from __future__ import annotations

import numpy as np
import pytest
from burn_onnx_tests._util import make_model, reference, run_burn
from onnx import TensorProto, helper

F = np.array([1.7, 200.2, 255.0, 3.0, -0.6, 127.4], np.float32)
MODELS = {
    "cast_to_uint8": (
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.UINT8)],
        {"x": F},
        {},
        TensorProto.UINT8,
    ),
    "add_int16_wraps": (
        [helper.make_node("Add", ["a", "b"], ["y"])],
        {"a": np.array([30000, 5, -7, -32768], np.int16), "b": np.array([30000, 5, -7, -1], np.int16)},
        {},
        TensorProto.INT16,
    ),
    "mul_uint8_wraps": (
        [helper.make_node("Mul", ["a", "a"], ["y"])],
        {"a": np.array([16, 200, 3, 255], np.uint8)},
        {},
        TensorProto.UINT8,
    ),
    "quantize_linear_int8": (
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
        {"x": np.array([1.7, 200.0, -255.0, 3.0, -0.26, 0.05], np.float32)},
        {"s": np.array(0.1, np.float32), "z": np.array(3, np.int8)},
        TensorProto.INT8,
    ),
    "cast_int32_to_int8_wraps": (
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT8)],
        {"x": np.array([300, -129, 127, -128, 65535], np.int32)},
        {},
        TensorProto.INT8,
    ),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_narrow_int_outputs_keep_the_declared_dtype(name, device):
    nodes, feeds, inits, elem = MODELS[name]
    n = len(next(iter(feeds.values())))
    out = [helper.make_tensor_value_info("y", elem, [n])]
    model = make_model(nodes, feeds, ["y"], initializers=inits, output_infos=out)
    (want,) = reference(model, feeds)
    (got,) = run_burn(model, feeds, device)
    assert got.dtype == want.dtype == helper.tensor_dtype_to_np_dtype(elem)
    np.testing.assert_array_equal(got, want)
