"""Random op graphs through every path that runs a graph other than op by op, against burn's numpy
backend unfused (the reference).

Hypothesis draws a graph: an input of rank 2-4, then a chain of steps over a list of live values:
element-wise functions, broadcasting binaries against constants of partly-1 shapes, scalar ops,
reductions (sum/mean/max, keepdim or not), linear layers, softmax, layer norm, transposes and
reshapes, residual adds of an earlier value, and blocks (linear, layer norm, activation, residual)
applied two or three times with shared or separate weights (the repeated layers that made a fused
web export of a transformer go wrong, issue 32). Each graph is a plain function of burn tensors
that makes its constants on its input's device, so the same function runs on every path:

- ``cpu`` (numpy, fusion off): the reference;
- ``cpu`` with the fusion decorator (its reference runtime: plans and program replay alone);
- ``wgpu`` fused (generated kernels), called five times: the first call plans, later ones replay the
  planned program, and after a few replays the program is captured and launched as a recorded wgpu
  command list (``burn_wgpu._graphs``); every call's output is checked;
- ``burn.ir``: the graph captured symbolically and replayed on wgpu;
- the web export (``burn_wgpu.web.export``, fused) run by ``NativeSchedule``, as a page runs it.

The example budget (100) is fixed and derandomized so CI runs the same graphs every time (about
half a minute on two CPU cores with lavapipe); ``BURN_PROPERTY_EXAMPLES=N`` runs more locally.
Tolerances: float32 kernels sum in other orders than numpy (and fuse a*b+c), so values agree to
rtol 2e-4 with an absolute floor of 1e-4 times the output's largest magnitude.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import burn
import numpy as np
import pytest
from burn.nn import functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("BURN_PROPERTY_EXAMPLES", "100"))
RTOL, ATOL = 2e-4, 1e-4
CALLS = 5  # plan, replay, then capture and launch the recorded command list

UNARY = ("tanh", "sigmoid", "relu", "neg", "abs", "sin", "exp_tanh", "square", "gelu")
BINARY = ("add", "sub", "mul", "maximum", "div_pos")


@dataclass(frozen=True)
class Step:
    kind: str
    args: tuple[Any, ...] = ()


def _unary(h: Any, name: str) -> Any:
    if name == "exp_tanh":
        return h.tanh().exp()
    if name == "square":
        return h * h
    if name == "gelu":
        return F.gelu(h)
    return getattr(h, name)()


def _binary(h: Any, other: Any, name: str) -> Any:
    if name == "add":
        return h + other
    if name == "sub":
        return other - h
    if name == "mul":
        return h * other
    if name == "maximum":
        return h.maximum(other)
    return h / (other.abs() + 0.5)  # div_pos: a denominator bounded away from zero


class _Builder:
    """Runs a list of steps on a tensor; every constant comes from ``rng`` seeded per graph, so each
    device sees the same values."""

    def __init__(self, steps: list[Step], seed: int) -> None:
        self.steps = steps
        self.seed = seed

    def __call__(self, x: Any) -> Any:
        rng = np.random.default_rng(self.seed)
        dev = x.device

        def const(shape: tuple[int, ...], scale: float = 1.0) -> Any:
            return burn.tensor((rng.standard_normal(shape) * scale).astype(np.float32), device=dev)

        live = [x]
        h = x
        for step in self.steps:
            h = self._step(h, step, live, const)
            live.append(h)
        return h

    def _step(
        self,
        h: Any,
        step: Step,
        live: list[Any],
        const: Callable[..., Any],
    ) -> Any:
        kind, a = step.kind, step.args
        if kind == "unary":
            return _unary(h, a[0])
        if kind == "binary":
            mask, name = a
            shape = tuple(1 if m else d for d, m in zip(h.shape, mask))
            if a[0][0] and len(shape) > 1:  # drop a leading 1: broadcasting adds it back
                shape = shape[1:]
            return _binary(h, const(shape), name)
        if kind == "scalar":
            op, c = a
            return h * c if op == "mul" else h + c
        if kind == "reduce":
            name, axis, keepdim = a
            if h.ndim == 1:
                keepdim = True  # keeps a tensor, not a scalar
            axis = axis % h.ndim
            return getattr(h, name)(axis, keepdim=keepdim)
        if kind == "linear":
            (n_out,) = a
            d = h.shape[-1]
            return F.linear(h, const((d, n_out), d**-0.5), const((n_out,), 0.1))
        if kind == "softmax":
            return F.softmax(h, a[0] % h.ndim)
        if kind == "layer_norm":
            d = h.shape[-1]
            return F.layer_norm(h, d, const((d,), 0.2) + 1.0, const((d,), 0.1))
        if kind == "transpose":
            if h.ndim < 2:
                return h
            i, j = a[0] % h.ndim, a[1] % h.ndim
            return h.transpose(i, j)
        if kind == "reshape":
            if h.ndim >= 2:  # merge the last two dims
                return h.reshape(*h.shape[:-2], h.shape[-2] * h.shape[-1])
            return h.reshape(1, *h.shape)
        if kind == "residual":
            same = [v for v in live[:-1] if tuple(v.shape) == tuple(h.shape)]
            return h + same[a[0] % len(same)] if same else h
        if kind == "block":
            reps, share, act = a
            d = h.shape[-1]
            weights = None
            for _ in range(reps):
                if weights is None or not share:  # shared: every repeat reads the first one's weights
                    weights = (
                        const((d, d), d**-0.5),
                        const((d,), 0.1),
                        const((d,), 0.2) + 1.0,
                        const((d,), 0.1),
                    )
                w, b, g, beta = weights
                y = F.layer_norm(F.linear(h, w, b), d, g, beta)
                h = h + _unary(y, act)
            return h
        raise AssertionError(kind)


def _steps(rank: int) -> st.SearchStrategy[Step]:
    mask = st.lists(st.booleans(), min_size=4, max_size=4).map(tuple)
    axis = st.integers(-4, 3)
    return st.one_of(
        st.sampled_from(UNARY).map(lambda n: Step("unary", (n,))),
        st.tuples(mask, st.sampled_from(BINARY)).map(lambda t: Step("binary", t)),
        st.tuples(st.sampled_from(("mul", "add")), st.sampled_from((0.5, -1.5, 2.0))).map(
            lambda t: Step("scalar", t)
        ),
        st.tuples(st.sampled_from(("sum", "mean", "max")), axis, st.booleans()).map(
            lambda t: Step("reduce", t)
        ),
        st.integers(1, 9).map(lambda n: Step("linear", (n,))),
        axis.map(lambda i: Step("softmax", (i,))),
        st.just(Step("layer_norm")),
        st.tuples(axis, axis).map(lambda t: Step("transpose", t)),
        st.just(Step("reshape")),
        st.integers(0, 7).map(lambda i: Step("residual", (i,))),
        st.tuples(st.integers(2, 3), st.booleans(), st.sampled_from(("relu", "tanh", "gelu"))).map(
            lambda t: Step("block", t)
        ),
    )


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[Step], np.ndarray, int]:
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    if draw(st.booleans()):  # one wider dim: more than one workgroup, vector-width tails
        i = draw(st.integers(0, rank - 1))
        shape = shape[:i] + (draw(st.sampled_from((17, 33, 70))),) + shape[i + 1 :]
    steps = draw(st.lists(_steps(rank), min_size=2, max_size=9))
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32)
    return steps, x, seed


def _close(got: Any, want: np.ndarray, where: str, steps: list[Step]) -> None:
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape} for {steps}"
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(
        got, want, rtol=RTOL, atol=ATOL * scale, err_msg=f"{where} differs from numpy for {steps}"
    )


@pytest.fixture(scope="module")
def fused_cpu() -> Any:
    return burn.device("cpu", fusion=True)


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
@given(graphs())
def test_random_graph_matches_numpy_on_every_path(dev, fused_cpu, graph):
    import burn_wgpu.web as web

    steps, x, seed = graph
    fn = _Builder(steps, seed)
    want = np.asarray(fn(burn.tensor(x, device="cpu")).numpy(), dtype=np.float64)
    if not np.all(np.isfinite(want)):
        return  # a graph whose reference overflows says nothing about the other paths
    _close(fn(burn.tensor(x, device=fused_cpu)).numpy(), want, "cpu fused", steps)
    for call in range(CALLS):
        _close(fn(burn.tensor(x, device=dev)).numpy(), want, f"wgpu fused, call {call + 1}", steps)
    graph_ir = burn.ir.capture(fn, {"x": (x.shape, "float32")})
    _close(burn.ir.replay(graph_ir, [burn.tensor(x, device=dev)]).numpy(), want, "burn.ir replay", steps)
    with tempfile.TemporaryDirectory() as out:
        web.export(fn, x, out)
        got = web.NativeSchedule(out).run({"input": x})["output"]
    _close(got, want, "web export", steps)


def test_the_wgpu_runs_reach_recorded_command_lists(dev):
    """The five calls per graph above reach the recorded-command-list launch (not only planning and
    step-by-step replay): a fixed graph of the same kind, run the same way, is captured and launched."""
    fb = dev.backend
    fn = _Builder([Step("block", (2, True, "gelu")), Step("softmax", (-1,)), Step("linear", (5,))], 3)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    want = np.asarray(fn(burn.tensor(x, device="cpu")).numpy(), dtype=np.float64)
    before = dict(fb.stats)
    for call in range(CALLS):
        _close(fn(burn.tensor(x, device=dev)).numpy(), want, f"call {call + 1}", [])
    assert fb.stats["replays"] > before["replays"]
    assert fb.stats["graph_launches"] > before["graph_launches"], fb.runtime.capture_failures
