"""Grouped convolutions on the GPU backends against the numpy backend (the reference): conv1d/2d/3d
and conv_transpose1d/2d/3d with groups, over strides, paddings, dilations and output paddings (issue 32
asked whether the grouped deform_conv2d failure had siblings among the GPU module ops)."""

from __future__ import annotations

import itertools

import burn
import burn.nn.functional as F
import numpy as np
import pytest

GPU_DEVICES = [i.name for i in burn.backends() if i.available and i.name in ("wgpu", "cuda")]

# (c_in, c_out, groups)
_CHANNELS = [(4, 6, 2), (6, 6, 3), (4, 4, 4), (2, 4, 1)]
_WINDOWS = list(itertools.product([1, 2], [0, 1], [1, 2]))  # (stride, padding, dilation)


def _run(fn, arrays, device, **kw):
    return fn(*[burn.tensor(a, device=device) for a in arrays], **kw).numpy()


@pytest.mark.parametrize("device", GPU_DEVICES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("transpose", [False, True], ids=["conv", "conv_transpose"])
@pytest.mark.parametrize("channels", _CHANNELS, ids=lambda c: "c{}o{}g{}".format(*c))
def test_grouped_conv_matches_numpy_backend(device, nd, transpose, channels):
    c_in, c_out, groups = channels
    rng = np.random.default_rng(nd * 10 + _CHANNELS.index(channels))
    kernel, spatial = (3, 2, 2)[:nd], (7, 6, 5)[:nd]
    x = rng.standard_normal((2, c_in, *spatial)).astype(np.float32)
    b = rng.standard_normal(c_out).astype(np.float32)
    if transpose:
        fn = getattr(F, f"conv_transpose{nd}d")
        w = rng.standard_normal((c_in, c_out // groups, *kernel)).astype(np.float32)
    else:
        fn = getattr(F, f"conv{nd}d")
        w = rng.standard_normal((c_out, c_in // groups, *kernel)).astype(np.float32)
    for stride, padding, dilation in _WINDOWS:
        kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        if transpose:
            kw["output_padding"] = stride - 1
        ref = _run(fn, (x, w, b), "cpu", **kw)
        got = _run(fn, (x, w, b), device, **kw)
        assert got.shape == ref.shape, kw
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4, err_msg=str(kw))
