"""``burn.profile(device)``: what a block of code made the device do, counted, not timed.

The counts come from the backend's ``counters()`` (cumulative; the block sees their growth):
``kernels`` launched or dispatched, ``submits`` (batches handed to the GPU queue), ``syncs`` (host waits
for the device: reads, transactions, ``sync()``) and ``fused`` (generated kernels that fuse several ops).
A backend that counts nothing reports zeros. Fusion is then visible and testable without timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

COUNTERS = ("kernels", "submits", "syncs", "fused")


@dataclass
class Profile:
    """Counts of one ``burn.profile`` block (final when the block ends, live inside it)."""

    device: Any
    kernels: int = 0
    submits: int = 0
    syncs: int = 0
    fused: int = 0
    _start: dict[str, int] = field(default_factory=dict, repr=False)

    def _update(self) -> None:
        now = _counters(self.device)
        for name in COUNTERS:
            setattr(self, name, now.get(name, 0) - self._start.get(name, 0))

    def as_dict(self) -> dict[str, int]:
        """The counts as a plain dict (for JSON benchmarks)."""
        self._update()
        return {name: getattr(self, name) for name in COUNTERS}


def _counters(device: Any) -> dict[str, int]:
    return dict(device.backend.counters())


@contextmanager
def profile(device: Any = None) -> Iterator[Profile]:
    """Count the kernels, submits, host syncs and fused kernels the block makes ``device`` do.

    >>> with burn.profile("cpu") as p:
    ...     total = (burn.ones(4) * 2).sum().item()
    >>> p.as_dict()  # the numpy backend launches no kernels: nothing to count
    {'kernels': 0, 'submits': 0, 'syncs': 0, 'fused': 0}
    """
    from ._device import default_device
    from ._device import device as as_device

    dev = default_device() if device is None else as_device(device)
    result = Profile(dev)
    result._start = _counters(dev)
    try:
        yield result
    finally:
        result._update()
