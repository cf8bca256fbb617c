"""The numpy conv engine's gradients of an ungrouped conv (``burn._ndarray._conv_grads``) against
plain loop references in float64:

- the weight gradient as GEMMs over chunks of images (1-d, 2-d and 3-d; strides, padding, dilation;
  one chunk and many, by a small window budget), 2-d ones of 8 channels or more through channels-last
  windows;
- conv_transpose at unit stride run as the forward conv with the kernel flipped (padding up to the
  kernel's reach, dilation, a bias, batches split over threads), and the cases it leaves to col2im
  (output padding, stride 2, groups, padding past the reach), which must give the same results.

Tolerances: float64 1e-10 relative and absolute; float32 1e-4 relative with an absolute 1e-4 (sums of
a few hundred products in another order).
"""

from __future__ import annotations

import numpy as np
import pytest
from burn._ndarray import _backend, _conv_grads

B = _backend.NdArrayBackend()
rng = np.random.default_rng(5)


def ref_weight_grad(x, g, wshape, stride, padding, dilation):
    """d/dw[o, c, k] = sum over images and outputs of g[n, o, out] * x_padded[n, c, out*stride + k*dilation]."""
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    want = np.zeros(wshape)
    for k in np.ndindex(*wshape[2:]):
        taps = xp[
            (slice(None), slice(None))
            + tuple(
                slice(ki * d, ki * d + (o - 1) * st + 1, st)
                for ki, d, o, st in zip(k, dilation, g.shape[2:], stride)
            )
        ]
        want[(slice(None), slice(None)) + k] = np.einsum(
            "nol,ncl->oc", g.reshape(*g.shape[:2], -1).astype(np.float64), taps.reshape(*taps.shape[:2], -1)
        )
    return want


def ref_conv_transpose(x, w, padding, dilation, stride=(1, 1), output_padding=(0, 0), groups=1):
    """Every input pixel adds w^T x into its kernel-sized patch (per group), then the crop."""
    spatial, kernel = x.shape[2:], w.shape[2:]
    c_in_g, c_out_g = x.shape[1] // groups, w.shape[1]
    out = [
        (s - 1) * st - 2 * p + d * (k - 1) + op + 1
        for s, st, p, d, k, op in zip(spatial, stride, padding, dilation, kernel, output_padding)
    ]
    full = np.zeros((x.shape[0], c_out_g * groups) + tuple(o + 2 * p for o, p in zip(out, padding)))
    for gi in range(groups):
        xs, ws = x[:, gi * c_in_g : (gi + 1) * c_in_g], w[gi * c_in_g : (gi + 1) * c_in_g]
        for s in np.ndindex(*spatial):
            for k in np.ndindex(*kernel):
                at = tuple(si * st + ki * d for si, st, ki, d in zip(s, stride, k, dilation))
                if all(a < f for a, f in zip(at, full.shape[2:])):
                    patch = xs[(slice(None), slice(None)) + s] @ ws[(slice(None), slice(None)) + k]
                    full[(slice(None), slice(gi * c_out_g, (gi + 1) * c_out_g)) + at] += patch
    return full[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, out))]


WEIGHT_GRAD = {  # id: (x shape, w shape, stride, padding, dilation)
    "2d-pad": ((5, 3, 9, 8), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1)),
    "2d-stride-dilation": ((3, 2, 11, 9), (5, 2, 3, 2), (2, 1), (1, 0), (1, 2)),
    "2d-one-channel": ((6, 1, 8, 8), (7, 1, 3, 3), (1, 1), (1, 1), (1, 1)),
    "2d-channels-last": ((3, 9, 6, 5), (4, 9, 3, 3), (1, 1), (1, 1), (1, 1)),
    "2d-channels-last-stride-dilation": ((2, 8, 9, 8), (3, 8, 2, 3), (2, 1), (1, 0), (1, 2)),
    "1d": ((4, 3, 13), (2, 3, 4), (2,), (1,), (2,)),
    "3d": ((2, 2, 4, 5, 6), (3, 2, 2, 3, 2), (1, 2, 1), (0, 1, 1), (1, 1, 2)),
}


