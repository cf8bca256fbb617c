"""``load(optimize=True)`` folding a Clip with constant bounds into the conv whose result it alone reads
(MobileNet's ReLU6: ``FusedConv`` with ``activation="Clip"``): plain, 1x1 and depthwise convs, after a
BatchNormalization fold, bounds as opset-11 inputs (one omitted) and as opset-10 attributes; and the
cases that must keep the Clip node (a bound computed at run time, a conv result read twice, a graph
output). Each model against onnxruntime and against the same model loaded with ``optimize=False``,
float32 within 1e-4 relative / 1e-5 absolute (1e-3 / 1e-4 on GPU backends), on every device and
on cpu with the compiled kernels off (``BURN_CPU_NATIVE=0``)."""

from __future__ import annotations

import burn
import burn_onnx
import numpy as np
import pytest
from burn_onnx_tests._util import assert_close, make_model, reference
from onnx import helper

R = np.random.default_rng(11)


def _f(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (R.standard_normal(shape) * scale).astype(np.float32)


def _tol(device: burn.Device) -> tuple[float, float]:
    return (1e-4, 1e-5) if device.backend.name == "ndarray" else (1e-3, 1e-4)


def _check(model: bytes, feeds: dict[str, np.ndarray], device: burn.Device) -> burn_onnx.OnnxModel:
    want = reference(model, feeds)
    rtol, atol = _tol(device)
    fast = burn_onnx.load(model, device=device)
    plain = burn_onnx.load(model, device=device, optimize=False)
    for m in (fast, plain, fast, fast):  # later calls of ``fast`` replay its plan
        out = m(**feeds)
        outs = out if isinstance(out, tuple) else (out,)
        for got, w in zip(outs, want):
            assert_close(got.numpy(), w, rtol, atol)
    return fast


def _ops(m: burn_onnx.OnnxModel) -> list[str]:
    return [n.op_type for n in m._runner.graph.nodes]


def _block(opset: int) -> tuple[list, dict[str, np.ndarray]]:
    """A MobileNetV2 inverted residual: 1x1 expand + ReLU6, depthwise 3x3/2 + ReLU6 (BN folded), 1x1."""
    inits = {
        "we": _f(24, 8, 1, 1, scale=0.4),
        "be": _f(24),
        "wd": _f(24, 1, 3, 3, scale=0.5),
        "s": (R.random(24) + 0.5).astype(np.float32),
        "sh": _f(24, scale=0.1),
        "mu": _f(24, scale=0.1),
        "var": (R.random(24) + 0.5).astype(np.float32),
        "wp": _f(8, 24, 1, 1, scale=0.3),
    }
    if opset >= 11:
        inits.update(lo=np.array(0.0, np.float32), hi=np.array(6.0, np.float32))
        clip_a = {"inputs": ["lo", "hi"]}
        clip_b = {"inputs": ["", "hi"]}  # no lower bound
    else:
        clip_a = {"inputs": [], "min": 0.0, "max": 6.0}
        clip_b = {"inputs": [], "max": 6.0}

    def clip(x: str, out: str, spec: dict) -> object:
        attrs = {k: v for k, v in spec.items() if k != "inputs"}
        return helper.make_node("Clip", [x, *spec["inputs"]], [out], **attrs)

    nodes = [
        helper.make_node("Conv", ["x", "we", "be"], ["e"]),
        clip("e", "e6", clip_a),
        helper.make_node("Conv", ["e6", "wd"], ["d"], group=24, strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["d", "s", "sh", "mu", "var"], ["dn"]),
        clip("dn", "d6", clip_b),
        helper.make_node("Conv", ["d6", "wp"], ["y"]),
    ]
    return nodes, inits


@pytest.mark.parametrize("opset", [17, 10])
def test_relu6_folds_into_the_convs(device, opset):
    nodes, inits = _block(opset)
    feeds = {"x": _f(2, 8, 13, 12)}
    m = _check(make_model(nodes, feeds, ["y"], inits, opset=opset), feeds, device)
    assert _ops(m) == ["FusedConv", "FusedConv", "FusedConv"]  # the last with nothing folded
    assert m.optimized["clip"] == 2
    assert [n.attrs.get("clip") for n in m._runner.graph.nodes] == [(0.0, 6.0), (-np.inf, 6.0), None]


def test_relu6_fold_without_compiled_kernels(monkeypatch):
    monkeypatch.setenv("BURN_CPU_NATIVE", "0")
    nodes, inits = _block(17)
    feeds = {"x": _f(1, 8, 9, 9)}
    _check(make_model(nodes, feeds, ["y"], inits), feeds, burn.device("cpu"))


def test_clips_that_must_stay(device):
    inits = {"w": _f(4, 3, 3, 3, scale=0.3), "w2": _f(4, 4, 1, 1), "lo": np.array(-0.5, np.float32)}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["a", "lo", "hmax"], ["a6"]),  # the upper bound is computed at run time
        helper.make_node("ReduceMax", ["x"], ["hmax"], keepdims=0),
        helper.make_node("Conv", ["a6", "w2"], ["b"]),
        helper.make_node("Clip", ["b", "lo"], ["b6"]),  # b is read twice
        helper.make_node("Add", ["b", "b6"], ["c"]),
        helper.make_node("Conv", ["c", "w2"], ["d"]),
        helper.make_node("Clip", ["d", "lo"], ["y"]),  # d is a graph output
    ]
    feeds = {"x": _f(1, 3, 6, 6)}
    m = _check(make_model(nodes, feeds, ["y", "d"], inits), feeds, device)
    assert m.optimized["clip"] == 0
    assert _ops(m).count("Clip") + _ops(m).count("FusedChain") >= 3
