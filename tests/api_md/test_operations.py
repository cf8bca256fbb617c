"""API.md, Operations: operators, elementwise ops, reductions, shape and index ops, Transaction."""

from __future__ import annotations

import math
import operator

import burn
import numpy as np
import pytest
from burn_api_md._helpers import ADEV, close, rng

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
