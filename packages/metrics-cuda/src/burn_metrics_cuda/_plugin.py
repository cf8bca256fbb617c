"""Entry point of burn_metrics_cuda (group ``burn``); import-light: pynvml loads when a collector is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from burn.plugins import MetricCollectorSpec, hookimpl

from . import _nvml

if TYPE_CHECKING:
    from ._collector import CudaCollector


def _make() -> CudaCollector:
    from ._collector import CudaCollector

    return CudaCollector()


@hookimpl
def burn_register_metric_collectors(register: Callable[[MetricCollectorSpec], None]) -> None:
    register(
        MetricCollectorSpec(
            name="cuda",
            factory=_make,
            is_available=_nvml.is_available,
            group="metrics-cuda",
            description="NVIDIA GPUs through NVML: utilization, memory, temperature, power, energy",
        )
    )
