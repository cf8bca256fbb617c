"""Shape plans of the numpy conv engine, worked out once per signature: the im2col plan (``_conv_plan``:
output sizes, GEMM depth, images per GEMM, padding) and the rows plan of a 2-d conv (``_rows_plan``:
stride phases of the padded input and where each kernel tap reads them), plus the window views
they index (``_windows``, ``_conv_windows``) and the padded inputs they read (``_pad``, ``_padded``).

Output sizes come from ``burn.backend.conv_out_sizes_padded``, the one home of the conv size rule.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import Any, NamedTuple

from ..backend import conv_out_sizes_padded
from ._workspace import _kept_zeros

Ints = tuple[int, ...]
Array = Any  # a numpy array, or a CuPy one: these formulations run on either namespace (``xp``)


def _window_strides(strides: Ints, stride: Ints, dilation: Ints) -> Ints:
    """Byte strides of the (N, C, *kernel, *out) window view of an array with ``strides``."""
    sn, sc, *ss = strides
    return (sn, sc) + tuple(s * d for s, d in zip(ss, dilation)) + tuple(s * t for s, t in zip(ss, stride))


def _windows(xp: ModuleType, x: Array, kernel: Ints, stride: Ints, dilation: Ints, out: Ints) -> Array:
    """A read-only strided view (N, C, *kernel, *out) of x (N, C, *S): no copy."""
    strides = _window_strides(x.strides, stride, dilation)
    shape = x.shape[:2] + tuple(kernel) + tuple(out)
    as_strided = xp.lib.stride_tricks.as_strided
    try:  # read-only where the namespace supports it (numpy): the windows overlap
        return as_strided(x, shape=shape, strides=strides, writeable=False)
    except TypeError:  # cupy's as_strided has no writeable flag
        return as_strided(x, shape=shape, strides=strides)


def _pad(xp: ModuleType, x: Array, pads: tuple[tuple[int, int], ...], value: float | int | bool) -> Array:
    if not any(lo or hi for lo, hi in pads):
        return x
    # a filled buffer and one strided copy: half the time of xp.pad, which fills each side in turn
    shape = x.shape[:2] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    out = xp.full(shape, value, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))] = x
    return out


class _ConvPlan(NamedTuple):
    """What a conv's shapes decide, worked out once per signature (``_conv_plan``)."""

    out: Ints  # output spatial sizes
    depth: int  # C/g * prod(kernel): the GEMM's contraction
    rows: int  # C * prod(kernel)
    length: int  # prod(out)
    per: int  # images per GEMM
    pointwise: bool  # a 1x1, unpadded, unit-stride conv that needs no windows
    y_shape: Ints
    padded: Ints | None  # x's shape with the padding (None: no padding)
    interior: tuple[slice, ...]  # where x sits in the padded buffer
    view_shape: Ints  # (N, C, *kernel, *out)
    channel_major: Ints  # view axes -> (C, *kernel, N, *out)


