"""The plain cpu device's inference kernels for CNNs (``burn._native``): the depthwise conv kernel with
its clamp epilogue (``_ops_conv.conv2d`` where C == C_out == groups), the values-only max pool
(``_ops_pool.max_pool2d_values``, the numpy backend's ``max_pool_values``) and ``conv_fused``'s ``clip``.

- the depthwise kernel over a table of shapes, kernels, strides, padding and dilation, float32 and
  float64, clamp none / ReLU / ReLU6, against a float64 numpy reference by kernel taps: within 2e-5
  relative (float32; 1e-12 float64) of the reference's scale;
- the values-only max pool against the numpy backend's ``max_pool`` values: exactly (the max is
  exact), NaN and -inf included, ceil mode and dilation too; and ``max_pool_values`` with
  ``BURN_CPU_NATIVE=0`` (numpy's taps) equal to the compiled one;
- ``conv_fused(..., clip=)`` on plain, 1x1 and depthwise convs (with ReLU, residual) against the
  unfused numpy conv then ``np.clip``: within float32 rounding (2e-5 relative), with the compiled kernels
  on and off.

The compiling tests skip where no C compiler works; the ``BURN_CPU_NATIVE=0`` ones run everywhere.
"""

from __future__ import annotations

import math
from typing import Any

import burn
import numpy as np
import pytest
from burn import _native
from burn._native import _ops_conv, _ops_pool

TC = _native.toolchain()
needs_cc = pytest.mark.skipif(not TC.available, reason=f"no working C compiler: {TC.reason}")
B = burn.device("cpu").backend
RTOL = {np.float32: 2e-5, np.float64: 1e-12}
CLAMPS = (None, (0.0, math.inf), (0.0, 6.0), (-0.5, 0.25))


