"""cuDNN convolutions (the ``cudnn`` extra): forward, transposed and weight gradient against the numpy
backend, strict fp32 staying strict, float16, and autodiff through them. Skips where CUDA or the
cuDNN frontend is missing."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn.backend import conv_out_sizes_padded, conv_transpose_out_sizes

# (x shape, weight shape, stride, padding, dilation, groups): 1-d, 2-d, 3-d, groups, strides, dilation
CASES = [
    ((2, 6, 17), (8, 3, 3), (2,), (1,), (1,), 2),
    ((2, 3, 12, 11), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((3, 4, 15, 15), (6, 4, 3, 3), (2, 2), (1, 0), (2, 1), 1),
    ((2, 8, 9, 9), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8),  # depthwise
    ((2, 16, 7, 7), (32, 16, 1, 1), (2, 2), (0, 0), (1, 1), 1),
    ((1, 4, 6, 7, 5), (4, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), 2),
]


@pytest.fixture(scope="module")
def cudnn_on(cuda):
    from burn_cuda import _cudnn

    if _cudnn.frontend() is None:
        pytest.skip(f"cuDNN frontend unavailable: {_cudnn.cudnn_status()}")
    return burn.device("cuda:0", fusion=False)  # the plain backend: each op runs when called


def _prim(dev, a):
    return burn.tensor(a, device=dev).primitive


def _np(dev, p):
    return np.asarray(burn.backend.from_primitive(p, dev.backend).numpy())


def _runs_cudnn(dev, fn):
    """fn's result, and whether a cuDNN plan ran it (a new entry in the plan table or a hit)."""
    from burn_cuda import _cudnn

    _cudnn._plans.clear()
    out = fn()
    return out, any(v is not None for v in _cudnn._plans.values())


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{len(c[0]) - 2}d-g{c[5]}-s{c[2]}")
def test_conv_kinds_match_the_numpy_backend(cudnn_on, cpu, case):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    out_sp = conv_out_sizes_padded(xs[2:], ws[2:], stride, padding, dilation)
    g = rng.standard_normal((xs[0], ws[0]) + out_sp).astype(np.float32)
    bc, bn = cudnn_on.backend, cpu.backend
    args = (stride, padding, dilation, groups)
    # forward
    got, used = _runs_cudnn(cudnn_on, lambda: bc.conv(_prim(cudnn_on, x), _prim(cudnn_on, w), None, *args))
    want = bn.conv(_prim(cpu, x), _prim(cpu, w), None, *args)
    assert used
    np.testing.assert_allclose(_np(cudnn_on, got), _np(cpu, want), rtol=1e-4, atol=1e-4)
    # weight gradient
    got, used = _runs_cudnn(
        cudnn_on,
        lambda: bc.conv_weight_grad(_prim(cudnn_on, x), _prim(cudnn_on, g), ws, *args),
    )
    want = bn.conv_weight_grad(_prim(cpu, x), _prim(cpu, g), ws, *args)
    assert used
    np.testing.assert_allclose(_np(cudnn_on, got), _np(cpu, want), rtol=1e-4, atol=1e-3)
    # transposed convolution of g by w (w read as (C_in, C_out/groups, *K)), with an output padding
    # that gives back x's size where the stride dropped a remainder
    grown = conv_transpose_out_sizes(out_sp, ws[2:], stride, padding, (0,) * len(stride), dilation)
    out_pad = tuple(a - b for a, b in zip(xs[2:], grown))
    targs = (stride, padding, out_pad, dilation, groups)
    bias = rng.standard_normal(xs[1]).astype(np.float32)
    got, used = _runs_cudnn(
        cudnn_on,
        lambda: bc.conv_transpose(_prim(cudnn_on, g), _prim(cudnn_on, w), _prim(cudnn_on, bias), *targs),
    )
    want = bn.conv_transpose(_prim(cpu, g), _prim(cpu, w), _prim(cpu, bias), *targs)
    assert used
    np.testing.assert_allclose(_np(cudnn_on, got), _np(cpu, want), rtol=1e-4, atol=1e-4)


def test_strict_fp32_stays_strict_and_tf32_is_allowed_when_asked(cudnn_on):
    import burn_cuda

    rng = np.random.default_rng(1)
    # long contractions (256 * 9 products per output): TF32's 10-bit mantissa errs ~1e-3 relative here
    x = rng.standard_normal((8, 256, 14, 14)).astype(np.float32)
    w = rng.standard_normal((256, 256, 3, 3)).astype(np.float32)
    ref = (
        burn.nn.functional.conv2d(
            burn.tensor(x.astype(np.float64)), burn.tensor(w.astype(np.float64)), padding=1
        )
        .numpy()
        .astype(np.float64)
    )

    def rel_err() -> float:
        out = burn.nn.functional.conv2d(
            burn.tensor(x, device=cudnn_on), burn.tensor(w, device=cudnn_on), padding=1
        )
        return float(np.abs(out.numpy() - ref).max() / np.abs(ref).max())

    strict = rel_err()
    with burn_cuda.matmul_precision("tf32"):
        fast = rel_err()
    assert strict < 1e-5, strict
    assert fast < 1e-2, fast  # TF32 engines are allowed (and still close)


def test_float16_conv(cudnn_on, cpu):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 8, 10, 10)).astype(np.float16)
    w = (rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float16)
    F = burn.nn.functional
    got = F.conv2d(burn.tensor(x, device=cudnn_on), burn.tensor(w, device=cudnn_on), padding=1)
    want = F.conv2d(burn.tensor(x.astype(np.float32)), burn.tensor(w.astype(np.float32)), padding=1)
    assert got.dtype == burn.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.numpy(), rtol=1e-2, atol=2e-2)


def test_gradients_through_cudnn_match_the_numpy_backend(cudnn_on):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 16, 16)).astype(np.float32)
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32)
    F = burn.nn.functional

    def grads(dev):
        ws = [burn.tensor(w, device=dev).require_grad() for w in (w1, w2)]
        xt = burn.tensor(x, device=dev).require_grad()
        h = F.relu(F.conv2d(xt, ws[0], stride=2, padding=1))
        y = F.conv2d(h, ws[1], padding=1, groups=2)
        g = (y * y).sum().backward()
        return [t.grad(g).numpy() for t in (xt, *ws)]

    gpu = grads(burn.device("cuda", autodiff=True))
    ref = grads(burn.device("cpu", autodiff=True))
    for a, b in zip(gpu, ref):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)


def test_burn_cudnn_0_turns_it_off(cuda, monkeypatch):
    from burn_cuda import _cudnn

    saved = dict(_cudnn._state)
    try:
        _cudnn._state.clear()
        monkeypatch.setenv("BURN_CUDNN", "0")
        assert _cudnn.frontend() is None
        assert "BURN_CUDNN=0" in _cudnn.cudnn_status()
        x = burn.randn((1, 2, 5, 5), device=cuda)
        w = burn.randn((3, 2, 3, 3), device=cuda)
        out = burn.nn.functional.conv2d(x, w)  # burn's own kernels run it
        ref = burn.nn.functional.conv2d(burn.tensor(x.numpy()), burn.tensor(w.numpy()))
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)
    finally:
        _cudnn._state.clear()
        _cudnn._state.update(saved)
