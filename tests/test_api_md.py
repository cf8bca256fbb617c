"""An executable check of ../shared/API.md: every snippet and name there, called as a user would.

One test (or one parametrized table) per API.md section, in the page's order. Values are compared with
an independent numpy formulation (float32 results against float64 references: rtol 1e-5, atol 1e-6
unless a row says otherwise). Sections whose names live in optional distributions (burn_train, the
metric plugins, the GPU backends) check what the installed package offers; a GPU backend that cannot
run here must say why.
"""

from __future__ import annotations

import gzip
import json
import math
import operator
import struct
from dataclasses import field

import burn
import numpy as np
import pytest
from burn import nn
from burn.nn import functional as F

CPU = burn.device("cpu")
ADEV = burn.device("cpu", autodiff=True)
RTOL, ATOL = 1e-5, 1e-6


def close(got: object, want: object, rtol: float = RTOL, atol: float = ATOL) -> None:
    """``got`` (a tensor or array) equals ``want`` in shape and values."""
    got = got.numpy() if isinstance(got, burn.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# ====================================================================== devices, backends, tensors
def test_backends_report_name_availability_reason_devices_version():
    infos = burn.backends()
    assert isinstance(infos, list) and infos
    for info in infos:
        assert isinstance(info, burn.BackendInfo)
        assert isinstance(info.name, str) and isinstance(info.available, bool)
        assert isinstance(info.reason, str) and isinstance(info.devices, list)
        assert isinstance(info.version, str)
        # a distribution's version; a plugin registered from code (tests' core-only backend) has none
        assert info.version or info.dist == "(registered in code)", info
        assert info.available or info.reason, f"{info.name} is unavailable without a reason"
    numpy_backend = {i.name: i for i in infos}["ndarray"]
    assert numpy_backend.available and "cpu" in numpy_backend.devices


def test_cpu_auto_autodiff_devices_and_seed():
    cpu = burn.device("cpu")
    assert cpu == CPU and str(cpu) == "cpu" and not cpu.autodiff
    x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=cpu)
    assert x.device == cpu and x.dtype is burn.float32

    auto = burn.device("auto")  # the best available backend
    assert auto.kind in {i.name for i in burn.backends() if i.available}
    assert burn.ones((2,), device=auto).tolist() == [1.0, 1.0]

    adev = burn.device("cpu", autodiff=True)
    assert adev.autodiff and adev.inner == cpu and adev == ADEV

    burn.seed(0)
    first = burn.rand((5,)).tolist()
    burn.seed(0)
    assert burn.rand((5,)).tolist() == first


@pytest.mark.parametrize("name", ["wgpu", "cuda"])
def test_gpu_devices_run_or_say_why(name):
    info = {i.name: i for i in burn.backends()}.get(name)
    if info is None:  # the plugin distribution is not installed: the name is unknown
        with pytest.raises(burn.DeviceError, match=name):
            burn.device(name)
        return
    dev = burn.device(name)
    if not info.available:  # e.g. cuda here: no CuPy / no driver
        for spec in (name, f"{name}:0"):
            with pytest.raises(burn.BackendUnavailableError) as exc:
                burn.zeros((2,), device=burn.device(spec))
            assert name in str(exc.value) and info.reason in str(exc.value)
        with pytest.raises(burn.BackendUnavailableError, match="unavailable"):
            burn.tensor([1.0], device=burn.device(name, autodiff=True))
        return

    x = burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev)
    assert x.device == dev
    close(x @ x, [[7.0, 10.0], [15.0, 22.0]])
    assert x.to(CPU).device == CPU and x.to(CPU).tolist() == x.tolist()
    # from_numpy: the dtype follows the array where the backend supports it, else its default of the kind
    f64 = burn.from_numpy(np.array([0.5, 1.5]), device=dev)
    assert f64.dtype is (burn.float64 if burn.float64 in dev.backend.dtypes else dev.backend.default_float)
    unsupported = [d for d in (burn.float64, burn.int64, burn.int8) if d not in dev.backend.dtypes]
    for dt in unsupported:  # asking for a dtype the backend lacks is a clear error
        with pytest.raises(burn.DTypeError, match=dt.name):
            burn.zeros((2,), dtype=dt, device=dev)

    adev = burn.device(name, autodiff=True)
    w = burn.tensor([1.0, -2.0], device=adev).require_grad()
    grads = (w * w).sum().backward()
    close(w.grad(grads), [2.0, -4.0])

    for spec in info.devices:  # "wgpu:0", "wgpu:1", ...: each listed device runs
        d = burn.device(spec)
        assert d.kind == name and d.index == int(spec.split(":")[1])
        assert burn.ones((3,), device=d).sum().item() == 3.0


# fmt: off
CREATION = [
    ("tensor", lambda: burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=CPU), [[1, 2], [3, 4]], "float32"),
    ("tensor-ints", lambda: burn.tensor([1, 2, 3]), [1, 2, 3], "int64"),
    ("tensor-bools", lambda: burn.tensor([True, False]), [True, False], "bool"),
    ("zeros", lambda: burn.zeros((2, 3)), np.zeros((2, 3)), "float32"),
    ("zeros-ints", lambda: burn.zeros(2, 3), np.zeros((2, 3)), "float32"),
    ("zeros-keywords", lambda: burn.zeros(shape=(2, 3), dtype=burn.int32, device=CPU), np.zeros((2, 3)), "int32"),
    ("ones", lambda: burn.ones((3,), dtype=None, device=None), np.ones(3), "float32"),
    ("ones-keywords", lambda: burn.ones(shape=(1, 2), dtype=burn.float64, device=CPU), [[1, 1]], "float64"),
    ("full", lambda: burn.full((2, 2), 7.5), np.full((2, 2), 7.5), "float32"),
    ("full-int", lambda: burn.full(shape=(3,), value=4), [4, 4, 4], "int64"),
    ("arange", lambda: burn.arange(1, 7, 2), [1, 3, 5], "int64"),
    ("arange-stop", lambda: burn.arange(4), [0, 1, 2, 3], "int64"),
    ("arange-floats", lambda: burn.arange(start=0.0, stop=1.0, step=0.25), [0, 0.25, 0.5, 0.75], "float32"),
    ("linspace", lambda: burn.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5), "float32"),
    ("eye", lambda: burn.eye(3), np.eye(3), "float32"),
    ("eye-keywords", lambda: burn.eye(n=2, dtype=burn.int32), np.eye(2), "int32"),
    ("zeros_like", lambda: burn.zeros_like(burn.tensor([[1, 2]], dtype=burn.int32)), [[0, 0]], "int32"),
    ("ones_like", lambda: burn.ones_like(burn.tensor([1.5, 2.5])), [1, 1], "float32"),
]
# fmt: on


@pytest.mark.parametrize("make, want, dtype", [c[1:] for c in CREATION], ids=[c[0] for c in CREATION])
def test_creation_functions(make, want, dtype):
    t = make()
    assert isinstance(t, burn.Tensor) and t.dtype is getattr(burn, dtype) and t.device == CPU
    close(t, want)


def test_random_creation_and_from_numpy():
    burn.seed(3)
    u = burn.rand((2000,))
    assert u.shape == (2000,) and u.dtype is burn.float32
    assert 0.0 <= u.min().item() and u.max().item() < 1.0 and abs(u.mean().item() - 0.5) < 0.03
    n = burn.randn((4000,)).numpy()
    assert n.dtype == np.float32 and abs(n.mean()) < 0.06 and abs(n.std() - 1.0) < 0.05
    r = burn.randint(2, 5, (500,))
    assert r.dtype is burn.int64 and set(r.tolist()) == {2, 3, 4}
    assert burn.randint(low=0, high=2, shape=(3, 2)).shape == (3, 2)
    assert burn.rand(shape=(2, 3)).shape == burn.randn(shape=(2, 3)).shape == (2, 3)

    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    x = burn.from_numpy(arr, device=ADEV)
    arr[0, 0] = 100.0  # a copy: later changes to the array do not reach the tensor
    assert x.device == ADEV and x.dtype is burn.float64 and x[0, 0].item() == 0.0
    for np_dtype, dtype in ((np.int32, burn.int32), (np.uint8, burn.uint8), (np.bool_, burn.bool)):
        assert burn.from_numpy(np.zeros(2, dtype=np_dtype)).dtype is dtype


def test_tensor_attributes_and_conversions():
    data = [[1.5, -2.75, 3.0], [4.0, 5.0, 6.25]]
    t = burn.tensor(data, device=CPU)
    assert t.shape == (2, 3) and isinstance(t.shape, tuple)
    assert t.ndim == 2 and t.dtype is burn.float32 and t.device == CPU and len(t) == 2
    arr = t.numpy()
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32
    np.testing.assert_array_equal(arr, np.array(data, np.float32))
    assert t.tolist() == data
    assert t[1, 2].item() == 6.25 and isinstance(t[1, 2].item(), float)
    with pytest.raises(ValueError, match="one element"):
        t.item()
    np.testing.assert_array_equal(np.asarray(t), arr)

    moved = t.to(ADEV)
    assert moved.device == ADEV and moved.tolist() == data
    assert moved.to(CPU).device == CPU and t.to("cpu").device == CPU
    truncated = t.cast(burn.int32)  # float -> int truncates toward zero
    assert truncated.dtype is burn.int32 and truncated.tolist() == [[1, -2, 3], [4, 5, 6]]
    assert t.to(burn.float64).dtype is burn.float64 and t.to(burn.float64).tolist() == data
    assert t.cast("float16").dtype is burn.float16


