"""``burn.memory_stats(device)``, ``burn.reset_peak_memory_stats(device)``, ``burn.empty_cache(device)``:
what a device's memory holds, as PyTorch's ``torch.cuda.memory_allocated`` / ``max_memory_allocated`` /
``memory_reserved`` / ``empty_cache``, for every backend.

Each backend answers through ``Backend.memory_stats()`` (and ``reset_peak_memory()``,
``empty_cache()``); decorators (autodiff, fusion) pass the question to the backend they wrap (fusion
also drops its own caches on ``empty_cache``). What is
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


_FIELDS = ("allocated", "reserved", "peak_allocated", "peak_reserved", "source", "extra")


@dataclass(frozen=True)
class MemoryStats(Mapping[str, Any]):
    """A device's memory in bytes, read as attributes or as a mapping (``stats["peak_allocated"]``). ``allocated``: held by live tensors (and the buffers the backend keeps
    for them); ``reserved``: taken from the device by the backend (allocated plus cached blocks ready for
    reuse); ``peak_*``: the largest values since the backend started or since the last
    ``burn.reset_peak_memory_stats``; ``source``: what was measured; ``extra``: backend-specific figures
    (``graph_pools`` on cuda, ``device_total`` where the driver says).

    >>> stats = burn.memory_stats("cpu")
    >>> stats.peak_allocated >= stats.allocated > 0, stats["source"]
    (True, 'process resident memory')
    """

    allocated: int
    reserved: int
    peak_allocated: int
    peak_reserved: int
    source: str
    extra: Mapping[str, int] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        if key not in _FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_FIELDS)

    def __len__(self) -> int:
        return len(_FIELDS)

    def as_dict(self) -> dict[str, Any]:
        """The figures as a plain dict (for JSON benchmarks).

        >>> sorted(burn.memory_stats("cpu").as_dict())[:3]
        ['allocated', 'extra', 'peak_allocated']
        """
        return {k: dict(self.extra) if k == "extra" else self[k] for k in _FIELDS}


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


def _backend(device: DeviceLike) -> Any:
    from ._device import default_device
    from ._device import device as as_device

    return (default_device() if device is None else as_device(device)).backend


def memory_stats(device: DeviceLike = None) -> MemoryStats:
    """The device's memory figures (``MemoryStats``): allocated, reserved and their peaks, in bytes.

    >>> before = burn.memory_stats("cpu").allocated
    >>> isinstance(before, int)
    True
    """
    b = _backend(device)
    stats: MemoryStats | None = b.memory_stats()
    if stats is None:
        while getattr(b, "inner", None) is not None:  # name the backend under the decorators
            b = b.inner
        raise NotImplementedError(f"memory_stats: the {type(b).__name__} backend reports no memory figures")
    return stats


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Start the device's ``peak_allocated`` / ``peak_reserved`` again from the current values.

    >>> burn.reset_peak_memory_stats("cpu")
    """
    _backend(device).reset_peak_memory()


def empty_cache(device: DeviceLike = None) -> None:
    """Give cached device memory no tensor holds back to the driver (pooled buffers, kept constants,
    fused programs and their graphs). Tensors stay valid; later ops allocate again as needed.

    >>> burn.empty_cache("cpu")
    """
    _backend(device).empty_cache()


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
