"""F.deform_conv2d and nn.DeformConv2d: forward against an independent numpy loop written from
torchvision's definition (zero-padded bilinear taps, DCNv2 mask), backward by central finite
differences (burn_autodiff.gradcheck) for x, offset, mask, weight and bias, on every available backend."""

from __future__ import annotations

import math

import burn
import burn.nn.functional as F
import numpy as np
import pytest
from burn import nn

# the numpy backend always; GPU backends where they can run (wgpu on lavapipe in CI, cuda with CuPy)
DEVICES = ["cpu"] + [i.name for i in burn.backends() if i.available and i.name in ("wgpu", "cuda")]
F64_DEVICES = [d for d in DEVICES if d != "wgpu"]  # WGSL has no float64 for finite differences


def _bilinear(img: np.ndarray, y: float, x: float) -> float:
    """torchvision's deform-conv bilinear read: 0 outside (-1, H) x (-1, W), missing corners are 0."""
    h, w = img.shape
    if y <= -1 or y >= h or x <= -1 or x >= w:
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    ly, lx = y - y0, x - x0
    total = 0.0
    for cy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
        for cx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
            if 0 <= cy < h and 0 <= cx < w:
                total += wy * wx * img[cy, cx]
    return total


def deform_conv2d_ref(x, offset, weight, bias, stride, padding, dilation, mask, groups):
    n, c, h, w = x.shape
    c_out, c_in_g, kh, kw = weight.shape
    ho, wo = offset.shape[2:]
    og = offset.shape[1] // (2 * kh * kw)
    out = np.zeros((n, c_out, ho, wo))
    for b in range(n):
        for co in range(c_out):
            g = co // (c_out // groups)
            for oy in range(ho):
                for ox in range(wo):
                    acc = 0.0
                    for ci in range(c_in_g):
                        cin = g * c_in_g + ci
                        grp = cin // (c // og)
                        for i in range(kh):
                            for j in range(kw):
                                k = i * kw + j
                                dy = offset[b, grp * 2 * kh * kw + 2 * k, oy, ox]
                                dx = offset[b, grp * 2 * kh * kw + 2 * k + 1, oy, ox]
                                py = oy * stride[0] - padding[0] + i * dilation[0] + dy
                                px = ox * stride[1] - padding[1] + j * dilation[1] + dx
                                v = _bilinear(x[b, cin], py, px)
                                if mask is not None:
                                    v *= mask[b, grp * kh * kw + k, oy, ox]
                                acc += weight[co, ci, i, j] * v
                    out[b, co, oy, ox] = acc + (0.0 if bias is None else bias[co])
    return out


