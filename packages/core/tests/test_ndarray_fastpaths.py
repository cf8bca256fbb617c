"""The numpy backend's fast paths against plain references, on inputs chosen to reach each path:

- max pool as a chain of element-wise ops over the kernel's taps, and the argmax-over-rows path it
  hands large kernels and NaN windows to (both forced for every case), with ties, -inf and NaN;
- scatter_add / select_add by np.bincount (float dtypes; repeated indices accumulate) and by
  np.add.at (int dtypes, out-of-range indices);
- where as bit arithmetic (float outputs of 4096+ elements): bit-exact against np.where, NaN payloads
  and -0.0 included;
- conv_transpose at unit stride (col2im by whole-plane shifted adds), and the conv weight gradient
  rule of burn_autodiff in both of its matmul layouts.

Tolerances: indices and integer results exact; float64 1e-10 and float32 1e-5 relative (sums of
repeated indices are accumulated in a different order than the reference's).
"""

from __future__ import annotations

import itertools
import math

import burn
import numpy as np
import pytest
from burn._ndarray import _backend, _pool

B = _backend.NdArrayBackend()
rng = np.random.default_rng(11)


# ---------------------------------------------------------------- max pool
def ref_max_pool(x, kernel, stride, padding, dilation, ceil_mode):
    """Per window: argmax over its taps in row-major kernel order (first maximum; a NaN is the
    maximum), padding filled with the dtype's lowest value; the index is the flat spatial position."""
    spatial = x.shape[2:]
    out = [
        burn.backend.pool_out_size(s, k, st, p, d, ceil_mode)
        for s, k, st, p, d in zip(spatial, kernel, stride, padding, dilation)
    ]
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    big = np.full(
        x.shape[:2] + tuple(s + 2 * p + k * d for s, p, k, d in zip(spatial, padding, kernel, dilation)), low
    )
    big = big.astype(x.dtype)
    big[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, spatial))] = x
    values = np.zeros(x.shape[:2] + tuple(out), dtype=x.dtype)
    index = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    for o in np.ndindex(*out):
        taps = np.stack(
            [
                big[
                    (slice(None), slice(None))
                    + tuple(oi * st + ki * d for oi, st, ki, d in zip(o, stride, k, dilation))
                ]
                for k in offsets
            ],
            axis=-1,
        )
        arg = np.argmax(taps, axis=-1)
        at = (slice(None), slice(None)) + o
        values[at] = np.take_along_axis(taps, arg[..., None], -1)[..., 0]
        pos = np.array(
            [
                [oi * st - p + ki * d for oi, st, p, ki, d in zip(o, stride, padding, k, dilation)]
                for k in offsets
            ]
        )
        flat = sum(pos[:, d] * math.prod(spatial[d + 1 :]) for d in range(len(spatial)))
        index[at] = flat[arg]
    return values, index


