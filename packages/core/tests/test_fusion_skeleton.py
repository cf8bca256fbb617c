"""The kernel skeleton (``burn.fusion.skeleton``): a plan's statements mean what the plan means.

A tiny ``Renderer`` spells the statements as Python over numpy arrays (broadcasting stands in for the
index arithmetic) and runs them; the results must equal numpy formulas written by hand for plans built
here (operand order, scalars, several outputs, broadcasting, where/clamp/casts/bools, reductions with
and without an epilogue, a matmul epilogue), and the reference runtime's results for the plans fusion
makes for real programs. The statements are checked independently of any GPU language: a wrong value
number, operand order, load, store or reduce stage shows up here as a wrong number.
"""

from __future__ import annotations

from typing import Any

import burn
import numpy as np
import pytest
from burn.backend import NUMPY_DTYPES
from burn.fusion import (
    Apply,
    FusedKernel,
    FusedOp,
    FusedReduce,
    Load,
    ReferenceRuntime,
    Renderer,
    ScalarLoad,
    Skeleton,
    Store,
    skeleton,
)

f32, i32, b = burn.float32, burn.int32, burn.bool_

# the numpy meaning of each op over operands a, b, c (already in the op's compute dtype)
NUMPY = {
    "exp": "np.exp(a)",
    "log": "np.log(a)",
    "sqrt": "np.sqrt(a)",
    "rsqrt": "1 / np.sqrt(a)",
    "neg": "-a",
    "abs": "np.abs(a)",
    "relu": "np.maximum(a, 0)",
    "tanh": "np.tanh(a)",
    "sigmoid": "1 / (1 + np.exp(-a))",
    "square": "a * a",
    "reciprocal": "1 / a",
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "div": "a / b",
    "maximum": "np.maximum(a, b)",
    "minimum": "np.minimum(a, b)",
    "pow": "a ** b",
    "gt": "a > b",
    "ge": "a >= b",
    "lt": "a < b",
    "le": "a <= b",
    "eq": "a == b",
    "ne": "a != b",
    "where": "np.where(a, b, c)",
    "clamp": "np.clip(a, b, c)",
}
REDUCE = {"sum": "np.sum", "max": "np.max", "min": "np.min"}  # a mean: the sum over the row length


class NumpyRenderer(Renderer):
    """Python source over numpy arrays: ``x`` the tensor inputs (for a matmul epilogue: the product,
    then the others), ``s`` the scalars, ``out`` the outputs."""

    def type(self, dtype: burn.DType) -> str:
        return f"np.{NUMPY_DTYPES[dtype].name}"

    def storage(self, dtype: burn.DType) -> str:
        return self.type(dtype)

    def expression(self, op: FusedOp) -> str:
        return "a" if op.kind == "cast" else NUMPY[op.name]

    def apply(self, stmt: Apply) -> str:
        op = stmt.op
        cond = op.kind == "where"  # the condition stays bool; the branches compute in ``compute``
        operands = [
            self.value(a) if cond and i == 0 else f"{self.value(a)}.astype({self.type(op.compute)})"
            for i, a in enumerate(op.args)
        ]
        bind = "".join(f"{'abc'[i]} = {x}; " for i, x in enumerate(operands))
        return (
            f"{bind}{self.value(stmt.value)} = np.asarray({self.expression(op)}).astype({self.type(op.out)})"
        )

    def load(self, stmt: Load, element: str) -> str:
        return f"{self.value(stmt.value)} = np.asarray({element}).astype({self.type(stmt.dtype)})"

    def scalar(self, stmt: ScalarLoad, element: str) -> str:
        return f"{self.value(stmt.value)} = np.asarray({element}, {self.type(stmt.dtype)})"

    def store(self, stmt: Store, element: str) -> str:
        return f"{element} = {self.value(stmt.value)}.astype({self.type(stmt.dtype)})"

    def index(self, names: Any, rank: int, position: str, meta: str) -> list[str]:
        return []  # numpy broadcasts each input to the shape it is read over

    def literal(self, x: float, dtype: burn.DType) -> str:
        return f"{self.type(dtype)}({ {np.inf: 'np.inf', -np.inf: '-np.inf'}.get(x, repr(x)) })"

    def params(self, sk: Skeleton) -> list[str]:
        return ["x", "s", "out"]

    def kernel(self, sk: Skeleton) -> str:
        """A Python function running ``sk``: the main stage over the plan's shape, then a reduce
        kernel's reduction and its per-result stage over the result's shape."""
        plan = sk.plan
        lines = [f"def kernel({', '.join(self.params(sk))}):", f"    shape = {plan.shape!r}"]
        if sk.matmul:
            lines.append("    v0 = x[0]")  # the product the matmul kernel holds
        main = self.lines(
            sk.main.statements,
            load_at=lambda k: f"np.broadcast_to(x[{k}], shape)",
            scalar_at=lambda j: f"s[{j}]",
            store_at=lambda j: f"out[{j}]",
        )
        lines += [f"    {line}" for line in main]
        red = sk.reduce
        if red is not None:
            assert plan.reduce is not None
            dims, keep = plan.reduce.dims, plan.reduce.keepdim
            rshape = plan.out_shape()
            acc, reduced = self.value(red.value), self.value(red.reduced)
            # from the identity, as a kernel accumulates; a mean divides the sum by the row length
            fn = "np.sum" if red.op == "mean" else REDUCE[red.op]
            init = self.literal(red.identity, red.dtype)
            result = f"{fn}({acc}, axis={dims!r}, keepdims={keep}, initial={init})"
            if red.op == "mean":
                result += f" / {plan.reduce.rows(plan.shape)[1]}"
            lines.append(f"    finish(x, s, out, ({result}).astype({self.type(red.dtype)}))")
            # the per-result stage sees the reduced value and what it loads itself, nothing of main's
            lines.append(f"def finish(x, s, out, {reduced}):")
            post = self.lines(
                red.post.statements,
                load_at=lambda k: f"np.broadcast_to(x[{k}], {rshape!r})",
                scalar_at=lambda j: f"s[{j}]",
                store_at=lambda j: f"out[{j}]",
            )
            lines += [f"    {line}" for line in post]
        return "\n".join(lines) + "\n"


