"""``burn.memory_stats(device)``, ``burn.reset_peak_memory_stats(device)``, ``burn.empty_cache(device)``:
what a device's memory holds, as PyTorch's ``torch.cuda.memory_allocated`` / ``max_memory_allocated`` /
``memory_reserved`` / ``empty_cache``, for every backend.

Each backend answers through ``Backend.memory_stats()`` (and ``reset_peak_memory()``,
``empty_cache()``); decorators (autodiff, fusion) pass the question to the backend they wrap. What is
measured depends on the backend and is named in ``MemoryStats.source``: burn-cuda its CuPy memory pool
plus the private pools its CUDA graphs keep, burn-wgpu its buffer pool, the numpy backend the process's
resident memory (host memory: numpy has no allocator of its own to ask).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._device import DeviceLike


@dataclass(frozen=True)
class MemoryStats:
    """A device's memory in bytes. ``allocated``: held by live tensors (and the buffers the backend keeps
    for them); ``reserved``: taken from the device by the backend (allocated plus cached blocks ready for
    reuse); ``peak_*``: the largest values since the backend started or since the last
    ``burn.reset_peak_memory_stats``; ``source``: what was measured; ``extra``: backend-specific figures
    (``graph_pools`` on cuda, ``device_total`` where the driver says).

    >>> stats = burn.memory_stats("cpu")
    >>> stats.peak_allocated >= stats.allocated > 0, stats.source
    (True, 'process resident memory')
    """

    allocated: int
    reserved: int
    peak_allocated: int
    peak_reserved: int
    source: str
    extra: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The figures as a plain dict (for JSON benchmarks).

        >>> sorted(burn.memory_stats("cpu").as_dict())[:3]
        ['allocated', 'extra', 'peak_allocated']
        """
        return {
            "allocated": self.allocated,
            "reserved": self.reserved,
            "peak_allocated": self.peak_allocated,
            "peak_reserved": self.peak_reserved,
            "source": self.source,
            "extra": dict(self.extra),
        }


class PeakTracker:
    """Current/peak bookkeeping for a backend that counts its own allocations: ``grow``/``shrink`` on
    every allocation and release (two integer updates), ``reset`` for ``reset_peak_memory``.

    >>> t = burn.backend.PeakTracker()
    >>> t.grow(100); t.shrink(60); t.grow(10)
    >>> t.current, t.peak
    (50, 100)
    """

    __slots__ = ("current", "peak")

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0

    def grow(self, nbytes: int) -> None:
        self.current += nbytes
        if self.current > self.peak:
            self.peak = self.current

    def shrink(self, nbytes: int) -> None:
        self.current -= nbytes

    def reset(self) -> None:
        self.peak = self.current


def _chain(device: DeviceLike) -> Iterator[Any]:
    """The device's backend and every backend it decorates, outermost first."""
    from ._device import default_device
    from ._device import device as as_device

    b: Any = (default_device() if device is None else as_device(device)).backend
    seen = set()
    while b is not None and id(b) not in seen:
        seen.add(id(b))
        yield b
        b = getattr(b, "inner", None)


def memory_stats(device: DeviceLike = None) -> MemoryStats:
    """The device's memory figures (``MemoryStats``): allocated, reserved and their peaks, in bytes.

    >>> before = burn.memory_stats("cpu").allocated
    >>> isinstance(before, int)
    True
    """
    chain = list(_chain(device))
    for b in chain:
        stats = b.memory_stats()
        if stats is not None:
            return stats
    raise NotImplementedError(
        f"memory_stats: the {type(chain[-1]).__name__} backend reports no memory figures"
    )


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Start the device's ``peak_allocated`` / ``peak_reserved`` again from the current values.

    >>> burn.reset_peak_memory_stats("cpu")
    """
    for b in _chain(device):
        b.reset_peak_memory()


def empty_cache(device: DeviceLike = None) -> None:
    """Give cached device memory no tensor holds back to the driver (pooled buffers, kept constants).
    Tensors stay valid; later ops allocate again as needed.

    >>> burn.empty_cache("cpu")
    """
    for b in _chain(device):
        b.empty_cache()


def process_memory() -> tuple[int, int]:
    """(resident bytes now, the process's peak resident bytes) of this process, from ``/proc`` where it
    exists, else ``psutil``, else ``resource`` (peak for both)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak *= 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        import os

        return pages * os.sysconf("SC_PAGE_SIZE"), peak
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return int(psutil.Process().memory_info().rss), peak
    except ImportError:
        return peak, peak
