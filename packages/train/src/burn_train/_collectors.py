"""The metrics-basic collectors: CPU use and CPU memory through psutil (imported when built).

A collector is an object with ``name``, ``collect() -> dict[str, float]`` and ``close()``; plugins
(metrics-cuda, metrics-web) provide theirs through the same ``burn_register_metric_collectors`` hook.
"""

from __future__ import annotations

import math
import time
from importlib.util import find_spec

GIB = float(2**30)
PSUTIL_MISSING = "psutil is not installed (pip install 'burn-core[metrics-basic]')"


def psutil_available() -> tuple[bool, str]:
    """``(True, "")`` when psutil can be imported, else ``(False, reason)``."""
    try:
        found = find_spec("psutil") is not None
    except (ImportError, ValueError):
        found = False
    return (True, "") if found else (False, PSUTIL_MISSING)


class CpuUseCollector:
    """System-wide CPU utilisation in percent between two samples (psutil counters, never sleeps).

    Each collector keeps its own baseline (psutil's ``cpu_percent(None)`` shares one per process, so
    two users would reset each other). A window shorter than ``min_window`` seconds gives NaN.
    """

    name = "cpu-use"
    min_window = 0.05

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self._since = time.monotonic()
        self._last = self._busy_total()

    def _busy_total(self) -> tuple[float, float]:
        times = self._psutil.cpu_times()
        total = sum(times)
        idle = times.idle + getattr(times, "iowait", 0.0)
        # guest time is already counted in user time on Linux
        total -= getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
        return total - idle, total

    def collect(self) -> dict[str, float]:
        now = time.monotonic()
        if now - self._since < self.min_window:
            return {"CPU Usage": math.nan}
        busy, total = self._busy_total()
        d_busy, d_total = busy - self._last[0], total - self._last[1]
        if d_total <= 0:
            return {"CPU Usage": math.nan}  # the counters have not ticked yet
        self._since, self._last = now, (busy, total)
        return {"CPU Usage": min(100.0, max(0.0, 100.0 * d_busy / d_total))}

    def close(self) -> None:
        return None


class CpuMemoryCollector:
    """System memory in use and in total, in GiB (2**30 bytes, psutil)."""

    name = "cpu-memory"

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil

    def collect(self) -> dict[str, float]:
        mem = self._psutil.virtual_memory()
        return {"CPU Memory": (mem.total - mem.available) / GIB, "CPU Memory Total": mem.total / GIB}

    def close(self) -> None:
        return None
