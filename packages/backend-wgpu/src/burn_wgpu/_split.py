"""Convolutions and reductions over tensors larger than one storage binding (``_windows`` says why a
buffer may be): split into pieces each of whose tensors fits a binding, the pieces' results joined.

* matmul (``matmul_blocks``): halved along M, N or (for a single row or column) K until each
  block's dense copy fits, the blocks' products concatenated (summed over K).
* conv2d (``conv2d``): halved along the batch, then the groups, then the output channels (the weight
  and the output shrink), then the input channels (the partial convolutions summed), until the input,
  weight and output of each piece fit; a piece that is a view of a larger buffer is copied dense
  first, since the conv kernels bind whole buffers.
* reductions (``reduce_rows``, ``arg_reduce_rows``): the dense (rows, n) input read through windows
  of its buffer, a block of whole rows at a time; a row itself over the limit is reduced in pieces
  whose partial results are reduced again (sum, prod, max, min, any, all all combine that way; an
  arg-reduction keeps each piece's best index and picks among the pieces).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import burn
from burn import ShapeError
from burn.backend import conv_out_sizes_padded, matmul_shape

from . import _windows as W
from ._dtypes import ELEM_BYTES
from ._primitive import WgpuTensor, contiguous_strides, numel

Ints = tuple[int, ...]


# ------------------------------------------------------------------ conv2d
def _cut(backend: Any, x: WgpuTensor, dim: int, start: int, stop: int) -> WgpuTensor:
    return backend.slice(x, tuple((start, stop, 1) if d == dim else (0, s, 1) for d, s in enumerate(x.shape)))


def _halves(size: int) -> list[tuple[int, int]]:
    return [(0, size // 2), (size // 2, size)]


def conv2d(
    backend: Any,
    x: WgpuTensor,
    weight: WgpuTensor,
    bias: WgpuTensor | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    run: Callable[..., WgpuTensor],
) -> WgpuTensor | None:
    """The convolution split into pieces that fit one binding, or None where every tensor already
    fits (``run``: the conv of one piece, itself splitting again where a piece is still too big)."""
    limit = backend.pool.max_binding
    eb = ELEM_BYTES[x.dtype]
    n, cin, _, _ = x.shape
    cout = weight.shape[0]
    oh, ow = conv_out_sizes_padded(x.shape[2:], weight.shape[2:], stride, padding, dilation)
    x_bytes, w_bytes, out_bytes = x.numel * eb, weight.numel * eb, n * cout * oh * ow * eb
    bufs = [x.storage.nbytes, weight.storage.nbytes, out_bytes] + ([bias.storage.nbytes] if bias else [])
    if max(bufs) <= limit:
        return None
    rest = (stride, padding, dilation)
    if n > 1 and (x_bytes > limit or out_bytes > limit):
        parts = [run(_cut(backend, x, 0, a, b), weight, bias, *rest, groups) for a, b in _halves(n)]
        return backend.cat(parts, 0)
    if groups > 1 and max(x_bytes, w_bytes, out_bytes) > limit:
        cg, m = cin // groups, cout // groups
        parts = [
            run(
                _cut(backend, x, 1, a * cg, b * cg),
                _cut(backend, weight, 0, a * m, b * m),
                None if bias is None else _cut(backend, bias, 0, a * m, b * m),
                *rest,
                b - a,
            )
            for a, b in _halves(groups)
        ]
        return backend.cat(parts, 1)
    if cout > 1 and (w_bytes > limit or out_bytes > limit):
        parts = [
            run(
                x,
                _cut(backend, weight, 0, a, b),
                None if bias is None else _cut(backend, bias, 0, a, b),
                *rest,
                1,
            )
            for a, b in _halves(cout)
        ]
        return backend.cat(parts, 1)
    if cin > 1 and (x_bytes > limit or w_bytes > limit):  # one image, groups == 1: sum over channel halves
        (a0, b0), (a1, b1) = _halves(cin)
        first = run(_cut(backend, x, 1, a0, b0), _cut(backend, weight, 1, a0, b0), bias, *rest, 1)
        second = run(_cut(backend, x, 1, a1, b1), _cut(backend, weight, 1, a1, b1), None, *rest, 1)
        return backend.binary("add", first, second)
    if max(x_bytes, w_bytes, out_bytes) > limit:
        raise ShapeError(
            f"conv2d of input {x.shape} and weight {weight.shape} on wgpu: one image of one channel "
            f"({x_bytes} bytes in, {out_bytes} out) is over this device's max storage binding of {limit} bytes"
        )
    # every tensor fits but some is a view of a larger buffer: the kernels get dense copies
    x, weight = (t if t.storage.nbytes <= limit else backend._copy(t) for t in (x, weight))
    if bias is not None and bias.storage.nbytes > limit:
        bias = backend._copy(bias)
    return run(x, weight, bias, *rest, groups)


# ------------------------------------------------------------------ matmul
def matmul_blocks(backend: Any, a: WgpuTensor, b: WgpuTensor, limit: int) -> WgpuTensor:
    """a @ b where an operand or the product is larger than one binding (``_windows``): halved
    along M, N or (for a single row or column) K until each block's dense copy fits, the blocks'
    products concatenated (summed over K)."""
    eb = ELEM_BYTES[a.dtype]
    *_, m, k = a.shape
    n = b.shape[-1]
    shape = matmul_shape(a.shape, b.shape)

    def cut(x: WgpuTensor, dim: int, start: int, stop: int) -> WgpuTensor:
        rank = len(x.shape)
        return backend.slice(
            x, tuple((start, stop, 1) if d == rank + dim else (0, s, 1) for d, s in enumerate(x.shape))
        )

    def halves(size: int) -> list[tuple[int, int]]:
        return [(0, size // 2), (size // 2, size)]

    too_big_a = a.numel * eb > limit
    too_big_b = b.numel * eb > limit
    if too_big_a and m > 1 or not (too_big_a or too_big_b) and numel(shape) * eb > limit and m > 1:
        parts = [backend.matmul(cut(a, -2, lo, hi), b) for lo, hi in halves(m)]
        return backend.cat(parts, len(shape) - 2)
    if too_big_b and n > 1 or not (too_big_a or too_big_b) and numel(shape) * eb > limit:
        parts = [backend.matmul(a, cut(b, -1, lo, hi)) for lo, hi in halves(n)]
        return backend.cat(parts, len(shape) - 1)
    if too_big_a or too_big_b:  # a single row of a, or column of b, over the limit: split K
        lo_part, hi_part = (backend.matmul(cut(a, -1, lo, hi), cut(b, -2, lo, hi)) for lo, hi in halves(k))
        return backend.binary("add", lo_part, hi_part)
    # every block fits: dense copies out of the large buffers, then the usual kernels
    a = a if a.storage.nbytes <= limit else backend._copy(a)
    b = b if b.storage.nbytes <= limit else backend._copy(b)
    return backend.matmul(a, b)


# ------------------------------------------------------------------ reductions
def dense_rows(x: WgpuTensor, start: int, stop: int, n: int | None = None) -> WgpuTensor:
    """Rows ``[start, stop)`` of the dense (rows, n) data of ``x``, as a dense 1-d view;
    ``dense_rows(x, rows, n)``: all of them."""
    if n is None:
        start, stop, n = 0, start, stop
    count = (stop - start) * n
    return x.view((count,), contiguous_strides((count,)), x.offset + start * n)


def row_blocks(x: WgpuTensor, rows: int, n: int, limit: int) -> list[tuple[int, int]] | None:
    """Blocks of whole rows whose windows each fit one binding (None: one row is over the limit)."""
    per = (limit - W.ALIGN) // (n * ELEM_BYTES[x.dtype])
    if per < 1:
        return None
    return [(a, min(rows, a + per)) for a in range(0, rows, per)]


def reduce_rows(
    backend: Any,
    op: str,
    x: WgpuTensor,
    rows: int,
    n: int,
    out_dt: burn.DType,
    part_dt: burn.DType,
    each: Callable[[str, WgpuTensor, int, int, burn.DType], WgpuTensor],
) -> WgpuTensor:
    """``op`` over each dense row of ``x`` (rows, n) whose buffer is over the binding limit. ``each``:
    the reduction of rows that fit (``_reduce_rows``), given views it binds through windows."""
    limit = backend.pool.max_binding
    blocks = row_blocks(x, rows, n, limit)
    if blocks is not None:
        parts = [each(op, dense_rows(x, a, b, n), b - a, n, out_dt) for a, b in blocks]
        return parts[0] if len(parts) == 1 else backend.cat(parts, 0)
    piece = (limit - W.ALIGN) // ELEM_BYTES[x.dtype]
    pieces = -(-n // piece)
    out = []
    for r in range(rows):  # each row in pieces, their partial results reduced again
        row = dense_rows(x, r, r + 1, n)
        parts = [
            each(
                op,
                row.view((min(n, a + piece) - a,), (1,), row.offset + a),
                1,
                min(n, a + piece) - a,
                part_dt,
            )
            for a in range(0, n, piece)
        ]
        out.append(each(op, backend.cat(parts, 0), 1, pieces, out_dt))
    return out[0] if rows == 1 else backend.cat(out, 0)


def arg_reduce_rows(
    backend: Any,
    op: str,
    x: WgpuTensor,
    rows: int,
    n: int,
    each: Callable[[str, WgpuTensor, int, int], WgpuTensor],
) -> WgpuTensor:
    """``argmax``/``argmin`` (int32) over each dense row of ``x`` (rows, n) over the binding limit:
    blocks of rows; a row over the limit in pieces, the first piece holding the best value wins."""
    limit = backend.pool.max_binding
    blocks = row_blocks(x, rows, n, limit)
    if blocks is not None:
        parts = [each(op, dense_rows(x, a, b, n), b - a, n) for a, b in blocks]
        return parts[0] if len(parts) == 1 else backend.cat(parts, 0)
    piece = (limit - W.ALIGN) // ELEM_BYTES[x.dtype]
    kind = op.removeprefix("arg")
    out = []
    for r in range(rows):
        row = dense_rows(x, r, r + 1, n)
        views = [row.view((min(n, a + piece) - a,), (1,), row.offset + a) for a in range(0, n, piece)]
        index = backend.cat([each(op, v, 1, v.shape[0]) for v in views], 0)
        values = backend.cat([backend.reduce(kind, backend._copy(v), (0,), True) for v in views], 0)
        best = each(op, values, 1, len(views))  # (1,): the first piece holding the best value
        within = backend.gather(index, 0, best)
        out.append(backend.binary("add", within, backend.binary("mul", best, piece)))
    return out[0] if rows == 1 else backend.cat(out, 0)
