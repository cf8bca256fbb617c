"""The inference passes of ``burn_onnx.load(optimize=True)``: Conv/ConvTranspose/Gemm + BatchNormalization
folding, Conv/Add + Relu fusion, residual Add + Relu and tiling MaxPool into the conv, Identity/Dropout
removal, constant folding, the per-signature plans, and the values-only MaxPool; each against
onnxruntime (the reference) and against the same model loaded with ``optimize=False``. Fine-tuning
through a folded node is checked against the unfolded graph's gradients and a finite difference.

Tolerances: float32 results 1e-4 relative / 1e-5 absolute (1e-3 / 1e-4 on GPU backends), as test_ops;
gradients 1e-4 relative between the folded and unfolded graphs (the same math in another order), the
finite difference 2e-2 relative (float32, step 1e-2)."""

from __future__ import annotations

import burn
import burn_onnx
import numpy as np
import pytest
from burn_onnx_tests import _builders as B
from burn_onnx_tests._util import assert_close, make_model, reference
from onnx import TensorProto, helper

R = np.random.default_rng(5)


def _f(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (R.standard_normal(shape) * scale).astype(np.float32)


def _bn(c: int, prefix: str) -> dict[str, np.ndarray]:
    return {
        f"{prefix}_s": (R.random(c) + 0.5).astype(np.float32),
        f"{prefix}_b": _f(c, scale=0.1),
        f"{prefix}_m": _f(c, scale=0.1),
        f"{prefix}_v": (R.random(c) + 0.5).astype(np.float32),
    }


def _bn_node(x: str, prefix: str, out: str) -> object:
    names = [f"{prefix}_{k}" for k in "sbmv"]
    return helper.make_node("BatchNormalization", [x, *names], [out], epsilon=1e-3)


def _tol(device: burn.Device) -> tuple[float, float]:
    return (1e-4, 1e-5) if device.backend.name == "ndarray" else (1e-3, 1e-4)


def _compare(model: bytes, feeds: dict[str, np.ndarray], device: burn.Device) -> burn_onnx.OnnxModel:
    """Run ``model`` optimised and not on ``device``; both must match onnxruntime. Returns the optimised."""
    want = reference(model, feeds)
    rtol, atol = _tol(device)
    fast = burn_onnx.load(model, device=device)
    plain = burn_onnx.load(model, device=device, optimize=False)
    for m in (fast, plain, fast):  # the second call of ``fast`` replays its plan
        out = m(**feeds)
        outs = out if isinstance(out, tuple) else (out,)
        for got, w in zip(outs, want):
            assert_close(got.numpy(), w, rtol, atol)
    return fast


def _ops(m: burn_onnx.OnnxModel) -> list[str]:
    return [n.op_type for n in m._runner.graph.nodes]


# ------------------------------------------------------------------ batch-norm folding


def test_conv_bn_relu_folds_into_one_node(device):
    inits = {"w": _f(6, 3, 3, 3, scale=0.3), "cb": _f(6), **_bn(6, "bn")}
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
        _bn_node("c", "bn", "n"),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    feeds = {"x": _f(2, 3, 7, 7)}
    m = _compare(make_model(nodes, feeds, ["y"], inits), feeds, device)
    assert _ops(m) == ["FusedConv"]
    assert m.optimized["batch_norm"] == 1 and m.optimized["relu"] == 1
    assert set(m.weights) == set(inits)  # the params keep the file's names


def test_conv_without_bias_bn_and_an_asymmetric_pad(device):
    inits = {"w": _f(4, 2, 2, 3, scale=0.3), **_bn(4, "bn")}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[0, 1, 1, 0], strides=[2, 1]),
        _bn_node("c", "bn", "y"),
    ]
    feeds = {"x": _f(3, 2, 6, 5)}
    m = _compare(make_model(nodes, feeds, ["y"], inits), feeds, device)
    assert _ops(m) == ["FusedConv"]


