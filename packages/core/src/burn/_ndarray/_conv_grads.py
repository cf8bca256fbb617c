"""The numpy conv engine's gradients of an ungrouped conv, the two a training step's backward calls:

- the weight gradient (``weight_grad``) as one GEMM per chunk of images, g (C_out, B*L) against the
  window matrix (C*K, B*L), channels-last (B*L, K*C) for 2-d convs of 8 channels or more, both
  copied once into kept workspaces (``_scratch``): the default path
  (``burn.backend.conv_weight_grad``) copies the windows twice into fresh buffers (an unfold, then a
  channel-first permute), and fresh multi-MB buffers cost a page fault per 4 KiB page on every call;
- the input gradient of a unit-stride conv (``transpose_as_conv``): ``conv_transpose`` at stride 1 is
  the forward conv of the same input with the kernel flipped and its in/out channels swapped, padded
  ``dilation * (kernel - 1) - padding``; so it runs on the forward conv's rows engine (``_conv_runs``,
  its workspaces and its thread split) instead of a matmul, a col2im of k shifted adds into a fresh
  zeroed buffer and a cropped copy.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from . import _threads
from ._conv_plans import _conv_plan, _conv_windows, _padded
from ._workspace import _kept_zeros, _scratch

Ints = tuple[int, ...]
Array = Any  # a numpy array

# the window matrix of one chunk of images: at most this many elements (16 MiB of float32, reused)
_COLS_BUDGET = 1 << 22
# channels from which a 2-d weight gradient takes channels-last windows (one channel: 1.6x slower
# than the channel-first copy on the digits CNN's 8x8 planes; 16 channels on 4x4 planes: 2x faster)
_CHANNELS_LAST_MIN = 8
# multiply-adds below which a weight gradient's GEMMs run with BLAS at one thread: OpenBLAS splits
# even small GEMMs over its threads, which then spin between calls and fight the next ops for the
# cores (the digits CNN on 2 busy cores: its two weight gradients 14 ms a step on 2 BLAS threads,
# 0.6 ms on one); larger ones (bench_fusion's CNN, 231M) keep BLAS's threads
_SMALL_GEMM_MACS = 1 << 24


def weight_grad(
    xp: ModuleType, x: Array, g: Array, wshape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Array:
    """d loss / d weight (C_out, C, *K) of an ungrouped conv of x (N, C, *S) with output gradient g
    (N, C_out, *O): sum over chunks of images of g (C_out, B*L) @ windows (C*K, B*L)^T. A 2-d conv
    of ``_CHANNELS_LAST_MIN`` channels or more takes its windows channels-last (``_weight_grad_cl``).
    A small one runs with numpy's BLAS held at one thread (``_SMALL_GEMM_MACS``)."""
    macs = math.prod(wshape) * math.prod(g.shape) // max(1, g.shape[1])
    if macs < _SMALL_GEMM_MACS and _threads._parallel.threads() > 1:
        with _threads._parallel.held(1):
            return _weight_grad(xp, x, g, wshape, stride, padding, dilation)
    return _weight_grad(xp, x, g, wshape, stride, padding, dilation)


