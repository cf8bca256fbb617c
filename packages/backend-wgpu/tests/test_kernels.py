"""Kernel-level checks against NumPy on the paths the small conformance cases do not reach: long
rows (tree and two-pass reductions), multi-tile and strided matmul, long sorts with ties and NaN,
broadcast and strided operands, duplicate scatter indices, float16."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.backend import BINARY_OPS, UNARY_OPS

F32 = dict(rtol=2e-5, atol=2e-5)


def _t(a, dev):
    return burn.from_numpy(np.asarray(a), device=dev)


def _np_unary(op: str, x: np.ndarray) -> np.ndarray:
    cpu = burn.device("cpu").backend
    return cpu.unary(op, x)


@pytest.mark.parametrize("op", sorted(o for o, k in UNARY_OPS.items() if k in ("float", "num")))
def test_unary_table_float32(op, dev):
    x = np.array(
        [-3.5, -1.0, -0.5, -1e-4, 0.0, 1e-6, 0.25, 0.5, 0.99, 1.0, 2.5, 30.0, np.inf, -np.inf, np.nan],
        np.float32,
    )
    with np.errstate(all="ignore"):
        want = _np_unary(op, x)
    got = burn.device("wgpu").backend.unary(op, dev.backend.from_numpy(x, burn.float32))
    np.testing.assert_allclose(
        dev.backend.to_numpy(got), want, rtol=2e-5, atol=2e-6, equal_nan=True, err_msg=op
    )


_INT_SAFE = {
    "add",
    "sub",
    "mul",
    "floor_div",
    "remainder",
    "fmod",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "and",
    "or",
    "xor",
}


@pytest.mark.parametrize("op", sorted(_INT_SAFE))
def test_binary_int32_broadcast_and_strided(op, dev, rng):
    a = rng.integers(-9, 10, (4, 5, 6)).astype(np.int32)
    b = rng.integers(1, 7, (5, 1)).astype(np.int32) * rng.choice([-1, 1], (5, 1)).astype(np.int32)
    cpu = burn.device("cpu").backend
    ta = _t(a, dev).permute(2, 0, 1)[:, 1:, ::2]  # strided view, no copy
    want = cpu.binary(op, a.transpose(2, 0, 1)[:, 1:, ::2], b[:, :1].T[:, :3])
    got = dev.backend.binary(op, ta.primitive, _t(b[:, :1].T[:, :3].copy(), dev).primitive)
    np.testing.assert_array_equal(dev.backend.to_numpy(got), want, err_msg=op)


@pytest.mark.parametrize("op", sorted(o for o, k in BINARY_OPS.items() if k in ("num", "float", "any")))
def test_binary_float32_with_scalars(op, dev, rng):
    a = (rng.standard_normal((3, 7)) * 3).astype(np.float32)
    cpu = burn.device("cpu").backend
    for lhs, rhs in ((a, 1.5), (-2.5, a), (a, a[::-1].copy())):
        with np.errstate(all="ignore"):
            want = cpu.binary(op, lhs, rhs)
        dl = dev.backend.from_numpy(lhs, burn.float32) if isinstance(lhs, np.ndarray) else lhs
        dr = dev.backend.from_numpy(rhs, burn.float32) if isinstance(rhs, np.ndarray) else rhs
        got = dev.backend.to_numpy(dev.backend.binary(op, dl, dr))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, equal_nan=True, err_msg=op)


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "max", "min"])
@pytest.mark.parametrize("shape,dims", [((3, 10000), (1,)), ((70, 5, 9), (0, 2)), ((9000,), (0,))])
def test_reduce_long_and_short_rows(op, shape, dims, dev, rng):
    x = (rng.random(shape) + 0.5).astype(np.float32)
    if op == "prod":
        x = (1.0 + (x - 1.0) * 1e-3).astype(np.float32)
    cpu = burn.device("cpu").backend
    want = cpu.reduce(op, x, dims, False)
    got = dev.backend.to_numpy(dev.backend.reduce(op, dev.backend.from_numpy(x, burn.float32), dims, False))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_reduce_nan_propagates_and_int(dev, rng):
    x = rng.standard_normal((4, 300)).astype(np.float32)
    x[1, 123] = np.nan
    got = _t(x, dev).max(1).numpy()
    assert np.isnan(got[1]) and not np.isnan(got[[0, 2, 3]]).any()
    xi = rng.integers(-1000, 1000, (5, 5000)).astype(np.int32)
    np.testing.assert_array_equal(_t(xi, dev).sum(1).numpy(), xi.sum(1))
    np.testing.assert_array_equal(_t(xi, dev).min(0).numpy(), xi.min(0))
    b = rng.random((6, 200)) < 0.99
    np.testing.assert_array_equal(_t(b, dev).all(1).numpy(), b.all(1))


def test_reduce_many_workgroups_uses_2d_grid(dev, rng):
    x = rng.standard_normal((66000, 65)).astype(np.float32)  # 66000 workgroups > 65535 per dim
    np.testing.assert_allclose(_t(x, dev).sum(1).numpy(), x.sum(1), rtol=1e-4, atol=1e-4)


def test_argmax_ties_nan_long_rows(dev, rng):
    x = rng.integers(0, 5, (3, 700)).astype(np.float32)
    x[2, 50] = np.nan
    x[2, 60] = np.nan
    got = _t(x, dev).argmax(1).numpy()
    np.testing.assert_array_equal(got, np.argmax(x, 1))
    np.testing.assert_array_equal(_t(x[:2], dev).argmin(1).numpy(), np.argmin(x[:2], 1))


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (130, 70, 90), (64, 128, 64), (5, 0, 3)])
def test_matmul_tiles(m, k, n, dev, rng):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    np.testing.assert_allclose((_t(a, dev) @ _t(b, dev)).numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_strided_batched_int(dev, rng):
    a = rng.standard_normal((3, 1, 20, 33)).astype(np.float32)
    w = rng.standard_normal((4, 17, 33)).astype(np.float32)
    got = (_t(a, dev) @ _t(w, dev).transpose(-1, -2)).numpy()  # transposed operand read by strides
    np.testing.assert_allclose(got, a @ w.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)
    ai = rng.integers(-5, 5, (2, 7, 9)).astype(np.int32)
    bi = rng.integers(-5, 5, (9, 4)).astype(np.int32)
    np.testing.assert_array_equal((_t(ai, dev) @ _t(bi, dev)).numpy(), ai @ bi)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_long_rows_stable_with_nan(descending, dev, rng):
    x = rng.integers(0, 20, (3, 1000)).astype(np.float32)
    x[1, ::97] = np.nan
    cpu = burn.device("cpu").backend
    want_v, want_i = cpu.sort(x, 1, descending)
    got_v, got_i = _t(x, dev).sort_with_indices(1, descending=descending)
    np.testing.assert_array_equal(got_v.numpy(), want_v)
    np.testing.assert_array_equal(got_i.numpy(), want_i)


def test_sort_int_other_dim(dev, rng):
    x = rng.integers(-50, 50, (37, 3, 2)).astype(np.int32)
    v, i = _t(x, dev).sort_with_indices(0)
    np.testing.assert_array_equal(v.numpy(), np.sort(x, 0, kind="stable"))
    np.testing.assert_array_equal(i.numpy(), np.argsort(x, 0, kind="stable"))


def test_cumsum_cumprod(dev, rng):
    x = rng.standard_normal((5, 400)).astype(np.float32)
    np.testing.assert_allclose(_t(x, dev).cumsum(1).numpy(), np.cumsum(x, 1), rtol=1e-4, atol=1e-4)
    y = (1 + 0.01 * rng.standard_normal((6, 4))).astype(np.float32)
    np.testing.assert_allclose(_t(y, dev).cumprod(0).numpy(), np.cumprod(y, 0), rtol=1e-5)


def test_gather_scatter_duplicates_negative(dev, rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    idx = np.array([[0, -1, 2], [5, 5, 5], [1, 0, -6], [3, 3, 2]], np.int32)
    want = np.take_along_axis(x, idx % 6, 1)
    np.testing.assert_allclose(_t(x, dev).gather(1, _t(idx, dev)).numpy(), want)
    src = rng.standard_normal((4, 3)).astype(np.float32)
    ref = x.copy()
    np.add.at(ref, (np.arange(4)[:, None], idx % 6), src)
    got = _t(x, dev).scatter_add(1, _t(idx, dev), _t(src, dev)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    xi = rng.integers(0, 9, (5, 3)).astype(np.int32)
    vals = rng.integers(0, 9, (4, 3)).astype(np.int32)
    sel = np.array([1, 1, 4, 1], np.int32)
    refi = xi.copy()
    np.add.at(refi, sel, vals)
    np.testing.assert_array_equal(
        dev.backend.to_numpy(
            dev.backend.select_add(_t(xi, dev).primitive, 0, _t(sel, dev).primitive, _t(vals, dev).primitive)
        ),
        refi,
    )


def test_float16_when_supported(dev, rng):
    if burn.float16 not in dev.backend.dtypes:
        pytest.skip("adapter has no shader-f16")
    x = rng.standard_normal((33, 40)).astype(np.float16)
    t = _t(x, dev)
    assert t.dtype is burn.float16
    np.testing.assert_allclose(
        (t @ t.T).numpy(), (x.astype(np.float32) @ x.T.astype(np.float32)), rtol=2e-2, atol=5e-2
    )
    np.testing.assert_allclose(t.exp().sum(1).numpy(), np.exp(x.astype(np.float32)).sum(1), rtol=1e-2)
    np.testing.assert_array_equal(t.sort(1).numpy(), np.sort(x, 1))


def test_cast_rules(dev):
    x = np.array([-2.7, -0.5, 0.0, 0.5, 3.9], np.float32)
    t = _t(x, dev)
    np.testing.assert_array_equal(t.cast(burn.int32).numpy(), x.astype(np.int32))
    np.testing.assert_array_equal(t.cast(burn.bool).numpy(), x != 0)
    np.testing.assert_array_equal(
        _t(np.array([-1, 7], np.int32), dev).cast(burn.uint32).numpy(), np.array([-1, 7]).astype(np.uint32)
    )
