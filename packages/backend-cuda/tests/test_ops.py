"""Conformance of the CUDA backend against the numpy reference backend: one table of cases, each run
on ``cpu`` and ``cuda:0`` from the same numpy inputs and compared with stated tolerances."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.backend import BINARY_OPS, UNARY_OPS

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def ints(*shape, lo=-9, hi=10, dtype=np.int64):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def nonzero_ints(*shape, dtype=np.int64):
    x = ints(*shape, dtype=dtype)
    x[x == 0] = 3
    return x


X = f32(3, 4, 5)
POS = f32(3, 4, 5, lo=0.1, hi=3.0)
UNIT = f32(3, 4, 5, lo=-0.9, hi=0.9)
SPECIAL = np.array([0.0, -0.0, 1.5, -1.5, 2.5, -2.5, 0.5, np.nan, np.inf, -np.inf], dtype=np.float32)
I = ints(4, 6)
J = nonzero_ints(4, 6)
TIES = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 0, 0, 0, 0], [5, 4, 5, 4, 5, 4]], dtype=np.float32)

_DOMAIN = {"log": POS, "log1p": POS, "sqrt": POS, "rsqrt": POS, "asin": UNIT, "acos": UNIT}


def _compare(fn, arrays, rtol=1e-5, atol=1e-6, cpu=None, cuda=None):
    def run(dev):
        ts = [burn.from_numpy(a, device=dev) for a in arrays]
        out = fn(*ts)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o.numpy() if hasattr(o, "numpy") else np.asarray(o) for o in outs]

    for r, g in zip(run(cpu), run(cuda), strict=True):
        assert r.dtype == g.dtype, (r.dtype, g.dtype)
        assert r.shape == g.shape, (r.shape, g.shape)
        if r.dtype.kind in "biu":
            np.testing.assert_array_equal(g, r)
        else:
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("op", [op for op, k in UNARY_OPS.items() if k in ("float", "num")])
def test_unary_float32(op, cpu, cuda):
    x = _DOMAIN.get(op, X)
    _compare(lambda t: t._unary(op), [x], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize(
    "op", ["abs", "sign", "floor", "ceil", "round", "trunc", "isnan", "isinf", "relu", "neg"]
)
def test_unary_special_values(op, cpu, cuda):
    _compare(lambda t: t._unary(op), [SPECIAL], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "gelu", "silu", "softplus", "sqrt", "erf"])
def test_unary_other_floats(op, dtype, cpu, cuda):
    x = (POS if op == "sqrt" else X).astype(dtype)
    tol = 2e-3 if dtype == "float16" else 1e-12
    _compare(lambda t: t._unary(op), [x], rtol=tol, atol=tol, cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
@pytest.mark.parametrize("op", ["neg", "abs", "sign", "square", "relu", "not"])
def test_unary_ints(op, dtype, cpu, cuda):
    x = ints(5, 7, lo=0 if dtype == "uint8" else -9, dtype=dtype)
    _compare(lambda t: t._unary(op), [x], cpu=cpu, cuda=cuda)


_FLOAT_BIN = [op for op in BINARY_OPS if op not in ("and", "or", "xor")]


@pytest.mark.parametrize("op", _FLOAT_BIN)
def test_binary_float32_broadcast(op, cpu, cuda):
    a, b = X, f32(4, 1, lo=0.5, hi=2.0) * np.sign(f32(4, 1))
    if op == "pow":
        a = POS
    _compare(lambda x, y: x._binary(op, y), [a, b], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize(
    "op", ["add", "sub", "mul", "div", "floor_div", "remainder", "fmod", "pow", "maximum", "lt"]
)
@pytest.mark.parametrize("reverse", [False, True])
def test_binary_scalar(op, reverse, cpu, cuda):
    x = POS if op == "pow" else X
    _compare(lambda t: t._binary(op, 1.5, reverse), [x], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("op", [op for op, k in BINARY_OPS.items() if k != "float"])
def test_binary_ints(op, dtype, cpu, cuda):
    a, b = I.astype(dtype), J.astype(dtype)
    if op == "pow":
        a, b = ints(4, 6, lo=-3, hi=4, dtype=dtype), ints(4, 6, lo=0, hi=4, dtype=dtype)
    _compare(lambda x, y: x._binary(op, y), [a, b], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("op", ["and", "or", "xor", "eq", "ne"])
def test_binary_bool(op, cpu, cuda):
    a, b = RNG.random((5, 6)) < 0.5, RNG.random((1, 6)) < 0.5
    _compare(lambda x, y: x._binary(op, y), [a, b], cpu=cpu, cuda=cuda)


def test_nan_propagates_through_max_min(cpu, cuda):
    a = np.array([1.0, np.nan, 3.0, np.nan], dtype=np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.nan], dtype=np.float32)
    _compare(lambda x, y: (x.maximum(y), x.minimum(y)), [a, b], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("dims", [None, 0, 2, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(dims, keepdim, cpu, cuda):
    def fn(t):
        return (
            t.sum(dims, keepdim=keepdim),
            t.mean(dims, keepdim=keepdim),
            t.prod(dims, keepdim=keepdim),
            t.max(dims, keepdim=keepdim),
            t.min(dims, keepdim=keepdim),
            t.var(dims, keepdim=keepdim),
            t.std(dims, keepdim=keepdim),
            (t > 0).all(dims, keepdim=keepdim),
            (t > 1.9).any(dims, keepdim=keepdim),
        )

    _compare(fn, [X], rtol=1e-4, atol=1e-5, cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("dim", [0, 1])
def test_arg_reduce_first_on_ties(dim, cpu, cuda):
    _compare(
        lambda t: (t.argmax(dim), t.argmin(dim), t.argmax(dim, keepdim=True)), [TIES], cpu=cpu, cuda=cuda
    )


def test_integer_reductions_and_scans(cpu, cuda):
    _compare(lambda t: (t.sum(1), t.max(0), t.cumsum(1), t.cumprod(0)), [I], cpu=cpu, cuda=cuda)


def test_shape_ops(cpu, cuda):
    def fn(t):
        return (
            t.reshape(4, -1),
            t.permute(2, 0, 1),
            t.transpose(0, 2).reshape(-1),
            t[:, None, 1:3].expand(3, 2, 2, 5),
            t[::2, 1::2],
            t.flip((0, 2)),
            t.repeat(2, 1, 3),
            t.narrow(1, 1, 2),
            t.flatten(1, 2),
            burn.cat([t, t * 2], 1),
            burn.stack([t, t], 0),
        )

    _compare(fn, [X], cpu=cpu, cuda=cuda)


def test_slice_assign_and_split(cpu, cuda):
    def fn(t, v):
        parts = t.split(2, 1)
        return (t.slice_assign((slice(0, 2), slice(1, 3)), v), *parts, *t.chunk(3, 0))

    _compare(fn, [f32(3, 4), f32(2, 2)], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.int32])
def test_gather_scatter_select(dtype, cpu, cuda):
    x = (f32(4, 5) * 10).astype(dtype)
    index = RNG.integers(0, 4, size=(6, 5))
    src = (f32(6, 5) * 10).astype(dtype)
    sel = np.array([3, 0, 3, 1], dtype=np.int64)  # duplicates must accumulate in select_add
    vals = (f32(4, 5) * 10).astype(dtype)

    def fn(t, i, s, k, v):
        return (
            t.gather(0, i[:4]),
            t.scatter_add(0, i, s),
            t.select(0, k),
            t.select_add(0, k, v),
            t.select(1, k[:2]),
        )

    _compare(fn, [x, index, src, sel, vals], cpu=cpu, cuda=cuda)


def test_masks_where_one_hot_tri(cpu, cuda):
    def fn(t, m):
        return (
            t.mask_fill(m, -7.0),
            burn.where(m, t, 0.5),
            burn.where(m, 1.0, t),
            t.tril(0),
            t.triu(1),
            t.tril(-1),
            (t.abs() * 3).int().one_hot(7),
            t.clamp(-0.5, 0.5),
            t.clamp(min=0.0),
        )

    _compare(fn, [f32(5, 5), RNG.random((5, 5)) < 0.3], cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_ties(descending, cpu, cuda):
    ties = np.repeat(TIES, 40, axis=1)  # long rows of equal keys: stability matters
    _compare(
        lambda t: (*t.sort_with_indices(1, descending), t.argsort(0, descending)), [ties], cpu=cpu, cuda=cuda
    )


def test_topk_and_scans(cpu, cuda):
    _compare(
        lambda t: (*t.topk_with_indices(3, 2), t.cumsum(1), t.cumprod(2)), [X], rtol=1e-4, cpu=cpu, cuda=cuda
    )


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad(mode, cpu, cuda):
    _compare(lambda t: t.pad((1, 2, 2, 1), mode=mode, value=0.5), [f32(2, 4, 5)], cpu=cpu, cuda=cuda)


def test_softmax_and_casts(cpu, cuda):
    from burn.nn import functional as F

    def fn(t):
        return (
            F.softmax(t, 2),
            F.log_softmax(t, 1),
            (t * 3).int(),
            (t * 3).cast(burn.int8),
            t.bool(),
            t.cast(burn.float16),
            t.cast(burn.float64),
        )

    _compare(fn, [X], rtol=1e-5, cpu=cpu, cuda=cuda)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64])
def test_matmul_other_dtypes(dtype, cpu, cuda):
    a, b = (f32(2, 3, 8) * 4).astype(dtype), (f32(8, 5) * 4).astype(dtype)
    tol = 2e-2 if dtype == np.float16 else 1e-10
    _compare(lambda x, y: x @ y, [a, b], rtol=tol, atol=tol, cpu=cpu, cuda=cuda)


def test_creation_and_transaction(cuda):
    burn.seed(3)
    a = burn.randn((4, 5), device=cuda)
    burn.seed(3)
    b = burn.randn((4, 5), device="cpu")
    np.testing.assert_array_equal(a.numpy(), b.numpy())  # one seed, the same numbers on every backend
    z, r, e = burn.zeros(2, 3, device=cuda), burn.arange(0, 10, 2, device=cuda), burn.eye(3, device=cuda)
    got = burn.Transaction().register(z).register(r).register(e).register(a).execute()
    np.testing.assert_array_equal(got[0], np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(got[1], np.arange(0, 10, 2))
    np.testing.assert_array_equal(got[2], np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(got[3], b.numpy())
    assert a.to("cpu").device == burn.device("cpu")
    np.testing.assert_array_equal(b.to(cuda).numpy(), b.numpy())
