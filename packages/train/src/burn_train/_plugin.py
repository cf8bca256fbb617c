"""Entry point of burn_train (group ``burn``): registers the metrics-basic collectors and ``burn launch``.

Import-light: psutil is imported only when a collector is built, and only where it is installed;
``burn launch`` loads mpi4py only in the ranks it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from burn.plugins import CommandSpec, MetricCollectorSpec, hookimpl

if TYPE_CHECKING:
    from ._collectors import CpuMemoryCollector, CpuUseCollector


def _cpu_use() -> CpuUseCollector:
    from ._collectors import CpuUseCollector

    return CpuUseCollector()


def _cpu_memory() -> CpuMemoryCollector:
    from ._collectors import CpuMemoryCollector

    return CpuMemoryCollector()


def _available() -> tuple[bool, str]:
    from ._collectors import psutil_available

    return psutil_available()


@hookimpl
def burn_register_metric_collectors(register: Callable[[MetricCollectorSpec], None]) -> None:
    register(
        MetricCollectorSpec(
            "cpu-use", _cpu_use, _available, group="metrics-basic", description="CPU utilisation (%)"
        )
    )
    register(
        MetricCollectorSpec(
            "cpu-memory", _cpu_memory, _available, group="metrics-basic", description="CPU memory used (GiB)"
        )
    )


@hookimpl
def burn_register_commands(register: Callable[[CommandSpec], None]) -> None:
    from .distributed._launch import help_line

    register(
        CommandSpec.lazy(
            "launch",
            "burn_train.distributed._launch",
            help=help_line(),
            description="Run a training script as N MPI ranks (mpiexec -n N python SCRIPT ...); "
            "Learner.fit trains data-parallel across them.",
        )
    )