@functools.lru_cache(maxsize=256)
def _conv_plan(
    xshape: Ints,
    wshape: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    min_columns: int,
    budget: int,
) -> _ConvPlan:
    n, c = xshape[:2]
    c_out, kernel = wshape[0], tuple(wshape[2:])
    nd = len(kernel)
    out = conv_out_sizes_padded(xshape[2:], kernel, stride, padding, dilation)
    rows, length = c * math.prod(kernel), math.prod(out)
    pointwise = all(k == 1 for k in kernel) and not any(padding) and all(st == 1 for st in stride)
    per = max(1, min(n, -(-min_columns // length), budget // max(1, rows * length)))
    padded = xshape[:2] + tuple(s + 2 * p for s, p in zip(xshape[2:], padding)) if any(padding) else None
    return _ConvPlan(
        out,
        rows // groups,
        rows,
        length,
        per,
        pointwise and (n == 1 or length >= min_columns),
        (n, c_out) + out,
        padded,
        (slice(None), slice(None)) + tuple(slice(p, p + s) for s, p in zip(xshape[2:], padding)),
        (n, c) + kernel + out,
        (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd)),
    )


def _padded(xp: ModuleType, x: Array, plan: _ConvPlan) -> Array:
    """x zero-padded as ``plan`` says, in a buffer kept for that shape (``_kept_zeros``): its borders
    are zeroed once and never written again, so each call copies only x into the interior."""
    shape = plan.padded
    assert shape is not None
    buf = _kept_zeros(xp, ("im2col", shape, x.dtype.str), math.prod(shape), x.dtype)[0].reshape(shape)
    buf[plan.interior] = x
    return buf


def _conv_windows(xp: ModuleType, src: Array, plan: _ConvPlan, stride: Ints, dilation: Ints) -> Array:
    """The read-only (N, C, *kernel, *out) window view of ``src``, x padded as ``plan`` says."""
    kernel = plan.view_shape[2 : 2 + len(plan.out)]
    if xp.__name__ != "numpy" or not src.flags.c_contiguous:
        return _windows(xp, src, kernel, stride, dilation, plan.out)
    strides = _window_strides(src.strides, stride, dilation)
    view = xp.ndarray(plan.view_shape, src.dtype, src, 0, strides)  # as_strided, without its overhead
    view.flags.writeable = False  # the windows overlap
    return view


class _Phase(NamedTuple):
    fill_dst: tuple[slice, ...]  # where this phase's interior sits in the (N, C, phases, hq, wq) buffer
    fill_src: tuple[slice, ...]  # the input samples it holds
    offset: int  # element offset of the phase's first tap in an image's first channel
    shape: Ints  # (C, taps along h, taps along w, L) of its tap view
    strides: Ints  # element strides of that view (channel, tap h, tap w, column)
    cols: tuple[slice, ...]  # where those taps sit in the window matrix (C, kh, kw, L)


class _RowsPlan(NamedTuple):
    out: Ints  # (ho, wo)
    grid: Ints  # (hq, wq): the phase planes; outputs are computed on ho x wq
    phases: tuple[_Phase, ...]
    image: int  # elements per image in the phase buffer
    size: int  # phase buffer elements (slack past the end: the junk columns' overrun)
    depth: int  # C * kh * kw
    per: int  # images per GEMM chunk
    key: tuple[Any, ...]  # what decides the buffer's layout (hashable: slices are not, before 3.12)


@functools.lru_cache(maxsize=256)
def _rows_plan(
    xshape: Ints, wshape: Ints, stride: Ints, padding: Ints, dilation: Ints, chunk: int
) -> _RowsPlan:
    n, c, h, w = xshape
    kernel = tuple(wshape[2:])
    out = conv_out_sizes_padded((h, w), kernel, stride, padding, dilation)
    # per axis: phase -> (first tap, tap step, taps, offset in the phase, offset step)
    axes: list[dict[int, tuple[int, int, int, int, int]]] = []
    for k, s, d in zip(kernel, stride, dilation):
        g = math.gcd(s, d)
        phases: dict[int, tuple[int, int, int, int, int]] = {}
        for t in range(k):
            p, a = (t * d) % s, (t * d) // s
            if p not in phases:
                count = len(range(t, k, s // g))
                phases[p] = (t, s // g, count, a, d // g)
        axes.append(phases)
    reach = [max(a + (cnt - 1) * da for _, _, cnt, a, da in ax.values()) for ax in axes]
    hq, wq = out[0] + reach[0], out[1] + reach[1]
    keys = [(p, q) for p in sorted(axes[0]) for q in sorted(axes[1])]
    plane, length = hq * wq, out[0] * wq
    image = c * len(keys) * plane
    built = []
    for k, (p, q) in enumerate(keys):
        ti, si, ni, ai, dai = axes[0][p]
        tj, sj, nj, aj, daj = axes[1][q]
        # phase (p, q) holds padded sample (p + i * sh, q + j * sw) at (i, j): rows of x from r0 on
        bounds = []
        for ph, pad, s, size, lim in ((p, padding[0], stride[0], h, hq), (q, padding[1], stride[1], w, wq)):
            lo = max(0, -(-(pad - ph) // s))
            hi = min(lim, (pad + size - 1 - ph) // s + 1)
            start = ph + lo * s - pad
            bounds.append((lo, hi, start, s))
        fill_dst = (slice(None), slice(None), slice(k, k + 1)) + tuple(
            slice(lo, max(lo, hi)) for lo, hi, _, _ in bounds
        )
        fill_src = (slice(None), slice(None), None) + tuple(
            slice(st, st + (hi - lo - 1) * s + 1, s) if hi > lo else slice(0, 0) for lo, hi, st, s in bounds
        )
        built.append(
            _Phase(
                fill_dst,
                fill_src,
                k * plane + ai * wq + aj,
                (c, ni, nj, length),
                (len(keys) * plane, dai * wq, daj, 1),
                (slice(None), slice(ti, None, si), slice(tj, None, sj), slice(None)),
            )
        )
    depth = c * math.prod(kernel)
    per = max(1, min(n, chunk // max(1, depth * length)))
    key = (xshape, kernel, stride, padding, dilation)
    return _RowsPlan(out, (hq, wq), tuple(built), image, n * image + reach[1], depth, per, key)
