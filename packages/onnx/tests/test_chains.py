"""Element-wise chains (``_chains``): ``load(optimize=True)`` groups element-wise nodes into ``FusedChain``
nodes that run as one compiled kernel on the cpu device from their second call on. Each model here is
checked against a float64 numpy reference of its graph (tolerances of float32 rounding) on every call,
the first (the original converters) and the later ones (compiled where a C compiler is present), and
against ``optimize=False`` (the file's nodes one by one); the fall-backs (numpy alone, integer dtypes,
autodiff) compute what the converters compute."""

from __future__ import annotations

import math
from typing import Any

import burn
import burn_onnx
import numpy as np
import pytest
from burn import _native
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
NATIVE = _native.toolchain().available


def _model(nodes: list, inputs: dict[str, tuple], consts: dict[str, np.ndarray], out_type: int = F) -> bytes:
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _gelu() -> tuple[bytes, dict[str, np.ndarray], np.ndarray]:
    """A bias add and the exact GELU as PyTorch exports it: Add, Div, Erf, Add, Mul, Mul."""
    n = helper.make_node
    nodes = [
        n("Add", ["x", "b"], ["h"]),
        n("Div", ["h", "sqrt2"], ["d"]),
        n("Erf", ["d"], ["e"]),
        n("Add", ["e", "one"], ["p"]),
        n("Mul", ["h", "p"], ["m"]),
        n("Mul", ["m", "half"], ["y"]),
    ]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 8)).astype(np.float32) * 3
    b = rng.standard_normal(8).astype(np.float32)
    consts = {
        "sqrt2": np.array(math.sqrt(2), np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    h = x.astype(np.float64) + b
    erf = np.vectorize(math.erf)
    want = h * (1 + erf(h / math.sqrt(2))) * 0.5
    data = _model(nodes, {"x": (F, ["n", 5, 8]), "b": (F, ["k"])}, consts)
    return data, {"x": x, "b": b}, want


def _relu6_where() -> tuple[bytes, dict[str, np.ndarray], np.ndarray]:
    """Clip(0, 6) of a product with a (1, 1) constant (it sets the output's rank), then a Where on a
    comparison against another input."""
    n = helper.make_node
    nodes = [
        n("Mul", ["x", "k"], ["s"]),
        n("Clip", ["s", "lo", "hi"], ["c"]),
        n("Less", ["c", "t"], ["mask"]),
        n("Where", ["mask", "c", "neg"], ["y"]),
    ]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(7).astype(np.float32) * 5
    t = rng.uniform(0, 6, (3, 1)).astype(np.float32)
    consts = {
        "k": np.full((1, 1), 1.5, np.float32),
        "lo": np.array(0.0, np.float32),
        "hi": np.array(6.0, np.float32),
        "neg": np.array(-1.0, np.float32),
    }
    c = np.clip(x.astype(np.float64) * 1.5, 0, 6).reshape(1, 7)
    want = np.where(c < t, c, -1.0)
    data = _model(nodes, {"x": (F, [7]), "t": (F, [3, 1])}, consts)
    return data, {"x": x, "t": t}, want


def _silu_pow() -> tuple[bytes, dict[str, np.ndarray], np.ndarray]:
    """x * sigmoid(x) over a transposed (strided) view, then Pow by a constant and Sqrt, Max, Neg."""
    n = helper.make_node
    nodes = [
        n("Transpose", ["x"], ["xt"], perm=[1, 0]),
        n("Sigmoid", ["xt"], ["sg"]),
        n("Mul", ["xt", "sg"], ["si"]),
        n("Pow", ["si", "two"], ["sq"]),
        n("Sqrt", ["sq"], ["r"]),
        n("Max", ["r", "floor"], ["mx"]),
        n("Neg", ["mx"], ["y"]),
    ]
    x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(4, 6)
    consts = {"two": np.array(2.0, np.float32), "floor": np.array(0.25, np.float32)}
    xt = x.T.astype(np.float64)
    si = xt / (1 + np.exp(-xt))
    want = -np.maximum(np.abs(si), 0.25)
    return _model(nodes, {"x": (F, [4, 6])}, consts), {"x": x}, want


CASES = {"gelu": _gelu, "relu6_where": _relu6_where, "silu_pow": _silu_pow}
CHAINS = {"gelu": 1, "relu6_where": 1, "silu_pow": 1}  # chain nodes each makes


@pytest.mark.parametrize("name", list(CASES))
def test_chains_match_a_float64_reference_on_every_call(name: str) -> None:
    data, feeds, want = CASES[name]()
    m = burn_onnx.load(data, device="cpu")
    plain = burn_onnx.load(data, device="cpu", optimize=False)
    assert m.optimized["chains"] == CHAINS[name]
    assert [n.op_type for n in m._runner.graph.nodes][-1] == "FusedChain"
    for call in range(4):  # the first runs the converters, the later ones the compiled kernel
        got = m(**feeds).numpy()
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=f"call {call}")
        np.testing.assert_allclose(got, plain(**feeds).numpy(), rtol=2e-6, atol=1e-6)
    runtimes = [v[1] for k, v in m._runner.memo.items() if k[0] == "chain_runtime"]
    if NATIVE:
        assert runtimes and runtimes[0].native_runs >= 3 * CHAINS[name], "the chains never ran compiled"


def test_numpy_alone_gives_the_converters_results(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_CPU_NATIVE", "0")
    data, feeds, want = _gelu()
    m = burn_onnx.load(data, device="cpu")
    plain = burn_onnx.load(data, device="cpu", optimize=False)
    for _ in range(3):
        np.testing.assert_array_equal(m(**feeds).numpy(), plain(**feeds).numpy())
    assert [v[1] for k, v in m._runner.memo.items() if k[0] == "chain_runtime"] == [None]


def test_integer_chains_run_the_converters() -> None:
    n = helper.make_node
    i64 = TensorProto.INT64
    nodes = [n("Add", ["x", "x"], ["s"]), n("Mul", ["s", "three"], ["y"])]
    data = _model(nodes, {"x": (i64, [5])}, {"three": np.array(3, np.int64)}, i64)
    m = burn_onnx.load(data, device="cpu")
    assert m.optimized["chains"] == 1
    x = np.arange(-2, 3, dtype=np.int64)
    for _ in range(3):
        (y,) = m.run(x)
        np.testing.assert_array_equal(y, x * 6)


def test_autodiff_gradients_flow_through_a_chain() -> None:
    data, feeds, want = _gelu()
    dev = burn.device("cpu", autodiff=True)
    m = burn_onnx.load(data, device=dev)
    b = burn.tensor(feeds["b"], device=dev).require_grad()
    for _ in range(2):
        y = m(x=feeds["x"], b=b)
        np.testing.assert_allclose(y.numpy(), want, rtol=2e-6, atol=2e-6)
        grad = y.sum().backward().get(b).numpy()
    h = feeds["x"].astype(np.float64) + feeds["b"]
    pdf = np.exp(-(h**2) / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    np.testing.assert_allclose(grad, (cdf + h * pdf).sum(axis=(0, 1)), rtol=1e-4)


def test_a_broadcast_error_names_the_original_node() -> None:
    data, feeds, _ = _gelu()
    m = burn_onnx.load(data, device="cpu")
    with pytest.raises(burn_onnx.OnnxRuntimeError, match="Add node"):
        m(x=feeds["x"], b=np.ones(3, np.float32))


def test_a_value_read_outside_the_chain_ends_it() -> None:
    n = helper.make_node
    nodes = [
        n("Exp", ["x"], ["e"]),
        n("Mul", ["e", "e"], ["q"]),  # read twice, both inside: one chain
        n("Tanh", ["q"], ["t"]),
        n("Sin", ["t"], ["s"]),
        n("Transpose", ["t"], ["tt"]),  # t is read outside the chain too: the chain ends at Tanh
        n("Add", ["s", "tt"], ["y"]),
    ]
    data = _model(nodes, {"x": (F, [6])}, {})
    m = burn_onnx.load(data, device="cpu")
    assert [node.op_type for node in m._runner.graph.nodes] == ["FusedChain", "Transpose", "FusedChain"]
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    t = np.tanh(np.exp(2 * x.astype(np.float64)))
    for _ in range(3):
        np.testing.assert_allclose(m(x).numpy(), np.sin(t) + t, rtol=2e-6)


@pytest.mark.skipif(not NATIVE, reason="no C compiler: chains run the converters, as the suite checks")
def test_conformance_cases_of_chain_ops_pass_compiled() -> None:
    """The conformance suite's cases of the ops a chain takes (Add, Erf, Clip, Where, ...), each model
    called three times (its chain compiled from the second call on where a compiler is present): every
    case the cpu expectations record as passing still passes."""
    import json
    from pathlib import Path

    from burn_onnx._chains import CHAIN_OPS
    from burn_onnx._conformance import run_suite, suite_cases

    expected = json.loads((Path(__file__).parent / "onnx_suite_expectations.json").read_text())
    passing = {name for name, entry in expected["devices"]["cpu"].items() if entry[0] == "pass"}
    names = [
        case.name
        for case in suite_cases()
        if case.name in passing and all(n.op_type in CHAIN_OPS for n in case.model.graph.node)
    ]
    assert len(names) > 100

    def thrice(model: Any, inputs: list[Any]) -> list[Any]:
        m = burn_onnx.load(model, device="cpu")
        for _ in range(2):
            m.run(*inputs)
        return list(m.run(*inputs))

    results = run_suite(names=names, engine=thrice)
    failed = {name: r.detail for name, r in results.items() if r.status != "pass"}
    assert not failed, failed


def test_chains_on_every_device(device: burn.Device) -> None:
    """Devices other than the plain cpu one run a chain's nodes through their converters (the GPU
    backends fuse on their own): the same results as cpu's compiled kernel."""
    data, feeds, want = _gelu()
    m = burn_onnx.load(data, device=device)
    for _ in range(3):
        got = m(**feeds).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
