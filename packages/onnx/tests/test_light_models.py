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

import os
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


# ZFNet-512 and VGG-19 pass too (2.5 and 13 minutes on lavapipe here), too long for every CI run:
# BURN_ONNX_LIGHT_ALL=1 adds them
OVER_ONE_BINDING = ["bvlc_alexnet"] + (["zfnet512", "vgg19"] if os.environ.get("BURN_ONNX_LIGHT_ALL") else [])


@pytest.mark.slow
@pytest.mark.parametrize("name", OVER_ONE_BINDING)
def test_light_model_with_a_weight_over_one_binding(name: str, device: burn.Device) -> None:
    """AlexNet's fc6 weight (9216 x 4096 float32, 151 MB), ZFNet-512's and VGG-19's (411 MB) are over
    lavapipe's 128 MiB storage binding: wgpu binds them in windows and multiplies in blocks
    (burn_wgpu._split). On lavapipe, two busy CPU cores: AlexNet about a minute, ZFNet-512 2.5 min,
    VGG-19 about 13 min (fc6: 25088 x 4096)."""
    if device.backend.name == "ndarray":
        pytest.skip("cpu runs the light models above")
    model = _load(name)
    feeds = _feeds(model)
    shipped = numpy_helper.to_array(onnx.load_tensor(str(LIGHT / f"light_{name}_output_0.pb")))
    (got,) = run_burn(model.SerializeToString(), feeds, device)
    np.testing.assert_allclose(got, shipped, rtol=1e-3, atol=1e-7)


def _over_one_binding() -> bytes:
    """Conv (weight 2048 x 2048 x 3 x 3, 151 MB), Flatten, Gemm (weight 1100 x 32768 transposed, 144 MB)
    and a ReduceMean over the Gemm weight: each over lavapipe's and WebGPU's 128 MiB binding."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(3)
    conv_w = rng.standard_normal((2048, 2048, 3, 3), dtype=np.float32) * np.float32(0.01)
    fc_w = rng.standard_normal((1100, 2048 * 16), dtype=np.float32) * np.float32(0.01)
    nodes = [
        helper.make_node("Conv", ["x", "conv_w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w"], ["y"], transB=1),
        helper.make_node("ReduceMean", ["fc_w"], ["m"], axes=[1], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "over_one_binding",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2048, 4, 4])],
        [helper.make_empty_tensor_value_info("y"), helper.make_empty_tensor_value_info("m")],
        [numpy_helper.from_array(conv_w, "conv_w"), numpy_helper.from_array(fc_w, "fc_w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.mark.slow
def test_conv_gemm_and_reduce_weights_over_one_binding(device: burn.Device) -> None:
    """A synthetic model whose conv and FC weights are each over 128 MiB, against burn's cpu backend;
    on wgpu the conv splits its output channels, the Gemm multiplies in blocks and the ReduceMean reads
    rows through windows (burn_wgpu._split). About a minute on lavapipe."""
    if device.backend.name == "ndarray":
        pytest.skip("the cpu backend is the reference here")
    data = _over_one_binding()
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 2048, 4, 4), dtype=np.float32)}
    want = run_burn(data, feeds, burn.device("cpu"))
    got = run_burn(data, feeds, device)
    assert [g.shape for g in got] == [(1, 1100), (1100,)]
    for g, w in zip(got, want):  # sums of 18432 and 32768 float32 products
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
