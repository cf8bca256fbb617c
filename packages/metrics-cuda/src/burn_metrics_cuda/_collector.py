"""``CudaCollector``: utilisation, memory, temperature, power and energy of every visible NVIDIA GPU.

Each query fails soft: a metric the GPU or driver does not support (NVML NotSupported) is left out of
that GPU's sample and its reason is kept in ``collector.unsupported``; the others still report. Keys are
``"GPU <i> <Metric>"``; units: Utilization and Memory Utilization in %, Memory Used/Total in GB (1e9
bytes), Temperature in °C, Power in W, Energy in J since the collector started.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from . import _nvml

METRICS = (
    "Utilization",
    "Memory Utilization",
    "Memory Used",
    "Memory Total",
    "Temperature",
    "Power",
    "Energy",
)


def _utilization(nvml: Any, h: Any) -> dict[str, float]:
    u = nvml.nvmlDeviceGetUtilizationRates(h)
    return {"Utilization": float(u.gpu), "Memory Utilization": float(u.memory)}


def _memory(nvml: Any, h: Any) -> dict[str, float]:
    m = nvml.nvmlDeviceGetMemoryInfo(h)
    return {"Memory Used": m.used / 1e9, "Memory Total": m.total / 1e9}


def _temperature(nvml: Any, h: Any) -> dict[str, float]:
    return {"Temperature": float(nvml.nvmlDeviceGetTemperature(h, getattr(nvml, "NVML_TEMPERATURE_GPU", 0)))}


def _power(nvml: Any, h: Any) -> dict[str, float]:
    return {"Power": nvml.nvmlDeviceGetPowerUsage(h) / 1000.0}  # mW -> W


# query name -> function returning some of METRICS; one failing query never hides the others
QUERIES: dict[str, Callable[[Any, Any], dict[str, float]]] = {
    "utilization": _utilization,
    "memory": _memory,
    "temperature": _temperature,
    "power": _power,
}


class _Energy:
    """Energy of one GPU since start: the driver's counter (mJ) minus its value at start, or, where the
    counter is NotSupported, the power draw integrated over time (trapezoids between samples)."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml, self.handle = nvml, handle
        self.mode = "counter"
        self.reason = ""
        try:
            self.start_mj = float(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
        except Exception as exc:
            self.mode, self.reason = "integrated", f"energy counter unavailable ({exc}); integrating power"
            self.start_mj = 0.0
        self.joules = 0.0
        self._last: tuple[float, float] | None = None  # (time, watts) of the previous power sample

    def read(self, watts: float | None, now: float) -> float | None:
        if self.mode == "counter":
            try:
                return (
                    float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)) - self.start_mj
                ) / 1e3
            except Exception as exc:  # the counter stopped answering: integrate from here on
                self.mode, self.reason = "integrated", f"energy counter failed ({exc}); integrating power"
                self.joules = 0.0
        if watts is None:
            return None if self._last is None else self.joules
        if self._last is not None:
            t0, w0 = self._last
            self.joules += 0.5 * (w0 + watts) * (now - t0)
        self._last = (now, watts)
        return self.joules


class CudaCollector:
    """NVML collector for every visible GPU (``name = "cuda"``); ``collect() -> {"GPU 0 Power": 71.3, ...}``.

    With ``interval`` set, a ``Sampler`` thread queries NVML every ``interval`` seconds and ``collect()``
    returns its latest sample (cheap, never blocks on the driver); with ``interval=None`` each
    ``collect()`` queries NVML itself. Thread-safe either way.
    """

    name = "cuda"

    def __init__(self, interval: float | None = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._nvml, self.device_count = _nvml.init()  # raises CollectorUnavailable with the reason
        self._clock = clock
        self._lock = threading.Lock()
        self.unsupported: dict[str, str] = {}
        self.handles = []
        self.names: list[str] = []
        try:
            for i in range(self.device_count):
                h = self._nvml.nvmlDeviceGetHandleByIndex(i)
                self.handles.append(h)
                self.names.append(self._device_name(h, i))
            self._energy = [_Energy(self._nvml, h) for h in self.handles]
        except Exception:
            _nvml.shutdown(self._nvml)
            raise
        for i, e in enumerate(self._energy):
            if e.reason:
                self.unsupported[f"GPU {i} Energy"] = e.reason
        self._closed = False
        self._sampler = None
        if interval is not None:
            from ._sampler import Sampler

            self._sampler = Sampler(self.sample, interval)
            self._sampler.start()

    def _device_name(self, h: Any, i: int) -> str:
        try:
            name = self._nvml.nvmlDeviceGetName(h)
            return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:
            return f"GPU {i}"

    def sample(self) -> dict[str, float]:
        """Query NVML now for every GPU (the sampler thread calls this)."""
        with self._lock:
            if self._closed:
                return {}
            out: dict[str, float] = {}
            now = self._clock()
            for i, h in enumerate(self.handles):
                values: dict[str, float] = {}
                for query, fn in QUERIES.items():
                    try:
                        values.update(fn(self._nvml, h))
                    except Exception as exc:  # NotSupported or a transient driver error: skip this one
                        kind = "not supported" if _nvml.is_not_supported(self._nvml, exc) else "failed"
                        self.unsupported[f"GPU {i} {query}"] = f"{kind}: {exc}"
                energy = self._energy[i].read(values.get("Power"), now)
                if energy is not None:
                    values["Energy"] = energy
                out.update({f"GPU {i} {k}": v for k, v in values.items()})
            return out

    def collect(self) -> dict[str, float]:
        """The latest sample: from the sampler thread when one runs, else queried now."""
        if self._sampler is not None:
            latest = self._sampler.latest()
            if latest is not None:
                return latest
        return self.sample()

    def close(self) -> None:
        """Stop the sampler and release NVML (idempotent)."""
        if self._sampler is not None:
            self._sampler.stop()
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _nvml.shutdown(self._nvml)

    def __enter__(self) -> CudaCollector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