@pytest.mark.parametrize("group", [1, 2])
def test_conv_transpose_bn_folds_per_output_channel(device, group):
    inits = {"w": _f(4, 6 // group, 3, 3, scale=0.3), "cb": _f(6), **_bn(6, "bn")}
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w", "cb"], ["c"], strides=[2, 2], group=group),
        _bn_node("c", "bn", "y"),
    ]
    feeds = {"x": _f(2, 4, 4, 5)}
    m = _compare(make_model(nodes, feeds, ["y"], inits), feeds, device)
    assert _ops(m) == ["FusedConv"]


@pytest.mark.parametrize(
    "trans_b, alpha, beta, bias_shape",
    [(1, 1.0, 1.0, (5,)), (0, 0.5, 2.0, (1, 5)), (1, 2.0, 0.5, (3, 5)), (0, 1.0, 1.0, None)],
)
def test_gemm_bn_folds_alpha_beta_and_the_bias(device, trans_b, alpha, beta, bias_shape):
    inits = {"b": _f(*((5, 4) if trans_b else (4, 5)), scale=0.5), **_bn(5, "bn")}
    ins = ["x", "b"]
    if bias_shape is not None:
        inits["c"] = _f(*bias_shape)
        ins.append("c")
    nodes = [
        helper.make_node("Gemm", ins, ["g"], transB=trans_b, alpha=alpha, beta=beta),
        _bn_node("g", "bn", "y"),
    ]
    feeds = {"x": _f(3, 4)}
    m = _compare(make_model(nodes, feeds, ["y"], inits), feeds, device)
    assert _ops(m) == ["FusedGemm"]


def test_bn_with_a_computed_input_or_a_shared_conv_output_is_not_folded(device):
    inits = {"w": _f(4, 3, 1, 1), **_bn(4, "bn"), "two": np.float32(2.0)}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Mul", ["bn_s", "two"], ["scale2"]),  # computed from a param: not foldable
        helper.make_node("BatchNormalization", ["c", "scale2", "bn_b", "bn_m", "bn_v"], ["n"]),
        helper.make_node("Conv", ["x", "w"], ["c2"]),
        _bn_node("c2", "bn", "n2"),
        helper.make_node("Add", ["c2", "n2"], ["y2"]),  # c2 has two readers: the BN stays
    ]
    feeds = {"x": _f(2, 3, 4, 4)}
    m = _compare(make_model(nodes, feeds, ["n", "y2"], inits), feeds, device)
    assert m.optimized["batch_norm"] == 0
    assert _ops(m).count("BatchNormalization") == 2


def test_the_resnet_model_fuses_every_bn_and_relu(device):
    feeds = {"x": _f(2, 3, 16, 16)}
    m = _compare(B.resnet(17), feeds, device)
    assert "BatchNormalization" not in _ops(m) and "Relu" not in _ops(m)
    assert m.optimized["batch_norm"] == 6 and m.optimized["residual"] == 2 and "AddRelu" not in _ops(m)


# ------------------------------------------------------------------ conv epilogues: residual add, max pool


@pytest.mark.parametrize(
    "pool, fused",
    [
        ({"kernel_shape": [2, 2], "strides": [2, 2]}, True),
        ({"kernel_shape": [3, 2], "strides": [3, 2]}, True),  # floor mode drops a row
        ({"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, False),
        ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, False),  # overlapping
    ],
    ids=["2x2", "3x2-floor", "ceil", "3x3s2p1"],
)
def test_conv_relu_max_pool_fuses_when_the_windows_tile(device, pool, fused):
    """Conv + BN + Relu + MaxPool: one node when the pool's windows tile the conv's output (the numpy
    backend pools the GEMM's result), and on every call of the plan (the second replays it)."""
    inits = {"w": _f(6, 3, 3, 3, scale=0.3), "cb": _f(6), **_bn(6, "bn")}
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
        _bn_node("c", "bn", "n"),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["y"], **pool),
    ]
    feeds = {"x": _f(2, 3, 20, 19)}
    m = _compare(make_model(nodes, feeds, ["y"], inits), feeds, device)
    assert m.optimized["pool"] == int(fused)
    assert _ops(m) == (["FusedConv"] if fused else ["FusedConv", "MaxPool"])


def test_a_conv_output_read_twice_keeps_its_max_pool_and_add(device):
    """The conv's result is also a graph output: neither the pool nor the add may take it over."""
    inits = {"w": _f(4, 4, 3, 3, scale=0.3)}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Add", ["c", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    feeds = {"x": _f(2, 4, 18, 18)}
    m = _compare(make_model(nodes, feeds, ["c", "p", "y"], inits), feeds, device)
    assert m.optimized["pool"] == 0 and m.optimized["residual"] == 0


