"""Image ops built on burn's pools, convolutions and scatters: LpPool, DeformConv, Col2Im, MaxUnpool,
CenterCropPad, AffineGrid. Index layouts are computed on the host from shapes; the data stays on the device."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import burn
import numpy as np
from burn.nn import functional as F

from .._graph import Node
from .._registry import checks, op, requires
from ._common import index_tensor
from ._index import _assign
from ._nn import _pad_spatial, _spatial_attrs, _window_pads, average_pool


def _two_d(node: Node) -> str | None:
    k = node.attrs.get("kernel_shape")
    if k is not None and len(k) != 2:
        return f"{len(k)}-d kernels are not supported (2-d only)"
    return None


@op("LpPool", check=requires("kernel_shape"))
def lp_pool(ctx: Any, node: Node, x: burn.Tensor) -> burn.Tensor:
    """``(sum of |x|**p over each window) ** (1/p)``: an average pool that counts padding, times the
    window's size."""
    p = float(node.attrs.get("p", 2))
    summing = dataclasses.replace(node, attrs={**node.attrs, "count_include_pad": 1})
    mean = average_pool(ctx, summing, x.abs() ** p)
    return (mean * float(math.prod(node.attrs["kernel_shape"]))) ** (1.0 / p)


@op("DeformConv", since=19, check=_two_d)
def deform_conv(
    ctx: Any, node: Node, x: burn.Tensor, w: burn.Tensor, offset: burn.Tensor, b: Any = None, mask: Any = None
) -> burn.Tensor:
    stride, dilation = _spatial_attrs(node, 2)
    begin, end = _window_pads(node, tuple(x.shape[2:]), tuple(w.shape[2:]), stride, dilation)
    if begin != end:  # taps outside the image read zeros either way: pad explicitly
        x, begin = _pad_spatial(x, begin, end), [0, 0]
    groups = int(node.attrs.get("group", 1))
    return F.deform_conv2d(
        x, offset, w, b, tuple(stride), tuple(begin), tuple(dilation), mask=mask, groups=groups
    )


@op("Col2Im", since=18, host=(1, 2))
def col2im(ctx: Any, node: Node, x: burn.Tensor, image: Any, block: Any) -> burn.Tensor:
    """Each column of ``x`` (N, C * prod(block), L) added back at its block's place in the image: one
    scatter-add over the padded image, then the pads cut off."""
    size, kernel = ctx.ints(image), ctx.ints(block)
    nd = len(size)
    stride, dilation = _spatial_attrs(node, nd)
    pads = list(node.attrs.get("pads", [0] * 2 * nd))
    padded = [s + pads[i] + pads[i + nd] for i, s in enumerate(size)]
    blocks = [(p - (d * (k - 1) + 1)) // s + 1 for p, k, s, d in zip(padded, kernel, stride, dilation)]
    taps = np.stack(np.meshgrid(*[np.arange(k) for k in kernel], indexing="ij"), -1).reshape(-1, nd)
    places = np.stack(np.meshgrid(*[np.arange(n) for n in blocks], indexing="ij"), -1).reshape(-1, nd)
    coords = places[None, :, :] * np.array(stride) + taps[:, None, :] * np.array(dilation)  # (K, L, nd)
    flat = np.ravel_multi_index(tuple(coords.reshape(-1, nd).T), padded)
    n, c = x.shape[0], x.shape[1] // len(taps)
    idx = index_tensor(np.broadcast_to(flat, (n, c, flat.size)).copy(), x.device).reshape(n, c, flat.size)
    out = burn.zeros((n, c, math.prod(padded)), dtype=x.dtype, device=x.device)
    out = out.scatter_add(2, idx, x.reshape(n, c, -1)).reshape(n, c, *padded)
    for i in range(nd):
        out = out.narrow(2 + i, pads[i], size[i])
    return out


@op("MaxUnpool", host=(2,), check=checks(requires("kernel_shape")))
def max_unpool(ctx: Any, node: Node, x: burn.Tensor, indices: burn.Tensor, shape: Any = None) -> burn.Tensor:
    """Zeros with each value of ``x`` at its flat index (MaxPool's ``Indices``, over the whole tensor,
    of the default output shape); a larger ``output_shape`` pads that result at the end, as the ONNX
    reference does."""
    kernel = list(node.attrs["kernel_shape"])
    nd = len(kernel)
    stride = list(node.attrs.get("strides", [1] * nd))
    pads = list(node.attrs.get("pads", [0] * 2 * nd))
    spatial = [
        (n - 1) * s + k - pads[i] - pads[i + nd]
        for i, (n, s, k) in enumerate(zip(x.shape[2:], stride, kernel))
    ]
    default = [*x.shape[:2], *spatial]
    flat = burn.zeros((math.prod(default),), dtype=x.dtype, device=x.device)
    idx = indices.reshape(-1).cast(x.device.backend.default_int)
    out = _assign(flat, 0, idx, x.reshape(-1)).reshape(*default)
    if shape is not None:
        extra = [w - d for w, d in zip(ctx.ints(shape), default)]
        if any(extra):
            out = out.pad([v for e in reversed(extra) for v in (0, e)], "constant", 0)
    return out


@op("CenterCropPad", since=18, host=(1,))
def center_crop_pad(ctx: Any, node: Node, x: burn.Tensor, shape: Any) -> burn.Tensor:
    """Each listed axis cropped or zero-padded to its target length, centred (an odd difference puts
    the extra element at the end)."""
    target = ctx.ints(shape)
    axes = [a + x.ndim if a < 0 else a for a in node.attrs.get("axes", range(x.ndim))]
    for a, want in zip(axes, target):
        have = x.shape[a]
        if want < have:
            x = x.narrow(a, (have - want) // 2, want)
        elif want > have:
            flat = [0] * (2 * x.ndim)
            before = (want - have) // 2
            flat[2 * (x.ndim - 1 - a)] = before
            flat[2 * (x.ndim - 1 - a) + 1] = want - have - before
            x = x.pad(flat, "constant", 0)
    return x


@op("AffineGrid", since=20, host=(1,))
def affine_grid(ctx: Any, node: Node, theta: burn.Tensor, size: Any) -> burn.Tensor:
    """The sampling grid (N, *spatial, nd) of affine matrices ``theta`` (N, nd, nd + 1): normalised
    pixel centres (or corners, with ``align_corners``) in x, y(, z) order, times ``theta``."""
    dims = ctx.ints(size)
    spatial = dims[2:]
    align = bool(node.attrs.get("align_corners", 0))

    def axis_points(n: int) -> np.ndarray:
        if align:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        return (2.0 * np.arange(n) + 1.0) / n - 1.0

    mesh = np.meshgrid(*[axis_points(n) for n in spatial], indexing="ij")
    base = np.stack([*mesh[::-1], np.ones_like(mesh[0])], -1).reshape(-1, len(spatial) + 1)  # x first
    points = ctx.tensor(base, theta.dtype)
    grid = points.matmul(theta.transpose(1, 2))  # (N, prod(spatial), nd)
    return grid.reshape(theta.shape[0], *spatial, len(spatial))
