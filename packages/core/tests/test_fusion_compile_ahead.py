"""Compile-ahead planning (``FusionRuntime.compile_ahead``): a stream seen the first time is planned with
the runtime's kernels only compiled (their results stand-ins), then the recorded program runs. Here the
runtime is the reference runtime whose stand-in results are poison (a value no result may contain), so
any stand-in that leaked into a result shows; every result must equal the plain numpy backend's exactly
(the reference runtime runs the same ops in the same order)."""

from __future__ import annotations

import contextlib

import burn
import numpy as np
import pytest
from burn.fusion import Fusion, ReferenceRuntime
from hypothesis import given, settings
from hypothesis import strategies as st

POISON = 12345.0
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # ops over the poison overflow


@pytest.fixture(autouse=True)
def _opted_in(monkeypatch):
    monkeypatch.setenv("BURN_COMPILE_AHEAD", "1")  # opt-in


class Ahead(ReferenceRuntime):
    """The reference runtime with ``compile_ahead``: under it, ``execute`` notes the plan as compiling and
    returns poison of the right shapes; ``fail_ahead`` makes the planning pass raise (a call refusing
    the stand-ins)."""

    def __init__(self, backend, fail_ahead=False):
        super().__init__(backend)
        self.ahead = False
        self.compiled: list[tuple] = []  # plan keys started in the planning pass
        self.ran: list[tuple] = []  # plan keys run for real
        self.fail_ahead = fail_ahead
        self.reused: list[tuple] = []  # plan keys run through execute_reusing

    @contextlib.contextmanager
    def compile_ahead(self):
        self.ahead = True
        try:
            yield
        finally:
            self.ahead = False

    def execute_reusing(self, plan, inputs, scalars, donors):
        self.reused.append(plan.key)  # a replay's kernels: never the run right after planning
        return self.execute(plan, inputs, scalars)

    def execute(self, plan, inputs, scalars):
        outs = super().execute(plan, inputs, scalars)
        if not self.ahead:
            self.ran.append(plan.key)
            return outs
        if self.fail_ahead:
            raise RuntimeError("a stand-in refused")
        self.compiled.append(plan.key)
        return [self.backend.from_numpy(np.full(o.shape, POISON, dtype=o.dtype), _dt(o)) for o in outs]


def _dt(o):
    return {np.dtype(np.float32): burn.float32, np.dtype(np.bool_): burn.bool_}.get(o.dtype, burn.float32)


def _fused(**kw):
    cpu = burn.device("cpu").backend
    rt = Ahead(cpu, **kw)
    return Fusion(cpu, runtime=rt), rt, cpu


RNG = np.random.default_rng(11)
X = RNG.standard_normal((6, 5)).astype(np.float32)
W = RNG.standard_normal((5, 5)).astype(np.float32)
ROW = RNG.standard_normal((5,)).astype(np.float32)

# one op over the (6, 5) values so far, ``v[k]`` the one it picks and ``v[-1]`` the last: a new (6, 5) value
OPS = {
    "exp_tanh": lambda b, v, k, c: b.unary("tanh", b.unary("exp", b.binary("mul", v[k], 0.1))),
    "add_row": lambda b, v, k, c: b.binary("add", v[k], c["row"]),
    "mul": lambda b, v, k, c: b.binary("mul", v[k], v[-1]),
    "matmul": lambda b, v, k, c: b.matmul(v[k], c["w"]),
    "sum_keep": lambda b, v, k, c: b.binary("sub", v[k], b.reduce("sum", v[k], (1,), True)),
    "max_where": lambda b, v, k, c: b.where(b.binary("gt", v[k], 0.0), v[k], b.unary("neg", v[k])),
}


def _run(b, program):
    v = [b.from_numpy(X, burn.float32)]
    c = {"row": b.from_numpy(ROW, burn.float32), "w": b.from_numpy(W, burn.float32)}
    held = []
    for name, pick, hold in program:
        out = OPS[name](b, v, pick % len(v), c)
        v.append(out)
        if hold:
            held.append(out)
    return [b.to_numpy(h) for h in held] + [b.to_numpy(v[-1])]


programs = st.lists(
    st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 20), st.booleans()), min_size=1, max_size=12
)


@settings(max_examples=40, deadline=None)
@given(programs)
def test_a_stream_planned_ahead_equals_numpy_and_runs_each_kernel_once(program):
    b, rt, cpu = _fused()
    want = _run(cpu, program)
    first = _run(b, program)  # planned ahead, then run
    for got, ref in zip(first, want):
        np.testing.assert_array_equal(got, ref)
    assert sorted(rt.ran) == sorted(rt.compiled)  # every kernel compiled ahead ran once, for real
    assert not rt.reused  # as compiled: through execute, as a planned stream runs
    kernels = b.stats["kernels"]
    assert kernels == len(rt.ran)  # the planning pass counts nothing
    rt.compiled.clear()
    again = _run(b, program)  # the same stream: replayed, nothing planned ahead
    for got, ref in zip(again, want):
        np.testing.assert_array_equal(got, ref)
    assert not rt.compiled


def test_a_planning_pass_that_fails_plans_the_usual_way():
    b, rt, cpu = _fused(fail_ahead=True)
    program = [("exp_tanh", 0, True), ("matmul", 3, False), ("add_row", 4, True), ("sum_keep", 5, False)]
    for got, ref in zip(_run(b, program), _run(cpu, program)):
        np.testing.assert_array_equal(got, ref)
    assert rt.ran and not rt.compiled


@pytest.mark.parametrize("value", ["0", None])
def test_compile_ahead_off_by_environment_and_by_default(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("BURN_COMPILE_AHEAD")
    else:
        monkeypatch.setenv("BURN_COMPILE_AHEAD", value)
    b, rt, cpu = _fused()
    program = [("exp_tanh", 0, True), ("add_row", 3, False)]
    for got, ref in zip(_run(b, program), _run(cpu, program)):
        np.testing.assert_array_equal(got, ref)
    assert rt.ran and not rt.compiled


@pytest.mark.parametrize("hold", [False, True])
def test_values_a_tensor_holds_come_from_the_real_run(hold):
    b, rt, cpu = _fused()
    x = b.from_numpy(X, burn.float32)
    h = b.unary("exp", b.binary("mul", x, 0.5))
    y = b.reduce("sum", b.binary("add", h, 1.0), (1,), False)
    z = b.matmul(h, b.from_numpy(W, burn.float32))
    if not hold:
        del h
    b.sync()
    assert rt.compiled
    np.testing.assert_allclose(b.to_numpy(y), (np.exp(X * 0.5) + 1).sum(1), rtol=1e-6)
    np.testing.assert_allclose(b.to_numpy(z), np.exp(X * 0.5) @ W, rtol=1e-5)
    if hold:
        np.testing.assert_array_equal(b.to_numpy(h), np.exp(X * np.float32(0.5)))
