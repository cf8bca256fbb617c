"""``WgpuTensor``: the wgpu backend's primitive, a strided view into a pooled GPU buffer.

reshape (of a contiguous view), permute, expand and slice return views that share the buffer (zero
copy); kernels read strided inputs directly, and the few that need a dense row layout materialise
one with a strided-copy kernel (``contiguous``).
"""

from __future__ import annotations

from burn import DType

from ._buffer import GPUBuffer, Storage
from ._dtypes import ELEM_BYTES


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class WgpuTensor:
    """shape, strides and offset are in elements; ``dtype`` is the burn dtype (bool is stored as u32)."""

    __slots__ = ("storage", "shape", "strides", "offset", "dtype")

    def __init__(
        self,
        storage: Storage,
        shape: tuple[int, ...],
        dtype: DType,
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
    ) -> None:
        self.storage = storage
        self.shape = shape
        self.dtype = dtype
        self.strides = contiguous_strides(shape) if strides is None else strides
        self.offset = offset

    @property
    def buffer(self) -> GPUBuffer:
        return self.storage.buffer

    @property
    def numel(self) -> int:
        return numel(self.shape)

    @property
    def is_contiguous(self) -> bool:
        """Dense row-major layout (size-1 dims may carry any stride)."""
        acc = 1
        for s, st in zip(reversed(self.shape), reversed(self.strides)):
            if s != 1 and st != acc:
                return False
            acc *= s
        return True

    @property
    def byte_offset(self) -> int:
        return self.offset * ELEM_BYTES[self.dtype]

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> WgpuTensor:
        return WgpuTensor(self.storage, shape, self.dtype, strides, offset)

    def __repr__(self) -> str:
        return f"WgpuTensor(shape={self.shape}, dtype={self.dtype.name}, strides={self.strides}, offset={self.offset})"
