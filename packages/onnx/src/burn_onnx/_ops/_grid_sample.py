"""GridSample over 2-d and 3-d inputs with nearest, linear and cubic interpolation.

Each output point reads its taps (1, 2 or 4 per spatial dim) with one gather each from the flattened
input, weighted by the product of the per-dim weights; out-of-range taps follow ``padding_mode`` per
dim (zeros: weight 0, border: clamped index, reflection: reflected index), as ONNX's reference does.
"""

from __future__ import annotations

import itertools
from typing import Any

import burn

from .._graph import Node
from .._registry import attr_in, checks, op

_A = -0.75  # the cubic convolution coefficient GridSample fixes


def _cubic_weights(f: burn.Tensor) -> list[burn.Tensor]:
    """Keys' cubic weights of the taps at offsets -1, 0, 1, 2 from ``floor(p)`` (``f``: the fraction)."""

    def near(t: burn.Tensor) -> burn.Tensor:
        return ((_A + 2) * t - (_A + 3)) * t * t + 1

    def far(t: burn.Tensor) -> burn.Tensor:
        return ((_A * t - 5 * _A) * t + 8 * _A) * t - 4 * _A

    return [far(f + 1), near(f), near(1 - f), far(2 - f)]


def _reflect(v: burn.Tensor, lo: float, hi: float) -> burn.Tensor:
    """``v`` mirrored at ``lo`` and ``hi`` until it lies between them."""
    span = hi - lo
    if span <= 0:
        return burn.zeros_like(v)
    t = (v - lo).abs()
    flips = (t / span).floor()
    extra = t - flips * span
    return burn.where(flips.remainder(2.0) == 0, extra + lo, hi - extra)


def _grid_check(node: Node) -> str | None:
    mode = node.attrs.get("mode", "linear" if node.opset >= 20 else "bilinear")
    if mode not in ("bilinear", "linear", "nearest", "bicubic", "cubic"):
        return f"mode={mode!r} is not supported (supported: 'linear', 'nearest', 'cubic')"
    return None


@op(
    "GridSample",
    since=16,
    check=checks(_grid_check, attr_in("padding_mode", ("zeros", "border", "reflection"), "zeros")),
)
def grid_sample(ctx: Any, node: Node, x: burn.Tensor, grid: burn.Tensor) -> burn.Tensor:
    """x (N, C, *S) with 2 or 3 spatial dims; grid (N, *O, nd) holding (x, y[, z]) in [-1, 1]."""
    mode = node.attrs.get("mode", "linear" if node.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    padding = node.attrs.get("padding_mode", "zeros")
    align = bool(node.attrs.get("align_corners", 0))
    n, c, *sizes = x.shape
    nd = len(sizes)
    out = tuple(grid.shape[1:-1])
    points = 1
    for o in out:
        points *= o
    work = x.dtype if x.dtype.is_float else burn.float32
    g = grid.reshape(n, points, nd).cast(work)
    taps_per_dim = []
    for d, size in enumerate(sizes):
        v = g.narrow(2, nd - 1 - d, 1).reshape(n, points)  # the grid lists dims fastest first
        p = (v + 1.0) * ((size - 1) / 2.0) if align else ((v + 1.0) * size - 1.0) / 2.0
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if padding == "border":  # only a point outside the sampled extent moves onto the edge
            outside = (p < lo).logical_or(p > hi)
            p = burn.where(outside, p.clamp(0.0, size - 1.0), p)
        elif padding == "reflection":
            p = _reflect(p, lo, hi)
        taps: list[tuple[burn.Tensor, burn.Tensor | None]]
        if mode == "nearest":
            taps = [(p.round(), None)]
        else:
            base = p.floor()
            f = p - base
            weights = [1.0 - f, f] if mode == "linear" else _cubic_weights(f)
            first = 0 if mode == "linear" else -1
            taps = [(base + (first + i), w) for i, w in enumerate(weights)]
        taps_per_dim.append([_place(i, w, size, padding, lo, hi) for i, w in taps])
    flat = x.reshape(n, c, -1)
    total = None
    for combo in itertools.product(*taps_per_dim):
        index = None
        weight = None
        for d, (i, w) in enumerate(combo):
            stride = 1
            for s in sizes[d + 1 :]:
                stride *= s
            index = i * stride if index is None else index + i * stride
            if w is not None:
                weight = w if weight is None else weight * w
        assert index is not None
        idx = index.cast(burn.int32).unsqueeze(1).expand(n, c, points)
        values = flat.gather(2, idx)
        if weight is not None:
            values = (values if values.dtype is work else values.cast(work)) * weight.unsqueeze(1)
        total = values if total is None else total + values
    assert total is not None
    y = total.reshape(n, c, *out)
    return y if y.dtype is x.dtype else y.round().cast(x.dtype)


def _place(
    i: burn.Tensor, w: burn.Tensor | None, size: int, padding: str, lo: float, hi: float
) -> tuple[burn.Tensor, burn.Tensor | None]:
    """A tap's in-range index and its weight, zero where ``padding='zeros'`` leaves it outside."""
    if padding == "zeros":
        inside = (i >= 0).logical_and(i <= size - 1).cast(i.dtype)
        w = inside if w is None else w * inside
        return i.clamp(0.0, size - 1.0), w
    if padding == "reflection":
        i = _reflect(i, lo, hi).trunc()
    return i.clamp(0.0, size - 1.0), w
