"""Resize and Upsample.

Resize is separable: each resized axis is an interpolation matrix (out x in) built on the host from the
ONNX coordinate transform, nearest rounding and cubic coefficient, then applied as one matmul (linear,
cubic) or one index select (nearest). Every coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
exclude_outside, extrapolation_value and antialias (a stretched, normalised kernel when downsampling)
therefore follows the ONNX reference formulas exactly.
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
    """Source coordinates of output positions ``x`` (ONNX's coordinate_transformation_mode). The modes
    that divide by the output length use ``scale * n_in``, which differs from ``n_out`` when the
    scale does not give a whole length."""
    width = scale * n_in
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = n_out / width
        offset = n_in / 2 * (1 - adjustment)
        return offset + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros_like(x)
    if mode == "align_corners":
        return x * (n_in - 1) / (width - 1) if width != 1 else np.zeros_like(x)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    start, end = roi  # tf_crop_and_resize
    if width != 1:
        return start * (n_in - 1) + x * (end - start) * (n_in - 1) / (width - 1)
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


def _antialias_taps(ratio: np.ndarray, scale: float, cubic: bool, a: float) -> np.ndarray:
    """Antialiased kernel weights (rows: outputs, cols: taps) for downsampling: the linear or cubic
    kernel stretched by ``1 / scale`` and each row normalised, as ONNX's reference defines them."""
    scale = min(scale, 1.0)
    start = int(np.floor((-2 if cubic else -1) / scale) + 1)
    taps = np.arange(start, 2 - start)
    t = (taps[None, :] - ratio[:, None]) * scale
    w = _cubic(t, a) if cubic else np.clip(1 - np.abs(t), 0, 1)
    return w / w.sum(1, keepdims=True)


def _antialias_matrix(node: Node, how: str, x: np.ndarray, n_in: int, scale: float) -> np.ndarray:
    a = node.attrs
    base = np.floor(x)
    ratio = np.where(x == base, 1.0, x - base)
    coeffs = _antialias_taps(ratio, scale, how == "cubic", float(a.get("cubic_coeff_a", -0.75)))
    n = coeffs.shape[1]
    # the n source indices nearest x (ties to the smaller), as the reference picks them
    pad = (n + 1) // 2
    shifted = x + pad
    p = np.floor(shifted).astype(np.int64)
    frac = shifted - p
    if n % 2 == 0:
        first = p + np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        first = p + np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    idx = first[:, None] + np.arange(n)[None, :] - pad
    if a.get("exclude_outside", 0):
        coeffs = np.where((idx < 0) | (idx >= n_in), 0.0, coeffs)
        total = coeffs.sum(1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    w = np.zeros((len(x), n_in))
    rows = np.repeat(np.arange(len(x)), n)
    np.add.at(w, (rows, np.clip(idx, 0, n_in - 1).reshape(-1)), coeffs.reshape(-1))
    return w


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
    if how != "nearest" and a.get("antialias", 0) and scale < 1:
        w = _antialias_matrix(node, how, x, n_in, scale)
    elif how == "nearest":
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