def _ref_depthwise(x: Any, w: Any, b: Any, stride: Any, pad: Any, dil: Any) -> np.ndarray:
    """A float64 depthwise 2-d conv by kernel taps."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    y = np.zeros((n, c, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = xp[
                :,
                :,
                i * dil[0] : i * dil[0] + (oh - 1) * stride[0] + 1 : stride[0],
                j * dil[1] : j * dil[1] + (ow - 1) * stride[1] + 1 : stride[1],
            ]
            y += win * w[None, :, 0, i, j, None, None]
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


# (N, C, H, W), kernel, stride, padding, dilation
DW_CASES = [
    ((2, 5, 9, 11), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 8, 16, 16), (3, 3), (2, 2), (1, 1), (1, 1)),
    ((3, 4, 7, 7), (3, 3), (1, 1), (0, 0), (1, 1)),
    ((1, 6, 12, 10), (3, 3), (2, 1), (2, 1), (2, 2)),
    ((2, 3, 15, 13), (5, 5), (2, 2), (2, 2), (1, 1)),
    ((1, 7, 8, 9), (1, 3), (1, 3), (0, 1), (1, 1)),
    ((1, 2, 6, 20), (3, 2), (3, 2), (2, 0), (1, 3)),
    ((4, 16, 5, 5), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((1, 3, 4, 4), (3, 3), (3, 3), (3, 3), (1, 1)),  # windows all padding on a border
    ((2, 9, 4, 4), (3, 3), (1, 1), (1, 1), (1, 1)),  # small planes: computed on the padded width
    ((1, 5, 7, 6), (3, 3), (1, 1), (2, 1), (2, 1)),
    ((1, 4, 9, 15), (3, 3), (1, 1), (0, 0), (1, 1)),
]


@needs_cc
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("case", range(len(DW_CASES)))
def test_depthwise_kernel_matches_the_float64_reference(case: int, dtype: Any) -> None:
    shape, k, stride, pad, dil = DW_CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(dtype)
    c = shape[1]
    w = rng.standard_normal((c, 1, *k)).astype(dtype)
    for bias in (None, rng.standard_normal(c).astype(dtype)):
        want = _ref_depthwise(x, w, bias, stride, pad, dil)
        for clamp in CLAMPS:
            got = _ops_conv.conv2d(x, w, bias, stride, pad, dil, c, force=True, clamp=clamp)
            assert got is not None and got.dtype == dtype and got.shape == want.shape
            ref = want if clamp is None else np.clip(want, *clamp)
            np.testing.assert_allclose(got, ref, rtol=0, atol=RTOL[dtype] * (1 + np.abs(want).max()))


@needs_cc
def test_depthwise_clamp_keeps_nan_as_numpy_clip() -> None:
    x = np.ones((1, 2, 4, 4), np.float32)
    x[0, 1, 2, 2] = np.nan
    w = np.ones((2, 1, 3, 3), np.float32)
    got = _ops_conv.conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 2, force=True, clamp=(0.0, 6.0))
    assert got is not None
    want = np.clip(_ref_depthwise(x, w, None, (1, 1), (1, 1), (1, 1)), 0.0, 6.0).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6)


# (N, C, H, W), kernel, stride, padding, dilation, ceil_mode
POOL_CASES = [
    ((2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((1, 4, 112, 112), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((2, 2, 10, 7), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((1, 3, 11, 13), (3, 2), (1, 2), (1, 1), (2, 1), False),
    ((1, 2, 9, 9), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 3, 6, 17), (1, 4), (1, 3), (0, 2), (1, 2), True),
    ((1, 1, 5, 5), (5, 5), (1, 1), (2, 2), (1, 1), False),
]


@needs_cc
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_values_only_max_pool_equals_the_numpy_pool(case: int, dtype: Any, monkeypatch) -> None:
    shape, k, stride, pad, dil, ceil = POOL_CASES[case]
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[rng.integers(0, x.size, 3)] = -np.inf
    got = _ops_pool.max_pool2d_values(x, k, stride, pad, dil, ceil, force=True)
    assert got is not None
    with monkeypatch.context() as m:
        m.setenv("BURN_CPU_NATIVE", "0")
        want = B.max_pool(x, k, stride, pad, dil, ceil)[0]
        taps = B.max_pool_values(x, k, stride, pad, dil, ceil)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(taps, want)
    np.testing.assert_array_equal(B.max_pool_values(x, k, stride, pad, dil, ceil), want)


@needs_cc
def test_values_only_max_pool_propagates_nan() -> None:
    x = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)
    x[0, 0, 3, 4] = np.nan
    got = _ops_pool.max_pool2d_values(x, (3, 3), (2, 2), (1, 1), (1, 1), False, force=True)
    assert got is not None
    # the windows that hold (3, 4): rows 1..2 of the output, columns 2 and 3 (NaN), like numpy's maximum
    nan_at = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.isnan(got[0, 0])))}
    assert nan_at == {(1, 2), (2, 2)}
    assert not np.isnan(np.delete(got.reshape(-1), [1 * 4 + 2, 2 * 4 + 2])).any()


def _conv_ref(x: Any, w: Any, b: Any, stride: Any, pad: Any, groups: int) -> np.ndarray:
    if groups == x.shape[1] and w.shape[1] == 1:
        return _ref_depthwise(x, w, b, stride, pad, (1, 1))
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    co, _, kh, kw = w.shape
    oh = (xp.shape[2] - kh) // stride[0] + 1
    ow = (xp.shape[3] - kw) // stride[1] + 1
    y = np.zeros((x.shape[0], co, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = xp[
                :,
                :,
                i : i + (oh - 1) * stride[0] + 1 : stride[0],
                j : j + (ow - 1) * stride[1] + 1 : stride[1],
            ]
            y += np.einsum("nchw,oc->nohw", win, w[:, :, i, j].astype(np.float64))
    return y if b is None else y + b[None, :, None, None]


@pytest.mark.parametrize("native", ("1", "0"))
@pytest.mark.parametrize(
    "shape,wshape,stride,pad,groups",
    [
        ((2, 4, 10, 10), (6, 4, 3, 3), (1, 1), (1, 1), 1),
        ((3, 8, 7, 7), (16, 8, 1, 1), (1, 1), (0, 0), 1),
        ((2, 16, 12, 12), (16, 1, 3, 3), (2, 2), (1, 1), 16),
        ((1, 32, 9, 9), (32, 1, 3, 3), (1, 1), (1, 1), 32),
    ],
    ids=["3x3", "1x1", "dw-s2", "dw"],
)
def test_conv_fused_clip_matches_conv_then_clip(shape, wshape, stride, pad, groups, native, monkeypatch):
    if native == "1" and not TC.available:
        pytest.skip(f"no working C compiler: {TC.reason}")
    monkeypatch.setenv("BURN_CPU_NATIVE", native)
    rng = np.random.default_rng(len(shape) + groups)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal(wshape) * 0.5).astype(np.float32)
    b = rng.standard_normal(wshape[0]).astype(np.float32)
    want = _conv_ref(x, w, b, stride, pad, groups)
    atol = 2e-5 * (1 + np.abs(want).max())
    for relu, clip in ((False, (0.0, 6.0)), (True, (-1.0, 0.5)), (False, (-math.inf, 0.0)), (True, None)):
        got = B.conv_fused(x, w, b, stride, pad, (1, 1), groups, relu=relu, clip=clip)
        ref = np.maximum(want, 0) if relu else want
        ref = ref if clip is None else np.clip(ref, *clip)
        np.testing.assert_allclose(got, ref, rtol=0, atol=atol)
    res = rng.standard_normal(want.shape).astype(np.float32)
    got = B.conv_fused(x, w, b, stride, pad, (1, 1), groups, residual=res, relu=True, clip=(0.0, 1.0))
    np.testing.assert_allclose(got, np.clip(np.maximum(want + res, 0), 0, 1), rtol=0, atol=atol)


@needs_cc
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_channel_epilogue_equals_numpy_passes(dtype: Any) -> None:
    from burn._native import _ops_epilogue

    rng = np.random.default_rng(3)
    base = rng.standard_normal((3, 5, 37)).astype(dtype) * 4
    base[1, 2, 7] = np.nan
    bias = rng.standard_normal(5).astype(dtype)
    res = rng.standard_normal(base.shape).astype(dtype)
    for b in (None, bias):
        for r in (None, res):
            for clamp in CLAMPS:
                y = base.copy()
                assert _ops_epilogue.channel_epilogue(y, b, r, clamp)
                want = base.copy()
                if b is not None:
                    want = want + b[None, :, None]
                if r is not None:
                    want = want + r
                if clamp is not None:
                    want = np.clip(want, *clamp)
                np.testing.assert_array_equal(y, want)  # the same sums in the same order
    assert not _ops_epilogue.channel_epilogue(base[:, :, ::2], None, None, None)  # not C-contiguous


def test_kernel_pointers_equal_the_array_interface() -> None:
    from burn._native import _ops

    base = np.arange(24.0).reshape(4, 6)
    for a in (base, base[1:], base[:, 2:], base.T, np.zeros(0, np.float32), np.float32(1.0) * np.ones(1)):
        assert _ops.ptr(a) == a.__array_interface__["data"][0]
    assert _ops.ptr(None) == 0
