"""Node-level conformance against onnxruntime: every row of ``_cases.CASES`` on every available backend;
and which pool a values-only MaxPool runs on each backend."""

from __future__ import annotations

import pytest
from burn_onnx_tests._cases import CASES, Case
from burn_onnx_tests._util import check
from onnx import helper


def _run_case(case: Case, device) -> None:
    names = [f"in{i}" if v is not None else "" for i, v in enumerate(case.inputs)]
    while names and not names[-1]:
        names.pop()
    inputs = {n: v for i, (n, v) in enumerate(zip(names, case.inputs)) if n and i not in case.consts}
    consts = {n: v for i, (n, v) in enumerate(zip(names, case.inputs)) if n and i in case.consts}
    outputs = [f"out{i}" for i in range(case.outputs)]
    node = helper.make_node(case.op, names, outputs, **case.attrs)
    expected = None if case.expect is None else case.expect(*[v for v in case.inputs if v is not None])
    atol = case.atol
    if case.id.endswith("-ties") and device.kind == "wgpu":
        # WGSL's f32 division may be 2.5 ulp off (no correctly rounded x / scale): an exact tie can land
        # one step away on some GPUs (seen on an H200). cpu and cuda divide exactly and must match.
        atol = 1.0
    check([node], inputs, outputs, device, consts, case.opset, case.rtol, atol, expected)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op(case: Case, device) -> None:
    _run_case(case, device)


def test_values_only_max_pool_is_the_backends_pool_off_numpy(device, monkeypatch) -> None:
    """A values-only MaxPool runs as tap maximums on numpy arrays, and as the backend's own max_pool
    (one launch) elsewhere, where each tap would be an op of its own; the values agree either way."""
    import burn
    import numpy as np
    from burn_onnx._ops import _nn

    calls = []
    real = _nn.F.max_pool2d
    monkeypatch.setattr(_nn.F, "max_pool2d", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 6)).astype(np.float32)
    node = _nn.Node("MaxPool", "", 17, "", ["x"], ["y"], {"kernel_shape": [2, 2], "strides": [2, 2]})
    y = _nn.max_pool(None, node, burn.tensor(x, device=device))
    assert calls == ([] if device.kind == "ndarray" else [(2, 2)])
    np.testing.assert_array_equal(y.numpy(), x.reshape(1, 3, 3, 2, 3, 2).max(axis=(3, 5)))
