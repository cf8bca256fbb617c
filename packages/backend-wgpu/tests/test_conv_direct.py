"""The direct convolution kernels (``_kernels.conv.render_direct`` / ``render_pointwise``, the conv
family's "direct", "depthwise" and "pointwise" candidates) against burn's numpy backend, with and
without bias, over strides, padding, dilation, odd sizes, channel counts that leave a partial block
of 4 and batches > 1; then the rule that picks them untuned and in browser-portable mode."""

from __future__ import annotations

import burn
import numpy as np
import pytest
from burn_wgpu import _conv
from burn_wgpu._kernels import conv as KC

RTOL, ATOL = 1e-4, 1e-4  # float32 sums of at most a few hundred products, in another order


def _numpy_conv(x, w, b, stride, padding, dilation, groups):
    """burn's numpy backend: the reference every backend is checked against."""
    cpu = burn.device("cpu").backend
    args = [cpu.from_numpy(v, burn.float32) if v is not None else None for v in (x, w, b)]
    return cpu.to_numpy(cpu.conv(*args, stride, padding, dilation, groups))


def _run(backend, name, x, w, b, stride, padding, dilation, groups):
    px, pw = backend.from_numpy(x, burn.float32), backend.from_numpy(w, burn.float32)
    pb = backend.from_numpy(b, burn.float32) if b is not None else None
    fn = _conv.CONV2D.by_name[name].fn
    return backend.to_numpy(fn(backend, px, pw, pb, stride, padding, dilation, groups))


def _data(rng, xs, ws, bias):
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
    return x, w, b


# (x shape, w shape, stride, padding, dilation): groups == channels
DEPTHWISE = [
    ((2, 16, 8, 8), (16, 1, 3, 3), (1, 1), (1, 1), (1, 1)),
    ((3, 5, 9, 7), (5, 1, 3, 3), (2, 2), (1, 1), (1, 1)),  # odd sizes, stride 2, batch 3
    ((2, 4, 11, 10), (4, 1, 3, 3), (1, 1), (2, 2), (2, 2)),  # dilated
    ((1, 6, 13, 9), (6, 1, 5, 5), (2, 1), (2, 0), (1, 2)),  # 5x5, mixed strides, padding, dilation
    ((2, 3, 7, 7), (9, 1, 3, 2), (1, 2), (0, 1), (1, 1)),  # channel multiplier 3, rectangular kernel
    ((1, 7, 5, 6), (7, 1, 1, 1), (1, 1), (0, 0), (1, 1)),  # a 1x1 depthwise scale
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", DEPTHWISE, ids=lambda c: "x{}w{}s{}p{}d{}".format(*c).replace(" ", ""))
def test_depthwise_matches_numpy(backend, rng, case, bias):
    xs, ws, stride, padding, dilation = case
    x, w, b = _data(rng, xs, ws, bias)
    want = _numpy_conv(x, w, b, stride, padding, dilation, xs[1])
    for name in ("depthwise", "direct"):
        got = _run(backend, name, x, w, b, stride, padding, dilation, xs[1])
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)


# (x shape, w shape, groups): 1x1, stride 1, no padding
POINTWISE = [
    ((2, 8, 8, 8), (16, 8, 1, 1), 1),  # H * W a multiple of 4: vec4 loads and stores
    ((2, 16, 5, 3), (8, 16, 1, 1), 1),  # 15 pixels: scalar path, a partial pixel block
    ((3, 6, 7, 7), (5, 6, 1, 1), 1),  # 5 outputs: a partial channel block
    ((2, 16, 1, 1), (4, 16, 1, 1), 1),  # the squeeze-excitation shape: one pixel
    ((2, 8, 4, 6), (6, 4, 1, 1), 2),  # grouped: 3 outputs per group (lanes past the group unused)
    ((1, 9, 2, 2), (9, 3, 1, 1), 3),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", POINTWISE, ids=lambda c: "x{}w{}g{}".format(*c).replace(" ", ""))
def test_pointwise_matches_numpy(backend, rng, case, bias):
    xs, ws, groups = case
    x, w, b = _data(rng, xs, ws, bias)
    want = _numpy_conv(x, w, b, (1, 1), (0, 0), (1, 1), groups)
    for name in ("pointwise", "direct"):
        got = _run(backend, name, x, w, b, (1, 1), (0, 0), (1, 1), groups)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)


