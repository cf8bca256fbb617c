"""``burn.custom`` on the numpy backend: definition, calls, shape/dtype rules, fallbacks and their
one-time note, autodiff (user and composed backward, ``check_grad``), fusion streams (a call replayed;
an element-wise expression op fused into its neighbours' kernel), ``burn.ir`` capture, bytes and replay,
and plugin registration. References: numpy float64 and finite differences."""

from __future__ import annotations

import warnings

import burn
import numpy as np
import pytest
from burn.custom import CustomOpError
from burn.plugins import hookimpl, register_plugin, unregister_plugin

RNG = np.random.default_rng(7)


def _linear_relu_ref(x, w, b):
    return np.maximum(x @ w + b, 0)


def _backward(ctx, g):
    x, w, _ = ctx.inputs
    gz = g * (ctx.output > 0).cast(g.dtype)
    return [gz @ w.transpose(0, 1), x.transpose(0, 1) @ gz, gz.sum(0)]


@pytest.fixture
def lr_op():
    op = burn.custom.op(
        "test_linear_relu",
        shape=lambda x, w, b: (x[0], w[1]),
        kernels={"cpu": lambda x, w, b: _linear_relu_ref(x, w, b).astype(x.dtype)},
        compose=lambda x, w, b: (x @ w + b).relu(),
        backward=_backward,
    )
    yield op
    burn.custom.unregister(op.name)


def _inputs(dtype=np.float32):
    return [RNG.standard_normal(s).astype(dtype) for s in ((5, 4), (4, 3), (3,))]


def test_forward_on_cpu_matches_numpy(lr_op):
    xs = _inputs(np.float64)
    y = lr_op(*(burn.tensor(a, dtype=burn.float64) for a in xs))
    assert y.shape == (5, 3) and y.dtype is burn.float64
    np.testing.assert_allclose(y.numpy(), _linear_relu_ref(*xs), rtol=1e-12)
    assert burn.custom.get("test_linear_relu") is lr_op and "test_linear_relu" in burn.custom.names()


def test_user_backward_and_composed_backward_match_finite_differences(lr_op):
    xs = _inputs(np.float64)
    report = burn.custom.check_grad(lr_op, *xs)
    assert max(report.max_abs_err) < 1e-6
    composed = burn.custom.op(
        "test_linear_relu_composed",
        shape=lambda x, w, b: (x[0], w[1]),
        kernels={"cpu": lambda x, w, b: _linear_relu_ref(x, w, b)},
        compose=lambda x, w, b: (x @ w + b).relu(),
    )
    try:
        assert max(burn.custom.check_grad(composed, *xs).max_abs_err) < 1e-6
        adev = burn.device("cpu", autodiff=True)
        grads = []
        for op in (lr_op, composed):
            ts = [burn.tensor(a, dtype=burn.float64, device=adev).require_grad() for a in xs]
            g = (op(*ts) * 3.0).sum().backward()
            grads.append([t.grad(g).numpy() for t in ts])
        for a, b in zip(*grads):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    finally:
        burn.custom.unregister(composed.name)


def test_check_grad_catches_a_wrong_backward():
    wrong = burn.custom.op(
        "test_wrong_grad", kernels={"cpu": lambda x: x**3}, backward=lambda c, g: [g * 2 * c.inputs[0]]
    )
    try:
        with pytest.raises(CustomOpError, match="test_wrong_grad: input 0"):
            burn.custom.check_grad(wrong, np.array([1.0, 2.0]))
    finally:
        burn.custom.unregister(wrong.name)


def test_no_gradient_is_a_clear_error():
    op = burn.custom.op("test_no_grad", kernels={"cpu": lambda x: x + 1})
    try:
        x = burn.tensor([1.0], device=burn.device("cpu", autodiff=True)).require_grad()
        loss = op(x).sum()
        with pytest.raises(CustomOpError, match="test_no_grad: no gradient"):
            loss.backward()
    finally:
        burn.custom.unregister(op.name)


def test_numpy_fallback_notes_once_and_composition_needs_no_note(lr_op, monkeypatch):
    """A backend with no kernel (the fusion decorator's ReferenceRuntime backend here stands in via a
    renamed numpy backend) runs compose silently, else the numpy function with one note."""
    only_np = burn.custom.op("test_only_numpy", kernels={"cpu": lambda x: x * 2})
    try:
        b = burn.device("cpu").backend
        monkeypatch.setattr(type(b), "name", "elsewhere")
        x = np.ones(3, np.float32)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert burn.custom.dispatch(b, "test_only_numpy", [x], ()).tolist() == [2.0] * 3
            burn.custom.dispatch(b, "test_only_numpy", [x], ())
            y = burn.custom.dispatch(b, "test_linear_relu", [a for a in _inputs()], ())
        notes = [str(w.message) for w in seen]
        assert len(notes) == 1 and "test_only_numpy" in notes[0] and "through the host" in notes[0]
        assert y.shape == (5, 3)
    finally:
        burn.custom.unregister(only_np.name)


def test_errors_name_the_op(lr_op):
    with pytest.raises(CustomOpError, match="'test_nothing_here' is not registered"):
        burn.custom.get("test_nothing_here")
    with pytest.raises(TypeError, match="attribute alpha"):
        lr_op(*(burn.tensor(a) for a in _inputs()), alpha=[1])
    bad_shape = burn.custom.op("test_bad_shape", shape=lambda x: (7,), kernels={"cpu": lambda x: x})
    try:
        with pytest.raises(CustomOpError, match="test_bad_shape: the numpy function returned shape"):
            bad_shape(burn.tensor([1.0, 2.0]))
    finally:
        burn.custom.unregister(bad_shape.name)
    with pytest.raises(CustomOpError, match="elementwise .* unknown function 'frobnicate'"):
        burn.custom.elementwise("test_bad_expr", "frobnicate(x)")
    with pytest.raises(CustomOpError, match="give at least one kernel"):
        burn.custom.op("test_empty")