def run(plan: FusedKernel, inputs: list[np.ndarray], scalars: list[Any]) -> list[np.ndarray]:
    """``plan`` run by its skeleton's statements as numpy code."""
    sk = skeleton(plan)
    env: dict[str, Any] = {"np": np}
    exec(NumpyRenderer().kernel(sk), env)
    out: list[Any] = [None] * len(sk.stores)
    env["kernel"](inputs, scalars, out)
    return [np.asarray(o) for o in out]


rng = np.random.default_rng(3)
X = rng.standard_normal((3, 4)).astype(np.float32)
Y = rng.standard_normal((4,)).astype(np.float32)
N = rng.integers(-5, 5, (3, 4)).astype(np.int32)


def op(kind: str, name: str, args: tuple[int, ...], compute: burn.DType = f32, out: burn.DType | None = None):
    return FusedOp(kind, name, compute, out or compute, args)


def test_operand_order_scalars_and_several_outputs():
    # v0 = x (3, 4), v1 = y (4,) broadcast, v2 = s; v3 = y - x * s; v4 = exp(v3); outputs v4, v3
    ops = (op("binary", "mul", (0, 2)), op("binary", "sub", (1, 3)), op("unary", "exp", (4,)))
    plan = FusedKernel((3, 4), (f32, f32), (f32,), ops, (5, 4))
    sk = skeleton(plan)
    assert [type(s).__name__ for s in sk.main.statements] == [
        "Load",
        "Load",
        "ScalarLoad",
        "Apply",
        "Apply",
        "Apply",
        "Store",
        "Store",
    ]
    assert sk.stores == (Store(0, 5, f32), Store(1, 4, f32))
    e, d = run(plan, [X, Y], [1.5])
    np.testing.assert_allclose(d, Y - X * 1.5, rtol=1e-6)
    np.testing.assert_allclose(e, np.exp(Y - X * 1.5), rtol=1e-6)


def test_where_clamp_cast_and_bool():
    # where(x > s0, clamp(x, s1, s2), float(n)), and the mask itself (bool) as a second output
    ops = (
        op("binary", "gt", (0, 2), out=b),  # v5
        op("clamp", "clamp", (0, 3, 4)),  # v6
        op("cast", "float32", (1,), compute=i32, out=f32),  # v7
        op("where", "where", (5, 6, 7)),  # v8
    )
    plan = FusedKernel((3, 4), (f32, i32), (f32, f32, f32), ops, (8, 5))
    got, mask = run(plan, [X, N], [0.0, -0.5, 0.5])
    np.testing.assert_allclose(got, np.where(X > 0, np.clip(X, -0.5, 0.5), N.astype(np.float32)))
    assert mask.dtype == np.bool_ and (mask == (X > 0)).all()


