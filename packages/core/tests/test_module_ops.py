"""Module ops (conv, conv_transpose, unfold4d, embedding; pools and interpolate live in
test_module_ops_pool.py) against plain-loop numpy references written from the definitions, on the
numpy backend and on a core-only backend (so the defaults in ``burn.backend`` run too); backends and
tolerances in ``_module_ref.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from burn.backend import Backend
from burn.nn import functional as F
from burn_core_tests._module_ref import BACKENDS, CORE, as_tensor, assert_close, randn


def test_core_backend_overrides_no_module_op():
    assert not type(CORE).missing_core()
    for op in ("conv", "conv_transpose", "max_pool", "avg_pool", "interpolate", "unfold4d", "embedding"):
        assert getattr(type(CORE), op) is getattr(Backend, op)


# ---------------------------------------------------------------------------------------- references


def ref_conv(x, w, bias, stride, padding, dilation, groups):
    """y[n, co, o] = bias[co] + sum over the group's ci and kernel offsets k of x_pad[n, ci, o*s + k*d] * w."""
    n, c = x.shape[:2]
    co, kernel = w.shape[0], w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    out = [
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, p, d, k, st in zip(x.shape[2:], padding, dilation, kernel, stride)
    ]
    cg, cog = c // groups, co // groups
    y = np.zeros((n, co, *out))
    for o in np.ndindex(*out):
        for g in range(groups):
            acc = np.zeros((n, cog))
            for k in np.ndindex(*kernel):
                pos = tuple(oi * st + ki * d for oi, ki, st, d in zip(o, k, stride, dilation))
                acc += (
                    xp[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]
                    @ w[(slice(g * cog, (g + 1) * cog), slice(None)) + k].T
                )
            y[(slice(None), slice(g * cog, (g + 1) * cog)) + o] = acc
    if bias is not None:
        y += bias.reshape((1, co) + (1,) * len(out))
    return y


def ref_conv_transpose(x, w, bias, stride, padding, output_padding, dilation, groups):
    """y[n, co, o] = sum of x[n, ci, i] * w[ci, co, k] over every (i, k) with i*s + k*d - p == o."""
    n, ci, spatial = x.shape[0], x.shape[1], x.shape[2:]
    cog, kernel = w.shape[1], w.shape[2:]
    cig = ci // groups
    out = [
        (s - 1) * st - 2 * p + d * (k - 1) + op + 1
        for s, st, p, d, k, op in zip(spatial, stride, padding, dilation, kernel, output_padding)
    ]
    y = np.zeros((n, cog * groups, *out))
    for o in np.ndindex(*out):
        for k in np.ndindex(*kernel):
            src = [oi + p - ki * d for oi, p, ki, d in zip(o, padding, k, dilation)]
            if any(v % st for v, st in zip(src, stride)):
                continue
            i = tuple(v // st for v, st in zip(src, stride))
            if not all(0 <= v < s for v, s in zip(i, spatial)):
                continue
            for g in range(groups):
                xs = x[(slice(None), slice(g * cig, (g + 1) * cig)) + i]
                ws = w[(slice(g * cig, (g + 1) * cig), slice(None)) + k]
                y[(slice(None), slice(g * cog, (g + 1) * cog)) + o] += xs @ ws
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * len(out))
    return y


def ref_unfold(x, kernel, stride, padding, dilation):
    n, c, h, w = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2])
    oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    y = np.zeros((n, c * kernel[0] * kernel[1], oh * ow))
    for ch, ki, kj, i, j in itertools.product(
        range(c), range(kernel[0]), range(kernel[1]), range(oh), range(ow)
    ):
        row = (ch * kernel[0] + ki) * kernel[1] + kj
        y[:, row, i * ow + j] = xp[:, ch, i * stride[0] + ki * dilation[0], j * stride[1] + kj * dilation[1]]
    return y


# ---------------------------------------------------------------------------------------- conv

