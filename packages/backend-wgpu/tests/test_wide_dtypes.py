"""int64 and float64 on a native wgpu device (adapters with shader-int64 / shader-f64), against NumPy:
integer results exact, float64 results to float64 rounding except the transcendental functions,
which run on the host (documented in burn_wgpu._dtypes)."""

from __future__ import annotations

import burn
import numpy as np
import pytest


@pytest.fixture(scope="module")
def wdev(dev, backend):
    if not {burn.int64, burn.float64} <= backend.dtypes:
        pytest.skip("this adapter has no shader-int64/shader-f64")
    return dev


XI = np.array([[5, -7, 2**40, -(2**35) - 3], [0, 9, -1, 3]], np.int64)
YI = np.array([[3, 2, -(2**20), 7], [5, -4, 1, 2]], np.int64)
XF = np.array([[1234.5678901234567, -0.1, 1e-300, 2.0**50 + 1], [3.5, -2.5, 7.25, -1e10]], np.float64)
YF = np.array([[3.0, -0.3, 7.0, 1.5], [0.5, 2.0, -3.0, 9.0]], np.float64)

INT_CASES = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub_scalar": (lambda a, b: a - 2**33, lambda a, b: a - 2**33),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "floor_div": (lambda a, b: a // b, lambda a, b: a // b),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b),
    "maximum": (lambda a, b: a.maximum(b), np.maximum),
    "neg_abs": (lambda a, b: (-a).abs(), lambda a, b: np.abs(-a)),
    "lt": (lambda a, b: a < b, lambda a, b: a < b),
    "eq_scalar": (lambda a, b: a == 2**40, lambda a, b: a == 2**40),
    "where": (lambda a, b: burn.where(a > b, a, b), lambda a, b: np.where(a > b, a, b)),
    "sum": (lambda a, b: a.sum(dim=1), lambda a, b: a.sum(1)),
    "prod": (lambda a, b: b.prod(dim=1), lambda a, b: b.prod(1)),
    "max": (lambda a, b: a.max(dim=1), lambda a, b: a.max(1)),
    "min_all": (lambda a, b: a.min(), lambda a, b: a.min()),
    "cumsum": (lambda a, b: a.cumsum(dim=1), lambda a, b: a.cumsum(1)),
    "sort": (lambda a, b: a.sort(dim=1), lambda a, b: np.sort(a, 1)),
    "matmul": (lambda a, b: a @ b.T, lambda a, b: a @ b.T),
    "to_float64": (lambda a, b: a.cast(burn.float64), lambda a, b: a.astype(np.float64)),
    "to_int32": (lambda a, b: a.cast(burn.int32), lambda a, b: a.astype(np.int32)),
    "to_int8": (lambda a, b: a.cast(burn.int8), lambda a, b: a.astype(np.int8)),
}
FLOAT_CASES = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "mul_scalar": (lambda a, b: a * 0.1, lambda a, b: a * 0.1),
    "sqrt": (lambda a, b: a.abs().sqrt(), lambda a, b: np.sqrt(np.abs(a))),
    "floor": (lambda a, b: a.floor(), lambda a, b: np.floor(a)),
    "round": (lambda a, b: a.round(), lambda a, b: np.round(a)),
    "trunc": (lambda a, b: (a * 1e3).trunc(), lambda a, b: np.trunc(a * 1e3)),
    "pow_int": (lambda a, b: a**3, lambda a, b: a**3),
    "fmod": (lambda a, b: a.fmod(b), np.fmod),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b),
    "minimum": (lambda a, b: a.minimum(b), np.minimum),
    "clamp": (lambda a, b: a.clamp(-1.5, 2.5), lambda a, b: np.clip(a, -1.5, 2.5)),
    "sum": (lambda a, b: a.sum(dim=1), lambda a, b: a.sum(1)),
    "mean": (lambda a, b: b.mean(), lambda a, b: b.mean()),
    "max": (lambda a, b: a.max(dim=1), lambda a, b: a.max(1)),
    "cumsum": (lambda a, b: b.cumsum(dim=1), lambda a, b: b.cumsum(1)),
    "sort": (lambda a, b: a.sort(dim=1), lambda a, b: np.sort(a, 1)),
    "matmul": (lambda a, b: a @ b.T, lambda a, b: a @ b.T),
    "gather": (
        lambda a, b: a.gather(1, burn.tensor(np.array([[3, 0], [1, 1]]), device=a.device)),
        lambda a, b: np.take_along_axis(a, np.array([[3, 0], [1, 1]]), 1),
    ),
    "to_int64": (lambda a, b: (a * 1e3).cast(burn.int64), lambda a, b: (a * 1e3).astype(np.int64)),
    "to_float32": (lambda a, b: a.cast(burn.float32), lambda a, b: a.astype(np.float32)),
    "ge": (lambda a, b: a >= b, lambda a, b: a >= b),
}


@pytest.mark.parametrize("name", sorted(INT_CASES))
def test_int64_ops_are_exact(wdev, name):
    op, ref = INT_CASES[name]
    a, b = burn.tensor(XI, device=wdev), burn.tensor(YI, device=wdev)
    assert a.dtype is burn.int64
    got, want = op(a, b).numpy(), np.asarray(ref(XI, YI))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_float64_ops_keep_float64_precision(wdev, name):
    op, ref = FLOAT_CASES[name]
    a, b = burn.tensor(XF, device=wdev), burn.tensor(YF, device=wdev)
    assert a.dtype is burn.float64
    got, want = op(a, b).numpy(), np.asarray(ref(XF, YF))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


def test_float64_transcendentals_are_float64_accurate(wdev):
    x = np.array([0.1, 1.0, 2.5, -3.0], np.float64)
    got = burn.tensor(x, device=wdev).exp().numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-15)
    y = burn.tensor(x, device=wdev) ** burn.tensor(np.array([0.5, 2.0, 1.5, 3.0]), device=wdev)
    np.testing.assert_allclose(y.numpy(), x ** np.array([0.5, 2.0, 1.5, 3.0]), rtol=1e-15)


def test_float64_nan_and_inf(wdev):
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float64)
    t = burn.tensor(x, device=wdev)
    np.testing.assert_array_equal(t.isnan().numpy(), np.isnan(x))
    np.testing.assert_array_equal(t.isinf().numpy(), np.isinf(x))
    np.testing.assert_array_equal(t.maximum(burn.zeros_like(t)).numpy(), np.maximum(x, 0.0))
    assert np.isnan(t.max().numpy())


def test_int64_scatter_add_and_index_checks(wdev):
    x = np.zeros((2, 3), np.int64)
    idx = np.array([[0, 0, 2], [1, 1, 1]], np.int64)
    src = np.array([[2**40, 1, 5], [7, 8, -(2**41)]], np.int64)
    got = burn.tensor(x, device=wdev).scatter_add(
        1, burn.tensor(idx, device=wdev), burn.tensor(src, device=wdev)
    )
    want = np.zeros_like(x)
    for r in range(2):
        for c in range(3):
            want[r, idx[r, c]] += src[r, c]
    np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(burn.IndexOutOfRangeError):
        burn.tensor(XI, device=wdev).gather(
            1, burn.tensor(np.array([[2**33]], np.int64), device=wdev)
        ).numpy()