def _weight_grad(
    xp: ModuleType, x: Array, g: Array, wshape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Array:
    if x.ndim == 4 and x.shape[1] >= _CHANNELS_LAST_MIN:
        return _weight_grad_cl(xp, x, g, wshape, stride, padding, dilation)
    plan = _conv_plan(tuple(x.shape), tuple(wshape), stride, padding, dilation, 1, 0, _COLS_BUDGET)
    n, c_out, rows, length = x.shape[0], wshape[0], plan.rows, plan.length
    per = max(1, min(n, _COLS_BUDGET // max(1, rows * length)))
    src = x if plan.padded is None else _padded(xp, x, plan)
    view = _conv_windows(xp, src, plan, stride, dilation).transpose(plan.channel_major)  # (C, *K, N, *O)
    g_rows = g.reshape(n, c_out, length)
    gw: Array = None
    for start in range(0, n, per):
        b = min(per, n - start)
        part = view[(slice(None),) * (1 + len(plan.out)) + (slice(start, start + b),)]
        cols = _scratch(xp, "wgrad_cols", rows * b * length, x.dtype).reshape(part.shape)
        xp.copyto(cols, part)
        gg = _scratch(xp, "wgrad_g", c_out * b * length, x.dtype).reshape(c_out, b, length)
        xp.copyto(gg, g_rows[start : start + b].transpose(1, 0, 2))
        # g @ windows^T: BLAS's NT case, both operands row-major in the contraction
        prod = xp.matmul(gg.reshape(c_out, b * length), cols.reshape(rows, b * length).T)
        gw = prod if gw is None else xp.add(gw, prod, out=gw)
    return gw.reshape(wshape)


def _weight_grad_cl(
    xp: ModuleType, x: Array, g: Array, wshape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Array:
    """``weight_grad`` of a 2-d conv through channels-last windows: x copied once into a kept
    zero-bordered (N, H, W, C) buffer, whose (N, OH, OW, KH, KW, C) window matrix copies in runs of
    KW * C elements (the channel-first windows copy in runs of OW, a few elements on small planes:
    the digits CNN's second conv, 16 channels on 4x4 planes, twice as fast); then g^T (C_out, B*L)
    @ windows (B*L, K*C) per chunk and one small transpose of the result to (C_out, C, KH, KW)."""
    n, c, h, w = x.shape
    c_out, kh, kw = wshape[0], wshape[2], wshape[3]
    oh, ow = g.shape[2], g.shape[3]
    (ph, pw), (sh, sw), (dh, dw) = padding, stride, dilation
    shape = (n, h + 2 * ph, w + 2 * pw, c)
    buf = _kept_zeros(xp, ("wgrad_cl", shape, x.dtype.str), math.prod(shape), x.dtype)[0].reshape(shape)
    xp.copyto(buf[:, ph : ph + h, pw : pw + w], x.transpose(0, 2, 3, 1))
    s0, s1, s2, s3 = buf.strides
    view = xp.lib.stride_tricks.as_strided(
        buf, (n, oh, ow, kh, kw, c), (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3), writeable=False
    )
    length, depth = oh * ow, kh * kw * c
    per = max(1, min(n, _COLS_BUDGET // max(1, depth * length)))
    g_rows = g.reshape(n, c_out, length)
    gw: Array = None
    for start in range(0, n, per):
        b = min(per, n - start)
        cols = _scratch(xp, "wgrad_cols", b * length * depth, x.dtype).reshape((b,) + view.shape[1:])
        xp.copyto(cols, view[start : start + b])
        gt = _scratch(xp, "wgrad_g", b * length * c_out, x.dtype).reshape(b, length, c_out)
        xp.copyto(gt, g_rows[start : start + b].transpose(0, 2, 1))
        prod = xp.matmul(gt.reshape(b * length, c_out).T, cols.reshape(b * length, depth))
        gw = prod if gw is None else xp.add(gw, prod, out=gw)
    return xp.ascontiguousarray(gw.reshape(c_out, kh, kw, c).transpose(0, 3, 1, 2))


def transposed_weight(weight: Array) -> Array:
    """The forward conv's kernel for a unit-stride conv_transpose's: ``weight`` (C_in, C_out, *K)
    flipped in every spatial dim, its two channel dims swapped, dense."""
    nd = weight.ndim - 2
    flipped = weight[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
    return flipped.transpose((1, 0) + tuple(range(2, 2 + nd))).copy()


def transpose_padding(
    x: Array, weight: Array, stride: Ints, padding: Ints, output_padding: Ints, dilation: Ints, groups: int
) -> Ints | None:
    """The forward conv's padding when this conv_transpose runs as one (``transpose_as_conv``): unit
    stride, no output padding, ungrouped, 2-d, float, and a padding no larger than the kernel's reach;
    None otherwise."""
    if (
        groups != 1
        or x.ndim != 4
        or x.dtype.kind != "f"
        or any(s != 1 for s in stride)
        or any(output_padding)
    ):
        return None
    reach = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
    if any(p > r for p, r in zip(padding, reach)):
        return None
    return tuple(r - p for r, p in zip(reach, padding))