# (x shape, w shape, stride, padding, dilation, groups): the direct kernel in general
DIRECT = [
    ((2, 3, 16, 16), (8, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # the resnet stem
    ((2, 8, 8, 8), (16, 8, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((2, 8, 8, 8), (16, 8, 1, 1), (2, 2), (0, 0), (1, 1), 1),  # strided 1x1 (a downsample)
    ((3, 5, 9, 11), (7, 5, 2, 3), (1, 2), (1, 0), (2, 1), 1),  # odd everything
    ((1, 6, 10, 9), (6, 3, 3, 2), (2, 1), (0, 2), (1, 2), 2),  # grouped, 3 outputs per group
    ((2, 4, 6, 5), (10, 4, 3, 3), (1, 1), (3, 3), (1, 1), 1),  # padding beyond the kernel's reach
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", DIRECT, ids=lambda c: "x{}w{}s{}p{}d{}g{}".format(*c).replace(" ", ""))
def test_direct_matches_numpy(backend, rng, case, bias):
    xs, ws, stride, padding, dilation, groups = case
    x, w, b = _data(rng, xs, ws, bias)
    got = _run(backend, "direct", x, w, b, stride, padding, dilation, groups)
    np.testing.assert_allclose(
        got, _numpy_conv(x, w, b, stride, padding, dilation, groups), rtol=RTOL, atol=ATOL
    )


def test_strided_input_and_offsets(backend, rng):
    """A permuted (non-contiguous) x and a bias that is a slice at an offset."""
    x = rng.standard_normal((2, 6, 7, 4)).astype(np.float32)  # NHWC, viewed as NCHW
    w = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    bb = rng.standard_normal(9).astype(np.float32)
    px = backend.permute(backend.from_numpy(x, burn.float32), (0, 3, 1, 2))
    pb = backend.slice(backend.from_numpy(bb, burn.float32), ((5, 9, 1),))
    xn = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    want = _numpy_conv(xn, w, bb[5:9], (1, 1), (1, 1), (1, 1), 4)
    got = backend.to_numpy(
        _conv.conv2d_direct(
            backend, px, backend.from_numpy(w, burn.float32), pb, (1, 1), (1, 1), (1, 1), 4, co=1
        )
    )
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_pointwise_rejects_other_geometry(backend, rng):
    x, w, _ = _data(rng, (1, 4, 5, 5), (4, 4, 3, 3), False)
    px, pw = backend.from_numpy(x, burn.float32), backend.from_numpy(w, burn.float32)
    with pytest.raises(ValueError, match="expected a 1x1 kernel with stride 1 and no padding"):
        _conv.conv2d_pointwise(backend, px, pw, None, (1, 1), (1, 1), (1, 1), 1)


def test_kernels_need_no_workgroup_memory_and_fit_portable_bindings():
    """The browser-portable limits: at most 8 storage bindings, no barriers, workgroups of 64."""
    kernels = [
        KC.render_direct(burn.float32, 3, 3, 4, 4, True),
        KC.render_pointwise(burn.float32, 4, True, True),
    ]
    kernels.append(KC.render_direct(burn.float32, 5, 5, 1, 4, False, True))
    for k in kernels:
        assert "var<workgroup>" not in k.source and "Barrier" not in k.source, k.name
        assert len(k.bindings) <= 7 and "@workgroup_size(64)" in k.source, k.name


@pytest.mark.parametrize(
    "xs, ws, stride, padding, groups, want",
    [
        ((2, 16, 8, 8), (16, 1, 3, 3), (1, 1), (1, 1), 16, "depthwise"),
        ((1, 128, 56, 56), (128, 1, 3, 3), (1, 1), (1, 1), 128, "depthwise"),  # large: still depthwise
        ((2, 8, 8, 8), (16, 8, 1, 1), (1, 1), (0, 0), 1, "pointwise"),
        ((2, 8, 8, 8), (16, 8, 1, 1), (2, 2), (0, 0), 1, "direct"),
        ((2, 3, 16, 16), (8, 3, 3, 3), (1, 1), (1, 1), 1, "direct"),
        ((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1), 1, _conv.CONV2D.default),  # 231 MFLOP
    ],
)
def test_untuned_rule(backend, xs, ws, stride, padding, groups, want):
    x = backend.empty(xs, burn.float32)
    w = backend.empty(ws, burn.float32)
    oh, ow = _conv._conv_sizes(x, w, stride, padding, (1, 1))
    flops = 2 * xs[0] * ws[0] * oh * ow * ws[1] * ws[2] * ws[3]
    assert _conv._untuned(x, w, stride, padding, groups, flops) == want


def test_portable_backend_runs_the_rule(rng):
    """In browser-portable mode (web export) convolutions take the rule's kernel, never the tuner."""
    from burn_wgpu.web._record import recording_backend

    b = recording_backend()
    x, w, bias = _data(rng, (2, 16, 8, 8), (16, 1, 3, 3), True)
    px, pw, pb = (b.from_numpy(v, burn.float32) for v in (x, w, bias))
    b.ex.trace.events.clear()
    y = b.conv(px, pw, pb, (1, 1), (1, 1), (1, 1), 16)
    names = [ev.kernel.name for ev in b.ex.trace.events if hasattr(ev, "kernel")]
    assert names == ["conv_depthwise_float32_k3x3_c1p4_b"], names  # one dispatch: the bias is fused
    b.ex.tracing = False
    got = b.to_numpy(y)
    np.testing.assert_allclose(got, _numpy_conv(x, w, bias, (1, 1), (1, 1), (1, 1), 16), rtol=RTOL, atol=ATOL)


def test_float16(backend, rng):
    """float16 storage, float32 accumulation: within float16 rounding of the float64 result."""
    if burn.float16 not in backend.dtypes:
        pytest.skip("the adapter has no shader-f16")
    cases = [  # (candidate, x shape, w shape, padding, groups)
        ("direct", (2, 4, 6, 7), (8, 4, 3, 3), (1, 1), 1),
        ("depthwise", (2, 6, 7, 5), (6, 1, 3, 3), (1, 1), 6),
        ("pointwise", (2, 8, 4, 4), (6, 8, 1, 1), (0, 0), 1),
    ]
    for name, xs, ws, padding, groups in cases:
        x, w, b = (v.astype(np.float16) for v in _data(rng, xs, ws, True))
        px, pw, pb = (backend.from_numpy(v, burn.float16) for v in (x, w, b))
        fn = _conv.CONV2D.by_name[name].fn
        got = backend.to_numpy(fn(backend, px, pw, pb, (1, 1), padding, (1, 1), groups))
        assert got.dtype == np.float16
        want = _numpy_conv(
            x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), (1, 1), padding, (1, 1), groups
        )
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=2e-2, err_msg=name)
