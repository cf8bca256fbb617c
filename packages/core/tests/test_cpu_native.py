"""Compiled cpu kernels (``burn._native``): the cpu device's fusion runtime rendering element-wise plans to
C, built by the system compiler, against numpy.

- random op graphs (``burn.testing._random_graphs``) on a fused cpu device whose runtime compiles every
  plan at once, against the numpy backend unfused (float64 reference, the helper's tolerances);
- hand-built plans over strided, broadcast and 0-d inputs, every float op of the C table, against the
  reference runtime (numpy op by op) within float32 rounding;
- numpy alone where there is no compiler (``BURN_CPU_NATIVE=0``, none on ``PATH``), a failing build
  falling back to numpy with a warning, and the disk cache reused by a second process.

The compiling tests skip where no C compiler works (a machine without one runs the fallback tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import burn
import numpy as np
import pytest
from burn import _native
from burn._device import _backends
from burn._native import _toolchain
from burn._native._c_renderer import FLOAT_EXPR
from burn._native._runtime import NativeRuntime
from burn.fusion import FusedKernel, FusedOp, FusedReduce, Fusion, ReferenceRuntime
from burn.testing._random_graphs import (
    RandomGraph,
    Step,
    check_calls_and_replay,
    ci_settings,
    fixed_graph_calls,
    graphs,
)
from hypothesis import given

TC = _native.toolchain()
needs_cc = pytest.mark.skipif(not TC.available, reason=f"no working C compiler: {TC.reason}")
CPU = burn.device("cpu").backend
F32 = burn.float32


@pytest.fixture
def native_device() -> Any:
    """The shared ``cpu+fusion`` device, its backend swapped for one whose runtime compiles each plan
    the first time it runs (the default waits for a plan to repeat)."""
    dev = burn.device("cpu", fusion=True)
    key = dev._key()
    saved = _backends.get(key)
    fb = Fusion(CPU, device=dev, runtime=NativeRuntime(CPU, TC, after=0))
    _backends[key] = fb
    try:
        yield dev
    finally:
        if saved is None:
            _backends.pop(key, None)
        else:
            _backends[key] = saved


@needs_cc
@ci_settings(20)
@given(graphs(max_steps=8))
def test_random_graphs_on_compiled_kernels(native_device: Any, graph: RandomGraph) -> None:
    check_calls_and_replay(graph, native_device, "cpu native", 2)


@needs_cc
def test_the_graphs_reach_compiled_kernels(native_device: Any) -> None:
    """A fixed graph of the kind above runs element-wise and reduce kernels compiled (not numpy)."""
    steps = [
        Step("block", (2, True, "gelu")),
        Step("scalar", ("mul", 2.0)),
        Step("reduce", ("mean", -1, True)),
    ]
    fixed_graph_calls(native_device, steps, 2, "cpu native")
    rt = native_device.backend.runtime
    assert rt.native_runs > 0 and not rt.failures
    assert {key[1] for key in rt._kernels} == {"native", "native_reduce"}  # (plan key, kind, layout...)


def _plan(kind: str, name: str, n_in: int, shape: tuple[int, ...]) -> FusedKernel:
    """``name`` over inputs 0.. times input 0."""
    ops = (FusedOp(kind, name, F32, F32, tuple(range(n_in))), FusedOp("binary", "mul", F32, F32, (n_in, 0)))
    return FusedKernel(shape, (F32,) * n_in, (), ops, (n_in + 1,))


def _both(plan: FusedKernel, inputs: list[Any], scalars: tuple[Any, ...] = ()) -> tuple[list[Any], list[Any]]:
    rt = NativeRuntime(CPU, TC, after=0)
    with np.errstate(all="ignore"):
        got = rt.execute(plan, inputs, list(scalars))
        assert rt.native_runs == 1, rt.failures
        return got, ReferenceRuntime(CPU).execute(plan, inputs, list(scalars))


BOOL_RESULT = {"isnan", "isinf", "eq", "ne", "lt", "le", "gt", "ge"}
POSITIVE = {"log", "sqrt", "rsqrt", "pow"}  # read input 1 (positive); asin/acos read input 2 (in (-1, 1))


@needs_cc
@pytest.mark.parametrize("kind", ["unary", "binary"])
def test_every_float_op_matches_numpy(kind: str) -> None:
    """One kernel running every op of the table on the same inputs (NaN, infinities, signed zeros and
    zero divisors among them), each op one output, against numpy op by op."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((5, 7)) * 2).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    y = (rng.standard_normal((5, 7)) * 2).astype(np.float32)
    y[1, :2] = [0.0, np.nan]
    inputs = [x, np.abs(x) + 0.5, np.clip(x, -0.9, 0.9), y]
    names = list(FLOAT_EXPR[kind])
    ops = []
    for name in names:
        a = 1 if name in POSITIVE else 2 if name in ("asin", "acos") else 0
        args = (a,) if kind == "unary" else (a, 3)
        ops.append(FusedOp(kind, name, F32, burn.bool_ if name in BOOL_RESULT else F32, args))
    plan = FusedKernel(x.shape, (F32,) * 4, (), tuple(ops), tuple(range(4, 4 + len(ops))))
    got, want = _both(plan, inputs)
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_allclose(g, w, rtol=3e-6, atol=1e-6, equal_nan=True, err_msg=name)


