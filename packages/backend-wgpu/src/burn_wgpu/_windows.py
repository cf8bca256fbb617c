"""Tensors larger than one storage binding: bound as windows of their buffer, ops split into regions.

A buffer may be larger than a binding may be (lavapipe: 2 GiB buffers, 128 MiB bindings; WebGPU's
defaults: 256 MiB and 128 MiB), so the pool makes a tensor's buffer up to the buffer limit, and:

* a kernel binds the window of the buffer that holds every element its view reads (``window``: the
  start aligned down to 256 bytes, WebGPU's ``minStorageBufferOffsetAlignment``), and reads the view at
  element offsets counted from the window's start. A buffer within the limit is bound whole, as before.
* an op whose views span more than one binding runs once per region of its output (``regions``: the
  output halved along the dim that spreads the offending view most, until every view fits): element-wise
  kernels (``_elementwise.run``) write each region of the output in place; matmul multiplies row or
  column blocks copied dense and concatenates them; conv2d splits along the batch, groups or channels;
  reductions read blocks of rows through windows (all three in ``_split``).

Kernels of other families bind whole buffers and refuse one over the limit with a ``ShapeError``
(``Executor.new_bind_group``).
"""

from __future__ import annotations

from burn import ShapeError

from ._buffer import GPUBuffer
from ._dtypes import ELEM_BYTES
from ._primitive import WgpuTensor

ALIGN = 256  # WebGPU's default minStorageBufferOffsetAlignment: every window starts on a multiple


class BufferRange:
    """The bytes ``[offset, offset + size)`` of ``buffer``, bound instead of the whole buffer."""

    __slots__ = ("buffer", "offset", "size")

    def __init__(self, buffer: GPUBuffer, offset: int, size: int) -> None:
        self.buffer = buffer
        self.offset = offset
        self.size = size


def span(t: WgpuTensor) -> tuple[int, int]:
    """The first element the view reads and one past its last (strides may be negative or 0)."""
    lo = hi = t.offset
    if t.numel == 0:
        return lo, lo
    for size, stride in zip(t.shape, t.strides):
        if stride >= 0:
            hi += (size - 1) * stride
        else:
            lo += (size - 1) * stride
    return lo, hi + 1


def _bounds(t: WgpuTensor) -> tuple[int, int]:
    """(start, end) in bytes of the window that holds ``t``'s view."""
    eb = ELEM_BYTES[t.dtype]
    lo, hi = span(t)
    start = lo * eb // ALIGN * ALIGN
    end = min(t.storage.nbytes, -(-hi * eb // 4) * 4)  # a binding's size is a multiple of 4
    return start, max(end, start + 4)


def fits(t: WgpuTensor, limit: int) -> bool:
    """Whether a kernel can bind what ``t``'s view reads: the whole buffer, or a window of it."""
    if t.storage.nbytes <= limit:
        return True
    start, end = _bounds(t)
    return end - start <= limit


def window(t: WgpuTensor, limit: int) -> tuple[GPUBuffer | BufferRange, int]:
    """(what to bind, the view's element offset within it): the buffer itself while it is within the
    binding limit, else the window of it that holds the view."""
    if t.storage.nbytes <= limit:
        return t.buffer, t.offset
    start, end = _bounds(t)
    if end - start > limit:
        raise ShapeError(
            f"a view of shape {t.shape} spans {end - start} bytes, over this wgpu device's max storage "
            f"binding of {limit} bytes (the op should have split it)"
        )
    return BufferRange(t.buffer, start, end - start), t.offset - start // ELEM_BYTES[t.dtype]


def sliced(t: WgpuTensor, region: tuple[tuple[int, int], ...]) -> WgpuTensor:
    """The view of ``t`` (of the region's rank) over ``region``'s (start, stop) per dim."""
    offset = t.offset + sum(start * st for (start, _), st in zip(region, t.strides))
    return t.view(tuple(stop - start for start, stop in region), t.strides, offset)


def regions(shape: tuple[int, ...], views: list[WgpuTensor], limit: int) -> list[tuple[tuple[int, int], ...]]:
    """Regions of ``shape`` (each a (start, stop) per dim) that cover it, over each of which every view
    (all of rank ``len(shape)``, broadcast dims with stride 0) fits one binding."""
    out: list[tuple[tuple[int, int], ...]] = []
    pending = [tuple((0, s) for s in shape)]
    while pending:
        region = pending.pop()
        bad = next((v for v in (sliced(t, region) for t in views) if not fits(v, limit)), None)
        if bad is None:
            out.append(region)
            continue
        dims = [d for d, (a, b) in enumerate(region) if b - a > 1]
        if not dims:
            raise ShapeError(f"one element of a {bad.dtype.name} tensor cannot be bound within {limit} bytes")
        d = max(dims, key=lambda k: (region[k][1] - region[k][0] - 1) * abs(bad.strides[k]))
        a, b = region[d]
        mid = (a + b) // 2
        pending.append(region[:d] + ((mid, b),) + region[d + 1 :])
        pending.append(region[:d] + ((a, mid),) + region[d + 1 :])
    return out


def broadcast_view(t: WgpuTensor, shape: tuple[int, ...]) -> WgpuTensor:
    """``t`` seen at ``shape`` (right-aligned; stretched and added dims with stride 0)."""
    from ._elementwise import broadcast_strides

    return WgpuTensor(t.storage, shape, t.dtype, broadcast_strides(t, shape), t.offset)