def test_fusion_records_the_op_as_a_replayed_call(lr_op):
    dev = burn.device("cpu", fusion=True)  # shared with other tests: its counters are compared
    xs = _inputs()
    want = np.exp(-_linear_relu_ref(*xs))
    before = dict(dev.backend.stats)
    for _ in range(4):  # the same stream each step: planned once, then replayed
        ts = [burn.tensor(a, device=dev) for a in xs]
        got = (-lr_op(*ts)).exp().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)
    grew = {k: dev.backend.stats[k] - before.get(k, 0) for k in ("calls", "replays", "plans")}
    assert grew["calls"] >= 4 and grew["replays"] >= 3 and grew["plans"] <= 1, grew


def test_elementwise_op_fuses_into_its_neighbours():
    """On ``cpu+fusion`` the expression's ops join the stream's element-wise chain: one planned kernel
    for the five ops (mul, mul, sigmoid, mul, add), results equal to numpy and to the unfused device."""
    swish = burn.custom.elementwise("test_swish", "x * sigmoid(beta * x)", params=("beta",))
    try:
        x = RNG.standard_normal((64,)).astype(np.float32)
        want = (2 * x) * (1 / (1 + np.exp(-1.5 * (2 * x)))) + 1
        plain = (swish(burn.tensor(x) * 2, beta=1.5) + 1).numpy()
        dev = burn.device("cpu", fusion=True)
        before = dict(dev.backend.stats)
        fused = (swish(burn.tensor(x, device=dev) * 2, beta=1.5) + 1).numpy()
        after = dev.backend.stats
        np.testing.assert_allclose(fused, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(fused, plain)
        assert after["ops"] - before["ops"] == 5 and after["kernels"] - before["kernels"] == 1
        assert swish.inputs == ("x",) and swish.params == ("beta",)
    finally:
        burn.custom.unregister("test_swish")


def test_ir_captures_serialises_and_replays_the_op(lr_op):
    shapes = {"x": ((5, 4), "float32"), "w": ((4, 3), "float32"), "b": ((3,), "float32")}
    scale = burn.custom.op(
        "test_scale", kernels={"cpu": lambda x, by, how: x * by}, dtype=lambda x, by, how: burn.float64
    )
    try:
        g = burn.ir.capture(lambda x, w, b: scale(lr_op(x, w, b), by=0.5, how="t").sum(1), shapes)
        assert [str(op.kind) for op in g.ops] == ["custom", "custom", "sum"]
        assert g.ops[0].args[0] == "test_linear_relu" and g.ops[0].outputs[0].shape == (5, 3)
        assert g.ops[1].args[2] == (("by", 0.5), ("how", "t")) and g.ops[1].outputs[0].dtype is burn.float64
        back = burn.ir.Graph.from_bytes(g.to_bytes())
        assert str(back) == str(g)
        xs = _inputs()
        out = burn.ir.replay(back, [burn.tensor(a) for a in xs])
        np.testing.assert_allclose(out.numpy(), 0.5 * _linear_relu_ref(*xs).sum(1), rtol=1e-5)
    finally:
        burn.custom.unregister(scale.name)


def test_plugins_register_custom_ops_through_the_hook():
    op = burn.custom.op("test_plugged", kernels={"cpu": lambda x: x - 1}, register=False)

    class Plugin:
        @hookimpl
        def burn_register_custom_ops(self, register):
            register(op)

    plugin = Plugin()
    register_plugin(plugin, "test-custom-ops")
    try:
        assert burn.custom.get("test_plugged") is op
        assert op(burn.tensor([3.0])).tolist() == [2.0]
        with pytest.raises(CustomOpError, match="already registered by a plugin"):
            burn.custom.op("test_plugged", kernels={"cpu": lambda x: x})
    finally:
        unregister_plugin(plugin)
    with pytest.raises(CustomOpError):
        burn.custom.get("test_plugged")


def test_elementwise_expressions_fold_numbers_on_the_inputs_device_and_broadcast():
    ops = [
        burn.custom.elementwise("test_consts", "x * (2 ** 0.5) + exp(0.0) - (-1) + where(x > 0, 1.0, -1.0)"),
        burn.custom.elementwise("test_params_only", "k * 2", inputs=("x",), params=("k",)),
        burn.custom.elementwise("test_two_inputs", "maximum(a, b) + (a >= b)", inputs=("a", "b")),
    ]
    try:
        dev = burn.device("cpu", fusion=True)  # a device other than the default one
        x = np.array([1.0, -2.0], np.float32)
        got = ops[0](burn.tensor(x, device=dev)).numpy()
        np.testing.assert_allclose(got, x * np.sqrt(2) + 2 + np.where(x > 0, 1, -1), rtol=1e-6)
        assert ops[1](burn.tensor(x), k=3.0).tolist() == [6.0, 6.0]
        a, b = np.array([1.0, 5.0], np.float32), np.array([[2.0], [0.0]], np.float32)
        got = ops[2](burn.tensor(a), burn.tensor(b)).numpy()
        np.testing.assert_array_equal(got, np.maximum(a, b) + (a >= b))
        with pytest.raises(TypeError, match="expected attributes"):
            ops[1](burn.tensor(x))
    finally:
        for op in ops:
            burn.custom.unregister(op.name)
