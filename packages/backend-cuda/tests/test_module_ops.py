"""Module ops on the GPU (im2col convolution, transposed convolution, pools) against PyTorch's CPU
reference where PyTorch is installed, else against the numpy backend."""

from __future__ import annotations

import burn
import numpy as np
import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
F = torch.nn.functional
RNG = np.random.default_rng(2)


def _b(cuda):
    return cuda.backend


def _run(cuda, name, arrays, *args):
    b = _b(cuda)
    prims = [None if a is None else b.from_numpy(a, burn.float32) for a in arrays]
    out = getattr(b, name)(*prims, *args)
    outs = out if isinstance(out, tuple) else (out,)
    return [b.to_numpy(o) for o in outs]


def _t(a):
    return None if a is None else torch.from_numpy(a)


CONV = [
    # (x shape, w shape, stride, padding, dilation, groups)
    ((2, 3, 9, 11), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 4, 10, 9), (6, 2, 3, 2), (2, 1), (0, 2), (1, 2), 2),
    ((1, 6, 8, 8), (6, 1, 5, 5), (1, 2), (2, 2), (1, 1), 6),
    ((3, 8, 5, 7), (6, 8, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # pointwise: the input is the columns
    ((2, 8, 5, 7), (6, 4, 1, 1), (1, 1), (0, 0), (1, 1), 2),
    ((2, 5, 7, 6), (3, 5, 1, 1), (2, 1), (1, 0), (1, 1), 1),  # 1x1 with stride/padding: gathered
]


@pytest.mark.parametrize("case", CONV)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d(case, with_bias, cuda):
    xs, ws, stride, padding, dilation, groups = case
    x, w = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(ws).astype(np.float32)
    bias = RNG.standard_normal(ws[0]).astype(np.float32) if with_bias else None
    (got,) = _run(cuda, "conv", [x, w, bias], stride, padding, dilation, groups)
    ref = F.conv2d(_t(x), _t(w), _t(bias), stride, padding, dilation, groups).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CONV)
def test_both_conv_strategies_equal_pytorch(case, cuda):
    """The tuned family's two candidates (gathered columns, gathered rows) each equal PyTorch."""
    xs, ws, stride, padding, dilation, groups = case
    x, w = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(ws).astype(np.float32)
    bias = RNG.standard_normal(ws[0]).astype(np.float32)
    b = _b(cuda)
    b = getattr(b, "inner", b)  # the CUDA backend under the fusion decorator
    ref = F.conv2d(_t(x), _t(w), _t(bias), stride, padding, dilation, groups).numpy()
    args = (b.from_numpy(x, burn.float32), b.from_numpy(w, burn.float32), b.from_numpy(bias, burn.float32))
    for strategy in (b._conv_columns, b._conv_rows):
        got = b.to_numpy(strategy(*args, stride, padding, dilation, groups))
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4, err_msg=strategy.__name__)


def test_large_convs_are_tuned_once_and_cached(cuda, tmp_path, monkeypatch):
    """A conv above the tuning threshold benchmarks both strategies on first use (events for the
    dashboard), stores the winner in the cache under BURN_CACHE_DIR and equals PyTorch. (With cuDNN
    off: where it is installed it runs every such conv untuned.)"""
    from burn_cuda import _conv, _cudnn

    monkeypatch.setattr(_cudnn, "_state", {"module": None, "why": "off for this test"})
    monkeypatch.setenv("BURN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BURN_AUTOTUNE_BLOCKING", "1")  # tests the tuning run, made at once
    monkeypatch.setenv("BURN_AUTOTUNE", "full")
    b = _b(cuda)
    b = getattr(b, "inner", b)
    monkeypatch.setattr(b, "_autotuner", None, raising=False)  # a tuner reading this cache dir
    events = []
    unsubscribe = burn.autotune.subscribe(events.append)
    try:
        x = RNG.standard_normal((8, 32, 32, 32)).astype(np.float32)
        w = (RNG.standard_normal((32, 32, 3, 3)) / 17).astype(np.float32)
        assert _conv.should_tune(x, w, 32 * 32)
        (got,) = _run(cuda, "conv", [x, w, None], (1, 1), (1, 1), (1, 1), 1)
    finally:
        unsubscribe()
    np.testing.assert_allclose(got, F.conv2d(_t(x), _t(w), None, 1, 1).numpy(), rtol=1e-4, atol=1e-4)
    done = [e for e in events if e.kernel == "conv2d" and e.done]
    assert done and done[-1].best in ("columns", "rows")
    assert any(tmp_path.rglob("*.json"))