@pytest.mark.parametrize("budget", [1 << 22, 1], ids=["one-chunk", "image-per-chunk"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", WEIGHT_GRAD)
def test_weight_grad_matches_tap_sums(monkeypatch, case, dtype, budget):
    monkeypatch.setattr(_conv_grads, "_COLS_BUDGET", budget)
    xs, ws, stride, padding, dilation = WEIGHT_GRAD[case]
    x = rng.standard_normal(xs).astype(dtype)
    y_shape = B.conv(x, np.zeros(ws, dtype), None, stride, padding, dilation, 1).shape
    g = rng.standard_normal(y_shape).astype(dtype)
    got = B.conv_weight_grad(x, g, ws, stride, padding, dilation, 1)
    want = ref_weight_grad(x, g, ws, stride, padding, dilation)
    assert got.shape == ws and got.dtype == dtype
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


CONVT = {  # id: (x shape, w shape, padding, dilation)
    "pad-1": ((3, 4, 7, 6), (4, 5, 3, 3), (1, 1), (1, 1)),
    "pad-0": ((2, 3, 5, 5), (3, 2, 3, 2), (0, 0), (1, 1)),
    "full-reach-dilation": ((2, 2, 6, 5), (2, 3, 3, 3), (4, 1), (2, 1)),
    "1x1": ((2, 4, 3, 3), (4, 3, 1, 1), (0, 0), (1, 1)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CONVT)
def test_conv_transpose_as_conv(case, dtype):
    xs, ws, padding, dilation = CONVT[case]
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    bias = rng.standard_normal(ws[1]).astype(dtype)
    assert _conv_grads.transpose_padding(x, w, (1, 1), padding, (0, 0), dilation, 1) is not None
    got = B.conv_transpose(x, w, bias, (1, 1), padding, (0, 0), dilation, 1)
    want = ref_conv_transpose(x, w, padding, dilation) + bias.reshape(1, -1, 1, 1)
    assert got.shape == want.shape and got.dtype == dtype and got.flags.c_contiguous
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("threads", [1, 2])
def test_conv_transpose_as_conv_split_over_threads(threads):
    from burn._ndarray import _threads

    x = rng.standard_normal((8, 6, 10, 10)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    with _threads._parallel.held(threads):
        got = B.conv_transpose(x, w, None, (1, 1), (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(got, ref_conv_transpose(x, w, (1, 1), (1, 1)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "stride,padding,output_padding,groups",
    [
        ((1, 1), (1, 1), (1, 0), 1),
        ((2, 2), (1, 1), (0, 0), 1),
        ((1, 1), (1, 1), (0, 0), 2),
        ((1, 1), (3, 1), (0, 0), 1),
    ],
    ids=["output-padding", "stride-2", "groups", "padding-past-reach"],
)
def test_conv_transpose_left_to_col2im(stride, padding, output_padding, groups):
    x = rng.standard_normal((2, 4, 5, 6))
    w = rng.standard_normal((4, 3, 3, 3))
    assert _conv_grads.transpose_padding(x, w, stride, padding, output_padding, (1, 1), groups) is None
    got = B.conv_transpose(x, w, None, stride, padding, output_padding, (1, 1), groups)
    want = ref_conv_transpose(x, w, padding, (1, 1), stride, output_padding, groups)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("threads", [1, 2])
def test_small_weight_grads_hold_blas_at_one_thread(monkeypatch, threads):
    """A weight gradient below ``_SMALL_GEMM_MACS`` runs with BLAS held at one thread where BLAS has
    more (its spinning threads would fight the next ops); a large one, and any on one thread, is left
    as it is. Same results either way."""
    from burn._ndarray import _threads

    held = []
    real_held = _threads._parallel.held
    monkeypatch.setattr(_threads._parallel, "threads", lambda: threads)
    monkeypatch.setattr(_threads._parallel, "held", lambda n: held.append(n) or real_held(n))
    x = rng.standard_normal((4, 8, 6, 6)).astype(np.float32)
    g = rng.standard_normal((4, 5, 6, 6)).astype(np.float32)
    want = ref_weight_grad(x, g, (5, 8, 3, 3), (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(
        B.conv_weight_grad(x, g, (5, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1), want, rtol=1e-4, atol=1e-4
    )
    assert held == ([1] if threads > 1 else [])
    monkeypatch.setattr(_conv_grads, "_SMALL_GEMM_MACS", 1)
    held.clear()
    B.conv_weight_grad(x, g, (5, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1)
    assert held == []