@needs_cc
def test_strided_broadcast_and_scalar_inputs() -> None:
    """Inputs read in place through their strides: a transpose, a row broadcast, a 0-d array, a
    sliced view, with a scalar and a where/clamp/cast chain; outputs are new dense arrays."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((6, 9)).astype(np.float32)
    xt = base.T  # (9, 6), not contiguous
    row = rng.standard_normal((1, 6)).astype(np.float32)
    zero_d = np.asarray(np.float32(0.25))
    sliced = rng.standard_normal((9, 12)).astype(np.float32)[:, ::2]
    f, b = F32, burn.bool_
    ops = (
        FusedOp("binary", "add", f, f, (0, 1)),  # 5 = xt + row
        FusedOp("binary", "mul", f, f, (5, 4)),  # 6 = 5 * scalar
        FusedOp("binary", "gt", f, b, (6, 2)),  # 7 = 6 > zero_d
        FusedOp("where", "where", f, f, (7, 6, 3)),  # 8 = where(7, 6, sliced)
        FusedOp("clamp", "clamp", f, f, (8, 4, 2)),  # 9 = clamp(8, scalar, zero_d): lo > hi gives hi
        FusedOp("unary", "tanh", f, f, (8,)),  # 10
        FusedOp("cast", "float64", f, burn.float64, (10,)),  # 11
    )
    plan = FusedKernel((9, 6), (f, f, f, f), (f,), ops, (9, 11, 7))
    got, want = _both(plan, [xt, row, zero_d, sliced], (1.5,))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and g.flags.c_contiguous
        np.testing.assert_allclose(g, w, rtol=3e-6, atol=1e-7)


@needs_cc
@pytest.mark.parametrize(
    ("op", "dims", "keepdim"), [("mean", (2,), True), ("sum", (1, 2), False), ("max", (0, 1, 2), False)]
)
def test_reduce_kernels_with_epilogues(op: str, dims: tuple[int, ...], keepdim: bool) -> None:
    """A reduce kernel compiled whole: the chain ``(x - m)^2`` over a transposed input and a broadcast
    one, the reduction, then the epilogue ``rsqrt(r + eps) * w`` reading an input at the result's
    position; against numpy op by op. NaN in a max propagates."""
    rng = np.random.default_rng(2)
    x = np.ascontiguousarray(rng.standard_normal((3, 4, 5)).astype(np.float32)).transpose(2, 1, 0)
    m = rng.standard_normal((1, 1, 3)).astype(np.float32)
    if op == "max":
        x = x.copy()
        x[1, 2, 0] = np.nan
    red_shape = FusedReduce(op, dims, keepdim).shape(x.shape)
    w = np.abs(rng.standard_normal(red_shape)).astype(np.float32) + 0.5
    f = F32
    ops = (FusedOp("binary", "sub", f, f, (0, 1)), FusedOp("unary", "square", f, f, (4,)))
    post = (
        FusedOp("binary", "add", f, f, (6, 3)),
        FusedOp("unary", "rsqrt", f, f, (7,)),
        FusedOp("binary", "mul", f, f, (8, 2)),
    )
    red = FusedReduce(op, dims, keepdim, post, (6, 9))
    plan = FusedKernel(x.shape, (f, f, f), (f,), ops, (5,), reduce=red)
    got, want = _both(plan, [x, m, w], (1e-3,))
    for g, v in zip(got, want):
        assert g.shape == v.shape
        np.testing.assert_allclose(g, v, rtol=2e-5, atol=1e-6, equal_nan=True)


def test_numpy_alone_without_a_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    """``BURN_CPU_NATIVE=0`` and a machine without a compiler: no native runtime, the reason said."""
    monkeypatch.setenv("BURN_CPU_NATIVE", "0")
    assert _native.runtime_for(CPU) is None
    assert _native.describe()["reason"] == "BURN_CPU_NATIVE=0"
    monkeypatch.delenv("BURN_CPU_NATIVE")
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(_toolchain.shutil, "which", lambda name: None)
    assert _native.runtime_for(CPU) is None
    assert "no C compiler" in _native.describe()["reason"]
    monkeypatch.setenv("CC", "/nonexistent/cc")
    assert "not an executable" in _native.toolchain().reason
    # fusion then runs its plans on numpy, with the same results
    fb = Fusion(CPU, runtime=_native.runtime_for(CPU))
    assert type(fb.runtime) is ReferenceRuntime


def test_a_failing_build_falls_back_to_numpy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    broken = _toolchain.Toolchain(sys.executable, ("-c", "raise SystemExit(3)"))
    rt = NativeRuntime(CPU, broken, after=0)
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    plan = _plan("unary", "tanh", 1, x.shape)
    with pytest.warns(RuntimeWarning, match="runs on numpy"):
        (got,) = rt.execute(plan, [x], [])
    np.testing.assert_allclose(got, np.tanh(x) * x, rtol=1e-6)
    (again,) = rt.execute(plan, [x], [])  # tried once: numpy from then on, no second warning
    np.testing.assert_array_equal(again, got)
    assert rt.native_runs == 0 and len(rt.failures) == 1


_SECOND_PROCESS = """
import numpy as np, burn
from burn._native import _toolchain, toolchain
from burn._native._runtime import NativeRuntime
from burn.fusion import FusedKernel, FusedOp
calls = []
real = _toolchain._compile
_toolchain._compile = lambda *a: calls.append(a) or real(*a)
f = burn.float32
plan = FusedKernel((4,), (f,), (f,), (FusedOp("binary", "mul", f, f, (0, 1)), FusedOp("unary", "exp", f, f, (2,))), (3,))
rt = NativeRuntime(burn.device("cpu").backend, toolchain(), after=0)
(out,) = rt.execute(plan, [np.arange(4, dtype=np.float32)], [0.5])
assert rt.native_runs == 1, rt.failures
np.testing.assert_allclose(out, np.exp(np.arange(4) * 0.5), rtol=1e-6)
print(len(calls))
"""


@needs_cc
def test_the_disk_cache_serves_a_second_process(tmp_path: Path) -> None:
    env = {**os.environ, "BURN_CACHE_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("BURN_CPU_NATIVE", None)

    def run() -> int:
        done = subprocess.run(
            [sys.executable, "-c", _SECOND_PROCESS], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip())

    assert run() >= 1  # the first process probes the compiler and builds the kernel
    libraries = sorted((tmp_path / "native").glob("*.so"))
    assert len(libraries) == 1
    assert run() == 0  # the second finds the flags and the library on disk: no compiler run
    assert sorted((tmp_path / "native").glob("*.so")) == libraries


def test_burn_info_says_how_cpu_kernels_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from burn._cli import _cpu_kernels, _cpu_kernels_line

    row = _cpu_kernels()
    assert row["native"] == TC.available
    if TC.available:
        assert _cpu_kernels_line(row).startswith(f"  compiled C: {TC.path}")
    monkeypatch.setenv("BURN_CPU_NATIVE", "0")
    line = _cpu_kernels_line(_cpu_kernels())
    assert line == "  numpy (no compiled kernels: BURN_CPU_NATIVE=0)"
