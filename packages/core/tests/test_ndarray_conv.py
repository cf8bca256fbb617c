"""The numpy backend's conv forward against a direct sum over kernel taps (a formulation independent of
its im2col + GEMM), on every path it takes: 1x1 at unit stride on one image (no window copy); window
views, one image per GEMM (the bias as a row of the GEMM) or several (the batched layout and its
transposed copy, bias fused into it); chunks cut by the workspace budget; non-contiguous inputs; the
workspace reused across calls and shapes; groups, dilation, 1-d and 3-d, float64.

Tolerances: float32 1e-4 relative to the output scale (sums of up to a few hundred products in a
different order than the reference's), float64 1e-10.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from burn._ndarray import _backend, _module

B = _backend.NdArrayBackend()
rng = np.random.default_rng(17)


def ref_conv(x, w, bias, stride, padding, dilation, groups):
    """Sum over kernel offsets of (C_out/g, C_in/g) @ the input samples that offset sees."""
    n, c = x.shape[:2]
    c_out, c_in_g, *kernel = w.shape
    nd = len(kernel)
    pad = ((0, 0), (0, 0)) + tuple((p, p) for p in padding)
    xp = np.pad(x.astype(np.float64), pad)
    out = [
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, p, d, k, st in zip(x.shape[2:], padding, dilation, kernel, stride)
    ]
    y = np.zeros((n, c_out, *out))
    c_out_g = c_out // groups
    for g in range(groups):
        xs = xp[:, g * c_in_g : (g + 1) * c_in_g]
        ws = w[g * c_out_g : (g + 1) * c_out_g].astype(np.float64)
        for offset in itertools.product(*(range(k) for k in kernel)):
            index = (slice(None), slice(None)) + tuple(
                slice(o * d, o * d + (m - 1) * st + 1, st)
                for o, d, m, st in zip(offset, dilation, out, stride)
            )
            tap = ws[(slice(None), slice(None)) + offset]  # (C_out/g, C_in/g)
            y[:, g * c_out_g : (g + 1) * c_out_g] += np.einsum("oc,nc...->no...", tap, xs[index])
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * nd)
    return y


CASES = [
    # (x shape, weight shape, stride, padding, dilation, groups)
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((3, 4, 6, 7), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((2, 8, 5, 5), (8, 1, 3, 3), (1, 1), (2, 2), (2, 2), 8),  # depthwise, dilated
    ((1, 6, 4, 4), (5, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # 1x1, one image: a plain matmul
    ((1, 6, 4, 4), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 2),  # grouped 1x1, one image
    ((5, 6, 4, 4), (5, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # 1x1, small images: batched windows
    ((4, 6, 8, 8), (5, 6, 1, 1), (2, 2), (0, 0), (1, 1), 1),  # strided 1x1: windows
    ((1, 3, 40, 40), (8, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # one image per GEMM
    ((1, 3, 40, 40), (8, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1),  # one image, strided
    ((3, 2, 36, 36), (4, 2, 5, 5), (1, 1), (2, 2), (1, 1), 1),  # 1296 columns: one image per GEMM
    ((2, 3, 11), (4, 3, 3), (2,), (1,), (1,), 1),  # 1-d
    ((2, 4, 5, 4, 6), (6, 2, 3, 1, 2), (1, 1, 2), (1, 0, 1), (1, 1, 1), 2),  # 3-d
]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-w{'x'.join(map(str, c[1]))}"
)
def test_conv_matches_tap_sum(case, bias):
    xs, ws, stride, padding, dilation, groups = case
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
    want = ref_conv(x, w, b, stride, padding, dilation, groups)
    got = B.conv(x, w, b, stride, padding, dilation, groups)
    assert got.dtype == np.float32 and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("stride", [(1, 1), (2, 1)])
@pytest.mark.parametrize("min_columns, budget", [(1, 1 << 22), (1 << 20, 1 << 22), (1 << 20, 4000)])
def test_conv_batch_chunking(monkeypatch, min_columns, budget, stride):
    """One image per GEMM, all 7 images in one GEMM, and chunks cut by the workspace budget agree."""
    monkeypatch.setattr(_module, "_GEMM_MIN_COLUMNS", min_columns)
    monkeypatch.setattr(_module, "_COLS_BUDGET", budget)
    x = rng.standard_normal((7, 4, 6, 6))
    w = rng.standard_normal((6, 2, 3, 3))
    b = rng.standard_normal(6)
    want = ref_conv(x, w, b, stride, (1, 1), (1, 1), 2)
    got = B.conv(x, w, b, stride, (1, 1), (1, 1), 2)
    plan = _module._conv_plan(x.shape, w.shape, stride, (1, 1), (1, 1), 2, min_columns, budget)
    per = plan.per
    assert got.dtype == np.float64
    assert per == 1 if min_columns == 1 else per == 7 if budget > 4000 else 1 < per < 7
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding", [(0, 0), (1, 2)])
def test_conv_of_a_non_contiguous_input(padding):
    """A transposed view: unpadded it takes the strided windows path, padded the copy is contiguous."""
    x = rng.standard_normal((3, 5, 7, 4)).astype(np.float32).transpose(0, 1, 3, 2)
    w = rng.standard_normal((4, 5, 3, 3)).astype(np.float32)
    want = ref_conv(x, w, None, (1, 1), padding, (1, 1), 1)
    got = B.conv(x, w, None, (1, 1), padding, (1, 1), 1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_conv_workspace_reuse_does_not_leak_between_calls():
    """A result never aliases the reused workspace: later convs (other shapes, padding) leave it as is."""
    x1 = rng.standard_normal((2, 3, 10, 10)).astype(np.float32)
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y1 = B.conv(x1, w1, None, (1, 1), (1, 1), (1, 1), 1)
    keep = y1.copy()
    for shape in [(3, 5, 12, 12), (1, 3, 10, 10), (4, 3, 7, 7)]:
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((4, shape[1], 3, 3)).astype(np.float32)
        B.conv(x, w, None, (1, 1), (2, 2), (1, 1), 1)
    np.testing.assert_array_equal(y1, keep)
    x = rng.standard_normal((1, 3, 10, 10)).astype(np.float32)
    np.testing.assert_allclose(
        B.conv(x, w1, None, (1, 1), (1, 1), (1, 1), 1),
        ref_conv(x, w1, None, (1, 1), (1, 1), (1, 1), 1),
        rtol=1e-4,
        atol=1e-4 * math.sqrt(27),
    )
