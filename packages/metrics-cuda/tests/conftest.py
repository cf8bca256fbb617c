"""Test fixtures: a stand-in ``pynvml`` module, GPUs described by dicts, errors injected per query."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import pytest


class NVMLError(Exception):
    def __init__(self, value: int, text: str = "") -> None:
        super().__init__(text or f"NVML error {value}")
        self.value = value


class NVMLError_NotSupported(NVMLError):
    def __init__(self) -> None:
        super().__init__(3, "Not Supported")


class NVMLError_DriverNotLoaded(NVMLError):
    def __init__(self) -> None:
        super().__init__(9, "Driver Not Loaded")


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    util: int = 37
    mem_util: int = 12
    used: int = 4_000_000_000
    total: int = 141_000_000_000
    temp: int = 45
    power_mw: int = 120_000
    energy_mj: list[int] = field(default_factory=lambda: [1_000_000, 1_005_000, 1_012_000])
    unsupported: set[str] = field(default_factory=set)


def make(gpus: list[FakeGpu] | None = None, init_error: Exception | None = None) -> types.ModuleType:
    """A module object with the pynvml functions the collector calls."""
    gpus = [FakeGpu()] if gpus is None else gpus
    m = types.ModuleType("pynvml")
    m.NVMLError = NVMLError
    m.NVMLError_NotSupported = NVMLError_NotSupported
    m.NVML_ERROR_NOT_SUPPORTED = 3
    m.NVML_TEMPERATURE_GPU = 0
    m.calls = {"init": 0, "shutdown": 0}

    def guard(gpu: FakeGpu, query: str) -> None:
        if query in gpu.unsupported:
            raise NVMLError_NotSupported()

    def init() -> None:
        if init_error is not None:
            raise init_error
        m.calls["init"] += 1

    def shutdown() -> None:
        m.calls["shutdown"] += 1

    def utilization(h: FakeGpu) -> Any:
        guard(h, "utilization")
        return types.SimpleNamespace(gpu=h.util, memory=h.mem_util)

    def memory(h: FakeGpu) -> Any:
        guard(h, "memory")
        return types.SimpleNamespace(used=h.used, total=h.total, free=h.total - h.used)

    def temperature(h: FakeGpu, sensor: int) -> int:
        guard(h, "temperature")
        assert sensor == 0
        return h.temp

    def power(h: FakeGpu) -> int:
        guard(h, "power")
        return h.power_mw

    def energy(h: FakeGpu) -> int:
        guard(h, "energy")
        return h.energy_mj.pop(0) if len(h.energy_mj) > 1 else h.energy_mj[0]

    m.nvmlInit = init
    m.nvmlShutdown = shutdown
    m.nvmlDeviceGetCount = lambda: len(gpus)
    m.nvmlDeviceGetHandleByIndex = lambda i: gpus[i]
    m.nvmlDeviceGetName = lambda h: h.name
    m.nvmlDeviceGetUtilizationRates = utilization
    m.nvmlDeviceGetMemoryInfo = memory
    m.nvmlDeviceGetTemperature = temperature
    m.nvmlDeviceGetPowerUsage = power
    m.nvmlDeviceGetTotalEnergyConsumption = energy
    return m


@pytest.fixture(autouse=True)
def _fresh_nvml_session():
    """Each test starts without the process's NVML session (the fakes differ per test), and stops
    the one it started."""
    from burn_metrics_cuda import _nvml

    _nvml.close_session()
    yield
    _nvml.close_session()


@pytest.fixture
def nvml():
    """The fake pynvml toolkit: ``nvml.make(gpus, init_error)``, ``nvml.FakeGpu``, error classes."""
    return types.SimpleNamespace(
        make=make, FakeGpu=FakeGpu, NVMLError=NVMLError, NVMLError_DriverNotLoaded=NVMLError_DriverNotLoaded
    )
