"""Reductions, arg-reductions, var/std, matmul, sort/argsort/topk and cumsum/cumprod against numpy."""

from __future__ import annotations

import burn
import numpy as np
import pytest

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def t(a):
    return burn.from_numpy(np.asarray(a))


def close(x, ref, rtol=1e-5, atol=1e-5):
    got = x.numpy()
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


REDUCTIONS = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}
DIMS = [None, 0, 1, -1, (0, 2), (-1, -3)]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(name, dim, keepdim):
    out = getattr(t(X), name)(dim, keepdim=keepdim)
    close(out, REDUCTIONS[name](X, axis=dim, keepdims=keepdim))
    assert out.dtype is burn.float32


def test_int_and_bool_reduction_dtypes():
    i = burn.tensor([[1, 2], [3, 4]])
    assert i.sum().item() == 10 and i.sum().dtype is burn.int64
    assert i.mean().item() == 2.5 and i.mean().dtype is burn.float32
    assert i.prod(1).tolist() == [2, 12]
    assert i.max(0).tolist() == [3, 4]
    b = burn.tensor([[True, False], [True, True]])
    assert b.sum().item() == 3 and b.sum().dtype is burn.int64
    assert b.all(1).tolist() == [False, True] and b.any(0).tolist() == [True, True]
    assert b.all().dtype is burn.bool
    assert burn.tensor([0.0, 2.0]).any().item() is True
    assert burn.tensor([0.0, 2.0]).all().item() is False


def test_reduction_of_0d_and_empty():
    s = burn.tensor(3.0)
    assert s.sum().item() == 3.0 and s.max().item() == 3.0
    e = burn.zeros((0, 3))
    close(e.sum(0), np.zeros(3, np.float32))
    assert e.prod().item() == 1.0
    with pytest.raises(burn.ShapeError, match=r"max: cannot reduce an empty dim \(shape \(0, 3\), dim 0\)"):
        e.max(0)


def test_reduction_dim_errors():
    with pytest.raises(
        burn.DimError, match=r"sum: dim=3 out of range for a tensor of rank 3 \(expected -3..2\)"
    ):
        t(X).sum(3)
    with pytest.raises(ValueError, match=r"mean: dim=\(0, 0\) repeats a dim"):
        t(X).mean((0, 0))
    with pytest.raises(TypeError, match=r"sum: dim must be an int, a tuple of ints or None, got float"):
        t(X).sum(1.0)
    with pytest.raises(IndexError):  # DimError is an IndexError too
        t(X).max(-4)


@pytest.mark.parametrize("dim", [None, 0, (1, 2), -1])
@pytest.mark.parametrize("correction", [0, 1])
def test_var_std(dim, correction):
    close(t(X).var(dim, correction=correction), np.var(X, axis=dim, ddof=correction), rtol=1e-4)
    close(
        t(X).std(dim, correction=correction, keepdim=True),
        np.std(X, axis=dim, ddof=correction, keepdims=True),
        rtol=1e-4,
    )
    with pytest.raises(ValueError, match=r"var: correction must be a non-negative int, got -1"):
        t(X).var(correction=-1)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_arg_reductions(name, dim):
    data = np.array([[1, 5, 5, 0], [7, 7, 2, 2], [3, 3, 3, 3]], np.float32)  # ties: first wins
    out = getattr(t(data), name)(dim)
    assert out.dtype is burn.int64
    assert out.tolist() == getattr(np, name)(data, axis=dim).tolist()
    if dim is not None:
        kept = getattr(t(data), name)(dim, keepdim=True)
        assert kept.tolist() == getattr(np, name)(data, axis=dim, keepdims=True).tolist()