POOLS = {  # id: (x shape, kernel, stride, padding, dilation, ceil_mode)
    "2x2-non-overlapping": ((2, 3, 8, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
    "2x2-odd-size": ((2, 3, 7, 9), (2, 2), (2, 2), (0, 0), (1, 1), False),
    "3x3-s2-pad": ((2, 2, 9, 8), (3, 3), (2, 2), (1, 1), (1, 1), False),
    "ceil-dilation": ((1, 2, 7, 8), (2, 3), (2, 1), (1, 0), (2, 1), True),
    "1d": ((3, 2, 11), (3,), (2,), (1,), (1,), True),
    "3d": ((1, 2, 4, 5, 6), (2, 2, 3), (2, 1, 2), (1, 0, 1), (1, 2, 1), False),
}


def _pool_input(kind, shape, dtype):
    if kind == "ties":  # few distinct values: most windows hold several maxima
        return rng.integers(-2, 2, shape).astype(dtype)
    x = rng.integers(-2, 2, shape).astype(dtype)
    x[x == -2] = -np.inf  # whole windows of -inf, some next to the -inf padding
    if kind == "nan":
        x.flat[::5] = np.nan
    return x


@pytest.mark.parametrize("path", ["taps", "argmax"])
@pytest.mark.parametrize(
    "kind,dtype",
    [("ties", np.float32), ("ties", np.int32), ("ties", np.int64), ("-inf", np.float64), ("nan", np.float32)],
)
@pytest.mark.parametrize("case", POOLS)
def test_max_pool_paths(case, kind, dtype, path, monkeypatch):
    shape, *args = POOLS[case]
    monkeypatch.setattr(_pool, "_TAPS_MIN_OUTPUTS", 0 if path == "taps" else 10**12)
    x = _pool_input(kind, shape, dtype)
    values, index = B.max_pool(x, *args)
    want_values, want_index = ref_max_pool(x, *args)
    assert values.dtype == x.dtype and index.dtype == np.int64
    np.testing.assert_array_equal(values, want_values)  # NaN == NaN for assert_array_equal
    np.testing.assert_array_equal(index, want_index)


def test_max_pool_picks_taps_for_a_cnn_sized_pool(monkeypatch):
    # the bench's pool (4 taps, 100k outputs) runs the taps; a global pool of 49 taps runs argmax rows
    # (numpy's own path: with a C compiler the plain cpu device runs a compiled pool instead)
    monkeypatch.setenv("BURN_CPU_NATIVE", "0")
    calls = []
    real = _pool._first_match
    monkeypatch.setattr(_pool, "_first_match", lambda *a: calls.append(1) or real(*a))
    x = rng.standard_normal((32, 16, 28, 28)).astype(np.float32)
    B.max_pool(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    B.max_pool(x[:, :, :7, :7], (7, 7), (7, 7), (0, 0), (1, 1), False)
    assert calls == [1]


# ---------------------------------------------------------------- scatter_add / select_add
def ref_scatter_add(x, dim, index, src):
    out = x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)
    for pos in np.ndindex(*index.shape):
        at = list(pos)
        at[dim] = index[pos]
        out[tuple(at)] += src[pos]
    return out


SCATTER_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64]


@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scatter_add_repeated_indices(dim, dtype):
    x = (rng.standard_normal((4, 5, 6)) * 8).astype(dtype)
    ishape = [3, 4, 5]
    ishape[dim] = 9  # more entries than the dim holds: every position is hit several times
    index = rng.integers(0, x.shape[dim], ishape)
    src = (rng.standard_normal(ishape) * 8).astype(dtype)
    got = B.scatter_add(x, dim, index, src)
    assert got.dtype == x.dtype and got.shape == x.shape
    want = ref_scatter_add(x, dim, index, src)
    _assert_sums(got, want, dtype)


@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_select_add_repeated_indices(dim, dtype):
    x = (rng.standard_normal((4, 5, 6)) * 8).astype(dtype)
    indices = rng.integers(0, x.shape[dim], 11)
    vshape = list(x.shape)
    vshape[dim] = 11
    values = (rng.standard_normal(vshape) * 8).astype(dtype)
    got = B.select_add(x, dim, indices, values)
    assert got.dtype == x.dtype and got.shape == x.shape
    full = np.broadcast_to(indices.reshape([-1 if d == dim else 1 for d in range(3)]), vshape)
    _assert_sums(got, ref_scatter_add(x, dim, full, values), dtype)


def _assert_sums(got, want, dtype):
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want.astype(dtype))
        return
    # the reference sums in float64: the backend (bincount) too, so float32/64 round once at the end
    tol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(dtype).astype(np.float64), rtol=tol, atol=tol * 64
    )


def test_scatter_add_index_grid_smaller_than_x_and_noncontiguous_src():
    x = rng.standard_normal((5, 7)).astype(np.float32)
    index = rng.integers(0, 7, (3, 12))
    src = rng.standard_normal((12, 3)).astype(np.float32).T  # a transposed view
    np.testing.assert_allclose(B.scatter_add(x, 1, index, src), ref_scatter_add(x, 1, index, src), rtol=1e-6)


def test_scatter_out_of_range_still_raises():
    # the backend's own guard: indices past the dim never land in a neighbouring row
    x = np.zeros((2, 3), dtype=np.float32)
    with pytest.raises(IndexError):
        B.scatter_add(x, 1, np.array([[3], [0]]), np.ones((2, 1), dtype=np.float32))
    with pytest.raises(IndexError):
        B.select_add(x, 0, np.array([0, 2]), np.ones((2, 3), dtype=np.float32))


# ---------------------------------------------------------------- where
def ref_where(cond, a, b):
    out = np.where(cond, a, b)
    ref = a if isinstance(a, np.ndarray | np.generic) else b
    return out.astype(ref.dtype) if out.dtype != ref.dtype else out


def _bits(x):
    return x.view(f"u{x.dtype.itemsize}")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_where_bits_match_np_where(dtype):
    shape = (64, 80)  # 5120 elements: the bit path
    assert math.prod(shape) >= _backend._SELECT_MIN_SIZE
    x = rng.standard_normal(shape).astype(dtype)
    x.flat[::13] = np.nan
    x.flat[1::13] = -np.nan
    x.flat[::17] = -0.0
    x.flat[::19] = np.inf
    y = rng.standard_normal(shape).astype(dtype)
    c = rng.random(shape) > 0.5
    operands = [
        (x, y),
        (x, 0.0),
        (0.0, x),
        (x, -0.0),
        (1.5, x),
        (x, 2),
        (True, x),
        (x, dtype(3.25)),
        (x, y[:1]),
        (x[:, :1], 0.0),
        (x, y.T.copy().T),
    ]
    for cond in (c, c[:1], c[:, :1], np.bool_(True), np.array(False)):
        for a, b in operands:
            if np.broadcast_shapes(np.shape(cond), np.shape(a), np.shape(b)) != shape:
                continue
            got, want = B.where(cond, a, b), ref_where(cond, a, b)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(_bits(got), _bits(want))
    got = B.mask_fill(x, c, -np.inf)
    np.testing.assert_array_equal(_bits(got), _bits(ref_where(c, -np.inf, x)))