@pytest.mark.parametrize("other", [(2, 6, 18, 18), (1, 6, 1, 1), (6, 1, 1)], ids=["same", "bcast", "bcast3"])
def test_residual_add_relu_goes_into_the_conv(device, other):
    """relu(conv(x) + r): the add moves into the conv's node; an r that broadcasts (another shape than
    the conv's output) takes the plain add there, with numpy's broadcasting."""
    inits = {"w": _f(6, 6, 3, 3, scale=0.3), "cb": _f(6), **_bn(6, "bn")}
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
        _bn_node("c", "bn", "n"),
        helper.make_node("Add", ["r", "n"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    feeds = {"x": _f(2, 6, 18, 18), "r": _f(*other)}
    m = _compare(make_model(nodes, feeds, ["y"], inits), feeds, device)
    assert m.optimized["residual"] == 1 and _ops(m) == ["FusedConv"]


def test_fine_tuning_through_fused_epilogues_matches_the_plain_graph():
    """A block with BN folding, a residual add and a max pool fused: on an autodiff device the node
    takes the plain ops, so loss and gradients match the unoptimised graph."""
    inits = {"w": _f(4, 4, 3, 3, scale=0.3), "cb": _f(4), **_bn(4, "bn"), "w2": _f(4, 4, 3, 3, scale=0.3)}
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
        _bn_node("c", "bn", "n"),
        helper.make_node("Add", ["n", "x"], ["s"]),
        helper.make_node("Relu", ["s"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    x = _f(2, 4, 18, 18)
    model = make_model(nodes, {"x": x}, ["y"], inits)
    assert burn_onnx.load(model, device="cpu").optimized["pool"] == 1
    loss, fast = _grads(model, x, True, names=("w", "cb", "bn_s", "w2"))
    plain_loss, plain = _grads(model, x, False, names=("w", "cb", "bn_s", "w2"))
    assert loss == pytest.approx(plain_loss, rel=1e-5)
    for name in fast:
        np.testing.assert_allclose(fast[name], plain[name], rtol=1e-4, atol=1e-6, err_msg=name)


# ------------------------------------------------------------------ passthrough, constants, plans


def test_identity_and_dropout_are_dropped_but_graph_outputs_stay(device):
    inits = {"ratio": np.float32(0.3), "train": np.array(False)}
    nodes = [
        helper.make_node("Identity", ["x"], ["a"]),
        helper.make_node("Dropout", ["a", "ratio", "train"], ["b"]),
        helper.make_node("Relu", ["b"], ["r"]),
        helper.make_node("Identity", ["r"], ["y"]),  # a graph output: kept
        helper.make_node("Dropout", ["r"], ["z", "mask"]),  # its mask is read: kept
    ]
    feeds = {"x": _f(2, 5)}
    m = _compare(make_model(nodes, feeds, ["y", "z", "mask"], inits, opset=13), feeds, device)
    assert m.optimized["passthrough"] == 2
    assert _ops(m) == ["Relu", "Identity", "Dropout"]


def test_constant_subgraphs_are_computed_at_load(device):
    nodes = [
        helper.make_node(
            "Constant", [], ["k"], value=helper.make_tensor("k", TensorProto.FLOAT, [3], [1, 2, 3])
        ),
        helper.make_node("Mul", ["k", "k"], ["k2"]),
        helper.make_node("Add", ["k2", "one"], ["k3"]),  # "one" is a float initializer: a param, kept
        helper.make_node("Shape", ["x"], ["s"]),  # depends on the input: stays
        helper.make_node("Reshape", ["k3", "s"], ["k4"]),
        helper.make_node("Mul", ["x", "k4"], ["y"]),
    ]
    feeds = {"x": _f(1, 3)}
    m = _compare(make_model(nodes, feeds, ["y"], {"one": np.float32(1.0)}), feeds, device)
    assert m.optimized["constant_nodes"] == 2
    assert _ops(m) == ["Add", "Shape", "Reshape", "Mul"]


def test_plans_per_signature_replay_the_same_values(device):
    m = burn_onnx.load(B.resnet(13), device=device)
    rtol, atol = _tol(device)
    xs = [_f(n, 3, 16, 16) for n in (1, 3, 1, 3, 2)]
    for x in xs:
        assert_close(m(x)[0].numpy(), reference(B.resnet(13), {"x": x})[0], rtol, atol)
    assert len(m._runner._cache) == 3 and all(p.steps for p in m._runner._cache.values())


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [2, 2], "strides": [2, 2]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"kernel_shape": [3, 2], "strides": [1, 2], "pads": [0, 1, 2, 0], "dilations": [2, 1]},
        {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    ],
    ids=["2x2s2", "3x3s2p1", "asym-dilated", "same-upper"],
)
def test_values_only_max_pool(device, attrs):
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], **attrs)]
    feeds = {"x": _f(2, 3, 9, 8)}
    _compare(make_model(nodes, feeds, ["y"]), feeds, device)


