"""Timing recorded GPU work for the autotuner: timestamp queries where the device has them.

``GpuTimer`` brackets each timed call with timestamps (an empty compute pass that writes one as it
begins, ``Executor.timestamp``), records every repetition into the same command stream, resolves the
queries once and reads them back with one map: ``reps`` runs cost one sync, and the figure is the
device's time between the brackets (the median over the repetitions), free of submit and readback
latency. The figures are read as nanoseconds: the tick period is 1 ns on NVIDIA's Vulkan driver and
on lavapipe, and wgpu-py exposes no period to correct by elsewhere; a device with another period
scales every candidate alike, so the autotuner's choice stands (only the seconds it caches are off).
A reading that cannot be right (not increasing, or longer than the wall time around it) makes the
call fall back to host timing.

``timer_for(backend)`` picks it when the device was created with ``timestamp-query`` and
``BURN_WGPU_TIMER`` is not ``host``; otherwise the host timer (``burn.autotune.median_timer``: wall
time of synced runs).
"""

from __future__ import annotations

import os
import statistics
import struct
import time
from collections.abc import Callable
from typing import Any

from burn.autotune import median_timer

Timer = Callable[[Callable[[], Any]], float]


class GpuTimer:
    """A timer over timestamp queries (see the module docstring). ``last_source`` says what the last
    call measured with: ``"gpu"`` or ``"host"`` (after a fallback)."""

    def __init__(self, backend: Any, warmup: int = 1, reps: int = 5) -> None:
        import wgpu

        if reps < 1 or warmup < 0:
            raise ValueError(f"GpuTimer: reps must be >= 1 and warmup >= 0, got reps={reps}, warmup={warmup}")
        self.backend = backend
        self.warmup = warmup
        self.reps = reps
        self._count = 2 * reps
        device = backend.ctx.device
        self._queries = device.create_query_set(type=wgpu.QueryType.timestamp, count=self._count)
        self._resolved = device.create_buffer(
            size=max(256, 8 * self._count),
            usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC,
        )
        self._host = median_timer(backend.sync, warmup=0, reps=reps)
        self._busy = False
        self.last_source = "gpu"

    def durations(self, fn: Callable[[], Any]) -> list[float]:
        """Device seconds of each of ``reps`` calls of ``fn`` (after the warm-up calls)."""
        if self._busy:  # fn tunes a family of its own (conv through matmul): its own query set
            return GpuTimer(self.backend, self.warmup, self.reps).durations(fn)
        self._busy = True
        try:
            return self._durations(fn)
        finally:
            self._busy = False

    def _durations(self, fn: Callable[[], Any]) -> list[float]:
        ex = self.backend.ex
        for _ in range(self.warmup):
            fn()
        self.backend.sync()
        start = time.perf_counter()
        for i in range(self.reps):
            ex.timestamp(self._queries, 2 * i)
            fn()
            ex.timestamp(self._queries, 2 * i + 1)
        ex.resolve_queries(self._queries, self._count, self._resolved)
        (blob,) = ex.read([(self._resolved, 0, 8 * self._count)])
        wall = time.perf_counter() - start
        ticks = struct.unpack(f"<{self._count}Q", blob)
        spans = [(ticks[2 * i + 1] - ticks[2 * i]) * 1e-9 for i in range(self.reps)]
        if any(s < 0 for s in spans) or sum(spans) > wall * 1.5 + 1e-3:
            raise ValueError(f"timestamps out of range: {spans} over {wall:.6f} s of wall time")
        return spans

    def __call__(self, fn: Callable[[], Any]) -> float:
        try:
            spans = self.durations(fn)
        except ValueError:
            self.last_source = "host"
            return self._host(fn)
        self.last_source = "gpu"
        return statistics.median(spans)


def timer_for(backend: Any, warmup: int = 1, reps: int = 5) -> Timer:
    """The best timer this backend's device offers (see the module docstring)."""
    choice = os.environ.get("BURN_WGPU_TIMER", "").strip().lower()
    if choice not in ("", "gpu", "host"):
        raise ValueError(f"BURN_WGPU_TIMER: expected 'gpu' or 'host', got {choice!r}")
    if choice != "host" and "timestamp-query" in backend.ctx.features:
        return GpuTimer(backend, warmup, reps)
    return median_timer(backend.sync, warmup=warmup, reps=reps)
