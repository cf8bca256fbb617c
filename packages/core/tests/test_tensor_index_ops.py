"""gather / scatter_add / select / select_add / mask_fill / where / one_hot / tril / triu against numpy
formulations, with the errors bad indices raise."""

from __future__ import annotations

import burn
import numpy as np
import pytest

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 4)).astype(np.float32)


def t(a):
    return burn.from_numpy(np.asarray(a))


def same(x, ref, tol=0.0):
    ref = np.asarray(ref)
    got = x.numpy()
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def _gather_ref(x, dim, index):
    out = np.empty(index.shape, x.dtype)
    for pos in np.ndindex(*index.shape):
        src = list(pos)
        src[dim] = index[pos]
        out[pos] = x[tuple(src)]
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim):
    n = X.shape[dim]
    index = RNG.integers(0, n, X.shape)
    same(t(X).gather(dim, t(index)), _gather_ref(X, dim % 2, index))


def test_gather_smaller_index_and_negative_values():
    index = np.array([[3, 0], [1, 1]])  # smaller than X off the gather dim, as PyTorch allows
    same(t(X).gather(1, t(index)), _gather_ref(X, 1, index))
    same(t(X).gather(1, t(-index - 1)), _gather_ref(X, 1, 4 - index - 1))


def test_gather_errors():
    x = t(X)
    with pytest.raises(
        burn.IndexOutOfRangeError, match=r"gather: index value 4 out of range for dim 1 of size 4"
    ):
        x.gather(1, burn.tensor([[4], [0], [0]]))
    with pytest.raises(
        burn.ShapeError, match=r"gather: index must have the tensor's rank 2, got shape \(3,\)"
    ):
        x.gather(1, burn.tensor([0, 1, 2]))
    with pytest.raises(burn.DTypeError, match=r"gather: index must be an integer tensor, got float32"):
        x.gather(0, burn.zeros((1, 4)))
    with pytest.raises(
        burn.ShapeError, match=r"gather: index shape \(4, 4\) exceeds tensor shape \(3, 4\) at dim 0"
    ):
        x.gather(1, burn.zeros((4, 4), dtype=burn.int64))


def _scatter_add_ref(x, dim, index, src):
    out = x.copy()
    for pos in np.ndindex(*index.shape):
        dst = list(pos)
        dst[dim] = index[pos]
        out[tuple(dst)] += src[pos]
    return out


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_add_accumulates_duplicates(dim):
    index = RNG.integers(0, X.shape[dim], (2, 3) if dim == 0 else (3, 2))
    src = RNG.standard_normal(index.shape).astype(np.float32)
    same(t(X).scatter_add(dim, t(index), t(src)), _scatter_add_ref(X, dim, index, src), tol=1e-6)


def test_scatter_add_errors():
    with pytest.raises(
        burn.ShapeError, match=r"scatter_add: index shape \(1, 2\) must equal src shape \(1, 3\)"
    ):
        t(X).scatter_add(0, burn.zeros((1, 2), dtype=burn.int64), burn.zeros((1, 3)))
    with pytest.raises(
        burn.IndexOutOfRangeError, match=r"scatter_add: index value 3 out of range for dim 0 of size 3"
    ):
        t(X).scatter_add(0, burn.tensor([[3]]), burn.tensor([[1.0]]))


def test_select_and_select_add():
    same(t(X).select(1, burn.tensor([3, 0, 0])), X[:, [3, 0, 0]])
    same(t(X).select(0, [2, -1]), X[[2, -1]])
    same(t(X).index_select(0, [1]), X[[1]])
    values = np.ones((3, 2), np.float32)
    ref = X.copy()
    np.add.at(ref, (slice(None), [1, 1]), values)
    same(t(X).select_add(1, [1, 1], t(values)), ref, tol=1e-6)
    with pytest.raises(burn.ShapeError, match=r"select: indices must be 1-d, got shape \(1, 1\)"):
        t(X).select(0, [[0]])
    with pytest.raises(
        burn.IndexOutOfRangeError, match=r"select: indices value -5 out of range for dim 1 of size 4"
    ):
        t(X).select(1, [-5])
    with pytest.raises(burn.ShapeError, match=r"select_add: values shape \(3, 3\) != expected \(3, 2\)"):
        t(X).select_add(1, [0, 1], burn.zeros((3, 3)))


def test_mask_fill_and_where():
    mask = X > 0
    same(t(X).mask_fill(t(mask), -1.0), np.where(mask, -1.0, X).astype(np.float32))
    same(t(X).mask_fill(t(mask[:1]), 0.0), np.where(mask[:1], 0.0, X).astype(np.float32))  # broadcast mask
    ints = burn.tensor([1, 2, 3])
    assert ints.mask_fill(burn.tensor([True, False, True]), 0.5).tolist() == [0.5, 2.0, 0.5]
    with pytest.raises(burn.DTypeError, match=r"mask_fill: mask must be bool, got int64"):
        ints.mask_fill(burn.tensor([1, 0, 1]), 0)
    with pytest.raises(
        burn.ShapeError, match=r"mask_fill: mask shape \(2, 3\) does not broadcast to tensor shape \(3,\)"
    ):
        ints.mask_fill(burn.ones((2, 3), dtype=burn.bool), 0)
    cond = t(mask)
    same(burn.where(cond, t(X), t(-X)), np.where(mask, X, -X))
    same(burn.where(cond, t(X), 0.0), np.where(mask, X, 0.0).astype(np.float32))
    same(burn.where(cond, 1.0, t(X)), np.where(mask, 1.0, X).astype(np.float32))
    w = burn.where(cond, 1, 0)
    assert w.dtype is burn.int64 and w.tolist() == mask.astype(int).tolist()
    assert burn.where(burn.tensor([True, False]), burn.tensor([1, 2]), 0.5).dtype is burn.float32
    same(burn.where(t(mask[:, :1]), t(X[:1]), 0.0), np.where(mask[:, :1], X[:1], 0.0).astype(np.float32))
    with pytest.raises(burn.DTypeError, match=r"where: cond must be bool, got float32"):
        burn.where(t(X), 1, 0)
    with pytest.raises(burn.ShapeError, match=r"shape mismatch in where: cond \(3, 4\) and operand \(3,\)"):
        burn.where(cond, burn.zeros(3), 0.0)


def test_one_hot():
    labels = burn.tensor([0, 2, 1, 2])
    oh = labels.one_hot(3)
    assert oh.dtype is burn.int64
    same(oh, np.eye(3, dtype=np.int64)[[0, 2, 1, 2]])
    same(burn.tensor([[1], [0]]).one_hot(2, dtype=burn.float32), np.eye(2, dtype=np.float32)[[[1], [0]]])
    with pytest.raises(
        burn.IndexOutOfRangeError,
        match=r"one_hot: class index 3 out of range for num_classes=3 \(expected 0..2\)",
    ):
        burn.tensor([3]).one_hot(3)
    with pytest.raises(burn.IndexOutOfRangeError, match=r"one_hot: class index -1 out of range"):
        burn.tensor([-1]).one_hot(3)
    with pytest.raises(burn.DTypeError, match=r"one_hot: expected an integer tensor, got float32"):
        burn.tensor([1.0]).one_hot(3)
    with pytest.raises(ValueError, match=r"one_hot: num_classes must be a positive int, got 0"):
        labels.one_hot(0)


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_tril_triu(k):
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    same(t(x).tril(k), np.tril(x, k))
    same(t(x).triu(k), np.triu(x, k))
    with pytest.raises(burn.ShapeError, match=r"tril: needs at least 2 dims, got shape \(3,\)"):
        burn.zeros(3).tril()
