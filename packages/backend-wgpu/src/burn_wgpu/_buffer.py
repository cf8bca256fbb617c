"""A GPU buffer pool: buffers are reused by power-of-two size class, so steady-state training
allocates nothing per op.

A buffer comes back to the pool when the last tensor viewing it is garbage-collected
(``weakref.finalize`` on its ``Storage``). Until the commands recorded so far are submitted it sits in
``_pending``: a later *kernel* may reuse it right away (dispatches in one command encoder run in
order, so the new writer runs after every earlier reader), but a host upload may not, because
``queue.write_buffer`` runs before the whole pending encoder. After the submit it joins ``_free``.
"""

from __future__ import annotations

import weakref
from typing import Any

from burn import ShapeError
from burn.backend import PeakTracker

# wgpu-py objects: wgpu ships no type information, so these are Any; the names say what they hold
GPUBuffer = Any
GPUDevice = Any

_MIN_CLASS = 256  # bytes; also keeps every binding a multiple of 4 and >= 4


def size_class(nbytes: int, limit: int, max_buffer: int | None = None) -> int:
    """The power-of-two class of ``nbytes`` (at least 256 B), capped at the binding limit; a size over
    that limit (a tensor bound in windows, ``_windows``) capped at ``max_buffer``."""
    size = _MIN_CLASS
    while size < nbytes:
        size *= 2
    if nbytes <= limit:
        return min(size, limit)
    return size if max_buffer is None else min(size, max(max_buffer, nbytes))


class Storage:
    """One pooled GPU buffer shared by every view of it."""

    __slots__ = ("buffer", "nbytes", "__weakref__")

    def __init__(self, buffer: GPUBuffer, nbytes: int) -> None:
        self.buffer = buffer
        self.nbytes = nbytes


class BufferPool:
    """Storage buffers by size class. ``stats`` counts allocations and reuses (tests read it)."""

    def __init__(self, device: GPUDevice, max_binding: int, max_buffer: int) -> None:
        import wgpu

        self._device = device
        self._usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.max_binding = max_binding
        self.max_buffer = max_buffer
        # the largest tensor: a buffer's limit (kernels bind windows of a larger-than-binding buffer)
        self.tensor_limit = max_buffer
        self._free: dict[int, list[GPUBuffer]] = {}
        self._pending: dict[int, list[GPUBuffer]] = {}
        self.stats = {"allocated": 0, "reused": 0, "bytes_allocated": 0}
        # bytes of buffers tensors hold, and of every buffer the pool has (``burn.memory_stats``)
        self.in_use = PeakTracker()
        self.reserved = PeakTracker()

    def check_size(self, op: str, nbytes: int, shape: tuple[int, ...]) -> None:
        limit = self.tensor_limit
        if nbytes > limit:
            what = "storage binding" if limit <= self.max_binding else "buffer size"
            raise ShapeError(
                f"{op}: a tensor of shape {shape} needs {nbytes} bytes, over this wgpu device's "
                f"max {what} of {limit} bytes; split it (narrow/chunk) or use a backend "
                "without that limit"
            )

    def storage(
        self, nbytes: int, op: str = "alloc", shape: tuple[int, ...] = (), upload: bool = False
    ) -> Storage:
        """A Storage of at least ``nbytes`` bytes, reused from the pool when one is free.
        ``upload``: the buffer will be written from the host (only fully released buffers qualify)."""
        self.check_size(op, nbytes, shape)
        cls = size_class(max(nbytes, 4), min(self.max_binding, self.max_buffer), self.max_buffer)
        free = self._free.get(cls)
        if not upload and self._pending.get(cls):
            free = self._pending[cls]
        if free:
            buf = free.pop()
            self.stats["reused"] += 1
        else:
            buf = self._device.create_buffer(size=cls, usage=self._usage)
            self.stats["allocated"] += 1
            self.stats["bytes_allocated"] += cls
            self.reserved.grow(cls)
        self.in_use.grow(cls)
        st = Storage(buf, cls)
        weakref.finalize(st, self._release, cls, buf)
        return st

    def _release(self, cls: int, buf: GPUBuffer) -> None:
        self.in_use.shrink(cls)
        self._pending.setdefault(cls, []).append(buf)

    def on_submit(self) -> None:
        """Commands recorded so far are submitted: buffers released before now may be uploaded to."""
        for cls, bufs in self._pending.items():
            self._free.setdefault(cls, []).extend(bufs)
        self._pending = {}

    def free_bytes(self) -> int:
        return sum(cls * len(bufs) for cls, bufs in self._free.items())

    def trim(self) -> None:
        """Destroy every free buffer (frees device memory; the pool refills on demand). The executor's
        bind-group cache keys on buffer identity: call ``Executor.trim`` rather than this directly."""
        for cls, bufs in self._free.items():
            for buf in bufs:
                buf.destroy()
            self.reserved.shrink(cls * len(bufs))
        self._free.clear()