@pytest.mark.parametrize("red", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_of_a_chain(red, keepdim):
    ops = (op("binary", "mul", (0, 1)),)  # x * y, reduced over the last dim
    plan = FusedKernel((3, 4), (f32, f32), (), ops, (2,), reduce=FusedReduce(red, (1,), keepdim))
    sk = skeleton(plan)
    assert sk.reduce is not None and sk.reduce.value == 2 and sk.reduce.reduced == 3
    assert sk.main.stores == () and sk.stores == (Store(0, 3, f32),)
    (got,) = run(plan, [X, Y], [])
    want = getattr(np, red)(X * Y, axis=1, keepdims=keepdim)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_reduce_epilogue_reads_inputs_scalars_and_stores_the_reduced_value():
    # log-sum-exp: m (3, 1) read before (x - m) and after (+ m) the sum; the epilogue also scales by a
    # scalar; stored: the reduced value (v5) and the epilogue's result (v8)
    ops = (op("binary", "sub", (0, 1)), op("unary", "exp", (3,)))  # v3, v4; v5 = sum(v4)
    post = (op("unary", "log", (5,)), op("binary", "add", (6, 1)), op("binary", "mul", (7, 2)))  # v6..v8
    plan = FusedKernel(
        (3, 4), (f32, f32), (f32,), ops, (4,), reduce=FusedReduce("sum", (1,), True, post, (5, 8))
    )
    m = X.max(axis=1, keepdims=True)
    sk = skeleton(plan)
    assert sk.reduce is not None
    assert sk.reduce.post.loads == (Load(1, f32),) and sk.reduce.post.scalars == (ScalarLoad(2, 0, f32),)
    total, got = run(plan, [X, m], [2.0])
    np.testing.assert_allclose(total, np.exp(X - m).sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got, (np.log(np.exp(X - m).sum(1, keepdims=True)) + m) * 2.0, rtol=1e-5)


def test_matmul_epilogue_starts_from_the_product():
    w = rng.standard_normal((4, 5)).astype(np.float32)
    bias = rng.standard_normal((5,)).astype(np.float32)
    ops = (op("binary", "add", (0, 1)), op("unary", "relu", (2,)))
    plan = FusedKernel((3, 5), (f32, f32), (), ops, (0, 3), matmul=True)
    sk = skeleton(plan)
    assert sk.matmul and sk.main.loads == (Load(1, f32),)  # value 0 is not loaded
    product = X @ w
    kept, got = run(plan, [product, bias], [])
    np.testing.assert_allclose(kept, product, rtol=1e-6)
    np.testing.assert_allclose(got, np.maximum(product + bias, 0), rtol=1e-6)


def test_the_skeleton_is_made_once_per_plan():
    plan = FusedKernel((4,), (f32,), (), (op("unary", "exp", (0,)),), (1,))
    assert skeleton(plan) is skeleton(plan)


class Recording(ReferenceRuntime):
    """The reference runtime, keeping each plan it runs with its inputs, scalars and results."""

    def __init__(self, backend: Any) -> None:
        super().__init__(backend)
        self.runs: list[tuple[FusedKernel, list[np.ndarray], list[Any], list[np.ndarray]]] = []
        self.depth = 0

    def execute(self, plan: FusedKernel, inputs: list[Any], scalars: list[Any]) -> list[Any]:
        self.depth += 1
        try:
            outs = super().execute(plan, inputs, scalars)
        finally:
            self.depth -= 1
        if not self.depth:
            np_in = [self.backend.to_numpy(x) for x in inputs]
            if plan.matmul:
                np_in = [np_in[0] @ np_in[1], *np_in[2:]]
            self.runs.append((plan, np_in, list(scalars), [self.backend.to_numpy(o) for o in outs]))
        return outs


def _programs(dev: Any) -> None:
    x = burn.tensor(X, device=dev)
    y = burn.tensor(Y, device=dev)
    w = burn.tensor(rng.standard_normal((4, 6)).astype(np.float32), device=dev)
    bias = burn.tensor(rng.standard_normal((6,)).astype(np.float32), device=dev)
    m = x.mean(-1, keepdim=True)
    var = ((x - m) * (x - m)).mean(-1, keepdim=True)
    ((x - m) / (var + 1e-5).sqrt() * y).numpy()  # a layer norm
    mx = x.max(-1, keepdim=True)
    ((x - mx).exp().sum(-1, keepdim=True).log() + mx).numpy()  # log-sum-exp
    e = (x - mx).exp()
    (e / e.sum(-1, keepdim=True)).numpy()  # softmax
    ((x @ w + bias).relu() * 2.0).numpy()  # a matmul epilogue
    (x.abs() + 1).min(-1).numpy()
    ((x > 0.2).float() * x - y.square()).tanh().numpy()


def test_plans_of_real_programs_mean_what_the_reference_runtime_computes(monkeypatch):
    dev = burn.device("cpu", fusion=True)
    fb = dev.backend
    runtime = Recording(fb.inner)
    monkeypatch.setattr(fb, "runtime", runtime)
    for name in ("_programs", "_lengths", "_plans"):
        monkeypatch.setattr(fb, name, type(getattr(fb, name))())
    _programs(dev)
    kinds = {("reduce" if p.reduce else "matmul" if p.matmul else "element-wise") for p, *_ in runtime.runs}
    assert kinds == {"reduce", "matmul", "element-wise"}
    assert any(p.reduce is not None and p.reduce.post for p, *_ in runtime.runs)
    for plan, inputs, scalars, want in runtime.runs:
        got = run(plan, inputs, scalars)
        assert len(got) == len(want), plan
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(plan))
