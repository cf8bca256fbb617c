"""onnx's own "light" model tests (opset 9, IR 3 files with the weights replaced by ConstantOfShape
constants), run through burn_onnx.load on cpu with the input onnx's backend test runner generates, against
the output shipped next to each model (onnxruntime reproduces those outputs exactly).

The three cheapest run here (about 12 s together on two CPU cores); shufflenet, inception_v2, zfnet512,
densenet121, resnet50 and vgg19 also match their shipped outputs (bit for bit, densenet121 within 6e-8)
but take 6-25 s each, too long for every CI run.

SqueezeNet ends in a 1x1 conv, global average pool and Softmax over logits of about 9.5e9 that are equal
in exact arithmetic (every weight is 0.02). A float32 GEMM may round identical rows one ulp (1024 at that
size) apart, and Softmax turns one ulp into e^1024: the shipped 0.001 everywhere holds only where every
row is rounded alike (onnxruntime's kernel), so SqueezeNet is compared up to the Softmax input."""

from __future__ import annotations

from pathlib import Path

import burn
import numpy as np
import onnx
import pytest
from burn_onnx_tests._util import reference, run_burn
from onnx import numpy_helper

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The inputs onnx's backend test runner makes for light models: ``arange(n).reshape(shape) / n``
    (``Runner.generate_dummy_data(random=False)``) for each graph input that is not an initializer."""
    from onnx.backend.test.runner import Runner

    inits = {i.name for i in model.graph.initializer}
    return {
        x.name: Runner.generate_dummy_data(x, seed=0, random=False)
        for x in model.graph.input
        if x.name not in inits
    }


def _load(name: str) -> onnx.ModelProto:
    path = LIGHT / f"light_{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is not in this onnx install")
    return onnx.load(str(path))


@pytest.mark.parametrize("name", ["bvlc_alexnet", "inception_v1"])
def test_light_model_matches_shipped_output(name: str) -> None:
    model = _load(name)
    feeds = _feeds(model)
    shipped = numpy_helper.to_array(onnx.load_tensor(str(LIGHT / f"light_{name}_output_0.pb")))
    (got,) = run_burn(model.SerializeToString(), feeds, burn.device("cpu"))
    # the tolerances onnx's runner applies to light models
    np.testing.assert_allclose(got, shipped, rtol=1e-3, atol=1e-7)


def test_light_squeezenet_up_to_softmax_matches_onnxruntime() -> None:
    model = _load("squeezenet")
    softmax = model.graph.node[-1]
    assert softmax.op_type == "Softmax"
    logits = softmax.input[0]
    model.graph.node.pop()  # the graph now ends at the pooled logits
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info(logits))
    data = model.SerializeToString()
    feeds = _feeds(model)
    (got,) = run_burn(data, feeds, burn.device("cpu"))
    (want,) = reference(data, feeds)
    assert got.shape == want.shape == (1, 1000, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.slow
def test_light_alexnet_with_a_weight_over_one_binding(device: burn.Device) -> None:
    """AlexNet's fc6 weight (9216 x 4096 float32, 151 MB) is over lavapipe's 128 MiB storage binding:
    wgpu binds it in windows and multiplies in blocks (burn_wgpu._windows); about a minute on lavapipe."""
    if device.backend.name == "ndarray":
        pytest.skip("cpu runs the light models above")
    model = _load("bvlc_alexnet")
    feeds = _feeds(model)
    shipped = numpy_helper.to_array(onnx.load_tensor(str(LIGHT / "light_bvlc_alexnet_output_0.pb")))
    (got,) = run_burn(model.SerializeToString(), feeds, device)
    np.testing.assert_allclose(got, shipped, rtol=1e-3, atol=1e-7)
