"""The tuned conv2d family against an independent numpy convolution (and torch CPU where installed):
every candidate over stride, padding, dilation, groups (depthwise included), 1x1 and rectangular
kernels, odd sizes and float16; then the family through ``F.conv2d`` and one tuning run."""

from __future__ import annotations

import warnings

import burn
import burn.nn.functional as F
import numpy as np
import pytest
from burn_wgpu import _conv


def _reference(x, w, b, stride, padding, dilation, groups):
    """Direct convolution in float64: one einsum per kernel tap over the padded input."""
    n, cin, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, cout, oh, ow))
    og = cout // groups
    for g in range(groups):
        wg = w[g * og : (g + 1) * og].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                win = xp[:, g * cg : (g + 1) * cg, i * dh : i * dh + sh * (oh - 1) + 1 : sh]
                win = win[..., j * dw : j * dw + sw * (ow - 1) + 1 : sw]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", win, wg[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


# (x shape, w shape, stride, padding, dilation, groups)
CASES = [
    ((2, 4, 9, 11), (6, 4, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 10, 9), (4, 3, 3, 2), (2, 1), (0, 2), (1, 2), 2),
    ((2, 4, 7, 7), (4, 1, 3, 3), (1, 1), (1, 1), (2, 2), 4),  # depthwise, dilated
    ((2, 8, 5, 6), (12, 8, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # pointwise
    ((1, 3, 12, 12), (5, 3, 5, 5), (3, 2), (2, 1), (1, 1), 1),
    ((3, 5, 6, 4), (7, 5, 2, 3), (1, 2), (1, 0), (2, 1), 1),  # odd everything, no vec4 anywhere
]
CANDIDATES = [c.name for c in _conv.CONV2D.candidates]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x{}w{}s{}p{}d{}g{}".format(*c).replace(" ", ""))
@pytest.mark.parametrize("name", CANDIDATES)
def test_candidates_match_numpy(backend, rng, case, name):
    xs, ws, stride, padding, dilation, groups = case
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    px, pw, pb = (backend.from_numpy(v, burn.float32) for v in (x, w, b))
    fn = _conv.CONV2D.by_name[name].fn
    got = backend.to_numpy(fn(backend, px, pw, pb, stride, padding, dilation, groups))
    np.testing.assert_allclose(
        got, _reference(x, w, b, stride, padding, dilation, groups), rtol=1e-4, atol=1e-4
    )


def test_strided_input_and_no_bias(backend, rng):
    x = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)  # NHWC in memory, viewed as NCHW
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    px = backend.permute(backend.from_numpy(x, burn.float32), (0, 3, 1, 2))
    pw = backend.from_numpy(w, burn.float32)
    want = _reference(x.transpose(0, 3, 1, 2), w, None, (1, 1), (1, 1), (1, 1), 1)
    for name in CANDIDATES:
        got = backend.to_numpy(
            _conv.CONV2D.by_name[name].fn(backend, px, pw, None, (1, 1), (1, 1), (1, 1), 1)
        )
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=name)


def test_float16(backend, rng):
    if burn.float16 not in backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    x = rng.standard_normal((2, 4, 6, 7)).astype(np.float16)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float16)
    px, pw = backend.from_numpy(x, burn.float16), backend.from_numpy(w, burn.float16)
    want = _reference(x, w, None, (1, 1), (1, 1), (1, 1), 1)
    for name in ("im2col", "implicit_b64x64k16r4x4"):
        got = backend.to_numpy(
            _conv.CONV2D.by_name[name].fn(backend, px, pw, None, (1, 1), (1, 1), (1, 1), 1)
        )
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=2e-2, err_msg=name)


def test_functional_conv2d_and_torch(dev, rng):
    """The family through the public API (fusion decorator and all), against torch CPU too."""
    x = rng.standard_normal((2, 6, 10, 10)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    got = F.conv2d(
        burn.tensor(x, device=dev), burn.tensor(w, device=dev), burn.tensor(b, device=dev), 2, 1, 1, 2
    ).numpy()
    np.testing.assert_allclose(got, _reference(x, w, b, (2, 2), (1, 1), (1, 1), 2), rtol=1e-4, atol=1e-4)
    torch = pytest.importorskip("torch")
    want = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride=2, padding=1, groups=2
    )
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_conv_tunes_every_candidate(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.setenv("BURN_AUTOTUNE", "full")
    from burn_wgpu._backend import WgpuBackend

    backend = WgpuBackend(0)
    backend.device = "wgpu:test"
    x = rng.standard_normal((2, 16, 32, 32)).astype(np.float32)  # 19 MFLOP: over the tuning threshold
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    px, pw = backend.from_numpy(x, burn.float32), backend.from_numpy(w, burn.float32)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = backend.to_numpy(backend.conv(px, pw, None, (1, 1), (1, 1), (1, 1), 1))
    np.testing.assert_allclose(got, _reference(x, w, None, (1, 1), (1, 1), (1, 1), 1), rtol=1e-3, atol=1e-3)
    key = "conv2d|float32 n2 c16 h32 w32 o32 k3x3 s1x1 p1x1 d1x1 g1"
    entry = backend._autotuner.cache.get(key)
    assert entry is not None and entry["dropped"] == {}, entry
    applies = {  # "depthwise" and "pointwise" are for their own geometries only
        c.name
        for c in _conv.CONV2D.candidates
        if c.applies is None or c.applies(backend, px, pw, None, (1, 1), (1, 1), (1, 1), 1)
    }
    assert applies == set(CANDIDATES) - {"depthwise", "pointwise"}
    assert set(entry["seconds"]) == applies
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)]


def test_gradients_match_the_numpy_backend(dev, rng):
    """conv2d's backward (a conv and a transposed conv, both through this family) on wgpu autodiff
    against the numpy backend's autodiff."""
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    grads = []
    for device in (burn.device(dev, autodiff=True), burn.device("cpu", autodiff=True)):
        tx = burn.tensor(x, device=device).require_grad()
        tw = burn.tensor(w, device=device).require_grad()
        y = F.conv2d(tx, tw, None, stride=2, padding=1, dilation=1, groups=2)
        g = (y * y).sum().backward()
        grads.append((tx.grad(g).numpy(), tw.grad(g).numpy()))
    for got, want in zip(grads[0], grads[1]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
