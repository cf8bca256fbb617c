"""Core-only defaults for convolution: im2col through strided slices, conv, conv_transpose, unfold4d,
conv_weight_grad.

Every function takes the backend ``b`` first and uses only its required core (``slice``, ``pad``,
``reshape``, ``permute``, ``matmul``, ``stack``, ``full``, ``slice_assign``, ``flip``, ``binary``), so a
backend that implements the core gets convolution for free, and an autodiff decorator that
differentiates the core differentiates these too.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

from ._shapes import conv_out_sizes

if TYPE_CHECKING:
    from .._dtype import DType
    from ._base import Backend

Prim = Any
Ints = tuple[int, ...]
Pads = tuple[tuple[int, int], ...]


def fill_value(dtype: DType, lowest: bool = False) -> float | int | bool:
    """0 of ``dtype``, or its lowest value (-inf for floats) when ``lowest``: the neutral pad of max."""
    if dtype.is_float:
        return -math.inf if lowest else 0.0
    if dtype.is_bool:
        return False
    if not lowest or dtype.kind == "u":
        return 0
    return -(2 ** (8 * dtype.itemsize - 1))


def im2col(
    b: Backend,
    x: Prim,
    kernel: Ints,
    stride: Ints,
    pads: Pads,
    dilation: Ints,
    out: Ints | None = None,
    pad_value: float | int | bool = 0.0,
) -> tuple[Prim, Ints]:
    """Windows of x (N, C, *S) as (N, C, prod(kernel), *out): one strided slice per kernel offset.

    ``pads`` are (before, after) per spatial dim; ``out`` defaults to the floor output sizes. The
    kernel offsets run in row-major order, which is the order of a flattened kernel.
    """
    shape = b.shape_of(x)
    n, c, spatial = shape[0], shape[1], tuple(shape[2:])
    if out is None:
        out = conv_out_sizes(spatial, kernel, stride, pads, dilation)
    if any(lo or hi for lo, hi in pads):
        x = b.pad(x, ((0, 0), (0, 0)) + tuple(pads), "constant", pad_value)
    head = ((0, n, 1), (0, c, 1))
    windows = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        index = head + tuple(
            (o * d, o * d + (m - 1) * st + 1, st) for o, d, m, st in zip(offset, dilation, out, stride)
        )
        windows.append(b.slice(x, index))
    return b.stack(windows, 2), tuple(out)


def add_bias(b: Backend, y: Prim, bias: Prim | None) -> Prim:
    """y (N, C_out, *S) + bias (C_out,) broadcast over batch and space."""
    if bias is None:
        return y
    shape = b.shape_of(y)
    return b.binary("add", y, b.reshape(bias, (1, shape[1]) + (1,) * (len(shape) - 2)))


def conv(
    b: Backend,
    x: Prim,
    weight: Prim,
    bias: Prim | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> Prim:
    """N-d convolution of x (N, C_in, *S): weight (C_out, C_in // groups, *kernel), bias (C_out,) or
    None. Default: im2col, then one matmul per group (batched over groups)."""
    n, c = b.shape_of(x)[:2]
    wshape = b.shape_of(weight)
    c_out, kernel = wshape[0], tuple(wshape[2:])
    cols, out = im2col(b, x, kernel, stride, tuple((p, p) for p in padding), dilation)
    depth = (c // groups) * math.prod(kernel)  # one group's column height: channel-major, then kernel
    cols = b.reshape(cols, (n, groups, depth, math.prod(out)))
    w = b.reshape(weight, (1, groups, c_out // groups, depth))
    y = b.reshape(b.matmul(w, cols), (n, c_out) + out)
    return add_bias(b, y, bias)


def conv_transpose(
    b: Backend,
    x: Prim,
    weight: Prim,
    bias: Prim | None,
    stride: Ints,
    padding: Ints,
    output_padding: Ints,
    dilation: Ints,
    groups: int,
) -> Prim:
    """N-d transposed convolution: weight (C_in, C_out // groups, *kernel), bias (C_out,) or None, as
    PyTorch. Default: zero-insertion by ``stride``, padding by ``dilation*(k-1) - padding`` (negative: a
    crop, plus ``output_padding`` at the end), then a stride-1 conv with the flipped, transposed kernel."""
    shape = b.shape_of(x)
    n, c_in, spatial = shape[0], shape[1], tuple(shape[2:])
    nd = len(spatial)
    wshape = b.shape_of(weight)
    c_out_g, kernel = wshape[1], tuple(wshape[2:])
    head = ((0, n, 1), (0, c_in, 1))
    if any(st > 1 for st in stride):
        grown = tuple((s - 1) * st + 1 for s, st in zip(spatial, stride))
        zeros = b.full((n, c_in) + grown, fill_value(b.dtype_of(x)), b.dtype_of(x))
        x = b.slice_assign(zeros, head + tuple((0, g, st) for g, st in zip(grown, stride)), x)
    edges = [
        (d * (k - 1) - p, d * (k - 1) - p + op)
        for k, d, p, op in zip(kernel, dilation, padding, output_padding)
    ]
    x = b.pad(x, ((0, 0), (0, 0)) + tuple((max(lo, 0), max(hi, 0)) for lo, hi in edges), "constant", 0.0)
    if any(lo < 0 or hi < 0 for lo, hi in edges):
        sizes = b.shape_of(x)[2:]
        crop = tuple((max(-lo, 0), s - max(-hi, 0), 1) for (lo, hi), s in zip(edges, sizes))
        x = b.slice(x, head + crop)
    # weight (C_in, C_out/g, *K) -> per group (C_out/g, C_in/g, *K) -> (C_out, C_in/g, *K), flipped
    c_in_g = c_in // groups
    w = b.reshape(weight, (groups, c_in_g, c_out_g) + kernel)
    w = b.permute(w, (0, 2, 1) + tuple(range(3, 3 + nd)))
    w = b.reshape(w, (groups * c_out_g, c_in_g) + kernel)
    w = b.flip(w, tuple(range(2, 2 + nd)))
    return b.conv(x, w, bias, (1,) * nd, (0,) * nd, dilation, groups)


def unfold4d(b: Backend, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints) -> Prim:
    """im2col as torch's unfold: x (N, C, H, W) -> (N, C * kh * kw, L) with L output positions; rows run
    channel-major, then kernel row-major."""
    n, c = b.shape_of(x)[:2]
    cols, out = im2col(b, x, kernel, stride, tuple((p, p) for p in padding), dilation)
    return b.reshape(cols, (n, c * math.prod(kernel), math.prod(out)))


def _windows(
    b: Backend, x: Prim, kernel: Ints, stride: Ints, padding: Ints, dilation: Ints, out_sizes: Ints
) -> Prim:
    """Windows of x (A, M, *S) padded by ``padding``: (A, prod(kernel), M, *out_sizes)."""
    if any(padding):
        pads = ((0, 0), (0, 0)) + tuple((p, p) for p in padding)
        x = b.pad(x, pads, "constant", 0.0)
    shape = tuple(b.shape_of(x))
    cols = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        index = [(0, shape[0], 1), (0, shape[1], 1)]
        for off, d, s, o in zip(offsets, dilation, stride, out_sizes):
            start = off * d
            index.append((start, start + (o - 1) * s + 1, s))
        cols.append(b.slice(x, tuple(index)))
    return b.stack(cols, 1)


def conv_weight_grad(
    b: Backend,
    x: Prim,
    g: Prim,
    wshape: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> Prim:
    """d loss / d weight of ``conv(x, weight, None, stride, padding, dilation, groups)`` for the output
    gradient g (N, C_out, *O): a (C_out, C_in // groups, *kernel) tensor of shape ``wshape``. Autodiff's
    conv rule calls it (and conv_transpose's, with the roles of x and g swapped); a backend with a
    native weight-gradient kernel (cuDNN's on burn-cuda) overrides it.

    >>> b = burn.device("cpu").backend
    >>> x, g = burn.ones((1, 1, 3, 3)).primitive, burn.ones((1, 1, 2, 2)).primitive
    >>> burn.backend.conv_weight_grad(b, x, g, (1, 1, 2, 2), (1, 1), (0, 0), (1, 1), 1).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]

    Default: one matmul per group of the input windows (C_in_g*Kp, N*L) with g (N*L, C_out_g): the batch folds
    into the contraction. 2-d: the backend's ``unfold4d`` (N, C_in*Kp, L), made channel-first (one copy);
    1-d and 3-d: x is made channel-first (C_in, N, *S) before taking windows, so the windows come out
    already in the (C_in, Kp, N, *O) layout the matmul reads, with no further copy."""
    n = b.shape_of(x)[0]
    c_out, c_in_g = wshape[0], wshape[1]
    out_sizes = tuple(b.shape_of(g)[2:])
    kernel = tuple(wshape[2:])
    nd = len(kernel)
    kp, length = math.prod(kernel), math.prod(out_sizes)
    c_out_g, depth, m = c_out // groups, c_in_g * kp, n * length
    channel_first = (1, 0) + tuple(range(2, nd + 2))
    if nd == 2:  # the backend's im2col (one op: a gather kernel on the GPUs), made channel-first
        cols = b.permute(b.unfold4d(x, kernel, stride, padding, dilation), (1, 0, 2))
    else:
        cols = _windows(b, b.permute(x, channel_first), kernel, stride, padding, dilation, out_sizes)
    cols = b.reshape(cols, (groups, depth, m))
    if m >= depth:
        # a long contraction: (windows @ g^T)^T, both operands row-major in the contraction (BLAS's
        # NN case, 1.2-2x faster than windows^T against g), then a transpose of the small result
        gt = b.permute(b.reshape(g, (n, groups, c_out_g, length)), (1, 0, 3, 2))  # (G, N, L, C_out_g)
        gw = b.permute(b.matmul(cols, b.reshape(gt, (groups, m, c_out_g))), (0, 2, 1))
    else:  # a large result: a transposed copy of it would cost more than the layout saves
        gg = b.reshape(b.permute(g, channel_first), (groups, c_out_g, m))
        gw = b.matmul(gg, b.permute(cols, (0, 2, 1)))  # (G, C_out_g, C_in_g * Kp)
    return b.reshape(gw, tuple(wshape))