def test_max_dim_variants():
    x = t(X)
    close(x.max_dim(1), X.max(1, keepdims=True))
    close(x.min_dim(-1), X.min(-1, keepdims=True))
    v, i = x.max_dim_with_indices(2)
    close(v, X.max(2, keepdims=True))
    assert i.tolist() == X.argmax(2)[..., None].tolist()
    v, i = x.min_dim_with_indices(0)
    assert i.tolist() == X.argmin(0)[None].tolist()


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((3, 4), (4, 5)),
        ((4,), (4, 2)),
        ((3, 4), (4,)),
        ((4,), (4,)),
        ((2, 3, 4), (4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),
    ],
)
def test_matmul_shapes(sa, sb):
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    close(t(a) @ t(b), a @ b, rtol=1e-4)
    close(t(a).matmul(b), a @ b, rtol=1e-4)


def test_matmul_dtypes_and_errors():
    i = burn.tensor([[1, 2], [3, 4]])
    assert (i @ i).tolist() == [[7, 10], [15, 22]] and (i @ i).dtype is burn.int64
    f = burn.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=burn.float64)
    assert (i @ f).dtype is burn.float64
    with pytest.raises(
        burn.ShapeError, match=r"shape mismatch in matmul: lhs \(2, 3\) and rhs \(4, 5\): inner dims 3 != 4"
    ):
        burn.ones((2, 3)) @ burn.ones((4, 5))
    with pytest.raises(burn.ShapeError, match=r"matmul: operands must be at least 1-d"):
        burn.tensor(1.0) @ burn.ones(2)
    with pytest.raises(burn.ShapeError, match=r"matmul \(batch dims\)"):
        burn.ones((2, 2, 3)) @ burn.ones((3, 3, 4))
    assert burn.tensor([1.0, 2.0]).dot(burn.tensor([3.0, 4.0])).item() == 11.0
    with pytest.raises(burn.ShapeError, match=r"dot: expects two 1-d tensors"):
        burn.ones((2, 2)).dot(burn.ones(2))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_and_matches_numpy(dim, descending):
    data = RNG.integers(0, 4, (5, 6)).astype(np.float32)  # many ties
    values, idx = t(data).sort_with_indices(dim, descending)
    key = -data if descending else data
    ref_idx = np.argsort(key, axis=dim, kind="stable")
    assert idx.tolist() == ref_idx.tolist()
    close(values, np.take_along_axis(data, ref_idx, axis=dim))
    close(t(data).sort(dim, descending), np.take_along_axis(data, ref_idx, axis=dim))
    assert t(data).argsort(dim, descending).tolist() == ref_idx.tolist()
    assert idx.dtype is burn.int64


def test_sort_ints_and_nan():
    assert burn.tensor([3, -1, 2]).sort().tolist() == [-1, 2, 3]
    x = t(np.array([2.0, np.nan, 1.0], np.float32))
    assert np.isnan(x.sort().numpy()[-1])  # NaN sorts last ascending (as numpy and PyTorch)
    assert np.isnan(x.sort(descending=True).numpy()[0])


@pytest.mark.parametrize("k", [0, 1, 3, 6])
def test_topk(k):
    data = RNG.standard_normal((4, 6)).astype(np.float32)
    v, i = t(data).topk_with_indices(k, dim=1)
    ref_i = np.argsort(-data, axis=1, kind="stable")[:, :k]
    assert i.tolist() == ref_i.tolist()
    close(v, np.take_along_axis(data, ref_i, axis=1))
    close(t(data).topk(min(k, 4), 0), -np.sort(-data, axis=0)[: min(k, 4)])
    with pytest.raises(ValueError, match=r"topk: k must be an int in 0..6 \(dim 1 has size 6\), got 7"):
        t(data).topk(7, 1)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans(name, dim):
    data = (RNG.standard_normal((3, 4)) * 0.5 + 1).astype(np.float32)
    close(getattr(t(data), name)(dim), getattr(np, name)(data, axis=dim))
    ints = np.arange(1, 7).reshape(2, 3)
    out = getattr(t(ints), name)(dim)
    assert out.dtype is burn.int64 and out.tolist() == getattr(np, name)(ints, axis=dim).tolist()
    b = burn.tensor([True, True, False])
    assert b.cumsum(0).tolist() == [1, 2, 2]
    with pytest.raises(burn.DimError, match=rf"{name}: dim=2 out of range"):
        getattr(t(data), name)(2)