def test_conv2d_in_chunks_of_images_equals_one_batch(cuda, monkeypatch):
    """Batches whose columns exceed the workspace are gathered a few images at a time."""
    from burn_cuda import _conv

    b = _b(cuda)
    b = getattr(b, "inner", b)
    x = RNG.standard_normal((5, 3, 9, 8)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = RNG.standard_normal(4).astype(np.float32)
    monkeypatch.setattr(_conv, "_WORKSPACE", 3 * 9 * 3 * 8 * 4 * 2)  # two images' columns
    args = [b.from_numpy(a, burn.float32) for a in (x, w, bias)]
    got = b.to_numpy(b._conv_columns(*args, (1, 1), (1, 1), (1, 1), 1))
    ref = F.conv2d(_t(x), _t(w), _t(bias), 1, 1).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    empty = b._conv_columns(b.from_numpy(x[:0], burn.float32), args[1], None, (1, 1), (1, 1), (1, 1), 1)
    assert b.to_numpy(empty).shape == (0, 4, 9, 8)


def test_conv2d_float16_on_tensor_cores(cuda):
    """float16 columns are gathered as 16-bit words and multiplied with float32 accumulation; both
    strategies."""
    b = _b(cuda)
    b = getattr(b, "inner", b)
    x = RNG.standard_normal((2, 16, 12, 12)).astype(np.float16)
    w = (RNG.standard_normal((8, 16, 3, 3)) / 12).astype(np.float16)
    ref = F.conv2d(_t(x.astype(np.float64)), _t(w.astype(np.float64)), None, 1, 1).numpy()
    px, pw = b.from_numpy(x, burn.float16), b.from_numpy(w, burn.float16)
    for strategy in (b._conv_columns, b._conv_rows):
        got = b.to_numpy(strategy(px, pw, None, (1, 1), (1, 1), (1, 1), 1))
        assert got.dtype == np.float16
        np.testing.assert_allclose(
            got.astype(np.float64), ref, rtol=1e-2, atol=1e-2, err_msg=strategy.__name__
        )


def test_conv1d_and_conv3d(cuda):
    x1, w1 = (
        RNG.standard_normal((2, 3, 17)).astype(np.float32),
        RNG.standard_normal((5, 3, 4)).astype(np.float32),
    )
    (got,) = _run(cuda, "conv", [x1, w1, None], (2,), (1,), (2,), 1)
    ref1 = F.conv1d(_t(x1), _t(w1), None, 2, 1, 2).numpy()
    np.testing.assert_allclose(got, ref1, rtol=1e-4, atol=1e-4)
    b = getattr(_b(cuda), "inner", _b(cuda))
    columns = b._conv_columns(
        b.from_numpy(x1, burn.float32), b.from_numpy(w1, burn.float32), None, (2,), (1,), (2,), 1
    )
    np.testing.assert_allclose(b.to_numpy(columns), ref1, rtol=1e-4, atol=1e-4)  # as a 2-d conv of height 1
    x3, w3 = (
        RNG.standard_normal((1, 2, 5, 6, 7)).astype(np.float32),
        RNG.standard_normal((3, 2, 2, 3, 2)).astype(np.float32),
    )
    (got,) = _run(cuda, "conv", [x3, w3, None], (1, 2, 1), (1, 0, 1), (1, 1, 2), 1)
    ref = F.conv3d(_t(x3), _t(w3), None, (1, 2, 1), (1, 0, 1), (1, 1, 2)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("xs", "ws", "stride", "padding", "out_pad", "dilation", "groups"),
    [
        ((2, 4, 5, 6), (4, 3, 3, 3), (2, 2), (1, 1), (1, 0), (1, 1), 1),
        ((1, 4, 4, 4), (4, 2, 2, 3), (1, 2), (0, 1), (0, 1), (2, 1), 2),
    ],
)
def test_conv_transpose2d(xs, ws, stride, padding, out_pad, dilation, groups, cuda):
    x, w = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(ws).astype(np.float32)
    bias = RNG.standard_normal(ws[1] * groups).astype(np.float32)
    (got,) = _run(cuda, "conv_transpose", [x, w, bias], stride, padding, out_pad, dilation, groups)
    ref = F.conv_transpose2d(_t(x), _t(w), _t(bias), stride, padding, out_pad, groups, dilation).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("kernel", "stride", "padding", "dilation", "ceil_mode"),
    [
        ((2, 2), (2, 2), (0, 0), (1, 1), False),
        ((3, 3), (2, 2), (1, 1), (1, 1), True),
        ((3, 2), (2, 1), (1, 0), (2, 1), False),
    ],
)
def test_max_pool2d_with_indices(kernel, stride, padding, dilation, ceil_mode, cuda):
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    got_v, got_i = _run(cuda, "max_pool", [x], kernel, stride, padding, dilation, ceil_mode)
    ref_v, ref_i = F.max_pool2d(_t(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    np.testing.assert_allclose(got_v, ref_v.numpy(), rtol=0, atol=0)
    np.testing.assert_array_equal(got_i, ref_i.numpy())


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_avg_pool2d(count_include_pad, ceil_mode, cuda):
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    (got,) = _run(cuda, "avg_pool", [x], (3, 3), (2, 2), (1, 1), count_include_pad, ceil_mode)
    ref = F.avg_pool2d(_t(x), 3, 2, 1, ceil_mode, count_include_pad).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_max_pool1d(cuda):
    x = RNG.standard_normal((2, 3, 11)).astype(np.float32)
    got_v, got_i = _run(cuda, "max_pool", [x], (3,), (2,), (1,), (1,), False)
    ref_v, ref_i = F.max_pool1d(_t(x), 3, 2, 1, 1, False, return_indices=True)
    np.testing.assert_array_equal(got_v, ref_v.numpy())
    np.testing.assert_array_equal(got_i, ref_i.numpy())
