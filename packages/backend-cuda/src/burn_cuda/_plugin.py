"""Entry point of burn_cuda (group ``burn``). Import-light: CuPy loads only when a device is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from burn.plugins import BackendSpec, hookimpl

from . import _probe

if TYPE_CHECKING:
    from ._backend import CudaBackend


def _make(index: int) -> CudaBackend:
    from ._backend import CudaBackend

    return CudaBackend(index)


def _available() -> tuple[bool, str]:
    try:
        return _probe.is_available()
    except Exception as exc:  # the probe never raises, but a registry must never see a crash
        return False, f"availability check failed: {type(exc).__name__}: {exc}"


@hookimpl
def burn_register_backends(register: Callable[[BackendSpec], None]) -> None:
    register(
        BackendSpec(
            name="cuda",
            factory=_make,
            is_available=_available,
            devices=_probe.devices,
            aliases=("cupy",),
            priority=20,
            default_decorators=("fusion",),
            description="CUDA on NVIDIA GPUs through CuPy (cuBLAS matmul, generated element-wise kernels)",
        )
    )