CONV = {  # id: (x shape, c_out, kernel, stride, padding, dilation, groups, bias)
    "2d-plain": ((2, 3, 7, 6), 4, (3, 3), 1, 0, 1, 1, True),
    "2d-strided-dilated-groups": ((2, 4, 7, 9), 6, (3, 2), (2, 1), (1, 2), (1, 2), 2, True),
    "2d-1x1-strided": ((1, 4, 5, 5), 4, (1, 1), 2, 0, 1, 1, False),
    "2d-depthwise": ((2, 6, 6, 5), 6, (3, 3), 1, 1, 1, 6, False),
    "2d-big-stride-pad": ((1, 2, 8, 8), 3, (2, 2), 3, 2, 3, 1, True),
    "1d": ((2, 4, 11), 6, (3,), 2, 1, 2, 2, True),
    "3d": ((1, 2, 5, 4, 6), 4, (2, 3, 2), (1, 2, 1), (1, 0, 1), (2, 1, 1), 1, True),
}
CONV_FN = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONVT_FN = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CONV)
def test_conv(case, backend, dtype):
    xs, co, kernel, stride, padding, dilation, groups, with_bias = CONV[case]
    nd = len(kernel)
    rng = np.random.default_rng(len(case))
    x, w = randn(rng, xs), randn(rng, (co, xs[1] // groups) + kernel)
    bias = randn(rng, (co,)) if with_bias else None
    want = ref_conv(x, w, bias, _tup(stride, nd), _tup(padding, nd), _tup(dilation, nd), groups)
    args = [as_tensor(a.astype(dtype), backend) if a is not None else None for a in (x, w, bias)]
    got = CONV_FN[nd](*args, stride=stride, padding=padding, dilation=dilation, groups=groups)
    assert_close(got, want.astype(dtype), dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kernel,dilation", [((3, 3), 1), ((2, 4), 1), ((3, 2), (2, 3))])
def test_conv_padding_same_and_valid(backend, kernel, dilation):
    rng = np.random.default_rng(1)
    x, w = randn(rng, (1, 2, 6, 7)), randn(rng, (3, 2) + kernel)
    d = _tup(dilation, 2)
    got = F.conv2d(as_tensor(x, backend), as_tensor(w, backend), padding="same", dilation=dilation)
    assert got.shape == (1, 3, 6, 7)
    # "same" = the smaller half of the total padding before, the rest after (PyTorch)
    total = [di * (k - 1) for k, di in zip(kernel, d)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(t // 2, t - t // 2) for t in total])
    assert_close(got, ref_conv(xp, w, None, (1, 1), (0, 0), d, 1), np.float64)
    valid = F.conv2d(as_tensor(x, backend), as_tensor(w, backend), padding="valid", dilation=dilation)
    assert_close(valid, ref_conv(x, w, None, (1, 1), (0, 0), d, 1), np.float64)


CONVT = {  # id: (x shape, c_out / groups, kernel, stride, padding, output_padding, dilation, groups, bias)
    "2d-plain": ((2, 3, 4, 5), 2, (3, 3), 1, 0, 0, 1, 1, True),
    "2d-all-args": ((2, 4, 3, 4), 3, (3, 2), (2, 3), (1, 2), (1, 1), (1, 2), 2, True),
    "2d-crop": ((1, 2, 4, 4), 2, (2, 2), 3, 2, 0, 1, 1, False),
    "1d-groups": ((2, 4, 6), 3, (3,), 3, 4, 2, 2, 2, False),
    "3d": ((1, 2, 3, 2, 3), 2, (2, 2, 3), (2, 1, 2), (0, 1, 1), (1, 0, 0), 1, 1, True),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CONVT)
def test_conv_transpose(case, backend, dtype):
    xs, cog, kernel, stride, padding, out_pad, dilation, groups, with_bias = CONVT[case]
    nd = len(kernel)
    rng = np.random.default_rng(len(case) + 7)
    x, w = randn(rng, xs), randn(rng, (xs[1], cog) + kernel)
    bias = randn(rng, (cog * groups,)) if with_bias else None
    t = [_tup(v, nd) for v in (stride, padding, out_pad, dilation)]
    want = ref_conv_transpose(x, w, bias, *t, groups)
    args = [as_tensor(a.astype(dtype), backend) if a is not None else None for a in (x, w, bias)]
    got = CONVT_FN[nd](
        *args, stride=stride, padding=padding, output_padding=out_pad, groups=groups, dilation=dilation
    )
    assert_close(got, want.astype(dtype), dtype)


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_transpose_is_the_adjoint_of_conv(backend):
    # <conv(x, w), y> == <x, conv_transpose(y, w)>: an identity independent of both implementations
    rng = np.random.default_rng(3)
    stride, padding, dilation, groups = (2, 3), (1, 2), (2, 1), 2
    x, w = randn(rng, (2, 4, 10, 10)), randn(rng, (6, 2, 3, 4))
    shared = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    y = F.conv2d(as_tensor(x, backend), as_tensor(w, backend), **shared)
    g = randn(rng, y.shape)
    # the output_padding that brings conv_transpose back to x's size (the rows conv's floor dropped)
    out_pad = tuple(
        n - ((m - 1) * st - 2 * p + d * (k - 1) + 1)
        for n, m, st, p, d, k in zip(x.shape[2:], y.shape[2:], stride, padding, dilation, w.shape[2:])
    )
    assert out_pad == (1, 1)
    back = F.conv_transpose2d(as_tensor(g, backend), as_tensor(w, backend), output_padding=out_pad, **shared)
    back = back.numpy()
    assert back.shape == x.shape
    np.testing.assert_allclose(np.vdot(y.numpy(), g), np.vdot(x, back), rtol=1e-10)


UNFOLD = {  # id: (x shape, kernel, stride, padding, dilation)
    "plain": ((2, 3, 5, 6), (2, 2), (1, 1), (0, 0), (1, 1)),
    "all-args": ((2, 2, 7, 6), (3, 2), (2, 1), (1, 1), (1, 2)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", UNFOLD)
def test_unfold4d(case, backend, dtype):
    xs, kernel, stride, padding, dilation = UNFOLD[case]
    x = randn(np.random.default_rng(5), xs)
    got = F.unfold4d(
        as_tensor(x.astype(dtype), backend), kernel, stride=stride, padding=padding, dilation=dilation
    )
    assert_close(got, ref_unfold(x, kernel, stride, padding, dilation).astype(dtype), dtype)


# ---------------------------------------------------------------------------------------- embedding


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("backend", BACKENDS)
def test_embedding(backend, index_dtype):
    rng = np.random.default_rng(37)
    weight = randn(rng, (6, 4))
    indices = rng.integers(0, 6, (2, 3, 2)).astype(index_dtype)
    want = np.array([[[weight[j] for j in row] for row in plane] for plane in indices.tolist()])
    got = F.embedding(as_tensor(indices, backend), as_tensor(weight, backend))
    assert_close(got, want, np.float64)


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_batch_keeps_shapes(backend):
    # an empty batch is legal (PyTorch allows it); each op returns the right empty shape
    x = as_tensor(np.zeros((0, 3, 6, 6)), backend)
    assert F.conv2d(x, as_tensor(np.zeros((4, 3, 3, 3)), backend)).shape == (0, 4, 4, 4)
    assert F.conv_transpose2d(x, as_tensor(np.zeros((3, 2, 3, 3)), backend), stride=2).shape == (0, 2, 13, 13)
    assert F.max_pool2d(x, 2, return_indices=True)[1].shape == (0, 3, 3, 3)
    assert F.avg_pool2d(x, 2).shape == (0, 3, 3, 3)
    assert F.adaptive_max_pool2d(x, (4, 5)).shape == (0, 3, 4, 5)
    assert F.interpolate(x, size=(3, 9), mode="bicubic").shape == (0, 3, 3, 9)
    assert F.unfold4d(x, 2).shape == (0, 12, 25)
