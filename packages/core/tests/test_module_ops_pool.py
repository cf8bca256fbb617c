"""Pools (max, avg, adaptive) and interpolate against plain-loop numpy references written from the
definitions, on the numpy backend and on a core-only backend (so the defaults in ``burn.backend`` run
too); backends and tolerances in ``_module_ref.py``.
"""

from __future__ import annotations

import math

import burn
import numpy as np
import pytest
from burn.nn import functional as F
from burn_core_tests._module_ref import BACKENDS, as_tensor, assert_close, randn

# ---------------------------------------------------------------------------------------- references


def _pool_out(s, k, st, p, d, ceil_mode):
    out = (s + 2 * p - d * (k - 1) - 1 + (st - 1 if ceil_mode else 0)) // st + 1
    return out - 1 if ceil_mode and (out - 1) * st >= s + p else out


def ref_max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    """First maximum over the in-bounds window positions (row-major), and its flat spatial index."""
    spatial = x.shape[2:]
    out = [_pool_out(*a, ceil_mode) for a in zip(spatial, kernel, stride, padding, dilation)]
    values = np.zeros(x.shape[:2] + tuple(out), dtype=x.dtype)
    indices = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    for o in np.ndindex(*out):
        seen = np.zeros(x.shape[:2], dtype=bool)
        best, arg = np.zeros(x.shape[:2], dtype=x.dtype), np.zeros(x.shape[:2], dtype=np.int64)
        for k in np.ndindex(*kernel):
            pos = tuple(oi * st - p + ki * d for oi, ki, st, p, d in zip(o, k, stride, padding, dilation))
            if not all(0 <= v < s for v, s in zip(pos, spatial)):
                continue
            v = x[(slice(None), slice(None)) + pos]
            take = ~seen | (v > best)
            best, arg, seen = (
                np.where(take, v, best),
                np.where(take, np.ravel_multi_index(pos, spatial), arg),
                seen | True,
            )
        values[(slice(None), slice(None)) + o], indices[(slice(None), slice(None)) + o] = best, arg
    return values, indices


def ref_avg_pool(x, kernel, stride, padding, count_include_pad, ceil_mode):
    spatial = x.shape[2:]
    out = [_pool_out(s, k, st, p, 1, ceil_mode) for s, k, st, p in zip(spatial, kernel, stride, padding)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in np.ndindex(*out):
        start = [oi * st - p for oi, st, p in zip(o, stride, padding)]
        end = [min(a + k, s + p) for a, k, s, p in zip(start, kernel, spatial, padding)]
        window_size = math.prod(e - a for a, e in zip(start, end))  # clipped to the padded input
        lo = [max(a, 0) for a in start]
        hi = [min(e, s) for e, s in zip(end, spatial)]
        box = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        divisor = window_size if count_include_pad else math.prod(b - a for a, b in zip(lo, hi))
        y[(slice(None), slice(None)) + o] = box.sum(axis=tuple(range(2, x.ndim))) / divisor
    return y


def ref_adaptive(x, output_size):
    """(mean, max, flat argmax) over windows [floor(i*in/out), ceil((i+1)*in/out))."""
    spatial = x.shape[2:]
    shape = x.shape[:2] + tuple(output_size)
    mean, mx, idx = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=np.int64)
    for o in np.ndindex(*output_size):
        lo = [math.floor(i * s / n) for i, s, n in zip(o, spatial, output_size)]
        hi = [math.ceil((i + 1) * s / n) for i, s, n in zip(o, spatial, output_size)]
        box = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        flat = box.reshape(x.shape[:2] + (-1,))
        at = (slice(None), slice(None)) + o
        mean[at], mx[at] = flat.mean(axis=2), flat.max(axis=2)
        local = np.unravel_index(flat.argmax(axis=2), box.shape[2:])
        idx[at] = np.ravel_multi_index(tuple(a + li for a, li in zip(lo, local)), spatial)
    return mean, mx, idx


def _cubic(d, a=-0.75):
    d = abs(d)
    if d <= 1:
        return (a + 2) * d**3 - (a + 3) * d**2 + 1
    return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a if d < 2 else 0.0


def _src(dst, n_in, n_out, align_corners):
    if align_corners:
        return dst * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return (dst + 0.5) * n_in / n_out - 0.5