DTYPE_NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool"]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_names_and_backend_support(name):
    dt = getattr(burn, name)
    assert isinstance(dt, burn.DType) and dt.name == name and burn.dtype(name) is dt
    if dt in CPU.backend.dtypes:  # the backend states which dtypes it supports
        t = burn.ones((2,), dtype=dt, device=CPU)
        assert t.dtype is dt and t.cast(burn.float32).tolist() == [1.0, 1.0]
    else:
        with pytest.raises(burn.DTypeError, match=f"{name}.*supported"):
            burn.ones((2,), dtype=dt, device=CPU)


# ====================================================================== operations
A = np.array([[1.5, 2.0, 3.0], [4.0, 5.5, 6.0]], np.float32)
B = np.array([1.0, 2.0, 4.0], np.float32)  # broadcasts against A's rows

BINARY_OPERATORS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@pytest.mark.parametrize("symbol", list(BINARY_OPERATORS))
def test_binary_operators_broadcast_and_take_scalars_on_both_sides(symbol):
    op = BINARY_OPERATORS[symbol]
    a, b = burn.tensor(A), burn.tensor(B)
    two, three = np.float32(2.0), np.float32(3.0)
    for got, want in ((op(a, b), op(A, B)), (op(a, 2.0), op(A, two)), (op(3.0, a), op(three, A))):
        if want.dtype == np.bool_:
            assert got.dtype is burn.bool
        close(got, want)


def test_matmul_unary_and_bitwise_operators():
    c = np.arange(6, dtype=np.float32).reshape(3, 2)
    close(burn.tensor(A) @ burn.tensor(c), A @ c)
    close(-burn.tensor(A), -A)
    close(abs(burn.tensor(-A)), A)
    p, q = np.array([True, False, True, False]), np.array([True, True, False, False])
    i, j = np.array([12, 10, -3]), np.array([10, 6, 5])
    for x, y in ((p, q), (i, j)):
        tx, ty = burn.tensor(x), burn.tensor(y)
        np.testing.assert_array_equal((tx & ty).numpy(), x & y)
        np.testing.assert_array_equal((tx | ty).numpy(), x | y)
        np.testing.assert_array_equal((tx ^ ty).numpy(), x ^ y)
        np.testing.assert_array_equal((~tx).numpy(), ~x)
    np.testing.assert_array_equal((True & burn.tensor(p)).numpy(), p)
    np.testing.assert_array_equal((burn.tensor(i) | 1).numpy(), i | 1)


SIGNED = np.array([-2.5, -0.5, 0.5, 1.5, 2.5, 0.3], np.float32)  # halves: round half to even
POSITIVE = np.array([0.25, 0.5, 1.0, 2.0, 3.5, 0.1], np.float32)
ELEMENTWISE = [
    ("abs", SIGNED, np.abs),
    ("exp", SIGNED, np.exp),
    ("log", POSITIVE, np.log),
    ("log1p", POSITIVE, np.log1p),
    ("sqrt", POSITIVE, np.sqrt),
    ("rsqrt", POSITIVE, lambda x: 1.0 / np.sqrt(x.astype(np.float64))),
    ("sin", SIGNED, np.sin),
    ("cos", SIGNED, np.cos),
    ("tan", SIGNED, np.tan),
    ("tanh", SIGNED, np.tanh),
    ("sigmoid", SIGNED, lambda x: 1.0 / (1.0 + np.exp(-x.astype(np.float64)))),
    ("erf", SIGNED, np.vectorize(math.erf)),
    ("floor", SIGNED, np.floor),
    ("ceil", SIGNED, np.ceil),
    ("round", SIGNED, np.round),
    ("sign", SIGNED, np.sign),
    ("reciprocal", POSITIVE, lambda x: 1.0 / x.astype(np.float64)),
]


@pytest.mark.parametrize("name, x, ref", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_ops(name, x, ref):
    close(getattr(burn.tensor(x), name)(), ref(x))


def test_elementwise_ops_with_arguments():
    x = burn.tensor(SIGNED)
    close(burn.tensor(POSITIVE).pow(2.0), POSITIVE.astype(np.float64) ** 2)
    close(burn.tensor(POSITIVE).pow(burn.tensor(SIGNED)), POSITIVE.astype(np.float64) ** SIGNED)
    close(x.clamp(-1.0, 1.0), np.clip(SIGNED, -1.0, 1.0))
    close(x.clamp(min=0.0, max=2.0), np.clip(SIGNED, 0.0, 2.0))
    close(x.clamp(min=0.4), np.maximum(SIGNED, 0.4))
    close(x.remainder(2.0), np.remainder(SIGNED, 2.0))  # the sign of the divisor (Python's %)
    close(x.fmod(2.0), np.fmod(SIGNED, 2.0))  # the sign of the dividend (C's fmod)
    special = burn.tensor([np.nan, np.inf, -np.inf, 1.0])
    assert special.isnan().tolist() == [True, False, False, False]
    assert special.isinf().tolist() == [False, True, True, False]


X3 = rng(1).uniform(0.5, 1.5, size=(2, 3, 4)).astype(np.float32)
REDUCTIONS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}
REDUCE_DIMS = [None, 1, -1, (0, 2)]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", REDUCE_DIMS, ids=str)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(name, dim, keepdim):
    t = burn.tensor(X3)
    want = REDUCTIONS[name](X3.astype(np.float64), axis=dim, keepdims=keepdim)
    close(getattr(t, name)(dim, keepdim), want)
    close(getattr(t, name)(dim=dim, keepdim=keepdim), want)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", REDUCE_DIMS, ids=str)
def test_var_std_all_any_argmax_argmin(dim, keepdim):
    t, x = burn.tensor(X3), X3.astype(np.float64)
    for correction in (1, 0):
        close(
            t.var(dim, correction=correction, keepdim=keepdim),
            np.var(x, dim, ddof=correction, keepdims=keepdim),
        )
        close(
            t.std(dim=dim, correction=correction, keepdim=keepdim),
            np.std(x, dim, ddof=correction, keepdims=keepdim),
        )
    close(t.var(dim), np.var(x, dim, ddof=1))  # correction=1 by default
    mask = X3 > 1.0
    np.testing.assert_array_equal(
        burn.tensor(mask).all(dim, keepdim).numpy(), mask.all(dim, keepdims=keepdim)
    )
    np.testing.assert_array_equal(
        burn.tensor(mask).any(dim=dim, keepdim=keepdim).numpy(), mask.any(dim, keepdims=keepdim)
    )
    # argmax/argmin over a tuple index the reduced dims flattened in row-major order (NumPy's rule)
    for name in ("argmax", "argmin"):
        if isinstance(dim, tuple):
            kept = [d for d in range(3) if d not in dim]
            moved = np.moveaxis(X3, dim, (1, 2)).reshape(X3.shape[kept[0]], -1)
            want = getattr(moved, name)(axis=1)
            if keepdim:
                want = np.expand_dims(want, dim)
        else:
            want = getattr(np, name)(X3, axis=dim, keepdims=keepdim)
        got = getattr(burn.tensor(X3), name)(dim, keepdim)
        assert got.dtype.is_int
        np.testing.assert_array_equal(got.numpy(), want)


def test_max_dim_min_dim_and_their_indices():
    t = burn.tensor(X3)
    close(t.max_dim(1), X3.max(1, keepdims=True))
    close(t.min_dim(2), X3.min(2, keepdims=True))
    values, indices = t.max_dim_with_indices(1)
    close(values, X3.max(1, keepdims=True))
    np.testing.assert_array_equal(indices.numpy(), X3.argmax(1)[:, None])
    values, indices = t.min_dim_with_indices(0)
    close(values, X3.min(0, keepdims=True))
    np.testing.assert_array_equal(indices.numpy(), X3.argmin(0)[None])