# ------------------------------------------------------------------ fine-tuning through a fold


def _conv_bn_model() -> tuple[bytes, dict[str, np.ndarray]]:
    inits = {"w": _f(4, 2, 3, 3, scale=0.3), "cb": _f(4), **_bn(4, "bn")}
    nodes = [
        helper.make_node("Conv", ["x", "w", "cb"], ["c"], pads=[1, 1, 1, 1]),
        _bn_node("c", "bn", "n"),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    return make_model(nodes, {"x": _f(2, 2, 5, 5)}, ["y"], inits), inits


def _grads(
    model: bytes, x: np.ndarray, optimize: bool, names: tuple[str, ...] = ("w", "cb", "bn_s", "bn_b")
) -> tuple[float, dict[str, np.ndarray]]:
    dev = burn.device("cpu", autodiff=True)
    m = burn_onnx.load(model, device=dev, optimize=optimize)
    for _ in range(2):  # the second pass replays the plan: the fold must be recomputed, not reused
        loss = (m(burn.tensor(x, device=dev)) ** 2).mean()
        grads = loss.backward()
    found = {name: m.weights[name].value.grad(grads) for name in names}
    assert all(g is not None for g in found.values())
    return loss.item(), {name: g.numpy() for name, g in found.items()}


def test_fine_tuning_reaches_the_folded_params():
    model, inits = _conv_bn_model()
    x = _f(2, 2, 5, 5)
    loss, fast = _grads(model, x, True)
    plain_loss, plain = _grads(model, x, False)
    assert loss == pytest.approx(plain_loss, rel=1e-5)
    for name in fast:
        np.testing.assert_allclose(fast[name], plain[name], rtol=1e-4, atol=1e-6, err_msg=name)
    # and the BN scale's gradient against a central difference of the loss
    m = burn_onnx.load(model, device="cpu")
    scale = m.weights["bn_s"]
    base = scale.value.numpy()
    step, i = 1e-2, 1
    values = []
    for sign in (1.0, -1.0):
        moved = base.copy()
        moved[i] += sign * step
        scale.set(burn.tensor(moved))
        values.append(float((m(x) ** 2).mean().item()))
    np.testing.assert_allclose(fast["bn_s"][i], (values[0] - values[1]) / (2 * step), rtol=2e-2)


def test_replaced_params_refresh_the_folded_weights(tmp_path):
    model, _ = _conv_bn_model()
    x = _f(2, 2, 5, 5)
    m = burn_onnx.load(model, device="cpu")
    before = m(x).numpy()
    other = burn_onnx.load(model, device="cpu", optimize=False)
    for entry in other.params():
        entry.set(entry.value * 1.5)
    m.load_record(other.record())
    after = m(x).numpy()
    assert not np.allclose(after, before)
    np.testing.assert_allclose(after, other(x).numpy(), rtol=1e-5, atol=1e-6)


def test_add_relu_writes_only_into_a_dead_conv_result(device):
    """y = relu(conv1(x) + conv2(x)) may reuse conv1's buffer; conv2's result is also a graph output and
    must come back untouched, and so must the input that both convs read."""
    inits = {"w1": _f(4, 3, 3, 3, scale=0.3), "w2": _f(4, 3, 3, 3, scale=0.3)}
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", "c2"], ["s"]),
        helper.make_node("Relu", ["s"], ["y"]),
    ]
    feeds = {"x": _f(2, 3, 6, 6)}
    x_before = feeds["x"].copy()
    m = _compare(make_model(nodes, feeds, ["y", "c2"], inits), feeds, device)
    # the add went into conv1's node (conv1's result is dead): conv2's result is only read
    fused = [n for n in m._runner.graph.nodes if n.attrs.get("residual")]
    assert len(fused) == 1 and fused[0].inputs[7] == "c2" and m.optimized["residual"] == 1
    np.testing.assert_array_equal(feeds["x"], x_before)
