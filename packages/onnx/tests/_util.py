"""Building small ONNX models with onnx.helper and comparing burn-onnx with onnxruntime."""

from __future__ import annotations

import warnings
from typing import Any

import burn
import burn_onnx
import numpy as np
import onnx
from onnx import helper, numpy_helper

ort = __import__("pytest").importorskip("onnxruntime")


def value_info(name: str, arr: np.ndarray | None = None) -> onnx.ValueInfoProto:
    if arr is None:
        return helper.make_empty_tensor_value_info(name)
    elem = helper.np_dtype_to_tensor_dtype(arr.dtype)
    return helper.make_tensor_value_info(name, elem, list(arr.shape))


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    outputs: list[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    ir_version: int | None = None,
    output_infos: list[onnx.ValueInfoProto] | None = None,
) -> bytes:
    graph = helper.make_graph(
        nodes,
        "test",
        [value_info(n, a) for n, a in inputs.items()],
        output_infos or [value_info(n) for n in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version or min(onnx.IR_VERSION, 10 if opset > 21 else 8 if opset <= 15 else 9)
    if opset >= 21:
        model.ir_version = 10
    return model.SerializeToString()


def reference(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def run_burn(model: bytes, feeds: dict[str, np.ndarray], device: burn.Device) -> list[np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float64 -> float32 on wgpu is expected here
        m = burn_onnx.load(model, device=device)
        out = m(**feeds)
    outs = out if isinstance(out, tuple) else (out,)
    return [_host(o) for o in outs]


def _host(v: Any) -> Any:
    if isinstance(v, list):
        return [_host(x) for x in v]
    return v.numpy()


def assert_close(got: Any, want: Any, rtol: float, atol: float, what: str = "") -> None:
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), what
        for g, w in zip(got, want):
            assert_close(g, w, rtol, atol, what)
        return
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != reference {want.shape}"
    if want.dtype == np.bool_:
        np.testing.assert_array_equal(got.astype(bool), want, err_msg=what)
    elif want.dtype.kind in "iu" and atol >= 1:  # whole steps of slack, which the caller justifies
        steps = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert steps.max(initial=0) <= atol, f"{what}: off by up to {steps.max()} steps (allowed {atol})"
    elif want.dtype.kind in "iu":
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64), err_msg=what)
    else:
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol, err_msg=what
        )


def check(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, np.ndarray],
    outputs: list[str],
    device: burn.Device,
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    expected: list[np.ndarray] | None = None,
) -> None:
    """Build the model, run onnxruntime (or take ``expected``) and burn-onnx on ``device``, compare every
    output."""
    model = make_model(nodes, inputs, outputs, initializers, opset)
    want = reference(model, inputs) if expected is None else expected
    got = run_burn(model, inputs, device)
    if device.backend.name != "ndarray":  # float32 GPUs: a little more slack
        rtol, atol = max(rtol, 1e-3), max(atol, 1e-4)
    for name, g, w in zip(outputs, got, want):
        assert_close(g, w, rtol, atol, f"output {name!r}")
