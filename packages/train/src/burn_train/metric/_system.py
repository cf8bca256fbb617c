"""System metrics from plugin collectors: CpuUse, CpuMemory, and any collector by name.

They ignore the item: on each update (on the processor, off the training thread) they sample their
collector at most every ``interval`` seconds and show the last sample; the epoch value is the mean
of the samples taken during the epoch.
"""

from __future__ import annotations

import math
import time
from typing import Any

from .._events import MetricMetadata
from ._base import Metric


def collector_spec(name: str) -> Any:
    """The registered ``MetricCollectorSpec`` called ``name`` (KeyError listing the known ones)."""
    from burn.plugins import registry

    specs = registry().collectors
    if name not in specs:
        raise KeyError(f"no metric collector {name!r}; registered: {', '.join(sorted(specs)) or 'none'}")
    return specs[name]


def available_collectors() -> list[tuple[str, bool, str]]:
    """``(name, available, reason)`` of every registered collector."""
    from burn.plugins import registry

    out = []
    for name, spec in registry().collectors.items():
        try:
            ok, reason = spec.is_available()
        except Exception as exc:  # a crashing probe is a reason, not a crash
            ok, reason = False, f"availability check failed: {type(exc).__name__}: {exc}"
        out.append((name, ok, reason))
    return out


class CollectorMetric(Metric):
    """A numeric metric fed by the plugin collector ``collector`` (one of its keys, the first by default)."""

    higher_is_better = False

    def __init__(self, collector: str, key: str | None = None, interval: float = 1.0, unit: str = "") -> None:
        self.collector_name = collector
        self.key = key
        self.interval = float(interval)
        self.unit = unit
        self.name = key or collector
        self._collector: Any = None
        # True once this process saw the collector available (the Learner checks before fit): the
        # probe is not repeated when the collector is built (NVML's costs a driver init and shutdown)
        self.known_available = False
        self._sampled_at = -math.inf
        self._sample = math.nan
        super().__init__()

    def prepare(self) -> None:
        """Build (and prime) the collector before training starts, so the first sample is meaningful."""
        self._build()

    def check_available(self) -> tuple[bool, str]:
        """Whether the collector can run here; builds nothing."""
        try:
            spec = collector_spec(self.collector_name)
        except KeyError as exc:
            return False, str(exc.args[0])
        ok, reason = spec.is_available()
        self.known_available = bool(ok)
        return ok, reason

    def _build(self) -> Any:
        if self._collector is None:
            spec = collector_spec(self.collector_name)
            if not self.known_available:
                ok, reason = spec.is_available()
                if not ok:
                    raise RuntimeError(f"metric collector {self.collector_name!r} is unavailable: {reason}")
            self._collector = spec.factory()
        return self._collector

    def _read(self, values: dict[str, float]) -> float:
        if self.key is None:
            self.key = next(iter(values))
            self.name = self.key
        return float(values[self.key])

    def _reset(self) -> None:
        self._sum = 0.0
        self._count = 0

    def _update(self, item: Any, metadata: MetricMetadata) -> float:
        now = time.monotonic()
        if now - self._sampled_at >= self.interval:
            sample = self._read(self._build().collect())
            if not math.isnan(sample):  # a collector may not have a measurement yet
                self._sampled_at, self._sample = now, sample
                self._sum += sample
                self._count += 1
        elif self._count == 0 and not math.isnan(self._sample):
            self._sum, self._count = self._sample, 1  # a new epoch starts from the last sample
        return self._sample

    def _epoch(self) -> float:
        return self._sum / self._count if self._count else math.nan

    def close(self) -> None:
        if self._collector is not None and hasattr(self._collector, "close"):
            self._collector.close()
        self._collector = None


class CpuUse(CollectorMetric):
    """System CPU utilisation in percent (metrics-basic collector ``cpu-use``, needs psutil)."""

    def __init__(self, interval: float = 1.0) -> None:
        super().__init__("cpu-use", "CPU Usage", interval, unit="%")


class CpuMemory(CollectorMetric):
    """System memory in use in GiB (2**30 bytes), shown as ``used / total GiB`` (collector ``cpu-memory``)."""

    def __init__(self, interval: float = 1.0) -> None:
        super().__init__("cpu-memory", "CPU Memory", interval, unit="GiB")

    def _read(self, values: dict[str, float]) -> float:
        _TOTALS["CPU Memory"] = float(values.get("CPU Memory Total", math.nan))
        return super()._read(values)

    def format_value(self, value: float) -> str:
        total = _TOTALS.get("CPU Memory", math.nan)
        if math.isnan(value):
            return "n/a"
        return f"{value:.2f} / {total:.2f} GiB" if not math.isnan(total) else f"{value:.2f} GiB"

    def format(self, value: float, epoch: float) -> str:
        # the total once: "0.51 / 25.28 GiB (epoch 0.50 GiB)" fits the dashboard's text panel
        epoch_text = "n/a" if math.isnan(epoch) else f"{epoch:.2f} GiB"
        return f"{self.format_value(value)} (epoch {epoch_text})"


_TOTALS: dict[str, float] = {}  # the machine's total memory, shared by every CpuMemory instance
