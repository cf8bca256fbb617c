"""The numpy conv engine's gradients of an ungrouped conv, the two a training step's backward calls:

- the weight gradient (``weight_grad``) as one GEMM per chunk of images, g (C_out, B*L) against the
  window matrix (C*K, B*L), both copied once into kept workspaces (``_scratch``): the default path
  (``burn.backend.conv_weight_grad``) copies the windows twice into fresh buffers (an unfold, then a
  channel-first permute), and fresh multi-MB buffers cost a page fault per 4 KiB page on every call;
- the input gradient of a unit-stride conv (``transpose_as_conv``): ``conv_transpose`` at stride 1 is
  the forward conv of the same input with the kernel flipped and its in/out channels swapped, padded
  ``dilation * (kernel - 1) - padding``; so it runs on the forward conv's rows engine (``_conv_runs``,
  its workspaces and its thread split) instead of a matmul, a col2im of k shifted adds into a fresh
  zeroed buffer and a cropped copy.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ._conv_plans import _conv_plan, _conv_windows, _padded
from ._workspace import _scratch

Ints = tuple[int, ...]
Array = Any  # a numpy array

# the window matrix of one chunk of images: at most this many elements (16 MiB of float32, reused)
_COLS_BUDGET = 1 << 22


def weight_grad(
    xp: ModuleType, x: Array, g: Array, wshape: Ints, stride: Ints, padding: Ints, dilation: Ints
) -> Array:
    """d loss / d weight (C_out, C, *K) of an ungrouped conv of x (N, C, *S) with output gradient g
    (N, C_out, *O): sum over chunks of images of g (C_out, B*L) @ windows (C*K, B*L)^T."""
    plan = _conv_plan(tuple(x.shape), tuple(wshape), stride, padding, dilation, 1, 0, _COLS_BUDGET)
    n, c_out, rows, length = x.shape[0], wshape[0], plan.rows, plan.length
    per = max(1, min(n, _COLS_BUDGET // max(1, rows * length)))
    src = x if plan.padded is None else _padded(xp, x, plan)
    view = _conv_windows(xp, src, plan, stride, dilation).transpose(plan.channel_major)  # (C, *K, N, *O)
    g_rows = g.reshape(n, c_out, length)
    gw = None
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