def test_where_mixed_dtypes_keep_np_where_promotion():
    x = rng.standard_normal((64, 80)).astype(np.float32)
    y = rng.standard_normal((64, 80))  # float64: np.where promotes, the result is cast back to x's
    c = x > 0
    got = B.where(c, x, y)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.where(c, x, y).astype(np.float32))


# ---------------------------------------------------------------- conv_transpose, conv weight gradient
def ref_conv_transpose(x, w, stride, padding, output_padding, dilation, groups):
    """Every input pixel adds w^T x into its kernel-sized patch; then the padding is cropped."""
    n, c_in, spatial = x.shape[0], x.shape[1], x.shape[2:]
    c_in_g, c_out_g, kernel = c_in // groups, w.shape[1], w.shape[2:]
    out = [
        (s - 1) * st - 2 * p + d * (k - 1) + op + 1
        for s, st, p, d, k, op in zip(spatial, stride, padding, dilation, kernel, output_padding)
    ]
    full = np.zeros((n, c_out_g * groups) + tuple(o + 2 * p for o, p in zip(out, padding)))
    for g in range(groups):
        xs, ws = x[:, g * c_in_g : (g + 1) * c_in_g], w[g * c_in_g : (g + 1) * c_in_g]
        for s in np.ndindex(*spatial):
            for k in np.ndindex(*kernel):
                at = tuple(si * st + ki * d for si, st, ki, d in zip(s, stride, k, dilation))
                if all(a < f for a, f in zip(at, full.shape[2:])):
                    patch = xs[(slice(None), slice(None)) + s] @ ws[(slice(None), slice(None)) + k]
                    full[(slice(None), slice(g * c_out_g, (g + 1) * c_out_g)) + at] += patch
    return full[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, out))]


CONVT_UNIT = {  # id: (x shape, w shape, padding, output_padding, dilation, groups)
    "2d-pad": ((2, 4, 5, 6), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    "2d-dilation-groups": ((2, 4, 5, 4), (4, 2, 3, 2), (0, 1), (0, 0), (2, 1), 2),
    "2d-output-padding": ((1, 3, 4, 5), (3, 2, 2, 3), (2, 0), (1, 1), (1, 2), 1),
    "1d": ((2, 3, 9), (3, 4, 4), (1,), (0,), (3,), 1),
    "3d": ((1, 2, 3, 4, 5), (2, 3, 2, 3, 2), (0, 1, 1), (0, 0, 0), (1, 1, 2), 1),
    "1x1-input": ((2, 4, 1, 1), (4, 3, 3, 3), (0, 0), (0, 0), (1, 1), 1),
}


@pytest.mark.parametrize("case", CONVT_UNIT)
def test_conv_transpose_unit_stride(case):
    xs, ws, padding, output_padding, dilation, groups = CONVT_UNIT[case]
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    bias = rng.standard_normal(ws[1] * groups)
    ones = (1,) * len(padding)
    got = B.conv_transpose(x, w, bias, ones, padding, output_padding, dilation, groups)
    want = ref_conv_transpose(x, w, ones, padding, output_padding, dilation, groups)
    want += bias.reshape((1, -1) + ones)
    assert got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "xs,ws,stride,padding,dilation,groups",
    [
        (
            (4, 2, 9, 9),
            (3, 2, 3, 3),
            (1, 1),
            (1, 1),
            (1, 1),
            1,
        ),  # N*L >= C_in*K: the (windows @ g^T)^T layout
        ((1, 6, 3, 3), (4, 3, 3, 3), (1, 1), (0, 1), (1, 1), 2),  # N*L < C_in*K: g @ windows^T
        ((2, 3, 6, 5), (2, 3, 2, 3), (2, 1), (1, 0), (1, 2), 1),
    ],
)
def test_conv_weight_gradient_layouts(xs, ws, stride, padding, dilation, groups):
    pytest.importorskip("burn_autodiff")  # the [autodiff] extra
    import burn
    import burn.nn.functional as F

    dev = burn.device("cpu", autodiff=True)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    wt = burn.from_numpy(w, device=dev).require_grad()
    y = F.conv2d(
        burn.from_numpy(x, device=dev),
        wt,
        None,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    g = rng.standard_normal(y.shape)
    got = wt.grad((y * burn.from_numpy(g, device=dev)).sum().backward()).numpy()
    # d/dw[o, c, k] = sum over n and outputs of g[n, o, out] * x_padded[n, group(o) * C_in_g + c, out * stride + k * dilation]
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    c_in_g, c_out_g = ws[1], ws[0] // groups
    want = np.zeros(ws)
    for k in np.ndindex(*ws[2:]):
        taps = xp[
            (slice(None), slice(None))
            + tuple(
                slice(ki * d, ki * d + (o - 1) * st + 1, st)
                for ki, d, o, st in zip(k, dilation, g.shape[2:], stride)
            )
        ]
        for o in range(ws[0]):
            grp = o // c_out_g
            want[(o, slice(None)) + k] = np.einsum(
                "nhw,nchw->c", g[:, o], taps[:, grp * c_in_g : (grp + 1) * c_in_g]
            )
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