def _taps(dst, n_in, n_out, mode, align_corners):
    """[(input index, weight)] of one output sample along one dim, straight from the definitions."""
    if mode == "nearest":
        return [(min(dst * n_in // n_out, n_in - 1), 1.0)]
    src = _src(dst, n_in, n_out, align_corners)
    if mode == "bilinear":
        src = max(src, 0.0)
        i0 = math.floor(src)
        return [(i0, 1 - (src - i0)), (min(i0 + 1, n_in - 1), src - i0)]
    i0 = math.floor(src)
    return [(min(max(t, 0), n_in - 1), _cubic(src - t)) for t in range(i0 - 1, i0 + 3)]


def ref_interpolate(x, size, mode, align_corners):
    (h, w), (oh, ow) = x.shape[2:], size
    y = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            for hi, hw in _taps(i, h, oh, mode, align_corners):
                for wi, ww in _taps(j, w, ow, mode, align_corners):
                    y[:, :, i, j] += hw * ww * x[:, :, hi, wi]
    return y


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


# ---------------------------------------------------------------------------------------- pools

POOL = {  # id: (x shape, kernel, stride, padding, dilation); each runs with ceil_mode False and True
    "2d-k2": ((2, 3, 7, 9), (2, 2), None, 0, 1),
    "2d-k3-s2-p1": ((2, 2, 7, 8), (3, 3), 2, 1, 1),
    "2d-rect-dilated": ((1, 3, 9, 7), (3, 2), (2, 2), (1, 1), (1, 2)),
    "2d-s3-clipped": ((1, 2, 8, 7), (3, 3), 3, 1, 1),
    "1d": ((2, 3, 11), (3,), 2, 1, 2),
}
MAX_FN = {1: F.max_pool1d, 2: F.max_pool2d}
AVG_FN = {1: F.avg_pool1d, 2: F.avg_pool2d}


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("case", POOL)
def test_max_pool(case, ceil_mode, backend, dtype, ties):
    xs, kernel, stride, padding, dilation = POOL[case]
    nd = len(kernel)
    rng = np.random.default_rng(11)
    # small integers make ties, checking the first-maximum index rule
    x = (rng.integers(-2, 3, xs) if ties else randn(rng, xs)).astype(dtype)
    st = kernel if stride is None else _tup(stride, nd)
    want_v, want_i = ref_max_pool(x, kernel, st, _tup(padding, nd), _tup(dilation, nd), ceil_mode)
    v, i = MAX_FN[nd](
        as_tensor(x, backend),
        kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
        ceil_mode=ceil_mode,
        return_indices=True,
    )
    assert_close(v, want_v, dtype)
    assert i.dtype == burn.int64
    np.testing.assert_array_equal(i.numpy(), want_i)


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_pool_int_input(backend):
    x = np.random.default_rng(2).integers(-100, 100, (2, 3, 7, 6))
    want_v, want_i = ref_max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), True)
    v, i = F.max_pool2d(as_tensor(x, backend), 3, stride=2, padding=1, ceil_mode=True, return_indices=True)
    assert v.dtype == burn.int64
    np.testing.assert_array_equal(v.numpy(), want_v)
    np.testing.assert_array_equal(i.numpy(), want_i)


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("case", [c for c in POOL if POOL[c][4] == 1])
def test_avg_pool(case, ceil_mode, backend, dtype, count_include_pad):
    xs, kernel, stride, padding, _ = POOL[case]
    nd = len(kernel)
    x = randn(np.random.default_rng(13), xs)
    st = kernel if stride is None else _tup(stride, nd)
    want = ref_avg_pool(x, kernel, st, _tup(padding, nd), count_include_pad, ceil_mode)
    got = AVG_FN[nd](
        as_tensor(x.astype(dtype), backend),
        kernel,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
    )
    assert_close(got, want.astype(dtype), dtype)


ADAPTIVE = {  # id: (x shape, output_size as passed, resolved output size)
    "2d-uneven": ((2, 3, 7, 9), (3, 4), (3, 4)),
    "2d-upsample-like": ((1, 2, 5, 3), (7, 5), (7, 5)),
    "2d-even": ((2, 2, 8, 6), (4, 3), (4, 3)),
    "2d-global": ((2, 3, 5, 4), 1, (1, 1)),
    "2d-none-entry": ((1, 2, 6, 5), (None, 2), (6, 2)),
    "1d": ((2, 3, 11), 5, (5,)),
}
AAVG_FN = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d}
AMAX_FN = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ADAPTIVE)
def test_adaptive_pools(case, backend, dtype):
    xs, output_size, out = ADAPTIVE[case]
    nd = len(xs) - 2
    x = randn(np.random.default_rng(17), xs)
    mean, mx, idx = ref_adaptive(x, out)
    assert_close(AAVG_FN[nd](as_tensor(x.astype(dtype), backend), output_size), mean.astype(dtype), dtype)
    v, i = AMAX_FN[nd](as_tensor(x.astype(dtype), backend), output_size, return_indices=True)
    assert_close(v, mx.astype(dtype), dtype)
    np.testing.assert_array_equal(i.numpy(), idx)
    assert AMAX_FN[nd](as_tensor(x.astype(dtype), backend), output_size).shape == mx.shape


@pytest.mark.parametrize("backend", BACKENDS)
def test_adaptive_max_pool_ties_take_the_first_maximum(backend):
    x = np.random.default_rng(19).integers(0, 2, (2, 3, 7, 9)).astype(np.float64)
    _, mx, idx = ref_adaptive(x, (3, 4))
    v, i = F.adaptive_max_pool2d(as_tensor(x, backend), (3, 4), return_indices=True)
    np.testing.assert_array_equal(v.numpy(), mx)
    np.testing.assert_array_equal(i.numpy(), idx)


# ---------------------------------------------------------------------------------------- interpolate

RESIZE = [(13, 5), (3, 20), (7, 9), (1, 1), (14, 18)]
MODES = [("nearest", None), ("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode,align_corners", MODES)
def test_interpolate(mode, align_corners, backend, dtype):
    x = randn(np.random.default_rng(23), (2, 3, 7, 9))
    for size in RESIZE:
        want = ref_interpolate(x, size, mode, bool(align_corners))
        got = F.interpolate(
            as_tensor(x.astype(dtype), backend), size=size, mode=mode, align_corners=align_corners
        )
        assert_close(got, want.astype(dtype), dtype)


@pytest.mark.parametrize("backend", BACKENDS)
def test_interpolate_scale_factor_and_1d(backend):
    x = randn(np.random.default_rng(29), (1, 2, 5, 4))
    got = F.interpolate(as_tensor(x, backend), scale_factor=(2, 1.5), mode="bilinear")
    assert_close(got, ref_interpolate(x, (10, 6), "bilinear", False), np.float64)
    # 1-d linear is bilinear over a unit height
    x1 = randn(np.random.default_rng(31), (2, 3, 6))
    for mode, ref_mode in (("linear", "bilinear"), ("nearest", "nearest")):
        got = F.interpolate(as_tensor(x1, backend), size=11, mode=mode)
        assert_close(got, ref_interpolate(x1[:, :, None, :], (1, 11), ref_mode, False)[:, :, 0], np.float64)
