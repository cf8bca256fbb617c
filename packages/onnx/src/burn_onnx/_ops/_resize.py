"""Resize, Upsample and GridSample.

Resize is separable: each resized axis is an interpolation matrix (out x in) built on the host from the
ONNX coordinate transform, nearest rounding and cubic coefficient, then applied as one matmul (linear,
cubic) or one index select (nearest). Every coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
exclude_outside and extrapolation_value therefore follows the ONNX reference formulas exactly.
"""

from __future__ import annotations

import math
from typing import Any

import burn
import numpy as np

from .._graph import Node
from .._registry import attr_in, checks, op, requires
from ._common import index_tensor

_TRANSFORMS = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _original(
    mode: str, x: np.ndarray, scale: float, n_in: int, n_out: int, roi: tuple[float, float]
) -> np.ndarray:
    """Source coordinates of output positions ``x`` (ONNX's coordinate_transformation_mode)."""
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = n_out / (scale * n_in)
        offset = n_in / 2 * (1 - adjustment)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    start, end = roi  # tf_crop_and_resize
    if n_out > 1:
        return start * (n_in - 1) + x * (end - start) * (n_in - 1) / (n_out - 1)
    return np.full_like(x, 0.5 * (start + end) * (n_in - 1))


def _round(mode: str, x: np.ndarray, scale: float) -> np.ndarray:
    if mode == "simple":  # Upsample and opset-10 Resize
        return np.ceil(x) if scale < 1 else np.floor(x)
    if mode == "round_prefer_floor":
        return np.where(x - np.floor(x) == 0.5, np.floor(x), np.round(x))
    if mode == "round_prefer_ceil":
        return np.where(x - np.floor(x) == 0.5, np.ceil(x), np.round(x))
    return np.floor(x) if mode == "floor" else np.ceil(x)


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _matrix(
    node: Node, how: str, n_in: int, n_out: int, scale: float, roi: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """(weights out x in, extrapolated rows mask) for one axis."""
    a = node.attrs
    transform = a.get("coordinate_transformation_mode", "half_pixel") if node.opset >= 11 else "asymmetric"
    x = _original(transform, np.arange(n_out, dtype=np.float64), scale, n_in, n_out, roi)
    w = np.zeros((n_out, n_in))
    outside = np.zeros(n_out, dtype=bool)
    if transform == "tf_crop_and_resize":
        outside = (x < 0) | (x > n_in - 1)
    rows = np.arange(n_out)
    if how == "nearest":
        nearest_mode = a.get("nearest_mode", "round_prefer_floor") if node.opset >= 11 else "simple"
        idx = np.clip(_round(nearest_mode, x, scale), 0, n_in - 1).astype(np.int64)
        w[rows, idx] = 1.0
    elif how == "linear":
        xc = np.clip(x, 0, n_in - 1)
        i0 = np.floor(xc).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        frac = xc - i0
        np.add.at(w, (rows, i0), 1 - frac)
        np.add.at(w, (rows, i1), frac)
    else:  # cubic
        coeff = float(a.get("cubic_coeff_a", -0.75))
        base = np.floor(x).astype(np.int64)
        for k in range(-1, 3):
            tap = base + k
            weight = _cubic(x - tap, coeff)
            inside = (tap >= 0) & (tap < n_in)
            if a.get("exclude_outside", 0):
                weight = np.where(inside, weight, 0.0)
            np.add.at(w, (rows, np.clip(tap, 0, n_in - 1)), weight)
        if a.get("exclude_outside", 0):
            w = w / np.maximum(w.sum(1, keepdims=True), 1e-12)
    w[outside] = 0.0
    return w, outside


def _resize_check(node: Node) -> str | None:
    if node.attrs.get("antialias", 0):
        return "antialias=1 is not supported"
    policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        return f"keep_aspect_ratio_policy={policy!r} is not supported"
    return None


def _apply(
    ctx: Any, node: Node, x: burn.Tensor, how: str, scales: list[float], sizes: list[int], roi: list[float]
) -> burn.Tensor:
    extrapolation = float(node.attrs.get("extrapolation_value", 0.0))
    rank = x.ndim
    for d in range(rank):
        n_in, n_out, scale = x.shape[d], sizes[d], scales[d]
        r = (roi[d], roi[d + rank]) if roi else (0.0, 1.0)
        w, outside = _matrix(node, how, n_in, n_out, scale, r)
        if n_in == n_out and np.array_equal(w, np.eye(n_in)) and not outside.any():
            continue
        moved = x.transpose(d, rank - 1) if d != rank - 1 else x
        if how == "nearest" and not outside.any():
            y = moved.select(rank - 1, index_tensor(w.argmax(1), x.device))
        else:
            src = moved if moved.dtype.is_float else moved.float()
            y = src @ burn.from_numpy(w.T.astype(np.float32), device=x.device, dtype=src.dtype)
            if outside.any():
                y = y + burn.from_numpy(
                    (outside * extrapolation).astype(np.float32), device=x.device, dtype=src.dtype
                )
            if not moved.dtype.is_float:
                y = y.round().cast(moved.dtype)
        x = y.transpose(d, rank - 1) if d != rank - 1 else y
    return x


def _sizes(
    node: Node,
    shape: tuple[int, ...],
    scales: list[float] | None,
    sizes: list[int] | None,
    axes: list[int] | None,
) -> tuple[list[float], list[int]]:
    rank = len(shape)
    axes = axes if axes is not None else list(range(rank))
    full_scales = [1.0] * rank
    full_sizes = list(shape)
    if sizes:
        policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
        wanted = dict(zip(axes, sizes))
        if policy != "stretch":
            ratios = [wanted[a] / shape[a] for a in axes]
            r = min(ratios) if policy == "not_larger" else max(ratios)
            wanted = {a: int(math.floor(r * shape[a] + 0.5)) for a in axes}
            for a in axes:
                full_scales[a] = r
        for a in axes:
            full_sizes[a] = wanted[a]
            if policy == "stretch":
                full_scales[a] = wanted[a] / shape[a] if shape[a] else 1.0
    else:
        for a, s in zip(axes, scales or []):
            full_scales[a] = float(s)
            full_sizes[a] = int(math.floor(shape[a] * float(s)))
    return full_scales, full_sizes


@op(
    "Resize",
    host=(1, 2, 3),
    check=checks(
        attr_in("mode", ("nearest", "linear", "cubic"), "nearest"),
        attr_in("coordinate_transformation_mode", _TRANSFORMS, "half_pixel"),
        attr_in("nearest_mode", _NEAREST, "round_prefer_floor"),
        _resize_check,
    ),
)
def resize(
    ctx: Any, node: Node, x: burn.Tensor, roi: Any = None, scales: Any = None, sizes: Any = None
) -> burn.Tensor:
    if node.opset < 11:  # Resize-10: (X, scales)
        scales, roi = roi, None
    axes = node.attrs.get("axes")
    rank = x.ndim
    if axes is not None:
        axes = [a + rank if a < 0 else a for a in axes]
    scale_values = [float(v) for v in ctx.array(scales).reshape(-1)] if scales is not None else []
    size_values = ctx.ints(sizes) if sizes is not None else []
    roi_values = [float(v) for v in ctx.array(roi).reshape(-1)] if roi is not None else []
    if roi_values and axes is not None and len(roi_values) == 2 * len(axes):
        full = [0.0] * rank + [1.0] * rank
        for i, a in enumerate(axes):
            full[a], full[a + rank] = roi_values[i], roi_values[i + len(axes)]
        roi_values = full
    full_scales, full_sizes = _sizes(node, tuple(x.shape), scale_values or None, size_values or None, axes)
    return _apply(ctx, node, x, node.attrs.get("mode", "nearest"), full_scales, full_sizes, roi_values)


@op(
    "Upsample",
    host=(1,),
    check=checks(attr_in("mode", ("nearest", "linear", "bilinear"), "nearest"), requires("scales", before=9)),
)
def upsample(ctx: Any, node: Node, x: burn.Tensor, scales: Any = None) -> burn.Tensor:
    values = [
        float(v) for v in (ctx.array(scales).reshape(-1) if scales is not None else node.attrs["scales"])
    ]
    how = "linear" if node.attrs.get("mode", "nearest") in ("linear", "bilinear") else "nearest"
    legacy = Node(node.op_type, node.domain, 10, node.name, node.inputs, node.outputs, {})
    full_scales, full_sizes = _sizes(legacy, tuple(x.shape), values, None, None)
    return _apply(ctx, legacy, x, how, full_scales, full_sizes, [])


def _grid_check(node: Node) -> str | None:
    mode = node.attrs.get("mode", "linear" if node.opset >= 20 else "bilinear")
    if mode not in ("bilinear", "linear", "nearest"):
        return f"mode={mode!r} is not supported (supported: 'linear'/'bilinear', 'nearest')"
    return None


@op(
    "GridSample",
    since=16,
    check=checks(_grid_check, attr_in("padding_mode", ("zeros", "border", "reflection"), "zeros")),
)
def grid_sample(ctx: Any, node: Node, x: burn.Tensor, grid: burn.Tensor) -> burn.Tensor:
    """4-d inputs: x (N, C, H, W), grid (N, Ho, Wo, 2) holding (x, y) in [-1, 1]."""
    mode = node.attrs.get("mode", "linear" if node.opset >= 20 else "bilinear")
    padding = node.attrs.get("padding_mode", "zeros")
    align = bool(node.attrs.get("align_corners", 0))
    n, c, h, w = x.shape
    ho, wo = grid.shape[1:3]
    gx, gy = grid.narrow(3, 0, 1).reshape(n, ho * wo), grid.narrow(3, 1, 1).reshape(n, ho * wo)

    def unnormalize(g: burn.Tensor, size: int) -> burn.Tensor:
        return (g + 1.0) * ((size - 1) / 2.0) if align else ((g + 1.0) * size - 1.0) / 2.0

    def reflect(v: burn.Tensor, size: int) -> burn.Tensor:
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        span = hi - lo
        if span <= 0:
            return burn.zeros_like(v)
        t = (v - lo).abs()
        flips = (t / span).floor()
        extra = t - flips * span
        even = flips.remainder(2.0) == 0
        return burn.where(even, extra + lo, hi - extra)

    px, py = unnormalize(gx, w), unnormalize(gy, h)
    if padding == "border":
        px, py = px.clamp(0.0, w - 1.0), py.clamp(0.0, h - 1.0)
    elif padding == "reflection":
        px, py = reflect(px, w).clamp(0.0, w - 1.0), reflect(py, h).clamp(0.0, h - 1.0)
    flat = x.reshape(n, c, h * w)

    def tap(ix: burn.Tensor, iy: burn.Tensor) -> burn.Tensor:
        valid = (ix >= 0).logical_and(ix <= w - 1).logical_and(iy >= 0).logical_and(iy <= h - 1)
        idx = (iy.clamp(0.0, h - 1.0) * w + ix.clamp(0.0, w - 1.0)).cast(burn.int32)
        idx = idx.unsqueeze(1).expand(n, c, ho * wo)
        values = flat.gather(2, idx)
        return values * valid.cast(x.dtype).unsqueeze(1)

    if mode == "nearest":
        out = tap(px.round(), py.round())
    else:
        x0, y0 = px.floor(), py.floor()
        fx, fy = (px - x0).unsqueeze(1), (py - y0).unsqueeze(1)
        out = (
            tap(x0, y0) * (1.0 - fx) * (1.0 - fy)
            + tap(x0 + 1.0, y0) * fx * (1.0 - fy)
            + tap(x0, y0 + 1.0) * (1.0 - fx) * fy
            + tap(x0 + 1.0, y0 + 1.0) * fx * fy
        )
    return out.reshape(n, c, ho, wo)