X24 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
# fmt: off
SHAPE_OPS = [
    ("reshape", lambda t: t.reshape(4, -1), lambda a: a.reshape(4, -1)),
    ("reshape-tuple", lambda t: t.reshape((6, 4)), lambda a: a.reshape(6, 4)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    ("transpose-keywords", lambda t: t.transpose(d0=0, d1=2), lambda a: np.swapaxes(a, 0, 2)),
    ("flatten", lambda t: t.flatten(1, 2), lambda a: a.reshape(2, 12)),
    ("flatten-keywords", lambda t: t.flatten(start=0, end=1), lambda a: a.reshape(6, 4)),
    ("flatten-all", lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("unsqueeze", lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    ("unsqueeze-keyword", lambda t: t.unsqueeze(dim=-1), lambda a: a[..., None]),
    ("squeeze", lambda t: t[:, :1].squeeze(), lambda a: a[:, 0]),
    ("squeeze-dim", lambda t: t[:1].squeeze(dim=0), lambda a: a[0]),
    ("expand", lambda t: t[:1].expand(3, 3, 4), lambda a: np.broadcast_to(a[:1], (3, 3, 4))),
    ("repeat", lambda t: t.repeat(1, 2, 1), lambda a: np.tile(a, (1, 2, 1))),
    ("flip", lambda t: t.flip(1), lambda a: np.flip(a, 1)),
    ("flip-dims", lambda t: t.flip(dims=(0, 2)), lambda a: np.flip(a, (0, 2))),
    ("narrow", lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    ("narrow-keywords", lambda t: t.narrow(dim=2, start=1, len=2), lambda a: a[:, :, 1:3]),
    ("index-int", lambda t: t[1], lambda a: a[1]),
    ("index-slices", lambda t: t[:, 1:, ::2], lambda a: a[:, 1:, ::2]),
    ("index-negative-steps", lambda t: t[::-1, :, 3:0:-2], lambda a: a[::-1, :, 3:0:-2]),
    ("index-none-ellipsis", lambda t: t[None, ..., 0], lambda a: a[None, ..., 0]),
    ("index-int-tensor", lambda t: t[burn.tensor([1, 0, 1])], lambda a: a[[1, 0, 1]]),
    ("index-int-tensor-dim1", lambda t: t[:, burn.tensor([2, 0])], lambda a: a[:, [2, 0]]),
    ("slice_assign", lambda t: t.slice_assign((slice(None), 1), 0.0), lambda a: _assigned(a, (slice(None), 1), 0.0)),
    ("slice_assign-tensor", lambda t: t.slice_assign((0, slice(0, 2)), burn.ones((2, 4))), lambda a: _assigned(a, (0, slice(0, 2)), 1.0)),
]
# fmt: on


def _assigned(a: np.ndarray, index: tuple, value: float) -> np.ndarray:
    out = a.copy()
    out[index] = value
    return out


@pytest.mark.parametrize("op, ref", [s[1:] for s in SHAPE_OPS], ids=[s[0] for s in SHAPE_OPS])
def test_shape_ops_and_indexing(op, ref):
    close(op(burn.tensor(X24)), ref(X24))


def test_joining_and_splitting():
    a, b = burn.tensor(X24[0]), burn.tensor(X24[1])
    close(burn.cat([a, b], 1), np.concatenate([X24[0], X24[1]], 1))
    close(burn.cat([a, b], dim=0), np.concatenate([X24[0], X24[1]], 0))
    close(burn.stack([a, b], 2), np.stack([X24[0], X24[1]], 2))
    close(burn.stack([a, b], dim=0), X24)
    x = burn.tensor(np.arange(10, dtype=np.float32).reshape(2, 5))
    parts = [
        x.split(2, 1),
        x.split(size_or_sizes=2, dim=1),
        x.split([1, 4], 1),
        x.split(size_or_sizes=[1, 4], dim=1),
        x.chunk(3, 1),
        x.chunk(n=3, dim=1),
    ]
    widths = [[2, 2, 1], [2, 2, 1], [1, 4], [1, 4], [2, 2, 1], [2, 2, 1]]
    for pieces, want in zip(parts, widths):
        assert [p.shape[1] for p in pieces] == want
        close(burn.cat(pieces, 1), x.numpy())
    # API.md's names and PyTorch's both work; giving both is a clear error
    assert len(x.chunk(chunks=5, dim=1)) == 5 and len(x.split(split_size_or_sections=4, dim=1)) == 2
    with pytest.raises(TypeError, match="chunks= and its alias n="):
        x.chunk(chunks=2, n=2)
    with pytest.raises(TypeError, match="shape"):
        burn.zeros((2,), shape=(2,))


SORTABLE = np.array([[3.0, -1.0, 2.5, 7.0], [0.5, 4.0, -2.0, 1.0]], np.float32)  # distinct values
GATHER_INDEX = np.array([[2, 0, 0, 1], [1, 1, 2, 0]])
MASK = np.array([[True, False, False, True], [False, True, False, False]])
# fmt: off
INDEX_OPS = [
    ("gather", lambda t: t.gather(1, burn.tensor([[3, 0], [1, 1]])), lambda a: np.take_along_axis(a, np.array([[3, 0], [1, 1]]), 1)),
    ("gather-keywords", lambda t: t.gather(dim=0, index=burn.tensor(GATHER_INDEX % 2)), lambda a: np.take_along_axis(a, GATHER_INDEX % 2, 0)),
    ("scatter_add", lambda t: t.scatter_add(1, burn.tensor(GATHER_INDEX), burn.ones((2, 4))), lambda a: _scatter_add(a, GATHER_INDEX, np.ones((2, 4)))),
    ("scatter_add-keywords", lambda t: t.scatter_add(dim=1, index=burn.tensor(GATHER_INDEX), src=burn.ones((2, 4))), lambda a: _scatter_add(a, GATHER_INDEX, np.ones((2, 4)))),
    ("select", lambda t: t.select(1, burn.tensor([3, 0, 3])), lambda a: a[:, [3, 0, 3]]),
    ("select-keywords", lambda t: t.select(dim=0, indices=[1]), lambda a: a[[1]]),
    ("mask_fill", lambda t: t.mask_fill(burn.tensor(MASK), -9.0), lambda a: np.where(MASK, -9.0, a)),
    ("mask_fill-keywords", lambda t: t.mask_fill(mask=burn.tensor(MASK[1]), value=0.0), lambda a: np.where(MASK[1], 0.0, a)),
    ("where", lambda t: burn.where(burn.tensor(MASK), t, -t), lambda a: np.where(MASK, a, -a)),
    ("where-scalars", lambda t: burn.where(t > 1.0, t, 0.0), lambda a: np.where(a > 1.0, a, 0.0)),
    ("tril", lambda t: t.tril(), np.tril),
    ("tril-k", lambda t: t.tril(1), lambda a: np.tril(a, 1)),
    ("tril-keyword", lambda t: t.tril(k=-1), lambda a: np.tril(a, -1)),
    ("triu", lambda t: t.triu(k=1), lambda a: np.triu(a, 1)),
    ("triu-k", lambda t: t.triu(-1), lambda a: np.triu(a, -1)),
    ("sort", lambda t: t.sort(1), lambda a: np.sort(a, 1)),
    ("sort-descending", lambda t: t.sort(1, True), lambda a: -np.sort(-a, 1)),
    ("sort-keywords", lambda t: t.sort(dim=0, descending=True), lambda a: -np.sort(-a, 0)),
    ("argsort", lambda t: t.argsort(1), lambda a: np.argsort(a, 1)),
    ("argsort-descending", lambda t: t.argsort(dim=1, descending=True), lambda a: np.argsort(-a, 1)),
    ("topk", lambda t: t.topk(2, 1), lambda a: -np.sort(-a, 1)[:, :2]),
    ("topk-keywords", lambda t: t.topk(k=1, dim=0), lambda a: a.max(0, keepdims=True)),
    ("cumsum", lambda t: t.cumsum(1), lambda a: np.cumsum(a.astype(np.float64), 1)),
    ("cumsum-keyword", lambda t: t.cumsum(dim=0), lambda a: np.cumsum(a.astype(np.float64), 0)),
    ("cumprod", lambda t: t.cumprod(1), lambda a: np.cumprod(a.astype(np.float64), 1)),
    ("pad", lambda t: t.pad((1, 2)), lambda a: np.pad(a, ((0, 0), (1, 2)))),
    ("pad-value", lambda t: t.pad((1, 0, 0, 1), mode="constant", value=5.0), lambda a: np.pad(a, ((0, 1), (1, 0)), constant_values=5.0)),
    ("pad-reflect", lambda t: t.pad((2, 1), mode="reflect"), lambda a: np.pad(a, ((0, 0), (2, 1)), mode="reflect")),
    ("pad-edge", lambda t: t.pad([1, 1, 1, 0], mode="edge"), lambda a: np.pad(a, ((1, 0), (1, 1)), mode="edge")),
]
# fmt: on


def _scatter_add(a: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = a.astype(np.float64).copy()
    rows = np.arange(index.shape[0])[:, None].repeat(index.shape[1], 1)
    np.add.at(out, (rows, index), src)
    return out


@pytest.mark.parametrize("op, ref", [s[1:] for s in INDEX_OPS], ids=[s[0] for s in INDEX_OPS])
def test_indexing_sorting_scan_and_pad_ops(op, ref):
    close(op(burn.tensor(SORTABLE)), ref(SORTABLE))


def test_one_hot_and_sort_indices():
    labels = np.array([2, 0, 3])
    hot = burn.tensor(labels).one_hot(4)
    assert hot.dtype.is_int and hot.tolist() == np.eye(4, dtype=int)[labels].tolist()
    assert burn.tensor(labels).one_hot(num_classes=5).shape == (3, 5)
    values, indices = burn.tensor(SORTABLE).topk_with_indices(2, 1)
    np.testing.assert_array_equal(indices.numpy(), np.argsort(-SORTABLE, 1)[:, :2])
    close(values, -np.sort(-SORTABLE, 1)[:, :2])


def test_transaction_reads_several_tensors():
    a = burn.ones((2,))
    b = burn.arange(3)
    c = burn.tensor([[0.5]], device=ADEV).require_grad() * 2.0
    out = burn.Transaction().register(a).register(b).register(c).execute()
    assert isinstance(out, list) and len(out) == 3 and all(isinstance(o, np.ndarray) for o in out)
    np.testing.assert_array_equal(out[0], [1.0, 1.0])
    np.testing.assert_array_equal(out[1], [0, 1, 2])
    np.testing.assert_array_equal(out[2], [[1.0]])


# ====================================================================== autodiff
def test_autodiff_snippet():
    data = [[1.0, -2.0], [3.0, 0.5]]
    x = burn.tensor(data, device=ADEV).require_grad()
    loss = (x * x).sum()
    grads = loss.backward()
    assert isinstance(grads, burn.Gradients)
    gx = x.grad(grads)  # on the inner backend: d(sum x^2)/dx = 2x
    assert gx.device == CPU
    close(gx, 2.0 * np.array(data))
    y = x.detach()
    assert not y.is_require_grad and y.tolist() == data
    unused = burn.tensor([1.0], device=ADEV).require_grad()
    assert unused.grad(grads) is None
    # nothing global: a second graph's gradients are independent of the first
    grads2 = (x * 3.0).sum().backward()
    close(x.grad(grads2), np.full((2, 2), 3.0))
    close(x.grad(grads), 2.0 * np.array(data))


# ====================================================================== nn
def _np(t: burn.Tensor) -> np.ndarray:
    return t.numpy().astype(np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _layer_norm(x: np.ndarray, axes: tuple[int, ...], eps: float = 1e-5) -> np.ndarray:
    mean = x.mean(axes, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axes, keepdims=True) + eps)


def _sinusoids(seq: int, d: int) -> np.ndarray:
    pos = np.arange(seq)[:, None]
    i = np.arange(d)[None, :]
    angle = pos / np.power(10000.0, (i - i % 2) / d)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))


# name, config, input shape (or a tensor maker), output shape, reference (module, x) -> array or None
# fmt: off
MODULES = [
    ("Linear", lambda: nn.LinearConfig(4, 3, bias=True, initializer=nn.init.XavierUniform()), (2, 4), (2, 3), lambda m, x: x @ _np(m.weight.val()) + _np(m.bias.val())),
    ("Embedding", lambda: nn.EmbeddingConfig(10, 4), lambda: burn.tensor([[1, 2, 9]]), (1, 3, 4), lambda m, x: _np(m.weight.val())[x]),
    ("Conv1d", lambda: nn.Conv1dConfig(2, 3, 3), (1, 2, 8), (1, 3, 6), None),
    ("Conv2d", lambda: nn.Conv2dConfig((2, 3), (3, 3), padding=1), (1, 2, 5, 5), (1, 3, 5, 5), None),
    ("Conv3d", lambda: nn.Conv3dConfig((1, 2), 3), (1, 1, 4, 4, 4), (1, 2, 2, 2, 2), None),
    ("ConvTranspose1d", lambda: nn.ConvTranspose1dConfig((2, 3), 3, stride=2), (1, 2, 4), (1, 3, 9), None),
    ("ConvTranspose2d", lambda: nn.ConvTranspose2dConfig((2, 1), 2, stride=2), (1, 2, 3, 3), (1, 1, 6, 6), None),
    ("ConvTranspose3d", lambda: nn.ConvTranspose3dConfig((1, 1), 2), (1, 1, 2, 2, 2), (1, 1, 3, 3, 3), None),
    ("MaxPool1d", lambda: nn.MaxPool1dConfig(2, stride=2), (1, 2, 6), (1, 2, 3), lambda m, x: x.reshape(1, 2, 3, 2).max(-1)),
    ("MaxPool2d", lambda: nn.MaxPool2dConfig(2, stride=2), (1, 2, 4, 4), (1, 2, 2, 2), lambda m, x: x.reshape(1, 2, 2, 2, 2, 2).max((3, 5))),
    ("AvgPool1d", lambda: nn.AvgPool1dConfig(3), (1, 2, 6), (1, 2, 4), lambda m, x: np.stack([x[..., i : i + 3].mean(-1) for i in range(4)], -1)),
    ("AvgPool2d", lambda: nn.AvgPool2dConfig((2, 2), stride=2), (1, 1, 4, 4), (1, 1, 2, 2), lambda m, x: x.reshape(1, 1, 2, 2, 2, 2).mean((3, 5))),
    ("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1dConfig(3), (1, 2, 6), (1, 2, 3), lambda m, x: x.reshape(1, 2, 3, 2).mean(-1)),
    ("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2dConfig((2, 3)), (1, 2, 4, 6), (1, 2, 2, 3), lambda m, x: x.reshape(1, 2, 2, 2, 3, 2).mean((3, 5))),
    ("BatchNorm", lambda: nn.BatchNormConfig(3), (4, 3, 2, 2), (4, 3, 2, 2), lambda m, x: x / np.sqrt(1.0 + 1e-5)),  # off autodiff: running stats (mean 0, var 1)
    ("LayerNorm", lambda: nn.LayerNormConfig(4), (2, 3, 4), (2, 3, 4), lambda m, x: _layer_norm(x, (-1,))),
    ("GroupNorm", lambda: nn.GroupNormConfig(2, 4), (2, 4, 3), (2, 4, 3), lambda m, x: _layer_norm(x.reshape(2, 2, 6), (-1,)).reshape(2, 4, 3)),
    ("InstanceNorm", lambda: nn.InstanceNormConfig(3), (2, 3, 5), (2, 3, 5), lambda m, x: _layer_norm(x, (-1,))),
    ("RmsNorm", lambda: nn.RmsNormConfig(4), (2, 4), (2, 4), lambda m, x: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5)),
    ("Dropout", lambda: nn.DropoutConfig(0.5), (3, 4), (3, 4), lambda m, x: x),  # off autodiff: identity
    ("Lstm", lambda: nn.LstmConfig(3, 5), (2, 4, 3), (2, 4, 5), None),
    ("Gru", lambda: nn.GruConfig(3, 5), (2, 4, 3), (2, 4, 5), None),
    ("MultiHeadAttention", lambda: nn.MultiHeadAttentionConfig(8, 2), (2, 5, 8), (2, 5, 8), None),
    ("TransformerEncoder", lambda: nn.TransformerEncoderConfig(8, 16, 2, 2), (2, 5, 8), (2, 5, 8), None),
    ("PositionalEncoding", lambda: nn.PositionalEncodingConfig(8), (2, 5, 8), (2, 5, 8), lambda m, x: x + _sinusoids(5, 8)),
    ("RotaryEncoding", lambda: nn.RotaryEncodingConfig(16, 8), (2, 5, 8), (2, 5, 8), None),
    ("Relu", lambda: nn.ReluConfig(), (3, 4), (3, 4), lambda m, x: np.maximum(x, 0.0)),
    ("Gelu", lambda: nn.GeluConfig(), (3, 4), (3, 4), lambda m, x: _gelu(x)),
    ("Silu", lambda: nn.SiluConfig(), (3, 4), (3, 4), lambda m, x: x * _sigmoid(x)),
    ("LeakyRelu", lambda: nn.LeakyReluConfig(negative_slope=0.1), (3, 4), (3, 4), lambda m, x: np.where(x > 0, x, 0.1 * x)),
    ("PRelu", lambda: nn.PReluConfig(), (3, 4), (3, 4), lambda m, x: np.where(x > 0, x, 0.25 * x)),
    ("Sigmoid", lambda: nn.SigmoidConfig(), (3, 4), (3, 4), lambda m, x: _sigmoid(x)),
    ("Tanh", lambda: nn.TanhConfig(), (3, 4), (3, 4), lambda m, x: np.tanh(x)),
    ("Sequential", lambda: nn.SequentialConfig([nn.LinearConfig(4, 8), nn.ReluConfig(), nn.LinearConfig(8, 2)]), (3, 4), (3, 2), None),
]
# fmt: on


def _output(out: object) -> burn.Tensor:
    """The main tensor of a forward result: Lstm returns (output, state), attention an MhaOutput."""
    if isinstance(out, nn.MhaOutput):
        return out.context
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name, config, x_in, shape, ref", MODULES, ids=[m[0] for m in MODULES])
def test_module_configs_init_and_forward(name, config, x_in, shape, ref):
    cfg = config()
    assert type(cfg) is getattr(nn, f"{name}Config")
    burn.seed(0)
    module = cfg.init(CPU)
    assert isinstance(module, getattr(nn, name)) and isinstance(module, nn.Module)
    x = x_in() if callable(x_in) else burn.tensor(rng(2).normal(size=x_in).astype(np.float32))
    out = _output(module(x))
    assert out.shape == shape and out.device == CPU
    assert np.isfinite(out.numpy()).all()
    if ref is not None:
        close(
            out,
            ref(module, x.numpy().astype(np.float64) if x.dtype.is_float else x.numpy()),
            rtol=1e-4,
            atol=1e-5,
        )


class _Net(nn.Module):
    """Params found in attributes, lists and dicts; a batch norm and a dropout."""

    def __init__(self, device: object) -> None:
        self.fc = nn.LinearConfig(3, 4).init(device)
        self.blocks = [nn.LinearConfig(4, 4).init(device)]
        self.heads = {"out": nn.LinearConfig(4, 2).init(device)}
        self.norm = nn.BatchNormConfig(4).init(device)
        self.drop = nn.DropoutConfig(0.5).init(device)

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        h = self.drop(self.norm(self.fc(x).unsqueeze(-1)).squeeze(-1))
        return self.heads["out"](self.blocks[0](h))


def test_module_protocol():
    layer = nn.LinearConfig(d_input=3, d_output=4, bias=False, initializer=nn.init.Zeros()).init(device=CPU)
    assert (
        isinstance(layer, nn.Linear)
        and layer.bias is None
        and layer(burn.ones((2, 3))).tolist() == [[0.0] * 4] * 2
    )
    burn.seed(1)
    model = _Net(ADEV)
    names = [n for n, _ in model.named_params()]
    assert {"fc.weight", "fc.bias", "norm.gamma", "norm.beta"} <= set(names)
    assert any(n.startswith("blocks.") for n in names) and any(n.startswith("heads.") for n in names)
    assert len(model.params()) == len(names) == 8
    assert model.num_params() == (3 * 4 + 4) + (4 * 4 + 4) + (4 * 2 + 2) + 2 * 4
    x = burn.tensor(rng(3).normal(size=(5, 3)).astype(np.float32), device=ADEV)
    assert model(x).shape == (5, 2) and model.forward(x).shape == (5, 2)

    on_cpu = model.to(CPU)
    assert all(p.val().device == CPU for p in on_cpu.params())
    valid = model.valid()  # inner backend: no autodiff, dropout off, running stats
    assert all(p.val().device == CPU for p in valid.params())
    xv = x.inner()
    close(valid(xv), valid(xv).numpy())  # deterministic without dropout

    record = valid.record()
    assert isinstance(record, dict) and all(isinstance(v, np.ndarray) for v in record.values())
    assert "norm.running_mean" in record and "fc.weight" in record
    fresh = _Net(CPU)
    assert fresh.load_record(record) is fresh
    close(fresh(xv), valid(xv).numpy())


# fmt: off
INITIALIZERS = [
    ("Constant", nn.init.Constant(value=0.5), lambda w: np.all(w == 0.5)),
    ("Ones", nn.init.Ones(), lambda w: np.all(w == 1.0)),
    ("Zeros", nn.init.Zeros(), lambda w: np.all(w == 0.0)),
    ("Uniform", nn.init.Uniform(min=-0.1, max=0.3), lambda w: w.min() >= -0.1 and w.max() < 0.3 and abs(w.mean() - 0.1) < 0.01),
    ("Normal", nn.init.Normal(mean=1.0, std=0.5), lambda w: abs(w.mean() - 1.0) < 0.02 and abs(w.std() - 0.5) < 0.02),
    # fan_in 100, fan_out 200; bounds and stds from the papers' formulas
    ("KaimingUniform", nn.init.KaimingUniform(gain=1.0), lambda w: abs(np.abs(w).max() - math.sqrt(3 / 100)) < 0.005),
    ("KaimingNormal", nn.init.KaimingNormal(), lambda w: abs(w.std() - math.sqrt(2 / 100)) < 0.005),
    ("XavierUniform", nn.init.XavierUniform(), lambda w: abs(np.abs(w).max() - math.sqrt(6 / 300)) < 0.005),
    ("XavierNormal", nn.init.XavierNormal(), lambda w: abs(w.std() - math.sqrt(2 / 300)) < 0.003),
    ("Orthogonal", nn.init.Orthogonal(), lambda w: np.allclose(w.T @ w, np.eye(100), atol=1e-5)),
]
# fmt: on


@pytest.mark.parametrize("init, check", [i[1:] for i in INITIALIZERS], ids=[i[0] for i in INITIALIZERS])
def test_initializers(init, check):
    burn.seed(4)
    w = init.init((200, 100), fan_in=100, fan_out=200, device=CPU)
    assert w.shape == (200, 100) and w.dtype is burn.float32
    assert check(w.numpy().astype(np.float64))
    # every initializer plugs into a config (no bias: Orthogonal needs 2-d shapes, as in PyTorch)
    layer = nn.LinearConfig(100, 200, bias=False, initializer=init).init(CPU)
    assert layer.weight.val().shape == (100, 200)


# ---------------------------------------------------------------------- F
def _conv_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Valid cross-correlation, stride 1: x (N, C, *S), w (O, C, *K) -> (N, O, *(S - K + 1))."""
    k = w.shape[2:]
    out_sp = tuple(s - kk + 1 for s, kk in zip(x.shape[2:], k))
    out = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for pos in np.ndindex(*out_sp):
        window = x[(slice(None), slice(None), *(slice(p, p + kk) for p, kk in zip(pos, k)))]
        out[(slice(None), slice(None), *pos)] = np.tensordot(
            window, w, axes=(range(1, w.ndim), range(1, w.ndim))
        )
    return out + b.reshape(1, -1, *([1] * len(k)))


def _conv_transpose_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int) -> np.ndarray:
    """Transposed convolution, no padding: x (N, C, *S), w (C, O, *K): each input scatters w * x."""
    k = w.shape[2:]
    out_sp = tuple((s - 1) * stride + kk for s, kk in zip(x.shape[2:], k))
    out = np.zeros((x.shape[0], w.shape[1], *out_sp))
    for pos in np.ndindex(*x.shape[2:]):
        contrib = np.tensordot(x[(slice(None), slice(None), *pos)], w, axes=(1, 0))  # (N, O, *K)
        region = tuple(slice(p * stride, p * stride + kk) for p, kk in zip(pos, k))
        out[(slice(None), slice(None), *region)] += contrib
    return out + b.reshape(1, -1, *([1] * len(k)))


def _conv_case(nd: int, transposed: bool) -> tuple[burn.Tensor, np.ndarray]:
    """F.conv{nd}d (valid, stride 1) or F.conv_transpose{nd}d (stride 2) and its numpy reference."""
    r = rng(10 + nd)
    x = r.normal(size=(2, 2, *([4] * nd))).astype(np.float32)
    w = r.normal(size=(2, 3, *([2] * nd)) if transposed else (3, 2, *([2] * nd))).astype(np.float32)
    b = r.normal(size=3).astype(np.float32)
    xt, wt, bt = burn.tensor(x), burn.tensor(w), burn.tensor(b)
    if transposed:
        return getattr(F, f"conv_transpose{nd}d")(xt, wt, bt, stride=2), _conv_transpose_ref(x, w, b, 2)
    return getattr(F, f"conv{nd}d")(xt, wt, bt), _conv_ref(x, w, b)


LOGITS = rng(5).normal(size=(4, 3)).astype(np.float32)
TARGETS = np.array([0, 2, 1, 2])


def _log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _cross_entropy_ref(label_smoothing: float = 0.0, weight=None, ignore_index=None) -> float:
    """PyTorch's definition: weighted mean of -log p[target] (smoothed: mixed with the uniform target)."""
    logp = _log_softmax(LOGITS)
    c = logp.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, np.float64)
    keep = TARGETS != ignore_index if ignore_index is not None else np.ones(len(TARGETS), bool)
    nll = -logp[np.arange(len(TARGETS)), TARGETS] * w[TARGETS]
    smooth = -(logp * w).sum(1) / c
    per = (1 - label_smoothing) * nll + label_smoothing * smooth
    return float(per[keep].sum() / w[TARGETS][keep].sum())


ACT_X = rng(6).normal(size=(3, 4)).astype(np.float32)  # the input of every FUNCTIONAL row
PRED = rng(8).normal(size=(3, 4)).astype(np.float64) * 2.0
BINARY = (rng(7).uniform(size=(3, 4)) > 0.5).astype(np.float64)
MEANS = np.array([0.0, 1.0, 2.0, 3.0])


def _huber_ref(r: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def _bce_ref(p: np.ndarray, t: np.ndarray) -> float:
    return float(np.mean(-(t * np.log(p) + (1 - t) * np.log(1 - p))))


def _kl_ref(x: np.ndarray) -> float:
    """KL(target || exp(input)) averaged over elements; input log_softmax(PRED), target softmax(x)."""
    return float(np.mean(np.exp(_log_softmax(x)) * (_log_softmax(x) - _log_softmax(PRED))))


def _f32(x: np.ndarray) -> burn.Tensor:
    return burn.tensor(x.astype(np.float32))


RAMP = (10.0 * np.arange(6)[:, None] + np.arange(6)[None, :]).astype(np.float32)  # f(h, w) = 10 h + w


def _cubic(d: float, a: float = -0.75) -> float:
    """Keys' cubic convolution kernel with PyTorch's a = -0.75."""
    d = abs(d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a if d < 2 else 0.0


def _resize_ramp(mode: str) -> tuple[burn.Tensor, float]:
    """The 6x6 ramp doubled; the value at dst (5, 5), whose half-pixel source is (2.25, 2.25) with
    every tap inside the image. The ramp is separable, so the value is 10 * s + s for the 1-d s."""
    x = burn.tensor(RAMP.reshape(1, 1, 6, 6))
    if mode == "bilinear":
        out, s = F.interpolate(x, scale_factor=2, mode="bilinear"), 2.25  # linear taps reproduce a ramp
    else:
        out, s = (
            F.interpolate(x, size=(12, 12), mode="bicubic"),
            sum(_cubic(2.25 - i) * i for i in range(1, 5)),
        )
    return out[0, 0, 5, 5], 10.0 * s + s


# name, F call on the input tensor (ACT_X), numpy reference on the float64 input
# fmt: off
FUNCTIONAL = [
    ("relu", F.relu, lambda x: np.maximum(x, 0)),
    ("gelu", F.gelu, _gelu),
    ("silu", F.silu, lambda x: x * _sigmoid(x)),
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    ("prelu", lambda t: F.prelu(t, burn.tensor([0.3])), lambda x: np.where(x > 0, x, 0.3 * x)),
    ("sigmoid", F.sigmoid, _sigmoid),
    ("tanh", F.tanh, np.tanh),
    ("softplus", F.softplus, lambda x: np.log1p(np.exp(x))),
    ("mish", F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("hard_sigmoid", lambda t: F.hard_sigmoid(t * 4.0), lambda x: np.clip(x * 4.0 / 6.0 + 0.5, 0.0, 1.0)),
    ("softmax", lambda t: F.softmax(t, dim=1), lambda x: np.exp(_log_softmax(x, 1))),
    ("log_softmax", lambda t: F.log_softmax(t, 0), lambda x: _log_softmax(x, 0)),
    ("dropout-off", lambda t: F.dropout(t, 0.5), lambda x: x),  # off autodiff: identity
    ("dropout-p0", lambda t: F.dropout(t, 0.0, training=True), lambda x: x),
    ("linear", lambda t: F.linear(t, burn.ones((4, 2)), burn.tensor([1.0, 2.0])), lambda x: x.sum(1, keepdims=True) + [1.0, 2.0]),
    ("embedding", lambda t: F.embedding(burn.tensor([[2, 0]]), t), lambda x: x[[[2, 0]]]),
    ("max_pool1d", lambda t: F.max_pool1d(t[None], 2), lambda x: x[None].reshape(1, 3, 2, 2).max(-1)),
    ("max_pool2d", lambda t: F.max_pool2d(t[None, None], (1, 2)), lambda x: x.reshape(1, 1, 3, 2, 2).max(-1)),
    ("avg_pool1d", lambda t: F.avg_pool1d(t[None], 2), lambda x: x[None].reshape(1, 3, 2, 2).mean(-1)),
    ("avg_pool2d", lambda t: F.avg_pool2d(t[None, None], (3, 2)), lambda x: x.reshape(1, 1, 1, 3, 2, 2).mean((3, 5))),
    ("adaptive_avg_pool1d", lambda t: F.adaptive_avg_pool1d(t[None], 1), lambda x: x[None].mean(-1, keepdims=True)),
    ("adaptive_avg_pool2d", lambda t: F.adaptive_avg_pool2d(t[None, None], (1, 2)), lambda x: x.reshape(1, 1, 1, 3, 2, 2).mean((3, 5))),
    ("interpolate-nearest", lambda t: F.interpolate(t[None, None], size=(6, 8), mode="nearest"), lambda x: x.repeat(2, 0).repeat(2, 1)[None, None]),
    ("layer_norm", lambda t: F.layer_norm(t, 4, burn.full((4,), 2.0), burn.full((4,), 0.5)), lambda x: 2.0 * _layer_norm(x, (-1,)) + 0.5),
    ("batch_norm", lambda t: F.batch_norm(t, _f32(MEANS), burn.full((4,), 4.0)), lambda x: (x - MEANS) / np.sqrt(4.0 + 1e-5)),
    ("binary_cross_entropy", lambda t: F.binary_cross_entropy(F.sigmoid(t), _f32(BINARY)), lambda x: _bce_ref(_sigmoid(x), BINARY)),
    ("binary_cross_entropy_with_logits", lambda t: F.binary_cross_entropy_with_logits(t, _f32(BINARY)), lambda x: _bce_ref(_sigmoid(x), BINARY)),
    ("mse_loss", lambda t: F.mse_loss(_f32(PRED), t), lambda x: np.mean((PRED - x) ** 2)),
    ("huber_loss", lambda t: F.huber_loss(_f32(PRED), t, delta=1.5), lambda x: np.mean(_huber_ref(PRED - x, 1.5))),
    ("smooth_l1_loss", lambda t: F.smooth_l1_loss(_f32(PRED), t, beta=0.5), lambda x: np.mean(_huber_ref(PRED - x, 0.5) / 0.5)),
    ("kl_div", lambda t: F.kl_div(_f32(_log_softmax(PRED)), F.softmax(t, -1)), _kl_ref),
]
# fmt: on


@pytest.mark.parametrize("call, ref", [f[1:] for f in FUNCTIONAL], ids=[f[0] for f in FUNCTIONAL])
def test_functional(call, ref):
    close(call(burn.tensor(ACT_X)), ref(ACT_X.astype(np.float64)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "conv_transpose"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_functional_convolutions(nd, transposed):
    close(*_conv_case(nd, transposed), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_functional_interpolate_linear_modes(mode):
    close(*_resize_ramp(mode), rtol=1e-5)


CROSS_ENTROPY_OPTIONS = [
    {},
    {"label_smoothing": 0.1},
    {"weight": [1.0, 2.0, 0.5]},
    {"ignore_index": 1},
    {"label_smoothing": 0.1, "weight": [1.0, 2.0, 0.5], "ignore_index": 1},
]


@pytest.mark.parametrize("options", CROSS_ENTROPY_OPTIONS, ids=lambda o: ",".join(o) or "plain")
def test_functional_cross_entropy(options):
    kwargs = {k: burn.tensor(v) if k == "weight" else v for k, v in options.items()}
    got = F.cross_entropy(burn.tensor(LOGITS), burn.tensor(TARGETS), **kwargs)
    assert got.shape == ()
    close(got, _cross_entropy_ref(**options), rtol=1e-5)


def test_functional_pool_indices_and_dropout():
    x = ACT_X[None, None]  # (1, 1, 3, 4)
    values, indices = F.max_pool2d(burn.tensor(x), 2, stride=1, return_indices=True)
    assert values.shape == indices.shape == (1, 1, 2, 3) and indices.dtype.is_int
    # PyTorch's convention: each index points into the flattened (H, W) plane of the input
    np.testing.assert_array_equal(x.reshape(-1)[indices.numpy().reshape(-1)], values.numpy().reshape(-1))
    values1, indices1 = F.max_pool1d(burn.tensor(ACT_X[None]), 2, return_indices=True)
    np.testing.assert_array_equal(np.take_along_axis(ACT_X[None], indices1.numpy(), 2), values1.numpy())
    burn.seed(5)
    dropped = F.dropout(burn.ones((2000,)), 0.25, training=True).numpy()
    assert np.all(np.isclose(dropped, 0.0) | np.isclose(dropped, 1 / 0.75))  # kept values scaled by 1/(1-p)
    assert abs((dropped == 0).mean() - 0.25) < 0.04


# ====================================================================== optim, lr_scheduler
def _model_and_grads(seed: int = 0):
    """A Linear(3 -> 2) on the autodiff device and the gradients of a squared loss."""
    burn.seed(seed)
    model = nn.LinearConfig(3, 2).init(ADEV)
    x = burn.tensor(rng(seed).normal(size=(5, 3)).astype(np.float32), device=ADEV)
    loss = (model(x) * model(x)).mean()
    return model, loss.backward(), loss.item(), x


def _weights(model: nn.Module) -> list[np.ndarray]:
    return [p.val().numpy().astype(np.float64) for p in model.params()]


def _grads_of(model: nn.Module, grads: burn.Gradients) -> list[np.ndarray]:
    return [p.val().grad(grads).numpy().astype(np.float64) for p in model.params()]


def test_optimizer_snippet_adam_first_step():
    opt = burn.optim.AdamConfig(
        beta1=0.9, beta2=0.999, epsilon=1e-5, weight_decay=None, grad_clipping=None
    ).init()
    model, grads, _, _ = _model_and_grads()
    before, g = _weights(model), _grads_of(model, grads)
    lr = 0.01
    model = opt.step(lr, model, grads)
    # first Adam step: m_hat = g, v_hat = g^2, so w -= lr * g / (|g| + eps)
    for w0, gi, w1 in zip(before, g, _weights(model)):
        close(w1, w0 - lr * gi / (np.abs(gi) + 1e-5), rtol=1e-5, atol=1e-6)


def test_sgd_clipping_grads_params_and_accumulator():
    model, grads, _, _ = _model_and_grads(1)
    before, g = _weights(model), _grads_of(model, grads)
    clip = burn.optim.GradientClipping.value(0.05)
    opt = burn.optim.SgdConfig(momentum=0.0, nesterov=False, weight_decay=None, grad_clipping=clip).init()
    params = burn.optim.GradientsParams.from_grads(grads, model)
    assert len(params) == 2
    model = opt.step(0.5, model, params)
    for w0, gi, w1 in zip(before, g, _weights(model)):
        close(w1, w0 - 0.5 * np.clip(gi, -0.05, 0.05))

    model, grads, _, x = _model_and_grads(2)
    before, g = _weights(model), _grads_of(model, grads)
    norm_clip = burn.optim.GradientClipping.norm(1e-3)
    model = burn.optim.SgdConfig(grad_clipping=norm_clip).init().step(1.0, model, grads)
    for w0, gi, w1 in zip(before, g, _weights(model)):  # each param's gradient rescaled to norm 1e-3
        assert np.linalg.norm(gi) > 1e-3
        close(w0 - w1, gi * 1e-3 / np.linalg.norm(gi), rtol=1e-3, atol=1e-7)

    accumulator = burn.optim.GradientsAccumulator()
    model, grads_a, _, x = _model_and_grads(3)
    accumulator.accumulate(model, grads_a)
    accumulator.accumulate(model, burn.optim.GradientsParams.from_grads(grads_a, model))
    before, g = _weights(model), _grads_of(model, grads_a)
    model = burn.optim.SgdConfig().init().step(0.1, model, accumulator.grads())
    for w0, gi, w1 in zip(before, g, _weights(model)):
        close(w1, w0 - 0.1 * 2 * gi)


OPTIMIZERS = [
    ("SgdConfig", dict(momentum=0.9, nesterov=True, weight_decay=1e-4)),
    ("AdamConfig", dict(weight_decay=1e-4)),
    ("AdamWConfig", dict(weight_decay=1e-2)),
    ("AdaGradConfig", dict()),
    ("RmsPropConfig", dict(momentum=0.5)),
]


@pytest.mark.parametrize("name, kwargs", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizers_reduce_loss_and_round_trip_records(name, kwargs):
    config = getattr(burn.optim, name)(**kwargs)
    opt = config.init()
    model, grads, loss0, x = _model_and_grads(4)
    for _ in range(5):
        model = opt.step(0.05, model, grads)
        y = model(x)
        grads = (y * y).mean().backward()
    assert (model(x) * model(x)).mean().item() < loss0

    # record / load_record: a fresh optimizer with the saved state takes the same next step
    params = burn.optim.GradientsParams.from_grads(grads, model)
    twin_model = model.clone()  # same param ids, so the same GradientsParams applies
    twin = config.init().load_record(opt.record())
    a = opt.step(0.05, model, params)
    b = twin.step(0.05, twin_model, params)
    for wa, wb in zip(_weights(a), _weights(b)):
        close(wa, wb)


def _cosine(t: int, n: int, lo: float = 0.0, hi: float = 1.0) -> float:
    return lo + (hi - lo) * (1 + math.cos(math.pi * t / n)) / 2


def _noam(t: int) -> float:
    return 4**-0.5 * min(t**-0.5, t * 2**-1.5)


# fmt: off
SCHEDULERS = [
    ("LinearLrSchedulerConfig", dict(initial_lr=0.9, final_lr=0.5, num_iters=4), [0.8, 0.7, 0.6, 0.5, 0.5], dict(num_iters=0)),
    ("CosineAnnealingLrSchedulerConfig", dict(initial_lr=1.0, num_iters=4), [_cosine(t, 4) for t in range(5)], dict(initial_lr=-1.0)),
    ("ExponentialLrSchedulerConfig", dict(initial_lr=1.0, gamma=0.5), [1.0, 0.5, 0.25, 0.125], dict(gamma=0.0)),
    ("NoamLrSchedulerConfig", dict(init_lr=1.0, warmup_steps=2, model_size=4), [_noam(t) for t in range(1, 6)], dict(warmup_steps=0)),
    ("StepLrSchedulerConfig", dict(initial_lr=0.1, step_size=2, gamma=0.1), [0.1, 0.1, 0.01, 0.01, 0.001], dict(step_size=0)),
]
# fmt: on


@pytest.mark.parametrize("name, kwargs, lrs, invalid", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_lr_schedulers(name, kwargs, lrs, invalid):
    config_cls = getattr(burn.lr_scheduler, name)
    sched = config_cls(**kwargs).init()
    steps = [sched.step() for _ in lrs]
    assert all(isinstance(v, float) for v in steps)
    assert steps == pytest.approx(lrs)
    with pytest.raises(burn.ConfigError, match=next(iter(invalid))):
        config_cls(**{**kwargs, **invalid}).init()
    # record / load_record: a fresh scheduler continues where the saved one stopped
    resumed = config_cls(**kwargs).init().load_record(sched.record())
    assert resumed.step() == pytest.approx(sched.step())


def test_step_scheduler_positional_signature_and_constant_lr():
    sched = burn.lr_scheduler.StepLrSchedulerConfig(0.2, 1, 0.5).init()  # (initial_lr, step_size, gamma)
    assert [sched.step() for _ in range(3)] == pytest.approx([0.2, 0.1, 0.05])
    assert burn.lr_scheduler.ConstantLr(0.3).step() == 0.3


# ====================================================================== record, config
def test_record_save_load_bytes(tmp_path):
    burn.seed(6)
    model = _Net(CPU)
    path = burn.record.save(model, tmp_path / "net.safetensors")
    fresh = _Net(CPU)
    loaded = burn.record.load(fresh, path)
    for name, arr in model.record().items():
        np.testing.assert_array_equal(loaded.record()[name], arr)
    data = burn.record.to_bytes(model)
    assert isinstance(data, bytes)
    again = burn.record.from_bytes(_Net(CPU), data)
    for name, arr in model.record().items():
        np.testing.assert_array_equal(again.record()[name], arr)
    with pytest.raises(burn.RecordError):
        burn.record.from_bytes(nn.LinearConfig(3, 5).init(CPU), data)


class _TinyConfig(burn.config.Config):
    width: int = 8
    rate: float = 0.1
    name: str = "tiny"
    linear: nn.LinearConfig = field(default_factory=lambda: nn.LinearConfig(2, 3))


def test_config_save_load_to_json(tmp_path):
    cfg = _TinyConfig(width=3, linear=nn.LinearConfig(4, 5, bias=False))
    doc = json.loads(cfg.to_json())
    assert doc["width"] == 3 and doc["linear"]["d_input"] == 4 and doc["linear"]["bias"] is False
    path = tmp_path / "tiny.json"
    cfg.save(path)
    back = _TinyConfig.load(path)
    assert back == cfg and isinstance(back.linear, nn.LinearConfig)


# ====================================================================== data
class _TensorBatcher:
    """The Batcher protocol: ``batch(items, device)``."""

    def batch(self, items, device):
        return burn.tensor(list(items), device=device)


def test_datasets():
    from burn.data import (
        ComposedDataset,
        InMemDataset,
        MapperDataset,
        PartialDataset,
        SamplerDataset,
        ShuffledDataset,
        WindowsDataset,
    )

    base = InMemDataset(list(range(10)))
    assert len(base) == 10 and base[3] == 3
    assert [MapperDataset(base, lambda v: v * 2)[i] for i in range(3)] == [0, 2, 4]
    part = PartialDataset(base, 2, 5)
    assert [part[i] for i in range(len(part))] == [2, 3, 4]
    shuffled = [ShuffledDataset(base, seed=0)[i] for i in range(10)]
    assert sorted(shuffled) == list(range(10)) and shuffled == [
        ShuffledDataset(base, seed=0)[i] for i in range(10)
    ]
    sampled = SamplerDataset(base, size=25, replacement=False, seed=1)
    counts = np.bincount([sampled[i] for i in range(len(sampled))], minlength=10)
    assert len(sampled) == 25 and set(counts) <= {2, 3}  # each item once per pass
    windows = WindowsDataset(base, 3)
    assert len(windows) == 8 and list(windows[7]) == [7, 8, 9]
    composed = ComposedDataset([base, InMemDataset(["a", "b"])])
    assert len(composed) == 12 and composed[10] == "a"


def test_dataloader_builder_chain():
    from burn.data import DataLoaderBuilder

    class Squares:  # any object with __len__ and __getitem__ is a Dataset
        def __len__(self):
            return 10

        def __getitem__(self, i):
            return i * i

    def build(seed):
        return DataLoaderBuilder(_TensorBatcher()).batch_size(4).shuffle(seed).num_workers(2).build(Squares())

    loader = build(7)
    assert len(loader) == 3
    batches = [b.tolist() for b in loader]
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(v for b in batches for v in b) == [i * i for i in range(10)]
    assert [b.tolist() for b in build(7)] == batches  # deterministic for a seed


def _write_idx(path, array: np.ndarray, gz: bool = False) -> None:
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + array.astype(">u1").tobytes()
    path.write_bytes(gzip.compress(data) if gz else data)


def _png(path, array: np.ndarray) -> None:
    from PIL import Image

    Image.fromarray(array).save(path)


def test_vision_mnist_image_folder_and_offline_digits(tmp_path):
    from burn.data.vision import DigitsDataset, ImageFolderDataset, MnistDataset

    images = rng(9).integers(0, 256, size=(3, 4, 5), dtype=np.uint8)
    labels = np.array([7, 0, 3], np.uint8)
    _write_idx(tmp_path / "train-images-idx3-ubyte", images)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", labels)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images[:2], gz=True)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels[:2], gz=True)
    train = MnistDataset(tmp_path, "train")
    assert len(train) == 3 and train[2].label == 3
    np.testing.assert_array_equal(train[1].image, images[1])
    assert len(MnistDataset(root=tmp_path, split="test")) == 2

    root = tmp_path / "folders"
    pixels = {}
    for cls, name, value in (("cat", "a.png", 10), ("dog", "b.png", 20), ("dog", "c.png", 30)):
        (root / cls).mkdir(parents=True, exist_ok=True)
        pixels[name] = np.full((3, 2, 3), value, np.uint8)
        _png(root / cls / name, pixels[name])
    classified = ImageFolderDataset.new_classification(root)
    assert len(ImageFolderDataset.new_classification(root=root)) == 3
    assert classified.classes == ["cat", "dog"] and len(classified) == 3
    assert [classified[i].label for i in range(3)] == [0, 1, 1]
    np.testing.assert_array_equal(classified[2].image, pixels["c.png"])

    mask = np.array([[0, 1], [2, 1], [0, 0]], np.uint8)
    _png(tmp_path / "mask.png", mask)
    segmented = ImageFolderDataset.new_segmentation(items=[(root / "cat" / "a.png", tmp_path / "mask.png")])
    np.testing.assert_array_equal(segmented[0].annotation.mask, mask)

    coco = {
        "images": [{"id": 5, "file_name": "b.png", "width": 2, "height": 3}],
        "categories": [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}],
        "annotations": [
            {"image_id": 5, "category_id": 3, "bbox": [0, 1, 1, 2]},
            {"image_id": 5, "category_id": 1, "bbox": [1, 0, 1, 1]},
        ],
    }
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    detected = ImageFolderDataset.new_coco_detection(tmp_path / "coco.json", root / "dog")
    by_keyword = ImageFolderDataset.new_coco_detection(
        annotations_json=tmp_path / "coco.json", images_dir=root / "dog"
    )
    assert len(by_keyword) == 1 and by_keyword.classes == detected.classes
    assert detected.classes == ["person", "car"] and len(detected) == 1
    boxes = detected[0].annotation
    assert boxes.labels == [1, 0] and boxes.boxes[0].coords == (0.0, 1.0, 1.0, 2.0)

    digits = DigitsDataset("train")  # the small real dataset, available offline
    assert len(digits) + len(DigitsDataset("test")) == 1797
    item = digits[0]
    assert item.image.shape == (8, 8) and 0.0 <= item.image.min() and item.image.max() <= 1.0
    assert sorted({digits[i].label for i in range(60)}) == list(range(10))


# ====================================================================== training
def _digits_model_class():
    from burn_train import ClassificationOutput, TrainOutput

    class DigitsLinear(nn.Module):
        def __init__(self, device):
            self.fc = nn.LinearConfig(64, 10).init(device)

        def forward(self, images):
            return self.fc(images.flatten(1))

        def valid_step(self, batch):
            images, targets = batch
            logits = self.forward(images)
            return ClassificationOutput(F.cross_entropy(logits, targets), logits, targets)

        def train_step(self, batch):
            item = self.valid_step(batch)
            return TrainOutput(self, item=item, grads=item.loss.backward())

    return DigitsLinear


def test_training_snippet_and_resume(tmp_path):
    pytest.importorskip("burn_train", reason="training needs burn-train")
    from burn.data import DataLoaderBuilder, PartialDataset
    from burn.data.vision import DigitsDataset, ImageClassificationBatcher
    from burn_train import ClassificationOutput, LearnerBuilder, TrainOutput  # noqa: F401 (the snippet's import)
    from burn_train.metric import AccuracyMetric, CpuMemory, CpuUse, LossMetric  # noqa: F401

    adev = burn.device("cpu", autodiff=True)
    Model = _digits_model_class()

    def fit(artifacts: str, num_epochs: int, model_seed: int, resume: int | None = None) -> nn.Module:
        batcher = ImageClassificationBatcher()
        train = PartialDataset(DigitsDataset("train"), 0, 64)
        train_loader = DataLoaderBuilder(batcher).batch_size(16).shuffle(0).build(train)
        valid_loader = (
            DataLoaderBuilder(batcher).batch_size(32).build(PartialDataset(DigitsDataset("test"), 0, 32))
        )
        burn.seed(model_seed)
        model = Model(adev)
        opt = burn.optim.AdamConfig(
            beta1=0.9, beta2=0.999, epsilon=1e-5, weight_decay=None, grad_clipping=None
        ).init()
        lr_or_scheduler = 1e-2
        builder = (
            LearnerBuilder(artifacts)
            .metric_train_numeric(LossMetric())
            .metric_valid_numeric(AccuracyMetric())
            .with_file_checkpointer()
            .devices([adev])
            .num_epochs(num_epochs)
            .early_stopping(metric="Loss", patience=3)  # optional
            .renderer("none")  # "tui" | "cli" | "none"
        )
        if resume is not None:
            builder = builder.checkpoint(resume)
        learner = builder.summary().build(model, opt, lr_or_scheduler)
        return learner.fit(train_loader, valid_loader)  # returns the trained model

    burn.seed(0)
    untrained = Model(adev).valid().record()
    one_epoch = fit(str(tmp_path / "resumed"), 1, model_seed=0)
    assert isinstance(one_epoch, Model)
    trained = one_epoch.valid().record()
    assert any(not np.array_equal(trained[k], untrained[k]) for k in trained)
    assert (tmp_path / "resumed" / "summary.txt").exists()

    # .checkpoint(1) restores epoch 1 (model, optimizer) into a differently initialised model and
    # trains epoch 2: the result equals two uninterrupted epochs
    resumed = fit(str(tmp_path / "resumed"), 2, model_seed=1, resume=1).valid().record()
    straight = fit(str(tmp_path / "straight"), 2, model_seed=0).valid().record()
    assert any(not np.array_equal(resumed[k], trained[k]) for k in resumed)
    for name, value in straight.items():
        np.testing.assert_allclose(resumed[name], value, rtol=1e-6, atol=1e-7)


# ====================================================================== metrics
METRIC_NAMES = [
    "LossMetric",
    "AccuracyMetric",
    "TopKAccuracyMetric",
    "PrecisionMetric",
    "RecallMetric",
    "FBetaScoreMetric",
    "AurocMetric",
    "HammingScore",
    "LearningRateMetric",
    "IterationSpeedMetric",
    "CpuUse",
    "CpuMemory",
]


def _metadata():
    from burn_train import MetricMetadata, Progress

    return MetricMetadata(Progress(8, 8), 1, 1, 1, lr=0.1)


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_metric_names_importable(name):
    metric_module = pytest.importorskip("burn_train.metric")
    cls = getattr(metric_module, name)
    args = {"TopKAccuracyMetric": (2,)}.get(name, ())
    metric = cls(*args)
    assert isinstance(metric, metric_module.Metric) and isinstance(metric.name, str) and metric.name


def test_classification_metrics_against_scikit_learn():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    pytest.importorskip("burn_train")
    from burn_train import ClassificationOutput
    from burn_train.metric import AccuracyMetric, AurocMetric, FBetaScoreMetric, PrecisionMetric, RecallMetric

    scores = rng(11).normal(size=(8, 3))
    targets = np.array([0, 1, 2, 2, 1, 0, 1, 2])
    item = ClassificationOutput(np.float64(0.5), scores, targets)
    predicted = scores.argmax(1)
    cases = [
        (AccuracyMetric(), sklearn_metrics.accuracy_score(targets, predicted)),
        (
            AccuracyMetric(pad_token=2),
            sklearn_metrics.accuracy_score(targets[targets != 2], predicted[targets != 2]),
        ),
        (PrecisionMetric(), sklearn_metrics.precision_score(targets, predicted, average="micro")),
        (RecallMetric(), sklearn_metrics.recall_score(targets, predicted, average="micro")),
        (
            FBetaScoreMetric(1.0, average="micro"),
            sklearn_metrics.f1_score(targets, predicted, average="micro"),
        ),
        (
            FBetaScoreMetric(2.0, average="macro"),
            sklearn_metrics.fbeta_score(targets, predicted, beta=2.0, average="macro"),
        ),
        (
            AurocMetric(),
            sklearn_metrics.roc_auc_score(targets, np.exp(_log_softmax(scores)), multi_class="ovr"),
        ),
    ]
    for metric, want in cases:
        metric.update(item, _metadata())
        assert metric.epoch_value() == pytest.approx(want), type(metric).__name__


def test_plugin_metrics_cuda_and_web():
    pytest.importorskip("burn_train")
    cuda_plugin = pytest.importorskip("burn_metrics_cuda")
    web_plugin = pytest.importorskip("burn_metrics_web")
    from burn_train.metric import Metric

    for metric in (cuda_plugin.CudaMetric(gpu=0, metric="utilization"), web_plugin.WebMetric("step_time")):
        assert isinstance(metric, Metric)
        ok, reason = metric.check_available()
        assert isinstance(ok, bool) and (ok or reason)  # where it cannot run it says why
    with pytest.raises(ValueError, match="metric"):
        cuda_plugin.CudaMetric(metric="no-such-figure")