def _case(rng, n=2, c=4, h=6, w=5, c_out=6, k=(3, 3), stride=(1, 1), pad=(1, 1), dil=(1, 1), og=2, groups=2):
    ho = (h + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    wo = (w + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
    x = rng.standard_normal((n, c, h, w))
    offset = rng.standard_normal((n, 2 * og * k[0] * k[1], ho, wo)) * 2.0  # many taps fall off the image
    weight = rng.standard_normal((c_out, c // groups, *k))
    bias = rng.standard_normal(c_out)
    mask = rng.random((n, og * k[0] * k[1], ho, wo))
    return x, offset, weight, bias, mask, dict(stride=stride, padding=pad, dilation=dil, groups=groups)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "shape",
    [
        {},
        {"stride": (2, 1), "pad": (0, 1), "dil": (1, 2), "og": 1, "groups": 1},
        {"k": (2, 3), "og": 4, "groups": 4, "c_out": 4, "h": 5, "w": 7},
    ],
)
@pytest.mark.parametrize("with_mask", [False, True])
def test_forward_matches_torchvision_definition(device, shape, with_mask):
    rng = np.random.default_rng(0)
    x, offset, weight, bias, mask, kw = _case(rng, **shape)
    mask = mask if with_mask else None
    expected = deform_conv2d_ref(x, offset, weight, bias, mask=mask, **kw)
    dev = burn.device(device)
    t = [burn.tensor(a, dtype=burn.float32, device=dev) for a in (x, offset, weight, bias)]
    m = None if mask is None else burn.tensor(mask, dtype=burn.float32, device=dev)
    got = F.deform_conv2d(t[0], t[1], t[2], t[3], mask=m, **kw)
    assert got.shape == expected.shape and got.dtype is burn.float32
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-4)


def test_zero_offsets_are_a_plain_convolution():
    rng = np.random.default_rng(1)
    x = burn.from_numpy(rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    w = burn.from_numpy(rng.standard_normal((5, 3, 3, 3)).astype(np.float32))
    off = burn.zeros((1, 18, 4, 4))
    got = F.deform_conv2d(x, off, w, stride=2, padding=1)
    np.testing.assert_allclose(got.numpy(), F.conv2d(x, w, stride=2, padding=1).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", F64_DEVICES)
@pytest.mark.parametrize("with_mask", [False, True])
def test_backward_gradcheck(device, with_mask):
    from burn_autodiff import gradcheck

    dev = burn.device(device, autodiff=True)
    rng = np.random.default_rng(2)
    x, offset, weight, bias, mask, kw = _case(rng, n=1, c=2, h=4, w=4, c_out=2, og=1, groups=1)
    inputs = [x, offset, weight, bias] + ([mask] if with_mask else [])

    def fn(x, off, w, b, m=None):
        return F.deform_conv2d(x, off, w, b, mask=m, **kw)

    report = gradcheck(fn, inputs, dev, eps=1e-6, atol=1e-5, rtol=1e-4)
    assert "deform_conv2d" in report.rules


@pytest.mark.parametrize("device", DEVICES)
def test_backward_matches_float64_reference_on_float32_devices(device):
    """Devices without float64: analytic float32 gradients against the numpy backend's float64 ones."""
    rng = np.random.default_rng(3)
    x, offset, weight, bias, mask, kw = _case(rng, n=1, c=2, h=5, w=4, c_out=4, og=2, groups=2)
    seed = rng.standard_normal((1, 4, 5, 4))
    results = {}
    for name, dtype in ((device, burn.float32), ("cpu", burn.float64)):
        dev = burn.device(name, autodiff=True)
        ts = [burn.tensor(a, dtype=dtype, device=dev).require_grad() for a in (x, offset, weight, bias, mask)]
        out = F.deform_conv2d(ts[0], ts[1], ts[2], ts[3], mask=ts[4], **kw)
        grads = out.backward(burn.tensor(seed, dtype=dtype, device=dev))
        results[(name, dtype)] = [t.grad(grads).numpy() for t in ts]
    got, ref = results[(device, burn.float32)], results[("cpu", burn.float64)]
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-3)


def test_module_forward_and_config():
    dev = burn.device("cpu")
    m = nn.DeformConv2dConfig(channels=(4, 6), kernel_size=(3, 3), padding=1, offset_groups=2, groups=2).init(
        dev
    )
    assert m.weight.shape == (6, 2, 3, 3) and m.bias is not None and m.bias.shape == (6,)
    x = burn.randn((2, 4, 5, 5))
    off = burn.randn((2, 2 * 2 * 9, 5, 5))
    mask = burn.rand((2, 2 * 9, 5, 5))
    y = m(x, off, mask=mask)
    ref = F.deform_conv2d(x, off, m.weight.val(), m.bias.val(), padding=1, mask=mask, groups=2)
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-6)
    with pytest.raises(burn.ShapeError, match="offset must have shape"):
        m(x, burn.zeros((2, 2 * 2 * 9, 4, 5)))
    with pytest.raises(burn.ConfigError, match="offset_groups"):
        nn.DeformConv2dConfig(channels=(4, 6), kernel_size=3, offset_groups=3).init(dev)


def test_bad_arguments_are_clear_errors():
    x, w = burn.zeros((1, 2, 5, 5)), burn.zeros((3, 2, 3, 3))
    off = burn.zeros((1, 18, 3, 3))
    with pytest.raises(burn.ShapeError, match="offset must have 2 \\* offset_groups"):
        F.deform_conv2d(x, burn.zeros((1, 7, 3, 3)), w)
    with pytest.raises(burn.ShapeError, match="mask must have shape"):
        F.deform_conv2d(x, off, w, mask=burn.zeros((1, 8, 3, 3)))
    with pytest.raises(burn.DTypeError, match="offset has dtype"):
        F.deform_conv2d(x, off.cast(burn.float64), w)
    with pytest.raises(TypeError, match="offset must be a burn.Tensor"):
        F.deform_conv2d(x, np.zeros((1, 18, 3, 3)), w)


@pytest.mark.parametrize("device", DEVICES)
def test_groups_are_read_off_the_weight_as_torchvision_does(device):
    """torchvision's deform_conv2d has no groups argument: it reads them off the weight (C_in //
    weight.shape[1]). Called that way with a grouped weight (groups=2, offset_groups=2), burn raised a
    channel-count ShapeError; now it gives the grouped result of the reference."""
    rng = np.random.default_rng(3)
    x, offset, weight, bias, mask, kw = _case(rng)
    assert kw.pop("groups") == 2
    expected = deform_conv2d_ref(x, offset, weight, bias, mask=mask, groups=2, **kw)
    dev = burn.device(device)
    t = [burn.tensor(a, dtype=burn.float32, device=dev) for a in (x, offset, weight, bias, mask)]
    got = F.deform_conv2d(t[0], t[1], t[2], t[3], mask=t[4], **kw)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-4)


# groups / offset_groups / mask / stride / padding / dilation, each row against the numpy loop
# reference (issue 32: a grouped call with offset_groups=2 was reported to raise a channel-count
# ShapeError on cuda and wgpu while cpu gave the right values)
_TABLE = [
    # (c, c_out, groups, offset_groups, mask, stride, padding, dilation)
    (4, 6, 2, 2, False, (1, 1), (1, 1), (1, 1)),
    (4, 6, 2, 2, True, (2, 1), (0, 1), (1, 2)),
    (4, 4, 1, 2, True, (1, 1), (1, 0), (2, 1)),
    (4, 4, 2, 1, False, (2, 2), (1, 1), (1, 1)),
    (6, 4, 2, 3, True, (1, 2), (2, 1), (1, 1)),
    (6, 6, 3, 2, False, (1, 1), (0, 0), (2, 2)),
    (8, 8, 4, 2, True, (2, 2), (1, 1), (1, 2)),
    (2, 2, 2, 2, True, (1, 1), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("row", _TABLE, ids=lambda r: "c{}o{}g{}og{}m{:d}s{}p{}d{}".format(*r))
def test_grouped_table_matches_reference(device, row):
    c, c_out, groups, og, with_mask, stride, pad, dil = row
    rng = np.random.default_rng(_TABLE.index(row))
    x, offset, weight, bias, mask, kw = _case(
        rng, n=1, c=c, h=5, w=6, c_out=c_out, k=(3, 2), stride=stride, pad=pad, dil=dil, og=og, groups=groups
    )
    mask = mask if with_mask else None
    expected = deform_conv2d_ref(x, offset, weight, bias, mask=mask, **kw)
    dev = burn.device(device)
    t = [burn.tensor(a, dtype=burn.float32, device=dev) for a in (x, offset, weight, bias)]
    m = None if mask is None else burn.tensor(mask, dtype=burn.float32, device=dev)
    got = F.deform_conv2d(t[0], t[1], t[2], t[3], mask=m, **kw)  # groups given
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-4)
    kw.pop("groups")  # read off the weight, as torchvision
    got = F.deform_conv2d(t[0], t[1], t[2], t[3], mask=m, **kw)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-4)
